//! ARC over dense ids: T1, T2 and the ghosts B1, B2 threaded through one id array.
//! A line-by-line port of [`crate::policies::Arc`]'s steps, so the decisions match.

use super::lists::{DenseLists, NIL, NONE};
use super::DensePolicy;

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

pub(crate) struct DenseArc {
    capacity: usize,
    p: usize,
    lists: DenseLists<4>,
    adapted: Option<u32>,
}

impl DenseArc {
    pub fn new(capacity: usize, universe: usize) -> Self {
        Self {
            capacity,
            p: 0,
            lists: DenseLists::new(universe),
            adapted: None,
        }
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

    fn tracked(&self) -> usize {
        (0..4).map(|l| self.lists.len(l)).sum()
    }

    fn replace(&mut self, ghost: Option<u8>) -> Option<u32> {
        let t1 = self.lists.len(T1);
        if ghost.is_none() && t1 >= self.capacity {
            return self.lists.pop_back(T1);
        }
        let from_t1 = t1 >= 1 && (t1 > self.p || (ghost == Some(B2) && t1 == self.p));
        let (first, second) = if from_t1 { (T1, T2) } else { (T2, T1) };
        let mut id = self.lists.back(first);
        if id == NIL {
            id = self.lists.back(second);
        }
        if id == NIL {
            return None;
        }
        let ghost_list = if self.lists.list_of(id) == T1 { B1 } else { B2 };
        self.lists.unlink(id);
        self.lists.push_front(ghost_list, id);
        Some(id)
    }
}

impl DensePolicy for DenseArc {
    #[inline(always)]
    fn touch(&mut self, id: u32) -> bool {
        if matches!(self.lists.list_of(id), T1 | T2) {
            self.lists.move_to_front(T2, id);
            return true;
        }
        false
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        matches!(self.lists.list_of(id), T1 | T2)
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
        self.lists.len(T1) + self.lists.len(T2) >= self.capacity
    }

    #[inline]
    fn evict_for(&mut self, incoming: u32) -> Option<u32> {
        let ghost = match self.lists.list_of(incoming) {
            g @ (B1 | B2) => Some(g),
            _ => None,
        };
        self.adapted = None;
        if let Some(g) = ghost {
            self.adapt(g);
            self.adapted = Some(incoming);
        }
        self.replace(ghost)
    }

    #[inline]
    fn insert(&mut self, id: u32) {
        match self.lists.list_of(id) {
            NONE => {
                self.lists.push_front(T1, id);
                // Keep |T1| + |B1| ≤ c and the directory ≤ 2c (cases IV.A and IV.B).
                if self.lists.len(T1) + self.lists.len(B1) > self.capacity {
                    self.lists.pop_back(B1);
                }
                if self.tracked() > 2 * self.capacity {
                    if self.lists.len(B2) > 0 {
                        self.lists.pop_back(B2);
                    } else {
                        self.lists.pop_back(B1);
                    }
                }
            }
            ghost => {
                debug_assert!(ghost == B1 || ghost == B2);
                if self.adapted != Some(id) {
                    self.adapt(ghost);
                }
                self.lists.unlink(id);
                self.lists.push_front(T2, id);
            }
        }
        self.adapted = None;
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
