//! The `module`, `frame` and `stack` tables, shared by every converter:
//! perf samples and strace `-k` stacks intern their modules, frames and
//! call stacks here, so one capture has one set of ids and symbolization
//! covers both.

use std::hash::BuildHasher;

use rustc_hash::FxHashMap as HashMap;

use arrow::array::{BooleanBuilder, Int64Builder, StringBuilder, StringDictionaryBuilder};
use arrow::datatypes::{Int32Type, Int64Type, UInt64Type};

use crate::columns::{Bools, OptPrim, Prim, TableColumns};
use crate::error::{Error, Result};
use crate::intern::IdTable;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

/// A module as the converters know it.
pub struct ModuleInfo {
    pub path: String,
    pub build_id: Option<String>,
    pub is_kernel: bool,
    /// Frames of the module have file offsets (rather than absolute
    /// addresses) as `rel_pc`.
    pub is_file: bool,
}

/// A module whose first frame was just met ([`ModuleSink`]).
pub struct UsedModule<'a> {
    pub path: &'a str,
    /// The module's build-id: its mapping's, else the one its input's
    /// header records for its path.
    pub build_id: Option<&'a str>,
    pub is_kernel: bool,
    pub is_file: bool,
    /// The kernel release the first input's header records.
    pub os_release: Option<&'a str>,
}

/// Told of each module of a capture when its first frame is met, while
/// the samples are still being read: enrichment starts learning the
/// module's symbols then, on a thread of its own, instead of after the
/// last sample. A hint: nothing it is told changes a table.
pub trait ModuleSink: Send {
    fn used(&mut self, m: &UsedModule<'_>);
}

table_columns! {
    #[derive(Default)]
    struct StackCols for schema::STACK {
        stack_id: Prim<Int64Type>,
        depth: Prim<Int32Type>,
        frame_id: Prim<Int64Type>,
    }
}

table_columns! {
    #[derive(Default)]
    struct FrameCols for schema::FRAME {
        frame_id: Prim<Int64Type>,
        module_id: OptPrim<Int64Type>,
        rel_pc: Prim<UInt64Type>,
        context: StringDictionaryBuilder<Int32Type>,
        is_return: Bools,
        example_pid: OptPrim<Int32Type>,
        example_ip: OptPrim<UInt64Type>,
    }
}

table_columns! {
    #[derive(Default)]
    struct ModuleCols for schema::MODULE {
        module_id: Int64Builder,
        path: StringBuilder,
        build_id: StringBuilder,
        is_kernel: BooleanBuilder,
        is_file: BooleanBuilder,
    }
}

pub struct StackTables {
    /// The frame and stack tables; `None` while [`StackWorker`] has them.
    interner: Option<Box<Interner>>,
    pub modules: Vec<ModuleInfo>,
    module_ids: HashMap<(String, Option<String>), i64>,
    /// Told of each module as its first frame is met, with the build-ids
    /// and kernel release the inputs' headers record so far.
    sink: Option<Box<dyn ModuleSink>>,
    told: Vec<bool>,
    recorded_build_ids: HashMap<String, String>,
    os_release: Option<String>,
    /// Stacks queued with [`StackTables::queue`], not yet interned.
    queue: Batch,
    /// The thread interning queued stacks, once there were enough.
    worker: Option<StackWorker>,
    /// The ids of the queued stacks interned so far, by ticket.
    settled: Vec<i64>,
    next_ticket: u32,
    /// What the worker failed on, reported by the next call that returns
    /// a result.
    failed: Option<Error>,
}

/// Frames and stacks: ids and rows.
struct Interner {
    stacks: StackCols,
    stacks_out: TableWriter,
    frames: FrameCols,
    frames_out: TableWriter,
    /// Frames by (module, rel_pc, index in `contexts`, is_return).
    frame_ids: IdTable<(i64, u64, u8, bool)>,
    contexts: Vec<&'static str>,
    /// Stack ids by the 128-bit XXH3 hash of the stack's frame keys
    /// (module, address, context, return: what a frame id stands for, so
    /// a stack seen before is found without interning its frames): ~26
    /// bytes per distinct stack instead of the stack itself (a
    /// system-wide recording has millions of distinct stacks of ~20
    /// frames). Two different stacks share a hash with probability about
    /// n²/2^129 (10^-25 for 10 million stacks).
    stack_ids: IdTable<u128>,
    /// Reused buffers: the hashed bytes, frame ids.
    key: Vec<u8>,
    ids: Vec<i64>,
    rows: Vec<i64>,
}

/// Stacks queued to be interned in order: each stack's frames back to
/// back; after interning, their ids.
#[derive(Default)]
struct Batch {
    frames: Vec<Resolved>,
    lens: Vec<u32>,
    ids: Vec<i64>,
    failed: Option<Error>,
}

impl Batch {
    /// Empty, its buffers kept for the next batch.
    fn clear(&mut self) {
        self.frames.clear();
        self.lens.clear();
        self.ids.clear();
        self.failed = None;
    }
}

/// Stacks a batch holds before it goes to the worker; the first full
/// batch starts the worker (an input with fewer new stacks interns them
/// on its own thread).
const QUEUE_STACKS: usize = 1024;
/// Batches on their way to the worker before [`StackTables::queue`] waits.
const IN_FLIGHT: usize = 16;
/// Rows of `stack` the worker collects before it writes them.
const WORKER_ROWS: usize = 64 * 1024;

/// The thread interning queued stacks: it owns the [`Interner`] until
/// [`StackTables::stop_worker`] takes it back.
struct StackWorker {
    to: std::sync::mpsc::SyncSender<Batch>,
    back: std::sync::mpsc::Receiver<Batch>,
    in_flight: usize,
    spare: Vec<Batch>,
    thread: std::thread::JoinHandle<Option<Box<Interner>>>,
}

/// A frame resolved (its module and address known), before it has an id.
#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    /// Negative: no module.
    pub module: i64,
    pub rel_pc: u64,
    pub context: &'static str,
    pub is_return: bool,
    /// Kept with the frame when it is new (its first sighting).
    pub pid: Option<i32>,
    pub ip: u64,
}

/// A frame's key as a stack's hashed bytes hold it.
#[inline]
fn push_key(key: &mut Vec<u8>, module: i64, rel_pc: u64, context: u8, is_return: bool) {
    key.extend_from_slice(&module.to_le_bytes());
    key.extend_from_slice(&rel_pc.to_le_bytes());
    key.extend_from_slice(&[context, is_return as u8]);
}

impl StackTables {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(StackTables {
            interner: Some(Box::new(Interner {
                stacks: Default::default(),
                stacks_out: cap.open_table(&schema::STACK)?,
                frames: Default::default(),
                frames_out: cap.open_table(&schema::FRAME)?,
                frame_ids: IdTable::default(),
                contexts: Vec::new(),
                stack_ids: IdTable::default(),
                key: Vec::new(),
                ids: Vec::new(),
                rows: Vec::new(),
            })),
            modules: Vec::new(),
            module_ids: HashMap::default(),
            sink: None,
            told: Vec::new(),
            recorded_build_ids: HashMap::default(),
            os_release: None,
            queue: Batch::default(),
            worker: None,
            settled: Vec::new(),
            next_ticket: 0,
            failed: None,
        })
    }

    /// Tells `sink` of each module as its first frame is met.
    pub fn set_module_sink(&mut self, sink: Box<dyn ModuleSink>) {
        self.sink = Some(sink);
    }

    /// What an input's header records of its modules: build-ids by path
    /// (the first recorded for a path is kept, as `perf_build_id`'s
    /// readers take it) and the kernel release; [`ModuleSink`]'s hints only.
    pub fn recorded<'a>(
        &mut self,
        build_ids: impl Iterator<Item = (&'a str, String)>,
        os_release: Option<&str>,
    ) {
        if self.sink.is_none() {
            return;
        }
        for (path, b) in build_ids {
            if !self.recorded_build_ids.contains_key(path) {
                self.recorded_build_ids.insert(path.to_string(), b);
            }
        }
        if self.os_release.is_none() {
            self.os_release = os_release.map(str::to_string);
        }
    }

    /// Tells the sink of module `m` the first time one of its frames is
    /// met.
    #[inline]
    fn tell(&mut self, m: i64) {
        if m < 0 || self.sink.is_none() {
            return;
        }
        let m = m as usize;
        if self.told.get(m).copied() != Some(true) {
            self.tell_new(m);
        }
    }

    #[cold]
    fn tell_new(&mut self, m: usize) {
        let Some(sink) = &mut self.sink else {
            return;
        };
        if self.told.len() <= m {
            self.told.resize(self.modules.len().max(m + 1), false);
        }
        if std::mem::replace(&mut self.told[m], true) {
            return;
        }
        let Some(info) = self.modules.get(m) else {
            return;
        };
        sink.used(&UsedModule {
            path: &info.path,
            build_id: info
                .build_id
                .as_deref()
                .or_else(|| self.recorded_build_ids.get(&info.path).map(String::as_str)),
            is_kernel: info.is_kernel,
            is_file: info.is_file,
            os_release: self.os_release.as_deref(),
        });
    }

    /// The id of the module `path` (with `build_id`), added when new.
    pub fn module(
        &mut self,
        path: String,
        build_id: Option<String>,
        is_kernel: bool,
        is_file: bool,
    ) -> i64 {
        let key = (path, build_id);
        if let Some(&id) = self.module_ids.get(&key) {
            return id;
        }
        let id = self.modules.len() as i64;
        self.modules.push(ModuleInfo {
            path: key.0.clone(),
            build_id: key.1.clone(),
            is_kernel,
            is_file,
        });
        self.module_ids.insert(key, id);
        id
    }

    /// The interner, after every stack queued before (taken back from the
    /// worker when it has it).
    fn here(&mut self) -> &mut Interner {
        // The stacks queued before first: ids in the order asked for.
        if self.interner.is_none() || !self.queue.lens.is_empty() {
            if let Err(e) = self.stop_worker() {
                self.failed.get_or_insert(e);
            }
        }
        self.interner
            .as_mut()
            .expect("the stop of the worker gives the interner back")
    }

    /// The id of a frame: `module` (negative: no module), the address
    /// relative to it, the callchain context, whether it is a return
    /// address; `pid` and `ip` are kept from its first sighting.
    pub fn frame(
        &mut self,
        module: i64,
        rel_pc: u64,
        context: &'static str,
        is_return: bool,
        pid: Option<i32>,
        ip: Option<u64>,
    ) -> i64 {
        let (id, new) = self
            .here()
            .frame(module, rel_pc, context, is_return, pid, ip);
        if new {
            self.tell(module);
        }
        id
    }

    /// The id of a resolved frame ([`StackTables::frame`]).
    pub fn frame_of(&mut self, f: &Resolved) -> i64 {
        let (id, new) = self.here().frame_of(f);
        if new {
            self.tell(f.module);
        }
        id
    }

    /// The id of the stack of `frames` (frame ids, leaf first), added
    /// when new.
    pub fn stack(&mut self, frames: &[i64]) -> i64 {
        self.here().stack(frames)
    }

    /// The id of the stack of `frames` (resolved, leaf first), added when
    /// new with its frames: a stack seen before costs one hash of its
    /// frames' keys and one lookup, not one per frame.
    pub fn stack_resolved(&mut self, frames: &[Resolved]) -> i64 {
        for f in frames {
            self.tell(f.module);
        }
        self.here().stack_resolved(frames)
    }

    /// Queues the stack of `frames` (resolved, leaf first) to be interned
    /// as [`StackTables::stack_resolved`] would, in the order queued, and
    /// returns its ticket: [`StackTables::settle`] gives its id. Once a
    /// batch is full, a thread of its own interns them while the caller
    /// goes on reading.
    pub fn queue(&mut self, frames: &[Resolved]) -> Result<u32> {
        for f in frames {
            self.tell(f.module);
        }
        self.queue.frames.extend_from_slice(frames);
        self.queue.lens.push(frames.len() as u32);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if self.queue.lens.len() >= QUEUE_STACKS {
            self.send_queue()?;
        }
        Ok(ticket)
    }

    /// Hands the queue to the worker (started at the first full batch).
    fn send_queue(&mut self) -> Result<()> {
        if self.worker.is_none() {
            let Some(interner) = self.interner.take() else {
                return Err(gone());
            };
            match StackWorker::start(interner) {
                Ok(w) => self.worker = Some(w),
                // No thread to be had: interned here.
                Err(interner) => {
                    self.interner = Some(interner);
                    return self.intern_queue_here();
                }
            }
        }
        let w = self.worker.as_mut().expect("started above");
        let sent = w.send_next(&mut self.queue, &mut self.settled);
        sent.map_err(|e| self.worker_failed(e))
    }

    /// Interns the queue on this thread (no worker).
    fn intern_queue_here(&mut self) -> Result<()> {
        let mut q = std::mem::take(&mut self.queue);
        let r = match self.interner.as_mut() {
            Some(i) => i.intern(&mut q),
            None => Err(gone()),
        };
        self.settled.extend_from_slice(&q.ids);
        q.clear();
        self.queue = q;
        r
    }

    /// `e`, from the worker; a panic of its thread is raised here, as
    /// interning on this thread would have.
    fn worker_failed(&mut self, e: Error) -> Error {
        if let Some(w) = self.worker.take_if(|w| w.thread.is_finished()) {
            match w.thread.join() {
                Ok(interner) => self.interner = interner,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        e
    }

    /// Interns every queued stack; their ids, by ticket.
    pub fn settle(&mut self) -> Result<&[i64]> {
        self.settled_upto(self.next_ticket)
    }

    /// The tickets given since they were last forgotten: the next one.
    pub fn tickets_given(&self) -> u32 {
        self.next_ticket
    }

    /// Hands the stacks queued so far to the worker, when it runs, so that
    /// it interns them while this thread goes on.
    pub fn send_queued(&mut self) -> Result<()> {
        if self.worker.is_some() && !self.queue.lens.is_empty() {
            self.send_queue()?;
        }
        Ok(())
    }

    /// The ids of the stacks of tickets below `n`, by ticket (and of any
    /// interned since): waits only for those.
    pub fn settled_upto(&mut self, n: u32) -> Result<&[i64]> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let n = n as usize;
        if self.settled.len() < n {
            let unsent_from = self.next_ticket as usize - self.queue.lens.len();
            if n > unsent_from {
                match self.worker.is_some() {
                    true => self.send_queue()?,
                    false => self.intern_queue_here()?,
                }
            }
            if let Some(w) = &mut self.worker {
                let mut r = Ok(());
                while self.settled.len() < n && w.in_flight > 0 && r.is_ok() {
                    r = w.receive(&mut self.settled);
                }
                r.map_err(|e| self.worker_failed(e))?;
            }
            if self.settled.len() < n {
                return Err(stack_error(format!(
                    "{n} stacks queued, {} interned",
                    self.settled.len()
                )));
            }
        }
        Ok(&self.settled)
    }

    /// Forgets the tickets given so far (after [`StackTables::settle`]):
    /// the next one is 0.
    pub fn forget_tickets(&mut self) {
        debug_assert!(self.queue.lens.is_empty());
        self.settled.clear();
        self.next_ticket = 0;
    }

    /// Takes the interner back from the worker, after every queued stack.
    fn stop_worker(&mut self) -> Result<()> {
        let settled = self.settle().map(|_| ());
        let Some(w) = self.worker.take() else {
            return settled;
        };
        let StackWorker { to, thread, .. } = w;
        drop(to);
        match thread.join() {
            Ok(Some(interner)) => {
                self.interner = Some(interner);
                settled
            }
            Ok(None) => settled.and(Err(gone())),
            // A bug: fail as interning on this thread would have.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Writes the rows added since the last flush (the worker writes its
    /// own as they grow).
    pub fn flush(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        match &mut self.interner {
            Some(i) => i.flush(),
            None => Ok(()),
        }
    }

    /// Closes `stack` and `frame` and writes `module`; `build_id_of` fills
    /// build-ids a module's records did not carry (perf's BUILD_ID table).
    pub fn finish(
        mut self,
        cap: &mut CaptureWriter,
        build_id_of: impl Fn(&str) -> Option<String>,
    ) -> Result<()> {
        self.stop_worker()?;
        // Done with the samples: the sink stops learning ahead.
        self.sink = None;
        self.flush()?;
        let i = *self.interner.take().expect("stop_worker gives it back");
        cap.close_table(i.stacks_out)?;
        cap.close_table(i.frames_out)?;
        let mut c = ModuleCols::default();
        for (i, m) in self.modules.iter().enumerate() {
            c.module_id.append_value(i as i64);
            c.path.append_value(&m.path);
            c.build_id
                .append_option(m.build_id.clone().or_else(|| build_id_of(&m.path)));
            c.is_kernel.append_value(m.is_kernel);
            c.is_file.append_value(m.is_file);
        }
        cap.write_table(&mut c)?;
        Ok(())
    }
}

impl StackWorker {
    /// The worker, with `interner`; the interner back when no thread can
    /// be started.
    fn start(interner: Box<Interner>) -> std::result::Result<StackWorker, Box<Interner>> {
        let (to, from) = std::sync::mpsc::sync_channel::<Batch>(IN_FLIGHT);
        let (done, back) = std::sync::mpsc::channel::<Batch>();
        let (give, take) = std::sync::mpsc::channel::<Box<Interner>>();
        let spawned = std::thread::Builder::new()
            .name("trawl-stacks".into())
            .spawn(move || {
                let mut interner = take.recv().ok()?;
                // After a failure (a table not written), batches come
                // back uninterned, the first with the error.
                let mut failed = false;
                for mut b in from {
                    if !failed {
                        b.failed = interner.intern(&mut b).err();
                        failed = b.failed.is_some();
                    }
                    if done.send(b).is_err() {
                        break;
                    }
                }
                Some(interner)
            });
        let Ok(thread) = spawned else {
            return Err(interner);
        };
        if let Err(back) = give.send(interner) {
            return Err(back.0);
        }
        Ok(StackWorker {
            to,
            back,
            in_flight: 0,
            spare: Vec::new(),
            thread,
        })
    }

    /// Sends `queue` (replaced by an empty batch), after collecting the
    /// batches that came back without waiting, or waiting for one when
    /// too many are on their way.
    fn send_next(&mut self, queue: &mut Batch, settled: &mut Vec<i64>) -> Result<()> {
        while let Ok(mut b) = self.back.try_recv() {
            self.in_flight -= 1;
            if let Some(e) = b.failed.take() {
                return Err(e);
            }
            settled.extend_from_slice(&b.ids);
            self.spare.push(b);
        }
        if self.in_flight >= IN_FLIGHT {
            self.receive(settled)?;
        }
        let mut next = self.spare.pop().unwrap_or_default();
        next.clear();
        let b = std::mem::replace(queue, next);
        self.to.send(b).map_err(|_| gone())?;
        self.in_flight += 1;
        Ok(())
    }

    /// Waits for the next interned batch; its ids go to `settled`.
    fn receive(&mut self, settled: &mut Vec<i64>) -> Result<()> {
        let mut b = self.back.recv().map_err(|_| gone())?;
        self.in_flight -= 1;
        if let Some(e) = b.failed.take() {
            return Err(e);
        }
        settled.extend_from_slice(&b.ids);
        self.spare.push(b);
        Ok(())
    }
}

/// What went wrong interning stacks (named after the `stack` table).
fn stack_error(msg: String) -> Error {
    Error::Io {
        path: "stack".into(),
        source: std::io::Error::other(msg),
    }
}

fn gone() -> Error {
    stack_error("the thread interning stacks stopped".into())
}

impl Interner {
    /// The id of a resolved frame, and whether it is new.
    fn frame_of(&mut self, f: &Resolved) -> (i64, bool) {
        self.frame(
            f.module,
            f.rel_pc,
            f.context,
            f.is_return,
            f.pid,
            Some(f.ip),
        )
    }

    /// The id of a frame, and whether it is new.
    fn frame(
        &mut self,
        module: i64,
        rel_pc: u64,
        context: &'static str,
        is_return: bool,
        pid: Option<i32>,
        ip: Option<u64>,
    ) -> (i64, bool) {
        let key = (module, rel_pc, self.context_code(context), is_return);
        let (id, new) = self
            .frame_ids
            .id(key, |k| rustc_hash::FxBuildHasher.hash_one(k));
        let id = id as i64;
        if new {
            let c = &mut self.frames;
            c.frame_id.push(id);
            c.module_id.push((module >= 0).then_some(module));
            c.rel_pc.push(rel_pc);
            c.context.append_value(context);
            c.is_return.push(is_return);
            c.example_pid.push(pid);
            c.example_ip.push(ip);
        }
        (id, new)
    }

    /// A small number per callchain context (there are a handful).
    #[inline]
    fn context_code(&mut self, context: &'static str) -> u8 {
        match self
            .contexts
            .iter()
            .position(|c| std::ptr::eq(*c, context) || *c == context)
        {
            Some(i) => i as u8,
            None => {
                self.contexts.push(context);
                (self.contexts.len() - 1) as u8
            }
        }
    }

    fn stack(&mut self, frames: &[i64]) -> i64 {
        self.key.clear();
        for &f in frames {
            let (module, rel_pc, context, is_return) = *self.frame_ids.key(f as usize);
            push_key(&mut self.key, module, rel_pc, context, is_return);
        }
        let h = twox_hash::XxHash3_128::oneshot(&self.key);
        self.stack_of_key(h, |t| t.extend_from_slice(frames))
    }

    fn stack_resolved(&mut self, frames: &[Resolved]) -> i64 {
        self.key.clear();
        for f in frames {
            let c = self.context_code(f.context);
            push_key(&mut self.key, f.module, f.rel_pc, c, f.is_return);
        }
        let h = twox_hash::XxHash3_128::oneshot(&self.key);
        if let Some(id) = self.stack_ids.get(h, |h| *h as u64) {
            return id as i64;
        }
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        for f in frames {
            ids.push(self.frame_of(f).0);
        }
        let id = self.stack_of_key(h, |t| t.extend_from_slice(&ids));
        self.ids = ids;
        id
    }

    /// Interns a batch's stacks in order (their ids into `b.ids`); writes
    /// the rows once there are enough.
    fn intern(&mut self, b: &mut Batch) -> Result<()> {
        let mut at = 0;
        for &n in &b.lens {
            let end = at + n as usize;
            b.ids.push(self.stack_resolved(&b.frames[at..end]));
            at = end;
        }
        if self.stacks.rows() >= WORKER_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// The id of the stack whose key hashes to `h`; when new, its rows
    /// (the frame ids `frames` gives) are added.
    fn stack_of_key(&mut self, h: u128, frames: impl FnOnce(&mut Vec<i64>)) -> i64 {
        // The hash is already uniform: its low bits place it in the table.
        let (id, new) = self.stack_ids.id(h, |h| *h as u64);
        let id = id as i64;
        if new {
            let mut ids = std::mem::take(&mut self.rows);
            ids.clear();
            frames(&mut ids);
            for (d, f) in ids.iter().enumerate() {
                self.stacks.stack_id.push(id);
                self.stacks.depth.push(d as i32);
                self.stacks.frame_id.push(*f);
            }
            self.rows = ids;
        }
        id
    }

    fn flush(&mut self) -> Result<()> {
        if self.stacks.rows() > 0 {
            self.stacks_out.write_rows(&mut self.stacks)?;
        }
        if self.frames.rows() > 0 {
            self.frames_out.write_rows(&mut self.frames)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use std::collections::HashMap as StdMap;

    /// Stack `i` of a deterministic sequence: 1 to 8 frames drawn from 40
    /// addresses in 3 modules, so stacks repeat and share frames.
    fn stack_of(i: u64, modules: &[i64]) -> Vec<Resolved> {
        let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 3001;
        let depth = 1 + (x % 8) as usize;
        (0..depth)
            .map(|d| {
                x = (x * 31 + 7 + d as u64) % 3001;
                Resolved {
                    module: modules[(x % 3) as usize],
                    rel_pc: 0x1000 + (x % 40) * 16,
                    context: if d == 0 { "kernel" } else { "user" },
                    is_return: d > 0,
                    pid: Some(7),
                    ip: 0x40_0000 + x,
                }
            })
            .collect()
    }

    type Key = (i64, u64, &'static str, bool);

    /// The contract, worked without trawl's tables: dense ids in order of
    /// first appearance, a new stack's frames getting theirs in its order.
    #[derive(Default)]
    struct Model {
        frames: StdMap<Key, i64>,
        stacks: StdMap<Vec<Key>, i64>,
        rows: Vec<(i64, i32, i64)>,
    }

    impl Model {
        fn frame(&mut self, k: Key) -> i64 {
            let n = self.frames.len() as i64;
            *self.frames.entry(k).or_insert(n)
        }
        fn stack(&mut self, s: &[Resolved]) -> i64 {
            let keys: Vec<Key> = s
                .iter()
                .map(|f| (f.module, f.rel_pc, f.context, f.is_return))
                .collect();
            if let Some(&id) = self.stacks.get(&keys) {
                return id;
            }
            let id = self.stacks.len() as i64;
            for (d, &k) in keys.iter().enumerate() {
                let f = self.frame(k);
                self.rows.push((id, d as i32, f));
            }
            self.stacks.insert(keys, id);
            id
        }
    }

    /// Stacks queued (past a batch, so a thread interns most of them) get
    /// the ids of the contract in the order queued, also across a frame
    /// interned directly in between (as the strace converter does) and
    /// after the tickets are forgotten; the written `stack` table has the
    /// model's rows.
    #[test]
    fn queued_stacks_get_ids_in_the_order_queued() {
        let d = tempfile::tempdir().unwrap();
        let mut cap = CaptureWriter::create(&d.path().join("c")).unwrap();
        let mut st = StackTables::new(&mut cap).unwrap();
        let modules: Vec<i64> = (0..3)
            .map(|m| st.module(format!("/lib/m{m}.so"), None, false, true))
            .collect();
        let mut model = Model::default();
        let mut want = Vec::new();
        let mut tickets = Vec::new();
        // Frames interned directly: before the first batch is full (the
        // queue not yet on a thread), while the thread runs, and after the
        // tickets are forgotten; each after every stack queued before.
        let direct = |st: &mut StackTables, model: &mut Model, pc: u64| {
            let f = st.frame(modules[1], pc, "user", false, None, None);
            assert_eq!(f, model.frame((modules[1], pc, "user", false)), "{pc:#x}");
        };
        for i in 0..5000u64 {
            let s = stack_of(i, &modules);
            want.push(model.stack(&s));
            tickets.push(st.queue(&s).unwrap());
            match i {
                500 => direct(&mut st, &mut model, 0x9990),
                3000 => direct(&mut st, &mut model, 0x9999),
                _ => {}
            }
        }
        let ids = st.settle().unwrap().to_vec();
        let got: Vec<i64> = tickets.iter().map(|&t| ids[t as usize]).collect();
        assert_eq!(got, want);
        st.forget_tickets();
        for i in 5000..7000u64 {
            if i == 5003 {
                direct(&mut st, &mut model, 0x99a0);
            }
            let s = stack_of(i * 7, &modules);
            let w = model.stack(&s);
            let t = st.queue(&s).unwrap();
            assert_eq!(t as u64, i - 5000);
            want.push(w);
        }
        let ids = st.settle().unwrap().to_vec();
        assert_eq!(ids, want[5000..]);
        st.finish(&mut cap, |_| None).unwrap();
        let dir = cap.commit().unwrap();
        let mut rows = Vec::new();
        for b in crate::readback::read_table(&dir, &schema::STACK).unwrap() {
            let col = |n: &str| b.column_by_name(n).unwrap().clone();
            let (s, dep, f) = (col("stack_id"), col("depth"), col("frame_id"));
            for r in 0..b.num_rows() {
                rows.push((
                    s.as_primitive::<Int64Type>().value(r),
                    dep.as_primitive::<Int32Type>().value(r),
                    f.as_primitive::<Int64Type>().value(r),
                ));
            }
        }
        assert_eq!(rows, model.rows);
        // The frame table: each frame's key at its id.
        let mut frames = Vec::new();
        for b in crate::readback::read_table(&dir, &schema::FRAME).unwrap() {
            let col = |n: &str| b.column_by_name(n).unwrap().clone();
            let (id, m, pc, ret) = (
                col("frame_id"),
                col("module_id"),
                col("rel_pc"),
                col("is_return"),
            );
            for r in 0..b.num_rows() {
                frames.push((
                    id.as_primitive::<Int64Type>().value(r),
                    m.as_primitive::<Int64Type>().value(r),
                    pc.as_primitive::<UInt64Type>().value(r),
                    ret.as_boolean().value(r),
                ));
            }
        }
        let mut want_frames: Vec<(i64, i64, u64, bool)> = model
            .frames
            .iter()
            .map(|(&(m, pc, _, ret), &id)| (id, m, pc, ret))
            .collect();
        want_frames.sort();
        assert_eq!(frames, want_frames);
    }
}
