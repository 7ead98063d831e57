//! `syscalls:sys_enter_NAME` / `sys_exit_NAME` tracepoint samples → rows of
//! the `syscall` table, the two halves of each call paired per thread (the
//! samples arrive in time order; a thread is in one call at a time).
//!
//! The arguments are the registers the tracepoint recorded; they become the
//! `args` text the way `strace -X raw` prints them (descriptors in
//! decimal, everything else in hex), so the typed columns and the analyses
//! read perf and strace calls alike. Pointer arguments stay pointers: perf
//! records no strings, structures or iovecs (no paths, no `clone3` flags,
//! no `readv` totals). A call's stack is the user part of its enter
//! sample's call stack (the exit's when the enter had none).

use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;
use std::sync::Arc;

use crate::syscall_args::fd_positions;
use crate::syscall_table::{errno_name, SyscallRow, SyscallTable};

/// The enter half of a call, waiting for its exit.
struct Pending {
    name: Arc<str>,
    args: String,
    time: Option<u64>,
    tgid: Option<i32>,
    stack_id: Option<i64>,
    sample_id: i64,
}

/// One half of a call, as a tracepoint sample gave it.
pub struct Half<'a> {
    pub name: &'a Arc<str>,
    pub tid: Option<i32>,
    pub tgid: Option<i32>,
    pub time: Option<u64>,
    pub stack_id: Option<i64>,
    pub sample_id: i64,
}

#[derive(Default)]
pub struct SyscallPairs {
    pending: HashMap<Option<i32>, Pending>,
}

/// Calls whose return value is an address (printed in hex, as strace does).
fn returns_address(name: &str) -> bool {
    matches!(name, "mmap" | "mmap2" | "mremap" | "brk" | "shmat")
}

/// Calls that never return to their caller when they succeed.
fn never_returns(name: &str) -> bool {
    matches!(name, "exit" | "exit_group")
}

/// Return text, value and error name of a raw return register, as strace
/// shows them (`-1` and the error for -4095..-1; addresses in hex).
fn ret_parts(name: &str, ret: i64) -> (String, i64, Option<std::borrow::Cow<'static, str>>) {
    if (-4095..0).contains(&ret) {
        return ("-1".into(), -1, Some(errno_name(-ret)));
    }
    let text = if returns_address(name) {
        format!("{:#x}", ret as u64)
    } else {
        ret.to_string()
    };
    (text, ret, None)
}

/// `args` of a call: descriptors in decimal (as `int`s), the rest in hex.
pub fn args_text(name: &str, args: &[u64], out: &mut String) {
    out.clear();
    let fds = fd_positions(name);
    for (i, &v) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if fds.contains(&i) {
            let _ = write!(out, "{}", v as u32 as i32);
        } else {
            let _ = write!(out, "{v:#x}");
        }
    }
}

impl SyscallPairs {
    pub fn enter(&mut self, calls: &mut SyscallTable, source_id: i32, h: Half<'_>, args: &[u64]) {
        let mut text = String::new();
        args_text(h.name, args, &mut text);
        let p = Pending {
            name: h.name.clone(),
            args: text,
            time: h.time,
            tgid: h.tgid,
            stack_id: h.stack_id,
            sample_id: h.sample_id,
        };
        // An enter while one is open on the thread: the first one's exit
        // was lost (or filtered out).
        if let Some(old) = self.pending.insert(h.tid, p) {
            self.unfinished(calls, source_id, h.tid, old);
        }
    }

    pub fn exit(&mut self, calls: &mut SyscallTable, source_id: i32, h: Half<'_>, ret: i64) {
        let open = match self.pending.remove(&h.tid) {
            Some(p) if p.name == *h.name => Some(p),
            Some(other) => {
                self.unfinished(calls, source_id, h.tid, other);
                None
            }
            None => None,
        };
        let (ret_s, retval, errno) = ret_parts(h.name, ret);
        let errno = errno.as_deref();
        match open {
            Some(p) => {
                calls.push(&SyscallRow {
                    source_id,
                    pid: h.tid,
                    tgid: p.tgid.or(h.tgid),
                    sample_id: Some(p.sample_id),
                    time_ns: p.time.map(|t| t as i64),
                    duration_ns: p.time.zip(h.time).map(|(a, b)| b.saturating_sub(a) as i64),
                    name: &p.name,
                    args: &p.args,
                    ret: Some(&ret_s),
                    retval: Some(retval),
                    errno,
                    finished: true,
                    stack_id: p.stack_id.or(h.stack_id),
                    ..Default::default()
                });
            }
            // The recording began inside the call (a child's return from
            // fork, the exec that enabled the events): the exit alone, at
            // its own time.
            None => {
                calls.push(&SyscallRow {
                    source_id,
                    pid: h.tid,
                    tgid: h.tgid,
                    sample_id: Some(h.sample_id),
                    time_ns: h.time.map(|t| t as i64),
                    name: h.name,
                    args: "",
                    ret: Some(&ret_s),
                    retval: Some(retval),
                    errno,
                    note: Some("exit only: the enter was not recorded"),
                    finished: true,
                    stack_id: h.stack_id,
                    ..Default::default()
                });
            }
        }
    }

    /// A call whose exit never came: `exit`/`exit_group` (they do not
    /// return; strace prints `= ?`), or one cut by the end of the recording
    /// or a lost exit.
    fn unfinished(
        &mut self,
        calls: &mut SyscallTable,
        source_id: i32,
        tid: Option<i32>,
        p: Pending,
    ) {
        let done = never_returns(&p.name);
        calls.push(&SyscallRow {
            source_id,
            pid: tid,
            tgid: p.tgid,
            sample_id: Some(p.sample_id),
            time_ns: p.time.map(|t| t as i64),
            name: &p.name,
            args: &p.args,
            ret: done.then_some("?"),
            finished: done,
            stack_id: p.stack_id,
            ..Default::default()
        });
    }

    /// The thread `tid` ended (PERF_RECORD_EXIT): its open call ends with it.
    pub fn thread_exit(&mut self, calls: &mut SyscallTable, source_id: i32, tid: i32) {
        if let Some(p) = self.pending.remove(&Some(tid)) {
            self.unfinished(calls, source_id, Some(tid), p);
        }
    }

    /// End of an input: the calls still open, in time order.
    pub fn end_source(&mut self, calls: &mut SyscallTable, source_id: i32) {
        let mut open: Vec<_> = self.pending.drain().collect();
        open.sort_by_key(|(tid, p)| (p.time, *tid));
        for (tid, p) in open {
            self.unfinished(calls, source_id, tid, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_decode_and_short_ones_are_errors() {
        use crate::perf::records::{decode_syscall_payload, syscall_tracepoint, SyscallPayload};
        // sys_enter_write of fixtures/perf/tracepoint.data: common fields,
        // nr 1, pad, fd 1, buf, count 0x14, 4 bytes of padding.
        let mut raw = vec![0u8; 8];
        raw.extend_from_slice(&1i32.to_le_bytes());
        raw.extend_from_slice(&[0; 4]);
        for v in [1u64, 0x561a_e336_f2a0, 0x14] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        raw.extend_from_slice(&[0; 4]);
        match decode_syscall_payload(&raw, true, false).unwrap() {
            SyscallPayload::Enter { nr, args, nargs } => {
                assert_eq!((nr, nargs), (1, 3));
                assert_eq!(&args[..3], &[1, 0x561a_e336_f2a0, 0x14]);
            }
            other => panic!("{other:?}"),
        }
        let mut exit = vec![0u8; 8];
        exit.extend_from_slice(&1i32.to_le_bytes());
        exit.extend_from_slice(&[0; 4]);
        exit.extend_from_slice(&(-12i64).to_le_bytes());
        assert_eq!(
            decode_syscall_payload(&exit, false, false).unwrap(),
            SyscallPayload::Exit { nr: 1, ret: -12 }
        );
        for n in [0, 7, 11, 20] {
            assert!(
                decode_syscall_payload(&exit[..n], false, false).is_err(),
                "{n}"
            );
        }
        assert!(decode_syscall_payload(&raw[..10], true, false).is_err());
        assert_eq!(
            syscall_tracepoint("syscalls:sys_enter_mmap"),
            Some((true, "mmap"))
        );
        assert_eq!(
            syscall_tracepoint("syscalls:sys_exit_exit_group"),
            Some((false, "exit_group"))
        );
        assert_eq!(syscall_tracepoint("raw_syscalls:sys_enter"), None);
        assert_eq!(syscall_tracepoint("syscalls:sys_enter_"), None);
    }

    #[test]
    fn args_print_descriptors_in_decimal() {
        let mut s = String::new();
        // sys_enter_mmap as `perf script` showed it in fixtures/perf:
        // addr: 0x00000000, len: 0x00002000, prot: 0x00000003,
        // flags: 0x00000022, fd: 0xffffffff, off: 0x00000000
        args_text("mmap", &[0, 0x2000, 3, 0x22, 0xffff_ffff, 0], &mut s);
        assert_eq!(s, "0x0, 0x2000, 0x3, 0x22, -1, 0x0");
        args_text("write", &[1, 0x561a_e336_f2a0, 0x14], &mut s);
        assert_eq!(s, "1, 0x561ae336f2a0, 0x14");
        let p = crate::syscall_args::parse_call_args("mmap", "0x0, 0x2000, 0x3, 0x22, -1, 0x0");
        assert_eq!(
            (p.addr, p.length, p.fd, p.prot, p.flags, p.offset),
            (
                None,
                Some(0x2000),
                Some(-1),
                Some("0x3"),
                Some("0x22"),
                Some(0)
            )
        );
        let p = crate::syscall_args::parse_call_args("write", "1, 0x561ae336f2a0, 0x14");
        assert_eq!((p.fd, p.count), (Some(1), Some(20)));
    }
}
