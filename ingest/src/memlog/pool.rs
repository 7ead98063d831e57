//! Row vectors used again from block to block.
//!
//! A block's [`Rows`] become Arrow buffers of `mem_access` without a copy
//! and live until their row group is written. Dropped there, glibc hands
//! the memory back to the kernel, and the next block's vectors are fresh
//! pages: zeroed and mapped one page fault at a time (≈ 5 % of an ingest's
//! CPU on the 1.1 GB bench log: 25 K faults, `clear_page`). Instead the
//! converter makes the buffers with an owner that puts the vectors back in
//! a pool here when Arrow drops the last reference
//! ([`convert::pooled_buffer`](super::convert::pooled_buffer)), and
//! parsers take their vectors from the pools. The pools hold at most
//! [`KEEP`] vectors each, so they never keep more than what was in flight
//! at once. No Arrow here.

use std::sync::Mutex;

use super::rows::Rows;

/// Vectors a pool keeps; more are freed.
const KEEP: usize = 16;

/// Free vectors of one element type.
pub struct VecPool<T> {
    free: Mutex<Vec<Vec<T>>>,
}

impl<T> VecPool<T> {
    pub const fn new() -> Self {
        VecPool {
            free: Mutex::new(Vec::new()),
        }
    }

    /// An empty vector with room for `n` elements (rounded up, so that
    /// blocks a few rows apart take the same vectors without growing them).
    pub fn take(&self, n: usize) -> Vec<T> {
        let n = n.next_multiple_of(4096);
        let v = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match v {
            Some(mut v) => {
                v.clear();
                v.reserve(n);
                v
            }
            None => Vec::with_capacity(n),
        }
    }

    /// Keeps `v` for a later [`take`](Self::take) (if the pool has room).
    pub fn give(&self, v: Vec<T>) {
        if v.capacity() == 0 {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        if free.len() < KEEP {
            free.push(v);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.free.lock().unwrap().len()
    }
}

impl<T> Default for VecPool<T> {
    fn default() -> Self {
        Self::new()
    }
}

pub static ORDINALS: VecPool<i64> = VecPool::new();
pub static KINDS: VecPool<u8> = VecPool::new();
pub static ADDRESSES: VecPool<u64> = VecPool::new();
pub static SIZES: VecPool<u32> = VecPool::new();
/// `kind` dictionary keys (the converter's).
pub static KEYS: VecPool<i32> = VecPool::new();

impl Rows {
    /// Empty rows with room for `n`, in vectors from the pools.
    pub fn pooled(n: usize) -> Rows {
        Rows {
            ordinal: ORDINALS.take(n),
            kind: KINDS.take(n),
            address: ADDRESSES.take(n),
            size: SIZES.take(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_give_back_what_they_kept_and_stay_bounded() {
        static POOL: VecPool<u32> = VecPool::new();
        let mut v = POOL.take(1000);
        assert!(v.capacity() >= 4096, "rounded up");
        v.extend(0..10);
        let at = v.as_ptr();
        POOL.give(v);
        let again = POOL.take(10);
        assert_eq!(again.as_ptr(), at, "the same allocation, emptied");
        assert!(again.is_empty());
        for _ in 0..KEEP + 5 {
            POOL.give(Vec::with_capacity(8));
        }
        assert_eq!(POOL.len(), KEEP);
        POOL.give(Vec::new());
        assert_eq!(POOL.len(), KEEP);
    }
}
