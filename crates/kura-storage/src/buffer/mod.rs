//! The buffer manager: page-sized frames, a page table, pin counts and a
//! replacement policy taken by name from kura-cache (so simulated and measured hit
//! ratios come from one implementation — paper 004).
//!
//! A fix is split in two so that a miss can suspend an asynchronous task instead
//! of blocking a thread (paper 003): [`BufferManager::try_fix`] answers at once
//! with a pinned hit, a [`ReadTicket`] (the caller reads the page into the frame —
//! synchronously with `pread`, or by submitting it to its worker's io_uring — and
//! then calls [`BufferManager::complete`]), or an in-flight read someone else is
//! doing. [`BufferManager::fix`] is the synchronous wrapper Serial mode and tools use.

mod observer;
mod stats;
mod table;
mod thread_io;
mod tier;
mod trace;
mod waiters;

pub use observer::{set_sync_read_observer, SyncRead};
pub use stats::BufferStats;
pub use thread_io::thread_io;
pub use tier::{parse_tier_kind, parse_tier_mode, TierCapacity, TierConfig, TierKind, TierStats};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use kura_cache::{HitKind, ObjectMap, Policy};

use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::PAGE_HEADER;
use crate::file::{DbFile, PageId};
use stats::Counters;
use table::PageTable;
pub use trace::TraceKind;

// A frame's state word: pin count (bits 0..32), kind (32..35), exclusive latch
// (bit 35) and a version (40..64) that changes whenever the frame is given to
// another page. A reader pins with one compare-and-swap, refused while the frame
// is latched or holds no page; the pool latches a frame (only with no pins, under
// its lock) before giving it away, so a pinned frame never changes page.
const PIN_MASK: u64 = 0xffff_ffff;
const KIND_SHIFT: u32 = 32;
const KIND_MASK: u64 = 0b111 << KIND_SHIFT;
const LATCH: u64 = 1 << 35;
const VERSION_SHIFT: u32 = 40;

const FREE: u64 = 0;
const LOADING: u64 = 1;
const READY: u64 = 2;
/// The read failed or the page was invalidated while pinned: the frame leaves the
/// page table and returns to the free list when its last pin goes.
const DETACHED: u64 = 3;

#[inline]
fn pins(state: u64) -> u64 {
    state & PIN_MASK
}

#[inline]
fn kind(state: u64) -> u64 {
    (state & KIND_MASK) >> KIND_SHIFT
}

/// The state word of a frame just given to a page: `kind`, `pins`, unlatched, the
/// next version.
fn fresh_state(old: u64, kind: u64, pins: u64) -> u64 {
    let version = (old >> VERSION_SHIFT).wrapping_add(1) << VERSION_SHIFT;
    version | (kind << KIND_SHIFT) | pins
}

/// One frame's bookkeeping, a cache line of its own so that threads pinning
/// neighbouring frames do not share a line.
#[repr(align(64))]
struct Frame {
    state: AtomicU64,
    page: AtomicU64,
    /// Held resident ([`BufferManager::make_resident`]): one extra pin, and the
    /// page is out of the policy's view so evictions never scan past it.
    resident: AtomicBool,
    /// The eviction round in which a hit on this page was last reported to the
    /// policy (CLOCK-like policies need one report per round, not one per hit).
    logged: AtomicU64,
}

struct Inner {
    free: Vec<u32>,
    policy: Box<dyn Policy>,
    /// Which object each page belongs to (for the access-density policy).
    objects: Arc<ObjectMap>,
    /// Frames held resident, in the order they were made so.
    resident: Vec<u32>,
    /// Frames detached while pinned, freed once their pins are gone.
    detached: Vec<u32>,
    /// The second tier below the pool, if any (`None`: no extra work anywhere).
    tier: Option<Arc<tier::Tier>>,
}

/// Most pages one synchronous read-ahead request reads (1 MiB of 16 KiB pages).
pub const MAX_READ_PAGES: usize = 64;

/// Frames that resident pages must always leave to queries: an eighth of the
/// pool, and at least 64, so scans, index searches and read-ahead keep room.
pub fn frames_reserved_for_queries(frames: usize) -> usize {
    (frames / 8).max(64).min(frames)
}

/// Thread slots: each thread counts its fixes and logs its hits in one slot, so
/// hits on different threads write no shared cache line. Slots `0..OWNED` are
/// leased to one live thread each; threads beyond that share the last slot.
const SLOTS: usize = 33;
const OWNED: usize = SLOTS - 1;
const SHARED_SLOT: usize = OWNED;
/// Hits a slot logs before it hands them to the policy.
const LOG_BATCH: usize = 64;

/// Owned slots no live thread holds.
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Owned slots never leased yet (then taken from `FREE_SLOTS`).
static NEVER_LEASED: AtomicUsize = AtomicUsize::new(0);

/// A thread's slot, returned to the free slots when the thread exits.
struct SlotLease {
    index: usize,
}

impl SlotLease {
    fn take() -> SlotLease {
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

thread_local! {
    static SLOT: SlotLease = SlotLease::take();
}

#[inline]
fn slot_index() -> usize {
    // A thread past its slot's destruction (a guard dropped by a TLS
    // destructor) counts in the shared slot.
    SLOT.try_with(|s| s.index).unwrap_or(SHARED_SLOT)
}

/// Per-thread-slot state of the hit path (two cache lines: no false sharing,
/// also with the adjacent-line prefetcher).
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    fixes: AtomicU64,
    /// Hits not yet reported to the policy, oldest first.
    log: Mutex<Vec<PageId>>,
}

impl Slot {
    fn log(&self) -> MutexGuard<'_, Vec<PageId>> {
        // Only pushes and takes happen under this lock: a poisoned log is intact.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What every ticket and waiter holds (page guards hold only their pin): a
/// counted reference to the pool through its thread slot's own handle, so that
/// a miss does not bump a reference count every thread shares.
#[repr(align(128))]
struct Handle {
    core: Arc<Core>,
}

/// The pool of page frames in front of the database file.
pub struct BufferManager {
    core: Arc<Core>,
    handles: Box<[Arc<Handle>]>,
}

struct Core {
    file: Arc<DbFile>,
    page_size: usize,
    /// Frame memory and bookkeeping: freed with the pool only if no frame is
    /// pinned then (a [`PageGuard`] points into both without a reference count).
    arena: std::mem::ManuallyDrop<AlignedBuf>,
    frames: std::mem::ManuallyDrop<Box<[Frame]>>,
    table: PageTable,
    /// The free list, the policy and the resident set; every change of the page
    /// table and every latch happen under it. Hits never take it.
    inner: Mutex<Inner>,
    loaded: Condvar,
    /// What the current policy makes of a hit ([`HitKind`] as a number).
    hit_kind: AtomicU8,
    /// The eviction round: advanced whenever the policy may clear what it knows
    /// of earlier hits (an eviction, a new policy). Starts at 1; 0 is "never".
    round: AtomicU64,
    slots: Box<[Slot]>,
    /// Wakers of tasks awaiting an in-flight read ([`InFlight::register_waker`]).
    waiters: waiters::Waiters,
    counters: Counters,
    tier_counters: Arc<tier::TierCounters>,
    trace: trace::Tracer,
}

fn hit_kind_code(kind: HitKind) -> u8 {
    match kind {
        HitKind::Ignored => 0,
        HitKind::Idempotent => 1,
        HitKind::Ordered => 2,
    }
}

/// Outcome of a non-blocking fix.
pub enum FixAttempt {
    /// Resident: pinned and ready.
    Hit(PageGuard),
    /// Not resident: a frame is reserved and pinned; read the page into
    /// [`ReadTicket::buffer`] and call [`BufferManager::complete`].
    Miss(ReadTicket),
    /// Another fix is reading this page; [`InFlight::wait`] blocks until it is in.
    InFlight(InFlight),
}

/// A reserved frame awaiting the contents of `page`.
pub struct ReadTicket {
    h: Arc<Handle>,
    frame: u32,
    page: PageId,
    done: bool,
}

/// A pinned frame whose page another fix is still reading.
pub struct InFlight {
    h: Arc<Handle>,
    frame: u32,
    page: PageId,
    /// Whether dropping this still owes an unpin (not once the pin passed on).
    pinned: bool,
}

/// A pinned, readable page. Unpins on drop. Dereferences to the page payload
/// (the bytes after the page header).
///
/// It holds no reference count on the pool: its pin keeps the frame's memory
/// in place (the pool's memory is not freed while a frame is pinned, see
/// `Core`'s `Drop`), and dropping it is one atomic decrement of the frame's
/// state word — the hit path's cost is two atomic operations on the frame.
pub struct PageGuard {
    /// The pinned frame's state word (unused for a private copy).
    state: *const AtomicU64,
    /// The page's bytes, header included: the frame's, or the private copy's.
    bytes: *const u8,
    len: usize,
    frame: u32,
    page: PageId,
    /// A private copy of the page, read by a thread that must not wait for
    /// another party's read (see [`forbid_blocking_waits`]); no frame is pinned.
    private: Option<crate::file::aligned::AlignedBuf>,
}

// SAFETY: the pointers are to a frame this guard has pinned (its bytes are not
// written while pinned, and the memory stays allocated while any frame is
// pinned) or to the guard's own heap copy; only reads and one atomic decrement
// go through them, from whichever thread holds or drops the guard.
unsafe impl Send for PageGuard {}
// SAFETY: as for Send: shared access only reads the page bytes.
unsafe impl Sync for PageGuard {}

thread_local! {
    static NO_BLOCKING_WAITS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one that must never block waiting for a page
/// read issued by someone else — a task runtime's worker, whose own queued
/// tasks may be the ones that finish that read. A synchronous fix on such a
/// thread that finds the page being read reads a private copy instead.
pub fn forbid_blocking_waits(forbid: bool) {
    NO_BLOCKING_WAITS.with(|c| c.set(forbid));
}

fn blocking_waits_forbidden() -> bool {
    NO_BLOCKING_WAITS.with(|c| c.get())
}

impl Core {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves the maps consistent (no partial
        // updates span a panic point), so a poisoned lock is safe to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline]
    fn frame_bytes(&self, f: u32) -> &[u8] {
        let start = f as usize * self.page_size;
        &self.arena[start..start + self.page_size]
    }

    /// The guard of frame `f`, which holds `page` and carries a pin the guard
    /// now owns.
    #[inline]
    fn guard(&self, f: u32, page: PageId) -> PageGuard {
        PageGuard {
            state: &self.frames[f as usize].state,
            bytes: self.frame_bytes(f).as_ptr(),
            len: self.page_size,
            frame: f,
            page,
            private: None,
        }
    }

    /// Frees the detached frames whose last pin is gone (a guard's drop only
    /// decrements the pin; the frame returns to the free list here).
    fn reclaim_detached(&self, inner: &mut Inner) {
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

    /// Frame memory for the one party allowed to write it (the ticket holder).
    #[allow(clippy::mut_from_ref)]
    fn frame_bytes_mut(&self, f: u32) -> &mut [u8] {
        let start = f as usize * self.page_size;
        assert!(start + self.page_size <= self.arena.len());
        // SAFETY: in bounds (checked above); only the holder of the frame's
        // ReadTicket writes a LOADING frame, and nobody reads it before `complete`
        // publishes READY (readers who pin a LOADING frame get an `InFlight`,
        // which gives access only once the state is READY).
        unsafe { std::slice::from_raw_parts_mut(self.arena.as_ptr().add(start), self.page_size) }
    }

    /// Pins frame `f` if it holds `page` and is ready or being read; the kind it
    /// had. `None` when the frame is latched, free, detached or holds another
    /// page (a stale look-up): the caller takes the slow path.
    #[inline]
    fn try_pin(&self, f: u32, page: PageId) -> Option<u64> {
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
    fn try_latch(&self, f: u32) -> bool {
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
    fn set_kind(&self, f: u32, from: Option<u64>, to: u64) -> bool {
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
    fn assign(&self, inner: &mut Inner, f: u32, page: PageId) {
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
    fn register_frame(&self, f: u32, page: PageId) {
        let start = f as usize * self.page_size;
        kura_common::memobj::register(self.arena.as_ptr() as usize + start, self.page_size, || {
            kura_common::memobj::Object::frame(f, page, None)
        });
    }

    /// Unpins frame `f`; the last pin of a detached frame returns it to the free list.
    #[inline]
    fn unpin(&self, f: u32) {
        let frame = &self.frames[f as usize];
        let old = frame.state.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(pins(old) > 0, "unpin of an unpinned frame");
        if pins(old) == 1 && kind(old) == DETACHED {
            let mut inner = self.lock();
            self.free_if_detached(&mut inner, f);
        }
    }

    fn unpin_locked(&self, inner: &mut Inner, f: u32) {
        let old = self.frames[f as usize].state.fetch_sub(1, Ordering::AcqRel);
        if pins(old) == 1 && kind(old) == DETACHED {
            self.free_if_detached(inner, f);
        }
    }

    /// Returns a detached frame without pins to the free list (under the lock;
    /// exactly once, as the kind changes to FREE here).
    /// Whether the frame is still detached afterwards (pinned).
    fn free_if_detached(&self, inner: &mut Inner, f: u32) -> bool {
        let frame = &self.frames[f as usize];
        let st = frame.state.load(Ordering::Acquire);
        if kind(st) != DETACHED {
            return false;
        }
        if pins(st) == 0
            && kind(st) == DETACHED
            && frame
                .state
                .compare_exchange(
                    st,
                    fresh_state(st, FREE, 0),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            inner.free.push(f);
            return false;
        }
        // Pinned (or a pin changed under the check, which only a guard's
        // release can do): still detached.
        kind(frame.state.load(Ordering::Acquire)) == DETACHED
    }

    fn hit_kind(&self) -> u8 {
        self.hit_kind.load(Ordering::Relaxed)
    }

    /// Reports a hit to the policy, off the hit path: CLOCK-like policies once per
    /// page and eviction round (the frame's `logged` flag), FIFO and RAND never,
    /// the others every time — in the thread slot's log, handed over in batches.
    #[inline]
    fn note_hit(&self, slot: usize, f: u32, page: PageId) {
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

    fn log_hit(&self, slot: usize, page: PageId) {
        let mut log = self.slots[slot].log();
        log.push(page);
        if log.len() >= LOG_BATCH {
            let batch = std::mem::take(&mut *log);
            drop(log);
            let mut inner = self.lock();
            self.apply_hits(&mut inner, batch);
        }
    }

    fn apply_hits(&self, inner: &mut Inner, batch: Vec<PageId>) {
        for page in batch {
            // The page may have gone since (invalidated, evicted after its pin
            // went): `touch` then changes nothing.
            inner.policy.touch(page);
        }
    }

    /// Hands every logged hit to the policy (under the lock), before it chooses a
    /// victim or changes otherwise: with one thread the policy then sees exactly
    /// the request stream, in order, as `kura cachesim` does.
    fn drain_hits(&self, inner: &mut Inner) {
        for slot in self.slots.iter() {
            let batch = std::mem::take(&mut *slot.log());
            if !batch.is_empty() {
                self.apply_hits(inner, batch);
            }
        }
    }

    /// A frame for a page about to be read: a free one, or an unpinned victim
    /// of the policy, latched and unlisted. `None` when every frame is pinned.
    fn take_frame(&self, inner: &mut Inner, incoming: PageId) -> Option<u32> {
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
    fn count_disk_read(&self, page: PageId) {
        self.counters.pages_read.fetch_add(1, Ordering::Relaxed);
        thread_io::note_read();
        self.counters
            .bytes_read
            .fetch_add(self.page_size as u64, Ordering::Relaxed);
        self.trace.read(page);
    }

    /// Finishes a miss: `read` is the outcome of reading the page into the
    /// ticket's buffer. Verifies the checksum and wakes the waiters.
    fn complete(&self, ticket: ReadTicket, read: StorageResult<()>) -> StorageResult<PageGuard> {
        self.complete_from(ticket, read, false)
    }

    /// [`Core::complete`] for a page read from disk (`from_tier` false: counted
    /// as a read, traced, and put into an inclusive tier) or decompressed from
    /// the second tier (none of those).
    fn complete_from(
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

    fn resident_count(&self) -> usize {
        self.frames
            .iter()
            .filter(|fr| matches!(kind(fr.state.load(Ordering::Acquire)), READY | LOADING))
            .count()
    }
}

impl BufferManager {
    /// A pool of `frames` frames over `file` using the named replacement policy.
    pub fn new(file: Arc<DbFile>, frames: usize, policy: &str) -> StorageResult<Arc<Self>> {
        let frames = frames.max(8);
        let policy = kura_cache::make_buffer_policy(policy, frames)
            .map_err(|e| StorageError::Policy(e.to_string()))?;
        let page_size = file.page_size();
        let arena = AlignedBuf::new(frames * page_size);
        let frame_vec: Vec<Frame> = (0..frames)
            .map(|_| Frame {
                state: AtomicU64::new(0),
                page: AtomicU64::new(u64::MAX),
                resident: AtomicBool::new(false),
                logged: AtomicU64::new(0),
            })
            .collect();
        let core = Arc::new(Core {
            file,
            page_size,
            arena: std::mem::ManuallyDrop::new(arena),
            frames: std::mem::ManuallyDrop::new(frame_vec.into_boxed_slice()),
            table: PageTable::new(),
            hit_kind: AtomicU8::new(hit_kind_code(policy.hit_kind())),
            round: AtomicU64::new(1),
            inner: Mutex::new(Inner {
                free: (0..frames as u32).rev().collect(),
                policy,
                objects: Arc::new(ObjectMap::new()),
                resident: Vec::new(),
                detached: Vec::new(),
                tier: None,
            }),
            loaded: Condvar::new(),
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            waiters: waiters::Waiters::default(),
            counters: Counters::default(),
            tier_counters: Arc::default(),
            trace: trace::Tracer::default(),
        });
        let handles = (0..SLOTS)
            .map(|_| Arc::new(Handle { core: core.clone() }))
            .collect();
        Ok(Arc::new(BufferManager { core, handles }))
    }

    fn handle(&self, slot: usize) -> Arc<Handle> {
        self.handles[slot].clone()
    }

    pub fn file(&self) -> &Arc<DbFile> {
        &self.core.file
    }

    pub fn page_size(&self) -> usize {
        self.core.page_size
    }

    /// Number of frames.
    pub fn capacity(&self) -> usize {
        self.core.frames.len()
    }

    /// Name of the replacement policy in use.
    pub fn policy_name(&self) -> &'static str {
        self.core.lock().policy.name()
    }

    /// Replaces the policy; resident pages are handed to the new one.
    pub fn set_policy(&self, name: &str) -> StorageResult<()> {
        let core = &*self.core;
        let mut policy = kura_cache::make_buffer_policy(name, core.frames.len())
            .map_err(|e| StorageError::Policy(e.to_string()))?;
        let mut inner = core.lock();
        // Hits logged for the old policy mean nothing to the new one.
        for slot in core.slots.iter() {
            slot.log().clear();
        }
        policy.set_objects(inner.objects.clone());
        core.round.fetch_add(1, Ordering::Relaxed);
        for (f, frame) in core.frames.iter().enumerate() {
            let st = frame.state.load(Ordering::Acquire);
            let page = frame.page.load(Ordering::Acquire);
            let listed =
                matches!(kind(st), READY | LOADING) && core.table.get(page) == Some(f as u32);
            if listed && !frame.resident.load(Ordering::Acquire) {
                policy.insert(page);
            }
        }
        core.hit_kind
            .store(hit_kind_code(policy.hit_kind()), Ordering::Relaxed);
        inner.policy = policy;
        Ok(())
    }

    /// Tells the replacement policy which object each page belongs to (kept
    /// across [`BufferManager::set_policy`]).
    pub fn set_objects(&self, objects: Arc<ObjectMap>) {
        let mut inner = self.core.lock();
        inner.policy.set_objects(objects.clone());
        inner.objects = objects;
    }

    /// Pages of the table column (`table.column`) or index named `name` in the
    /// file, as the object map counted them when the database was opened or
    /// last committed; `None` for a name it does not hold.
    pub fn object_pages(&self, name: &str) -> Option<u64> {
        let inner = self.core.lock();
        inner.objects.find(name).map(|o| inner.objects.size(o))
    }

    /// Frames held resident right now.
    pub fn resident_frames(&self) -> usize {
        self.core.lock().resident.len()
    }

    /// Frames queries may use: all but those held resident.
    pub fn available_frames(&self) -> usize {
        self.core.frames.len() - self.core.lock().resident.len()
    }

    /// Holds `pages` in the pool until [`BufferManager::release_resident`]:
    /// each is fixed (read if needed, in the order given) and keeps one pin, so
    /// no policy can evict it. Pages already resident stay so. Refused, before
    /// anything is read, when the resident pages would leave fewer than
    /// [`frames_reserved_for_queries`] frames. Returns the frames now resident.
    pub fn make_resident(self: &Arc<Self>, pages: &[PageId]) -> StorageResult<usize> {
        let core = &*self.core;
        let frames = core.frames.len();
        let reserve = frames_reserved_for_queries(frames);
        let already: std::collections::HashSet<PageId> = {
            let inner = core.lock();
            inner
                .resident
                .iter()
                .map(|&f| core.frames[f as usize].page.load(Ordering::Acquire))
                .collect()
        };
        let mut wanted: Vec<PageId> = Vec::with_capacity(pages.len());
        let mut seen = std::collections::HashSet::new();
        for &p in pages {
            if !already.contains(&p) && seen.insert(p) {
                wanted.push(p);
            }
        }
        let total = already.len() + wanted.len();
        if total > frames - reserve {
            return Err(StorageError::ResidentTooLarge {
                pages: total as u64,
                frames,
                reserve,
            });
        }
        for page in wanted {
            let guard = self.fix(page)?;
            if guard.private.is_some() {
                // A private copy holds no frame; nothing to keep.
                continue;
            }
            let mut inner = core.lock();
            core.drain_hits(&mut inner);
            let frame = &core.frames[guard.frame as usize];
            if kind(frame.state.load(Ordering::Acquire)) == READY
                && !frame.resident.swap(true, Ordering::AcqRel)
            {
                // The guard's pin keeps the frame from being latched meanwhile.
                frame.state.fetch_add(1, Ordering::AcqRel);
                inner.policy.remove(page);
                inner.resident.push(guard.frame);
            }
            drop(inner);
            drop(guard);
        }
        Ok(self.resident_frames())
    }

    /// Lets every resident page be evicted again (they stay cached until then).
    pub fn release_resident(&self) {
        let core = &*self.core;
        let mut inner = core.lock();
        core.drain_hits(&mut inner);
        let frames = std::mem::take(&mut inner.resident);
        for f in frames {
            let frame = &core.frames[f as usize];
            if !frame.resident.swap(false, Ordering::AcqRel) {
                continue;
            }
            if kind(frame.state.load(Ordering::Acquire)) == READY {
                let page = frame.page.load(Ordering::Acquire);
                // Room is guaranteed: resident frames were outside the policy.
                inner.policy.insert(page);
            }
            core.unpin_locked(&mut inner, f);
        }
    }

    pub fn stats(&self) -> BufferStats {
        let slots = &self.core.slots;
        self.core.counters.snapshot(
            || slots.iter().map(|s| s.fixes.load(Ordering::Relaxed)).sum(),
            self.core.tier_counters.snapshot(),
        )
    }

    /// Puts a second tier below the pool (`None` removes it). A new tier starts
    /// empty; the tier counters in [`BufferStats`] keep counting across changes.
    pub fn set_tier(&self, config: Option<TierConfig>) -> StorageResult<()> {
        let core = &*self.core;
        let tier = match config {
            Some(c) => Some(Arc::new(tier::Tier::new(
                c,
                core.tier_counters.clone(),
                &core.file,
            )?)),
            None => None,
        };
        let mut inner = core.lock();
        // Cleared before the new tier is seen, so its first image counts.
        core.tier_counters.clear_levels();
        core.file.set_reads_through_page_cache(
            tier.as_ref().is_some_and(|t| t.reads_through_page_cache()),
        );
        let new_in_cache = tier.as_ref().is_some_and(|t| t.page_cache().is_some());
        let old = std::mem::replace(&mut inner.tier, tier);
        if new_in_cache || old.is_some_and(|t| t.page_cache().is_some()) {
            // A tier starts empty: pages of the file the kernel holds from
            // before (or from the old tier) would stay there untracked, beyond
            // the tier's size.
            core.file.drop_from_page_cache(0, 0);
        }
        Ok(())
    }

    /// The second tier's configuration, if one is on.
    pub fn tier_config(&self) -> Option<TierConfig> {
        self.core.lock().tier.as_ref().map(|t| t.config().clone())
    }

    /// Records the page ids asked for (`TraceKind::Requests`) or read from disk
    /// (`TraceKind::Reads`) into a text file, one id per line (`kura cachesim` input).
    pub fn start_trace(&self, kind: TraceKind, path: &std::path::Path) -> StorageResult<()> {
        self.core.trace.start(kind, path)
    }

    /// Stops tracing and flushes the trace files.
    pub fn stop_trace(&self) -> StorageResult<()> {
        self.core.trace.stop()
    }

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
    fn pinned(&self, slot: usize, f: u32, page: PageId, k: u64) -> FixAttempt {
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
    fn fix_slow(self: &Arc<Self>, slot: usize, page: PageId) -> StorageResult<FixAttempt> {
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
    fn fill_from_tier(
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

    /// Read-ahead: reserves a frame for `page` when it is neither resident nor being
    /// read, and a frame can be had without failing anyone. `None` means there is
    /// nothing to do (or no unpinned frame to spare: read-ahead never takes the last
    /// frames a real fix needs). The caller reads the page like a miss and completes
    /// the ticket; dropping the resulting guard leaves the page resident, unpinned.
    /// Not counted as a fix, so hit ratios still describe what queries asked for.
    pub fn try_prefetch(self: &Arc<Self>, page: PageId) -> Option<ReadTicket> {
        let core = &*self.core;
        if core.table.get(page).is_some() {
            return None;
        }
        let mut inner = core.lock();
        if core.table.get(page).is_some() {
            return None;
        }
        let image = inner
            .tier
            .as_ref()
            .and_then(|t| t.take(page).map(|hit| (t.clone(), hit)));
        core.drain_hits(&mut inner);
        let f = core.take_frame(&mut inner, page)?;
        core.assign(&mut inner, f, page);
        let ticket = ReadTicket {
            h: self.handle(slot_index()),
            frame: f,
            page,
            done: false,
        };
        drop(inner);
        if let Some((t, hit)) = image {
            // Served from the tier: nothing left to read (the guard is dropped,
            // the page stays resident, unpinned).
            match self.fill_from_tier(ticket, &t, hit) {
                Ok(FixAttempt::Miss(t)) => return self.count_prefetch(t),
                _ => return None,
            }
        }
        self.count_prefetch(ticket)
    }

    fn count_prefetch(&self, ticket: ReadTicket) -> Option<ReadTicket> {
        self.core
            .counters
            .prefetch_reads
            .fetch_add(1, Ordering::Relaxed);
        Some(ticket)
    }

    /// Synchronous read-ahead (serial and static scans): reserves frames for
    /// those of `pages` not resident (as [`BufferManager::try_prefetch`]), then
    /// reads each run of consecutive page ids with one `pread` of up to
    /// [`MAX_READ_PAGES`] pages and completes them. Returns the pages read. A
    /// failed read only drops its pages (the fix that needs one reports the error).
    pub fn prefetch_sync(self: &Arc<Self>, pages: &[PageId]) -> usize {
        let mut sorted: Vec<PageId> = pages.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut tickets: Vec<ReadTicket> = Vec::new();
        for page in sorted {
            if let Some(t) = self.try_prefetch(page) {
                tickets.push(t);
            }
        }
        let mut read = 0;
        let mut run: Vec<ReadTicket> = Vec::new();
        for t in tickets {
            let extends = run
                .last()
                .is_some_and(|l| l.page + 1 == t.page && run.len() < MAX_READ_PAGES);
            if !extends && !run.is_empty() {
                read += self.read_run(std::mem::take(&mut run));
            }
            run.push(t);
        }
        if !run.is_empty() {
            read += self.read_run(run);
        }
        read
    }

    /// Reads a run of consecutive reserved pages with one request, straight into
    /// their frames.
    fn read_run(&self, mut run: Vec<ReadTicket>) -> usize {
        observer::note(SyncRead::Submitted);
        let first = run[0].page;
        let r = {
            let mut bufs: Vec<&mut [u8]> = run.iter_mut().map(|t| t.buffer()).collect();
            self.core.file.read_pages_into(first, &mut bufs)
        };
        observer::note(SyncRead::Completed { pages: run.len() });
        let mut read = 0;
        for t in run {
            let outcome = match &r {
                Ok(()) => Ok(()),
                Err(e) => Err(StorageError::Invalid(format!("read-ahead failed: {e}"))),
            };
            // The guard is dropped at once: the page stays resident, unpinned.
            if self.complete(t, outcome).is_ok() {
                read += 1;
            }
        }
        read
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
                    let r = self.core.file.read_page_raw(page, t.buffer());
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
    fn read_private(self: &Arc<Self>, page: PageId) -> StorageResult<PageGuard> {
        let core = &*self.core;
        // Aligned: the file may be open with O_DIRECT.
        let mut buf = crate::file::aligned::AlignedBuf::new(core.page_size);
        observer::note(SyncRead::Submitted);
        let r = core.file.read_page_raw(page, &mut buf);
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
                if frame
                    .state
                    .compare_exchange(
                        st,
                        fresh_state(st, FREE, 0),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    inner.free.push(f);
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

    /// Counts pages written to the file by the storage layer.
    pub(crate) fn note_written(&self, pages: u64) {
        let c = &self.core.counters;
        c.pages_written.fetch_add(pages, Ordering::Relaxed);
        c.bytes_written
            .fetch_add(pages * self.core.page_size as u64, Ordering::Relaxed);
    }

    /// Pinned frames right now (tests: every guard dropped means zero).
    pub fn pinned_frames(&self) -> usize {
        self.core
            .frames
            .iter()
            .filter(|f| pins(f.state.load(Ordering::Acquire)) > 0)
            .count()
    }

    /// Pages resident right now.
    pub fn resident_pages(&self) -> usize {
        let _inner = self.core.lock();
        self.core.resident_count()
    }
}

impl ReadTicket {
    pub fn page(&self) -> PageId {
        self.page
    }
    /// The frame's whole page buffer (aligned, page-sized) to read into.
    pub fn buffer(&mut self) -> &mut [u8] {
        self.h.core.frame_bytes_mut(self.frame)
    }
}

impl Drop for ReadTicket {
    fn drop(&mut self) {
        if !self.done {
            // Abandoned (e.g. a cancelled task): release the frame as a failed read.
            let t = ReadTicket {
                h: self.h.clone(),
                frame: self.frame,
                page: self.page,
                done: true,
            };
            let _ = self
                .h
                .core
                .complete(t, Err(StorageError::Invalid("page read abandoned".into())));
        }
    }
}

impl InFlight {
    pub fn page(&self) -> PageId {
        self.page
    }

    /// Whether the read finished (either way); `wait` then returns at once.
    pub fn is_done(&self) -> bool {
        kind(
            self.h.core.frames[self.frame as usize]
                .state
                .load(Ordering::Acquire),
        ) != LOADING
    }

    /// Asks for `waker` to be woken when the other read completes; returns whether
    /// it already has (then nothing is registered and `wait` returns at once).
    /// This is how an asynchronous task awaits a shared read without blocking its
    /// worker thread.
    pub fn register_waker(&self, waker: &std::task::Waker) -> bool {
        if self.is_done() {
            return true;
        }
        self.h.core.waiters.register(self.frame, waker);
        // `complete` publishes the state before waking: re-checking after
        // registering means a completion in between is never missed.
        self.is_done()
    }

    /// Blocks until the other read completes: the pinned page, or `None` if that
    /// read failed (the caller retries the fix).
    pub fn wait(mut self) -> Option<PageGuard> {
        let h = self.h.clone();
        let core = &*h.core;
        let frame = &core.frames[self.frame as usize];
        let mut inner = core.lock();
        while kind(frame.state.load(Ordering::Acquire)) == LOADING {
            inner = core.loaded.wait(inner).unwrap_or_else(|p| p.into_inner());
        }
        // Not ready: the read failed, or the page was invalidated while it was
        // read; either way the caller fixes it afresh.
        let ok = kind(frame.state.load(Ordering::Acquire)) == READY;
        // The pin passes to the guard (or is released here), not on drop.
        self.pinned = false;
        if ok {
            drop(inner);
            Some(core.guard(self.frame, self.page))
        } else {
            core.unpin_locked(&mut inner, self.frame);
            None
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.pinned {
            self.h.core.unpin(self.frame);
        }
    }
}

impl std::fmt::Debug for PageGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageGuard(page {}, frame {})", self.page, self.frame)
    }
}

impl PageGuard {
    pub fn page(&self) -> PageId {
        self.page
    }

    /// The kind recorded in the page header (checked by the checksum on read).
    pub fn kind(&self) -> Option<crate::file::page::PageKind> {
        crate::file::page::kind(&self.whole()[..PAGE_HEADER])
    }

    /// The whole page, header included.
    #[inline]
    fn whole(&self) -> &[u8] {
        // SAFETY: `bytes` points to `len` bytes that stay allocated and
        // unwritten while this guard lives (see the type's safety comment).
        unsafe { std::slice::from_raw_parts(self.bytes, self.len) }
    }
}

impl std::ops::Deref for PageGuard {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.whole()[PAGE_HEADER..]
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // Resident frames carry one pin of the pool's own; any other pin is a
        // guard still alive (it outlived every handle of the pool): then the
        // frame memory is left allocated for it rather than freed under it.
        let guarded = self.frames.iter().any(|f| {
            let own = u64::from(f.resident.load(Ordering::Acquire));
            pins(f.state.load(Ordering::Acquire)) > own
        });
        if guarded {
            tracing::warn!(
                "buffer pool dropped while pages are still pinned: its {} bytes of frames stay allocated",
                self.arena.len()
            );
            return;
        }
        // SAFETY: nothing is pinned, so no guard points into these any more
        // (a guard's last access is the decrement just observed), and they are
        // dropped exactly once, here.
        unsafe {
            std::mem::ManuallyDrop::drop(&mut self.arena);
            std::mem::ManuallyDrop::drop(&mut self.frames);
        }
    }
}

impl Drop for PageGuard {
    #[inline]
    fn drop(&mut self) {
        if self.private.is_none() {
            // SAFETY: the frame's state word stays allocated while it is
            // pinned, and this guard's pin is released only here.
            unsafe { &*self.state }.fetch_sub(1, Ordering::Release);
        }
    }
}

impl BufferManager {
    /// Checks the pool's bookkeeping (tests and stress runs, with no fix in
    /// progress): every frame is free and on the free list once, or holds a
    /// page listed in the page table (and, unless resident, in the policy), or
    /// is detached and still pinned; no frame is latched.
    pub fn check_consistency(&self) -> Result<(), String> {
        let core = &*self.core;
        let mut inner = core.lock();
        core.drain_hits(&mut inner);
        core.reclaim_detached(&mut inner);
        let mut on_free = vec![false; core.frames.len()];
        for &f in &inner.free {
            if std::mem::replace(&mut on_free[f as usize], true) {
                return Err(format!("frame {f} is on the free list twice"));
            }
        }
        let mut in_policy = 0;
        for (f, frame) in core.frames.iter().enumerate() {
            let st = frame.state.load(Ordering::Acquire);
            let page = frame.page.load(Ordering::Acquire);
            if st & LATCH != 0 {
                return Err(format!("frame {f} is latched"));
            }
            let resident = frame.resident.load(Ordering::Acquire);
            match kind(st) {
                FREE if !on_free[f] => return Err(format!("free frame {f} is lost")),
                FREE => {}
                _ if on_free[f] => return Err(format!("frame {f} is in use and on the free list")),
                READY | LOADING => {
                    if core.table.get(page) != Some(f as u32) {
                        return Err(format!("frame {f} holds page {page}, not listed there"));
                    }
                    if resident != inner.resident.contains(&(f as u32)) {
                        return Err(format!("frame {f}: resident flag and list disagree"));
                    }
                    if !resident {
                        if !inner.policy.contains(page) {
                            return Err(format!("page {page} (frame {f}) is not in the policy"));
                        }
                        in_policy += 1;
                    }
                }
                _ => {
                    if pins(st) == 0 {
                        return Err(format!("detached frame {f} has no pin and is lost"));
                    }
                }
            }
        }
        if inner.policy.len() != in_policy {
            return Err(format!(
                "the policy holds {} pages, the frames {in_policy}",
                inner.policy.len()
            ));
        }
        Ok(())
    }
}
