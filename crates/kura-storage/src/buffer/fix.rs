//! Fixing a page: the pinned fast path, the slow path that takes a frame and reads it (or
//! fills it from the second tier), private reads, completion and invalidation.

use super::*;

/// Marks the calling thread as one that must never block waiting for a page
/// read issued by someone else — a task runtime's worker, whose own queued
/// tasks may be the ones that finish that read. A synchronous fix on such a
/// thread that finds the page being read reads a private copy instead.
pub fn forbid_blocking_waits(forbid: bool) {
    NO_BLOCKING_WAITS.with(|c| c.set(forbid));
}

pub(super) fn blocking_waits_forbidden() -> bool {
    NO_BLOCKING_WAITS.with(|c| c.get())
}

impl BufferManager {
    /// Non-blocking fix (see the module doc). A hit takes no lock: a look-up in
    /// the page table, one compare-and-swap on the frame's state word, and at most
    /// a store to the frame and a push to this thread's log for the policy.
    #[inline]
    pub fn try_fix(self: &Arc<Self>, page: PageId) -> StorageResult<FixAttempt> {
        let slot = slot_index();
        let core = &*self.core;
        thread_io::note_fix();
        let fixes = &core.slots[slot].fixes;
        if slot == SHARED_SLOT {
            fixes.fetch_add(1, Ordering::Relaxed);
        } else {
            // This thread is the slot's only writer: a plain load and store
            // count exactly, without a locked read-modify-write on every fix.
            fixes.store(fixes.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
        core.trace.request(page);
        if let Some(f) = core.table.get(page) {
            if let Some(k) = core.try_pin(f, page) {
                return Ok(self.pinned(slot, f, page, k));
            }
        }
        self.fix_slow(slot, page)
    }

    /// A pinned frame of `page` as a fix's answer.
    #[inline]
    pub(super) fn pinned(&self, slot: usize, f: u32, page: PageId, k: u64) -> FixAttempt {
        if k == READY {
            self.core.note_hit(slot, f, page);
            FixAttempt::Hit(self.core.guard(f, page))
        } else {
            // Loading: the page will be served by someone else's read.
            FixAttempt::InFlight(InFlight {
                h: self.handle(slot),
                frame: f,
                page,
                pinned: true,
            })
        }
    }

    /// The fix of a page the lock-free look-up did not pin: under the lock the
    /// page table is exact, so the page is either pinned now or missing.
    pub(super) fn fix_slow(
        self: &Arc<Self>,
        slot: usize,
        page: PageId,
    ) -> StorageResult<FixAttempt> {
        let core = &*self.core;
        let mut inner = core.lock();
        if let Some(f) = core.table.get(page) {
            // Listed under the lock: ready or loading, unlatched, holding `page`.
            return match core.try_pin(f, page) {
                Some(k) => {
                    drop(inner);
                    Ok(self.pinned(slot, f, page, k))
                }
                None => Err(StorageError::Invalid(format!(
                    "buffer pool: page {page} is listed in frame {f}, which does not hold it"
                ))),
            };
        }
        core.counters.misses.fetch_add(1, Ordering::Relaxed);
        // The tier is asked before the pool evicts (the simulator's order: an
        // exclusive tier's hit leaves it before the pool's victim comes down).
        let image = inner
            .tier
            .as_ref()
            .and_then(|t| t.take(page).map(|hit| (t.clone(), hit)));
        core.drain_hits(&mut inner);
        let Some(f) = core.take_frame(&mut inner, page) else {
            return Err(StorageError::BufferExhausted {
                frames: core.frames.len(),
            });
        };
        core.assign(&mut inner, f, page);
        let ticket = ReadTicket {
            h: self.handle(slot),
            frame: f,
            page,
            done: false,
        };
        drop(inner);
        match image {
            Some((t, hit)) => self.fill_from_tier(ticket, &t, hit),
            None => Ok(FixAttempt::Miss(ticket)),
        }
    }

    /// Serves a reserved frame from the tier without disk I/O: decompresses an
    /// image, or reads the page from the kernel's cache if it still holds it.
    /// Otherwise the ticket is left to be read from disk.
    pub(super) fn fill_from_tier(
        &self,
        mut ticket: ReadTicket,
        tier: &tier::Tier,
        hit: tier::TierHit,
    ) -> StorageResult<FixAttempt> {
        let served = match hit {
            tier::TierHit::Image(image) => tier::decompress_into(&image, ticket.buffer()),
            tier::TierHit::PageCache => {
                let page = ticket.page;
                let file = &self.core.file;
                let cached = matches!(file.read_page_if_cached(page, ticket.buffer()), Ok(true));
                if !cached {
                    tier.lost();
                } else if tier.mode() == kura_cache::Mode::Exclusive {
                    // Moved up: the kernel's copy would hold the page twice.
                    file.drop_from_page_cache(page, 1);
                }
                cached
            }
        };
        if !served {
            return Ok(FixAttempt::Miss(ticket));
        }
        self.core
            .complete_from(ticket, Ok(()), true)
            .map(FixAttempt::Hit)
    }

    /// Synchronous fix: a miss is read with `pread` on the calling thread.
    ///
    /// On a thread that may not block (a runtime worker), a miss that finds every
    /// frame pinned reads a private copy too: the pins are other tasks', and
    /// those tasks may need this very thread to run before they let go.
    pub fn fix(self: &Arc<Self>, page: PageId) -> StorageResult<PageGuard> {
        loop {
            let attempt = match self.try_fix(page) {
                Err(StorageError::BufferExhausted { .. }) if blocking_waits_forbidden() => {
                    return self.read_private(page);
                }
                other => other?,
            };
            match attempt {
                FixAttempt::Hit(g) => return Ok(g),
                FixAttempt::Miss(mut t) => {
                    observer::note(SyncRead::Submitted);
                    let r = {
                        let _request = self.start_read();
                        self.core.file.read_page_raw(page, t.buffer())
                    };
                    observer::note(SyncRead::Completed { pages: 1 });
                    return self.complete(t, r);
                }
                FixAttempt::InFlight(w) if blocking_waits_forbidden() && !w.is_done() => {
                    drop(w);
                    return self.read_private(page);
                }
                FixAttempt::InFlight(w) => {
                    if let Some(g) = w.wait() {
                        return Ok(g);
                    }
                    // The other read failed: try ourselves (and report its error).
                }
            }
        }
    }

    /// Reads `page` into a buffer of its own (checked like any page), for a
    /// thread that may not wait for the read already under way.
    pub(super) fn read_private(self: &Arc<Self>, page: PageId) -> StorageResult<PageGuard> {
        let core = &*self.core;
        // Aligned: the file may be open with O_DIRECT.
        let mut buf = crate::file::aligned::AlignedBuf::new(core.page_size);
        observer::note(SyncRead::Submitted);
        let r = {
            let _request = core.counters.start_read();
            core.file.read_page_raw(page, &mut buf)
        };
        observer::note(SyncRead::Completed { pages: 1 });
        r?;
        core.file.verify_page(page, &buf[..core.page_size])?;
        // A disk read like any other, though no frame keeps the page.
        core.count_disk_read(page);
        Ok(PageGuard {
            state: std::ptr::null(),
            bytes: buf.as_ptr(),
            len: core.page_size,
            frame: u32::MAX,
            page,
            private: Some(buf),
        })
    }

    /// Finishes a miss: `read` is the outcome of reading the page into the
    /// ticket's buffer. Verifies the checksum and wakes the waiters.
    pub fn complete(
        &self,
        ticket: ReadTicket,
        read: StorageResult<()>,
    ) -> StorageResult<PageGuard> {
        self.core.complete(ticket, read)
    }

    /// Drops a cached copy of `page` (its id is about to hold new contents).
    pub fn invalidate(&self, page: PageId) {
        let core = &*self.core;
        let mut inner = core.lock();
        if let Some(t) = &inner.tier {
            t.remove(page);
        }
        core.drain_hits(&mut inner);
        let Some(f) = core.table.remove(page) else {
            return;
        };
        inner.policy.remove(page);
        let frame = &core.frames[f as usize];
        if frame.resident.swap(false, Ordering::AcqRel) {
            // Its resident pin goes with it (the index was dropped).
            inner.resident.retain(|&r| r != f);
            frame.state.fetch_sub(1, Ordering::AcqRel);
        }
        // Unpinned: straight back to the free list (the CAS fails if a reader
        // pinned it meanwhile). Pinned: detached, freed by its last unpin.
        loop {
            let st = frame.state.load(Ordering::Acquire);
            if pins(st) == 0 {
                if core.try_free(&mut inner, f, st) {
                    return;
                }
            } else if frame
                .state
                .compare_exchange(
                    st,
                    (st & !KIND_MASK) | (DETACHED << KIND_SHIFT),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                inner.detached.push(f);
                return;
            }
        }
    }
}

impl Core {
    /// A frame for a page about to be read: a free one, or an unpinned victim
    /// of the policy, latched and unlisted. `None` when every frame is pinned.
    pub(super) fn take_frame(&self, inner: &mut Inner, incoming: PageId) -> Option<u32> {
        if let Some(f) = inner.free.pop() {
            return Some(f);
        }
        self.reclaim_detached(inner);
        if let Some(f) = inner.free.pop() {
            return Some(f);
        }
        let mut latched: Vec<(PageId, u32)> = Vec::new();
        let table = &self.table;
        // The policy may now clear reference bits: later hits are reported anew.
        self.round.fetch_add(1, Ordering::Relaxed);
        let victim = inner
            .policy
            .evict_for(incoming, &mut |p| match table.get(p) {
                Some(f) if self.try_latch(f) => {
                    latched.push((p, f));
                    true
                }
                _ => false,
            });
        let mut taken = None;
        for (p, f) in latched {
            if Some(p) == victim && taken.is_none() {
                taken = Some(f);
            } else {
                // Latched but not chosen (a policy that looked on): let it go.
                self.frames[f as usize]
                    .state
                    .fetch_and(!LATCH, Ordering::AcqRel);
            }
        }
        let f = taken?;
        let victim = victim?;
        table.remove(victim);
        // Exclusive tier: the victim (clean, still in its latched frame) moves
        // down before the frame is overwritten — compressed under the lock,
        // which a miss holds anyway.
        if let Some(t) = &inner.tier {
            if t.mode() == kura_cache::Mode::Exclusive {
                t.put(victim, self.frame_bytes(f));
            }
        }
        Some(f)
    }

    /// Counts a page read from disk: in the pool's and this thread's counters
    /// and in the trace.
    pub(super) fn count_disk_read(&self, page: PageId) {
        self.counters.pages_read.fetch_add(1, Ordering::Relaxed);
        thread_io::note_read();
        self.counters
            .bytes_read
            .fetch_add(self.page_size as u64, Ordering::Relaxed);
        self.trace.read(page);
    }

    /// Finishes a miss: `read` is the outcome of reading the page into the
    /// ticket's buffer. Verifies the checksum and wakes the waiters.
    pub(super) fn complete(
        &self,
        ticket: ReadTicket,
        read: StorageResult<()>,
    ) -> StorageResult<PageGuard> {
        self.complete_from(ticket, read, false)
    }

    /// [`Core::complete`] for a page read from disk (`from_tier` false: counted
    /// as a read, traced, and put into an inclusive tier) or decompressed from
    /// the second tier (none of those).
    pub(super) fn complete_from(
        &self,
        mut ticket: ReadTicket,
        read: StorageResult<()>,
        from_tier: bool,
    ) -> StorageResult<PageGuard> {
        ticket.done = true;
        let core = self;
        let result = read.and_then(|_| {
            core.file
                .verify_page(ticket.page, core.frame_bytes(ticket.frame))
        });
        match result {
            Ok(()) => {
                if !from_tier {
                    core.count_disk_read(ticket.page);
                }
                let tier = {
                    let inner = core.lock();
                    // Invalidated meanwhile: it stays detached (the caller still
                    // reads what it asked for; the frame frees with its last pin).
                    let listed = core.set_kind(ticket.frame, Some(LOADING), READY);
                    core.loaded.notify_all();
                    inner
                        .tier
                        .clone()
                        .filter(|t| listed && !from_tier && t.mode() == kura_cache::Mode::Inclusive)
                };
                core.waiters.wake(ticket.frame);
                // Inclusive: a page read from disk goes into both levels. The
                // ticket's pin keeps the frame's bytes in place while they are
                // compressed (outside the lock); the image goes in under the
                // lock only if the page is still listed, so an invalidation in
                // between (which drops the tier's image under the same lock)
                // cannot leave an old image behind.
                if let Some(t) = tier {
                    // A page-cache tier holds it already: the read went
                    // through the kernel's cache.
                    let image = t
                        .page_cache()
                        .is_none()
                        .then(|| tier::compress(core.frame_bytes(ticket.frame)));
                    let _inner = core.lock();
                    if core.table.get(ticket.page) == Some(ticket.frame) {
                        match image {
                            Some(image) => t.insert(ticket.page, image),
                            None => t.note_read(ticket.page),
                        }
                    }
                }
                Ok(core.guard(ticket.frame, ticket.page))
            }
            Err(e) => {
                let mut inner = core.lock();
                core.drain_hits(&mut inner);
                if core.table.get(ticket.page) == Some(ticket.frame) {
                    core.table.remove(ticket.page);
                    inner.policy.remove(ticket.page);
                }
                core.set_kind(ticket.frame, None, DETACHED);
                core.unpin_locked(&mut inner, ticket.frame);
                if kind(
                    core.frames[ticket.frame as usize]
                        .state
                        .load(Ordering::Acquire),
                ) == DETACHED
                {
                    // Still pinned by waiters: freed by a later reclaim.
                    inner.detached.push(ticket.frame);
                }
                core.loaded.notify_all();
                drop(inner);
                core.waiters.wake(ticket.frame);
                Err(e)
            }
        }
    }
}
