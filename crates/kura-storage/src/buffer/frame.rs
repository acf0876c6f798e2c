//! The frame state word (pin count, kind: free, loading, ready or detached, latch and
//! version in one atomic) and the frame transitions on it.

use super::*;

// A frame's state word: pin count (bits 0..32), kind (32..35), exclusive latch
// (bit 35) and a version (40..64) that changes whenever the frame is given to
// another page. A reader pins with one compare-and-swap, refused while the frame
// is latched or holds no page; the pool latches a frame (only with no pins, under
// its lock) before giving it away, so a pinned frame never changes page.
pub(super) const PIN_MASK: u64 = 0xffff_ffff;

pub(super) const KIND_SHIFT: u32 = 32;

pub(super) const KIND_MASK: u64 = 0b111 << KIND_SHIFT;

pub(super) const LATCH: u64 = 1 << 35;

pub(super) const VERSION_SHIFT: u32 = 40;

pub(super) const FREE: u64 = 0;

pub(super) const LOADING: u64 = 1;

pub(super) const READY: u64 = 2;

/// The read failed or the page was invalidated while pinned: the frame leaves the
/// page table and returns to the free list when its last pin goes.
pub(super) const DETACHED: u64 = 3;

#[inline]
pub(super) fn pins(state: u64) -> u64 {
    state & PIN_MASK
}

#[inline]
pub(super) fn kind(state: u64) -> u64 {
    (state & KIND_MASK) >> KIND_SHIFT
}

/// The state word of a frame just given to a page: `kind`, `pins`, unlatched, the
/// next version.
pub(super) fn fresh_state(old: u64, kind: u64, pins: u64) -> u64 {
    let version = (old >> VERSION_SHIFT).wrapping_add(1) << VERSION_SHIFT;
    version | (kind << KIND_SHIFT) | pins
}

impl Core {
    /// Pins frame `f` if it holds `page` and is ready or being read; the kind it
    /// had. `None` when the frame is latched, free, detached or holds another
    /// page (a stale look-up): the caller takes the slow path.
    #[inline]
    pub(super) fn try_pin(&self, f: u32, page: PageId) -> Option<u64> {
        let frame = &self.frames[f as usize];
        let mut st = frame.state.load(Ordering::Acquire);
        let k = loop {
            let k = kind(st);
            if st & LATCH != 0 || !(k == READY || k == LOADING) {
                return None;
            }
            match frame
                .state
                .compare_exchange_weak(st, st + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break k,
                Err(now) => st = now,
            }
        };
        // Pinned: the frame cannot change page any more, so this check is final.
        if frame.page.load(Ordering::Acquire) != page {
            self.unpin(f);
            return None;
        }
        Some(k)
    }

    /// Latches an unpinned ready frame for eviction (under the lock).
    pub(super) fn try_latch(&self, f: u32) -> bool {
        let frame = &self.frames[f as usize];
        let st = frame.state.load(Ordering::Acquire);
        st & LATCH == 0
            && pins(st) == 0
            && kind(st) == READY
            && frame
                .state
                .compare_exchange(st, st | LATCH, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Changes a frame's kind, keeping its pins (which readers may be changing).
    pub(super) fn set_kind(&self, f: u32, from: Option<u64>, to: u64) -> bool {
        self.frames[f as usize]
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |st| {
                if from.is_some_and(|k| kind(st) != k) {
                    return None;
                }
                Some((st & !KIND_MASK) | (to << KIND_SHIFT))
            })
            .is_ok()
    }

    /// Gives frame `f` (free, or latched by an eviction: nobody can pin it) to
    /// `page`, pinned once and loading, and lists it (under the lock).
    pub(super) fn assign(&self, inner: &mut Inner, f: u32, page: PageId) {
        let frame = &self.frames[f as usize];
        frame.page.store(page, Ordering::Release);
        frame.logged.store(0, Ordering::Relaxed);
        let old = frame.state.load(Ordering::Acquire);
        // A plain store is safe: a free or latched frame refuses every pin.
        frame
            .state
            .store(fresh_state(old, LOADING, 1), Ordering::Release);
        self.table.set(page, f);
        inner.policy.insert(page);
        self.register_frame(f, page);
    }

    /// Tells the memory-object registry (paper 002's profiler) that frame `f` now
    /// holds `page`, as soon as the frame is reserved — before the page is read or
    /// copied in, so that copy's misses are the page's too. The page's table,
    /// column or index is named when the log is taken.
    pub(super) fn register_frame(&self, f: u32, page: PageId) {
        let start = f as usize * self.page_size;
        kura_common::memobj::register(self.arena.as_ptr() as usize + start, self.page_size, || {
            kura_common::memobj::Object::frame(f, page, None)
        });
    }

    /// Unpins frame `f`; the last pin of a detached frame returns it to the free list.
    #[inline]
    pub(super) fn unpin(&self, f: u32) {
        let frame = &self.frames[f as usize];
        let old = frame.state.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(pins(old) > 0, "unpin of an unpinned frame");
        if pins(old) == 1 && kind(old) == DETACHED {
            let mut inner = self.lock();
            self.free_if_detached(&mut inner, f);
        }
    }

    pub(super) fn unpin_locked(&self, inner: &mut Inner, f: u32) {
        let old = self.frames[f as usize].state.fetch_sub(1, Ordering::AcqRel);
        if pins(old) == 1 && kind(old) == DETACHED {
            self.free_if_detached(inner, f);
        }
    }

    /// Returns a detached frame without pins to the free list (under the lock;
    /// exactly once, as the kind changes to FREE here).
    /// Whether the frame is still detached afterwards (pinned).
    pub(super) fn free_if_detached(&self, inner: &mut Inner, f: u32) -> bool {
        let frame = &self.frames[f as usize];
        let st = frame.state.load(Ordering::Acquire);
        if kind(st) != DETACHED {
            return false;
        }
        if pins(st) == 0 && self.try_free(inner, f, st) {
            return false;
        }
        // Pinned (or a pin changed under the check, which only a guard's
        // release can do): still detached.
        kind(frame.state.load(Ordering::Acquire)) == DETACHED
    }

    /// Gives frame `f`, whose state word was `st` with no pins, back to the
    /// free list; false when the word changed meanwhile (a reader pinned it).
    pub(super) fn try_free(&self, inner: &mut Inner, f: u32, st: u64) -> bool {
        let freed = self.frames[f as usize]
            .state
            .compare_exchange(
                st,
                fresh_state(st, FREE, 0),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if freed {
            inner.free.push(f);
        }
        freed
    }

    /// Frees the detached frames whose last pin is gone (a guard's drop only
    /// decrements the pin; the frame returns to the free list here).
    pub(super) fn reclaim_detached(&self, inner: &mut Inner) {
        if inner.detached.is_empty() {
            return;
        }
        // An entry no longer detached was freed meanwhile by a ticket's or
        // waiter's unpin: it is dropped from the list.
        for f in std::mem::take(&mut inner.detached) {
            if self.free_if_detached(inner, f) {
                inner.detached.push(f);
            }
        }
    }
}
