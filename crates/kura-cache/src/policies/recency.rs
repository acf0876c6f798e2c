//! LRU, MRU and FIFO: one recency list, differing only in what a hit does and which
//! end is evicted. MRU is the lower-cache policy paper 004 proposes.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::Lists;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecencyKind {
    /// Evict the least recently used block.
    Lru,
    /// Evict the most recently used (or inserted) block.
    Mru,
    /// Evict the oldest inserted block; hits change nothing.
    Fifo,
}

const MAIN: u8 = 0;

/// Front of the list = most recently used/inserted.
pub struct Recency {
    kind: RecencyKind,
    capacity: usize,
    lists: Lists<()>,
    map: IdIndex,
}

impl Recency {
    pub fn new(kind: RecencyKind, capacity: usize) -> Self {
        Self {
            kind,
            capacity,
            lists: Lists::new(1, capacity),
            map: IdIndex::with_capacity(capacity),
        }
    }

    pub fn lru(capacity: usize) -> Self {
        Self::new(RecencyKind::Lru, capacity)
    }

    pub fn mru(capacity: usize) -> Self {
        Self::new(RecencyKind::Mru, capacity)
    }

    pub fn fifo(capacity: usize) -> Self {
        Self::new(RecencyKind::Fifo, capacity)
    }
}

impl Policy for Recency {
    fn name(&self) -> &'static str {
        match self.kind {
            RecencyKind::Lru => "lru",
            RecencyKind::Mru => "mru",
            RecencyKind::Fifo => "fifo",
        }
    }

    fn hit_kind(&self) -> crate::HitKind {
        // FIFO ignores hits; LRU and MRU reorder on every one.
        match self.kind {
            RecencyKind::Fifo => crate::HitKind::Ignored,
            _ => crate::HitKind::Ordered,
        }
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn contains(&self, id: BlockId) -> bool {
        self.map.contains(id)
    }

    #[inline]
    fn access(&mut self, id: BlockId) {
        self.touch(id);
    }

    #[inline]
    fn touch(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(idx) => {
                if self.kind != RecencyKind::Fifo {
                    self.lists.move_to_front(MAIN, idx);
                }
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, id: BlockId) {
        debug_assert!(!self.map.contains(id));
        let idx = self.lists.alloc(id, ());
        self.lists.push_front(MAIN, idx);
        self.map.insert(id, idx);
    }

    /// For MRU the protected end is the back: demoted blocks wait there while the
    /// front (just served) goes first. For LRU and FIFO it is the front, as `insert`.
    fn insert_protected(&mut self, id: BlockId) {
        if self.kind != RecencyKind::Mru {
            return self.insert(id);
        }
        debug_assert!(!self.map.contains(id));
        let idx = self.lists.alloc(id, ());
        self.lists.push_back(MAIN, idx);
        self.map.insert(id, idx);
    }

    #[inline]
    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let idx = match self.kind {
            RecencyKind::Lru | RecencyKind::Fifo => self.lists.find_from_back(MAIN, evictable),
            RecencyKind::Mru => self.lists.find_from_front(MAIN, evictable),
        }?;
        let id = self.lists.node(idx).id;
        self.lists.release(idx);
        self.map.remove(id);
        Some(id)
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.remove(id) {
            Some(idx) => {
                self.lists.release(idx);
                true
            }
            None => false,
        }
    }
}
