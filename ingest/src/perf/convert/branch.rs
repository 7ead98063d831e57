//! Branch stacks (LBR): what each entry did to the call stack, and the
//! frames and stacks of the pseudo-samples they become.

use super::*;

/// What a branch entry did to the call stack (`perf_branch.transfer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transfer {
    Call,
    Return,
    Other,
}

impl Transfer {
    /// From the entry's PERF_BR_* type; for entries without a saved type,
    /// from the branch filter when it admits only calls or only returns.
    pub(super) fn of(br_type: u32, filter: u64) -> Transfer {
        match br_type {
            4 | 5 | 7 | 9 | 12 => return Transfer::Call,
            6 | 8 | 10 | 11 => return Transfer::Return,
            0 => {}
            _ => return Transfer::Other,
        }
        // PERF_SAMPLE_BRANCH_*: ANY 3, ANY_CALL 4, ANY_RETURN 5, IND_CALL
        // 6, COND 10, CALL_STACK 11, IND_JUMP 12, CALL 13.
        let bit = |b: u32| filter & (1 << b) != 0;
        let calls = bit(4) || bit(6) || bit(11) || bit(13);
        let rets = bit(5);
        let jumps = bit(3) || bit(10) || bit(12);
        match (calls, rets, jumps) {
            (true, false, false) => Transfer::Call,
            (false, true, false) => Transfer::Return,
            _ => Transfer::Other,
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Transfer::Call => "call",
            Transfer::Return => "return",
            Transfer::Other => "other",
        }
    }
}

/// The mode of a branch address: the recorded privilege (PERF_BR_PRIV_*:
/// 1 user, 2 kernel, 3 hypervisor) when known, else kernel for the upper
/// half of the address space.
fn branch_mode(addr: u64, privilege: u32) -> CpuMode {
    match privilege {
        1 => CpuMode::User,
        2 => CpuMode::Kernel,
        3 => CpuMode::Hypervisor,
        _ if addr >= 0xffff_8000_0000_0000 => CpuMode::Kernel,
        _ => CpuMode::User,
    }
}

impl PerfConverter {
    /// The frames of the sample's branch entries and the call stack at
    /// each entry's source (`self.lbr`, newest entry first). Walking back
    /// in time from the sample's stack: before a call the callee was not
    /// on the stack and the caller was at the call site; before a return
    /// the function returned from was on top of the caller, which was at
    /// the return address; any other branch only moves the leaf.
    pub(super) fn branch_frames(&mut self, s: &Sample<'_>, mode: CpuMode, filter: u64) {
        self.lbr.clear();
        let Some(b) = &s.branch else { return };
        if b.is_empty() {
            return;
        }
        self.resolve_stack(s, mode, false);
        let user_from = self.chain_user_from;
        let mut chain = std::mem::take(&mut self.chain);
        let pid = s.pid;
        let first_user = b
            .iter()
            .next()
            .is_some_and(|e| branch_mode(e.from, 0) == CpuMode::User);
        // User-only branch stacks (`-j ...,u`) continue the user part of a
        // sample taken in the kernel.
        let mut cur: Vec<i64> = match (first_user, user_from) {
            (true, Some(i)) => chain[i..].to_vec(),
            (true, None) if mode.is_kernel() => Vec::new(),
            _ => chain.clone(),
        };
        // Leaf last: pushes and pops at the end.
        cur.reverse();
        for e in b.iter() {
            let from = self.frame(pid, e.from, branch_mode(e.from, 0), false);
            let tmode = branch_mode(e.to, e.privilege());
            let to = self.frame(pid, e.to, tmode, false);
            let transfer = Transfer::of(e.br_type(), filter);
            match transfer {
                Transfer::Call => {
                    cur.pop();
                    match cur.last_mut() {
                        Some(top) => *top = from,
                        None => cur.push(from),
                    }
                }
                Transfer::Return => {
                    let ret = self.frame(pid, e.to, tmode, true);
                    match cur.last_mut() {
                        Some(top) => *top = ret,
                        None => cur.push(ret),
                    }
                    cur.push(from);
                }
                Transfer::Other => match cur.last_mut() {
                    Some(top) => *top = from,
                    None => cur.push(from),
                },
            }
            let leaf_first: Vec<i64> = cur.iter().rev().copied().collect();
            let stack = self.stacks.stack(&leaf_first);
            self.lbr.push((from, to, stack, transfer));
        }
        chain.clear();
        self.chain = chain;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_transfer_from_type_or_filter() {
        // Saved types: CALL, IND_CALL, SYSCALL are calls; RET, SYSRET
        // returns; COND a jump.
        for t in [4, 5, 7, 9, 12] {
            assert_eq!(Transfer::of(t, 0), Transfer::Call);
        }
        for t in [6, 8, 10, 11] {
            assert_eq!(Transfer::of(t, 0), Transfer::Return);
        }
        assert_eq!(Transfer::of(1, 1 << 5), Transfer::Other);
        // Unsaved: the filter decides when it admits one kind only.
        let user = 1;
        assert_eq!(Transfer::of(0, user | 1 << 4), Transfer::Call);
        assert_eq!(Transfer::of(0, user | 1 << 11), Transfer::Call);
        assert_eq!(Transfer::of(0, user | 1 << 5), Transfer::Return);
        assert_eq!(Transfer::of(0, user | 1 << 4 | 1 << 5), Transfer::Other);
        assert_eq!(Transfer::of(0, user | 1 << 3), Transfer::Other);
        assert_eq!(branch_mode(0xffff_ffff_8100_0000, 0), CpuMode::Kernel);
        assert_eq!(branch_mode(0xffff_ffff_8100_0000, 1), CpuMode::User);
        assert_eq!(branch_mode(0x40_1000, 0), CpuMode::User);
    }
}
