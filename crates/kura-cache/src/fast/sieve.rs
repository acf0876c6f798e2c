//! SIEVE over dense ids: a one-byte state per id (absent / resident / visited) makes
//! a hit a single byte write; the FIFO queue is threaded through the id array and
//! touched only on misses. Same decisions as [`crate::policies::Sieve`].

use super::lists::{DenseLists, NIL};
use super::DensePolicy;

const QUEUE: u8 = 0;
const ABSENT: u8 = 0;
const RESIDENT: u8 = 1;
const VISITED: u8 = 2;

pub(crate) struct DenseSieve {
    capacity: usize,
    state: Vec<u8>,
    lists: DenseLists<1>,
    /// Next id to examine; `NIL`: start from the back (oldest).
    hand: u32,
}

impl DenseSieve {
    pub fn new(capacity: usize, universe: usize) -> Self {
        Self {
            capacity,
            state: vec![ABSENT; universe],
            lists: DenseLists::new(universe),
            hand: NIL,
        }
    }

    fn step(&self, id: u32) -> u32 {
        match self.lists.newer(id) {
            NIL => self.lists.back(QUEUE),
            newer => newer,
        }
    }
}

impl DensePolicy for DenseSieve {
    #[inline(always)]
    fn touch(&mut self, id: u32) -> bool {
        let state = &mut self.state[id as usize];
        if *state == ABSENT {
            return false;
        }
        *state = VISITED;
        true
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        self.state[id as usize] != ABSENT
    }

    fn remove(&mut self, id: u32) -> bool {
        if self.state[id as usize] == ABSENT {
            return false;
        }
        if self.hand == id {
            self.hand = self.lists.newer(id);
        }
        self.lists.unlink(id);
        self.state[id as usize] = ABSENT;
        true
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.lists.len(QUEUE) >= self.capacity
    }

    #[inline]
    fn evict_for(&mut self, _incoming: u32) -> Option<u32> {
        let n = self.lists.len(QUEUE);
        if n == 0 {
            return None;
        }
        let mut cur = if self.hand == NIL {
            self.lists.back(QUEUE)
        } else {
            self.hand
        };
        for _ in 0..=2 * n {
            let state = &mut self.state[cur as usize];
            if *state == VISITED {
                *state = RESIDENT;
            } else {
                *state = ABSENT;
                self.hand = self.lists.newer(cur);
                self.lists.unlink(cur);
                return Some(cur);
            }
            cur = self.step(cur);
        }
        self.hand = cur;
        None
    }

    #[inline(always)]
    fn insert(&mut self, id: u32) {
        self.lists.push_front(QUEUE, id);
        self.state[id as usize] = RESIDENT;
    }

    #[inline(always)]
    fn prefetch(&self, id: u32) {
        super::prefetch(self.state.as_ptr().wrapping_add(id as usize));
    }
}
