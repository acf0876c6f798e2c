//! RAND: evicts a uniformly random resident block, from a seeded generator so runs
//! are reproducible.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::rng::SplitMix64;

/// Random picks tried before falling back to a scan when candidates are pinned.
const RANDOM_TRIES: usize = 8;

pub struct Random {
    capacity: usize,
    /// Dense array of resident ids, so a random index is a random block.
    ids: Vec<BlockId>,
    pos: IdIndex,
    rng: SplitMix64,
}

impl Random {
    pub fn new(capacity: usize, seed: u64) -> Self {
        Self {
            capacity,
            ids: Vec::with_capacity(capacity),
            pos: IdIndex::with_capacity(capacity),
            rng: SplitMix64::new(seed),
        }
    }

    fn take(&mut self, i: usize) -> BlockId {
        let id = self.ids.swap_remove(i);
        self.pos.remove(id);
        if let Some(&moved) = self.ids.get(i) {
            self.pos.insert(moved, i as u32);
        }
        id
    }
}

impl Policy for Random {
    fn name(&self) -> &'static str {
        "rand"
    }

    fn hit_kind(&self) -> crate::HitKind {
        crate::HitKind::Ignored
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn contains(&self, id: BlockId) -> bool {
        self.pos.contains(id)
    }

    fn access(&mut self, _id: BlockId) {}

    fn insert(&mut self, id: BlockId) {
        debug_assert!(!self.pos.contains(id));
        self.pos.insert(id, self.ids.len() as u32);
        self.ids.push(id);
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let n = self.ids.len();
        if n == 0 {
            return None;
        }
        for _ in 0..RANDOM_TRIES {
            let i = self.rng.below(n as u64) as usize;
            if evictable(self.ids[i]) {
                return Some(self.take(i));
            }
        }
        // Mostly pinned: scan once from a random start so the answer is still exact.
        let start = self.rng.below(n as u64) as usize;
        let i = (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| evictable(self.ids[i]))?;
        Some(self.take(i))
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.pos.get(id) {
            Some(i) => {
                self.take(i as usize);
                true
            }
            None => false,
        }
    }
}
