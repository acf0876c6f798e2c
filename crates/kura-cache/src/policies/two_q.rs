//! 2Q (Johnson & Shasha, VLDB 1994), the full version: new blocks enter a FIFO
//! `A1in`; blocks evicted from it are remembered (ids only) in `A1out`; a miss on a
//! remembered block goes to the LRU `Am`, which holds blocks proven to be re-used.
//! Sizes as the paper recommends: Kin = 25 % of the cache, Kout = 50 %.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::Lists;

const A1IN: u8 = 0;
const AM: u8 = 1;
/// Ghost list: ids only, not resident.
const A1OUT: u8 = 2;

pub struct TwoQ {
    capacity: usize,
    kin: usize,
    kout: usize,
    lists: Lists<()>,
    map: IdIndex,
    /// Incoming block that was in A1out when `evict_for` made room for it: it goes
    /// to Am even if that eviction pushed it out of A1out (the paper tests A1out
    /// before reclaiming).
    promote: Option<BlockId>,
}

impl TwoQ {
    pub fn new(capacity: usize) -> Self {
        Self::with_params(capacity, (capacity / 4).max(1), (capacity / 2).max(1))
    }

    /// `kin`: resident blocks `A1in` may hold before it is the one to lose a block;
    /// `kout`: ids remembered in `A1out`.
    pub fn with_params(capacity: usize, kin: usize, kout: usize) -> Self {
        Self {
            capacity,
            kin,
            kout,
            lists: Lists::new(3, capacity + kout),
            map: IdIndex::with_capacity(capacity + kout),
            promote: None,
        }
    }

    fn take(&mut self, idx: u32) -> BlockId {
        let id = self.lists.node(idx).id;
        if self.lists.node(idx).list == A1IN {
            // Remember it: a re-reference soon proves it belongs in Am.
            self.lists.unlink(idx);
            self.lists.push_front(A1OUT, idx);
            if self.lists.len(A1OUT) > self.kout {
                let old = self.lists.back(A1OUT);
                let old_id = self.lists.node(old).id;
                self.lists.release(old);
                self.map.remove(old_id);
            }
        } else {
            self.lists.release(idx);
            self.map.remove(id);
        }
        id
    }
}

impl Policy for TwoQ {
    fn name(&self) -> &'static str {
        "2q"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.lists.len(A1IN) + self.lists.len(AM)
    }

    fn contains(&self, id: BlockId) -> bool {
        self.map
            .get(id)
            .is_some_and(|idx| self.lists.node(idx).list != A1OUT)
    }

    fn access(&mut self, id: BlockId) {
        // A hit in A1in does nothing: correlated references right after the first
        // one must not promote a block.
        if let Some(idx) = self.map.get(id) {
            if self.lists.node(idx).list == AM {
                self.lists.move_to_front(AM, idx);
            }
        }
    }

    fn insert(&mut self, id: BlockId) {
        let promote = self.promote.take() == Some(id);
        match self.map.get(id) {
            Some(idx) => {
                debug_assert_eq!(self.lists.node(idx).list, A1OUT);
                self.lists.unlink(idx);
                self.lists.push_front(AM, idx);
            }
            None => {
                let idx = self.lists.alloc(id, ());
                self.lists.push_front(if promote { AM } else { A1IN }, idx);
                self.map.insert(id, idx);
            }
        }
    }

    fn evict_for(
        &mut self,
        incoming: BlockId,
        evictable: &mut dyn FnMut(BlockId) -> bool,
    ) -> Option<BlockId> {
        let remembered = self
            .map
            .get(incoming)
            .is_some_and(|idx| self.lists.node(idx).list == A1OUT);
        let victim = self.evict(evictable);
        self.promote = remembered.then_some(incoming);
        victim
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        self.promote = None;
        let (first, second) = if self.lists.len(A1IN) > self.kin || self.lists.len(AM) == 0 {
            (A1IN, AM)
        } else {
            (AM, A1IN)
        };
        let idx = self
            .lists
            .find_from_back(first, evictable)
            .or_else(|| self.lists.find_from_back(second, evictable))?;
        Some(self.take(idx))
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(idx) if self.lists.node(idx).list != A1OUT => {
                self.lists.release(idx);
                self.map.remove(id);
                true
            }
            _ => false,
        }
    }
}
