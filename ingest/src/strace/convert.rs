//! strace events → Arrow batches of `syscall` and `strace_event`; `-k`
//! stacks go to the shared `module` / `frame` / `stack` tables.

use arrow::array::{
    BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
};
use arrow::datatypes::Int32Type;

use super::batch::{Batch, Packed};
use super::reader::StackFrame;
use crate::columns::{TableColumns, UtcTime};
use crate::error::Result;
use crate::stacks::StackTables;
use crate::syscall_args::parse_ret;
use crate::syscall_table::{SyscallRow, SyscallTable};
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

table_columns! {
    #[derive(Default)]
    struct EventCols for schema::STRACE_EVENT {
        source_id: Int32Builder,
        line: Int64Builder,
        pid: Int32Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        kind: Dict,
        signal: Dict,
        exit_code: Int32Builder,
        core_dumped: BooleanBuilder,
        info: StringBuilder,
        stack_id: Int64Builder,
    }
}

pub struct StraceConverter {
    events: EventCols,
    events_out: TableWriter,
    source_id: i32,
    chain: Vec<i64>,
    /// The reader's module ids of the current input → `module.module_id`.
    module_ids: Vec<i64>,
    /// Frames of a stack (current input) → `stack.stack_id`: a stack seen
    /// before costs one lookup, not one per frame.
    stack_ids: rustc_hash::FxHashMap<Box<[StackFrame]>, i64>,
    /// The current input's times are on UTC (`-ttt`).
    epoch: bool,
    pub calls_written: u64,
}

/// Entries of the frames → stack cache before it is cleared.
const STACK_CACHE: usize = 200_000;

impl StraceConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(StraceConverter {
            events: Default::default(),
            events_out: cap.open_table(&schema::STRACE_EVENT)?,
            source_id: 0,
            chain: Vec::new(),
            module_ids: Vec::new(),
            stack_ids: Default::default(),
            epoch: false,
            calls_written: 0,
        })
    }

    pub fn begin_source(&mut self, source_id: i32) {
        self.source_id = source_id;
        self.module_ids.clear();
        self.stack_ids.clear();
        self.epoch = false;
    }

    fn stack(
        &mut self,
        stacks: &mut StackTables,
        pid: Option<i32>,
        frames: &[StackFrame],
    ) -> Option<i64> {
        if frames.is_empty() {
            return None;
        }
        if let Some(&id) = self.stack_ids.get(frames) {
            return Some(id);
        }
        self.chain.clear();
        for (d, f) in frames.iter().enumerate() {
            // strace prints the file offset of each pc (libdw/libunwind:
            // pc - mapping start + mapping offset); callers' pcs are
            // return addresses.
            let module = self
                .module_ids
                .get(f.module as usize)
                .copied()
                .unwrap_or(-1);
            self.chain
                .push(stacks.frame(module, f.offset, "user", d > 0, pid, None));
        }
        let id = stacks.stack(&self.chain);
        if self.stack_ids.len() >= STACK_CACHE {
            self.stack_ids.clear();
        }
        self.stack_ids.insert(frames.into(), id);
        Some(id)
    }

    /// Converts a batch of events (in the order the reader emitted them).
    pub fn handle(
        &mut self,
        b: &Batch,
        stacks: &mut StackTables,
        calls: &mut SyscallTable,
    ) -> Result<()> {
        for item in &b.items {
            match *item {
                Packed::Clock { epoch } => {
                    self.epoch = epoch;
                    calls.set_utc_offset(self.source_id, epoch.then_some(0));
                }
                Packed::Module { id, path } => {
                    let path = b.str(path);
                    let is_file = path.starts_with('/');
                    let m = stacks.module(path.to_string(), None, false, is_file);
                    if self.module_ids.len() <= id as usize {
                        self.module_ids.resize(id as usize + 1, -1);
                    }
                    self.module_ids[id as usize] = m;
                }
                Packed::Syscall {
                    line,
                    resumed_line,
                    pid,
                    time_ns,
                    duration_ns,
                    name,
                    args,
                    ret,
                    errno,
                    note,
                    finished,
                    stack,
                } => {
                    let stack_id = self.stack(stacks, pid, b.frames(stack));
                    let ret = ret.map(|r| b.str(r));
                    calls.push(&SyscallRow {
                        source_id: self.source_id,
                        line: Some(line),
                        resumed_line,
                        pid,
                        tgid: None,
                        sample_id: None,
                        time_ns,
                        duration_ns,
                        name: b.str(name),
                        args: b.str(args),
                        ret,
                        retval: ret.and_then(parse_ret),
                        errno: errno.map(|v| b.str(v)),
                        note: note.map(|v| b.str(v)),
                        finished,
                        stack_id,
                    });
                    self.calls_written += 1;
                }
                Packed::Signal {
                    line,
                    pid,
                    time_ns,
                    name,
                    info,
                    stack,
                } => {
                    let sid = self.stack(stacks, pid, b.frames(stack));
                    let info = b.str(info);
                    let e = &mut self.events;
                    e.source_id.append_value(self.source_id);
                    e.line.append_value(line as i64);
                    e.pid.append_option(pid);
                    e.time_ns.append_option(time_ns);
                    e.time_utc.push(time_ns.filter(|_| self.epoch));
                    e.kind.append_value("signal");
                    e.signal.append_value(b.str(name));
                    e.exit_code.append_null();
                    e.core_dumped.append_value(false);
                    e.info.append_option((!info.is_empty()).then_some(info));
                    e.stack_id.append_option(sid);
                }
                Packed::Exit {
                    line,
                    pid,
                    time_ns,
                    code,
                    signal,
                    core_dumped,
                } => {
                    let e = &mut self.events;
                    e.source_id.append_value(self.source_id);
                    e.line.append_value(line as i64);
                    e.pid.append_option(pid);
                    e.time_ns.append_option(time_ns);
                    e.time_utc.push(time_ns.filter(|_| self.epoch));
                    e.kind
                        .append_value(if code.is_some() { "exited" } else { "killed" });
                    e.signal.append_option(signal.map(|v| b.str(v)));
                    e.exit_code.append_option(code);
                    e.core_dumped.append_value(core_dumped);
                    e.info.append_null();
                    e.stack_id.append_null();
                }
            }
            if calls.full() || self.events.rows() >= BATCH_ROWS {
                self.flush(stacks, calls)?;
            }
        }
        Ok(())
    }

    pub fn flush(&mut self, stacks: &mut StackTables, calls: &mut SyscallTable) -> Result<()> {
        // Stacks first: a reader of a partial capture never sees a stack
        // id before its frames.
        stacks.flush()?;
        calls.flush()?;
        if self.events.rows() > 0 {
            self.events_out.write_rows(&mut self.events)?;
        }
        Ok(())
    }

    pub fn finish(
        mut self,
        cap: &mut CaptureWriter,
        stacks: &mut StackTables,
        calls: &mut SyscallTable,
    ) -> Result<()> {
        self.flush(stacks, calls)?;
        cap.close_table(self.events_out)?;
        Ok(())
    }
}
