//! Dense `u32` block ids for the fast path: ids already small are kept as they are
//! (arrays indexed by id stay compact); scattered or huge ids are renumbered 0, 1,
//! 2, ... in order of first request, which changes no policy's decisions.

use std::borrow::Cow;

use crate::policy::BlockId;
use crate::util::idmap::id_map_with_capacity;

/// Ids below this many are kept as they are when most of them occur (the id arrays
/// cost 4–8 bytes per id of the range).
const KEEP_LIMIT: u64 = 1 << 26;

/// Whether at least half of the ids `0..=max` occur (a bitmap count): then arrays
/// indexed by the ids as they are waste little, and no renumbering is needed.
fn mostly_used(requests: &[BlockId], max: u64) -> bool {
    let mut seen = vec![0u64; (max / 64 + 1) as usize];
    let mut distinct = 0u64;
    for &id in requests {
        let (word, bit) = ((id / 64) as usize, 1u64 << (id % 64));
        distinct += u64::from(seen[word] & bit == 0);
        seen[word] |= bit;
    }
    2 * distinct > max
}

/// Requests as dense ids `0..universe`, owned or borrowed (a mapped binary trace).
#[derive(Clone, Debug)]
pub struct DenseTrace<'a> {
    ids: Cow<'a, [u32]>,
    universe: usize,
}

impl<'a> DenseTrace<'a> {
    /// Makes `requests` dense, renumbering only when the id range is too large or
    /// too sparse for id-indexed arrays.
    pub fn from_ids(requests: &[BlockId]) -> DenseTrace<'static> {
        let max = requests.iter().copied().max().unwrap_or(0);
        let ids: Vec<u32> = if max < KEEP_LIMIT && mostly_used(requests, max) {
            requests.iter().map(|&id| id as u32).collect()
        } else {
            let mut map = id_map_with_capacity::<u32>(1024);
            requests
                .iter()
                .map(|&id| {
                    let next = map.len() as u32;
                    *map.entry(id).or_insert(next)
                })
                .collect()
        };
        let universe = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
        DenseTrace {
            ids: Cow::Owned(ids),
            universe,
        }
    }

    /// Ids known to be below `universe` (checked: an id at or above it is an error).
    pub fn from_dense(ids: Cow<'a, [u32]>, universe: usize) -> Result<Self, String> {
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= universe) {
            return Err(format!(
                "block id {bad} is outside the trace's declared range 0..{universe}"
            ));
        }
        Ok(Self { ids, universe })
    }

    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// One more than the largest id: the size of the policies' id arrays.
    pub fn universe(&self) -> usize {
        self.universe
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids widened for the reference policies.
    pub fn to_block_ids(&self) -> Vec<BlockId> {
        self.ids.iter().map(|&id| BlockId::from(id)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ids_are_kept_and_scattered_ones_renumbered() {
        let t = DenseTrace::from_ids(&[5, 3, 5, 1, 0, 2, 4]);
        assert_eq!((t.ids(), t.universe()), (&[5u32, 3, 5, 1, 0, 2, 4][..], 6));
        // sparse: 3 of 10_001 ids used
        let t = DenseTrace::from_ids(&[10_000, 3, 10_000, 9]);
        assert_eq!((t.ids(), t.universe()), (&[0u32, 1, 0, 2][..], 3));
        let t = DenseTrace::from_ids(&[u64::MAX, 1 << 40, u64::MAX, 7]);
        assert_eq!((t.ids(), t.universe()), (&[0u32, 1, 0, 2][..], 3));
        let t = DenseTrace::from_ids(&[]);
        assert_eq!((t.len(), t.universe()), (0, 0));
        assert!(DenseTrace::from_dense(Cow::Owned(vec![1, 4]), 4).is_err());
    }
}
