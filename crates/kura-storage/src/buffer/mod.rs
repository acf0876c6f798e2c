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

mod check;
mod fix;
mod frame;
mod guard;
mod hits;
mod inflight;
mod observer;
mod prefetch;
mod resident;
mod stats;
mod table;
mod thread_io;
mod tier;
mod trace;
mod waiters;

pub use observer::{set_sync_read_observer, SyncRead};
pub use stats::{BufferStats, ReadRequest};
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

pub use fix::forbid_blocking_waits;
use frame::*;
use hits::*;

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

/// A thread's slot, returned to the free slots when the thread exits.
struct SlotLease {
    index: usize,
}

thread_local! {
    static SLOT: SlotLease = SlotLease::take();
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

impl Core {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves the maps consistent (no partial
        // updates span a panic point), so a poisoned lock is safe to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Starts one disk read request of this pool's pages (the caller's `pread`
    /// or ring read); it counts in [`BufferStats::read_requests`] and as in
    /// flight until the returned guard is dropped. The pool's own synchronous
    /// reads call it; a runtime that reads a [`ReadTicket`] itself calls it
    /// around that read, so requests and the peak count every read alike.
    pub fn start_read(&self) -> ReadRequest<'_> {
        self.core.counters.start_read()
    }

    /// The most read requests in flight at once since the last call (or since
    /// the pool opened), restarting the peak from the reads in flight now: a
    /// benchmark calls it before and after a run to learn the run's queue depth.
    pub fn take_peak_reads_in_flight(&self) -> u64 {
        self.core.counters.take_peak_reads_in_flight()
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
