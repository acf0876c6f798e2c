//! LRU, MRU and FIFO over dense ids: one list threaded through the id array. Same
//! decisions as [`crate::policies::Recency`].

use super::lists::{DenseLists, NONE};
use super::DensePolicy;
use crate::policies::RecencyKind;

const MAIN: u8 = 0;

pub(crate) struct DenseRecency {
    kind: RecencyKind,
    capacity: usize,
    lists: DenseLists<1>,
}

impl DenseRecency {
    pub fn new(kind: RecencyKind, capacity: usize, universe: usize) -> Self {
        Self {
            kind,
            capacity,
            lists: DenseLists::new(universe),
        }
    }
}

impl DensePolicy for DenseRecency {
    #[inline(always)]
    fn touch(&mut self, id: u32) -> bool {
        if self.lists.list_of(id) == NONE {
            return false;
        }
        if self.kind != RecencyKind::Fifo {
            self.lists.move_to_front(MAIN, id);
        }
        true
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        self.lists.list_of(id) != NONE
    }

    #[inline(always)]
    fn remove(&mut self, id: u32) -> bool {
        let resident = self.contains(id);
        if resident {
            self.lists.unlink(id);
        }
        resident
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.lists.len(MAIN) >= self.capacity
    }

    #[inline(always)]
    fn evict_for(&mut self, _incoming: u32) -> Option<u32> {
        match self.kind {
            RecencyKind::Lru | RecencyKind::Fifo => {
                let victim = self.lists.pop_back(MAIN);
                // The next victim is cold; start fetching it now.
                let next = self.lists.back(MAIN);
                if next != super::lists::NIL {
                    self.lists.prefetch(self.lists.newer(next));
                }
                victim
            }
            RecencyKind::Mru => {
                let front = self.lists.front(MAIN);
                (front != super::lists::NIL).then(|| {
                    self.lists.unlink(front);
                    front
                })
            }
        }
    }

    #[inline(always)]
    fn insert(&mut self, id: u32) {
        self.lists.push_front(MAIN, id);
    }

    /// MRU keeps demoted blocks at the back, where they go last (as the reference).
    #[inline(always)]
    fn insert_protected(&mut self, id: u32) {
        if self.kind == RecencyKind::Mru {
            self.lists.push_back(MAIN, id);
        } else {
            self.lists.push_front(MAIN, id);
        }
    }

    #[inline(always)]
    fn prefetch(&self, id: u32) {
        self.lists.prefetch(id);
    }

    #[inline(always)]
    fn victim_hint(&self) -> Option<u32> {
        let back = self.lists.back(MAIN);
        (self.kind != RecencyKind::Mru && back != super::lists::NIL).then_some(back)
    }

    #[inline(always)]
    fn prefetch_deep(&self, id: u32) {
        if self.kind != RecencyKind::Fifo {
            self.lists.prefetch_neighbours(id);
        }
    }
}
