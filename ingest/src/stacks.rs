//! The `module`, `frame` and `stack` tables, shared by every converter:
//! perf samples and strace `-k` stacks intern their modules, frames and
//! call stacks here, so one capture has one set of ids and symbolization
//! covers both.

use std::hash::BuildHasher;

use rustc_hash::FxHashMap as HashMap;

use arrow::array::{
    BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, StringDictionaryBuilder,
    UInt64Builder,
};
use arrow::datatypes::Int32Type;

use crate::columns::TableColumns;
use crate::error::Result;
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
        stack_id: Int64Builder,
        depth: Int32Builder,
        frame_id: Int64Builder,
    }
}

table_columns! {
    #[derive(Default)]
    struct FrameCols for schema::FRAME {
        frame_id: Int64Builder,
        module_id: Int64Builder,
        rel_pc: UInt64Builder,
        context: StringDictionaryBuilder<Int32Type>,
        is_return: BooleanBuilder,
        example_pid: Int32Builder,
        example_ip: UInt64Builder,
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
    stacks: StackCols,
    stacks_out: TableWriter,
    frames: FrameCols,
    frames_out: TableWriter,
    pub modules: Vec<ModuleInfo>,
    module_ids: HashMap<(String, Option<String>), i64>,
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
    /// Told of each module as its first frame is met, with the build-ids
    /// and kernel release the inputs' headers record so far.
    sink: Option<Box<dyn ModuleSink>>,
    told: Vec<bool>,
    recorded_build_ids: HashMap<String, String>,
    os_release: Option<String>,
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
            stacks: Default::default(),
            stacks_out: cap.open_table(&schema::STACK)?,
            frames: Default::default(),
            frames_out: cap.open_table(&schema::FRAME)?,
            modules: Vec::new(),
            module_ids: HashMap::default(),
            frame_ids: IdTable::default(),
            contexts: Vec::new(),
            stack_ids: IdTable::default(),
            key: Vec::new(),
            ids: Vec::new(),
            rows: Vec::new(),
            sink: None,
            told: Vec::new(),
            recorded_build_ids: HashMap::default(),
            os_release: None,
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
    #[cold]
    fn tell(&mut self, m: usize) {
        let Some(sink) = &mut self.sink else {
            return;
        };
        if self.told.len() <= m {
            self.told.resize(self.modules.len().max(m + 1), false);
        }
        if std::mem::replace(&mut self.told[m], true) {
            return;
        }
        let info = &self.modules[m];
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
        let key = (module, rel_pc, self.context_code(context), is_return);
        let (id, new) = self
            .frame_ids
            .id(key, |k| rustc_hash::FxBuildHasher.hash_one(k));
        let id = id as i64;
        if !new {
            return id;
        }
        if module >= 0 && self.sink.is_some() {
            self.tell(module as usize);
        }
        let c = &mut self.frames;
        c.frame_id.append_value(id);
        c.module_id.append_option((module >= 0).then_some(module));
        c.rel_pc.append_value(rel_pc);
        c.context.append_value(context);
        c.is_return.append_value(is_return);
        c.example_pid.append_option(pid);
        c.example_ip.append_option(ip);
        id
    }

    /// The id of a resolved frame ([`StackTables::frame`]).
    pub fn frame_of(&mut self, f: &Resolved) -> i64 {
        self.frame(
            f.module,
            f.rel_pc,
            f.context,
            f.is_return,
            f.pid,
            Some(f.ip),
        )
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

    /// The id of the stack of `frames` (frame ids, leaf first), added
    /// when new.
    pub fn stack(&mut self, frames: &[i64]) -> i64 {
        self.key.clear();
        for &f in frames {
            let (module, rel_pc, context, is_return) = *self.frame_ids.key(f as usize);
            push_key(&mut self.key, module, rel_pc, context, is_return);
        }
        let h = twox_hash::XxHash3_128::oneshot(&self.key);
        self.stack_of_key(h, |t| t.extend_from_slice(frames))
    }

    /// The id of the stack of `frames` (resolved, leaf first), added when
    /// new with its frames: a stack seen before costs one hash of its
    /// frames' keys and one lookup, not one per frame.
    pub fn stack_resolved(&mut self, frames: &[Resolved]) -> i64 {
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
            ids.push(self.frame_of(f));
        }
        let id = self.stack_of_key(h, |t| t.extend_from_slice(&ids));
        self.ids = ids;
        id
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
                self.stacks.stack_id.append_value(id);
                self.stacks.depth.append_value(d as i32);
                self.stacks.frame_id.append_value(*f);
            }
            self.rows = ids;
        }
        id
    }

    /// Writes the rows added since the last flush.
    pub fn flush(&mut self) -> Result<()> {
        if self.stacks.rows() > 0 {
            self.stacks_out.write_rows(&mut self.stacks)?;
        }
        if self.frames.rows() > 0 {
            self.frames_out.write_rows(&mut self.frames)?;
        }
        Ok(())
    }

    /// Closes `stack` and `frame` and writes `module`; `build_id_of` fills
    /// build-ids a module's records did not carry (perf's BUILD_ID table).
    pub fn finish(
        mut self,
        cap: &mut CaptureWriter,
        build_id_of: impl Fn(&str) -> Option<String>,
    ) -> Result<()> {
        // Done with the samples: the sink stops learning ahead.
        self.sink = None;
        self.flush()?;
        cap.close_table(self.stacks_out)?;
        cap.close_table(self.frames_out)?;
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
