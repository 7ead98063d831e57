//! strace events → Arrow batches of `syscall` and `strace_event`; `-k`
//! stacks go to the shared `module` / `frame` / `stack` tables.

use arrow::array::{
    ArrayRef, BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
};
use arrow::datatypes::Int32Type;

use super::args::parse_ret;
use super::reader::{Event, StackFrame, SyscallEvent};
use crate::schema;
use crate::stacks::StackTables;
use crate::syscalls::{SyscallRow, SyscallTable};
use crate::writer::{CaptureWriter, TableWriter};
use crate::Result;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

fn a<B: arrow::array::ArrayBuilder>(b: &mut B) -> ArrayRef {
    b.finish()
}

#[derive(Default)]
struct EventCols {
    source: Int32Builder,
    line: Int64Builder,
    pid: Int32Builder,
    time: Int64Builder,
    kind: Dict,
    signal: Dict,
    code: Int32Builder,
    core: BooleanBuilder,
    info: StringBuilder,
    stack: Int64Builder,
    rows: usize,
}

pub struct StraceConverter {
    events: EventCols,
    events_out: TableWriter,
    source_id: i32,
    chain: Vec<i64>,
    /// Interned module path (by address, valid for the current input) →
    /// `module.module_id`.
    module_ids: rustc_hash::FxHashMap<usize, i64>,
    pub calls_written: u64,
}

impl StraceConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(StraceConverter {
            events: Default::default(),
            events_out: cap.open_table(&schema::STRACE_EVENT)?,
            source_id: 0,
            chain: Vec::new(),
            module_ids: Default::default(),
            calls_written: 0,
        })
    }

    pub fn begin_source(&mut self, source_id: i32) {
        self.source_id = source_id;
        self.module_ids.clear();
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
        self.chain.clear();
        for (d, f) in frames.iter().enumerate() {
            // strace prints the file offset of each pc (libdw/libunwind:
            // pc - mapping start + mapping offset); callers' pcs are
            // return addresses.
            // The reader interns module paths: one Arc per module and
            // input, so its address identifies the module.
            let key = std::sync::Arc::as_ptr(&f.module) as *const u8 as usize;
            let module = match self.module_ids.get(&key) {
                Some(&m) => m,
                None => {
                    let is_file = f.module.starts_with('/');
                    let m = stacks.module(f.module.to_string(), None, false, is_file);
                    self.module_ids.insert(key, m);
                    m
                }
            };
            self.chain
                .push(stacks.frame(module, f.offset, "user", d > 0, pid, None));
        }
        Some(stacks.stack(&self.chain))
    }

    pub fn handle(
        &mut self,
        ev: Event,
        stacks: &mut StackTables,
        calls: &mut SyscallTable,
    ) -> Result<()> {
        match ev {
            Event::Syscall(c) => self.call(c, stacks, calls),
            Event::Signal {
                line,
                pid,
                time_ns,
                name,
                info,
                stack,
            } => {
                let sid = self.stack(stacks, pid, &stack);
                let e = &mut self.events;
                e.source.append_value(self.source_id);
                e.line.append_value(line as i64);
                e.pid.append_option(pid);
                e.time.append_option(time_ns);
                e.kind.append_value("signal");
                e.signal.append_value(&name);
                e.code.append_null();
                e.core.append_value(false);
                e.info.append_option((!info.is_empty()).then_some(info));
                e.stack.append_option(sid);
                e.rows += 1;
            }
            Event::Exit {
                line,
                pid,
                time_ns,
                code,
                signal,
                core_dumped,
            } => {
                let e = &mut self.events;
                e.source.append_value(self.source_id);
                e.line.append_value(line as i64);
                e.pid.append_option(pid);
                e.time.append_option(time_ns);
                e.kind
                    .append_value(if code.is_some() { "exited" } else { "killed" });
                e.signal.append_option(signal);
                e.code.append_option(code);
                e.core.append_value(core_dumped);
                e.info.append_null();
                e.stack.append_null();
                e.rows += 1;
            }
        }
        if calls.full() || self.events.rows >= BATCH_ROWS {
            self.flush(stacks, calls)?;
        }
        Ok(())
    }

    fn call(&mut self, c: SyscallEvent, stacks: &mut StackTables, calls: &mut SyscallTable) {
        let stack_id = self.stack(stacks, c.pid, &c.stack);
        calls.push(&SyscallRow {
            source_id: self.source_id,
            line: Some(c.line),
            resumed_line: c.resumed_line,
            pid: c.pid,
            tgid: None,
            sample_id: None,
            time_ns: c.time_ns,
            duration_ns: c.duration_ns,
            name: &c.name,
            args: &c.args,
            ret: c.ret.as_deref(),
            retval: c.ret.as_deref().and_then(parse_ret),
            errno: c.errno.as_deref(),
            note: c.ret_note.as_deref(),
            finished: c.finished,
            stack_id,
        });
        self.calls_written += 1;
    }

    pub fn flush(&mut self, stacks: &mut StackTables, calls: &mut SyscallTable) -> Result<()> {
        // Stacks first: a reader of a partial capture never sees a stack
        // id before its frames.
        stacks.flush()?;
        calls.flush()?;
        if self.events.rows > 0 {
            let e = &mut self.events;
            let cols = vec![
                a(&mut e.source),
                a(&mut e.line),
                a(&mut e.pid),
                a(&mut e.time),
                a(&mut e.kind),
                a(&mut e.signal),
                a(&mut e.code),
                a(&mut e.core),
                a(&mut e.info),
                a(&mut e.stack),
            ];
            self.events_out.write_columns(cols)?;
            e.rows = 0;
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
