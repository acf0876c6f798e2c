//! Groups whose keys are encoded as byte strings (wide or text keys: TPC-H Q10's
//! seven customer columns). The encodings lie end to end in one arena and the
//! table keeps each key's hash beside its group, so a new group costs no
//! allocation of its own, growing the table hashes no key again, and dropping
//! it frees two blocks instead of one per group.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

/// One key: its hash, its group, and where its bytes end in the arena.
#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    group: u32,
    /// Index into `ends`: the key's bytes are `ends[key - 1]..ends[key]`.
    key: u32,
}

#[derive(Default)]
pub(super) struct ByteKeys {
    table: HashTable<Slot>,
    arena: Vec<u8>,
    ends: Vec<usize>,
    hasher: DefaultHashBuilder,
}

impl ByteKeys {
    fn bytes(&self, key: u32) -> &[u8] {
        let k = key as usize;
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.arena[start..self.ends[k]]
    }

    pub(super) fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The group of `key` (hashed as [`ByteKeys::hash`] hashes it).
    pub(super) fn get(&self, hash: u64, key: &[u8]) -> Option<u32> {
        self.table
            .find(hash, |s| s.hash == hash && self.bytes(s.key) == key)
            .map(|s| s.group)
    }

    /// Adds `key` (not present) as group `group`.
    pub(super) fn insert(&mut self, hash: u64, key: &[u8], group: u32) {
        self.arena.extend_from_slice(key);
        self.ends.push(self.arena.len());
        let slot = Slot {
            hash,
            group,
            key: (self.ends.len() - 1) as u32,
        };
        self.table.insert_unique(hash, slot, |s| s.hash);
    }

    pub(super) fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Bytes the table, the arena and the key ends hold (allocated, not used).
    pub(super) fn held_bytes(&self) -> u64 {
        (self.table.capacity() * (std::mem::size_of::<Slot>() + 1)
            + self.arena.capacity()
            + self.ends.capacity() * std::mem::size_of::<usize>()) as u64
    }

    /// The memory of the table and the arena, as (address, bytes) spans, for
    /// the memory-object registry.
    pub(super) fn spans(&self) -> Vec<(usize, usize)> {
        let slots = self
            .table
            .iter()
            .map(|s| (s as *const Slot as usize, std::mem::size_of::<Slot>()));
        let mut out: Vec<(usize, usize)> =
            crate::ops::join::hash::table_span(slots, self.table.capacity())
                .into_iter()
                .collect();
        for (start, len) in [
            (self.arena.as_ptr() as usize, self.arena.capacity()),
            (
                self.ends.as_ptr() as usize,
                self.ends.capacity() * std::mem::size_of::<usize>(),
            ),
        ] {
            if len > 0 {
                out.push((start, len));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_find_their_groups_across_growth() {
        let mut m = ByteKeys::default();
        let key = |i: u32| format!("key number {i} with some text").into_bytes();
        for i in 0..10_000u32 {
            let k = key(i);
            let h = m.hash(&k);
            assert_eq!(m.get(h, &k), None);
            m.insert(h, &k, i * 3);
        }
        for i in 0..10_000u32 {
            let k = key(i);
            assert_eq!(m.get(m.hash(&k), &k), Some(i * 3));
        }
        // A prefix of a stored key, and the empty key, are other keys.
        assert_eq!(m.get(m.hash(b"key number 1"), b"key number 1"), None);
        assert_eq!(m.get(m.hash(b""), b""), None);
        m.insert(m.hash(b""), b"", 7);
        assert_eq!(m.get(m.hash(b""), b""), Some(7));
        assert!(m.capacity() >= 10_001 && !m.spans().is_empty());
    }
}
