//! [`HashKeyMap`]: a hash map from byte strings to values that keeps each
//! key as its 128-bit hash (the raw-callchain cache of the perf converter:
//! hundreds of thousands of distinct callchains, looked up once a sample).
//!
//! [`IdTable`]: dense ids (0, 1, ...) for distinct keys, for the frames and
//! stacks of a capture, which live as long as the ingest: a system-wide
//! recording has millions of each.

use hashbrown::HashTable;

/// A map from byte strings to values that holds each key as its 128-bit
/// XXH3 hash, next to its value in the table's slot: a lookup touches one
/// control group and one slot, and compares 16 bytes (not the key, which
/// an arena would hold elsewhere in memory: for the converters' hundreds
/// of thousands of raw callchains each lookup was then three cache misses
/// and a `memcmp`). Two different keys share a hash with probability about
/// n²/2^129 (10^-27 for a million keys), as for the stack dedup of
/// [`crate::stacks`].
pub struct HashKeyMap<V> {
    table: HashTable<(u128, V)>,
}

impl<V> Default for HashKeyMap<V> {
    fn default() -> Self {
        HashKeyMap {
            table: HashTable::new(),
        }
    }
}

impl<V> HashKeyMap<V> {
    /// The hash a key is held as.
    #[inline]
    pub fn key_hash(key: &[u8]) -> u128 {
        twox_hash::XxHash3_128::oneshot(key)
    }

    /// The value of the key whose [`HashKeyMap::key_hash`] is `h`.
    #[inline]
    pub fn get(&self, h: u128) -> Option<&V> {
        // The hash is already uniform: its low bits place it in the table.
        self.table.find(h as u64, |e| e.0 == h).map(|e| &e.1)
    }

    /// Adds the key hashing to `h` (not present: see [`HashKeyMap::get`]).
    #[inline]
    pub fn insert_new(&mut self, h: u128, value: V) {
        self.table
            .insert_unique(h as u64, (h, value), |e| e.0 as u64);
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
    }
}

/// Dense ids for distinct keys: the keys in a vector indexed by id, and a
/// hash table of 4-byte ids looking into it. A `HashMap<K, i64>` costs
/// `size_of::<K>() + 8` bytes a slot at a load of 7/8 to 7/16, and a
/// growing map holds its old and new slots at once; here a key is held
/// once at its size (the vector grows by `realloc`, which moves large
/// blocks by remapping pages, not by copying them) and a slot is 4 bytes
/// (plus hashbrown's 1 control byte). For 7.3 M stacks keyed by a 128-bit
/// hash: 415 MB at the peak of a map's growth, ~190 MB here.
///
/// Ids are `u32`: past 2^32 - 1 distinct keys (an input of hundreds of GB)
/// new keys still get new ids, but are no longer found again (each
/// sighting is a new id: the tables stay right, only less deduplicated).
pub struct IdTable<K> {
    keys: Vec<K>,
    table: HashTable<u32>,
}

impl<K> Default for IdTable<K> {
    fn default() -> Self {
        IdTable {
            keys: Vec::new(),
            table: HashTable::new(),
        }
    }
}

impl<K: Eq> IdTable<K> {
    /// The id of `key`, and whether it is new; `hash` hashes a key (the
    /// same function on every call).
    #[inline]
    pub fn id(&mut self, key: K, hash: impl Fn(&K) -> u64) -> (usize, bool) {
        let h = hash(&key);
        let keys = &self.keys;
        if let Some(&id) = self.table.find(h, |&id| keys[id as usize] == key) {
            return (id as usize, false);
        }
        let id = self.keys.len();
        self.keys.push(key);
        if let Ok(id32) = u32::try_from(id) {
            let keys = &self.keys;
            self.table
                .insert_unique(h, id32, |&i| hash(&keys[i as usize]));
        }
        (id, true)
    }

    /// The id of `key` when it was seen; `hash` as [`IdTable::id`]'s.
    #[inline]
    pub fn get(&self, key: K, hash: impl Fn(&K) -> u64) -> Option<usize> {
        let keys = &self.keys;
        self.table
            .find(hash(&key), |&id| keys[id as usize] == key)
            .map(|&id| id as usize)
    }

    /// The key of an id given.
    #[inline]
    pub fn key(&self, id: usize) -> &K {
        &self.keys[id]
    }

    /// Distinct keys seen (ids given).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_their_hash() {
        let mut m = HashKeyMap::<i64>::default();
        let h = HashKeyMap::<i64>::key_hash;
        m.insert_new(h(&[1, 2, 3]), 0);
        m.insert_new(h(&[1, 2]), 1);
        m.insert_new(h(&[]), 2);
        assert_eq!(m.get(h(&[1, 2, 3])), Some(&0));
        assert_eq!(m.get(h(&[1, 2])), Some(&1));
        assert_eq!(m.get(h(&[])), Some(&2));
        assert_eq!(m.get(h(&[2, 3])), None);
        assert_eq!(m.get(h(&[1, 2, 3, 4])), None);
        assert_eq!(m.len(), 3);
        m.clear();
        assert!(m.is_empty());
        assert_eq!(m.get(h(&[1, 2])), None);
    }

    #[test]
    fn id_table_gives_dense_ids_to_distinct_keys() {
        let mut t = IdTable::<(i64, u64)>::default();
        // A poor hash (many keys in one bucket) must not merge keys.
        let hash = |k: &(i64, u64)| k.1 % 3;
        let keys: Vec<(i64, u64)> = (0..3000u64)
            .map(|i| ((i % 5) as i64 - 1, i % 1000))
            .collect();
        let mut first: Vec<(i64, u64)> = Vec::new();
        for k in &keys {
            let (id, new) = t.id(*k, hash);
            match first.iter().position(|f| f == k) {
                Some(p) => assert_eq!((id, new), (p, false), "{k:?}"),
                None => {
                    assert_eq!((id, new), (first.len(), true), "{k:?}");
                    first.push(*k);
                }
            }
        }
        assert_eq!(t.len(), first.len());
        assert!(!t.is_empty());
    }

    #[test]
    fn many_keys_with_shared_prefixes() {
        let mut m = HashKeyMap::<usize>::default();
        let keys: Vec<Vec<u8>> = (0..5000usize)
            .map(|i| (0..i % 37).map(|j| (i * 7 + j) as u8).collect())
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let h = HashKeyMap::<usize>::key_hash(k);
            if m.get(h).is_none() {
                m.insert_new(h, i);
            }
        }
        for k in &keys {
            let first = keys.iter().position(|x| x == k).unwrap();
            assert_eq!(m.get(HashKeyMap::<usize>::key_hash(k)), Some(&first));
        }
    }
}
