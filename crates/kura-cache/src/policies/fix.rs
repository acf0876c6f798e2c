//! FIX: never replaces. The first `capacity` blocks stay forever; once full, a miss
//! is served without caching (`admits` turns false) — paper 004's "FIX" lower policy,
//! whose hit ratio on a uniform trace is capacity / data size. A buffer pool cannot
//! run it (a full pool must make room), so [`crate::make_buffer_policy`] rejects it.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;

pub struct Fix {
    capacity: usize,
    resident: IdIndex,
}

impl Fix {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            resident: IdIndex::with_capacity(capacity),
        }
    }
}

impl Policy for Fix {
    fn name(&self) -> &'static str {
        "fix"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.resident.len()
    }

    fn contains(&self, id: BlockId) -> bool {
        self.resident.contains(id)
    }

    fn access(&mut self, _id: BlockId) {}

    fn insert(&mut self, id: BlockId) {
        self.resident.insert(id, 0);
    }

    /// Never replaces: there is no victim, whatever is evictable.
    fn evict(&mut self, _evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        None
    }

    fn remove(&mut self, id: BlockId) -> bool {
        self.resident.remove(id).is_some()
    }

    fn admits(&self) -> bool {
        self.resident.len() < self.capacity
    }
}
