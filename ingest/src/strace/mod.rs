//! strace output (`strace -f -ttt -T -k -y ...`): lines → system calls,
//! signals and exits with their `-k` stacks → `syscall`, `strace_event`
//! and the shared stack tables.

pub mod args;
pub mod convert;
pub mod lines;
pub mod reader;

use std::io::{BufReader, Read};
use std::path::Path;

use crate::diag::Diagnostics;
use crate::stacks::StackTables;
use crate::{Error, Result};

/// Does this look like strace output? True when the first non-empty line
/// is a system call, signal or exit line (with or without pid and time).
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    // A cut first line (the head is a prefix of the file) still starts
    // like a call: `name(`.
    matches!(
        lines::parse(first),
        lines::Line::Call(..)
            | lines::Line::Signal { .. }
            | lines::Line::Exited(..)
            | lines::Line::Killed { .. }
    ) || {
        let (_, rest) = lines::split_prefix(first);
        rest.find('(').is_some_and(|i| {
            i > 0
                && rest[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }) && !text.starts_with("#")
    }
}

/// The pid of a `strace -ff -o NAME` file, `NAME.PID`.
pub fn pid_from_file_name(path: &Path) -> Option<i32> {
    let ext = path.extension()?.to_str()?;
    (!ext.is_empty() && ext.bytes().all(|b| b.is_ascii_digit()))
        .then(|| ext.parse().ok())
        .flatten()
}

pub struct StraceStats {
    pub bytes: u64,
    pub lines: u64,
    pub calls: u64,
    pub time_kind: reader::TimeKind,
}

/// Reads one strace dump (`stream`, or the file at `path`).
pub fn ingest_strace(
    path: &Path,
    stream: Option<Box<dyn Read + Send>>,
    conv: &mut convert::StraceConverter,
    stacks: &mut StackTables,
    diags: &mut Diagnostics,
) -> Result<StraceStats> {
    let raw: Box<dyn Read + Send> = match stream {
        Some(s) => s,
        None => Box::new(std::fs::File::open(path).map_err(|e| Error::io(path, e))?),
    };
    let mut input = BufReader::with_capacity(1 << 20, raw);
    let file_pid = pid_from_file_name(path);
    let before = conv.calls_written;
    let stats = reader::read(&mut input, file_pid, diags, &mut |ev| {
        conv.handle(ev, stacks)
    })?;
    conv.flush(stacks)?;
    Ok(StraceStats {
        bytes: stats.bytes,
        lines: stats.lines,
        calls: conv.calls_written - before,
        time_kind: stats.time_kind,
    })
}
