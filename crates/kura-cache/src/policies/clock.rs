//! CLOCK (second chance): a circular array of slots with one reference bit each and
//! a hand that clears set bits until it finds a clear one. A newly inserted block
//! starts with its bit clear, so only a hit earns it a second chance.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;

const EMPTY: BlockId = BlockId::MAX;

pub struct Clock {
    capacity: usize,
    /// Block id per slot, `EMPTY` if free. Grows up to `capacity`.
    slots: Vec<BlockId>,
    referenced: Vec<bool>,
    /// Free slots below `slots.len()` (left by evictions and removals).
    free: Vec<usize>,
    map: IdIndex,
    hand: usize,
}

impl Clock {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            slots: Vec::with_capacity(capacity),
            referenced: Vec::with_capacity(capacity),
            free: Vec::new(),
            map: IdIndex::with_capacity(capacity),
            hand: 0,
        }
    }

    fn vacate(&mut self, slot: usize) -> BlockId {
        let id = self.slots[slot];
        self.slots[slot] = EMPTY;
        self.referenced[slot] = false;
        self.free.push(slot);
        self.map.remove(id);
        id
    }
}

impl Policy for Clock {
    fn name(&self) -> &'static str {
        "clock"
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
            Some(slot) => {
                self.referenced[slot as usize] = true;
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, id: BlockId) {
        debug_assert!(!self.map.contains(id));
        // A freed slot is the victim's, just behind the hand: the new block is looked
        // at last, after one full revolution, as in the classic clock.
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = id;
                self.referenced[slot] = false;
                slot
            }
            None => {
                self.slots.push(id);
                self.referenced.push(false);
                self.slots.len() - 1
            }
        };
        self.map.insert(id, slot as u32);
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let n = self.slots.len();
        if n == 0 || self.map.is_empty() {
            return None;
        }
        // One revolution clears every bit; the second then meets every evictable
        // block with a clear bit, so 2n + 1 steps decide.
        for _ in 0..=2 * n {
            let slot = self.hand;
            self.hand = if slot + 1 == n { 0 } else { slot + 1 };
            let id = self.slots[slot];
            if id == EMPTY {
                continue;
            }
            if self.referenced[slot] {
                self.referenced[slot] = false;
            } else if evictable(id) {
                return Some(self.vacate(slot));
            }
        }
        None
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(slot) => {
                self.vacate(slot as usize);
                true
            }
            None => false,
        }
    }
}
