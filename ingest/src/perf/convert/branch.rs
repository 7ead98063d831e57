//! Branch stacks (LBR): what each entry did to the call stack and the mode
//! of its addresses; the converter's `branch_frames` replays the entries
//! into the stacks of the pseudo-samples they become.

use crate::perf::records::CpuMode;

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
pub(super) fn branch_mode(addr: u64, privilege: u32) -> CpuMode {
    match privilege {
        1 => CpuMode::User,
        2 => CpuMode::Kernel,
        3 => CpuMode::Hypervisor,
        _ if addr >= 0xffff_8000_0000_0000 => CpuMode::Kernel,
        _ => CpuMode::User,
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
