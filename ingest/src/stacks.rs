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
    /// Stack ids by the 128-bit XXH3 hash of the stack's frame ids: ~26
    /// bytes per distinct stack instead of the stack itself (a
    /// system-wide recording has millions of distinct stacks of ~20
    /// frames). Two different stacks share a hash with probability about
    /// n²/2^129 (10^-25 for 10 million stacks).
    stack_ids: IdTable<u128>,
    /// Reused buffer for the hashed bytes.
    key: Vec<u8>,
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
        })
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

    /// The id of the stack of `frames` (leaf first), added when new.
    pub fn stack(&mut self, frames: &[i64]) -> i64 {
        self.key.clear();
        for f in frames {
            self.key.extend_from_slice(&f.to_le_bytes());
        }
        let h = twox_hash::XxHash3_128::oneshot(&self.key);
        // The hash is already uniform: its low bits place it in the table.
        let (id, new) = self.stack_ids.id(h, |h| *h as u64);
        let id = id as i64;
        if new {
            for (d, f) in frames.iter().enumerate() {
                self.stacks.stack_id.append_value(id);
                self.stacks.depth.append_value(d as i32);
                self.stacks.frame_id.append_value(*f);
            }
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
