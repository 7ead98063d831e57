//! Per-address instruction-fetch summaries (`mem_fetch`): counts, first and
//! last ordinals, kept in a small direct-mapped cache in front of a map.

use rustc_hash::FxHashMap;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
