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
mod trace;
mod waiters;

pub use observer::{set_sync_read_observer, SyncRead};
pub use stats::BufferStats;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use hashbrown::HashMap;
use kura_cache::{ObjectMap, Policy};

use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::PAGE_HEADER;
use crate::file::{DbFile, PageId};
use stats::Counters;
pub use trace::TraceKind;

const FREE: u8 = 0;
const LOADING: u8 = 1;
const READY: u8 = 2;
/// The read failed or the page was invalidated while pinned: the frame leaves the
/// page table and returns to the free list when its last pin goes.
const DETACHED: u8 = 3;

struct Frame {
    pin: AtomicU32,
    state: AtomicU8,
    page: AtomicU64,
    /// Held resident ([`BufferManager::make_resident`]): one extra pin, and the
    /// page is out of the policy's view so evictions never scan past it.
    resident: AtomicBool,
}

struct Inner {
    table: HashMap<PageId, u32>,
    free: Vec<u32>,
    policy: Box<dyn Policy>,
    /// Which object each page belongs to (for the access-density policy).
    objects: Arc<ObjectMap>,
    /// Frames held resident, in the order they were made so.
    resident: Vec<u32>,
}

/// Most pages one synchronous read-ahead request reads (1 MiB of 16 KiB pages).
pub const MAX_READ_PAGES: usize = 64;

/// Frames that resident pages must always leave to queries: an eighth of the
/// pool, and at least 64, so scans, index searches and read-ahead keep room.
pub fn frames_reserved_for_queries(frames: usize) -> usize {
    (frames / 8).max(64).min(frames)
}

/// The pool of page frames in front of the database file.
pub struct BufferManager {
    file: Arc<DbFile>,
    page_size: usize,
    arena: AlignedBuf,
    frames: Box<[Frame]>,
    inner: Mutex<Inner>,
    loaded: Condvar,
    /// Wakers of tasks awaiting an in-flight read ([`InFlight::register_waker`]).
    waiters: waiters::Waiters,
    counters: Counters,
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
    bm: Arc<BufferManager>,
    frame: u32,
    page: PageId,
    done: bool,
}

/// A pinned frame whose page another fix is still reading.
pub struct InFlight {
    bm: Arc<BufferManager>,
    frame: u32,
    page: PageId,
}

/// A pinned, readable page. Unpins on drop. Dereferences to the page payload
/// (the bytes after the page header).
pub struct PageGuard {
    bm: Arc<BufferManager>,
    frame: u32,
    page: PageId,
    /// A private copy of the page, read by a thread that must not wait for
    /// another party's read (see [`forbid_blocking_waits`]); no frame is pinned.
    private: Option<crate::file::aligned::AlignedBuf>,
}

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
                pin: AtomicU32::new(0),
                state: AtomicU8::new(FREE),
                page: AtomicU64::new(u64::MAX),
                resident: AtomicBool::new(false),
            })
            .collect();
        Ok(Arc::new(BufferManager {
            file,
            page_size,
            arena,
            frames: frame_vec.into_boxed_slice(),
            inner: Mutex::new(Inner {
                table: HashMap::with_capacity(frames),
                free: (0..frames as u32).rev().collect(),
                policy,
                objects: Arc::new(ObjectMap::new()),
                resident: Vec::new(),
            }),
            loaded: Condvar::new(),
            waiters: waiters::Waiters::default(),
            counters: Counters::default(),
            trace: trace::Tracer::default(),
        }))
    }

    pub fn file(&self) -> &Arc<DbFile> {
        &self.file
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of frames.
    pub fn capacity(&self) -> usize {
        self.frames.len()
    }

    /// Name of the replacement policy in use.
    pub fn policy_name(&self) -> &'static str {
        self.lock().policy.name()
    }

    /// Replaces the policy; resident pages are handed to the new one.
    pub fn set_policy(&self, name: &str) -> StorageResult<()> {
        let mut policy = kura_cache::make_buffer_policy(name, self.frames.len())
            .map_err(|e| StorageError::Policy(e.to_string()))?;
        let mut inner = self.lock();
        policy.set_objects(inner.objects.clone());
        for (&page, &f) in inner.table.iter() {
            if !self.frames[f as usize].resident.load(Ordering::Acquire) {
                policy.insert(page);
            }
        }
        inner.policy = policy;
        Ok(())
    }

    /// Tells the replacement policy which object each page belongs to (kept
    /// across [`BufferManager::set_policy`]).
    pub fn set_objects(&self, objects: Arc<ObjectMap>) {
        let mut inner = self.lock();
        inner.policy.set_objects(objects.clone());
        inner.objects = objects;
    }

    /// Frames held resident right now.
    pub fn resident_frames(&self) -> usize {
        self.lock().resident.len()
    }

    /// Frames queries may use: all but those held resident.
    pub fn available_frames(&self) -> usize {
        self.frames.len() - self.lock().resident.len()
    }

    /// Holds `pages` in the pool until [`BufferManager::release_resident`]:
    /// each is fixed (read if needed, in the order given) and keeps one pin, so
    /// no policy can evict it. Pages already resident stay so. Refused, before
    /// anything is read, when the resident pages would leave fewer than
    /// [`frames_reserved_for_queries`] frames. Returns the frames now resident.
    pub fn make_resident(self: &Arc<Self>, pages: &[PageId]) -> StorageResult<usize> {
        let frames = self.frames.len();
        let reserve = frames_reserved_for_queries(frames);
        let already: std::collections::HashSet<PageId> = {
            let inner = self.lock();
            inner
                .resident
                .iter()
                .map(|&f| self.frames[f as usize].page.load(Ordering::Acquire))
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
            let mut inner = self.lock();
            let frame = &self.frames[guard.frame as usize];
            if frame.state.load(Ordering::Acquire) == READY
                && !frame.resident.swap(true, Ordering::AcqRel)
            {
                frame.pin.fetch_add(1, Ordering::AcqRel);
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
        let mut inner = self.lock();
        let frames = std::mem::take(&mut inner.resident);
        for f in frames {
            let frame = &self.frames[f as usize];
            if !frame.resident.swap(false, Ordering::AcqRel) {
                continue;
            }
            if frame.state.load(Ordering::Acquire) == READY {
                let page = frame.page.load(Ordering::Acquire);
                // Room is guaranteed: resident frames were outside the policy.
                inner.policy.insert(page);
            }
            self.unpin_locked(&mut inner, f);
        }
    }

    pub fn stats(&self) -> BufferStats {
        self.counters.snapshot()
    }

    /// Records the page ids asked for (`TraceKind::Requests`) or read from disk
    /// (`TraceKind::Reads`) into a text file, one id per line (`kura cachesim` input).
    pub fn start_trace(&self, kind: TraceKind, path: &std::path::Path) -> StorageResult<()> {
        self.trace.start(kind, path)
    }

    /// Stops tracing and flushes the trace files.
    pub fn stop_trace(&self) -> StorageResult<()> {
        self.trace.stop()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves the maps consistent (no partial
        // updates span a panic point), so a poisoned lock is safe to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Non-blocking fix (see the module doc).
    pub fn try_fix(self: &Arc<Self>, page: PageId) -> StorageResult<FixAttempt> {
        self.counters.fixes.fetch_add(1, Ordering::Relaxed);
        self.trace.request(page);
        let mut inner = self.lock();
        if let Some(&f) = inner.table.get(&page) {
            let frame = &self.frames[f as usize];
            frame.pin.fetch_add(1, Ordering::AcqRel);
            return Ok(match frame.state.load(Ordering::Acquire) {
                READY => {
                    if !frame.resident.load(Ordering::Relaxed) {
                        inner.policy.access(page);
                    }
                    self.counters.hits.fetch_add(1, Ordering::Relaxed);
                    FixAttempt::Hit(PageGuard {
                        bm: self.clone(),
                        frame: f,
                        page,
                        private: None,
                    })
                }
                _ => {
                    // Loading: the page will be served by someone else's read.
                    self.counters.hits.fetch_add(1, Ordering::Relaxed);
                    FixAttempt::InFlight(InFlight {
                        bm: self.clone(),
                        frame: f,
                        page,
                    })
                }
            });
        }
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let f = match inner.free.pop() {
            Some(f) => f,
            None => {
                let Inner { table, policy, .. } = &mut *inner;
                let frames = &self.frames;
                let victim = policy.evict_for(page, &mut |p| {
                    table
                        .get(&p)
                        .is_some_and(|&f| frames[f as usize].pin.load(Ordering::Acquire) == 0)
                });
                match victim {
                    Some(v) => table.remove(&v).expect("policy and page table agree"),
                    None => {
                        return Err(StorageError::BufferExhausted {
                            frames: self.frames.len(),
                        })
                    }
                }
            }
        };
        let frame = &self.frames[f as usize];
        frame.pin.store(1, Ordering::Release);
        frame.state.store(LOADING, Ordering::Release);
        frame.page.store(page, Ordering::Release);
        inner.table.insert(page, f);
        inner.policy.insert(page);
        self.register_frame(f, page);
        Ok(FixAttempt::Miss(ReadTicket {
            bm: self.clone(),
            frame: f,
            page,
            done: false,
        }))
    }

    /// Read-ahead: reserves a frame for `page` when it is neither resident nor being
    /// read, and a frame can be had without failing anyone. `None` means there is
    /// nothing to do (or no unpinned frame to spare: read-ahead never takes the last
    /// frames a real fix needs). The caller reads the page like a miss and completes
    /// the ticket; dropping the resulting guard leaves the page resident, unpinned.
    /// Not counted as a fix, so hit ratios still describe what queries asked for.
    pub fn try_prefetch(self: &Arc<Self>, page: PageId) -> Option<ReadTicket> {
        let mut inner = self.lock();
        if inner.table.contains_key(&page) {
            return None;
        }
        let f = match inner.free.pop() {
            Some(f) => f,
            None => {
                let Inner { table, policy, .. } = &mut *inner;
                let frames = &self.frames;
                let victim = policy.evict_for(page, &mut |p| {
                    table
                        .get(&p)
                        .is_some_and(|&f| frames[f as usize].pin.load(Ordering::Acquire) == 0)
                })?;
                table.remove(&victim)?
            }
        };
        self.counters.prefetch_reads.fetch_add(1, Ordering::Relaxed);
        let frame = &self.frames[f as usize];
        frame.pin.store(1, Ordering::Release);
        frame.state.store(LOADING, Ordering::Release);
        frame.page.store(page, Ordering::Release);
        inner.table.insert(page, f);
        inner.policy.insert(page);
        self.register_frame(f, page);
        Some(ReadTicket {
            bm: self.clone(),
            frame: f,
            page,
            done: false,
        })
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
        let mut scratch =
            AlignedBuf::new(self.page_size * MAX_READ_PAGES.min(tickets.len().max(1)));
        kura_common::memobj::register_slice(&scratch, || {
            kura_common::memobj::Object::new(
                kura_common::memobj::ObjectKind::ReadBuffer,
                "read-ahead scratch buffer",
            )
        });
        for t in tickets {
            let extends = run
                .last()
                .is_some_and(|l| l.page + 1 == t.page && run.len() < MAX_READ_PAGES);
            if !extends && !run.is_empty() {
                read += self.read_run(std::mem::take(&mut run), &mut scratch);
            }
            run.push(t);
        }
        if !run.is_empty() {
            read += self.read_run(run, &mut scratch);
        }
        kura_common::memobj::unregister_slice(&scratch);
        read
    }

    /// Reads a run of consecutive reserved pages with one request.
    fn read_run(&self, run: Vec<ReadTicket>, scratch: &mut AlignedBuf) -> usize {
        let ps = self.page_size;
        let bytes = run.len() * ps;
        observer::note(SyncRead::Submitted);
        let r = self.file.read_pages_raw(run[0].page, &mut scratch[..bytes]);
        observer::note(SyncRead::Completed);
        let mut read = 0;
        for (i, mut t) in run.into_iter().enumerate() {
            let outcome = match &r {
                Ok(()) => {
                    t.buffer().copy_from_slice(&scratch[i * ps..(i + 1) * ps]);
                    Ok(())
                }
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
    pub fn fix(self: &Arc<Self>, page: PageId) -> StorageResult<PageGuard> {
        loop {
            match self.try_fix(page)? {
                FixAttempt::Hit(g) => return Ok(g),
                FixAttempt::Miss(mut t) => {
                    observer::note(SyncRead::Submitted);
                    let r = self.file.read_page_raw(page, t.buffer());
                    observer::note(SyncRead::Completed);
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
        // Aligned: the file may be open with O_DIRECT.
        let mut buf = crate::file::aligned::AlignedBuf::new(self.page_size);
        observer::note(SyncRead::Submitted);
        let r = self.file.read_page_raw(page, &mut buf);
        observer::note(SyncRead::Completed);
        r?;
        self.file.verify_page(page, &buf[..self.page_size])?;
        Ok(PageGuard {
            bm: self.clone(),
            frame: u32::MAX,
            page,
            private: Some(buf),
        })
    }

    /// Finishes a miss: `read` is the outcome of reading the page into the
    /// ticket's buffer. Verifies the checksum and wakes the waiters.
    pub fn complete(
        &self,
        mut ticket: ReadTicket,
        read: StorageResult<()>,
    ) -> StorageResult<PageGuard> {
        ticket.done = true;
        let frame = &self.frames[ticket.frame as usize];
        let result = read.and_then(|_| {
            self.file
                .verify_page(ticket.page, self.frame_bytes(ticket.frame))
        });
        match result {
            Ok(()) => {
                self.counters.pages_read.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .bytes_read
                    .fetch_add(self.page_size as u64, Ordering::Relaxed);
                self.trace.read(ticket.page);
                {
                    let _inner = self.lock();
                    frame.state.store(READY, Ordering::Release);
                    self.loaded.notify_all();
                }
                self.waiters.wake(ticket.frame);
                Ok(PageGuard {
                    bm: ticket.bm.clone(),
                    frame: ticket.frame,
                    page: ticket.page,
                    private: None,
                })
            }
            Err(e) => {
                let mut inner = self.lock();
                inner.table.remove(&ticket.page);
                inner.policy.remove(ticket.page);
                frame.state.store(DETACHED, Ordering::Release);
                self.unpin_locked(&mut inner, ticket.frame);
                self.loaded.notify_all();
                drop(inner);
                self.waiters.wake(ticket.frame);
                Err(e)
            }
        }
    }

    /// Drops a cached copy of `page` (its id is about to hold new contents).
    pub fn invalidate(&self, page: PageId) {
        let mut inner = self.lock();
        if let Some(f) = inner.table.remove(&page) {
            inner.policy.remove(page);
            let frame = &self.frames[f as usize];
            if frame.resident.swap(false, Ordering::AcqRel) {
                // Its resident pin goes with it (the index was dropped).
                inner.resident.retain(|&r| r != f);
                frame.pin.fetch_sub(1, Ordering::AcqRel);
            }
            if frame.pin.load(Ordering::Acquire) == 0 {
                frame.state.store(FREE, Ordering::Release);
                inner.free.push(f);
            } else {
                frame.state.store(DETACHED, Ordering::Release);
            }
        }
    }

    /// Counts pages written to the file by the storage layer.
    pub(crate) fn note_written(&self, pages: u64) {
        self.counters
            .pages_written
            .fetch_add(pages, Ordering::Relaxed);
        self.counters
            .bytes_written
            .fetch_add(pages * self.page_size as u64, Ordering::Relaxed);
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

    fn frame_bytes(&self, f: u32) -> &[u8] {
        let start = f as usize * self.page_size;
        &self.arena[start..start + self.page_size]
    }

    /// Frame memory for the one party allowed to write it (the ticket holder).
    #[allow(clippy::mut_from_ref)]
    fn frame_bytes_mut(&self, f: u32) -> &mut [u8] {
        let start = f as usize * self.page_size;
        // SAFETY: only the holder of the frame's ReadTicket writes a LOADING frame
        // and nobody reads it before `complete` publishes READY under the lock.
        unsafe { std::slice::from_raw_parts_mut(self.arena.as_ptr().add(start), self.page_size) }
    }

    fn unpin(&self, f: u32) {
        let frame = &self.frames[f as usize];
        if frame.pin.fetch_sub(1, Ordering::AcqRel) == 1
            && frame.state.load(Ordering::Acquire) == DETACHED
        {
            let mut inner = self.lock();
            if frame.pin.load(Ordering::Acquire) == 0
                && frame.state.load(Ordering::Acquire) == DETACHED
            {
                frame.state.store(FREE, Ordering::Release);
                inner.free.push(f);
            }
        }
    }

    fn unpin_locked(&self, inner: &mut Inner, f: u32) {
        let frame = &self.frames[f as usize];
        if frame.pin.fetch_sub(1, Ordering::AcqRel) == 1
            && frame.state.load(Ordering::Acquire) == DETACHED
        {
            frame.state.store(FREE, Ordering::Release);
            inner.free.push(f);
        }
    }

    /// Pinned frames right now (tests: every guard dropped means zero).
    pub fn pinned_frames(&self) -> usize {
        self.frames
            .iter()
            .filter(|f| f.pin.load(Ordering::Acquire) > 0)
            .count()
    }

    /// Pages resident right now.
    pub fn resident_pages(&self) -> usize {
        self.lock().table.len()
    }
}

impl ReadTicket {
    pub fn page(&self) -> PageId {
        self.page
    }
    /// The frame's whole page buffer (aligned, page-sized) to read into.
    pub fn buffer(&mut self) -> &mut [u8] {
        self.bm.frame_bytes_mut(self.frame)
    }
}

impl Drop for ReadTicket {
    fn drop(&mut self) {
        if !self.done {
            // Abandoned (e.g. a cancelled task): release the frame as a failed read.
            let bm = self.bm.clone();
            let t = ReadTicket {
                bm: bm.clone(),
                frame: self.frame,
                page: self.page,
                done: true,
            };
            let _ = bm.complete(t, Err(StorageError::Invalid("page read abandoned".into())));
        }
    }
}

impl InFlight {
    pub fn page(&self) -> PageId {
        self.page
    }

    /// Whether the read finished (either way); `wait` then returns at once.
    pub fn is_done(&self) -> bool {
        self.bm.frames[self.frame as usize]
            .state
            .load(Ordering::Acquire)
            != LOADING
    }

    /// Asks for `waker` to be woken when the other read completes; returns whether
    /// it already has (then nothing is registered and `wait` returns at once).
    /// This is how an asynchronous task awaits a shared read without blocking its
    /// worker thread.
    pub fn register_waker(&self, waker: &std::task::Waker) -> bool {
        if self.is_done() {
            return true;
        }
        self.bm.waiters.register(self.frame, waker);
        // `complete` publishes the state before waking: re-checking after
        // registering means a completion in between is never missed.
        self.is_done()
    }

    /// Blocks until the other read completes: the pinned page, or `None` if that
    /// read failed (the caller retries the fix).
    pub fn wait(self) -> Option<PageGuard> {
        let bm = self.bm.clone();
        let frame = &bm.frames[self.frame as usize];
        let mut inner = bm.lock();
        while frame.state.load(Ordering::Acquire) == LOADING {
            inner = bm.loaded.wait(inner).unwrap_or_else(|p| p.into_inner());
        }
        let ok = frame.state.load(Ordering::Acquire) == READY;
        let (f, page) = (self.frame, self.page);
        // The pin passes to the guard (or is released below), so `self` must not
        // unpin on drop; its `Arc` is released normally.
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again after the Arc is moved out.
        drop(unsafe { std::ptr::read(&this.bm) });
        if ok {
            drop(inner);
            Some(PageGuard {
                bm: bm.clone(),
                frame: f,
                page,
                private: None,
            })
        } else {
            bm.unpin_locked(&mut inner, f);
            None
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.bm.unpin(self.frame);
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
        let whole = match &self.private {
            Some(copy) => &copy[..PAGE_HEADER],
            None => &self.bm.frame_bytes(self.frame)[..PAGE_HEADER],
        };
        crate::file::page::kind(whole)
    }
}

impl std::ops::Deref for PageGuard {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.private {
            Some(copy) => &copy[PAGE_HEADER..self.bm.page_size],
            None => &self.bm.frame_bytes(self.frame)[PAGE_HEADER..],
        }
    }
}

impl Drop for PageGuard {
    fn drop(&mut self) {
        if self.private.is_none() {
            self.bm.unpin(self.frame);
        }
    }
}
