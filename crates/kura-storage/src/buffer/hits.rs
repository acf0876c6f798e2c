//! Hits without the pool lock: each thread leases a slot, logs the pages it hit there in
//! batches, and the batches reach the replacement policy under the lock.

use super::*;

/// Thread slots: each thread counts its fixes and logs its hits in one slot, so
/// hits on different threads write no shared cache line. Slots `0..OWNED` are
/// leased to one live thread each; threads beyond that share the last slot.
pub(super) const SLOTS: usize = 33;

pub(super) const OWNED: usize = SLOTS - 1;

pub(super) const SHARED_SLOT: usize = OWNED;

/// Hits a slot logs before it hands them to the policy.
pub(super) const LOG_BATCH: usize = 64;

/// Owned slots no live thread holds.
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Owned slots never leased yet (then taken from `FREE_SLOTS`).
static NEVER_LEASED: AtomicUsize = AtomicUsize::new(0);

impl SlotLease {
    pub(super) fn take() -> SlotLease {
        let mut free = FREE_SLOTS.lock().unwrap_or_else(|p| p.into_inner());
        let index = free.pop().unwrap_or_else(|| {
            let n = NEVER_LEASED.fetch_add(1, Ordering::Relaxed);
            if n < OWNED {
                n
            } else {
                NEVER_LEASED.store(OWNED, Ordering::Relaxed);
                SHARED_SLOT
            }
        });
        SlotLease { index }
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        if self.index != SHARED_SLOT {
            FREE_SLOTS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(self.index);
        }
    }
}

#[inline]
pub(super) fn slot_index() -> usize {
    // A thread past its slot's destruction (a guard dropped by a TLS
    // destructor) counts in the shared slot.
    SLOT.try_with(|s| s.index).unwrap_or(SHARED_SLOT)
}

impl Slot {
    pub(super) fn log(&self) -> MutexGuard<'_, Vec<PageId>> {
        // Only pushes and takes happen under this lock: a poisoned log is intact.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(super) fn hit_kind_code(kind: HitKind) -> u8 {
    match kind {
        HitKind::Ignored => 0,
        HitKind::Idempotent => 1,
        HitKind::Ordered => 2,
    }
}

impl Core {
    pub(super) fn hit_kind(&self) -> u8 {
        self.hit_kind.load(Ordering::Relaxed)
    }

    /// Reports a hit to the policy, off the hit path: CLOCK-like policies once per
    /// page and eviction round (the frame's `logged` flag), FIFO and RAND never,
    /// the others every time — in the thread slot's log, handed over in batches.
    #[inline]
    pub(super) fn note_hit(&self, slot: usize, f: u32, page: PageId) {
        let frame = &self.frames[f as usize];
        if frame.resident.load(Ordering::Relaxed) {
            return;
        }
        match self.hit_kind() {
            0 => {}
            1 => {
                let round = self.round.load(Ordering::Relaxed);
                if frame.logged.load(Ordering::Relaxed) != round {
                    frame.logged.store(round, Ordering::Relaxed);
                    self.log_hit(slot, page);
                }
            }
            _ => self.log_hit(slot, page),
        }
    }

    pub(super) fn log_hit(&self, slot: usize, page: PageId) {
        let mut log = self.slots[slot].log();
        log.push(page);
        if log.len() >= LOG_BATCH {
            let batch = std::mem::take(&mut *log);
            drop(log);
            let mut inner = self.lock();
            self.apply_hits(&mut inner, batch);
        }
    }

    pub(super) fn apply_hits(&self, inner: &mut Inner, batch: Vec<PageId>) {
        for page in batch {
            // The page may have gone since (invalidated, evicted after its pin
            // went): `touch` then changes nothing.
            inner.policy.touch(page);
        }
    }

    /// Hands every logged hit to the policy (under the lock), before it chooses a
    /// victim or changes otherwise: with one thread the policy then sees exactly
    /// the request stream, in order, as `kura cachesim` does.
    pub(super) fn drain_hits(&self, inner: &mut Inner) {
        for slot in self.slots.iter() {
            let batch = std::mem::take(&mut *slot.log());
            if !batch.is_empty() {
                self.apply_hits(inner, batch);
            }
        }
    }
}
