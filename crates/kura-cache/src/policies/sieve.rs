//! SIEVE (Zhang et al., NSDI 2024): a FIFO queue with one "visited" bit per block and
//! a hand that moves from the oldest block towards the newest, clearing bits until
//! it finds an unvisited block. Unlike CLOCK, survivors stay in place, so new blocks
//! (inserted at the head) are sifted quickly.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::{Lists, NIL};

const QUEUE: u8 = 0;

pub struct Sieve {
    capacity: usize,
    /// `data` = visited bit.
    lists: Lists<bool>,
    map: IdIndex,
    /// Next node to examine; `NIL` means start from the tail (oldest).
    hand: u32,
}

impl Sieve {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            lists: Lists::new(1, capacity),
            map: IdIndex::with_capacity(capacity),
            hand: NIL,
        }
    }

    fn step(&self, idx: u32) -> u32 {
        match self.lists.newer(idx) {
            NIL => self.lists.back(QUEUE),
            newer => newer,
        }
    }
}

impl Policy for Sieve {
    fn name(&self) -> &'static str {
        "sieve"
    }

    fn hit_kind(&self) -> crate::HitKind {
        crate::HitKind::Idempotent
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
                self.lists.node_mut(idx).data = true;
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, id: BlockId) {
        let idx = self.lists.alloc(id, false);
        self.lists.push_front(QUEUE, idx);
        self.map.insert(id, idx);
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let n = self.lists.len(QUEUE);
        if n == 0 {
            return None;
        }
        let mut cur = if self.hand == NIL {
            self.lists.back(QUEUE)
        } else {
            self.hand
        };
        // One pass clears every bit; the next meets each evictable block unvisited.
        for _ in 0..=2 * n {
            let visited = self.lists.node(cur).data;
            let id = self.lists.node(cur).id;
            if visited {
                self.lists.node_mut(cur).data = false;
            } else if evictable(id) {
                self.hand = self.lists.newer(cur);
                self.lists.release(cur);
                self.map.remove(id);
                return Some(id);
            }
            cur = self.step(cur);
        }
        self.hand = cur;
        None
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.remove(id) {
            Some(idx) => {
                if self.hand == idx {
                    self.hand = self.lists.newer(idx);
                }
                self.lists.release(idx);
                true
            }
            None => false,
        }
    }
}
