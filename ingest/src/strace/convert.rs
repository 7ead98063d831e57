//! strace events → Arrow batches of `syscall` and `strace_event`; `-k`
//! stacks go to the shared `module` / `frame` / `stack` tables.

use arrow::array::{
    ArrayRef, BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
    UInt64Builder,
};
use arrow::datatypes::Int32Type;

use super::args::{parse_call_args, parse_ret};
use super::reader::{Event, StackFrame, SyscallEvent};
use crate::schema;
use crate::stacks::StackTables;
use crate::writer::{CaptureWriter, TableWriter};
use crate::Result;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

fn a<B: arrow::array::ArrayBuilder>(b: &mut B) -> ArrayRef {
    b.finish()
}

#[derive(Default)]
struct CallCols {
    id: Int64Builder,
    source: Int32Builder,
    line: Int64Builder,
    resumed: Int64Builder,
    pid: Int32Builder,
    time: Int64Builder,
    duration: Int64Builder,
    name: Dict,
    args: StringBuilder,
    ret: StringBuilder,
    retval: Int64Builder,
    errno: Dict,
    note: StringBuilder,
    finished: BooleanBuilder,
    stack: Int64Builder,
    fd: Int32Builder,
    fd_path: StringBuilder,
    addr: UInt64Builder,
    length: UInt64Builder,
    new_length: UInt64Builder,
    new_addr: UInt64Builder,
    prot: StringBuilder,
    flags: StringBuilder,
    offset: Int64Builder,
    count: Int64Builder,
    rows: usize,
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
    calls: CallCols,
    calls_out: TableWriter,
    events: EventCols,
    events_out: TableWriter,
    source_id: i32,
    next_id: i64,
    chain: Vec<i64>,
    /// Interned module path (by address, valid for the current input) →
    /// `module.module_id`.
    module_ids: rustc_hash::FxHashMap<usize, i64>,
    pub calls_written: u64,
}

impl StraceConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(StraceConverter {
            calls: Default::default(),
            calls_out: cap.open_table(&schema::SYSCALL)?,
            events: Default::default(),
            events_out: cap.open_table(&schema::STRACE_EVENT)?,
            source_id: 0,
            next_id: 0,
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

    pub fn handle(&mut self, ev: Event, stacks: &mut StackTables) -> Result<()> {
        match ev {
            Event::Syscall(c) => self.call(c, stacks)?,
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
        if self.calls.rows >= BATCH_ROWS || self.events.rows >= BATCH_ROWS {
            self.flush(stacks)?;
        }
        Ok(())
    }

    fn call(&mut self, c: SyscallEvent, stacks: &mut StackTables) -> Result<()> {
        let sid = self.stack(stacks, c.pid, &c.stack);
        let p = parse_call_args(&c.name, &c.args);
        let k = &mut self.calls;
        k.id.append_value(self.next_id);
        self.next_id += 1;
        k.source.append_value(self.source_id);
        k.line.append_value(c.line as i64);
        k.resumed.append_option(c.resumed_line.map(|l| l as i64));
        k.pid.append_option(c.pid);
        k.time.append_option(c.time_ns);
        k.duration.append_option(c.duration_ns);
        k.name.append_value(&c.name);
        k.retval.append_option(c.ret.as_deref().and_then(parse_ret));
        k.ret.append_option(c.ret.as_deref());
        k.errno.append_option(c.errno.as_deref());
        k.note.append_option(c.ret_note.as_deref());
        k.finished.append_value(c.finished);
        k.stack.append_option(sid);
        k.fd.append_option(p.fd);
        k.fd_path.append_option(p.fd_path);
        k.addr.append_option(p.addr);
        k.length.append_option(p.length);
        k.new_length.append_option(p.new_length);
        k.new_addr.append_option(p.new_addr);
        k.prot.append_option(p.prot);
        k.flags.append_option(p.flags);
        k.offset.append_option(p.offset);
        k.count.append_option(p.count);
        k.args.append_value(&c.args);
        k.rows += 1;
        self.calls_written += 1;
        Ok(())
    }

    pub fn flush(&mut self, stacks: &mut StackTables) -> Result<()> {
        // Stacks first: a reader of a partial capture never sees a stack
        // id before its frames.
        stacks.flush()?;
        if self.calls.rows > 0 {
            let k = &mut self.calls;
            let cols = vec![
                a(&mut k.id),
                a(&mut k.source),
                a(&mut k.line),
                a(&mut k.resumed),
                a(&mut k.pid),
                a(&mut k.time),
                a(&mut k.duration),
                a(&mut k.name),
                a(&mut k.args),
                a(&mut k.ret),
                a(&mut k.retval),
                a(&mut k.errno),
                a(&mut k.note),
                a(&mut k.finished),
                a(&mut k.stack),
                a(&mut k.fd),
                a(&mut k.fd_path),
                a(&mut k.addr),
                a(&mut k.length),
                a(&mut k.new_length),
                a(&mut k.new_addr),
                a(&mut k.prot),
                a(&mut k.flags),
                a(&mut k.offset),
                a(&mut k.count),
            ];
            self.calls_out.write_columns(cols)?;
            k.rows = 0;
        }
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

    pub fn finish(mut self, cap: &mut CaptureWriter, stacks: &mut StackTables) -> Result<()> {
        self.flush(stacks)?;
        cap.close_table(self.calls_out)?;
        cap.close_table(self.events_out)?;
        Ok(())
    }
}
