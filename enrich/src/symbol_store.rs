//! The symbol store: what the symbolizer learnt about each module (its
//! symbol table, load segments, and the DWARF answers of the functions
//! asked about; kernel symbols), kept as Parquet in a directory shared by
//! every capture, archive and process, so that a module is learnt once.
//!
//! Layout: `STORE/<key>/<part>.parquet`, one directory per module, keyed
//! by build-id (`build-id-<hex>`), by path, size and modification time
//! without one (`file-<hash>`), or by kernel build-id (`kernel-<hex>`).
//! A part is written whole to `STORE/.tmp` and renamed into its entry, so
//! a reader sees whole parts only and concurrent writers never collide
//! (each writes parts of its own; a module two processes learn at once is
//! learnt twice, and both parts say the same). An entry starts with a
//! `base-*` part (symbols, segments, which files were read); `lines-*`
//! parts add the windows learnt later. Every part carries a checksum of
//! its rows: a part cut short or changed is reported, removed and learnt
//! again, never used.
//!
//! One table layout for every part (a row per fact; `kind` says which):
//! `meta` (name = key, file = value), `segment` (lo = file offset, hi =
//! lo + size, vaddr), `symbol` (lo..hi, name as in the file), `covered`
//! (lo..hi: windows whose DWARF answers are all given), `line` (lo..hi,
//! depth = inline level, name = function, file, line, column), `kallsyms`
//! (lo = address, name). DuckDB reads it as it is:
//! `SELECT * FROM 'STORE/build-id-*/*.parquet' WHERE kind = 'symbol'`.
//!
//! Decoded machine code (what `report annotate` shows) is kept per
//! function in the entry's `code/` subdirectory, in a layout of its own
//! (see `store/code.rs`), so that a function is decoded once per module;
//! what DWARF stack unwinding reads of a module (its CFI sections and load
//! segments) in `cfi/` (see `store/cfi.rs`).

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow::array::{
    Array, ArrayRef, AsArray, RecordBatch, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use trawl_symbolize::disasm::FunctionCode;
use trawl_symbolize::dwarf::LineFrame;
use trawl_symbolize::elf::{LoadSegments, Sym, SymbolMap, TableKind};
use trawl_symbolize::facts::{Base, LineRange, ModuleFacts, Part};
use trawl_symbolize::unwind::Cfi;
use trawl_symbolize::{FactStore, Kallsyms, StoreProblem};

mod cfi;
mod code;

/// The layout's version: parts of another version are not read.
const VERSION: &str = "1";
const KEY_VERSION: &str = "trawl.symbol_store.version";
const KEY_CHECK: &str = "trawl.symbol_store.check";

/// The persistent symbol store (see the module documentation).
#[derive(Debug)]
pub struct SymbolStore {
    dir: PathBuf,
    problems: Mutex<Vec<StoreProblem>>,
}

/// Where the store is by default: `$XDG_CACHE_HOME/trawl/symbols`, else
/// `~/.cache/trawl/symbols`.
pub fn default_dir() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("trawl").join("symbols"))
}

/// The store an archive keeps beside its manifest when it has one
/// (`ARCHIVE/.symbols`: created by the user, or by `--symbol-store` naming
/// it), so that its symbols travel with it.
pub fn archive_dir(archive: &Path) -> PathBuf {
    archive.join(".symbols")
}

/// Which symbol store a run uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Choice {
    /// [`default_dir`] (an archive's own, `ARCHIVE/.symbols`, when it has
    /// one).
    #[default]
    Default,
    Dir(PathBuf),
    /// None: modules are learnt for this run only.
    Off,
}

/// Puts the chosen store in front of `cfg` (its directory created when
/// missing). For an archive ingest, `archive` is the archive: its own
/// store is the default when it has one. A store that cannot be opened is
/// returned as a problem, and symbolization goes on without it.
pub fn attach(
    cfg: &mut trawl_symbolize::Config,
    choice: &Choice,
    archive: Option<&Path>,
) -> Result<(), String> {
    let dir = match choice {
        Choice::Off => return Ok(()),
        Choice::Dir(d) => d.clone(),
        Choice::Default => match archive.map(archive_dir).filter(|d| d.is_dir()) {
            Some(d) => d,
            None => {
                default_dir().ok_or("no symbol store: neither XDG_CACHE_HOME nor HOME is set")?
            }
        },
    };
    let s = SymbolStore::open(&dir)?;
    cfg.store = Some(Arc::new(s));
    Ok(())
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl SymbolStore {
    pub fn open(dir: &Path) -> Result<SymbolStore, String> {
        std::fs::create_dir_all(dir.join(".tmp"))
            .map_err(|e| format!("symbol store {}: {e}", dir.display()))?;
        Ok(SymbolStore {
            dir: dir.to_path_buf(),
            problems: Mutex::new(Vec::new()),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn problem(&self, p: StoreProblem) {
        self.problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p);
    }

    /// The parts of `key`'s entry, by name (bases first, oldest first).
    fn parts(&self, key: &str) -> Vec<PathBuf> {
        self.sub_parts(key, "")
    }

    /// The parts in the subdirectory `sub` of `key`'s entry (`""`: the
    /// entry's own), by name.
    fn sub_parts(&self, key: &str, sub: &str) -> Vec<PathBuf> {
        if !valid_key(key) {
            return Vec::new();
        }
        let Ok(rd) = std::fs::read_dir(self.dir.join(key).join(sub)) else {
            return Vec::new();
        };
        let mut v: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        v.sort();
        v
    }

    /// Reads a part; a part that does not read back whole is reported and
    /// removed (it is learnt again).
    fn read_part(&self, path: &Path, each: &mut dyn FnMut(Row<'_>)) -> bool {
        self.read_checked(path, &mut |p| read_rows(p, each))
    }

    /// Runs `read` on the part at `path`: a part it finds damaged (or on
    /// which the Parquet reader fails) is reported and removed.
    fn read_checked(&self, path: &Path, read: &mut dyn FnMut(&Path) -> Result<(), String>) -> bool {
        // A damaged file must not take the run down, whatever the Parquet
        // reader makes of it.
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(path)))
            .unwrap_or_else(|_| Err("the Parquet reader failed on it".into()));
        match res {
            Ok(()) => true,
            Err(e) => {
                self.problem(StoreProblem {
                    kind: "symbol_store_damaged",
                    path: path.display().to_string(),
                    message: format!("{e}; removed, its facts are learnt again"),
                });
                let _ = std::fs::remove_file(path);
                false
            }
        }
    }

    /// Writes `rows` as a new part of `key` (atomically: a temporary file
    /// renamed into the entry).
    fn write_part(&self, key: &str, prefix: &str, rows: Rows) {
        match rows.finish() {
            Ok((batch, check)) => self.write_file(key, None, prefix, &|p| {
                write_checked(p, &batch, VERSION, check.clone(), Vec::new())
            }),
            Err(e) => self.problem(StoreProblem {
                kind: "symbol_store_unwritable",
                path: self.dir.join(key).display().to_string(),
                message: format!("not written ({e}); learnt again next time"),
            }),
        }
    }

    /// Writes a new file of `key`'s entry (in its subdirectory `sub` when
    /// given) with `write`, atomically: written to `STORE/.tmp`, renamed
    /// into the entry.
    fn write_file(
        &self,
        key: &str,
        sub: Option<&str>,
        prefix: &str,
        write: &dyn Fn(&Path) -> Result<(), String>,
    ) {
        if !valid_key(key) {
            return;
        }
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "{prefix}-{nanos:024}-{}-{}.parquet",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = self.dir.join(".tmp").join(&name);
        let mut entry = self.dir.join(key);
        if let Some(sub) = sub {
            entry.push(sub);
        }
        let res = (|| -> Result<(), String> {
            std::fs::create_dir_all(&entry).map_err(|e| e.to_string())?;
            write(&tmp)?;
            std::fs::rename(&tmp, entry.join(&name)).map_err(|e| e.to_string())
        })();
        if let Err(e) = res {
            let _ = std::fs::remove_file(&tmp);
            self.problem(StoreProblem {
                kind: "symbol_store_unwritable",
                path: entry.join(&name).display().to_string(),
                message: format!("not written ({e}); learnt again next time"),
            });
        }
    }
}

impl FactStore for SymbolStore {
    fn load(&self, key: &str) -> Option<ModuleFacts> {
        let parts = self.parts(key);
        let is_base = |p: &PathBuf| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("base-"))
        };
        // The newest base: an entry learnt again (a debug file found since)
        // replaces the old; two learnt at once say the same.
        let base_path = parts.iter().rev().find(|p| is_base(p))?;
        let mut b = Base::default();
        let (mut segs, mut syms) = (Vec::new(), Vec::new());
        let mut covered = Vec::new();
        let mut lines: Vec<LineRange> = Vec::new();
        let ok = self.read_part(base_path, &mut |r| {
            collect(r, &mut b, &mut segs, &mut syms, &mut covered, &mut lines)
        });
        if !ok {
            // The entry is learnt again whole.
            for p in &parts {
                let _ = std::fs::remove_file(p);
            }
            return None;
        }
        b.segments = LoadSegments::from_segs(segs);
        b.symbols = SymbolMap::from_chosen(syms);
        for p in parts.iter().filter(|p| !is_base(p)) {
            let (mut cov, mut lin) = (Vec::new(), Vec::new());
            let mut ignored = Base::default();
            let (mut s1, mut s2) = (Vec::new(), Vec::new());
            // A part that does not read back is dropped whole: its windows
            // are learnt again.
            if self.read_part(p, &mut |r| {
                collect(r, &mut ignored, &mut s1, &mut s2, &mut cov, &mut lin)
            }) {
                covered.extend(cov);
                lines.extend(lin);
            }
        }
        Some(ModuleFacts::from_parts(b, covered, lines))
    }

    fn save(&self, key: &str, part: Part<'_>) {
        let mut rows = Rows::default();
        let prefix = if let Some(b) = part.base {
            for (k, v) in [
                ("binary", b.binary.as_ref()),
                ("symbols_file", b.symbols_file.as_ref()),
                ("debug_info", b.debug_info.as_ref()),
            ] {
                if let Some(v) = v {
                    rows.push(Row::meta(k, &v.to_string_lossy()));
                }
            }
            if let Some(s) = &b.searched {
                rows.push(Row::meta("searched", s));
            }
            if let Some(t) = b.table {
                rows.push(Row::meta("table", t.as_str()));
            }
            for &(off, vaddr, size) in b.segments.segs() {
                rows.push(Row {
                    kind: "segment",
                    lo: off,
                    hi: off.saturating_add(size),
                    vaddr: Some(vaddr),
                    ..Row::default()
                });
            }
            for s in b.symbols.syms() {
                rows.push(Row {
                    kind: "symbol",
                    lo: s.start,
                    hi: s.end,
                    name: Some(&s.name),
                    ..Row::default()
                });
            }
            "base"
        } else {
            "lines"
        };
        for &(lo, hi) in part.covered {
            rows.push(Row {
                kind: "covered",
                lo,
                hi,
                ..Row::default()
            });
        }
        for r in part.lines {
            for (d, f) in r.frames.iter().enumerate() {
                rows.push(Row {
                    kind: "line",
                    lo: r.lo,
                    hi: r.hi,
                    depth: Some(d as u32),
                    name: f.function.as_deref(),
                    file: f.file.as_deref(),
                    line: f.line,
                    column: f.column,
                    ..Row::default()
                });
            }
        }
        self.write_part(key, prefix, rows);
    }

    fn load_kernel(&self, key: &str) -> Option<Kallsyms> {
        let p = self.parts(key).into_iter().next()?;
        let mut syms = Vec::new();
        let ok = self.read_part(&p, &mut |r| {
            if r.kind == "kallsyms" {
                syms.push((r.lo, r.name.unwrap_or("").to_string()));
            }
        });
        (ok && !syms.is_empty()).then(|| Kallsyms::from_syms(syms))
    }

    fn save_kernel(&self, key: &str, k: &Kallsyms) {
        let mut rows = Rows::default();
        for (a, n) in k.syms() {
            rows.push(Row {
                kind: "kallsyms",
                lo: *a,
                hi: *a,
                name: Some(n),
                ..Row::default()
            });
        }
        self.write_part(key, "base", rows);
    }

    fn load_code(&self, key: &str, starts: &[u64]) -> Vec<FunctionCode> {
        if starts.is_empty() {
            return Vec::new();
        }
        let mut found = std::collections::BTreeMap::new();
        for p in self.sub_parts(key, code::DIR) {
            self.read_checked(&p, &mut |p| {
                code::read(p, starts, &mut |f| {
                    found.insert(f.address, f);
                })
            });
        }
        found.into_values().collect()
    }

    fn save_code(&self, key: &str, functions: &[FunctionCode]) {
        if functions.is_empty() {
            return;
        }
        self.write_file(key, Some(code::DIR), "code", &|p| code::write(p, functions));
    }

    fn load_cfi(&self, key: &str) -> Option<Cfi> {
        // The newest part (two runs learning a module at once write the
        // same facts).
        let p = self.sub_parts(key, cfi::DIR).pop()?;
        let mut got = None;
        self.read_checked(&p, &mut |p| {
            got = Some(cfi::read(p)?);
            Ok(())
        });
        got
    }

    fn save_cfi(&self, key: &str, c: &Cfi) {
        self.write_file(key, Some(cfi::DIR), "cfi", &|p| cfi::write(p, c));
    }

    fn take_problems(&self) -> Vec<StoreProblem> {
        std::mem::take(&mut *self.problems.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Adds one row of a part to what is being read back.
fn collect(
    r: Row<'_>,
    b: &mut Base,
    segs: &mut Vec<(u64, u64, u64)>,
    syms: &mut Vec<Sym>,
    covered: &mut Vec<(u64, u64)>,
    lines: &mut Vec<LineRange>,
) {
    match r.kind {
        "meta" => {
            let v = r.file.map(PathBuf::from);
            match r.name {
                Some("binary") => b.binary = v,
                Some("symbols_file") => b.symbols_file = v,
                Some("debug_info") => b.debug_info = v,
                Some("searched") => b.searched = r.file.map(str::to_string),
                Some("table") => {
                    b.table = match r.file {
                        Some("symtab") => Some(TableKind::Symtab),
                        Some("dynsym") => Some(TableKind::Dynsym),
                        _ => None,
                    }
                }
                _ => {}
            }
        }
        "segment" => segs.push((r.lo, r.vaddr.unwrap_or(0), r.hi.saturating_sub(r.lo))),
        "symbol" => syms.push(Sym::new(r.lo, r.hi, r.name.unwrap_or("").to_string())),
        "covered" => covered.push((r.lo, r.hi)),
        "line" => {
            let f = LineFrame {
                function: r.name.map(str::to_string),
                file: r.file.map(str::to_string),
                line: r.line,
                column: r.column,
            };
            match lines.last_mut() {
                Some(l) if l.lo == r.lo && l.hi == r.hi && r.depth.unwrap_or(0) > 0 => {
                    l.frames.push(f)
                }
                _ => lines.push(LineRange {
                    lo: r.lo,
                    hi: r.hi,
                    frames: vec![f],
                }),
            }
        }
        _ => {}
    }
}

/// One fact (see the module documentation for what each kind uses).
#[derive(Clone, Copy, Debug, Default)]
struct Row<'a> {
    kind: &'a str,
    lo: u64,
    hi: u64,
    vaddr: Option<u64>,
    depth: Option<u32>,
    name: Option<&'a str>,
    file: Option<&'a str>,
    line: Option<u32>,
    column: Option<u32>,
}

impl<'a> Row<'a> {
    fn meta(k: &'a str, v: &'a str) -> Row<'a> {
        Row {
            kind: "meta",
            name: Some(k),
            file: Some(v),
            ..Row::default()
        }
    }

    /// Feeds the row to the part's checksum: every field, with its
    /// presence, in a fixed order (a present field is a 1 byte and its
    /// value, a string's preceded by its length as a u64, integers in
    /// native byte order; an absent one a 0 byte), in one write of `buf`.
    fn hash(&self, h: &mut twox_hash::XxHash64, buf: &mut Vec<u8>) {
        fn s(b: &mut Vec<u8>, v: Option<&str>) {
            match v {
                Some(v) => {
                    b.push(1);
                    b.extend_from_slice(&(v.len() as u64).to_ne_bytes());
                    b.extend_from_slice(v.as_bytes());
                }
                None => b.push(0),
            }
        }
        fn n(b: &mut Vec<u8>, v: Option<u64>) {
            match v {
                Some(v) => {
                    b.push(1);
                    b.extend_from_slice(&v.to_ne_bytes());
                }
                None => b.push(0),
            }
        }
        buf.clear();
        s(buf, Some(self.kind));
        buf.extend_from_slice(&self.lo.to_ne_bytes());
        buf.extend_from_slice(&self.hi.to_ne_bytes());
        n(buf, self.vaddr);
        n(buf, self.depth.map(u64::from));
        s(buf, self.name);
        s(buf, self.file);
        n(buf, self.line.map(u64::from));
        n(buf, self.column.map(u64::from));
        h.write(buf);
    }
}

fn schema() -> SchemaRef {
    let u64f = |n: &str, null| Field::new(n, DataType::UInt64, null);
    let u32f = |n: &str| Field::new(n, DataType::UInt32, true);
    let s = |n: &str, null| Field::new(n, DataType::Utf8, null);
    Arc::new(Schema::new(vec![
        s("kind", false),
        u64f("lo", false),
        u64f("hi", false),
        u64f("vaddr", true),
        u32f("depth"),
        s("name", true),
        s("file", true),
        u32f("line"),
        u32f("column"),
    ]))
}

/// A part being built: columns and the checksum of the rows.
struct Rows {
    kind: StringBuilder,
    lo: UInt64Builder,
    hi: UInt64Builder,
    vaddr: UInt64Builder,
    depth: UInt32Builder,
    name: StringBuilder,
    file: StringBuilder,
    line: UInt32Builder,
    column: UInt32Builder,
    hash: twox_hash::XxHash64,
    /// A row's bytes for the checksum, reused.
    buf: Vec<u8>,
    n: u64,
}

impl Default for Rows {
    fn default() -> Self {
        Rows {
            kind: StringBuilder::new(),
            lo: UInt64Builder::new(),
            hi: UInt64Builder::new(),
            vaddr: UInt64Builder::new(),
            depth: UInt32Builder::new(),
            name: StringBuilder::new(),
            file: StringBuilder::new(),
            line: UInt32Builder::new(),
            column: UInt32Builder::new(),
            hash: twox_hash::XxHash64::with_seed(0),
            buf: Vec::new(),
            n: 0,
        }
    }
}

impl Rows {
    fn push(&mut self, r: Row<'_>) {
        r.hash(&mut self.hash, &mut self.buf);
        self.n += 1;
        self.kind.append_value(r.kind);
        self.lo.append_value(r.lo);
        self.hi.append_value(r.hi);
        self.vaddr.append_option(r.vaddr);
        self.depth.append_option(r.depth);
        self.name.append_option(r.name);
        self.file.append_option(r.file);
        self.line.append_option(r.line);
        self.column.append_option(r.column);
    }

    /// The rows as one batch, with their checksum; the builders' buffers
    /// become the batch's (a symbol table is held once, not twice, while
    /// its part is written).
    fn finish(mut self) -> Result<(RecordBatch, String), String> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.kind.finish()),
            Arc::new(self.lo.finish()),
            Arc::new(self.hi.finish()),
            Arc::new(self.vaddr.finish()),
            Arc::new(self.depth.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.file.finish()),
            Arc::new(self.line.finish()),
            Arc::new(self.column.finish()),
        ];
        let batch = RecordBatch::try_new(schema(), cols).map_err(|e| e.to_string())?;
        Ok((batch, check_value(self.n, &self.hash)))
    }
}

/// Writes `batch` as a part at `path`, with its layout `version`, its rows'
/// checksum `check` and `more` key-value metadata.
fn write_checked(
    path: &Path,
    batch: &RecordBatch,
    version: &str,
    check: String,
    more: Vec<KeyValue>,
) -> Result<(), String> {
    // A part of a few functions' facts is written uncompressed: parquet
    // sets up a zstd context per column chunk (for writing and again for
    // reading), which cost more than such a part's bytes.
    let compression = if trawl_ingest::writer::slice_bytes(batch) < SMALL_PART_BYTES {
        parquet::basic::Compression::UNCOMPRESSED
    } else {
        parquet::basic::Compression::ZSTD(Default::default())
    };
    let mut kv = vec![
        KeyValue::new(KEY_VERSION.into(), version.to_string()),
        KeyValue::new(KEY_CHECK.into(), check),
    ];
    kv.extend(more);
    // Parts are read whole: no statistics; addresses (distinct in each
    // row) plain, not dictionary-encoded (both were most of writing a
    // kernel's 120,000 symbols).
    let mut props = WriterProperties::builder()
        .set_compression(compression)
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .set_key_value_metadata(Some(kv));
    for col in ["lo", "hi", "vaddr"] {
        if batch.schema().column_with_name(col).is_some() {
            props = props.set_column_dictionary_enabled(col.into(), false);
        }
    }
    let props = props.build();
    let f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
    w.write(batch).map_err(|e| e.to_string())?;
    // Not synced: the store is a cache, and a part a crash leaves cut
    // short or empty fails its checksum and is learnt again (a sync per
    // part was a tenth of a first ingest's time).
    w.close().map(|_| ()).map_err(|e| e.to_string())
}

/// A part opened for reading, its layout `version` and columns (`schema`)
/// checked: the reader, and a lookup of its key-value metadata (the
/// checksum is `KEY_CHECK`).
fn open_checked(
    path: &Path,
    version: &str,
    schema: &SchemaRef,
) -> Result<
    (
        ParquetRecordBatchReaderBuilder<std::fs::File>,
        Vec<KeyValue>,
    ),
    String,
> {
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| e.to_string())?;
    let kv = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default();
    let found = kv_get(&kv, KEY_VERSION);
    if found.as_deref() != Some(version) {
        return Err(format!("layout version {found:?}, not {version}"));
    }
    if kv_get(&kv, KEY_CHECK).is_none() {
        return Err("no checksum".into());
    }
    if b.schema().fields() != schema.fields() {
        return Err("unexpected columns".into());
    }
    Ok((b, kv))
}

/// Every batch of a part opened with [`open_checked`], and its checksum.
fn read_batches(
    b: ParquetRecordBatchReaderBuilder<std::fs::File>,
    kv: &[KeyValue],
) -> Result<(Vec<RecordBatch>, String), String> {
    let batches = b
        .build()
        .map_err(|e| e.to_string())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok((batches, kv_get(kv, KEY_CHECK).unwrap_or_default()))
}

/// The checksum metadata of `n` rows hashed into `h`.
fn check_value(n: u64, h: &twox_hash::XxHash64) -> String {
    format!("{n}:{:016x}", h.finish())
}

fn kv_get(kv: &[KeyValue], k: &str) -> Option<String> {
    kv.iter().find(|x| x.key == k).and_then(|x| x.value.clone())
}

/// Parts holding less Arrow memory than this are not compressed.
const SMALL_PART_BYTES: usize = 1 << 20;

/// Calls `each` for every row of the part at `path`, after checking its
/// version, layout and checksum (rows are handed over only once the whole
/// part is read and checked).
fn read_rows(path: &Path, each: &mut dyn FnMut(Row<'_>)) -> Result<(), String> {
    let (b, kv) = open_checked(path, VERSION, &schema())?;
    let (batches, check) = read_batches(b, &kv)?;
    let mut h = twox_hash::XxHash64::with_seed(0);
    let mut buf = Vec::new();
    let mut n = 0u64;
    let rows_of = |b: &RecordBatch, f: &mut dyn FnMut(Row<'_>)| {
        let c = |i: usize| b.column(i);
        let kind = c(0).as_string::<i32>();
        let (lo, hi, vaddr) = (
            c(1).as_primitive::<UInt64Type>(),
            c(2).as_primitive::<UInt64Type>(),
            c(3).as_primitive::<UInt64Type>(),
        );
        let depth = c(4).as_primitive::<UInt32Type>();
        let (name, file) = (c(5).as_string::<i32>(), c(6).as_string::<i32>());
        let (line, column) = (
            c(7).as_primitive::<UInt32Type>(),
            c(8).as_primitive::<UInt32Type>(),
        );
        let o64 = |a: &arrow::array::UInt64Array, i| (!a.is_null(i)).then(|| a.value(i));
        let o32 = |a: &arrow::array::UInt32Array, i| (!a.is_null(i)).then(|| a.value(i));
        fn os(a: &arrow::array::StringArray, i: usize) -> Option<&str> {
            (!a.is_null(i)).then(|| a.value(i))
        }
        for i in 0..b.num_rows() {
            f(Row {
                kind: kind.value(i),
                lo: lo.value(i),
                hi: hi.value(i),
                vaddr: o64(vaddr, i),
                depth: o32(depth, i),
                name: os(name, i),
                file: os(file, i),
                line: o32(line, i),
                column: o32(column, i),
            });
        }
    };
    for b in &batches {
        rows_of(b, &mut |r| {
            r.hash(&mut h, &mut buf);
            n += 1;
        });
    }
    if check != check_value(n, &h) {
        return Err("checksum mismatch: the part was changed or cut short".into());
    }
    for b in &batches {
        rows_of(b, each);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> (Base, Vec<(u64, u64)>, Vec<LineRange>) {
        let base = Base {
            binary: Some("/bin/x".into()),
            symbols_file: Some("/usr/lib/debug/x.debug".into()),
            table: Some(TableKind::Symtab),
            debug_info: Some("/usr/lib/debug/x.debug".into()),
            segments: LoadSegments::from_segs(vec![(0, 0, 0x1000), (0x1000, 0x401000, 0x2000)]),
            symbols: SymbolMap::from_chosen(vec![
                Sym::new(0x401000, 0x401040, "main".into()),
                Sym::new(0x401040, 0x401100, "_ZN3foo3barEv".into()),
            ]),
            searched: Some("0123".into()),
        };
        let frame = |f: &str, l: u32| LineFrame {
            function: Some(f.into()),
            file: Some("/src/x.c".into()),
            line: Some(l),
            column: None,
        };
        let lines = vec![
            LineRange {
                lo: 0x401000,
                hi: 0x401010,
                frames: vec![frame("main", 3)],
            },
            LineRange {
                lo: 0x401010,
                hi: 0x401020,
                frames: vec![frame("inlined", 9), frame("main", 4)],
            },
        ];
        (base, vec![(0x401000, 0x401040)], lines)
    }

    #[test]
    fn parts_read_back_as_written() {
        let t = tempfile::tempdir().unwrap();
        let s = SymbolStore::open(t.path()).unwrap();
        let (base, covered, lines) = facts();
        s.save(
            "build-id-abcd",
            Part {
                base: Some(&base),
                covered: &covered,
                lines: &lines,
            },
        );
        let more = vec![LineRange {
            lo: 0x401040,
            hi: 0x401050,
            frames: vec![LineFrame {
                function: Some("foo::bar".into()),
                ..Default::default()
            }],
        }];
        s.save(
            "build-id-abcd",
            Part {
                base: None,
                covered: &[(0x401040, 0x401100)],
                lines: &more,
            },
        );
        let f = s.load("build-id-abcd").expect("the entry");
        assert_eq!(f.base.binary, base.binary);
        assert_eq!(f.base.searched, base.searched);
        assert_eq!(f.base.table, Some(TableKind::Symtab));
        assert_eq!(f.base.segments.segs(), base.segments.segs());
        assert_eq!(f.base.symbols.syms().len(), 2);
        assert_eq!(f.covered, vec![(0x401000, 0x401100)]);
        let mut want = lines.clone();
        want.extend(more);
        assert_eq!(f.lines, want);
        assert!(s.take_problems().is_empty());
        // Unknown keys and keys that are no directory name: nothing.
        assert!(s.load("build-id-ffff").is_none());
        assert!(s.load("../etc").is_none());
        s.save(
            "../etc",
            Part {
                base: Some(&base),
                covered: &[],
                lines: &[],
            },
        );
        assert!(!t.path().join("../etc").join("base").exists());
    }

    #[test]
    fn a_changed_part_is_a_problem_and_not_read() {
        let t = tempfile::tempdir().unwrap();
        let s = SymbolStore::open(t.path()).unwrap();
        let (base, covered, lines) = facts();
        s.save(
            "build-id-abcd",
            Part {
                base: Some(&base),
                covered: &covered,
                lines: &lines,
            },
        );
        let part = std::fs::read_dir(t.path().join("build-id-abcd"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        // Cut short: no footer.
        let mut b = std::fs::read(&part).unwrap();
        let n = b.len();
        b.truncate(n - 3);
        std::fs::write(&part, b).unwrap();
        assert!(s.load("build-id-abcd").is_none());
        let p = s.take_problems();
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].kind, "symbol_store_damaged");
        assert!(p[0].message.contains("learnt again"), "{p:?}");
        assert!(!part.exists(), "removed");
        // A part whose rows do not match its checksum.
        let mut rows = Rows::default();
        rows.push(Row::meta("binary", "/bin/y"));
        let (batch, check) = rows.finish().unwrap();
        write_checked(&part, &batch, VERSION, check, Vec::new()).unwrap();
        let mut kv_swapped = std::fs::read(&part).unwrap();
        // Rewrite the footer's checksum digits: same length, other value.
        let at = kv_swapped
            .windows(KEY_CHECK.len())
            .position(|w| w == KEY_CHECK.as_bytes())
            .unwrap();
        let digits = kv_swapped[at..]
            .iter()
            .position(|&c| c == b':')
            .map(|p| at + p + 1)
            .unwrap();
        kv_swapped[digits] = if kv_swapped[digits] == b'0' {
            b'1'
        } else {
            b'0'
        };
        std::fs::write(&part, kv_swapped).unwrap();
        assert!(s.load("build-id-abcd").is_none());
        let p = s.take_problems();
        assert!(p.iter().any(|m| m.message.contains("checksum")), "{p:?}");
    }

    /// The checksum of a row is the one of the parts written before it
    /// was computed in one write: the field-by-field writes of the layout
    /// (parts already in stores must keep reading back).
    #[test]
    fn row_checksum_is_the_layouts() {
        use std::hash::Hasher;
        let rows = [
            Row::meta("binary", "/usr/bin/x"),
            Row {
                kind: "line",
                lo: 0x1000,
                hi: 0x1010,
                vaddr: None,
                depth: Some(2),
                name: Some("f\u{e9}"),
                file: Some("/src/a.c"),
                line: Some(42),
                column: None,
            },
        ];
        for r in &rows {
            let mut want = twox_hash::XxHash64::with_seed(0);
            let s = |h: &mut twox_hash::XxHash64, v: Option<&str>| match v {
                Some(v) => {
                    h.write_u8(1);
                    h.write_u64(v.len() as u64);
                    h.write(v.as_bytes());
                }
                None => h.write_u8(0),
            };
            let n = |h: &mut twox_hash::XxHash64, v: Option<u64>| match v {
                Some(v) => {
                    h.write_u8(1);
                    h.write_u64(v);
                }
                None => h.write_u8(0),
            };
            s(&mut want, Some(r.kind));
            want.write_u64(r.lo);
            want.write_u64(r.hi);
            n(&mut want, r.vaddr);
            n(&mut want, r.depth.map(u64::from));
            s(&mut want, r.name);
            s(&mut want, r.file);
            n(&mut want, r.line.map(u64::from));
            n(&mut want, r.column.map(u64::from));
            let mut got = twox_hash::XxHash64::with_seed(0);
            r.hash(&mut got, &mut Vec::new());
            assert_eq!(got.finish(), want.finish(), "{:?}", r.kind);
        }
    }
}
