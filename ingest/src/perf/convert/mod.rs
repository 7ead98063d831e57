//! perf records → Arrow batches of the perf_* tables.
//!
//! One loop over the time-ordered records (samply's converter is the model):
//! `handle_sample`, `handle_mmap`, `handle_comm`, ... fill column builders
//! and flush a batch every [`BATCH_ROWS`] rows, so memory stays bounded by
//! the number of distinct stacks, frames and mappings, not by the file size.
//! The converter keeps each process's address space to turn an instruction
//! address into (module, file offset) at the time of the sample: MMAP and
//! MMAP2 records insert mappings, trimming or splitting the ones they
//! overlap (perf's `maps__fixup_overlap_and_insert`), and a FORK of a new
//! process copies its parent's space. Each space has a generation that
//! changes with it, so a raw callchain seen before in the same generations
//! resolves to its stack in one lookup (a bounded cache). Threads' names
//! are tracked for the `comm` column. Branch-stack entries become frames
//! too, each with the call stack at its source (`branch_frames`), so LBR
//! pseudo-samples are stacks like any other.

use std::sync::Arc;

use arrow::array::{Array, AsArray, Int64Array, RecordBatch};
use arrow::datatypes::Int64Type;

use rustc_hash::FxHashMap as HashMap;

use crate::intern::HashKeyMap;
use crate::stacks::{Resolved, StackTables};

use super::header::{hex, EventDesc, Metadata};
use super::records::{CpuMode, Mmap, Payload, Record, Sample, SampleId, SyscallPayload};
use super::syscall_pairs::{Half, SyscallPairs};
use crate::error::Result;
use crate::syscall_table::SyscallTable;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema::{self, TableDef};

mod branch;
mod cols;
mod power;
mod space;
mod summary;

use branch::{branch_mode, Transfer};
use cols::*;
use power::power_domain;
use space::{
    insert_mapping, is_file_path, is_perf_map_name, lookup_with_start, module_name, MapEntry, Space,
};
use summary::ThreadInfo;

/// PERF_SAMPLE_BRANCH_CALL_STACK: the branch stack is the call stack
/// (`perf record --call-graph lbr`).
const BRANCH_CALL_STACK: u64 = 1 << 11;

pub const BATCH_ROWS: usize = 64 * 1024;

/// The system call a `syscalls:sys_enter_NAME`/`sys_exit_NAME` event
/// records, by the name strace prints (the kernel names a few tracepoints
/// after their implementation: `sendfile64`, `newfstat`, ...).
fn syscall_name(event: &str) -> Option<Arc<str>> {
    let (_, n) = super::records::syscall_tracepoint(event)?;
    Some(
        match n {
            "sendfile64" => "sendfile",
            "newstat" => "stat",
            "newlstat" => "lstat",
            "newfstat" => "fstat",
            "newuname" => "uname",
            n => n,
        }
        .into(),
    )
}

/// Entries of the raw-callchain → stack cache before it is cleared.
const RAW_STACK_CACHE: usize = 200_000;

/// Samples per batch and entries of the raw-callchain cache: in tests, set
/// small so that small captures go through held batches and cache clears.
#[cfg(not(test))]
fn limits() -> (usize, usize) {
    (BATCH_ROWS, RAW_STACK_CACHE)
}

#[cfg(test)]
thread_local! {
    pub(crate) static TEST_LIMITS: std::cell::Cell<(usize, usize)> =
        const { std::cell::Cell::new((BATCH_ROWS, RAW_STACK_CACHE)) };
}

#[cfg(test)]
fn limits() -> (usize, usize) {
    TEST_LIMITS.with(std::cell::Cell::get)
}

/// A table being streamed: its writer plus a row count for flushing.
struct Out {
    w: TableWriter,
    rows: usize,
}

impl Out {
    fn new(cap: &mut CaptureWriter, def: &'static TableDef) -> Result<Out> {
        Ok(Out {
            w: cap.open_table(def)?,
            rows: 0,
        })
    }
}

/// The thread of the previous sample: its command key and samples not yet
/// added to its summary.
struct LastThread {
    key: (Option<i32>, Option<i32>),
    comm: Option<i32>,
    /// Generation of the process's address space.
    ugen: u64,
    samples: i64,
}

/// Converts the records of one or more perf.data inputs into a capture.
pub struct PerfConverter {
    samples: SampleCols,
    samples_out: Out,
    reads: ReadCols,
    reads_out: Out,
    branches: BranchCols,
    branches_out: Out,
    ustack: UserStackCols,
    ustack_out: Out,
    /// Modules, frames and stacks (shared with the other converters of
    /// the capture).
    pub stacks: StackTables,
    /// System calls (from syscall tracepoints here; shared with the
    /// strace converter).
    pub syscalls: SyscallTable,
    sys_pairs: SyscallPairs,
    /// Per event: the system call of a `syscalls:sys_*_NAME` tracepoint.
    sys_names: Vec<Option<Arc<str>>>,
    mappings: MappingCols,
    mappings_out: Out,
    tasks: TaskCols,
    tasks_out: Out,
    lost: LostCols,
    lost_out: Out,
    switches: SwitchCols,
    switches_out: Out,
    sched: SchedSwitchCols,
    sched_out: Out,

    source_id: i32,
    event_base: i32,
    /// Per input: kernel id → global event id.
    id_to_event: HashMap<u64, i32>,
    event_names: Vec<Arc<str>>,
    /// RAPL domain of each event that is a power event (`power/energy-*/`).
    power_domain: Vec<Option<&'static str>>,
    /// Power event values read at samples (group reads), for the `energy`
    /// table: (time ns, power event id, the sample's event id, value in
    /// 2^-32 J, where the sample is), in file order.
    power_reads: Vec<power::PowerRead>,
    /// Where the record being handled is in the input (for diagnostics
    /// made after the input is read).
    pub position: crate::diag::Position,
    /// The current input's offset from its clock to UTC (its clock data
    /// header), once known; `time_utc` columns are null without it.
    utc_offset: Option<i64>,
    /// Rows of the current input given a time but no `time_utc` because
    /// the clock data came later in the stream (pipe mode).
    pub utc_missed: u64,
    /// Where the first of those records is.
    pub utc_missed_at: crate::diag::Position,
    events: Vec<(i32, EventDesc)>,
    metas: Vec<(i32, Metadata)>,

    next_sample: i64,
    next_mapping: i64,
    spaces: HashMap<(i32, i32), Space>,
    kernel_space: HashMap<i32, Space>,
    next_gen: u64,
    /// Generation of the current input's kernel address space.
    kgen: u64,
    /// Raw callchain (with the generations of the address spaces it was
    /// resolved in) → stack id and user stack id (-1: none): repeated
    /// stacks skip frame resolution. Two ids, not an `Option`, keep a
    /// slot at 32 bytes.
    raw_stacks: HashKeyMap<(i64, i64)>,
    raw_key: Vec<u8>,
    /// Dictionary key of each event's name in `perf_sample.event`.
    event_keys: Vec<i32>,
    /// DWARF unwinder for samples with user registers and stack.
    unwinder: Option<Box<dyn crate::unwind::StackUnwinder>>,
    /// User frames unwound for the current sample (reused buffer).
    unwound: Vec<u64>,
    /// Command of each thread: (name, key in `perf_sample.comm`).
    comms: HashMap<(i32, i32), (Arc<str>, i32)>,
    threads: HashMap<(i32, i32, i32), ThreadInfo>,
    chain: Vec<i64>,
    /// Reused: the frames of the stack being resolved.
    resolved: Vec<Resolved>,
    /// Index of the first user frame in `chain` (None: no user frames).
    chain_user_from: Option<usize>,
    /// Per branch entry of the current sample: (from frame, to frame,
    /// stack at the source, transfer).
    lbr: Vec<(i64, i64, i64, Transfer)>,
    /// Each thread's last branch stack, to mark the entries a sample
    /// repeats (`perf_branch.repeated`).
    branch_history: super::overlap::BranchHistory,
    last_thread: Option<LastThread>,
    pub samples_written: u64,
    /// New stacks are queued to the stack thread ([`StackTables::queue`]):
    /// `raw_stacks` and `perf_sample.stack_id` hold their tickets until
    /// [`PerfConverter::settle_stack_ids`].
    deferred: bool,
    /// The first sample row whose `stack_id` is still a ticket.
    tickets_from: usize,
    /// The batch of samples filled before this one, written at the next
    /// flush: the stack thread interns the new stacks it holds tickets of
    /// meanwhile, and neither thread waits for the other.
    held: Option<HeldSamples>,
}

/// A batch of samples whose `stack_id` holds tickets (from row
/// `tickets_from`) below `upto`.
struct HeldSamples {
    batch: RecordBatch,
    tickets_from: usize,
    upto: u32,
}

impl HeldSamples {
    /// Replaces the tickets of `stack_id` by the stacks' ids.
    fn settle(&mut self, ids: &[i64]) -> Result<()> {
        let from = self.tickets_from;
        let id = |t: i64| ids.get(t as usize).copied().unwrap_or(t);
        self.batch =
            crate::columns::replace_column(&schema::PERF_SAMPLE, &self.batch, "stack_id", |a| {
                let a = a.as_primitive::<Int64Type>();
                let mut v = a.values().to_vec();
                for t in v.iter_mut().skip(from) {
                    *t = id(*t);
                }
                Arc::new(Int64Array::new(v.into(), a.nulls().cloned()))
            })?;
        self.tickets_from = self.batch.num_rows();
        Ok(())
    }
}

impl PerfConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(PerfConverter {
            samples: SampleCols::new(),
            samples_out: Out::new(cap, &schema::PERF_SAMPLE)?,
            reads: Default::default(),
            reads_out: Out::new(cap, &schema::PERF_SAMPLE_READ)?,
            branches: Default::default(),
            branches_out: Out::new(cap, &schema::PERF_BRANCH)?,
            ustack: UserStackCols {
                sample_id: Default::default(),
                regs_abi: Default::default(),
                regs_mask: Default::default(),
                regs: list_u64(),
                stack_size: Default::default(),
                stack: Default::default(),
            },
            ustack_out: Out::new(cap, &schema::PERF_USER_STACK)?,
            stacks: StackTables::new(cap)?,
            syscalls: SyscallTable::new(cap)?,
            sys_pairs: SyscallPairs::default(),
            sys_names: Vec::new(),
            mappings: Default::default(),
            mappings_out: Out::new(cap, &schema::PERF_MAPPING)?,
            tasks: Default::default(),
            tasks_out: Out::new(cap, &schema::PERF_TASK_EVENT)?,
            lost: Default::default(),
            lost_out: Out::new(cap, &schema::PERF_LOST)?,
            switches: Default::default(),
            switches_out: Out::new(cap, &schema::PERF_SWITCH)?,
            sched: Default::default(),
            sched_out: Out::new(cap, &schema::PERF_SCHED_SWITCH)?,
            source_id: 0,
            event_base: 0,
            id_to_event: HashMap::default(),
            event_names: Vec::new(),
            power_domain: Vec::new(),
            power_reads: Vec::new(),
            position: crate::diag::Position::None,
            events: Vec::new(),
            metas: Vec::new(),
            next_sample: 0,
            next_mapping: 0,
            spaces: HashMap::default(),
            kernel_space: HashMap::default(),
            next_gen: 0,
            kgen: u64::MAX,
            raw_stacks: HashKeyMap::default(),
            raw_key: Vec::new(),
            event_keys: Vec::new(),
            unwinder: None,
            unwound: Vec::new(),
            comms: HashMap::default(),
            threads: HashMap::default(),
            chain: Vec::new(),
            resolved: Vec::new(),
            chain_user_from: None,
            lbr: Vec::new(),
            branch_history: Default::default(),
            last_thread: None,
            samples_written: 0,
            deferred: false,
            tickets_from: 0,
            held: None,
            utc_offset: None,
            utc_missed: 0,
            utc_missed_at: crate::diag::Position::None,
        })
    }

    /// Sets the current input's offset to UTC (from its clock data).
    pub fn set_utc_offset(&mut self, off: Option<i64>) {
        self.utc_offset = off;
        self.syscalls.set_utc_offset(self.source_id, off);
    }

    /// The current input's offset to UTC, as last set.
    pub fn utc_offset(&self) -> Option<i64> {
        self.utc_offset
    }

    /// A time of the current input on UTC, when its clock is placed.
    #[inline]
    fn utc(&mut self, t: Option<i64>) -> Option<i64> {
        let t = t?;
        match self.utc_offset {
            Some(off) => t.checked_add(off),
            None => {
                if self.utc_missed == 0 {
                    self.utc_missed_at = self.position;
                }
                self.utc_missed += 1;
                None
            }
        }
    }

    /// Starts a new input. Events of earlier inputs keep their ids.
    pub fn begin_source(&mut self, source_id: i32) {
        self.flush_last_thread();
        self.kgen = u64::MAX;
        self.source_id = source_id;
        self.utc_offset = None;
        self.utc_missed = 0;
        self.utc_missed_at = crate::diag::Position::None;
        self.event_base = self.events.len() as i32;
        self.id_to_event.clear();
    }

    /// Makes the input's events known (call again when pipe-mode attributes
    /// arrive; new events are appended).
    pub fn sync_events(&mut self, events: &[EventDesc]) -> Result<()> {
        let have = self
            .events
            .iter()
            .filter(|(s, _)| *s == self.source_id)
            .count();
        for (i, e) in events.iter().enumerate() {
            let gid = self.event_base + i as i32;
            if i >= have {
                self.events.push((self.source_id, e.clone()));
                self.event_names.push(e.name().into());
                self.power_domain.push(power_domain(&e.name()));
                self.event_keys.push(self.samples.event.intern(&e.name()));
                self.sys_names.push(syscall_name(&e.name()));
            } else {
                // Names can arrive late (EVENT_UPDATE, HEADER_FEATURE).
                let idx = gid as usize;
                if self.events[idx].1.name != e.name {
                    self.events[idx].1 = e.clone();
                    self.event_names[idx] = e.name().into();
                    self.power_domain[idx] = power_domain(&e.name());
                    self.event_keys[idx] = self.samples.event.intern(&e.name());
                    self.sys_names[idx] = syscall_name(&e.name());
                }
            }
            for &id in &e.ids {
                self.id_to_event.insert(id, gid);
            }
        }
        // Samples whose stacks need their ids at once (branch stacks
        // replay them, system calls carry their user part) keep interning
        // on this thread; the others queue them for the stack thread.
        let deferred = self
            .events
            .iter()
            .all(|(_, e)| e.attr.sample_type & super::header::sample::BRANCH_STACK == 0)
            && self.sys_names.iter().all(Option::is_none);
        if deferred != self.deferred {
            self.clear_raw_stacks()?;
            self.deferred = deferred;
            // The rows so far hold ids: tickets start after them.
            self.tickets_from = self.samples.stack_id.len();
        }
        Ok(())
    }

    /// Empties the raw-callchain cache, the tickets it holds settled
    /// first.
    fn clear_raw_stacks(&mut self) -> Result<()> {
        self.settle_stack_ids()?;
        self.raw_stacks.clear();
        self.stacks.forget_tickets();
        Ok(())
    }

    /// The stack ids of the sample rows that hold tickets of queued stacks
    /// ([`StackTables::queue`]), once the stacks are interned.
    fn settle_stack_ids(&mut self) -> Result<()> {
        if !self.deferred {
            return Ok(());
        }
        let ids = self.stacks.settle()?;
        // Every ticket given has its id (`settle` checks).
        let id = |t: i64| ids.get(t as usize).copied().unwrap_or(t);
        self.samples.stack_id.map_from(self.tickets_from, id);
        self.tickets_from = self.samples.stack_id.len();
        if let Some(h) = &mut self.held {
            h.settle(ids)?;
        }
        Ok(())
    }

    /// Writes the batch of samples held at the last flush, and holds the
    /// one filled since (`last`: writes it as well).
    fn write_samples(&mut self, last: bool) -> Result<()> {
        if let Some(mut h) = self.held.take() {
            // (Its tickets are mapped already when the stacks were settled
            // since, and then forgotten.)
            if h.tickets_from < h.batch.num_rows() {
                h.settle(self.stacks.settled_upto(h.upto)?)?;
            }
            self.samples_out.w.write(&h.batch)?;
        }
        if self.samples_out.rows == 0 {
            return Ok(());
        }
        if last || !self.deferred {
            self.settle_stack_ids()?;
            self.samples_out.w.write_rows(&mut self.samples)?;
        } else {
            self.held = Some(HeldSamples {
                batch: crate::columns::batch(&mut self.samples)?,
                tickets_from: self.tickets_from,
                upto: self.stacks.tickets_given(),
            });
            self.stacks.send_queued()?;
        }
        self.samples_out.rows = 0;
        self.tickets_from = 0;
        Ok(())
    }

    pub fn end_source(&mut self, meta: &Metadata) {
        self.sys_pairs
            .end_source(&mut self.syscalls, self.source_id);
        self.metas.push((self.source_id, meta.clone()));
    }

    /// Handles one record.
    pub fn handle(
        &mut self,
        event: usize,
        record: &Record<'_>,
        sample_id: &SampleId,
    ) -> Result<()> {
        let gid = self.event_base + event as i32;
        if matches!(
            record,
            Record::Comm(_) | Record::Fork(_) | Record::Exit(_) | Record::Mmap(_)
        ) {
            self.flush_last_thread();
        }
        match record {
            Record::Sample(s) => self.handle_sample(event, s, None)?,
            Record::Mmap(m) => self.handle_mmap(m, &sample_id)?,
            Record::Comm(c) => {
                let name: Arc<str> = String::from_utf8_lossy(c.name).into();
                let t = sample_id.time.map(|t| t as i64);
                let key = self.samples.comm.intern(&name);
                self.comms
                    .insert((self.source_id, c.tid), (name.clone(), key));
                let th = self.thread(c.pid, c.tid);
                th.comm = Some(name.clone());
                if c.exec {
                    // The old mappings are kept until the new image's mmaps
                    // overlay them, as perf does: samples taken inside the
                    // execve syscall still carry the old image's user stack.
                    th.exec = t;
                }
                self.task_row(
                    t,
                    if c.exec { "exec" } else { "comm" },
                    c.pid,
                    c.tid,
                    None,
                    None,
                    Some(&name),
                );
            }
            Record::Fork(f) => {
                let t = Some(f.time as i64);
                let parent_comm = self
                    .comms
                    .get(&(self.source_id, f.ptid))
                    .or_else(|| self.comms.get(&(self.source_id, f.ppid)))
                    .cloned();
                if let Some(c) = parent_comm.clone() {
                    self.comms.insert((self.source_id, f.tid), c);
                }
                if f.pid != f.ppid {
                    let parent = self.spaces.get(&(self.source_id, f.ppid)).cloned();
                    if let Some(mut space) = parent {
                        self.next_gen += 1;
                        space.gen = self.next_gen;
                        self.spaces.insert((self.source_id, f.pid), space);
                    }
                }
                let th = self.thread(f.pid, f.tid);
                th.ppid = Some(f.ppid);
                th.start = t;
                if th.comm.is_none() {
                    th.comm = parent_comm.map(|c| c.0);
                }
                self.task_row(t, "fork", f.pid, f.tid, Some(f.ppid), Some(f.ptid), None);
            }
            Record::Exit(f) => {
                let t = Some(f.time as i64);
                self.thread(f.pid, f.tid).end = t;
                self.sys_pairs
                    .thread_exit(&mut self.syscalls, self.source_id, f.tid);
                self.branch_history.forget(f.pid, f.tid);
                self.task_row(t, "exit", f.pid, f.tid, Some(f.ppid), Some(f.ptid), None);
            }
            Record::Lost { id, count } => {
                let ev = self.id_to_event.get(id).copied().or(Some(gid));
                self.lost_row(&sample_id, "lost", ev, *count)?;
            }
            Record::LostSamples { count } => {
                self.lost_row(&sample_id, "lost_samples", Some(gid), *count)?;
            }
            Record::Switch {
                out,
                preempt,
                other,
            } => {
                let t = sample_id.time.map(|t| t as i64);
                let utc = self.utc(t);
                let c = &mut self.switches;
                c.source_id.append_value(self.source_id);
                c.time_ns.append_option(t);
                c.time_utc.push(utc);
                c.cpu.append_option(sample_id.cpu);
                c.pid.append_option(sample_id.pid);
                c.tid.append_option(sample_id.tid);
                c.direction.append_value(if *out { "out" } else { "in" });
                c.preempt.append_value(*out && *preempt);
                c.other_pid.append_option(other.map(|o| o.0));
                c.other_tid.append_option(other.map(|o| o.1));
                self.switches_out.rows += 1;
            }
            Record::Other { .. } => {}
        }
        Ok(())
    }

    /// Adds the samples counted for the cached thread to its summary and
    /// forgets the cache (before thread state changes).
    fn flush_last_thread(&mut self) {
        if let Some(l) = self.last_thread.take() {
            if let (Some(p), Some(t)) = l.key {
                self.thread(p, t).samples += l.samples;
            }
        }
    }

    fn thread(&mut self, pid: i32, tid: i32) -> &mut ThreadInfo {
        self.threads.entry((self.source_id, pid, tid)).or_default()
    }

    #[allow(clippy::too_many_arguments)]
    fn task_row(
        &mut self,
        t: Option<i64>,
        kind: &str,
        pid: i32,
        tid: i32,
        ppid: Option<i32>,
        ptid: Option<i32>,
        comm: Option<&str>,
    ) {
        let utc = self.utc(t);
        let c = &mut self.tasks;
        c.source_id.append_value(self.source_id);
        c.time_ns.append_option(t);
        c.time_utc.push(utc);
        c.kind.append_value(kind);
        c.pid.append_value(pid);
        c.tid.append_value(tid);
        c.ppid.append_option(ppid);
        c.ptid.append_option(ptid);
        c.comm.append_option(comm);
        self.tasks_out.rows += 1;
    }

    fn lost_row(&mut self, sid: &SampleId, kind: &str, ev: Option<i32>, count: u64) -> Result<()> {
        let t = sid.time.map(|t| t as i64);
        let utc = self.utc(t);
        let c = &mut self.lost;
        c.source_id.append_value(self.source_id);
        c.time_ns.append_option(t);
        c.time_utc.push(utc);
        c.kind.append_value(kind);
        c.event_id.append_option(ev);
        c.count.append_value(count);
        c.pid.append_option(sid.pid);
        c.tid.append_option(sid.tid);
        c.cpu.append_option(sid.cpu);
        self.lost_out.rows += 1;
        Ok(())
    }

    /// Unwinds `--call-graph dwarf` samples with `u` from now on.
    pub fn set_unwinder(&mut self, u: Box<dyn crate::unwind::StackUnwinder>) {
        self.unwinder = Some(u);
    }

    /// What the input's header records before its first record (file
    /// mode): its modules' build-ids and the kernel release, for the
    /// stacks' module sink.
    pub fn header_known(&mut self, meta: &Metadata) {
        let release = meta
            .pairs
            .iter()
            .find(|(k, _)| k == "os_release")
            .map(|(_, v)| v.as_str());
        self.stacks
            .recorded(summary::recorded_build_ids(meta), release);
    }

    /// Unwinds the sample's user stack into `self.unwound` (empty when it
    /// has none or no unwinder is set).
    fn unwind_user(&mut self, s: &Sample<'_>, ugen: u64) {
        self.unwound.clear();
        let (Some(regs), Some(stack), Some(pid)) = (&s.user_regs, &s.user_stack, s.pid) else {
            return;
        };
        if self.unwinder.is_none() || stack.data.is_empty() {
            return;
        }
        let Some(r) = crate::unwind::x86_64_regs(regs.abi, regs.mask, regs.regs.iter()) else {
            return;
        };
        let mut u = self.unwinder.take().unwrap();
        let mut out = std::mem::take(&mut self.unwound);
        {
            let this = &*self;
            let mut maps = || this.user_mappings(pid);
            u.unwind((pid, ugen), &mut maps, r, stack.data, &mut out);
        }
        self.unwound = out;
        self.unwinder = Some(u);
    }

    /// Handles a decoded sample of the input's event `event`.
    /// `payload`: the decoded payload of a tracepoint sample (syscall,
    /// sched_switch).
    pub fn handle_sample(
        &mut self,
        event: usize,
        s: &Sample<'_>,
        payload: Option<Payload>,
    ) -> Result<()> {
        let (sys, sched) = match payload {
            Some(Payload::Syscall(p)) => (Some(p), None),
            Some(Payload::SchedSwitch(p)) => (None, Some(p)),
            None => (None, None),
        };
        let gid = self.event_base + event as i32;
        let sample_id = self.next_sample;
        self.next_sample += 1;
        let ev = &self.events[gid as usize].1;
        let attr_period = (!ev.attr.freq() && ev.attr.sample_period_or_freq > 0)
            .then_some(ev.attr.sample_period_or_freq);
        let ev_branch_filter = ev.attr.branch_sample_type;
        let mode = s.cpu_mode();

        // Consecutive samples mostly come from the same thread: its command
        // and address-space generation are cached until a task or mmap
        // record changes them.
        let tkey = (s.pid, s.tid);
        let (comm, ugen) = match &mut self.last_thread {
            Some(l) if l.key == tkey => {
                l.samples += 1;
                (l.comm, l.ugen)
            }
            _ => {
                self.flush_last_thread();
                let comm = s
                    .tid
                    .and_then(|t| self.comms.get(&(self.source_id, t)))
                    .or_else(|| s.pid.and_then(|p| self.comms.get(&(self.source_id, p))))
                    .map(|c| c.1);
                let ugen = s
                    .pid
                    .and_then(|p| self.spaces.get(&(self.source_id, p)))
                    .map_or(u64::MAX, |sp| sp.gen);
                self.last_thread = Some(LastThread {
                    key: tkey,
                    comm,
                    ugen,
                    samples: 1,
                });
                (comm, ugen)
            }
        };

        self.unwind_user(s, ugen);
        // The raw callchain bytes (and unwound user frames) in the address
        // spaces' current generations: a stack seen before resolves to the
        // same frames.
        let mut key = std::mem::take(&mut self.raw_key);
        key.clear();
        for v in [ugen, self.kgen, mode as u64, s.pid.unwrap_or(-1) as u64] {
            key.extend_from_slice(&v.to_ne_bytes());
        }
        match &s.callchain {
            Some(cc) if !cc.is_empty() => key.extend_from_slice(cc.as_bytes()),
            _ => key.extend_from_slice(&s.ip.unwrap_or(0).to_ne_bytes()),
        }
        let lbr_stack = (ev_branch_filter & BRANCH_CALL_STACK != 0)
            .then_some(s.branch.as_ref())
            .flatten();
        if let Some(b) = lbr_stack {
            key.extend_from_slice(b"lbr");
            for e in b.iter() {
                key.extend_from_slice(&e.from.to_ne_bytes());
            }
        }
        if !self.unwound.is_empty() {
            key.extend_from_slice(b"unwound");
            for v in &self.unwound {
                key.extend_from_slice(&v.to_ne_bytes());
            }
        }
        // System calls get the user part of the stack as well (where the
        // program made the call, as strace -k shows it).
        let want_user = sys.is_some();
        if want_user {
            key.extend_from_slice(b"user");
        }
        let hash = HashKeyMap::<(i64, i64)>::key_hash(&key);
        self.raw_key = key;
        let (stack_id, user_stack_id) = match self.raw_stacks.get(hash) {
            Some(&(id, user)) => (Some(id), (user >= 0).then_some(user)),
            None => {
                // Only a cache: bounded so that recordings of many
                // short-lived processes do not grow it without end.
                if self.raw_stacks.len() >= limits().1 {
                    self.clear_raw_stacks()?;
                }
                // Deferred: the id is a ticket until the stack thread has
                // interned the stack (`settle_stack_ids`).
                let (id, user) = if self.deferred {
                    let user_from = self.build_chain(s, mode, lbr_stack.is_some());
                    self.chain_user_from = user_from;
                    match self.resolved.is_empty() {
                        true => (None, None),
                        false => (Some(self.stacks.queue(&self.resolved)? as i64), None),
                    }
                } else {
                    self.resolve_stack(s, mode, want_user, lbr_stack.is_some())
                };
                if let Some(id) = id {
                    self.raw_stacks.insert_new(hash, (id, user.unwrap_or(-1)));
                }
                (id, user)
            }
        };
        if let (Some(p), Some(name)) = (
            sys,
            self.sys_names.get(gid as usize).and_then(|n| n.as_ref()),
        ) {
            let h = Half {
                name,
                tid: s.tid,
                tgid: s.pid,
                time: s.time,
                stack_id: user_stack_id,
                sample_id,
            };
            match p {
                SyscallPayload::Enter { args, nargs, .. } => self.sys_pairs.enter(
                    &mut self.syscalls,
                    self.source_id,
                    h,
                    &args[..nargs as usize],
                ),
                SyscallPayload::Exit { ret, .. } => {
                    self.sys_pairs
                        .exit(&mut self.syscalls, self.source_id, h, ret)
                }
            }
        }

        if let Some(sw) = sched {
            let state = sw.state_text();
            let c = &mut self.sched;
            c.sample_id.append_value(sample_id);
            c.prev_comm.append_value(&sw.prev_comm);
            c.prev_tid.append_value(sw.prev_tid);
            c.prev_prio.append_value(sw.prev_prio);
            c.prev_state.append_value(sw.prev_state);
            c.prev_state_text.append_value(state);
            c.next_comm.append_value(&sw.next_comm);
            c.next_tid.append_value(sw.next_tid);
            c.next_prio.append_value(sw.next_prio);
            self.sched_out.rows += 1;
        }

        self.branch_frames(s, mode, ev_branch_filter);

        let t = s.time.map(|t| t as i64);
        let utc = self.utc(t);
        let c = &mut self.samples;
        c.sample_id.push(sample_id);
        c.source_id.push(self.source_id);
        c.time_ns.push(t);
        c.time_utc.push(utc);
        c.pid.push(s.pid);
        c.tid.push(s.tid);
        c.cpu.push(s.cpu);
        c.comm.push(comm);
        c.event_id.push(gid);
        c.event.push(Some(self.event_keys[gid as usize]));
        c.period.push(s.period.or(attr_period).map(|p| p as i64));
        c.ip.push(s.ip);
        c.cpu_mode.push(Some(mode as i32));
        c.stack_id.push(stack_id);
        c.addr.push(s.addr);
        c.weight.push(s.weight.map(|w| w.weight));
        c.weight_ins_lat.push(s.weight.and_then(|w| w.ins_lat));
        c.weight_var3.push(s.weight.and_then(|w| w.var3));
        c.data_src.push(s.data_src);
        c.transaction.push(s.transaction);
        c.phys_addr.push(s.phys_addr);
        c.cgroup.push(s.cgroup);
        c.data_page_size.push(s.data_page_size);
        c.code_page_size.push(s.code_page_size);
        c.raw.push(s.raw);
        c.n_read
            .push(s.read.as_ref().map_or(0, |r| r.values.len() as i32));
        c.n_branch
            .push(s.branch.as_ref().map_or(0, |b| b.len() as i32));
        c.has_user_stack
            .push(s.user_regs.is_some() || s.user_stack.is_some());
        self.samples_out.rows += 1;
        self.samples_written += 1;
        self.child_rows(sample_id, gid, s)
    }

    /// Resolves a sample's callchain (or ip) to frames and returns the id of
    /// the deduplicated stack, leaf first; context markers become the
    /// frames' modes.
    /// With `want_user`, also the id of the stack of its user frames only.
    ///
    /// `lbr`: the event records the call stack in its branch stack
    /// (`--call-graph lbr`, PERF_SAMPLE_BRANCH_CALL_STACK): the user part
    /// is the interrupted user address (the sample's own, for a sample in
    /// user mode), then the call instruction of each entry, innermost
    /// first, as perf builds it (tools/perf/util/machine.c,
    /// `resolve_lbr_callchain_sample`); the callchain's other user
    /// addresses (a frame-pointer walk of code without frame pointers) are
    /// not frames. A sample in user mode whose callchain starts in the
    /// kernel (a precise event's ip, taken before the interrupt that found
    /// the CPU in the kernel) is the user stack at its ip alone: perf
    /// report counts it for the ip's function, not for the kernel address.
    fn resolve_stack(
        &mut self,
        s: &Sample<'_>,
        mode: CpuMode,
        want_user: bool,
        lbr: bool,
    ) -> (Option<i64>, Option<i64>) {
        let user_from = self.build_chain(s, mode, lbr);
        let chain = std::mem::take(&mut self.resolved);
        let stack_id = (!chain.is_empty()).then(|| self.stacks.stack_resolved(&chain));
        self.chain_user_from = user_from;
        let user_id = match user_from {
            Some(0) => stack_id,
            Some(i) if want_user && i < chain.len() => {
                Some(self.stacks.stack_resolved(&chain[i..]))
            }
            _ => None,
        };
        self.resolved = chain;
        (stack_id, user_id)
    }

    /// The sample's frames, resolved, leaf first, into `self.resolved`
    /// ([`PerfConverter::resolve_stack`]); the index of the first user
    /// frame.
    fn build_chain(&mut self, s: &Sample<'_>, mode: CpuMode, lbr: bool) -> Option<usize> {
        let mut chain = std::mem::take(&mut self.resolved);
        chain.clear();
        // Index of the first user frame: the user context follows the
        // kernel's in a callchain, and unwound frames come last.
        let mut user_from: Option<usize> = None;
        if let Some(cc) = &s.callchain {
            let mut cur = mode;
            // The first address of each context is where that context was
            // interrupted (the sample ip, the user ip at kernel entry); the
            // rest are return addresses.
            let mut first = true;
            let unwound = !self.unwound.is_empty();
            let user_sample = lbr && mode == CpuMode::User;
            for v in cc.iter() {
                if v >= super::records::context::MAX {
                    if let Some(m) = CpuMode::from_context(v) {
                        cur = m;
                        first = true;
                    }
                    continue;
                }
                // With unwound user frames, the callchain's own user part
                // (at most the sampled ip) is replaced by them; with an LBR
                // call stack, all but its first address.
                if (unwound || lbr && !first) && cur == CpuMode::User {
                    continue;
                }
                if user_sample && cur != CpuMode::User {
                    continue;
                }
                if cur == CpuMode::User && user_from.is_none() {
                    user_from = Some(chain.len());
                }
                let v = match s.ip {
                    Some(ip) if user_sample && first => ip,
                    _ => v,
                };
                chain.push(self.resolve(s.pid, v, cur, !first));
                first = false;
            }
        }

        if !self.unwound.is_empty() {
            let frames = std::mem::take(&mut self.unwound);
            user_from.get_or_insert(chain.len());
            for (i, &a) in frames.iter().enumerate() {
                chain.push(self.resolve(s.pid, a, CpuMode::User, i > 0));
            }
            self.unwound = frames;
        }
        if chain.is_empty() {
            if let Some(ip) = s.ip {
                if mode == CpuMode::User {
                    user_from = Some(0);
                }
                chain.push(self.resolve(s.pid, ip, mode, false));
            }
        }
        if lbr && user_from.is_some() {
            if let Some(b) = &s.branch {
                // Call instructions, not return addresses.
                for e in b.iter() {
                    chain.push(self.resolve(s.pid, e.from, CpuMode::User, false));
                }
            }
        }
        self.resolved = chain;
        user_from
    }

    /// Rows of the child tables (read values, branch entries, user stack).
    fn child_rows(&mut self, sample_id: i64, gid: i32, s: &Sample<'_>) -> Result<()> {
        if let Some(r) = &s.read {
            for (i, (value, kid, lost)) in r.values.iter().enumerate() {
                // Without PERF_FORMAT_ID the members are the group in order.
                let ev_id = match kid {
                    Some(k) => self.id_to_event.get(k).copied(),
                    None if r.values.len() == 1 => Some(gid),
                    None => None,
                };
                if let (Some(e), Some(t)) = (ev_id, s.time) {
                    if self.power_domain[e as usize].is_some() {
                        self.power_reads
                            .push((t, e, gid, *value, s.cpu, self.position));
                    }
                }
                let c = &mut self.reads;
                c.sample_id.append_value(sample_id);
                c.idx.append_value(i as i32);
                c.event_id.append_option(ev_id);
                c.event
                    .append_option(ev_id.map(|e| self.event_names[e as usize].as_ref()));
                c.value.append_value(*value);
                c.counter_kernel_id.append_option(*kid);
                c.lost.append_option(*lost);
                c.time_enabled_ns.append_option(r.time_enabled);
                c.time_running_ns.append_option(r.time_running);
                self.reads_out.rows += 1;
            }
        }
        if let Some(b) = &s.branch {
            let filter = self.events[gid as usize].1.attr.branch_sample_type;
            let new = b.len()
                - self.branch_history.repeated(
                    s.pid.unwrap_or(-1),
                    s.tid.unwrap_or(-1),
                    s.time,
                    filter,
                    b.iter(),
                );
            for (i, e) in b.iter().enumerate() {
                let (from_frame, to_frame, stack, transfer) = self.lbr[i];
                let c = &mut self.branches;
                c.repeated.append_value(i >= new);
                c.transfer.append_value(transfer.as_str());
                c.from_frame_id.append_value(from_frame);
                c.to_frame_id.append_value(to_frame);
                c.stack_id.append_value(stack);
                c.sample_id.append_value(sample_id);
                c.idx.append_value(i as i32);
                c.from_ip.append_value(e.from);
                c.to_ip.append_value(e.to);
                c.mispred.append_value(e.mispred());
                c.predicted.append_value(e.predicted());
                c.in_tx.append_value(e.in_tx());
                c.abort.append_value(e.abort());
                c.cycles.append_value(e.cycles());
                c.r#type.append_value(e.br_type());
                c.spec.append_value(e.spec());
                c.new_type.append_value(e.new_type());
                c.r#priv.append_value(e.privilege());
                c.counters.append_option(e.counters);
                c.hw_idx.append_option(b.hw_idx);
                self.branches_out.rows += 1;
            }
        }
        if s.user_regs.is_some() || s.user_stack.is_some() {
            let c = &mut self.ustack;
            c.sample_id.append_value(sample_id);
            let (abi, mask) = s.user_regs.as_ref().map_or((0, 0), |r| (r.abi, r.mask));
            c.regs_abi.append_value(abi);
            c.regs_mask.append_value(mask);
            if let Some(r) = &s.user_regs {
                c.regs
                    .values()
                    .append_slice(&r.regs.iter().collect::<Vec<_>>());
            }
            c.regs.append(true);
            let st = s.user_stack.as_ref();
            c.stack_size.append_value(st.map_or(0, |s| s.size));
            c.stack.append_value(st.map_or(&[][..], |s| s.data));
            self.ustack_out.rows += 1;
        }
        if self.samples_out.rows >= limits().0 || self.ustack.stack.values_slice().len() >= 64 << 20
        {
            self.flush()?;
        }
        Ok(())
    }

    fn module_id(&mut self, m: &Mmap<'_>, path: &str, build_id: Option<String>) -> i64 {
        let kernel = m.cpu_mode().is_kernel();
        const MAP_HUGETLB: u32 = 0x40000;
        let hugetlb = m.flags.is_some_and(|f| f & MAP_HUGETLB != 0);
        let name = module_name(path, kernel, m.pid, hugetlb);
        let is_file = !kernel && !is_perf_map_name(&name) && is_file_path(path);
        self.stacks.module(name, build_id, kernel, is_file)
    }

    fn handle_mmap(&mut self, m: &Mmap<'_>, sid: &SampleId) -> Result<()> {
        let path = String::from_utf8_lossy(m.path).into_owned();
        let kernel = m.cpu_mode().is_kernel();
        let build_id = m.build_id.map(hex);
        let module = self.module_id(m, &path, build_id.clone());
        let mid = self.next_mapping;
        self.next_mapping += 1;
        let t = sid.time.map(|t| t as i64);
        let utc = self.utc(t);
        let c = &mut self.mappings;
        c.mapping_id.append_value(mid);
        c.source_id.append_value(self.source_id);
        c.time_ns.append_option(t);
        c.time_utc.push(utc);
        c.pid.append_value(m.pid);
        c.tid.append_value(m.tid);
        c.start.append_value(m.start);
        c.length.append_value(m.len);
        c.pgoff.append_value(m.pgoff);
        c.path.append_value(&path);
        c.module_id.append_value(module);
        c.build_id.append_option(build_id.as_deref());
        c.prot.append_option(m.prot);
        c.flags.append_option(m.flags);
        c.dev_major.append_option(m.dev.map(|d| d.0));
        c.dev_minor.append_option(m.dev.map(|d| d.1));
        c.inode.append_option(m.dev.map(|d| d.2));
        c.executable.append_value(m.executable());
        c.cpu_mode.append_value(m.cpu_mode().as_str());
        self.mappings_out.rows += 1;
        if !m.executable() || m.len == 0 {
            return Ok(());
        }
        let entry = MapEntry {
            end: m.start.saturating_add(m.len),
            pgoff: m.pgoff,
            module,
            is_file: self.stacks.modules[module as usize].is_file,
        };
        self.next_gen += 1;
        let space = if kernel {
            self.kernel_space.entry(self.source_id).or_default()
        } else {
            self.spaces.entry((self.source_id, m.pid)).or_default()
        };
        insert_mapping(&mut space.map, m.start, entry);
        space.gen = self.next_gen;
        if kernel {
            self.kgen = self.next_gen;
        }
        Ok(())
    }

    /// The executable mappings of process `pid`, for the unwinder.
    fn user_mappings(&self, pid: i32) -> Vec<crate::unwind::UserMapping> {
        let Some(space) = self.spaces.get(&(self.source_id, pid)) else {
            return Vec::new();
        };
        space
            .map
            .iter()
            .filter(|(_, m)| m.is_file && m.module >= 0)
            .filter_map(|(&start, m)| {
                let info = self.stacks.modules.get(m.module as usize)?;
                Some(crate::unwind::UserMapping {
                    start,
                    end: m.end,
                    pgoff: m.pgoff,
                    path: info.path.clone(),
                    build_id: info.build_id.clone(),
                })
            })
            .collect()
    }

    fn frame(&mut self, pid: Option<i32>, ip: u64, mode: CpuMode, is_return: bool) -> i64 {
        let r = self.resolve(pid, ip, mode, is_return);
        self.stacks.frame_of(&r)
    }

    /// The module and address of `ip` in `pid`'s address space (or the
    /// kernel's) now.
    fn resolve(&self, pid: Option<i32>, ip: u64, mode: CpuMode, is_return: bool) -> Resolved {
        let space = if mode.is_kernel() {
            self.kernel_space.get(&self.source_id)
        } else {
            pid.and_then(|p| self.spaces.get(&(self.source_id, p)))
        };
        let (module, rel_pc) = match space.and_then(|s| lookup_with_start(&s.map, ip)) {
            Some((start, m)) if m.is_file => (m.module, (ip - start).wrapping_add(m.pgoff)),
            Some((_, m)) => (m.module, ip),
            None => (-1, ip),
        };
        Resolved {
            module,
            rel_pc,
            context: mode.as_str(),
            is_return,
            pid,
            ip,
        }
    }

    /// The frames of the sample's branch entries and the call stack at
    /// each entry's source (`self.lbr`, newest entry first). Walking back
    /// in time from the sample's stack: before a call the callee was not
    /// on the stack and the caller was at the call site; before a return
    /// the function returned from was on top of the caller, which was at
    /// the return address; any other branch only moves the leaf.
    fn branch_frames(&mut self, s: &Sample<'_>, mode: CpuMode, filter: u64) {
        self.lbr.clear();
        let Some(b) = &s.branch else { return };
        if b.is_empty() {
            return;
        }
        self.resolve_stack(s, mode, false, filter & BRANCH_CALL_STACK != 0);
        let user_from = self.chain_user_from;
        // The stack's frame ids (interned with it).
        let mut chain = std::mem::take(&mut self.chain);
        chain.clear();
        for r in &self.resolved {
            chain.push(self.stacks.frame_of(r));
        }
        let pid = s.pid;
        let first_user = b
            .iter()
            .next()
            .is_some_and(|e| branch_mode(e.from, 0) == CpuMode::User);
        // User-only branch stacks (`-j ...,u`) continue the user part of a
        // sample taken in the kernel.
        let mut cur: Vec<i64> = match (first_user, user_from) {
            (true, Some(i)) => chain[i..].to_vec(),
            (true, None) if mode.is_kernel() => Vec::new(),
            _ => chain.clone(),
        };
        // Leaf last: pushes and pops at the end.
        cur.reverse();
        for e in b.iter() {
            let from = self.frame(pid, e.from, branch_mode(e.from, 0), false);
            let tmode = branch_mode(e.to, e.privilege());
            let to = self.frame(pid, e.to, tmode, false);
            let transfer = Transfer::of(e.br_type(), filter);
            match transfer {
                Transfer::Call => {
                    cur.pop();
                    match cur.last_mut() {
                        Some(top) => *top = from,
                        None => cur.push(from),
                    }
                }
                Transfer::Return => {
                    let ret = self.frame(pid, e.to, tmode, true);
                    match cur.last_mut() {
                        Some(top) => *top = ret,
                        None => cur.push(ret),
                    }
                    cur.push(from);
                }
                Transfer::Other => match cur.last_mut() {
                    Some(top) => *top = from,
                    None => cur.push(from),
                },
            }
            let leaf_first: Vec<i64> = cur.iter().rev().copied().collect();
            let stack = self.stacks.stack(&leaf_first);
            self.lbr.push((from, to, stack, transfer));
        }
        chain.clear();
        self.chain = chain;
    }

    /// The power event values read at this input's samples as energy
    /// readings in time order ([`power::readings`]).
    pub fn take_power_readings(&mut self) -> Vec<(crate::energy::Reading, crate::diag::Position)> {
        let topo: &[super::header::CpuTopology] = match self.metas.last() {
            Some((s, m)) if *s == self.source_id => &m.cpus,
            _ => &[],
        };
        power::readings(
            std::mem::take(&mut self.power_reads),
            topo,
            &self.power_domain,
            &self.event_names,
        )
    }

    /// Writes the rows collected so far (but the last batch of samples,
    /// held until the next flush: see [`PerfConverter::write_samples`]).
    pub fn flush(&mut self) -> Result<()> {
        self.write_out(false)
    }

    fn write_out(&mut self, last: bool) -> Result<()> {
        self.write_samples(last)?;
        if self.reads_out.rows > 0 {
            self.reads_out.w.write_rows(&mut self.reads)?;
            self.reads_out.rows = 0;
        }
        if self.branches_out.rows > 0 {
            self.branches_out.w.write_rows(&mut self.branches)?;
            self.branches_out.rows = 0;
        }
        if self.ustack_out.rows > 0 {
            self.ustack_out.w.write_rows(&mut self.ustack)?;
            self.ustack_out.rows = 0;
        }
        self.stacks.flush()?;
        self.syscalls.flush()?;
        if self.mappings_out.rows > 0 {
            self.mappings_out.w.write_rows(&mut self.mappings)?;
            self.mappings_out.rows = 0;
        }
        if self.tasks_out.rows > 0 {
            self.tasks_out.w.write_rows(&mut self.tasks)?;
            self.tasks_out.rows = 0;
        }
        if self.lost_out.rows > 0 {
            self.lost_out.w.write_rows(&mut self.lost)?;
            self.lost_out.rows = 0;
        }
        if self.switches_out.rows > 0 {
            self.switches_out.w.write_rows(&mut self.switches)?;
            self.switches_out.rows = 0;
        }
        if self.sched_out.rows > 0 {
            self.sched_out.w.write_rows(&mut self.sched)?;
            self.sched_out.rows = 0;
        }
        Ok(())
    }

    /// Flushes the streamed tables and writes the summary tables (events,
    /// modules, threads, build-ids, CPUs; metadata pairs are returned for
    /// `capture_meta`).
    pub fn finish(mut self, cap: &mut CaptureWriter) -> Result<Vec<(i32, String, String)>> {
        self.flush_last_thread();
        self.write_out(true)?;
        self.syscalls.finish(cap)?;
        for out in [
            self.samples_out,
            self.reads_out,
            self.branches_out,
            self.ustack_out,
            self.mappings_out,
            self.tasks_out,
            self.lost_out,
            self.switches_out,
            self.sched_out,
        ] {
            cap.close_table(out.w)?;
        }

        summary::write_events(cap, &self.events, &self.event_names)?;
        let bid_by_path = summary::write_build_ids(cap, &self.metas)?;
        self.stacks.finish(cap, |p| bid_by_path.get(p).cloned())?;
        summary::write_cpus(cap, &self.metas)?;
        summary::write_tracepoint_fields(cap, &self.metas)?;
        summary::write_threads(cap, &self.threads)?;
        Ok(summary::meta_pairs(&self.metas))
    }
}
