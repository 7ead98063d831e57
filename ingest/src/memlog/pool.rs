//! Row vectors used again from block to block.
//!
//! A block's [`Rows`] become Arrow buffers of `mem_access` without a copy
//! and live until their row group is written. Dropped there, glibc hands
//! the memory back to the kernel, and the next block's vectors are fresh
//! pages: zeroed and mapped one page fault at a time (≈ 5 % of an ingest's
//! CPU on the 1.1 GB bench log: 25 K faults, `clear_page`). Instead the
//! buffers are made from the vectors with an owner that puts them back in
//! a pool here when Arrow drops the last reference, and parsers take their
//! vectors from the pool. The pools hold at most [`KEEP`] vectors each,
//! so they never keep more than what was in flight at once.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use arrow::buffer::Buffer;
use arrow::datatypes::ArrowNativeType;

use super::Rows;

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

/// Owns a vector behind an Arrow buffer; gives it back to its pool when
/// the buffer's last reference is dropped.
struct Pooled<T: 'static> {
    v: Vec<T>,
    pool: &'static VecPool<T>,
}

impl<T: 'static> Drop for Pooled<T> {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.v));
    }
}

/// `v`'s elements as an Arrow buffer (no copy); the vector goes back to
/// `pool` once the buffer is dropped.
pub fn buffer<T: ArrowNativeType + std::panic::RefUnwindSafe>(
    v: Vec<T>,
    pool: &'static VecPool<T>,
) -> Buffer {
    let len = std::mem::size_of_val(v.as_slice());
    // A vector's pointer is never null (dangling but aligned when empty).
    let ptr = NonNull::new(v.as_ptr() as *mut u8).unwrap_or(NonNull::dangling());
    let owner = Arc::new(Pooled { v, pool });
    // SAFETY: `ptr` points at `len` initialised bytes of the vector's heap
    // allocation, which `owner` keeps (unmoved, unchanged: the vector is
    // only touched again in `drop`) until the buffer's last reference goes.
    unsafe { Buffer::from_custom_allocation(ptr, len, owner) }
}

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
    use arrow::array::Int64Array;
    use arrow::buffer::ScalarBuffer;

    #[test]
    fn buffers_give_their_vectors_back_when_dropped() {
        static POOL: VecPool<i64> = VecPool::new();
        let v = POOL.take(1000);
        assert!(v.capacity() >= 1000);
        let mut v = v;
        v.extend(0..1000);
        let at = v.as_ptr();
        let a = Int64Array::new(ScalarBuffer::new(buffer(v, &POOL), 0, 1000), None);
        let b = a.slice(10, 5);
        drop(a);
        assert_eq!(POOL.len(), 0, "a slice still holds the buffer");
        assert_eq!(b.values().as_ref(), &[10, 11, 12, 13, 14]);
        drop(b);
        assert_eq!(POOL.len(), 1);
        // The same allocation comes back, emptied.
        let again = POOL.take(10);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty());
        // Bounded: vectors beyond KEEP are freed.
        for _ in 0..KEEP + 5 {
            POOL.give(Vec::with_capacity(8));
        }
        assert_eq!(POOL.len(), KEEP);
        POOL.give(Vec::new());
        assert_eq!(POOL.len(), KEEP);
    }
}
