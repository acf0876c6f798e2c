//! A process-wide observer of the buffer manager's synchronous page reads, so a task runtime can count reads it does not issue itself.
//!
//! Serial and static execution fix pages with `pread` on the running thread; the
//! runtime's IOPS counters and timelines see only the reads it submits. The
//! runtime installs an observer here and attributes each synchronous read to the
//! thread's worker (or the caller's slot), keeping the storage layer free of any
//! dependency on the runtime.

use std::sync::OnceLock;

/// The phase of a synchronous page read being reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRead {
    /// About to read a page on this thread.
    Submitted,
    /// The read returned (successfully or not), one request for `pages` pages
    /// (read-ahead reads a run of consecutive pages with one `pread`).
    Completed { pages: usize },
}

static OBSERVER: OnceLock<fn(SyncRead)> = OnceLock::new();

/// Installs the observer; the first one wins (returns whether it was this one).
pub fn set_sync_read_observer(observer: fn(SyncRead)) -> bool {
    OBSERVER.set(observer).is_ok()
}

pub(super) fn note(phase: SyncRead) {
    if let Some(observer) = OBSERVER.get() {
        observer(phase);
    }
}
