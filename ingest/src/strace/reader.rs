//! strace dump → events: unfinished calls joined with their resumption,
//! `-k` frames attached to the call they follow, times made absolute, and
//! every line that could not be understood reported with its number.
//!
//! Times: `-ttt` epoch seconds are kept as they are (ns since the epoch);
//! `-t`/`-tt` clock times become ns since the midnight of the first line,
//! adding a day when the clock goes back by more than twelve hours; `-r`
//! relative times are summed from 0. Whether `SECONDS.fraction` is `-ttt` or
//! `-r` is decided on the first timed line: `-r` values are small, epoch
//! values are not (anything below 10^8 s, 1973, is taken as relative).

use std::io::BufRead;

use rustc_hash::FxHashMap as HashMap;

use super::lines::{self, CallState, Line, TimeStamp};
use crate::diag::{Diagnostics, Position, Severity};

/// A `-k` frame. strace's own symbol name is not kept: trawl symbolizes
/// the module offset itself (with source lines and inline frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackFrame {
    /// The module: the id of an earlier [`Event::Module`] of this input.
    pub module: u32,
    /// Offset in the module's file.
    pub offset: u64,
}

/// One system call, joined when strace printed it in two parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyscallEvent {
    /// Line of the call's first part (1-based).
    pub line: u64,
    /// Line of the resumption, when it was printed in two parts.
    pub resumed_line: Option<u64>,
    pub pid: Option<i32>,
    /// Entry time (ns; see the module doc for the epoch).
    pub time_ns: Option<i64>,
    pub duration_ns: Option<i64>,
    pub name: String,
    pub args: String,
    pub ret: Option<String>,
    pub errno: Option<String>,
    pub ret_note: Option<String>,
    /// False for a call whose resumption never came (the trace ended, or
    /// the process died inside it).
    pub finished: bool,
    /// Innermost first, as strace prints them.
    pub stack: Vec<StackFrame>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A module path `-k` frames name, before the first frame in it: its
    /// id (0, 1, ... per input) and path.
    Module {
        id: u32,
        path: String,
    },
    /// The dump's clock, once its first time fixed it (before any event
    /// with a time): `epoch` for `-ttt` times, which are on UTC.
    Clock {
        epoch: bool,
    },
    Syscall(SyscallEvent),
    Signal {
        line: u64,
        pid: Option<i32>,
        time_ns: Option<i64>,
        name: String,
        info: String,
        /// Where the signal was delivered (`-k`), innermost first.
        stack: Vec<StackFrame>,
    },
    Exit {
        line: u64,
        pid: Option<i32>,
        time_ns: Option<i64>,
        /// Exit status, for `exited with N`.
        code: Option<i32>,
        /// Signal name, for `killed by SIG`.
        signal: Option<String>,
        core_dumped: bool,
    },
}

/// What kind of clock the dump's times are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    Epoch,
    ClockOfDay,
    Relative,
    None,
}

impl SyscallEvent {
    /// The call of one line (a complete call, or either half).
    fn new(c: &lines::Call<'_>, line: u64, pid: Option<i32>, time_ns: Option<i64>) -> Self {
        SyscallEvent {
            line,
            resumed_line: None,
            pid,
            time_ns,
            duration_ns: c.duration_ns,
            name: c.name.to_string(),
            args: c.args.to_string(),
            ret: c.ret.map(str::to_string),
            errno: c.errno.map(str::to_string),
            ret_note: c.ret_note.map(str::to_string),
            finished: c.state != CallState::Unfinished,
            stack: Vec::new(),
        }
    }
}

impl TimeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeKind::Epoch => "epoch",
            TimeKind::ClockOfDay => "clock_of_day",
            TimeKind::Relative => "relative",
            TimeKind::None => "none",
        }
    }
}

pub struct ReadStats {
    pub lines: u64,
    pub bytes: u64,
    pub time_kind: TimeKind,
}

struct Clock {
    kind: Option<TimeKind>,
    day_offset: i64,
    last: i64,
    relative_sum: i64,
}

impl Clock {
    /// Fixes the kind of clock at the first time; `Some` when this time
    /// fixed it.
    fn fix_kind(&mut self, t: Option<TimeStamp>) -> Option<TimeKind> {
        if self.kind.is_some() {
            return None;
        }
        let kind = match t? {
            TimeStamp::Clock(_) => TimeKind::ClockOfDay,
            TimeStamp::Seconds(ns) if ns < 100_000_000 * 1_000_000_000 => TimeKind::Relative,
            TimeStamp::Seconds(_) => TimeKind::Epoch,
        };
        self.kind = Some(kind);
        Some(kind)
    }

    fn resolve(&mut self, t: Option<TimeStamp>) -> Option<i64> {
        const DAY: i64 = 86_400_000_000_000;
        let t = t?;
        self.fix_kind(Some(t));
        match t {
            TimeStamp::Clock(ns) => {
                let mut v = ns.saturating_add(self.day_offset);
                if v.saturating_add(DAY / 2) < self.last {
                    self.day_offset = self.day_offset.saturating_add(DAY);
                    v = v.saturating_add(DAY);
                }
                self.last = v;
                Some(v)
            }
            TimeStamp::Seconds(ns) => {
                if self.kind == Some(TimeKind::Relative) {
                    // Times from the input: a crafted one must not overflow.
                    self.relative_sum = self.relative_sum.saturating_add(ns);
                    Some(self.relative_sum)
                } else {
                    Some(ns)
                }
            }
        }
    }
}

/// Where the lines come from: a mapped file (lines are slices of it), or a
/// stream (lines are copied into a buffer).
pub enum Input<'a> {
    Bytes(&'a [u8]),
    /// A mapped file: read pages are released as the reader moves on, so
    /// the dump never stays resident.
    Map(&'a memmap2::Mmap),
    Stream(&'a mut dyn BufRead),
}

/// The longest line kept from a stream (standard input, a decompressed
/// file); a mapped file's lines are never copied.
const MAX_STREAM_LINE: u64 = 64 << 20;

struct Lines<'a> {
    input: Input<'a>,
    pos: usize,
    released: usize,
    buf: Vec<u8>,
}

/// The line of `data` at `*pos` (with its newline), advancing `pos`.
fn slice_line<'d>(data: &'d [u8], pos: &mut usize) -> Option<&'d [u8]> {
    let rest = data.get(*pos..).filter(|r| !r.is_empty())?;
    let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
    *pos += end;
    Some(&rest[..end])
}

/// Releases the pages of `m` before `pos` (lines before it are parsed
/// into owned events), every 16 MB.
fn release(m: &memmap2::Mmap, released: &mut usize, pos: usize) {
    const RELEASE_EVERY: usize = 16 << 20;
    let low = pos & !0xffff;
    if low >= *released + RELEASE_EVERY {
        crate::mapped::release(m, *released, low - *released);
        *released = low;
    }
}

impl<'a> Lines<'a> {
    /// The next line with its newline, if any.
    fn next(&mut self) -> std::io::Result<Option<&[u8]>> {
        match &mut self.input {
            Input::Map(m) => {
                release(m, &mut self.released, self.pos);
                Ok(slice_line(m, &mut self.pos))
            }
            Input::Bytes(data) => Ok(slice_line(data, &mut self.pos)),
            Input::Stream(r) => {
                self.buf.clear();
                let k = std::io::Read::take(&mut **r, MAX_STREAM_LINE)
                    .read_until(b'\n', &mut self.buf)?;
                if k as u64 == MAX_STREAM_LINE && self.buf.last() != Some(&b'\n') {
                    // A longer line (no strace prints one; a hostile or
                    // broken stream may): the rest of it is skipped, the
                    // cut line is reported where it fails to parse.
                    loop {
                        let chunk = r.fill_buf()?;
                        if chunk.is_empty() {
                            break;
                        }
                        match memchr::memchr(b'\n', chunk) {
                            Some(i) => {
                                r.consume(i + 1);
                                break;
                            }
                            None => {
                                let n = chunk.len();
                                r.consume(n);
                            }
                        }
                    }
                }
                Ok((k > 0).then_some(&self.buf[..]))
            }
        }
    }
}

/// Reports bytes of line `n` that are not UTF-8.
fn non_utf8(diags: &mut Diagnostics, n: u64) -> crate::error::Result<()> {
    diags.report(
        Position::Line(n),
        Severity::Warning,
        "non_utf8",
        "bytes that are not UTF-8 were replaced by U+FFFD",
    )
}

/// The reader's state across lines: open calls, the event `-k` frames
/// attach to, the clock and the module ids.
struct Joiner {
    file_pid: Option<i32>,
    clock: Clock,
    // Unfinished calls per pid (a thread has at most one; a second
    // unfinished call on the same pid means the first's end was lost).
    pending: HashMap<Option<i32>, SyscallEvent>,
    // The last finished call or signal, which `-k` frames that follow
    // belong to. strace prints an exiting process's `exit_group() = ?`,
    // then `+++ exited +++`, then exit_group's stack: an exit line of the
    // same process does not end the call's frames.
    last: Option<Event>,
    // `exit(...) = ?` / `exit_group(...) = ?` per pid, held until its
    // `+++ exited +++` line: strace prints the call's stack after that
    // line, and other threads' lines (with their own stacks) may come
    // between the call and its exit.
    exiting: HashMap<Option<i32>, SyscallEvent>,
    modules: Modules,
}

/// A call that ends its thread or process: strace prints its stack after
/// the `+++ exited +++` line, not after the call.
fn is_exit_call(ev: &SyscallEvent) -> bool {
    matches!(ev.name.as_str(), "exit" | "exit_group") && ev.ret.as_deref() == Some("?")
}

type Emit<'e> = dyn FnMut(Event) -> crate::error::Result<()> + 'e;

/// Module path → id; frames carry ids (no string per frame).
#[derive(Default)]
struct Modules {
    ids: HashMap<Box<[u8]>, u32>,
    last: Vec<u8>,
    last_id: u32,
    /// The module just added had a path that is not UTF-8.
    new_not_utf8: bool,
}

impl Modules {
    /// The id of a module path; a new one is announced with
    /// [`Event::Module`] first.
    fn intern(&mut self, module: &[u8], emit: &mut Emit<'_>) -> crate::error::Result<u32> {
        // Consecutive frames are often in one module.
        if !self.last.is_empty() && module == &self.last[..] {
            return Ok(self.last_id);
        }
        let m = match self.ids.get(module) {
            Some(&m) => m,
            None => {
                let id = self.ids.len() as u32;
                self.ids.insert(module.into(), id);
                self.new_not_utf8 = std::str::from_utf8(module).is_err();
                emit(Event::Module {
                    id,
                    path: String::from_utf8_lossy(module).into_owned(),
                })?;
                id
            }
        };
        self.last.clear();
        self.last.extend_from_slice(module);
        self.last_id = m;
        Ok(m)
    }
}

impl Joiner {
    fn new(file_pid: Option<i32>) -> Self {
        Joiner {
            file_pid,
            clock: Clock {
                kind: None,
                day_offset: 0,
                last: i64::MIN / 2,
                relative_sum: 0,
            },
            pending: HashMap::default(),
            last: None,
            exiting: HashMap::default(),
            modules: Modules::default(),
        }
    }

    /// A `-k` frame line (line `n`) of module `module` (an id from
    /// [`Modules::intern`]).
    fn frame(
        &mut self,
        n: u64,
        module: u32,
        offset: u64,
        diags: &mut Diagnostics,
    ) -> crate::error::Result<()> {
        let stack = match self.last.as_mut() {
            Some(Event::Syscall(c)) => &mut c.stack,
            Some(Event::Signal { stack, .. }) => stack,
            _ => {
                return diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "orphan_frame",
                    "a -k stack frame that follows no finished system call was skipped",
                );
            }
        };
        if stack.capacity() == 0 {
            stack.reserve(16);
        }
        stack.push(StackFrame { module, offset });
        Ok(())
    }

    /// A finished call: the event the frames that follow belong to, or,
    /// for `exit`/`exit_group`, held until its thread's `+++ exited +++`
    /// line (after which strace prints its stack).
    fn finished(&mut self, ev: SyscallEvent, emit: &mut Emit<'_>) -> crate::error::Result<()> {
        if is_exit_call(&ev) {
            if let Some(old) = self.exiting.insert(ev.pid, ev) {
                emit(Event::Syscall(old))?;
            }
        } else {
            self.last = Some(Event::Syscall(ev));
        }
        Ok(())
    }

    /// Line `n` (with its newline), not taken as a frame by the byte-level
    /// path.
    fn line(
        &mut self,
        n: u64,
        buf: &[u8],
        diags: &mut Diagnostics,
        emit: &mut Emit<'_>,
    ) -> crate::error::Result<()> {
        let complete_line = buf.ends_with(b"\n");
        let text = match std::str::from_utf8(buf) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => {
                non_utf8(diags, n)?;
                String::from_utf8_lossy(buf)
            }
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            return Ok(());
        }
        let parsed = lines::parse(text);
        if let Line::Frame(f) = parsed {
            // A frame the byte-level path did not take (a module path
            // that is not UTF-8, a line with `\r\n`): same interning.
            let m = self.modules.intern(f.module.as_bytes(), emit)?;
            return self.frame(n, m, f.offset, diags);
        }
        let exit_pid = match parsed {
            Line::Exited(p, _) => Some(p.pid.or(self.file_pid)),
            Line::Killed { prefix, .. } => Some(prefix.pid.or(self.file_pid)),
            _ => None,
        };
        let keep =
            matches!((&self.last, exit_pid), (Some(Event::Syscall(c)), Some(p)) if c.pid == p);
        if !keep {
            if let Some(e) = self.last.take() {
                emit(e)?;
            }
        }
        // The clock's kind, told before the first event with a time.
        let stamp = match &parsed {
            Line::Call(p, _) | Line::Exited(p, _) => p.time,
            Line::Signal { prefix, .. } | Line::Killed { prefix, .. } => prefix.time,
            Line::Frame(_) | Line::Other(..) => None,
        };
        if let Some(kind) = self.clock.fix_kind(stamp) {
            emit(Event::Clock {
                epoch: kind == TimeKind::Epoch,
            })?;
        }
        match parsed {
            Line::Frame(_) => unreachable!(),
            Line::Call(p, c) => {
                let pid = p.pid.or(self.file_pid);
                let time_ns = self.clock.resolve(p.time);
                if !complete_line && c.state != CallState::Unfinished {
                    diags.report(
                        Position::Line(n),
                        Severity::Warning,
                        "truncated_line",
                        "the self.last line has no newline (the dump may have been cut)",
                    )?;
                }
                if c.state != CallState::Resumed {
                    // A new call of a thread with a call still open: the
                    // open one's end was lost.
                    if let Some(old) = self.pending.remove(&pid) {
                        diags.report(
                            Position::Line(old.line),
                            Severity::Warning,
                            "never_resumed",
                            format!(
                                "{}() of pid {} was never resumed: the same pid started another call at line {n}",
                                old.name,
                                pid.map_or("?".into(), |p| p.to_string())
                            ),
                        )?;
                        emit(Event::Syscall(old))?;
                    }
                }
                match c.state {
                    CallState::Complete => {
                        let ev = SyscallEvent::new(&c, n, pid, time_ns);
                        self.finished(ev, emit)?;
                    }
                    CallState::Unfinished => {
                        self.pending
                            .insert(pid, SyscallEvent::new(&c, n, pid, time_ns));
                    }
                    CallState::Resumed => {
                        let mut ev = match self.pending.remove(&pid) {
                            Some(e) if e.name == c.name => e,
                            open => {
                                // An open call of another name on this pid:
                                // its end was lost.
                                if let Some(other) = open {
                                    diags.report(
                                        Position::Line(other.line),
                                        Severity::Warning,
                                        "never_resumed",
                                        format!(
                                            "{}() was never resumed: line {n} resumes {}()",
                                            other.name, c.name
                                        ),
                                    )?;
                                    emit(Event::Syscall(other))?;
                                }
                                diags.report(
                                    Position::Line(n),
                                    Severity::Warning,
                                    "resumed_without_start",
                                    format!("<... {} resumed> with no unfinished call of that pid before it; kept with the arguments it has", c.name),
                                )?;
                                let mut ev = SyscallEvent::new(&c, n, pid, time_ns);
                                ev.resumed_line = Some(n);
                                self.last = Some(Event::Syscall(ev));
                                return Ok(());
                            }
                        };
                        let rest = c.args.trim_start();
                        if !rest.is_empty() {
                            if !ev.args.is_empty() {
                                ev.args.push_str(", ");
                            }
                            ev.args.push_str(rest);
                        }
                        ev.resumed_line = Some(n);
                        ev.duration_ns = c.duration_ns;
                        ev.ret = c.ret.map(str::to_string);
                        ev.errno = c.errno.map(str::to_string);
                        ev.ret_note = c.ret_note.map(str::to_string);
                        ev.finished = true;
                        self.finished(ev, emit)?;
                    }
                }
            }
            Line::Signal { prefix, name, info } => {
                self.last = Some(Event::Signal {
                    line: n,
                    pid: prefix.pid.or(self.file_pid),
                    time_ns: self.clock.resolve(prefix.time),
                    name: name.to_string(),
                    info: info.to_string(),
                    stack: Vec::new(),
                })
            }
            Line::Exited(p, code) => {
                let pid = p.pid.or(self.file_pid);
                // A call cut short by the exit (exit_group prints `= ?`;
                // others stay unfinished) ends here.
                if let Some(ev) = self.pending.remove(&pid) {
                    emit(Event::Syscall(ev))?;
                }
                // The frames after this line are the exit call's.
                if let Some(ev) = self.exiting.remove(&pid) {
                    if let Some(e) = self.last.replace(Event::Syscall(ev)) {
                        emit(e)?;
                    }
                }
                emit(Event::Exit {
                    line: n,
                    pid,
                    time_ns: self.clock.resolve(p.time),
                    code: Some(code),
                    signal: None,
                    core_dumped: false,
                })?
            }
            Line::Killed {
                prefix,
                signal,
                core_dumped,
            } => {
                let pid = prefix.pid.or(self.file_pid);
                if let Some(ev) = self.pending.remove(&pid) {
                    emit(Event::Syscall(ev))?;
                }
                if let Some(ev) = self.exiting.remove(&pid) {
                    if let Some(e) = self.last.replace(Event::Syscall(ev)) {
                        emit(e)?;
                    }
                }
                emit(Event::Exit {
                    line: n,
                    pid,
                    time_ns: self.clock.resolve(prefix.time),
                    code: None,
                    signal: Some(signal.to_string()),
                    core_dumped,
                })?
            }
            Line::Other(_, o) => {
                // strace's own messages are expected; anything else is not.
                let kind = if o.starts_with("strace: ") || o.starts_with("Process ") {
                    return Ok(());
                } else if !complete_line {
                    "truncated_line"
                } else {
                    "unparsed_line"
                };
                let shown: String = o.chars().take(120).collect();
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    kind,
                    format!("not a system call, signal, exit or stack line: {shown:?}"),
                )?;
            }
        }
        Ok(())
    }

    /// The end of the input: the last event and the calls never resumed.
    fn finish(
        mut self,
        diags: &mut Diagnostics,
        emit: &mut Emit<'_>,
    ) -> crate::error::Result<TimeKind> {
        if let Some(e) = self.last.take() {
            emit(e)?;
        }
        // Exit calls whose `+++ exited +++` line the dump does not have
        // (strace stopped first): kept, without a stack.
        let mut held: Vec<SyscallEvent> = self.exiting.into_values().collect();
        held.sort_by_key(|e| e.line);
        for ev in held {
            emit(Event::Syscall(ev))?;
        }
        let mut left: Vec<SyscallEvent> = self.pending.into_values().collect();
        left.sort_by_key(|e| e.line);
        for ev in left {
            diags.report(
                Position::Line(ev.line),
                Severity::Warning,
                "never_resumed",
                format!("{}() was never resumed before the end of the dump", ev.name),
            )?;
            emit(Event::Syscall(ev))?;
        }
        Ok(self.clock.kind.unwrap_or(TimeKind::None))
    }
}

/// Reads a dump. `file_pid` is the pid of a `-ff -o NAME` file (`NAME.PID`),
/// used for lines without a pid prefix. `emit` receives the events in the
/// order their last line appeared (a joined call when its resumption is
/// read).
pub fn read(
    input: Input<'_>,
    file_pid: Option<i32>,
    diags: &mut Diagnostics,
    emit: &mut Emit<'_>,
    progress: Option<&crate::progress::Progress>,
) -> crate::error::Result<ReadStats> {
    if let Input::Map(m) = input {
        if m.len() >= PIPELINE_BYTES {
            return read_pipelined(m, file_pid, diags, emit, progress);
        }
    }
    let mut j = Joiner::new(file_pid);
    let mut lines = Lines {
        input,
        pos: 0,
        released: 0,
        buf: Vec::new(),
    };
    let mut n: u64 = 0;
    let mut bytes: u64 = 0;
    loop {
        let buf = match lines.next() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => return Err(crate::error::Error::io(diags.source().to_string(), e)),
        };
        n += 1;
        bytes += buf.len() as u64;
        if n % PROGRESS_LINES == 0 {
            if let Some(p) = progress {
                p.at(bytes)?;
            }
        }
        // Most lines of a `-k` dump are frames: they take a byte-level
        // path (no UTF-8 check of the line, no string).
        if let Some((module, offset)) = lines::parse_frame_bytes(buf) {
            let m = j.modules.intern(module, emit)?;
            if std::mem::take(&mut j.modules.new_not_utf8) {
                non_utf8(diags, n)?;
            }
            j.frame(n, m, offset, diags)?;
        } else {
            j.line(n, buf, diags, emit)?;
        }
    }
    if let Some(p) = progress {
        p.at(bytes)?;
    }
    let time_kind = j.finish(diags, emit)?;
    Ok(ReadStats {
        lines: n,
        bytes,
        time_kind,
    })
}

/// Mapped dumps from this size on are read by two threads.
const PIPELINE_BYTES: usize = 8 << 20;

/// A line as the splitting thread of [`read_pipelined`] left it.
enum Pre {
    /// A module path frames name from now on.
    Module { id: u32, path: String },
    /// A `-k` frame line of `len` bytes, already parsed.
    Frame {
        len: u32,
        module: u32,
        offset: u64,
        utf8: bool,
    },
    /// Any other line: its byte range in the map.
    Line { start: usize, end: usize },
}

/// Adds a frame (and its module, when new) to a chunk.
fn push_frame(
    chunk: &mut Vec<Pre>,
    modules: &mut Modules,
    module: &[u8],
    len: u32,
    offset: u64,
    utf8: bool,
) {
    let mut new = None;
    let id = modules
        .intern(module, &mut |e| {
            new = Some(e);
            Ok(())
        })
        .unwrap_or(u32::MAX);
    if let Some(Event::Module { id, path }) = new {
        chunk.push(Pre::Module { id, path });
    }
    chunk.push(Pre::Frame {
        len,
        module: id,
        offset,
        utf8: utf8 && !std::mem::take(&mut modules.new_not_utf8),
    });
}

/// Lines per chunk the splitting thread hands over.
const PRE_CHUNK: usize = 16 * 1024;

/// [`read`] of a large mapped dump on two threads: one splits lines and
/// parses the `-k` frames (most lines), this one joins calls, parses the
/// other lines and emits events. Same events, same diagnostics.
/// Lines between two progress reports (`crate::progress::Progress`) of a read.
const PROGRESS_LINES: u64 = 64 * 1024;

fn read_pipelined(
    m: &memmap2::Mmap,
    file_pid: Option<i32>,
    diags: &mut Diagnostics,
    emit: &mut Emit<'_>,
    progress: Option<&crate::progress::Progress>,
) -> crate::error::Result<ReadStats> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Pre>>(8);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let data: &[u8] = m;
            let mut modules = Modules::default();
            let mut chunk = Vec::with_capacity(PRE_CHUNK);
            let mut pos = 0;
            while pos < data.len() {
                let start = pos;
                let line = match slice_line(data, &mut pos) {
                    Some(l) => l,
                    None => break,
                };
                let len = line.len() as u32;
                let framed = match lines::parse_frame_bytes(line) {
                    Some((module, offset)) => {
                        push_frame(&mut chunk, &mut modules, module, len, offset, true);
                        true
                    }
                    // A frame line the byte-level parser does not take
                    // (`\r\n`, bytes that are not UTF-8): parse its text.
                    None if line.starts_with(b" > ") => {
                        let utf8 = std::str::from_utf8(line).is_ok();
                        let text = String::from_utf8_lossy(line);
                        match lines::parse(text.trim_end_matches(['\n', '\r'])) {
                            Line::Frame(f) => {
                                let module = f.module.as_bytes();
                                push_frame(&mut chunk, &mut modules, module, len, f.offset, utf8);
                                true
                            }
                            _ => false,
                        }
                    }
                    None => false,
                };
                if !framed {
                    chunk.push(Pre::Line { start, end: pos });
                }
                if chunk.len() >= PRE_CHUNK {
                    let full = std::mem::replace(&mut chunk, Vec::with_capacity(PRE_CHUNK));
                    if tx.send(full).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(chunk);
        });
        let mut j = Joiner::new(file_pid);
        let mut n: u64 = 0;
        let mut bytes: u64 = 0;
        let mut released = 0;
        for chunk in rx {
            for pre in chunk {
                match pre {
                    Pre::Module { id, path } => emit(Event::Module { id, path })?,
                    Pre::Frame {
                        len,
                        module,
                        offset,
                        utf8,
                    } => {
                        n += 1;
                        bytes += u64::from(len);
                        if !utf8 {
                            non_utf8(diags, n)?;
                        }
                        j.frame(n, module, offset, diags)?;
                    }
                    Pre::Line { start, end } => {
                        n += 1;
                        bytes += (end - start) as u64;
                        release(m, &mut released, start);
                        j.line(n, &m[start..end], diags, emit)?;
                    }
                }
            }
            if let Some(p) = progress {
                p.at(bytes)?;
            }
        }
        let time_kind = j.finish(diags, emit)?;
        Ok(ReadStats {
            lines: n,
            bytes,
            time_kind,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> (Vec<Event>, Vec<crate::diag::Diagnostic>) {
        let mut d = Diagnostics::new("t", false);
        let mut out = Vec::new();
        read(
            Input::Bytes(text.as_bytes()),
            None,
            &mut d,
            &mut |e| {
                out.push(e);
                Ok(())
            },
            None,
        )
        .unwrap();
        // The clock's kind is told once, before the first timed event.
        if let Some(i) = out.iter().position(|e| matches!(e, Event::Clock { .. })) {
            assert_eq!(i, 0, "the clock event comes first");
            out.remove(0);
        }
        (out, d.into_vec())
    }

    #[test]
    fn the_clock_is_told_before_the_first_timed_event() {
        let told = |text: &str| {
            let mut out = Vec::new();
            read(
                Input::Bytes(text.as_bytes()),
                None,
                &mut Diagnostics::new("t", false),
                &mut |e| {
                    out.push(e);
                    Ok(())
                },
                None,
            )
            .unwrap();
            let clocks: Vec<bool> = out
                .iter()
                .filter_map(|e| match e {
                    Event::Clock { epoch } => Some(*epoch),
                    _ => None,
                })
                .collect();
            (clocks, matches!(out.first(), Some(Event::Clock { .. })))
        };
        // -ttt: epoch seconds, on UTC.
        assert_eq!(
            told("1 1795330737.795431 getpid() = 1\n1 1795330737.8 getpid() = 1\n"),
            (vec![true], true)
        );
        // -r: seconds since the previous line; -tt: a time of day.
        assert_eq!(told("1 0.000100 getpid() = 1\n"), (vec![false], true));
        assert_eq!(
            told("1 10:29:16.240035 getpid() = 1\n"),
            (vec![false], true)
        );
        // An exit line first: told before the exit event.
        assert_eq!(
            told("1 1795330737.795431 +++ exited with 0 +++\n"),
            (vec![true], true)
        );
        // No times: nothing told.
        assert_eq!(told("1 getpid() = 1\n"), (vec![], false));
    }

    fn calls(ev: &[Event]) -> Vec<&SyscallEvent> {
        ev.iter()
            .filter_map(|e| match e {
                Event::Syscall(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn unfinished_calls_join_and_frames_attach() {
        let (ev, d) = events(
            "10 1700000100.000001 wait4(-1,  <unfinished ...>\n\
             11 1700000100.000002 write(1, \"hi\", 2) = 2 <0.000003>\n\
             \x20> /lib/libc.so.6(write+0x10) [0x1000]\n\
             \x20> /bin/app() [0x40]\n\
             10 1700000100.000005 <... wait4 resumed>[{WIFEXITED(s)}], 0, NULL) = 11 <0.000004>\n\
             \x20> /lib/libc.so.6(wait4+0x5) [0x2000]\n",
        );
        assert!(d.is_empty(), "{d:?}");
        let c = calls(&ev);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].name.as_str(), c[0].stack.len(), c[0].time_ns),
            ("write", 2, Some(1_700_000_100_000_002_000))
        );
        assert!(ev.contains(&Event::Module {
            id: c[0].stack[1].module,
            path: "/bin/app".into()
        }));
        assert_eq!(c[1].name, "wait4");
        assert_eq!(c[1].args, "-1, [{WIFEXITED(s)}], 0, NULL");
        assert_eq!((c[1].line, c[1].resumed_line), (1, Some(5)));
        assert_eq!(c[1].ret.as_deref(), Some("11"));
        assert_eq!(c[1].stack[0].offset, 0x2000);
    }

    #[test]
    fn bad_input_is_reported_with_line_numbers_and_nothing_around_it_lost() {
        let (ev, d) = events(
            "1 5.000000 read(3, <unfinished ...>\n\
             garbage here\n\
             \x20> /lib/x.so() [0x1]\n\
             1 5.100000 close(3) = 0\n\
             2 5.200000 <... nosuch resumed>) = 0\n\
             3 5.300000 write(1, \"abc",
        );
        let kinds: Vec<(&str, Option<u64>)> =
            d.iter().map(|x| (x.kind, x.position.line())).collect();
        assert!(kinds.contains(&("unparsed_line", Some(2))), "{kinds:?}");
        assert!(kinds.contains(&("never_resumed", Some(1))), "{kinds:?}");
        assert!(
            kinds.contains(&("resumed_without_start", Some(5))),
            "{kinds:?}"
        );
        let names: Vec<&str> = calls(&ev).iter().map(|c| c.name.as_str()).collect();
        // read (unfinished, ended by the next call of pid 1), close, the
        // orphan resumption; the cut write is not a call.
        assert_eq!(names, ["read", "close", "nosuch"]);
        assert!(!calls(&ev)[0].finished);
        // The orphan frame at line 3 followed a line that is no call.
        assert!(kinds.contains(&("orphan_frame", Some(3))), "{kinds:?}");
        assert!(kinds.contains(&("truncated_line", Some(6))), "{kinds:?}");

        let mut d = Diagnostics::new("t", false);
        let mut n = 0;
        read(
            Input::Stream(&mut &b"1 1.0 getpid() = 1\n1 1.1 write(1, \"\xff\xfe\", 2) = 2\n"[..]),
            None,
            &mut d,
            &mut |e| {
                n += usize::from(!matches!(e, Event::Clock { .. }));
                Ok(())
            },
            None,
        )
        .unwrap();
        assert_eq!(n, 2);
        let d = d.into_vec();
        assert_eq!((d[0].kind, d[0].position.line()), ("non_utf8", Some(2)));
    }

    /// A resumption of another call than the one open on the pid: both
    /// are kept, each with a diagnostic.
    #[test]
    fn resumption_of_another_call_keeps_both() {
        let (ev, d) = events("1 5.0 read(3, <unfinished ...>\n1 5.1 <... write resumed>) = 2\n");
        let names: Vec<&str> = calls(&ev).iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["read", "write"]);
        let kinds: Vec<(&str, Option<u64>)> =
            d.iter().map(|x| (x.kind, x.position.line())).collect();
        assert_eq!(
            kinds,
            [
                ("never_resumed", Some(1)),
                ("resumed_without_start", Some(2))
            ]
        );
    }

    #[test]
    fn clock_of_day_rolls_over_and_relative_times_accumulate() {
        let (ev, _) = events("23:59:59.500000 getpid() = 1\n00:00:00.250000 getpid() = 1\n");
        let t: Vec<Option<i64>> = calls(&ev).iter().map(|c| c.time_ns).collect();
        assert_eq!(t, [Some(86_399_500_000_000), Some(86_400_250_000_000)]);
        let (ev, _) = events(
            "     0.000000 getpid() = 1\n     0.000250 getpid() = 1\n     0.001000 getpid() = 1\n",
        );
        let t: Vec<Option<i64>> = calls(&ev).iter().map(|c| c.time_ns).collect();
        assert_eq!(t, [Some(0), Some(250_000), Some(1_250_000)]);
    }

    /// The recorded dumps read without a diagnostic; every finished call
    /// has a stack (`-k`), and mem.strace's parent makes the ten 266240-byte
    /// mmaps of its malloc loop (src/mem.c).
    #[test]
    fn fixture_dumps_read_cleanly() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/strace");
        for name in ["mem.strace", "io.strace"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            let (ev, d) = events(&text);
            assert!(d.is_empty(), "{name}: {d:?}");
            for c in calls(&ev) {
                assert!(c.finished, "{name}:{}", c.line);
                assert!(!c.stack.is_empty(), "{name}:{} {}", c.line, c.name);
            }
            if name == "mem.strace" {
                let n = calls(&ev)
                    .iter()
                    .filter(|c| c.name == "mmap" && c.args.starts_with("NULL, 266240,"))
                    .count();
                assert_eq!(n, 10);
            }
        }
    }

    #[test]
    fn exits_and_signals() {
        let (ev, _) = events(
            "7 1.0 exit_group(0) = ?\n7 1.1 +++ exited with 0 +++\n8 1.2 --- SIGSEGV {si_signo=SIGSEGV} ---\n8 1.3 +++ killed by SIGSEGV (core dumped) +++\n",
        );
        // The exit is reported as its line is read; exit_group stays open
        // for the stack that strace prints after the exit line.
        assert_eq!(ev.len(), 4);
        assert!(matches!(
            &ev[0],
            Event::Exit {
                code: Some(0),
                pid: Some(7),
                ..
            }
        ));
        assert!(matches!(&ev[2], Event::Signal { name, .. } if name == "SIGSEGV"));
        assert!(
            matches!(&ev[3], Event::Exit { signal: Some(s), core_dumped: true, .. } if s == "SIGSEGV")
        );
        // exit_group's stack comes after the exit line.
        let (ev, d) = events(
            "7 1.0 exit_group(0) = ?\n7 1.1 +++ exited with 0 +++\n > /lib/libc.so.6(_exit+0x29) [0xd4409]\n",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(calls(&ev)[0].stack.len(), 1);
    }

    /// Large mapped dumps take the two-thread path: the same events and
    /// diagnostics as the one-thread reader of the same bytes, damaged
    /// frame lines included.
    #[test]
    fn pipelined_reader_matches_the_sequential_one() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/strace/");
        let mut unit = std::fs::read(format!("{root}mem.strace")).unwrap();
        unit.extend(std::fs::read(format!("{root}threads.strace")).unwrap());
        // A frame with bytes that are not UTF-8, one with \r\n, a line
        // that is nothing and an orphan frame after it.
        unit.extend_from_slice(
            b"1 1.5 write(1, \"x\", 1) = 1\n > /lib/\xff\xfe.so(f+0x1) [0x10]\n",
        );
        unit.extend_from_slice(b" > /lib/crlf.so(g+0x2) [0x20]\r\n");
        unit.extend_from_slice(
            b"1 1.6 +++ exited with 0 +++\ngarbage\n > /lib/orphan.so() [0x30]\n",
        );
        let mut data = Vec::new();
        while data.len() < PIPELINE_BYTES + (1 << 20) {
            data.extend_from_slice(&unit);
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &data).unwrap();
        let f = std::fs::File::open(file.path()).unwrap();
        let map = crate::mapped::map_readonly(&f).unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let progress = crate::progress::Progress {
            done: done.clone(),
            base: 0,
            cancel: None,
        };
        let run = |input: Input<'_>| {
            let mut d = Diagnostics::new("t", false);
            let mut out = Vec::new();
            done.store(0, std::sync::atomic::Ordering::Relaxed);
            let stats = read(
                input,
                None,
                &mut d,
                &mut |e| {
                    out.push(e);
                    Ok(())
                },
                Some(&progress),
            )
            .unwrap();
            // The reader itself reported its progress up to the last byte.
            assert_eq!(
                done.load(std::sync::atomic::Ordering::Relaxed),
                data.len() as u64
            );
            let diags: Vec<_> = d
                .into_vec()
                .into_iter()
                .map(|x| (x.kind, x.position.line(), x.message))
                .collect();
            (out, diags, stats.lines, stats.bytes, stats.time_kind)
        };
        let piped = run(Input::Map(&map));
        let plain = run(Input::Bytes(&data));
        assert!(piped.0.len() > 10_000);
        assert!(piped.1.iter().any(|d| d.0 == "non_utf8"));
        assert!(piped.1.iter().any(|d| d.0 == "orphan_frame"));
        assert!(piped
            .0
            .iter()
            .any(|e| matches!(e, Event::Module { path, .. } if path == "/lib/crlf.so")));
        assert_eq!(piped, plain);
    }
}
