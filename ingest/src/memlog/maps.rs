//! `/proc/PID/maps` text → mappings (no Arrow).
//!
//! ```text
//! 55d4c3a00000-55d4c3a02000 r--p 00000000 08:01 1234    /usr/bin/ls
//! 7ffd1c7e0000-7ffd1c801000 rw-p 00000000 00:00 0       [stack]
//! ```

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub line: u64,
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub offset: u64,
    pub dev: String,
    pub inode: u64,
    /// File, `[heap]`, `[stack]`, `[vdso]`...; empty for anonymous memory.
    pub path: String,
}

/// Parses one line; `None` when it is not a maps line.
pub fn parse_line(l: &str) -> Option<(u64, u64, &str, u64, &str, u64, &str)> {
    let l = l.trim_end_matches(['\n', '\r']);
    let mut rest = l;
    let mut field = || {
        let t = rest.trim_start_matches(' ');
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        f
    };
    let range = field();
    let perms = field();
    let off = field();
    let dev = field();
    let inode = field();
    let path = rest.trim_start_matches(' ');
    let (a, b) = range.split_once('-')?;
    let start = u64::from_str_radix(a, 16).ok()?;
    let end = u64::from_str_radix(b, 16).ok()?;
    let pb = perms.as_bytes();
    if pb.len() != 4
        || !matches!(pb[0], b'r' | b'-')
        || !matches!(pb[1], b'w' | b'-')
        || !matches!(pb[2], b'x' | b'-')
        || !matches!(pb[3], b'p' | b's')
        || end < start
    {
        return None;
    }
    let offset = u64::from_str_radix(off, 16).ok()?;
    if !dev.contains(':') {
        return None;
    }
    let inode = inode.parse().ok()?;
    Some((start, end, perms, offset, dev, inode, path))
}

pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.lines().next().is_some_and(|l| parse_line(l).is_some())
}

/// Parses a maps file; lines that are not mappings are returned as
/// (line, text) problems.
pub fn parse(text: &str) -> (Vec<Mapping>, Vec<(u64, String)>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match parse_line(l) {
            Some((start, end, perms, offset, dev, inode, path)) => out.push(Mapping {
                line: i as u64 + 1,
                start,
                end,
                perms: perms.into(),
                offset,
                dev: dev.into(),
                inode,
                path: path.into(),
            }),
            None => bad.push((i as u64 + 1, l.chars().take(80).collect())),
        }
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_and_anonymous_lines() {
        let (m, bad) = parse(
            "55d4c3a00000-55d4c3a02000 r--p 00000000 08:01 1234                       /usr/bin/l s\n\
             7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n\
             garbage\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].path, "/usr/bin/l s");
        assert_eq!(m[0].end - m[0].start, 0x2000);
        assert_eq!(m[1].path, "");
        assert_eq!(bad, vec![(3, "garbage".to_string())]);
        assert!(sniff(
            b"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
        ));
    }
}
