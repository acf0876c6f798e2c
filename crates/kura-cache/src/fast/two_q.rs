//! 2Q over dense ids: A1in, Am and the ghost A1out threaded through one id array.
//! A port of [`crate::policies::TwoQ`]'s steps, so the decisions match.

use super::lists::{DenseLists, NIL, NONE};
use super::DensePolicy;

const A1IN: u8 = 0;
const AM: u8 = 1;
const A1OUT: u8 = 2;

pub(crate) struct DenseTwoQ {
    capacity: usize,
    kin: usize,
    kout: usize,
    lists: DenseLists<3>,
    promote: Option<u32>,
}

impl DenseTwoQ {
    pub fn new(capacity: usize, universe: usize) -> Self {
        Self {
            capacity,
            kin: (capacity / 4).max(1),
            kout: (capacity / 2).max(1),
            lists: DenseLists::new(universe),
            promote: None,
        }
    }

    fn take(&mut self, id: u32) -> u32 {
        if self.lists.list_of(id) == A1IN {
            self.lists.unlink(id);
            self.lists.push_front(A1OUT, id);
            if self.lists.len(A1OUT) > self.kout {
                self.lists.pop_back(A1OUT);
            }
        } else {
            self.lists.unlink(id);
        }
        id
    }
}

impl DensePolicy for DenseTwoQ {
    #[inline(always)]
    fn touch(&mut self, id: u32) -> bool {
        match self.lists.list_of(id) {
            AM => {
                self.lists.move_to_front(AM, id);
                true
            }
            A1IN => true,
            _ => false,
        }
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        matches!(self.lists.list_of(id), A1IN | AM)
    }

    fn remove(&mut self, id: u32) -> bool {
        let resident = self.contains(id);
        if resident {
            self.lists.unlink(id);
        }
        resident
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.lists.len(A1IN) + self.lists.len(AM) >= self.capacity
    }

    #[inline]
    fn evict_for(&mut self, incoming: u32) -> Option<u32> {
        let remembered = self.lists.list_of(incoming) == A1OUT;
        let (first, second) = if self.lists.len(A1IN) > self.kin || self.lists.len(AM) == 0 {
            (A1IN, AM)
        } else {
            (AM, A1IN)
        };
        let mut id = self.lists.back(first);
        if id == NIL {
            id = self.lists.back(second);
        }
        let victim = (id != NIL).then(|| self.take(id));
        self.promote = remembered.then_some(incoming);
        victim
    }

    #[inline]
    fn insert(&mut self, id: u32) {
        let promote = self.promote.take() == Some(id);
        match self.lists.list_of(id) {
            NONE => self.lists.push_front(if promote { AM } else { A1IN }, id),
            list => {
                debug_assert_eq!(list, A1OUT);
                self.lists.unlink(id);
                self.lists.push_front(AM, id);
            }
        }
    }

    #[inline(always)]
    fn prefetch(&self, id: u32) {
        self.lists.prefetch(id);
    }

    #[inline(always)]
    fn prefetch_deep(&self, id: u32) {
        self.lists.prefetch_neighbours(id);
    }
}
