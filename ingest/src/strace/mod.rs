//! strace output (`strace -f -ttt -T -k -y ...`): lines → system calls,
//! signals and exits with their `-k` stacks → `syscall`, `strace_event`
//! and the shared stack tables.

pub mod batch;
pub mod convert;
pub mod lines;
pub mod reader;

use std::io::{BufReader, Read};
use std::path::Path;

use crate::diag::Diagnostics;
use crate::error::{Error, Result};
use crate::stacks::StackTables;
use crate::syscall_table::SyscallTable;

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

/// Reads one strace dump (`stream`, or the file at `path`). Parsing runs on
/// a thread of its own and hands batches of events to the converter on
/// this one.
pub fn ingest_strace(
    path: &Path,
    stream: Option<Box<dyn Read + Send>>,
    conv: &mut convert::StraceConverter,
    stacks: &mut StackTables,
    calls: &mut SyscallTable,
    diags: &mut Diagnostics,
    progress: Option<&crate::progress::Progress>,
) -> Result<StraceStats> {
    let file_pid = pid_from_file_name(path);
    let before = conv.calls_written;
    let map = match &stream {
        Some(_) => None,
        None => {
            let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
            let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
            if len == 0 {
                None
            } else {
                let m = crate::mapped::map_readonly(&f).map_err(|e| Error::io(path, e))?;
                #[cfg(unix)]
                let _ = m.advise(memmap2::Advice::Sequential);
                Some(m)
            }
        }
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<batch::Batch>(4);
    let (read_result, convert_result) = std::thread::scope(|scope| {
        let reader_thread = scope.spawn(move || {
            let mut batch = batch::Batch::new();
            let mut emit = |ev| {
                batch.push(ev);
                if batch.is_full() {
                    let full = std::mem::replace(&mut batch, batch::Batch::new());
                    // The converter stopped (an error): stop reading.
                    tx.send(full)
                        .map_err(|_| Error::Strict("conversion stopped".into()))?;
                }
                Ok(())
            };
            let stats = match (stream, &map) {
                (Some(s), _) => {
                    let mut input = BufReader::with_capacity(1 << 20, s);
                    // A stream's bytes are not the file's (it may be
                    // decompressed): its progress comes at its end.
                    reader::read(
                        reader::Input::Stream(&mut input),
                        file_pid,
                        diags,
                        &mut emit,
                        None,
                    )
                }
                (None, Some(m)) => {
                    reader::read(reader::Input::Map(m), file_pid, diags, &mut emit, progress)
                }
                (None, None) => {
                    reader::read(reader::Input::Bytes(&[]), file_pid, diags, &mut emit, None)
                }
            };
            if stats.is_ok() && !batch.is_empty() {
                let _ = tx.send(batch);
            }
            stats
        });
        let mut converted = Ok(());
        for batch in rx {
            if let Err(e) = conv.handle(&batch, stacks, calls) {
                converted = Err(e);
                break;
            }
        }
        // Dropping the receiver (end of the loop) unblocks the reader.
        let read = reader_thread
            .join()
            .unwrap_or_else(|_| Err(Error::Strict("the strace reader thread panicked".into())));
        (read, converted)
    });
    convert_result?;
    let stats = read_result?;
    conv.flush(stacks, calls)?;
    Ok(StraceStats {
        bytes: stats.bytes,
        lines: stats.lines,
        calls: conv.calls_written - before,
        time_kind: stats.time_kind,
    })
}
