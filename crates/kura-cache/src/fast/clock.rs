//! CLOCK over dense ids: the id's table entry holds its slot and, in the top bit, its
//! reference bit, so a hit writes one word. Same decisions as [`crate::policies::Clock`].

use super::DensePolicy;

const ABSENT: u32 = u32::MAX;
const EMPTY: u32 = u32::MAX;
/// Reference bit inside a `slot_of` entry (slots are < 2^30, see `MAX_CAPACITY`).
const REFERENCED: u32 = 1 << 31;

pub(crate) struct DenseClock {
    capacity: usize,
    /// Per id: its slot | REFERENCED, or ABSENT.
    slot_of: Vec<u32>,
    /// Per slot: its id or EMPTY. Grows up to `capacity`.
    slots: Vec<u32>,
    free: Vec<u32>,
    hand: usize,
    len: usize,
}

impl DenseClock {
    pub fn new(capacity: usize, universe: usize) -> Self {
        Self {
            capacity,
            slot_of: vec![ABSENT; universe],
            slots: Vec::with_capacity(capacity),
            free: Vec::new(),
            hand: 0,
            len: 0,
        }
    }

    fn vacate(&mut self, slot: usize) -> u32 {
        let id = self.slots[slot];
        self.slots[slot] = EMPTY;
        self.slot_of[id as usize] = ABSENT;
        self.free.push(slot as u32);
        self.len -= 1;
        id
    }
}

impl DensePolicy for DenseClock {
    #[inline(always)]
    fn touch(&mut self, id: u32) -> bool {
        let entry = &mut self.slot_of[id as usize];
        if *entry == ABSENT {
            return false;
        }
        *entry |= REFERENCED;
        true
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        self.slot_of[id as usize] != ABSENT
    }

    fn remove(&mut self, id: u32) -> bool {
        let entry = self.slot_of[id as usize];
        if entry == ABSENT {
            return false;
        }
        self.vacate((entry & !REFERENCED) as usize);
        true
    }

    #[inline(always)]
    fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    #[inline]
    fn evict_for(&mut self, _incoming: u32) -> Option<u32> {
        let n = self.slots.len();
        if n == 0 || self.len == 0 {
            return None;
        }
        for _ in 0..=2 * n {
            let slot = self.hand;
            self.hand = if slot + 1 == n { 0 } else { slot + 1 };
            let id = self.slots[slot];
            if id == EMPTY {
                continue;
            }
            let entry = &mut self.slot_of[id as usize];
            if *entry & REFERENCED != 0 {
                *entry &= !REFERENCED;
            } else {
                return Some(self.vacate(slot));
            }
        }
        None
    }

    #[inline(always)]
    fn insert(&mut self, id: u32) {
        // A freed slot is the victim's, just behind the hand (as the reference).
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = id;
                slot
            }
            None => {
                self.slots.push(id);
                (self.slots.len() - 1) as u32
            }
        };
        self.slot_of[id as usize] = slot;
        self.len += 1;
    }

    #[inline(always)]
    fn prefetch(&self, id: u32) {
        super::prefetch(self.slot_of.as_ptr().wrapping_add(id as usize));
    }
}
