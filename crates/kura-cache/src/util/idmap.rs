//! Hash map keyed by block id with a multiplicative hasher: block ids are already
//! well spread integers, so a cryptographic hasher would only cost time on the hot path.

use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci-hashing hasher for `u64` keys. The high bits of the product are well
/// mixed, which is what hashbrown's control bytes use.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Only reached for non-u64 keys; fold bytes so the hasher stays total.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // Fold the high half down so the low bits (bucket index) are mixed too.
        self.0 = h ^ (h >> 29);
    }
}

pub(crate) type IdMap<V> = hashbrown::HashMap<u64, V, BuildHasherDefault<IdHasher>>;

pub(crate) fn id_map_with_capacity<V>(capacity: usize) -> IdMap<V> {
    IdMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default())
}

/// Value meaning "no entry" in an [`IdIndex`].
const ABSENT: u32 = u32::MAX;

/// Ids below this are kept in a directly indexed table (≤ 16 MiB of slots); the
/// first id at or above it switches the index to hashing for good.
const DIRECT_LIMIT: u64 = 1 << 22;

/// Block id → `u32` (a node or slot index). Page ids and the simulator's densified
/// trace ids are small integers, so the index starts as a plain table indexed by id —
/// one load per lookup, the classic page table — and only falls back to a hash map
/// when it meets an id too large for that.
#[derive(Clone, Debug)]
pub(crate) enum IdIndex {
    Direct { slots: Vec<u32>, len: usize },
    Hashed(IdMap<u32>),
}

impl IdIndex {
    pub fn with_capacity(capacity: usize) -> Self {
        IdIndex::Direct {
            slots: vec![ABSENT; capacity.min(DIRECT_LIMIT as usize)],
            len: 0,
        }
    }

    #[inline]
    pub fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdIndex::Direct { slots, .. } => match slots.get(id as usize) {
                Some(&v) if v != ABSENT && id < DIRECT_LIMIT => Some(v),
                _ => None,
            },
            IdIndex::Hashed(map) => map.get(&id).copied(),
        }
    }

    #[inline]
    pub fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id` (new or existing).
    #[inline]
    pub fn insert(&mut self, id: u64, value: u32) {
        debug_assert!(value != ABSENT);
        if let IdIndex::Direct { slots, len } = self {
            if id < DIRECT_LIMIT {
                let i = id as usize;
                if i >= slots.len() {
                    let grown = (i + 1).max(slots.len() * 2).min(DIRECT_LIMIT as usize);
                    slots.resize(grown, ABSENT);
                }
                if slots[i] == ABSENT {
                    *len += 1;
                }
                slots[i] = value;
                return;
            }
            self.switch_to_hashed();
        }
        if let IdIndex::Hashed(map) = self {
            map.insert(id, value);
        }
    }

    #[inline]
    pub fn remove(&mut self, id: u64) -> Option<u32> {
        match self {
            IdIndex::Direct { slots, len } => {
                let slot = slots.get_mut(id as usize)?;
                if *slot == ABSENT {
                    return None;
                }
                *len -= 1;
                Some(std::mem::replace(slot, ABSENT))
            }
            IdIndex::Hashed(map) => map.remove(&id),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            IdIndex::Direct { len, .. } => *len,
            IdIndex::Hashed(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn switch_to_hashed(&mut self) {
        if let IdIndex::Direct { slots, len } = self {
            let mut map = id_map_with_capacity(*len * 2);
            for (id, &v) in slots.iter().enumerate() {
                if v != ABSENT {
                    map.insert(id as u64, v);
                }
            }
            *self = IdIndex::Hashed(map);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_grows_and_switches_to_hashing_without_losing_entries() {
        let mut ix = IdIndex::with_capacity(4);
        ix.insert(3, 30);
        ix.insert(100, 1000);
        assert_eq!(
            (ix.get(3), ix.get(100), ix.get(50)),
            (Some(30), Some(1000), None)
        );
        ix.insert(3, 31);
        assert_eq!(ix.len(), 2);
        assert!(matches!(ix, IdIndex::Direct { .. }));
        ix.insert(u64::MAX - 5, 7);
        assert!(matches!(ix, IdIndex::Hashed(_)));
        assert_eq!(
            (ix.get(3), ix.get(100), ix.get(u64::MAX - 5)),
            (Some(31), Some(1000), Some(7))
        );
        assert_eq!(ix.remove(100), Some(1000));
        assert_eq!(ix.remove(100), None);
        assert_eq!(ix.len(), 2);
        let mut d = IdIndex::with_capacity(2);
        d.insert(1, 5);
        assert_eq!(d.remove(1), Some(5));
        assert_eq!(d.remove(1_000_000), None);
        assert!(d.is_empty());
    }
}
