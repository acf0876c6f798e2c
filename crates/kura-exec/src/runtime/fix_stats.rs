//! Counters of the asynchronous page fixes: process-wide statics that the fixes
//! bump and the timeline and benchmarks read, in a file that names no other.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the asynchronous fixes since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageFixStats {
    /// Reads issued by asynchronous fixes.
    pub reads: u64,
    /// Fixes that waited for another task's read of the same page.
    pub shared_waits: u64,
    /// The largest number of asynchronous reads in flight at one time.
    pub max_in_flight: u64,
    /// Read-ahead reads issued (`prefetch_async`); also counted in `reads`.
    pub prefetches: u64,
    /// Fixes that found every frame pinned and let other tasks run before trying
    /// again (see `fix_async_reading`).
    pub frame_waits: u64,
}

static READS: AtomicU64 = AtomicU64::new(0);
static SHARED_WAITS: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static MAX_IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static PREFETCHES: AtomicU64 = AtomicU64::new(0);
static FRAME_WAITS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the asynchronous fix counters.
pub fn page_fix_stats() -> PageFixStats {
    PageFixStats {
        reads: READS.load(Ordering::Relaxed),
        shared_waits: SHARED_WAITS.load(Ordering::Relaxed),
        max_in_flight: MAX_IN_FLIGHT.load(Ordering::Relaxed),
        prefetches: PREFETCHES.load(Ordering::Relaxed),
        frame_waits: FRAME_WAITS.load(Ordering::Relaxed),
    }
}

/// The largest number of asynchronous reads in flight since the last call (or
/// since the process started), restarting the maximum from the current count: a
/// benchmark calls it before and after a run to learn the run's peak queue depth.
pub fn take_max_in_flight() -> u64 {
    MAX_IN_FLIGHT.swap(IN_FLIGHT.load(Ordering::Relaxed), Ordering::Relaxed)
}

/// Reads asynchronously in flight right now.
pub fn reads_in_flight() -> u64 {
    IN_FLIGHT.load(Ordering::Relaxed)
}

// `#[inline]` on the bumps below: they sit on the page-fix path, and another
// codegen unit would otherwise call them out of line.

/// Counts a fix that waits for another task's read of its page.
#[inline]
pub(crate) fn count_shared_wait() {
    SHARED_WAITS.fetch_add(1, Ordering::Relaxed);
}

/// Counts a fix that found every frame pinned and yields before retrying.
#[inline]
pub(crate) fn count_frame_wait() {
    FRAME_WAITS.fetch_add(1, Ordering::Relaxed);
}

/// Counts a read-ahead read.
#[inline]
pub(crate) fn count_prefetch() {
    PREFETCHES.fetch_add(1, Ordering::Relaxed);
}

/// A read in flight: counted when started, uncounted when dropped, even when
/// the awaiting task is dropped.
pub(crate) struct InFlightCount;

impl InFlightCount {
    #[inline]
    pub(crate) fn start() -> InFlightCount {
        READS.fetch_add(1, Ordering::Relaxed);
        let now = IN_FLIGHT.fetch_add(1, Ordering::Relaxed) + 1;
        MAX_IN_FLIGHT.fetch_max(now, Ordering::Relaxed);
        InFlightCount
    }
}

impl Drop for InFlightCount {
    #[inline]
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}
