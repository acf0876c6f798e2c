//! MQ, the multi-queue policy of Zhou, Philbin and Li (USENIX ATC 2001), designed for
//! second-level buffer caches: m LRU queues, a block with reference count f lives in
//! queue min(⌊log2 f⌋, m − 1); a block not referenced for `lifetime` requests drops
//! one queue (expire times); evicted blocks' counts are remembered in the history
//! queue Qout, so a returning block resumes its count. Paper 004 notes that on a
//! uniform trace it degenerates to LRU.

use crate::policy::{BlockId, Policy};
use crate::util::idmap::IdIndex;
use crate::util::list::{Lists, NIL};

/// Queues used when none is given (the MQ paper uses 8).
pub const DEFAULT_QUEUES: usize = 8;
const MAX_QUEUES: usize = 32;

#[derive(Clone, Copy, Debug)]
pub struct Meta {
    freq: u64,
    expire: u64,
}

pub struct Mq {
    capacity: usize,
    queues: u8,
    qout: u8,
    history: usize,
    lifetime: u64,
    now: u64,
    lists: Lists<Meta>,
    map: IdIndex,
    resident: usize,
}

impl Mq {
    /// MQ with 8 queues, lifetime = capacity requests, Qout = 4 × capacity ids.
    pub fn new(capacity: usize) -> Self {
        Self::with_params(capacity, DEFAULT_QUEUES, capacity as u64, 4 * capacity)
    }

    /// `queues` ∈ 1..=32; `lifetime` in requests; `history` = ids Qout remembers.
    pub fn with_params(capacity: usize, queues: usize, lifetime: u64, history: usize) -> Self {
        let queues = queues.clamp(1, MAX_QUEUES) as u8;
        Self {
            capacity,
            queues,
            qout: queues,
            history,
            lifetime: lifetime.max(1),
            now: 0,
            lists: Lists::new(usize::from(queues) + 1, capacity + history),
            map: IdIndex::with_capacity(capacity + history),
            resident: 0,
        }
    }

    /// The queue for reference count `freq` ≥ 1: ⌊log2 freq⌋, capped.
    fn queue_for(&self, freq: u64) -> u8 {
        let log2 = 63 - freq.max(1).leading_zeros();
        log2.min(u32::from(self.queues) - 1) as u8
    }

    fn place(&mut self, idx: u32) {
        let freq = self.lists.node(idx).data.freq;
        let q = self.queue_for(freq);
        self.lists.node_mut(idx).data.expire = self.now + self.lifetime;
        self.lists.move_to_front(q, idx);
    }

    /// Demotes, in every queue but the lowest, the LRU block whose expire time
    /// passed — one per queue per request, as in the MQ paper.
    fn adjust(&mut self) {
        for q in 1..self.queues {
            let back = self.lists.back(q);
            if back != NIL && self.lists.node(back).data.expire < self.now {
                self.lists.node_mut(back).data.expire = self.now + self.lifetime;
                self.lists.unlink(back);
                self.lists.push_front(q - 1, back);
            }
        }
    }
}

impl Policy for Mq {
    fn name(&self) -> &'static str {
        "mq"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.resident
    }

    fn contains(&self, id: BlockId) -> bool {
        self.map
            .get(id)
            .is_some_and(|idx| self.lists.node(idx).list != self.qout)
    }

    fn access(&mut self, id: BlockId) {
        self.now += 1;
        if let Some(idx) = self.map.get(id) {
            self.lists.node_mut(idx).data.freq += 1;
            self.place(idx);
        }
        self.adjust();
    }

    fn insert(&mut self, id: BlockId) {
        self.now += 1;
        let idx = match self.map.get(id) {
            Some(idx) => {
                // Back from Qout: resume its reference count.
                self.lists.unlink(idx);
                self.lists.node_mut(idx).data.freq += 1;
                idx
            }
            None => {
                let idx = self.lists.alloc(id, Meta { freq: 1, expire: 0 });
                self.map.insert(id, idx);
                idx
            }
        };
        self.resident += 1;
        let q = self.queue_for(self.lists.node(idx).data.freq);
        self.lists.node_mut(idx).data.expire = self.now + self.lifetime;
        self.lists.push_front(q, idx);
        self.adjust();
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let idx = (0..self.queues).find_map(|q| self.lists.find_from_back(q, evictable))?;
        let id = self.lists.node(idx).id;
        self.lists.unlink(idx);
        self.resident -= 1;
        if self.history == 0 {
            self.lists.release(idx);
            self.map.remove(id);
        } else {
            self.lists.push_front(self.qout, idx);
            if self.lists.len(self.qout) > self.history {
                let old = self.lists.back(self.qout);
                let old_id = self.lists.node(old).id;
                self.lists.release(old);
                self.map.remove(old_id);
            }
        }
        Some(id)
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.map.get(id) {
            Some(idx) if self.lists.node(idx).list != self.qout => {
                self.lists.release(idx);
                self.map.remove(id);
                self.resident -= 1;
                true
            }
            _ => false,
        }
    }
}
