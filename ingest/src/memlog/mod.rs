//! Memory access logs: valgrind lackey text (`--trace-mem=yes`) and trawl's
//! binary memory log → `mem_access`, `mem_fetch`, `mem_page`; saved
//! `/proc/PID/maps` → `mem_map` (Mibu et al., memory access analysis for
//! memory saving).
//!
//! - [`lackey`]: text lines → [`lackey::Chunk`]s of typed records, in
//!   parallel over line-aligned blocks (no Arrow).
//! - [`binary`]: the binary log format: [`binary::Writer`] (records →
//!   bytes) and [`binary::read`] (bytes → records).
//! - [`maps`]: `/proc/PID/maps` lines → mappings.
//! - [`Collector`]: puts chunks in order (instruction ordinals and line
//!   numbers continue across chunks), keeps per-address fetch and per-page
//!   summaries, and hands rows to a [`RowSink`].
//! - [`convert`]: rows and summaries → Arrow batches of the tables.
//!
//! Every record gets an instruction **ordinal**: for a data access the
//! number of `I` records before it (so a load or store carries the 1-based
//! index of the instruction that made it), for a fetch the 1-based index of
//! its instruction. Filters (address ranges, kinds) drop records while
//! reading; ordinals still count every instruction.

pub mod binary;
pub mod convert;
pub mod lackey;
pub mod maps;
pub mod pool;

use std::io::Read;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::diag::{Diagnostics, Position, Severity};
use crate::error::{Error, Result};

pub const KIND_I: u8 = 0;
pub const KIND_L: u8 = 1;
pub const KIND_S: u8 = 2;
pub const KIND_M: u8 = 3;
/// The kind letters, by kind code.
pub const KIND_LETTERS: [&str; 4] = ["I", "L", "S", "M"];

/// Which records to keep while reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// Bit `1 << KIND_*` per kind kept.
    pub kinds: u8,
    /// Address ranges `[lo, hi)`; empty keeps every address.
    pub ranges: Vec<(u64, u64)>,
    /// Keep each instruction fetch as a `mem_access` row too (not only
    /// the per-address summary `mem_fetch`).
    pub fetch_rows: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            kinds: 0b1111,
            ranges: Vec::new(),
            fetch_rows: false,
        }
    }
}

impl Filter {
    #[inline]
    pub fn keep_addr(&self, a: u64) -> bool {
        self.ranges.is_empty() || self.ranges.iter().any(|&(lo, hi)| a >= lo && a < hi)
    }

    /// Parses `ILSM`-style kind letters.
    pub fn parse_kinds(s: &str) -> std::result::Result<u8, String> {
        let mut m = 0u8;
        for c in s.chars() {
            m |= match c.to_ascii_uppercase() {
                'I' => 1 << KIND_I,
                'L' => 1 << KIND_L,
                'S' => 1 << KIND_S,
                'M' => 1 << KIND_M,
                ',' | ' ' => 0,
                _ => {
                    return Err(format!(
                        "{s:?}: kinds are letters of ILSM (I fetch, L load, S store, M modify)"
                    ))
                }
            };
        }
        if m == 0 {
            return Err(format!("{s:?}: no kind given (letters of ILSM)"));
        }
        Ok(m)
    }

    /// Parses `LO-HI` / `LO..HI` (hex with or without `0x`, `HI`
    /// exclusive) or `LO+LEN`.
    pub fn parse_range(s: &str) -> std::result::Result<(u64, u64), String> {
        let num = |t: &str| {
            let t = t.trim();
            let h = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u64::from_str_radix(h, 16).map_err(|_| format!("{t:?} is not a hex address"))
        };
        let (lo, hi) = if let Some((a, b)) = s.split_once("..") {
            (num(a)?, num(b)?)
        } else if let Some((a, b)) = s.split_once('+') {
            let lo = num(a)?;
            let len = parse_size(b)?;
            (lo, lo.saturating_add(len))
        } else if let Some((a, b)) = s.split_once('-') {
            (num(a)?, num(b)?)
        } else {
            return Err(format!(
                "{s:?}: give an address range as LO-HI (hex, HI exclusive) or LO+LEN"
            ));
        };
        if hi <= lo {
            return Err(format!("{s:?}: the range is empty"));
        }
        Ok((lo, hi))
    }

    /// `ILSM` letters of the kinds kept.
    pub fn kind_letters(&self) -> String {
        (0..4)
            .filter(|k| self.kinds & (1 << k) != 0)
            .map(|k| KIND_LETTERS[k as usize])
            .collect()
    }
}

/// A byte count: `4096`, `4k`, `2M`, `0x1000`.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).map_err(|_| format!("{s:?} is not a size"));
    }
    let (digits, mult) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((k, _)) => {
            let unit = t[k..].to_ascii_lowercase();
            let m = match unit.trim_end_matches(['b', 'i']).trim() {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                _ => return Err(format!("{s:?}: sizes are bytes with an optional k, M or G")),
            };
            (&t[..k], m)
        }
        None => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a size"))
}

/// Kept records as columns (rows of `mem_access`).
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub ordinal: Vec<i64>,
    pub kind: Vec<u8>,
    pub address: Vec<u64>,
    pub size: Vec<u32>,
}

impl Rows {
    #[inline(always)]
    pub fn push(&mut self, ord: i64, kind: u8, addr: u64, size: u32) {
        self.ordinal.push(ord);
        self.kind.push(kind);
        self.address.push(addr);
        self.size.push(size);
    }

    pub fn reserve(&mut self, n: usize) {
        self.ordinal.reserve(n);
        self.kind.reserve(n);
        self.address.reserve(n);
        self.size.reserve(n);
    }

    pub fn len(&self) -> usize {
        self.ordinal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ordinal.is_empty()
    }
}

/// Instruction fetches of one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchStat {
    pub size: u32,
    pub count: u64,
    pub first: i64,
    pub last: i64,
}

/// Instruction fetches aggregated per address. A direct-mapped cache of
/// recent addresses sits in front of the hash map: loops fetch the same
/// instructions again and again. Nothing is allocated until the first
/// fetch.
#[derive(Clone, Debug, Default)]
pub struct FetchMap {
    index: FxHashMap<u64, u32>,
    entries: Vec<(u64, FetchStat)>,
    /// `FETCH_CACHE` (address, entry) pairs once used.
    cache: Vec<(u64, u32)>,
}

const FETCH_CACHE: usize = 1 << 13;

impl FetchMap {
    #[inline(always)]
    pub fn add(&mut self, addr: u64, size: u32, count: u64, first: i64, last: i64) {
        if self.cache.is_empty() {
            self.cache = vec![(u64::MAX, 0); FETCH_CACHE];
        }
        let h = ((addr ^ (addr >> 13)) as usize) & (FETCH_CACHE - 1);
        let i = if self.cache[h].0 == addr {
            self.cache[h].1 as usize
        } else {
            let n = self.entries.len() as u32;
            let entries = &mut self.entries;
            let i = *self.index.entry(addr).or_insert_with(|| {
                entries.push((
                    addr,
                    FetchStat {
                        size,
                        count: 0,
                        first,
                        last,
                    },
                ));
                n
            });
            self.cache[h] = (addr, i);
            i as usize
        };
        let s = &mut self.entries[i].1;
        // Counts come from binary logs too: a crafted one must not overflow.
        s.count = s.count.saturating_add(count);
        if first < s.first {
            s.first = first;
        }
        if last > s.last {
            s.last = last;
        }
        if size > s.size {
            s.size = size;
        }
    }

    /// Adds the fetches of a later chunk whose ordinals start at `base`.
    pub fn merge(&mut self, other: FetchMap, base: i64) {
        for (a, s) in other.entries {
            self.add(
                a,
                s.size,
                s.count,
                s.first.saturating_add(base),
                s.last.saturating_add(base),
            );
        }
    }

    /// Adds fetches whose ordinals are [`chunk_key`]s: chunk `seq`'s
    /// ordinals start at `bases[seq]`.
    pub fn merge_keyed(&mut self, other: FetchMap, bases: &[i64]) {
        let global = |k: i64| {
            let seq = (k >> 32) as usize;
            bases.get(seq).copied().unwrap_or(0) + (k & 0xffff_ffff)
        };
        for (a, s) in other.entries {
            self.add(a, s.size, s.count, global(s.first), global(s.last));
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// (address, stat) sorted by address.
    pub fn sorted(&self) -> Vec<(u64, FetchStat)> {
        let mut v = self.entries.clone();
        v.sort_unstable_by_key(|e| e.0);
        v
    }
}

/// Instruction fetches counted by a parser, block after block: a
/// direct-mapped table of whole statistics (one 32-byte slot per address,
/// 256 KB, allocated on first use) for `I` lines the lackey parser's line
/// cache does not take, and the fetches pushed out of either cache.
///
/// Pushed-out statistics are appended to a log (a sequential write) and,
/// at the end of each block, sorted by address and merged into an
/// address-sorted aggregate: adding each to a hash map as it came cost
/// two or three cache misses apiece (≈60 ns; 2.2 M of them on the 1.1 GB
/// bench log, 7 % of the ingest), a sort and a merge a few ns.
#[derive(Default)]
pub struct FetchCache {
    slots: Vec<FetchSlot>,
    /// Pushed-out statistics not merged yet, ordinals keyed.
    log: Vec<(u64, FetchStat)>,
    /// Everything merged so far, sorted by address, one entry each.
    agg: Vec<(u64, FetchStat)>,
    spare: Vec<(u64, FetchStat)>,
    /// Added to ordinals as they go into the log ([`chunk_key`]).
    key: i64,
}

/// Chunk `seq`'s local ordinal `ord` as one number that orders like the
/// global ordinal (chunks are in input order and hold fewer than 2^32
/// instructions): `seq << 32 | ord`. Lets a parser thread keep one fetch
/// aggregate across the blocks it parses, whatever their bases turn out
/// to be ([`FetchMap::merge_keyed`]).
pub fn chunk_key(seq: u32) -> i64 {
    (seq as i64) << 32
}

#[derive(Clone, Copy)]
struct FetchSlot {
    addr: u64,
    first: i64,
    last: i64,
    count: u32,
    size: u32,
}

const FETCH_SLOTS: usize = 1 << 13;
const NO_ADDR: u64 = u64::MAX;
/// Log entries merged early, so a block of unusual lines stays bounded.
const FETCH_LOG_MAX: usize = 1 << 16;

const EMPTY_SLOT: FetchSlot = FetchSlot {
    addr: NO_ADDR,
    first: 0,
    last: 0,
    count: 0,
    size: 0,
};

/// Adds `b`'s fetches to `a` (same address).
#[inline]
fn combine(a: &mut FetchStat, b: &FetchStat) {
    a.count = a.count.saturating_add(b.count);
    a.first = a.first.min(b.first);
    a.last = a.last.max(b.last);
    a.size = a.size.max(b.size);
}

impl FetchCache {
    /// `count` fetches of `addr` counted elsewhere (first and last at
    /// the given ordinals).
    #[inline]
    pub fn add_counted(&mut self, addr: u64, size: u32, count: u64, first: i64, last: i64) {
        self.log.push((
            addr,
            FetchStat {
                size,
                count,
                first: first + self.key,
                last: last + self.key,
            },
        ));
        if self.log.len() >= FETCH_LOG_MAX {
            self.merge_log();
        }
    }

    /// Ordinals from now on are local to chunk `key` ([`chunk_key`]).
    pub fn set_key(&mut self, key: i64) {
        self.key = key;
    }

    /// One fetch of `addr` at ordinal `ord` (ordinals grow).
    #[inline(always)]
    pub fn add(&mut self, addr: u64, size: u32, ord: i64) {
        if self.slots.is_empty() {
            self.slots = vec![EMPTY_SLOT; FETCH_SLOTS];
        }
        let h = ((addr ^ (addr >> 13)) as usize) & (FETCH_SLOTS - 1);
        let s = &mut self.slots[h];
        if s.addr == addr && s.count < u32::MAX {
            s.count += 1;
            s.last = ord;
            if size > s.size {
                s.size = size;
            }
            return;
        }
        let old = *s;
        *s = FetchSlot {
            addr,
            first: ord,
            last: ord,
            count: 1,
            size,
        };
        if old.addr != NO_ADDR {
            self.add_counted(old.addr, old.size, old.count as u64, old.first, old.last);
        }
    }

    /// Sorts the log by address and merges it into the aggregate.
    fn merge_log(&mut self) {
        if self.log.is_empty() {
            return;
        }
        self.log.sort_unstable_by_key(|e| e.0);
        let out = &mut self.spare;
        out.clear();
        out.reserve(self.agg.len() + self.log.len());
        let (mut i, mut j) = (0, 0);
        let (a, l) = (&self.agg, &self.log);
        while i < a.len() || j < l.len() {
            let e = if j == l.len() || (i < a.len() && a[i].0 <= l[j].0) {
                i += 1;
                &a[i - 1]
            } else {
                j += 1;
                &l[j - 1]
            };
            match out.last_mut() {
                Some(last) if last.0 == e.0 => combine(&mut last.1, &e.1),
                _ => out.push(*e),
            }
        }
        std::mem::swap(&mut self.agg, &mut self.spare);
        self.log.clear();
    }

    /// Moves the slots' fetches into the aggregate (at the end of a chunk).
    pub fn end_chunk(&mut self) {
        for i in 0..self.slots.len() {
            let s = std::mem::replace(&mut self.slots[i], EMPTY_SLOT);
            if s.addr != NO_ADDR {
                self.add_counted(s.addr, s.size, s.count as u64, s.first, s.last);
            }
        }
        self.merge_log();
    }

    /// Everything counted, as a map.
    pub fn finish(mut self) -> FetchMap {
        self.end_chunk();
        let mut m = FetchMap::default();
        for (a, s) in self.agg {
            m.add(a, s.size, s.count, s.first, s.last);
        }
        m
    }
}

/// Accesses of one page.
#[derive(Clone, Debug)]
pub struct PageStat {
    /// Address of the page's first byte.
    pub page: u64,
    /// Accesses per kind code (an access that crosses into the next page
    /// counts on both).
    pub counts: [u64; 4],
    /// Bytes accessed, summed over the accesses (the part inside the page).
    pub bytes: u64,
    pub first: i64,
    pub last: i64,
    /// One bit per byte of the page: touched at least once.
    pub touched: Vec<u64>,
}

impl PageStat {
    pub fn bytes_touched(&self) -> u64 {
        self.touched.iter().map(|w| w.count_ones() as u64).sum()
    }
}

/// Accesses aggregated per page of `page_size` bytes (a power of two).
#[derive(Clone, Debug)]
pub struct PageStats {
    pub page_size: u64,
    shift: u32,
    index: FxHashMap<u64, u32>,
    pub pages: Vec<PageStat>,
    /// Direct-mapped (page, index) cache in front of `index`: accesses
    /// alternate between a few stack, heap and data pages.
    recent: [(u64, u32); PAGE_CACHE],
}

const PAGE_CACHE: usize = 64;

/// Smallest and largest page sizes trawl keeps per-byte maps for.
pub const MIN_PAGE_SIZE: u64 = 64;
pub const MAX_PAGE_SIZE: u64 = 2 << 20;

impl PageStats {
    pub fn new(page_size: u64) -> Self {
        debug_assert!(page_size.is_power_of_two());
        PageStats {
            page_size,
            shift: page_size.trailing_zeros(),
            index: FxHashMap::default(),
            pages: Vec::new(),
            recent: [(u64::MAX, 0); PAGE_CACHE],
        }
    }

    #[inline(always)]
    fn slot(&mut self, page: u64) -> usize {
        let h = (page as usize) & (PAGE_CACHE - 1);
        if self.recent[h].0 == page {
            return self.recent[h].1 as usize;
        }
        let n = self.pages.len() as u32;
        let words = (self.page_size / 64).max(1) as usize;
        let shift = self.shift;
        let pages = &mut self.pages;
        let i = *self.index.entry(page).or_insert_with(|| {
            pages.push(PageStat {
                page: page << shift,
                counts: [0; 4],
                bytes: 0,
                first: i64::MAX,
                last: i64::MIN,
                touched: vec![0; words],
            });
            n
        });
        self.recent[h] = (page, i);
        i as usize
    }

    /// Counts `count` accesses of `kind` to `[addr, addr+size)` made first
    /// at ordinal `first` and last at `last`.
    #[inline(always)]
    pub fn touch_many(
        &mut self,
        kind: u8,
        addr: u64,
        size: u32,
        count: u64,
        first: i64,
        last: i64,
    ) {
        let end = addr.saturating_add(size.max(1) as u64);
        let mut a = addr;
        loop {
            let page = a >> self.shift;
            let base = page << self.shift;
            let pend = base.saturating_add(self.page_size);
            let e = end.min(pend);
            let i = self.slot(page);
            let st = &mut self.pages[i];
            st.counts[kind as usize] = st.counts[kind as usize].saturating_add(count);
            if first < st.first {
                st.first = first;
            }
            if last > st.last {
                st.last = last;
            }
            if size > 0 {
                st.bytes = st.bytes.saturating_add((e - a).saturating_mul(count));
                set_bits(&mut st.touched, a - base, e - base);
            }
            if e >= end || e == pend && pend == u64::MAX {
                break;
            }
            a = e;
        }
    }

    #[inline(always)]
    pub fn touch(&mut self, kind: u8, addr: u64, size: u32, ord: i64) {
        // The usual access: 1 to 64 bytes inside one 64-byte word of the
        // page's byte map (so inside the page): no loop.
        let off = addr & (self.page_size - 1);
        let bit = off % 64;
        if size >= 1 && bit + size as u64 <= 64 {
            let i = self.slot(addr >> self.shift);
            let st = &mut self.pages[i];
            st.counts[kind as usize & 3] += 1;
            st.first = st.first.min(ord);
            st.last = st.last.max(ord);
            st.bytes += size as u64;
            if let Some(w) = st.touched.get_mut((off / 64) as usize) {
                *w |= (u64::MAX >> (64 - size)) << bit;
            }
            return;
        }
        self.touch_many(kind, addr, size, 1, ord, ord)
    }

    /// Adds the pages of a later chunk whose ordinals start at `base`.
    pub fn merge(&mut self, other: PageStats, base: i64) {
        debug_assert_eq!(self.page_size, other.page_size);
        for p in other.pages {
            let i = self.slot(p.page >> self.shift);
            let st = &mut self.pages[i];
            for k in 0..4 {
                st.counts[k] = st.counts[k].saturating_add(p.counts[k]);
            }
            st.bytes = st.bytes.saturating_add(p.bytes);
            st.first = st.first.min(p.first.saturating_add(base));
            st.last = st.last.max(p.last.saturating_add(base));
            for (w, o) in st.touched.iter_mut().zip(&p.touched) {
                *w |= o;
            }
        }
    }

    /// Pages sorted by address.
    pub fn sorted(mut self) -> Vec<PageStat> {
        self.pages.sort_unstable_by_key(|p| p.page);
        self.pages
    }
}

/// Sets bits `[from, to)` of a bitmap.
#[inline(always)]
fn set_bits(words: &mut [u64], from: u64, to: u64) {
    let (mut f, t) = (from as usize, to as usize);
    while f < t {
        let w = f / 64;
        let b = f % 64;
        let n = (t - f).min(64 - b);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << b
        };
        if let Some(x) = words.get_mut(w) {
            *x |= mask;
        }
        f += n;
    }
}

/// A line that was not a record, before it is placed in the input.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Line in its chunk, 1-based.
    pub line: u64,
    pub kind: &'static str,
    pub message: String,
}

/// Where kept rows go: the `mem_access` converter, or the binary writer.
pub trait RowSink {
    fn rows(&mut self, rows: Rows) -> Result<()>;
}

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

    /// Adds fetches counted across chunks with [`chunk_key`] ordinals
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

/// Bytes of text per parsed block; blocks are cut at line ends and parsed
/// two per thread at a time, so memory stays bounded whatever the input
/// size.
pub const BLOCK_BYTES: usize = 8 << 20;

/// Lackey text to read.
pub enum TextSource {
    /// Standard input, a decompressor, or a file that cannot be mapped:
    /// read by a thread of its own into recycled blocks.
    Stream(Box<dyn Read + Send>),
    /// A regular file mapped into memory: blocks are parsed in place (no
    /// copy out of the page cache) and released once parsed, so resident
    /// memory stays a few blocks whatever the file size. Like every
    /// reader of mapped files (ripgrep, perf), this assumes the file is not
    /// truncated while it is read.
    Mapped(memmap2::Mmap),
}

impl TextSource {
    /// The file at `path`, mapped when it is a non-empty regular file.
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::File::open(path)?;
        let meta = f.metadata()?;
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: a read-only map of a regular file; see `Mapped`.
            if let Ok(m) = unsafe { memmap2::Mmap::map(&f) } {
                return Ok(TextSource::Mapped(m));
            }
        }
        Ok(TextSource::Stream(Box::new(f)))
    }
}

/// What a block source has next.
enum NextBlock<B> {
    Block(B),
    /// Nothing yet (only when not asked to wait).
    NotYet,
    End,
}

/// Line-aligned blocks of text, handed back once parsed.
trait Blocks {
    type B: AsRef<[u8]> + Send;
    fn next(&mut self, wait: bool) -> NextBlock<Self::B>;
    /// Hands a parsed block back; `Err` when the ingest was cancelled.
    fn done(&mut self, b: Self::B) -> crate::error::Result<()>;
}

/// Blocks cut by a reader thread, buffers recycled.
struct StreamBlocks {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    back: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Blocks for StreamBlocks {
    type B = Vec<u8>;
    fn next(&mut self, wait: bool) -> NextBlock<Vec<u8>> {
        use std::sync::mpsc::TryRecvError;
        if wait {
            return self.rx.recv().map_or(NextBlock::End, NextBlock::Block);
        }
        match self.rx.try_recv() {
            Ok(b) => NextBlock::Block(b),
            Err(TryRecvError::Empty) => NextBlock::NotYet,
            Err(TryRecvError::Disconnected) => NextBlock::End,
        }
    }
    fn done(&mut self, b: Vec<u8>) -> crate::error::Result<()> {
        let _ = self.back.send(b);
        Ok(())
    }
}

/// Blocks of a mapped file, cut at line ends; a parsed block's pages are
/// dropped from the process (MADV_DONTNEED; the page cache keeps them).
struct MappedBlocks<'a> {
    map: &'a memmap2::Mmap,
    at: usize,
    /// Advanced to the end of every block parsed.
    progress: Option<&'a crate::progress::Progress>,
}

impl<'a> Blocks for MappedBlocks<'a> {
    type B = &'a [u8];
    fn next(&mut self, _wait: bool) -> NextBlock<&'a [u8]> {
        let all: &'a [u8] = self.map;
        if self.at >= all.len() {
            return NextBlock::End;
        }
        let mut end = (self.at + BLOCK_BYTES).min(all.len());
        if end < all.len() {
            // A "line" longer than a block is garbage: parsed as is (it
            // is reported).
            if let Some(k) = memchr::memrchr(b'\n', &all[self.at..end]) {
                end = self.at + k + 1;
            }
        }
        let b = &all[self.at..end];
        self.at = end;
        NextBlock::Block(b)
    }
    fn done(&mut self, b: &'a [u8]) -> crate::error::Result<()> {
        let off = b.as_ptr() as usize - self.map.as_ptr() as usize;
        // SAFETY: the map is read-only and file-backed: pages dropped here
        // read the same bytes from the page cache if touched again (the
        // page shared with the next block is).
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, b.len())
        };
        match self.progress {
            Some(p) => p.at((off + b.len()) as u64),
            None => Ok(()),
        }
    }
}

/// Reads lackey text from `input` into `collector` and `sink`. Returns
/// the bytes read. Blocks are parsed two per thread at a time and put in
/// order here.
pub fn read_lackey(
    input: &mut TextSource,
    name: &str,
    filter: &Filter,
    collector: &mut Collector,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
    progress: Option<&crate::progress::Progress>,
) -> Result<u64> {
    use std::sync::mpsc::{channel, sync_channel};
    let batch = rayon::current_num_threads().max(1) * 2;
    let input = match input {
        TextSource::Mapped(map) => {
            let _ = map.advise(memmap2::Advice::Sequential);
            let mut blocks = MappedBlocks {
                map,
                at: 0,
                progress,
            };
            parse_blocks(&mut blocks, batch, filter, collector, diags, sink)?;
            return Ok(map.len() as u64);
        }
        TextSource::Stream(r) => &mut **r,
    };
    let (tx, rx) = sync_channel::<Vec<u8>>(batch);
    let (back_tx, back_rx) = channel::<Vec<u8>>();
    std::thread::scope(|sc| -> Result<u64> {
        let reader = sc.spawn(move || -> std::io::Result<u64> {
            let mut carry: Vec<u8> = Vec::new();
            let mut total = 0u64;
            loop {
                let mut b = back_rx.try_recv().unwrap_or_default();
                b.clear();
                b.extend_from_slice(&carry);
                carry.clear();
                b.reserve(BLOCK_BYTES + 4096);
                let want = BLOCK_BYTES.saturating_sub(b.len()) as u64;
                let got = (&mut *input).take(want).read_to_end(&mut b)?;
                total += got as u64;
                let eof = (got as u64) < want;
                if !eof {
                    // A "line" longer than a block is garbage: parse it
                    // as is (it is reported).
                    if let Some(k) = memchr::memrchr(b'\n', &b) {
                        carry.extend_from_slice(&b[k + 1..]);
                        b.truncate(k + 1);
                    }
                }
                if !b.is_empty() && tx.send(b).is_err() {
                    break;
                }
                if eof {
                    break;
                }
            }
            Ok(total)
        });
        let mut blocks = StreamBlocks { rx, back: back_tx };
        let result = parse_blocks(&mut blocks, batch, filter, collector, diags, sink);
        drop(blocks);
        let total = reader
            .join()
            .map_err(|_| Error::io(name, std::io::Error::other("reader thread panicked")))?
            .map_err(|e| Error::io(name, e))?;
        result.map(|_| total)
    })
}

/// Parses `blocks` on the rayon pool as they arrive, up to `inflight` at
/// a time, and hands them to the collector in input order; the pool never
/// waits for the collector.
fn parse_blocks<S: Blocks>(
    blocks: &mut S,
    inflight: usize,
    filter: &Filter,
    collector: &mut Collector,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
) -> Result<()> {
    use std::sync::mpsc::channel;
    let page_size = collector.pages.page_size;
    let (res_tx, res_rx) = channel::<(u64, lackey::Chunk, S::B)>();
    // Each parse takes a fetch aggregate (line cache and fetch map) from
    // here and puts it back: fetches are counted in a few maps that live
    // through the whole input, with chunk-keyed ordinals, rather than in
    // a new map per block merged into the collector's.
    let aggs = std::sync::Mutex::new(Vec::<lackey::FetchAgg>::new());
    let aggs = &aggs;
    let result = rayon::in_place_scope(|scope| -> Result<()> {
        let (mut sent, mut next) = (0u64, 0u64);
        let mut eof = false;
        let mut ready = std::collections::BTreeMap::new();
        loop {
            while !eof && sent - next < inflight as u64 {
                let b = match blocks.next(sent == next) {
                    NextBlock::Block(b) => b,
                    NextBlock::NotYet => break,
                    NextBlock::End => {
                        eof = true;
                        break;
                    }
                };
                let (seq, res_tx) = (sent, res_tx.clone());
                sent += 1;
                scope.spawn(move |_| {
                    let taken = aggs.lock().unwrap_or_else(|p| p.into_inner()).pop();
                    let mut agg = taken.unwrap_or_default();
                    let c = lackey::parse_chunk_into(
                        b.as_ref(),
                        filter,
                        page_size,
                        &mut agg,
                        seq as u32,
                    );
                    aggs.lock().unwrap_or_else(|p| p.into_inner()).push(agg);
                    let _ = res_tx.send((seq, c, b));
                });
            }
            if sent == next {
                return Ok(());
            }
            let Ok((seq, c, b)) = res_rx.recv() else {
                return Ok(());
            };
            ready.insert(seq, (c, b));
            while let Some((c, b)) = ready.remove(&next) {
                next += 1;
                blocks.done(b)?;
                collector.add_chunk(c, diags, sink)?;
            }
        }
    });
    result?;
    // A poisoned lock still holds whole aggregates (push and pop only).
    let aggs = std::mem::take(&mut *aggs.lock().unwrap_or_else(|p| p.into_inner()));
    for agg in aggs {
        collector.add_keyed_fetches(agg.into_map());
    }
    Ok(())
}

/// How a memory log is read: the filters and the page size of `mem_page`.
#[derive(Clone, Debug, Default)]
pub struct MemOptions {
    pub filter: Filter,
    /// Page size for `mem_page` (a power of two); default 4096, or the
    /// binary log's.
    pub page_size: Option<u64>,
}

impl MemOptions {
    pub fn check(&self) -> std::result::Result<(), String> {
        if let Some(p) = self.page_size {
            if !p.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&p) {
                return Err(format!(
                    "page size {p}: a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE} bytes"
                ));
            }
        }
        Ok(())
    }
}

/// What one memory log held.
pub struct MemStats {
    pub bytes: u64,
    /// Records (text: lines that were records; binary: access records read).
    pub records: u64,
    /// Rows written to `mem_access`.
    pub rows: u64,
    /// `capture_meta` pairs of the input.
    pub meta: Vec<(String, String)>,
}

fn filter_meta(c: &Collector, f: &Filter, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut m = vec![
        ("mem_page_size".to_string(), c.pages.page_size.to_string()),
        ("mem_kinds".to_string(), f.kind_letters()),
        (
            "mem_ranges".to_string(),
            f.ranges
                .iter()
                .map(|(lo, hi)| format!("{lo:#x}-{hi:#x}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("mem_fetch_rows".to_string(), f.fetch_rows.to_string()),
        ("mem_instructions".to_string(), c.instrs.to_string()),
        // What `mem_access.ordinal` counts (a data-only log: accesses).
        (
            "mem_x_axis".to_string(),
            if c.axis == Axis::Access || (c.instrs == 0 && c.rows > 0) {
                "access"
            } else {
                "instruction"
            }
            .to_string(),
        ),
        ("mem_lines".to_string(), c.lines.to_string()),
        ("mem_filtered".to_string(), c.filtered.to_string()),
    ];
    m.extend(extra.iter().cloned());
    m.extend(c.valgrind_meta());
    m
}

/// Reads a lackey log (text, maybe decompressed already) into `sink`, with
/// the page and fetch summaries left in the returned collector.
pub fn read_text(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
    progress: Option<&crate::progress::Progress>,
) -> Result<(Collector, u64)> {
    let mut c = Collector::new(opts.page_size.unwrap_or(4096));
    let bytes = read_lackey(input, name, &opts.filter, &mut c, diags, sink, progress)?;
    if c.records == 0 {
        diags.report(
            Position::None,
            Severity::Warning,
            "no_records",
            "no memory access records (was lackey run with --trace-mem=yes?)",
        )?;
    }
    Ok((c, bytes))
}

/// Ingests one lackey text log.
pub fn ingest_text(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    conv: &mut convert::MemConverter,
    diags: &mut Diagnostics,
    progress: Option<&crate::progress::Progress>,
) -> Result<MemStats> {
    let (c, bytes) = read_text(input, name, opts, diags, conv, progress)?;
    conv.end_source(&c)?;
    Ok(MemStats {
        bytes,
        records: c.records,
        rows: c.rows,
        meta: filter_meta(&c, &opts.filter, &[("mem_format".into(), "lackey".into())]),
    })
}

/// A diagnostic kind written by a converter, as a static name.
fn static_kind(k: &str) -> &'static str {
    match k {
        "truncated_line" => "truncated_line",
        "bad_address" => "bad_address",
        "bad_record" => "bad_record",
        "unknown_record" => "unknown_record",
        "no_records" => "no_records",
        _ => "converter_diagnostic",
    }
}

/// Ingests one binary memory log, narrowing its filters with `opts`.
pub fn ingest_binary(
    input: &mut dyn Read,
    opts: &MemOptions,
    conv: &mut convert::MemConverter,
    diags: &mut Diagnostics,
) -> Result<MemStats> {
    let (c, stats) = read_binary(input, opts, diags, conv)?;
    conv.end_source(&c)?;
    Ok(stats)
}

/// Reads a binary memory log into `sink`, narrowing its filters with
/// `opts`, with the page and fetch summaries left in the returned
/// collector. Blocks are read one after another ([`binary::read_block`])
/// and their accesses decoded in parallel, two blocks per thread at a
/// time.
pub fn read_binary(
    input: &mut dyn Read,
    opts: &MemOptions,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
) -> Result<(Collector, MemStats)> {
    let (header, mut off) = match binary::read_header(input) {
        Ok(h) => h,
        Err(e) => {
            return Err(Error::BadInput {
                path: diags.source().into(),
                offset: e.offset,
                message: e.message,
            })
        }
    };
    let page_size = opts.page_size.unwrap_or(header.page_size as u64);
    if !page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(Error::BadInput {
            path: diags.source().into(),
            offset: 12,
            message: format!("page size {page_size} is not a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"),
        });
    }
    let mut filter = opts.filter.clone();
    filter.kinds &= header.filter.kinds;
    if opts.filter.fetch_rows && !header.filter.fetch_rows {
        diags.report(
            Position::Byte(17),
            Severity::Warning,
            "no_fetch_rows",
            "fetch rows were asked for but the binary log was written without them (trawl convert --fetch-rows): only the per-address summary is available",
        )?;
        filter.fetch_rows = false;
    }
    let mut c = Collector::new(page_size);
    let threads = rayon::current_num_threads().max(1);
    let mut pending: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut ended = false;
    let mut records = 0u64;
    let flush = |pending: &mut Vec<(Vec<u8>, u64)>,
                 c: &mut Collector,
                 sink: &mut dyn RowSink|
     -> Result<()> {
        let decoded: Vec<(Rows, PageStats)> = pending
            .par_iter()
            .map(|(raw, base)| {
                let mut rows = Rows::pooled(0);
                // Kinds were checked when the block was read.
                let _ = binary::decode_accesses(raw, *base, &filter, &mut rows);
                let mut pages = PageStats::new(page_size);
                for i in 0..rows.len() {
                    if rows.kind[i] != KIND_I {
                        pages.touch(rows.kind[i], rows.address[i], rows.size[i], rows.ordinal[i]);
                    }
                }
                (rows, pages)
            })
            .collect();
        pending.clear();
        for (rows, pages) in decoded {
            c.pages.merge(pages, 0);
            c.rows += rows.len() as u64;
            if !rows.is_empty() {
                sink.rows(rows)?;
            }
        }
        Ok(())
    };
    loop {
        match binary::read_block(input, off) {
            Ok(None) => break,
            Ok(Some((block, next))) => {
                match block {
                    binary::Block::Accesses {
                        raw,
                        count,
                        base,
                        offset,
                    } => {
                        // Validate kinds here so a bad record names its block.
                        if let Some(k) = raw
                            .chunks_exact(binary::RECORD_SIZE)
                            .position(|r| r[14] > 3)
                        {
                            diags.report(
                                Position::Byte(offset),
                                Severity::Error,
                                "corrupt",
                                format!("record {k} of the block at byte {offset} has kind {} (0–3 expected): block skipped", raw[k * binary::RECORD_SIZE + 14]),
                            )?;
                        } else {
                            records += count as u64;
                            pending.push((raw, base));
                            if pending.len() >= threads * 2 {
                                flush(&mut pending, &mut c, sink)?;
                            }
                        }
                    }
                    binary::Block::Fetch(v) => {
                        let keep_i = filter.kinds & (1 << KIND_I) != 0;
                        for (a, s) in v {
                            if keep_i && filter.keep_addr(a) {
                                c.fetch.add(a, s.size, s.count, s.first, s.last);
                            }
                        }
                    }
                    binary::Block::Meta(m) => c.meta.extend(m),
                    binary::Block::Diag(d) => {
                        for (line, kind, msg) in d {
                            diags.report(
                                Position::Line(line),
                                Severity::Warning,
                                static_kind(&kind),
                                msg,
                            )?;
                        }
                    }
                    binary::Block::End { instrs, lines } => {
                        c.instrs = instrs;
                        c.lines = lines;
                        ended = true;
                        off = next;
                        break;
                    }
                }
                off = next;
            }
            Err(e) => {
                diags.report(
                    Position::Byte(e.offset),
                    Severity::Error,
                    "corrupt",
                    format!("{}: the rest of the file is skipped", e.message),
                )?;
                break;
            }
        }
    }
    flush(&mut pending, &mut c, sink)?;
    if !ended {
        diags.report(
            Position::Byte(off),
            Severity::Error,
            "truncated",
            "the binary log ends without its END1 block (cut short): the records before are kept; fetch summary and instruction count may be missing",
        )?;
    }
    c.records = records;
    let extra = [
        ("mem_format".to_string(), "trawl-binary".to_string()),
        ("mem_binary_version".to_string(), header.version.to_string()),
        ("mem_binary_kinds".to_string(), header.filter.kind_letters()),
        (
            "mem_binary_ranges".to_string(),
            header
                .filter
                .ranges
                .iter()
                .map(|(lo, hi)| format!("{lo:#x}-{hi:#x}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    let stats = MemStats {
        bytes: off,
        records,
        rows: c.rows,
        meta: filter_meta(&c, &filter, &extra),
    };
    Ok((c, stats))
}

/// What [`to_binary`] wrote.
pub struct ConvertSummary {
    pub text_bytes: u64,
    pub binary_bytes: u64,
    pub records: u64,
    pub rows: u64,
    pub instructions: u64,
    pub fetch_addresses: usize,
    pub diagnostics: Vec<crate::diag::Diagnostic>,
}

/// Converts lackey text (`input`, decompressed already) into a binary
/// memory log written to `out`, applying `opts`' filters while reading.
pub fn to_binary<W: std::io::Write>(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    strict: bool,
    out: W,
) -> Result<(W, ConvertSummary)> {
    opts.check().map_err(Error::Usage)?;
    let mut diags = Diagnostics::new(name, strict);
    let page_size = opts.page_size.unwrap_or(4096);
    let header = binary::Header {
        version: binary::VERSION,
        page_size: page_size as u32,
        filter: opts.filter.clone(),
    };
    let mut w = binary::Writer::new(out, &header).map_err(|e| Error::io(name, e))?;
    let (c, bytes) = read_text(input, name, opts, &mut diags, &mut w, None)?;
    if w.clamped > 0 {
        diags.report(
            Position::None,
            Severity::Warning,
            "size_clamped",
            format!(
                "{} accesses larger than 65535 bytes stored as 65535",
                w.clamped
            ),
        )?;
    }
    let list = diags.into_vec();
    let dl: Vec<(u64, String, String)> = list
        .iter()
        .map(|d| {
            (
                d.position.line().unwrap_or(0),
                d.kind.to_string(),
                d.message.clone(),
            )
        })
        .collect();
    let (out, written) = w
        .finish(&c.fetch, &c.meta, &dl, c.instrs, c.lines)
        .map_err(|e| Error::io(name, e))?;
    Ok((
        out,
        ConvertSummary {
            text_bytes: bytes,
            binary_bytes: written,
            records: c.records,
            rows: c.rows,
            instructions: c.instrs,
            fetch_addresses: c.fetch.len(),
            diagnostics: list,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapped lackey log advances the ingest's progress counter itself,
    /// to its last byte (the ingest adds the end-of-input update on top).
    #[test]
    fn mapped_text_reports_progress() {
        struct Discard;
        impl RowSink for Discard {
            fn rows(&mut self, _: Rows) -> crate::error::Result<()> {
                Ok(())
            }
        }
        let mut text = String::new();
        for i in 0..20_000u64 {
            text.push_str(&format!(
                "I  {:08x},3\n L {:08x},8\n",
                0x0400_0000 + i % 64,
                0x7fff_0000 + i * 8
            ));
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &text).unwrap();
        let mut src = TextSource::file(file.path()).unwrap();
        assert!(matches!(src, TextSource::Mapped(_)));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let progress = crate::progress::Progress {
            done: done.clone(),
            base: 100,
            cancel: None,
        };
        let mut diags = crate::diag::Diagnostics::new("t", false);
        let (c, bytes) = read_text(
            &mut src,
            "t",
            &MemOptions::default(),
            &mut diags,
            &mut Discard,
            Some(&progress),
        )
        .unwrap();
        assert_eq!(c.records, 40_000);
        assert_eq!(bytes, text.len() as u64);
        assert_eq!(
            done.load(std::sync::atomic::Ordering::Relaxed),
            100 + text.len() as u64
        );
    }

    /// `touch`'s one-word path gives what the general `touch_many` gives:
    /// accesses inside a word, across words and across pages, of 0 to 70
    /// bytes, page sizes 64 and 4096.
    #[test]
    fn touch_fast_path_equals_general_path() {
        for page_size in [64u64, 4096] {
            let (mut a, mut b) = (PageStats::new(page_size), PageStats::new(page_size));
            let mut x = 5u64;
            for ord in 0..20_000i64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Sparse, so a wrong bit in the byte map shows.
                let addr = 0x7fff_0000 + (x >> 40) % 2_000_000;
                let size = ((x >> 20) % 71) as u32;
                let kind = ((x >> 10) % 4) as u8;
                a.touch(kind, addr, size, ord);
                b.touch_many(kind, addr, size, 1, ord, ord);
            }
            let view = |p: PageStats| {
                p.sorted()
                    .into_iter()
                    .map(|p| (p.page, p.counts, p.bytes, p.first, p.last, p.touched))
                    .collect::<Vec<_>>()
            };
            assert_eq!(view(a), view(b), "page size {page_size}");
        }
    }

    /// Fetches counted through the slots, the spill log (merged early
    /// when it fills, and at each chunk end) and chunk keys equal a plain
    /// per-address count worked out here.
    #[test]
    fn fetch_cache_counts_as_a_plain_map() {
        let mut c = FetchCache::default();
        let mut expect: std::collections::BTreeMap<u64, FetchStat> = Default::default();
        let mut x = 99u64;
        for seq in 0..3u32 {
            c.set_key(chunk_key(seq));
            // Enough distinct addresses in one chunk to fill the log.
            for ord in 1..=150_000i64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let addr = 0x1000 + (x >> 33) % 40_000;
                let size = 1 + (x >> 20) as u32 % 9;
                c.add(addr, size, ord);
                assert!(c.log.len() < FETCH_LOG_MAX, "the log is bounded");
                let k = chunk_key(seq) + ord;
                let e = expect.entry(addr).or_insert(FetchStat {
                    size,
                    count: 0,
                    first: k,
                    last: k,
                });
                e.count += 1;
                e.size = e.size.max(size);
                e.last = k;
            }
            c.end_chunk();
            assert!(c.log.is_empty());
            // One entry per address, in address order.
            assert!(c.agg.windows(2).all(|w| w[0].0 < w[1].0));
        }
        let got = c.finish().sorted();
        assert!(got.len() > 30_000);
        assert_eq!(got, expect.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn pages_split_crossing_accesses_and_count_bytes() {
        let mut p = PageStats::new(4096);
        p.touch(KIND_S, 0x1ffc, 8, 5);
        p.touch(KIND_L, 0x1ffc, 4, 7);
        let v = p.sorted();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].page, v[0].counts, v[0].bytes),
            (0x1000, [0, 1, 1, 0], 8)
        );
        assert_eq!(v[0].bytes_touched(), 4);
        assert_eq!((v[0].first, v[0].last), (5, 7));
        assert_eq!(
            (v[1].page, v[1].counts, v[1].bytes_touched()),
            (0x2000, [0, 0, 1, 0], 4)
        );
    }

    #[test]
    fn parses_filters_and_sizes() {
        assert_eq!(Filter::parse_kinds("ls").unwrap(), 0b0110);
        assert!(Filter::parse_kinds("X").is_err());
        assert_eq!(
            Filter::parse_range("0x1000-0x2000").unwrap(),
            (0x1000, 0x2000)
        );
        assert_eq!(Filter::parse_range("1000+4k").unwrap(), (0x1000, 0x2000));
        assert!(Filter::parse_range("2000-1000").is_err());
        assert_eq!(parse_size("2M").unwrap(), 2 << 20);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
    }
}
