//! The collector: puts parsed chunks in order (instruction ordinals and line
//! numbers continue across chunks), keeps the fetch and page summaries, and
//! hands kept rows to a [`RowSink`].

use crate::diag::{Diagnostics, Position, Severity};
use crate::error::Result;

use super::fetch::FetchMap;
use super::filter::KIND_I;
use super::lackey;
use super::pages::{PageStat, PageStats};
use super::rows::RowSink;

/// What was read from one memory log, in order.
pub struct Collector {
    pub fetch: FetchMap,
    pub pages: PageStats,
    /// Instructions so far (the next chunk's ordinal base).
    pub instrs: u64,
    pub lines: u64,
    pub records: u64,
    pub filtered: u64,
    pub rows: u64,
    /// Metadata lines (valgrind's `==PID==` lines) with their line numbers.
    pub meta: Vec<(u64, String)>,
    /// Ordinal base of each chunk added so far, in order.
    bases: Vec<i64>,
    /// What ordinals count: decided by the first chunk with records.
    pub axis: Axis,
    /// Data accesses placed on the access axis so far.
    accesses: u64,
    /// The data-only log met instruction records later (warned once).
    mixed: bool,
}

/// What a memory log's ordinals count (`capture_meta.mem_x_axis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// No chunk with records yet.
    Unknown,
    /// Instructions: the log has `I` records (lackey `--trace-mem=yes`, a
    /// binary log with an instruction count).
    Instruction,
    /// Data accesses: a log without instruction records (the data-only
    /// writer of Mibu et al.; lackey's log with the `I` lines removed):
    /// a row's ordinal is its 1-based index among the log's kept data
    /// accesses, so their order survives.
    Access,
}

impl Axis {
    /// `instruction` or `access` (a log without records: `instruction`).
    pub fn name(self) -> &'static str {
        match self {
            Axis::Access => "access",
            _ => "instruction",
        }
    }
}

impl Collector {
    pub fn new(page_size: u64) -> Self {
        Collector {
            fetch: FetchMap::default(),
            pages: PageStats::new(page_size),
            instrs: 0,
            lines: 0,
            records: 0,
            filtered: 0,
            rows: 0,
            meta: Vec::new(),
            bases: Vec::new(),
            axis: Axis::Unknown,
            accesses: 0,
            mixed: false,
        }
    }

    /// Places a parsed chunk after the ones before it.
    pub fn add_chunk(
        &mut self,
        mut c: lackey::Chunk,
        diags: &mut Diagnostics,
        sink: &mut dyn RowSink,
    ) -> Result<()> {
        if self.axis == Axis::Unknown {
            if c.instrs > 0 {
                self.axis = Axis::Instruction;
            } else if !c.rows.is_empty() {
                self.axis = Axis::Access;
            }
        }
        let lbase = self.lines;
        let base = if self.axis == Axis::Access {
            if c.instrs > 0 && !self.mixed {
                self.mixed = true;
                diags.report(
                    Position::Line(lbase + 1),
                    Severity::Warning,
                    "mixed_log",
                    "instruction records in a log that began without them: ordinals stay data-access indexes",
                )?;
            }
            // Ordinals: the rows' places among the data accesses; the
            // page summary follows them.
            let page_size = self.pages.page_size;
            c.pages = PageStats::new(page_size);
            for (j, o) in c.rows.ordinal.iter_mut().enumerate() {
                *o = j as i64 + 1;
            }
            for j in 0..c.rows.len() {
                if c.rows.kind[j] != KIND_I {
                    c.pages.touch(
                        c.rows.kind[j],
                        c.rows.address[j],
                        c.rows.size[j],
                        c.rows.ordinal[j],
                    );
                }
            }
            let b = self.accesses as i64;
            self.accesses += c.rows.len() as u64;
            b
        } else {
            self.instrs as i64
        };
        self.bases.push(base);
        if base != 0 {
            for o in &mut c.rows.ordinal {
                *o += base;
            }
        }
        self.fetch.merge(c.fetch, base);
        self.pages.merge(c.pages, base);
        for p in c.problems {
            diags.report(
                Position::Line(lbase + p.line),
                Severity::Warning,
                p.kind,
                p.message,
            )?;
        }
        self.meta
            .extend(c.meta.into_iter().map(|(l, t)| (lbase + l, t)));
        self.instrs += c.instrs;
        self.lines += c.lines;
        self.records += c.records;
        self.filtered += c.filtered;
        self.rows += c.rows.len() as u64;
        if !c.rows.is_empty() {
            sink.rows(c.rows)?;
        }
        Ok(())
    }

    /// Adds fetches counted across chunks with [`chunk_key`](super::fetch::chunk_key) ordinals
    /// (the `seq` of a chunk being its place among those added).
    pub fn add_keyed_fetches(&mut self, fetch: FetchMap) {
        self.fetch.merge_keyed(fetch, &self.bases);
    }

    /// The page summary with the instruction fetches added.
    pub fn page_summary(&self) -> Vec<PageStat> {
        let mut pages = self.pages.clone();
        for (a, s) in self.fetch.sorted() {
            pages.touch_many(KIND_I, a, s.size, s.count, s.first, s.last);
        }
        pages.sorted()
    }

    /// Metadata from valgrind's banner and summary lines: (key, value).
    pub fn valgrind_meta(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (_, l) in &self.meta {
            // `==PID== text`
            let Some(rest) = l.strip_prefix("==") else {
                continue;
            };
            let Some((pid, text)) = rest.split_once("==") else {
                continue;
            };
            let text = text.trim();
            if out.is_empty() {
                out.push(("valgrind_pid".to_string(), pid.to_string()));
            }
            let mut kv = |k: &str, v: &str| out.push((k.to_string(), v.trim().to_string()));
            if let Some(v) = text.strip_prefix("Command:") {
                kv("valgrind_command", v);
            } else if let Some(v) = text.strip_prefix("Parent PID:") {
                kv("valgrind_parent_pid", v);
            } else if let Some(v) = text.strip_prefix("Exit code:") {
                kv("valgrind_exit_code", v);
            } else if let Some(v) = text.strip_prefix("guest instrs:") {
                kv("valgrind_guest_instrs", &v.replace(',', ""));
            } else if let Some(v) = text.strip_prefix("Using ") {
                kv("valgrind_version", v.split(" and ").next().unwrap_or(v));
            } else if text.ends_with("an example Valgrind tool") {
                kv("valgrind_tool", text.split(',').next().unwrap_or(text));
            }
        }
        let log: Vec<&str> = self.meta.iter().map(|(_, l)| l.as_str()).collect();
        if !log.is_empty() {
            out.push(("valgrind_log".to_string(), log.join("\n")));
        }
        out
    }
}
