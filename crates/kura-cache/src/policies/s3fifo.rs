//! S3-FIFO (Yang et al., SOSP 2023): a small FIFO S (10 % of the cache) filters
//! one-hit wonders, a main FIFO M with reinsertion (2-bit frequency) keeps the rest,
//! and a ghost FIFO G (ids only, as many as M holds) sends returning blocks straight
//! to M. Follows the paper's Algorithm 1; since a caller needs exactly one victim,
//! an S→M move that overfills M ends the eviction with M's victim.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::Lists;

const SMALL: u8 = 0;
const MAIN: u8 = 1;
const GHOST: u8 = 2;
const MAX_FREQ: u8 = 3;

pub struct S3Fifo {
    capacity: usize,
    small_target: usize,
    main_target: usize,
    /// `data` = access frequency, capped at 3.
    lists: Lists<u8>,
    map: IdIndex,
}

impl S3Fifo {
    pub fn new(capacity: usize) -> Self {
        let small_target = (capacity / 10).max(1);
        let main_target = capacity.saturating_sub(small_target).max(1);
        Self {
            capacity,
            small_target,
            main_target,
            lists: Lists::new(3, capacity + main_target),
            map: IdIndex::with_capacity(capacity + main_target),
        }
    }

    fn evict_small(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        // Each block of S is looked at once: it moves to M, is evicted, or (pinned)
        // rotates to the head.
        for _ in 0..self.lists.len(SMALL) {
            let t = self.lists.back(SMALL);
            let (id, freq) = (self.lists.node(t).id, self.lists.node(t).data);
            if freq > 1 {
                self.lists.unlink(t);
                self.lists.push_front(MAIN, t);
                if self.lists.len(MAIN) > self.main_target {
                    if let Some(v) = self.evict_main(evictable) {
                        return Some(v);
                    }
                }
            } else if !evictable(id) {
                self.lists.move_to_front(SMALL, t);
            } else {
                self.lists.unlink(t);
                self.lists.push_front(GHOST, t);
                if self.lists.len(GHOST) > self.main_target {
                    let old = self.lists.back(GHOST);
                    let old_id = self.lists.node(old).id;
                    self.lists.release(old);
                    self.map.remove(old_id);
                }
                return Some(id);
            }
        }
        None
    }

    fn evict_main(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        // Frequencies are ≤ 3, so 4 passes bring every evictable block to 0.
        let n = self.lists.len(MAIN);
        if n == 0 {
            return None;
        }
        for _ in 0..=(usize::from(MAX_FREQ) + 1) * n {
            let t = self.lists.back(MAIN);
            let (id, freq) = (self.lists.node(t).id, self.lists.node(t).data);
            if freq > 0 {
                self.lists.node_mut(t).data = freq - 1;
                self.lists.move_to_front(MAIN, t);
            } else if !evictable(id) {
                self.lists.move_to_front(MAIN, t);
            } else {
                self.lists.release(t);
                self.map.remove(id);
                return Some(id);
            }
        }
        None
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> &'static str {
        "s3fifo"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.lists.len(SMALL) + self.lists.len(MAIN)
    }

    fn contains(&self, id: BlockId) -> bool {
        self.map
            .get(id)
            .is_some_and(|idx| self.lists.node(idx).list != GHOST)
    }

    #[inline]
    fn access(&mut self, id: BlockId) {
        self.touch(id);
    }

    #[inline]
    fn touch(&mut self, id: BlockId) -> bool {
        if let Some(idx) = self.map.get(id) {
            let node = self.lists.node_mut(idx);
            if node.list != GHOST {
                node.data = (node.data + 1).min(MAX_FREQ);
                return true;
            }
        }
        false
    }

    fn insert(&mut self, id: BlockId) {
        match self.map.get(id) {
            Some(idx) => {
                debug_assert_eq!(self.lists.node(idx).list, GHOST);
                self.lists.unlink(idx);
                self.lists.node_mut(idx).data = 0;
                self.lists.push_front(MAIN, idx);
            }
            None => {
                let idx = self.lists.alloc(id, 0);
                self.lists.push_front(SMALL, idx);
                self.map.insert(id, idx);
            }
        }
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        if self.lists.len(SMALL) >= self.small_target || self.lists.len(MAIN) == 0 {
            self.evict_small(evictable)
                .or_else(|| self.evict_main(evictable))
        } else {
            self.evict_main(evictable)
                .or_else(|| self.evict_small(evictable))
        }
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(idx) if self.lists.node(idx).list != GHOST => {
                self.lists.release(idx);
                self.map.remove(id);
                true
            }
            _ => false,
        }
    }
}
