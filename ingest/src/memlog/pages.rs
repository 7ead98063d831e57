//! Per-page summaries (`mem_page`): accesses by kind, first and last
//! ordinals, and the bytes touched (a bit per byte of the page).

use rustc_hash::FxHashMap;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memlog::{KIND_L, KIND_S};

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
}
