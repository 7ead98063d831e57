//! [`SliceMap`]: a hash map from slices to values whose keys live back to
//! back in one arena. Interning a call stack or a raw callchain then costs
//! no allocation per key, a lookup touches one table slot and one arena
//! range, and clearing it frees nothing per entry (the converters intern
//! hundreds of thousands of distinct stacks).

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

struct Entry<V> {
    hash: u64,
    start: usize,
    len: usize,
    value: V,
}

pub struct SliceMap<T, V> {
    arena: Vec<T>,
    table: HashTable<Entry<V>>,
}

impl<T, V> Default for SliceMap<T, V> {
    fn default() -> Self {
        SliceMap {
            arena: Vec::new(),
            table: HashTable::new(),
        }
    }
}

impl<T: Copy + Eq + Hash, V> SliceMap<T, V> {
    fn hash(key: &[T]) -> u64 {
        FxBuildHasher.hash_one(key)
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[T]) -> Option<&V> {
        let hash = Self::hash(key);
        let arena = &self.arena;
        self.table
            .find(hash, |e| {
                e.hash == hash && e.len == key.len() && &arena[e.start..e.start + e.len] == key
            })
            .map(|e| &e.value)
    }

    /// Adds `key` (not present: see [`SliceMap::get`]) with `value`.
    pub fn insert_new(&mut self, key: &[T], value: V) {
        let hash = Self::hash(key);
        let start = self.arena.len();
        self.arena.extend_from_slice(key);
        self.table.insert_unique(
            hash,
            Entry {
                hash,
                start,
                len: key.len(),
                value,
            },
            |e| e.hash,
        );
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Forgets every key, keeping the memory for the next ones.
    pub fn clear(&mut self) {
        self.table.clear();
        self.arena.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_whole_slices() {
        let mut m = SliceMap::<i64, i64>::default();
        m.insert_new(&[1, 2, 3], 0);
        m.insert_new(&[1, 2], 1);
        m.insert_new(&[], 2);
        assert_eq!(m.get(&[1, 2, 3]), Some(&0));
        assert_eq!(m.get(&[1, 2]), Some(&1));
        assert_eq!(m.get(&[]), Some(&2));
        assert_eq!(m.get(&[2, 3]), None);
        assert_eq!(m.get(&[1, 2, 3, 4]), None);
        assert_eq!(m.len(), 3);
        m.clear();
        assert!(m.is_empty());
        assert_eq!(m.get(&[1, 2]), None);
    }

    #[test]
    fn many_keys_with_shared_prefixes() {
        let mut m = SliceMap::<u8, usize>::default();
        let keys: Vec<Vec<u8>> = (0..5000usize)
            .map(|i| (0..i % 37).map(|j| (i * 7 + j) as u8).collect())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            if m.get(k).is_none() {
                m.insert_new(k, i);
            }
        }
        for k in &keys {
            let first = keys.iter().position(|x| x == k).unwrap();
            assert_eq!(m.get(k), Some(&first));
        }
    }
}
