//! LFU: evicts the block with the fewest hits since it became resident, the least
//! recently used among equals. Counts are forgotten on eviction (in-cache LFU), so
//! a block's history does not outlive it. O(log n) per operation via an ordered set.

use std::collections::BTreeSet;

use crate::policy::{BlockId, Policy};
use crate::util::idmap::{id_map_with_capacity, IdMap};

pub struct Lfu {
    capacity: usize,
    /// (frequency, last-use stamp, id), smallest first = next victim.
    order: BTreeSet<(u64, u64, BlockId)>,
    /// id → (frequency, last-use stamp).
    meta: IdMap<(u64, u64)>,
    clock: u64,
}

impl Lfu {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            order: BTreeSet::new(),
            meta: id_map_with_capacity(capacity),
            clock: 0,
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

impl Policy for Lfu {
    fn name(&self) -> &'static str {
        "lfu"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.meta.len()
    }

    fn contains(&self, id: BlockId) -> bool {
        self.meta.contains_key(&id)
    }

    fn access(&mut self, id: BlockId) {
        let now = self.tick();
        if let Some(m) = self.meta.get_mut(&id) {
            self.order.remove(&(m.0, m.1, id));
            *m = (m.0 + 1, now);
            self.order.insert((m.0, m.1, id));
        }
    }

    fn insert(&mut self, id: BlockId) {
        let now = self.tick();
        self.meta.insert(id, (1, now));
        self.order.insert((1, now, id));
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let key = *self.order.iter().find(|&&(_, _, id)| evictable(id))?;
        self.order.remove(&key);
        self.meta.remove(&key.2);
        Some(key.2)
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.meta.remove(&id) {
            Some((f, t)) => {
                self.order.remove(&(f, t, id));
                true
            }
            None => false,
        }
    }
}
