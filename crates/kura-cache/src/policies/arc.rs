//! ARC, the adaptive replacement cache (Megiddo & Modha, FAST 2003): T1 holds blocks
//! seen once recently, T2 blocks seen at least twice; ghosts B1/B2 remember ids
//! recently evicted from each, and a hit on a ghost moves the target size `p` of T1
//! towards the list that would have kept it.
//!
//! The algorithm adapts `p` *before* choosing a victim, which needs the incoming id:
//! [`Policy::evict_for`] does exactly the paper's steps. A plain [`Policy::evict`]
//! (incoming id unknown) chooses as for a brand-new block and `insert` adapts `p`
//! afterwards.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::Lists;

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

pub struct Arc {
    capacity: usize,
    /// Target size of T1.
    p: usize,
    lists: Lists<()>,
    map: IdIndex,
    /// Block whose ghost hit already adapted `p` in `evict_for`.
    adapted: Option<BlockId>,
}

impl Arc {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            p: 0,
            lists: Lists::new(4, 2 * capacity),
            map: IdIndex::with_capacity(2 * capacity),
            adapted: None,
        }
    }

    /// Current target size of T1 (for tests and reports).
    pub fn target_t1(&self) -> usize {
        self.p
    }

    fn list_of(&self, id: BlockId) -> Option<u8> {
        self.map.get(id).map(|idx| self.lists.node(idx).list)
    }

    fn adapt(&mut self, ghost: u8) {
        let (b1, b2) = (self.lists.len(B1), self.lists.len(B2));
        if ghost == B1 {
            let delta = if b1 >= b2 { 1 } else { b2 / b1 };
            self.p = (self.p + delta).min(self.capacity);
        } else {
            let delta = if b2 >= b1 { 1 } else { b1 / b2 };
            self.p = self.p.saturating_sub(delta);
        }
    }

    fn drop_back(&mut self, list: u8) {
        let idx = self.lists.back(list);
        if idx != crate::util::list::NIL {
            let id = self.lists.node(idx).id;
            self.lists.release(idx);
            self.map.remove(id);
        }
    }

    /// The paper's REPLACE (and case IV.A's direct T1 eviction) for an incoming
    /// block found in ghost list `ghost` (or in none).
    fn replace(
        &mut self,
        ghost: Option<u8>,
        evictable: &mut dyn FnMut(BlockId) -> bool,
    ) -> Option<BlockId> {
        let t1 = self.lists.len(T1);
        if ghost.is_none() && t1 >= self.capacity {
            // |L1| = c with B1 empty: T1's LRU leaves without a ghost.
            let idx = self.lists.find_from_back(T1, evictable)?;
            let id = self.lists.node(idx).id;
            self.lists.release(idx);
            self.map.remove(id);
            return Some(id);
        }
        let from_t1 = t1 >= 1 && (t1 > self.p || (ghost == Some(B2) && t1 == self.p));
        let (first, second) = if from_t1 { (T1, T2) } else { (T2, T1) };
        let idx = self
            .lists
            .find_from_back(first, evictable)
            .or_else(|| self.lists.find_from_back(second, evictable))?;
        let ghost_list = if self.lists.node(idx).list == T1 {
            B1
        } else {
            B2
        };
        self.lists.unlink(idx);
        self.lists.push_front(ghost_list, idx);
        Some(self.lists.node(idx).id)
    }
}

impl Policy for Arc {
    fn name(&self) -> &'static str {
        "arc"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.lists.len(T1) + self.lists.len(T2)
    }

    fn contains(&self, id: BlockId) -> bool {
        matches!(self.list_of(id), Some(T1 | T2))
    }

    fn access(&mut self, id: BlockId) {
        self.touch(id);
    }

    #[inline]
    fn touch(&mut self, id: BlockId) -> bool {
        if let Some(idx) = self.map.get(id) {
            if matches!(self.lists.node(idx).list, T1 | T2) {
                self.lists.move_to_front(T2, idx);
                return true;
            }
        }
        false
    }

    fn insert(&mut self, id: BlockId) {
        match self.map.get(id) {
            Some(idx) => {
                let ghost = self.lists.node(idx).list;
                debug_assert!(ghost == B1 || ghost == B2);
                if self.adapted != Some(id) {
                    self.adapt(ghost);
                }
                self.lists.unlink(idx);
                self.lists.push_front(T2, idx);
            }
            None => {
                let idx = self.lists.alloc(id, ());
                self.lists.push_front(T1, idx);
                self.map.insert(id, idx);
                // Keep |T1| + |B1| ≤ c and the directory ≤ 2c (cases IV.A and IV.B).
                if self.lists.len(T1) + self.lists.len(B1) > self.capacity {
                    self.drop_back(B1);
                }
                let total = self.map.len();
                if total > 2 * self.capacity {
                    if self.lists.len(B2) > 0 {
                        self.drop_back(B2);
                    } else {
                        self.drop_back(B1);
                    }
                }
            }
        }
        self.adapted = None;
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        self.adapted = None;
        self.replace(None, evictable)
    }

    fn evict_for(
        &mut self,
        incoming: BlockId,
        evictable: &mut dyn FnMut(BlockId) -> bool,
    ) -> Option<BlockId> {
        let ghost = match self.list_of(incoming) {
            Some(g @ (B1 | B2)) => Some(g),
            _ => None,
        };
        self.adapted = None;
        if let Some(g) = ghost {
            self.adapt(g);
            self.adapted = Some(incoming);
        }
        self.replace(ghost, evictable)
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(idx) if matches!(self.lists.node(idx).list, T1 | T2) => {
                self.lists.release(idx);
                self.map.remove(id);
                true
            }
            _ => false,
        }
    }
}
