//! valgrind lackey text (`--tool=lackey --trace-mem=yes`) → typed records.
//!
//! ```text
//! ==3518== Command: ls /
//! I  0401ab70,3          instruction fetch: address (hex), size (decimal)
//!  S 1fff000778,8        store
//!  L 1fff000770,8        load
//!  M 0025747C,1          modify (load and store of the same bytes)
//! ```
//!
//! [`parse_chunk`] reads a run of whole lines (the input is cut at line
//! boundaries, so chunks are parsed in parallel) into a [`Chunk`]: the kept
//! records as columns, instruction fetches aggregated per address, data
//! accesses aggregated per page, `==PID==` / `--PID--` lines as metadata and
//! what was wrong with the lines that were not records. Ordinals and line
//! numbers are local to the chunk; [`Collector`](super::collect::Collector) adds the counts of
//! the chunks before it. No Arrow here.

use super::fetch::{chunk_key, FetchCache, FetchMap};
use super::filter::{Filter, KIND_I, KIND_L, KIND_M, KIND_S};
use super::pages::PageStats;
use super::rows::{Problem, Rows};

/// What one chunk of lines held.
pub struct Chunk {
    pub rows: Rows,
    pub fetch: FetchMap,
    pub pages: PageStats,
    /// `I` records in the chunk (kept or not): the ordinal advance.
    pub instrs: u64,
    /// Lines in the chunk (a last line without newline included).
    pub lines: u64,
    /// Records dropped by the address / kind filter.
    pub filtered: u64,
    /// Records read (of any kind, kept or not).
    pub records: u64,
    /// `==PID==` and `--PID--` lines: (line in the chunk, 1-based; text).
    pub meta: Vec<(u64, String)>,
    pub problems: Vec<Problem>,
}

static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Why a line is not a record.
enum Bad {
    /// More than 16 hex digits.
    Wide,
    /// A record that does not read as `ADDR,SIZE`.
    Malformed,
}

/// Parses `ADDR,SIZE\n` at `i` (after the kind and its spaces). Returns the
/// address, size and the index after the newline; `Err` with the reason
/// otherwise. `Ok(None)` when the buffer ends before the newline.
#[inline(always)]
fn record(buf: &[u8], mut i: usize) -> Result<Option<(u64, u32, usize)>, Bad> {
    let n = buf.len();
    while i < n && buf[i] == b' ' {
        i += 1;
    }
    let start = i;
    let mut addr = 0u64;
    while i < n {
        let d = HEX[buf[i] as usize];
        if d == 0xff {
            break;
        }
        addr = (addr << 4) | d as u64;
        i += 1;
    }
    let digits = i - start;
    if i == n {
        return Ok(None);
    }
    if digits == 0 || buf[i] != b',' {
        return Err(Bad::Malformed);
    }
    if digits > 16 {
        // Leading zeros are harmless; anything else does not fit 64 bits.
        if buf[start..i - 16].iter().any(|&b| b != b'0') {
            return Err(Bad::Wide);
        }
    }
    i += 1;
    let s0 = i;
    let mut size = 0u32;
    while i < n && buf[i].is_ascii_digit() {
        if i - s0 >= 9 {
            return Err(Bad::Malformed);
        }
        size = size * 10 + (buf[i] - b'0') as u32;
        i += 1;
    }
    if i == n {
        return Ok(None);
    }
    if i == s0 {
        return Err(Bad::Malformed);
    }
    // Lackey ends records with a newline; tolerate `\r\n` and trailing
    // blanks.
    while i < n && (buf[i] == b' ' || buf[i] == b'\r') {
        i += 1;
    }
    if i == n {
        return Ok(None);
    }
    if buf[i] != b'\n' {
        return Err(Bad::Malformed);
    }
    Ok(Some((addr, size, i + 1)))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

#[inline(always)]
fn load(buf: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(buf[i..i + 8].try_into().unwrap())
}

/// High bit set in each byte of `x` (bytes < 0x80) strictly between `m`
/// and `n` (Bit Twiddling Hacks, "hasbetween").
#[inline(always)]
fn between(x: u64, m: u64, n: u64) -> u64 {
    let lo7 = x & (ONES * 127);
    (ONES * (127 + n)).wrapping_sub(lo7) & !x & (lo7 + ONES * (127 - m)) & HIGHS
}

/// High bit set in each byte of `w` that is a hex digit.
#[inline(always)]
fn hex_bytes(w: u64) -> u64 {
    let ascii = !w & HIGHS;
    (between(w, 0x2f, 0x3a) | between(w | (ONES * 0x20), 0x60, 0x67)) & ascii
}

/// Eight hex digits (byte 0 the most significant) → their value.
#[inline(always)]
fn hex8(w: u64) -> u64 {
    let l = w | (ONES * 0x20);
    let v = (l & (ONES * 0x0f)) + 9 * ((l >> 6) & ONES);
    let v = ((v & 0x000f_000f_000f_000f) << 4) | ((v >> 8) & 0x000f_000f_000f_000f);
    let v = ((v & 0x0000_00ff_0000_00ff) << 8) | ((v >> 16) & 0x0000_00ff_0000_00ff);
    ((v & 0xffff) << 16) | ((v >> 32) & 0xffff)
}

/// [`record`] without per-byte branches for the common case: up to 16
/// hex digits, a comma, a one- or two-digit size and a newline, with 24
/// bytes of buffer left. `None` sends the line to [`record`].
#[inline(always)]
fn record_fast(buf: &[u8], mut i: usize) -> Option<(u64, u32, usize)> {
    if i + 24 > buf.len() {
        return None;
    }
    if buf[i] == b' ' {
        i += 1;
    }
    let w0 = load(buf, i);
    let w1 = load(buf, i + 8);
    let comma = |w: u64| {
        let x = w ^ (ONES * b',' as u64);
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    let c0 = comma(w0);
    let len = if c0 != 0 {
        (c0.trailing_zeros() / 8) as usize
    } else {
        let c1 = comma(w1);
        if c1 == 0 {
            return None;
        }
        8 + (c1.trailing_zeros() / 8) as usize
    };
    if len == 0 {
        return None;
    }
    let addr = if len <= 8 {
        let need = if len == 8 {
            HIGHS
        } else {
            HIGHS & ((1u64 << (8 * len)) - 1)
        };
        if hex_bytes(w0) & need != need {
            return None;
        }
        hex8(w0 << (8 * (8 - len)))
    } else {
        let lo = load(buf, i + len - 8);
        let k = len - 8;
        let need = if k == 8 {
            HIGHS
        } else {
            HIGHS & ((1u64 << (8 * k)) - 1)
        };
        if hex_bytes(w0) & need != need || hex_bytes(lo) != HIGHS {
            return None;
        }
        (hex8(w0 << (8 * (8 - k))) << 32) | hex8(lo)
    };
    let j = i + len + 1;
    let d0 = buf[j].wrapping_sub(b'0');
    if d0 > 9 {
        return None;
    }
    let d1 = buf[j + 1];
    if d1 == b'\n' {
        return Some((addr, d0 as u32, j + 2));
    }
    let d1 = d1.wrapping_sub(b'0');
    if d1 > 9 || buf[j + 2] != b'\n' {
        return None;
    }
    Some((addr, d0 as u32 * 10 + d1 as u32, j + 3))
}

fn line_end(buf: &[u8], i: usize) -> usize {
    memchr::memchr(b'\n', &buf[i..]).map_or(buf.len(), |k| i + k + 1)
}

/// Instruction fetch lines seen recently, by their text: a loop fetches
/// the same instructions again and again, and a line equal byte for byte
/// to one already read is counted without reading its digits again.
///
/// Lines cached are lackey's usual `I  XXXXXXXX,S` (8 hex digits, a
/// comma, one size digit and the newline after `I  `: 99.6 % of the bench
/// log's fetches); others take the [`FetchCache`] path. The table is 2-way
/// set-associative, 16-byte slots (what a hit reads and writes: the
/// digits, the count, the last ordinal), two per 32-byte set, 16,384 sets
/// (512 KB, within L2), first ordinals in a cold array beside it: a new
/// line goes to way 0, way 0 moves to way 1, and way 1's statistics go to
/// the [`FetchCache`]. Measured on the 1.1 GB bench log (61.7 M fetches):
/// a direct-mapped table of 8,192 40-byte slots missed 9.4 M times, of
/// 32,768 slots (1.25 MB) 3.1 M times but stalled on L2 misses (30 % of
/// the parser's samples on the slot load); 8,192 sets of two 32-byte
/// slots missed 2.2 M times; the same 512 KB as 16,384 sets of 16-byte
/// slots made the parser ~8 % faster.
struct FetchLines {
    sets: Box<[LineSet; LINE_SETS]>,
    /// First fetch ordinal of each slot (read only when it is spilled).
    firsts: Vec<[u32; 2]>,
}

/// A parser's instruction fetch counts, kept from block to block: the
/// line cache (emptied into `fetch` at the end of each block, its
/// ordinals being the block's) and the fetch map, whose ordinals are
/// [`chunk_key`]ed so blocks of any base share it.
/// Measured on the 1.1 GB bench log: a new cache and map per 8 MB block
/// spent ≈0.15 CPU-s adding 2.2 M spilled lines to 140 fresh maps, merging
/// their 0.8 M entries into the collector's and faulting in their pages.
pub struct FetchAgg {
    lines: FetchLines,
    fetch: FetchCache,
}

impl Default for FetchAgg {
    fn default() -> Self {
        FetchAgg {
            lines: FetchLines::new(),
            fetch: FetchCache::default(),
        }
    }
}

impl FetchAgg {
    /// The fetches counted, ordinals keyed by chunk.
    pub fn into_map(self) -> FetchMap {
        self.fetch.finish()
    }
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct LineSet([LineSlot; 2]);

/// One cached `I` line, as the hit path reads it: the 8 address digits
/// after `I  ` (`w0`, little-endian; the line is those, a comma, one size
/// digit and the newline), the size digit and the fetch count (`cnt`: the
/// digit's byte in the top 8 bits, the count below), and the last fetch's
/// ordinal (local to the chunk). The first fetch's ordinal sits in the
/// table's cold `firsts`. The address is the digits' value ([`hex8`]).
/// An empty slot is all zeros: its tag (the digit byte) is no digit, so
/// no line hits it.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct LineSlot {
    w0: u64,
    cnt: u32,
    last: u32,
}

const LINE_SETS_BITS: u32 = 14;
const LINE_SETS: usize = 1 << LINE_SETS_BITS;
const COUNT_MASK: u32 = 0x00ff_ffff;
/// `I  ` (little-endian), the first three bytes of a cached line.
const LINE_HEAD: u64 = 0x20_2049;
/// The comma and the newline of a cached line, bytes 11 and 13 (of bytes
/// 8 to 15).
const LINE_SEP_MASK: u64 = 0x0000_ff00_ff00_0000;
const LINE_SEP: u64 = 0x0000_0a00_2c00_0000;

impl FetchLines {
    fn new() -> Self {
        FetchLines {
            sets: vec![LineSet::default(); LINE_SETS]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!()),
            firsts: vec![[0; 2]; LINE_SETS],
        }
    }

    #[inline(always)]
    fn set(w0: u64, digit: u8) -> usize {
        ((w0 ^ ((digit as u64) << 45)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - LINE_SETS_BITS))
            as usize
    }

    /// Puts a line just read (first fetched at `first`) in way 0 of set
    /// `h` (of `sets`, `firsts`: a table's, borrowed apart), pushing way 1
    /// out.
    #[inline]
    fn install(
        sets: &mut [LineSet; LINE_SETS],
        firsts: &mut [[u32; 2]],
        h: usize,
        slot: LineSlot,
        first: u32,
        fetch: &mut FetchCache,
    ) {
        let set = &mut sets[h].0;
        let firsts = &mut firsts[h];
        set[1].spill(firsts[1], fetch);
        set[1] = set[0];
        firsts[1] = firsts[0];
        set[0] = slot;
        firsts[0] = first;
    }

    /// Adds every slot's fetches to `fetch` and empties the table.
    fn flush(&mut self, fetch: &mut FetchCache) {
        for (set, firsts) in self.sets.iter_mut().zip(&self.firsts) {
            set.0[0].spill(firsts[0], fetch);
            set.0[1].spill(firsts[1], fetch);
            *set = LineSet::default();
        }
    }
}

impl LineSlot {
    #[inline(always)]
    fn size(&self) -> u32 {
        ((self.cnt >> 24) as u8).wrapping_sub(b'0') as u32
    }

    #[inline(always)]
    fn addr(&self) -> u64 {
        hex8(self.w0)
    }

    /// Adds this slot's fetches (if any) to `fetch`.
    #[inline]
    fn spill(&self, first: u32, fetch: &mut FetchCache) {
        let count = self.cnt & COUNT_MASK;
        if count > 0 {
            fetch.add_counted(
                self.addr(),
                self.size(),
                count as u64,
                first as i64,
                self.last as i64,
            );
        }
    }
}

/// Parses whole lines of lackey output. `buf` ends at a line boundary,
/// except for the last chunk of the input, whose unterminated last line is
/// reported as truncated.
pub fn parse_chunk(buf: &[u8], filter: &Filter, page_size: u64) -> Chunk {
    let mut agg = FetchAgg::default();
    let mut c = parse_chunk_into(buf, filter, page_size, &mut agg, 0);
    c.fetch = agg.into_map();
    c
}

/// [`parse_chunk`], counting the chunk's instruction fetches in `agg`
/// with ordinals keyed by `seq` ([`chunk_key`]); the
/// chunk's own `fetch` is left empty. `buf` is shorter than 4 GiB.
pub fn parse_chunk_into(
    buf: &[u8],
    filter: &Filter,
    page_size: u64,
    agg: &mut FetchAgg,
    seq: u32,
) -> Chunk {
    let FetchAgg { lines, fetch } = agg;
    fetch.set_key(chunk_key(seq));
    let mut c = Chunk {
        rows: Rows::default(),
        fetch: FetchMap::default(),
        pages: PageStats::new(page_size),
        instrs: 0,
        lines: 0,
        filtered: 0,
        records: 0,
        meta: Vec::new(),
        problems: Vec::new(),
    };
    // Rows are reserved for a typical mix (a quarter of the lines, 14 to
    // 16 bytes each, are data accesses), in vectors used before.
    c.rows = Rows::pooled(buf.len() / 40);
    let keep_i = filter.kinds & (1 << KIND_I) != 0;
    let fetch_rows = keep_i && filter.fetch_rows;
    let all_addrs = filter.ranges.is_empty();
    // Every fetch kept (the usual case), and a chunk too short for a line
    // to be counted 2^24 times (14 bytes a line): `I` lines go through
    // the line cache. `cache_end`: a line at `i < cache_end` has 16 bytes
    // of buffer for the loads below.
    let by_line = keep_i && all_addrs && buf.len() < 14 * COUNT_MASK as usize;
    let cache_end = if by_line {
        buf.len().saturating_sub(15)
    } else {
        0
    };
    let FetchLines { sets, firsts } = &mut *lines;
    let n = buf.len();
    let (mut instrs, mut hits) = (0u64, 0u64);
    let mut i = 0usize;
    while i < n {
        // (set, address digits, size digit, end) of an `I` line to cache
        // once read.
        let mut install = None;
        if i < cache_end {
            // `I  XXXXXXXX,D\n`: `I` and two blanks, 8 digits, a comma, one
            // size digit and a newline.
            let head = load(buf, i);
            let tail = load(buf, i + 8);
            if head & 0xff_ffff == LINE_HEAD && tail & LINE_SEP_MASK == LINE_SEP {
                let w0 = load(buf, i + 3);
                let digit = (tail >> 32) as u8;
                let h = FetchLines::set(w0, digit);
                let set = &mut sets[h].0;
                let tag = (digit as u32) << 24;
                // A hit needs no check of the digits: a line is installed
                // only once parsed as a record ending right after these 8
                // bytes (hex digits, or leading blanks, which `hex8` reads
                // as 0), and an empty slot's tag is 0 (no digit's).
                let way = if set[0].w0 == w0 && set[0].cnt & !COUNT_MASK == tag {
                    0
                } else if set[1].w0 == w0 && set[1].cnt & !COUNT_MASK == tag {
                    1
                } else {
                    2
                };
                if way < 2 {
                    let s = &mut set[way];
                    hits += 1;
                    instrs += 1;
                    s.cnt += 1;
                    s.last = instrs as u32;
                    if fetch_rows {
                        c.rows.push(instrs as i64, KIND_I, s.addr(), s.size());
                    }
                    i += 14;
                    continue;
                }
                install = Some((h, w0, digit, i + 14));
            }
        }
        let b = buf[i];
        // Line numbers of problems and metadata count the hits before.
        c.lines += hits + 1;
        c.records += hits;
        hits = 0;
        let (kind, at) = if b == b'I' {
            // `I  ADDR`: two blanks; record_fast skips one more.
            (
                KIND_I,
                if buf.get(i + 1) == Some(&b' ') {
                    i + 2
                } else {
                    i + 1
                },
            )
        } else if b == b' ' && i + 2 < n && buf[i + 2] == b' ' {
            match buf[i + 1] {
                b'L' => (KIND_L, i + 3),
                b'S' => (KIND_S, i + 3),
                b'M' => (KIND_M, i + 3),
                _ => (u8::MAX, i),
            }
        } else {
            (u8::MAX, i)
        };
        if kind != u8::MAX {
            let rec = match record_fast(buf, at) {
                Some(r) => Ok(Some(r)),
                None => record(buf, at),
            };
            match rec {
                Ok(Some((addr, size, next))) => {
                    c.records += 1;
                    if kind == KIND_I {
                        instrs += 1;
                    }
                    let ord = instrs as i64;
                    let keep =
                        filter.kinds & (1 << kind) != 0 && (all_addrs || filter.keep_addr(addr));
                    if !keep {
                        c.filtered += 1;
                    } else if kind == KIND_I {
                        match install {
                            Some((h, w0, digit, end)) if end == next => {
                                // Parsed as 8 hex digits, `,`, the digit.
                                debug_assert_eq!(hex8(w0), addr);
                                let slot = LineSlot {
                                    w0,
                                    cnt: ((digit as u32) << 24) | 1,
                                    last: ord as u32,
                                };
                                FetchLines::install(sets, firsts, h, slot, ord as u32, fetch);
                            }
                            _ => fetch.add(addr, size, ord),
                        }
                        if fetch_rows {
                            c.rows.push(ord, kind, addr, size);
                        }
                    } else {
                        c.pages.touch(kind, addr, size, ord);
                        c.rows.push(ord, kind, addr, size);
                    }
                    i = next;
                    continue;
                }
                Ok(None) => {
                    c.problems.push(Problem {
                        line: c.lines,
                        kind: "truncated_line",
                        message: format!(
                            "last line {:?} has no end: skipped",
                            String::from_utf8_lossy(&buf[i..n.min(i + 60)])
                        ),
                    });
                    break;
                }
                Err(bad) => {
                    let end = line_end(buf, i);
                    let text = String::from_utf8_lossy(&buf[i..end.min(i + 80)]);
                    let text = text.trim_end();
                    let (k, m) = match bad {
                        Bad::Wide => (
                            "bad_address",
                            format!("address wider than 64 bits in {text:?}: skipped"),
                        ),
                        _ => ("bad_record", format!("not `ADDR,SIZE`: {text:?}: skipped")),
                    };
                    if end == n && buf[n - 1] != b'\n' {
                        c.problems.push(Problem {
                            line: c.lines,
                            kind: "truncated_line",
                            message: format!("last line {text:?} has no end: skipped"),
                        });
                    } else {
                        c.problems.push(Problem {
                            line: c.lines,
                            kind: k,
                            message: m,
                        });
                    }
                    i = end;
                    continue;
                }
            }
        }
        let end = line_end(buf, i);
        let raw = &buf[i..end];
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches(['\n', '\r']);
        if (b == b'=' && text.starts_with("==")) || (b == b'-' && text.starts_with("--")) {
            c.meta.push((c.lines, text.to_string()));
        } else if text.trim().is_empty() {
            // Blank lines carry nothing.
        } else if end == n && raw.last() != Some(&b'\n') {
            c.problems.push(Problem {
                line: c.lines,
                kind: "truncated_line",
                message: format!(
                    "last line {:?} has no end: skipped",
                    crate::diag::clip(text)
                ),
            });
        } else {
            c.problems.push(Problem {
                line: c.lines,
                kind: "unknown_record",
                message: format!(
                    "not a lackey record (`I`, ` L`, ` S`, ` M`) or `==PID==` line: {:?}: skipped",
                    crate::diag::clip(text)
                ),
            });
        }
        i = end;
    }
    c.instrs = instrs;
    c.lines += hits;
    c.records += hits;
    lines.flush(fetch);
    fetch.end_chunk();
    c
}

/// Does this look like lackey output? The first line is valgrind's
/// `==PID== ` banner naming Lackey, or a record.
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else {
        return false;
    };
    let is_record = |l: &str| {
        let b = l.as_bytes();
        let data =
            b.len() > 3 && b[0] == b' ' && matches!(b[1], b'L' | b'S' | b'M') && b[2] == b' ';
        if !l.starts_with("I  ") && !data {
            return false;
        }
        let rest = &l[3..];
        let rest = rest.trim_start();
        match rest.split_once(',') {
            Some((a, _)) => !a.is_empty() && a.bytes().all(|c| c.is_ascii_hexdigit()),
            None => !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_hexdigit()),
        }
    };
    if first.starts_with("==") {
        // valgrind's banner: `==PID== Lackey, an example Valgrind tool`.
        text.lines().take(3).any(|l| l.contains("Lackey")) || lines.take(20).any(is_record)
    } else {
        is_record(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Filter {
        Filter::default()
    }

    #[test]
    fn reads_records_ordinals_and_metadata() {
        let text = b"==1== Lackey, an example Valgrind tool\nI  0401ab70,3\n S 1fff000778,8\nI  0401ab73,5\n L 1fff000770,8\n M 0025747C,1\n";
        let c = parse_chunk(text, &all(), 4096);
        assert_eq!(c.lines, 6);
        assert_eq!(c.instrs, 2);
        assert_eq!(
            c.meta,
            vec![(1, "==1== Lackey, an example Valgrind tool".into())]
        );
        assert_eq!(c.rows.kind, vec![KIND_S, KIND_L, KIND_M]);
        // The store follows the first fetch, the load and modify the second.
        assert_eq!(c.rows.ordinal, vec![1, 2, 2]);
        assert_eq!(c.rows.address, vec![0x1fff000778, 0x1fff000770, 0x25747c]);
        assert_eq!(c.rows.size, vec![8, 8, 1]);
        assert_eq!(c.fetch.len(), 2);
        assert!(c.problems.is_empty());
    }

    #[test]
    fn bad_lines_are_problems_with_line_numbers() {
        let text = b"I  0401ab70,3\n X 1234,4\n L 12345678901234567,8\n L 00001234567890123456,8\nI  0401ab73,";
        let c = parse_chunk(text, &all(), 4096);
        let kinds: Vec<_> = c.problems.iter().map(|p| (p.line, p.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (2, "unknown_record"),
                (3, "bad_address"),
                (5, "truncated_line")
            ]
        );
        // 20 digits with leading zeros still fit.
        assert_eq!(c.rows.address, vec![0x1234567890123456]);
        assert_eq!(c.instrs, 1);
    }

    #[test]
    fn filters_keep_ordinals() {
        let text = b"I  1000,3\n L 5000,8\nI  1003,2\n S 9000,4\n";
        let f = Filter {
            kinds: 1 << KIND_S,
            ranges: vec![(0x8000, 0xa000)],
            fetch_rows: false,
        };
        let c = parse_chunk(text, &f, 4096);
        assert_eq!(c.rows.ordinal, vec![2]);
        assert_eq!(c.filtered, 3);
        assert_eq!(c.fetch.len(), 0);
    }

    #[test]
    fn fast_and_slow_paths_agree() {
        let pad = "                        ";
        for (text, want) in [
            ("0401ab70,3\n", Some((0x0401ab70u64, 3u32))),
            ("1fff000778,8\n", Some((0x1fff000778, 8))),
            ("FFFFFFFFFFFFFFFF,16\n", Some((u64::MAX, 16))),
            ("FFFFFFFFgFFFFFFF,16\n", None),
            ("a,1\n", Some((0xa, 1))),
            ("12345678,32\n", Some((0x12345678, 32))),
            ("123456789,2\n", Some((0x123456789, 2))),
            ("12g45678,2\n", None),
            ("1234,\n", None),
            ("1234,123\n", Some((0x1234, 123))),
        ] {
            let line = format!("{text}{pad}");
            let fast = record_fast(line.as_bytes(), 0).map(|(a, s, _)| (a, s));
            let slow = record(line.as_bytes(), 0)
                .ok()
                .flatten()
                .map(|(a, s, _)| (a, s));
            assert_eq!(slow, want, "{text:?} slow");
            if fast.is_some() {
                assert_eq!(fast, want, "{text:?} fast");
            }
        }
    }

    /// Lines of a made-up log: fetches from a small pool of addresses
    /// (loops: cached lines, slots pushed out), sizes that change for one
    /// address, 8- to 16-digit addresses in both cases, data accesses,
    /// extra blanks, `\r\n`, metadata and bad lines.
    fn random_log(seed: u64, lines: usize) -> Vec<u8> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut out = String::new();
        for _ in 0..lines {
            let r = next() % 100;
            let addr = 0x0400_0000 + (next() % 20_000) * 3;
            let size = 1 + next() % 15;
            match r {
                0..=39 => {
                    // A loop: a few hundred instructions again and again.
                    let a = 0x0400_0000 + (next() % 400) * 4;
                    out += &format!("I  {a:08x},{}\n", 1 + a % 7)
                }
                40..=69 => out += &format!("I  {addr:08x},{size}\n"),
                70..=72 => out += &format!("I  {:08X},{size}\n", addr),
                73..=74 => out += &format!("I  {:016x},{size}\n", addr << 20),
                75 => out += &format!("I   {addr:08x},{size}\n"),
                76 => out += &format!("I  {addr:08x},{size}\r\n"),
                77 => out += &format!("I  {addr:08x},{}\n", 100 + size),
                78..=94 => {
                    let k = ["L", "S", "M"][(next() % 3) as usize];
                    out += &format!(" {k} {:010x},{size}\n", 0x001f_feff_f000 + next() % 9000)
                }
                95 => out += "==12== Lackey, an example Valgrind tool\n",
                96 => out += &format!("I  {addr:08x}\n"),
                97 => out += &format!(" X {addr:08x},{size}\n"),
                98 => out += "\n",
                _ => out += &format!("I  1{addr:016x},{size}\n"),
            }
        }
        out.into_bytes()
    }

    #[test]
    fn line_cache_reads_as_every_line_parsed() {
        // Filter::default() counts `I` lines through the line cache; a
        // range covering every address turns it off: both must agree.
        for (seed, fetch_rows) in [(1, false), (2, true), (3, false)] {
            let text = random_log(seed, 60_000);
            let cached = Filter {
                fetch_rows,
                ..Filter::default()
            };
            let plain = Filter {
                ranges: vec![(0, u64::MAX)],
                fetch_rows,
                ..Filter::default()
            };
            let a = parse_chunk(&text, &cached, 4096);
            let b = parse_chunk(&text, &plain, 4096);
            assert!(a.instrs > 30_000 && a.fetch.len() > 1000);
            assert_eq!(
                (a.instrs, a.lines, a.records, a.filtered),
                (b.instrs, b.lines, b.records, b.filtered)
            );
            assert_eq!(a.rows.ordinal, b.rows.ordinal);
            assert_eq!(a.rows.kind, b.rows.kind);
            assert_eq!(a.rows.address, b.rows.address);
            assert_eq!(a.rows.size, b.rows.size);
            assert_eq!(a.fetch.sorted(), b.fetch.sorted());
            let pages = |c: Chunk| {
                c.pages
                    .sorted()
                    .into_iter()
                    .map(|p| (p.page, p.counts, p.bytes, p.first, p.last))
                    .collect::<Vec<_>>()
            };
            let probs = |c: &Chunk| {
                c.problems
                    .iter()
                    .map(|p| (p.line, p.kind))
                    .collect::<Vec<_>>()
            };
            assert_eq!(probs(&a), probs(&b));
            assert!(a.problems.len() > 100);
            assert_eq!(a.meta, b.meta);
            assert_eq!(pages(a), pages(b));
        }
    }

    /// A log cut into blocks, parsed by two "threads" (two fetch
    /// aggregates, blocks dealt out unevenly) with chunk-keyed ordinals and
    /// placed in order by the collector, gives the fetch summary and pages
    /// of the whole log parsed as one chunk.
    #[test]
    fn blocks_with_shared_fetch_maps_read_as_one_chunk() {
        use crate::memlog::{Collector, RowSink};
        struct Discard;
        impl RowSink for Discard {
            fn rows(&mut self, _: Rows) -> crate::error::Result<()> {
                Ok(())
            }
        }
        let text = random_log(7, 80_000);
        let whole = parse_chunk(&text, &Filter::default(), 4096);
        let mut c = Collector::new(4096);
        let mut diags = crate::diag::Diagnostics::new("t", false);
        let mut aggs = [FetchAgg::default(), FetchAgg::default()];
        let (mut at, mut seq) = (0usize, 0u32);
        while at < text.len() {
            // Blocks of 997 to ~40 K bytes, cut after a newline.
            let want = (at + 997 + (seq as usize * 7919) % 40_000).min(text.len());
            let end = text[want..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |k| want + k + 1);
            let agg = &mut aggs[(seq % 3 == 0) as usize];
            let chunk = parse_chunk_into(&text[at..end], &Filter::default(), 4096, agg, seq);
            assert!(chunk.fetch.is_empty());
            c.add_chunk(chunk, &mut diags, &mut Discard).unwrap();
            at = end;
            seq += 1;
        }
        assert!(seq > 20);
        for a in aggs {
            c.add_keyed_fetches(a.into_map());
        }
        assert_eq!(c.instrs, whole.instrs);
        assert!(whole.fetch.len() > 1000);
        assert_eq!(c.fetch.sorted(), whole.fetch.sorted());
        let pages = |p: Vec<crate::memlog::PageStat>| {
            p.into_iter()
                .map(|p| (p.page, p.counts, p.bytes, p.first, p.last))
                .collect::<Vec<_>>()
        };
        let mut one = Collector::new(4096);
        one.add_chunk(whole, &mut diags, &mut Discard).unwrap();
        assert_eq!(pages(c.page_summary()), pages(one.page_summary()));
    }

    #[test]
    fn sniffs_banner_and_bare_records() {
        assert!(sniff(
            b"==3518== Lackey, an example Valgrind tool\n==3518== Copyright"
        ));
        assert!(sniff(b"I  0401ab70,3\n S 1fff000778,8\n"));
        assert!(!sniff(b"==3518== Memcheck, a memory error detector\n"));
        assert!(!sniff(b"execve(\"/bin/ls\", ...) = 0\n"));
    }
}
