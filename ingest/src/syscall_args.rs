//! Typed arguments of the system calls the memory and I/O analyses use,
//! parsed from their text as strace prints them (perf's syscall
//! tracepoints are written in the same form, see `perf/syscall_pairs.rs`).

/// Arguments split at top-level commas (not inside strings, `[...]`,
/// `{...}` or `(...)`), trimmed.
pub fn split_args(args: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    walk(args, 0, |i, b, depth| {
        if b == b',' && depth == 0 {
            out.push(args[start..i].trim());
            start = i + 1;
        }
        false
    });
    let last = args.get(start..).unwrap_or("").trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// An integer as strace prints it: decimal, `0x` hex, negative; a `-y`
/// decoration (`3</path>`) is dropped. `NULL` is 0.
pub fn parse_int(tok: &str) -> Option<i64> {
    let t = tok.trim();
    let t = t.split_once('<').map_or(t, |(n, _)| n);
    if t == "NULL" {
        return Some(0);
    }
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(|v| v as i64);
    }
    t.parse().ok()
}

/// A return value: None for `?`.
pub fn parse_ret(ret: &str) -> Option<i64> {
    parse_int(ret)
}

/// `3</tmp/out.bin>` → (3, Some("/tmp/out.bin")); `3` → (3, None).
pub fn parse_fd(tok: &str) -> Option<(i32, Option<&str>)> {
    let t = tok.trim();
    match t.split_once('<') {
        Some((n, rest)) => {
            let fd = n.parse().ok()?;
            let path = rest.strip_suffix('>').unwrap_or(rest);
            Some((fd, Some(path)))
        }
        None => t.parse().ok().map(|fd| (fd, None)),
    }
}

/// The parsed arguments of one call (only those its name has).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallArgs<'a> {
    pub fd: Option<i32>,
    pub fd_path: Option<&'a str>,
    pub addr: Option<u64>,
    pub length: Option<u64>,
    pub new_length: Option<u64>,
    pub new_addr: Option<u64>,
    pub prot: Option<&'a str>,
    pub flags: Option<&'a str>,
    pub offset: Option<i64>,
    pub count: Option<i64>,
}

/// System calls whose first argument is a file descriptor.
const FD_FIRST: &[&str] = &[
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "close",
    "fstat",
    "fsync",
    "fdatasync",
    "lseek",
    "ftruncate",
    "fcntl",
    "ioctl",
    "getdents64",
    "recvfrom",
    "sendto",
    "recvmsg",
    "sendmsg",
    "fallocate",
    "flock",
    "fchmod",
    "fchown",
    "syncfs",
    "dup",
    "dup2",
    "dup3",
    "sendfile",
    "splice",
    "tee",
    "vmsplice",
];

/// Which arguments of a call are file descriptors (0-based positions):
/// what a renderer of raw argument registers prints as an `int`.
pub fn fd_positions(name: &str) -> &'static [usize] {
    match name {
        "mmap" | "mmap2" => &[4],
        "sendfile" | "tee" | "dup2" | "dup3" => &[0, 1],
        "copy_file_range" | "splice" | "renameat" | "renameat2" | "linkat" | "epoll_ctl" => &[0, 2],
        "symlinkat" => &[1],
        "openat" | "openat2" | "newfstatat" | "fstatat64" | "statx" | "unlinkat" | "mkdirat"
        | "mknodat" | "fchmodat" | "fchmodat2" | "fchownat" | "faccessat" | "faccessat2"
        | "readlinkat" | "utimensat" | "futimesat" | "name_to_handle_at" | "execveat"
        | "inotify_add_watch" | "fanotify_mark" | "fstatfs" | "fgetxattr" | "fsetxattr"
        | "flistxattr" | "fremovexattr" | "fchdir" | "getdents" | "readahead"
        | "sync_file_range" | "fadvise64" | "shutdown" | "bind" | "connect" | "listen"
        | "accept" | "accept4" | "getsockname" | "getpeername" | "setsockopt" | "getsockopt"
        | "recvmmsg" | "sendmmsg" | "epoll_wait" | "epoll_pwait" | "epoll_pwait2"
        | "timerfd_settime" | "timerfd_gettime" | "pidfd_send_signal" | "pidfd_getfd" => &[0],
        n if FD_FIRST.contains(&n) => &[0],
        _ => &[],
    }
}

/// Sum of `iov_len=N` of an iovec array.
fn iov_total(s: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut any = false;
    let mut rest = s;
    while let Some(i) = rest.find("iov_len=") {
        rest = &rest[i + 8..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        total += parse_int(&rest[..end])?;
        any = true;
        rest = &rest[end..];
    }
    any.then_some(total)
}

/// Calls without a descriptor first whose arguments are parsed.
const PARSED: &[&str] = &[
    "mmap",
    "mmap2",
    "munmap",
    "madvise",
    "mprotect",
    "brk",
    "mremap",
    "copy_file_range",
];

pub fn parse_call_args<'a>(name: &str, args: &'a str) -> CallArgs<'a> {
    let mut c = CallArgs::default();
    let fd_first = FD_FIRST.contains(&name);
    if !fd_first && !PARSED.contains(&name) {
        return c;
    }
    let a = split_args(args);
    let int = |i: usize| a.get(i).and_then(|t| parse_int(t));
    let uint = |i: usize| int(i).map(|v| v as u64);
    if fd_first {
        if let Some((fd, path)) = a.first().and_then(|t| parse_fd(t)) {
            c.fd = Some(fd);
            c.fd_path = path;
        }
    }
    match name {
        "mmap" | "mmap2" => {
            c.addr = uint(0).filter(|&v| v != 0);
            c.length = uint(1);
            c.prot = a.get(2).copied();
            c.flags = a.get(3).copied();
            if let Some((fd, path)) = a.get(4).and_then(|t| parse_fd(t)) {
                c.fd = Some(fd);
                c.fd_path = path;
            }
            c.offset = int(5);
        }
        "munmap" | "madvise" => {
            c.addr = uint(0);
            c.length = uint(1);
        }
        "mprotect" => {
            c.addr = uint(0);
            c.length = uint(1);
            c.prot = a.get(2).copied();
        }
        "brk" => c.addr = uint(0).filter(|&v| v != 0),
        "mremap" => {
            c.addr = uint(0);
            c.length = uint(1);
            c.new_length = uint(2);
            c.flags = a.get(3).copied();
            c.new_addr = uint(4);
        }
        "read" | "write" | "recvfrom" | "sendto" => c.count = int(2),
        "pread64" | "pwrite64" => {
            c.count = int(2);
            c.offset = int(3);
        }
        "readv" | "writev" | "preadv" | "pwritev" | "preadv2" | "pwritev2" => {
            c.count = a.get(1).and_then(|t| iov_total(t));
            if name.starts_with('p') {
                c.offset = int(3);
            }
        }
        "sendfile" => c.count = int(3),
        "copy_file_range" => {
            if let Some((fd, path)) = a.get(2).and_then(|t| parse_fd(t)) {
                c.fd = Some(fd);
                c.fd_path = path;
            }
            c.count = int(4);
        }
        _ => {}
    }
    c
}

/// Walks `s` outside quoted strings (with `\` escapes), tracking bracket
/// depth from `depth`: calls `stop(index, byte, depth)` for every byte
/// (after an opening or closing bracket has changed the depth) and returns
/// the first index where it says true.
pub(crate) fn walk(
    s: &str,
    mut depth: i64,
    mut stop: impl FnMut(usize, u8, i64) -> bool,
) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if stop(i, b[i], depth) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_respects_strings_and_brackets() {
        assert_eq!(
            split_args(r#"1</dev/pts/0>, "a, \"b\", c", [{iov_base="x,y", iov_len=3}], 3"#),
            vec![
                r#"1</dev/pts/0>"#,
                r#""a, \"b\", c""#,
                r#"[{iov_base="x,y", iov_len=3}]"#,
                "3"
            ]
        );
        assert!(split_args("").is_empty());
    }

    #[test]
    fn memory_calls() {
        let c = parse_call_args(
            "mmap",
            "NULL, 266240, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0",
        );
        assert_eq!(
            (c.addr, c.length, c.fd, c.offset),
            (None, Some(266240), Some(-1), Some(0))
        );
        assert_eq!(c.flags, Some("MAP_PRIVATE|MAP_ANONYMOUS"));
        let c = parse_call_args("mmap", "0x7f6411142000, 1400832, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3</usr/lib/libc.so.6>, 0x26000");
        assert_eq!(
            (c.addr, c.fd, c.fd_path, c.offset),
            (
                Some(0x7f64_1114_2000),
                Some(3),
                Some("/usr/lib/libc.so.6"),
                Some(0x26000)
            )
        );
        let c = parse_call_args("mremap", "0x7f64112ff000, 32768, 131072, MREMAP_MAYMOVE");
        assert_eq!(
            (c.addr, c.length, c.new_length, c.new_addr),
            (Some(0x7f64_112f_f000), Some(32768), Some(131072), None)
        );
        assert_eq!(parse_call_args("brk", "NULL").addr, None);
        assert_eq!(
            parse_call_args("brk", "0x564b2fa3c000").addr,
            Some(0x564b_2fa3_c000)
        );
        assert_eq!(
            parse_call_args("munmap", "0x7f641110d000, 16384").length,
            Some(16384)
        );
    }

    #[test]
    fn io_calls() {
        let c = parse_call_args("write", r#"3</tmp/iot/out.bin>, "xxxx"..., 4096"#);
        assert_eq!(
            (c.fd, c.fd_path, c.count),
            (Some(3), Some("/tmp/iot/out.bin"), Some(4096))
        );
        let c = parse_call_args(
            "writev",
            r#"3</tmp/v.bin>, [{iov_base="aa", iov_len=10}, {iov_base="bb", iov_len=20}, {iov_base="cc", iov_len=30}], 3"#,
        );
        assert_eq!(c.count, Some(60));
        let c = parse_call_args("pwrite64", r#"3</tmp/p>, "pp"..., 512, 1048576"#);
        assert_eq!((c.count, c.offset), (Some(512), Some(1_048_576)));
        let c = parse_call_args(
            "sendfile",
            "4</tmp/copy.bin>, 3</tmp/out.bin>, [0] => [409600], 409600",
        );
        assert_eq!(
            (c.fd, c.fd_path, c.count),
            (Some(4), Some("/tmp/copy.bin"), Some(409600))
        );
        assert_eq!(parse_ret("3</etc/ld.so.cache>"), Some(3));
        assert_eq!(parse_ret("0x7f6410c00000"), Some(0x7f64_10c0_0000));
        assert_eq!(parse_ret("?"), None);
        assert_eq!(parse_ret("-1"), Some(-1));
    }
}
