//! Runtime counters: tasks spawned, polled and migrated, I/Os submitted and
//! completed, busy time — per worker, read as snapshots.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Live counters of one worker (or of the caller's thread in serial mode).
#[derive(Default)]
pub(crate) struct Counters {
    pub spawned: AtomicU64,
    pub polled: AtomicU64,
    pub suspended: AtomicU64,
    pub migrated_out: AtomicU64,
    pub migrated_in: AtomicU64,
    pub io_submitted: AtomicU64,
    pub io_completed: AtomicU64,
    pub extra_run_pages: AtomicU64,
    pub memory_releases: AtomicU64,
    pub busy_ns: AtomicU64,
}

pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub fn snapshot(&self) -> WorkerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerStats {
            spawned: get(&self.spawned),
            polled: get(&self.polled),
            suspended: get(&self.suspended),
            migrated_out: get(&self.migrated_out),
            migrated_in: get(&self.migrated_in),
            io_submitted: get(&self.io_submitted),
            io_completed: get(&self.io_completed),
            extra_run_pages: get(&self.extra_run_pages),
            memory_releases: get(&self.memory_releases),
            busy: Duration::from_nanos(get(&self.busy_ns)),
        }
    }
}

/// Counters of one worker since the runtime started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Tasks created on this worker (roots placed here and children spawned here).
    pub spawned: u64,
    /// Task polls (one poll runs a task until it suspends or finishes).
    pub polled: u64,
    /// Polls after which the task was blocked (waiting for a read or an event).
    pub suspended: u64,
    /// Tasks this worker handed to another one.
    pub migrated_out: u64,
    /// Tasks this worker received from another one.
    pub migrated_in: u64,
    /// Reads submitted (asynchronous or synchronous).
    pub io_submitted: u64,
    /// Reads completed.
    pub io_completed: u64,
    /// Pages beyond the first that multi-page requests read (read-ahead reads a
    /// run of consecutive pages with one `pread`): `io_completed` plus these is
    /// the number of page-sized reads.
    pub extra_run_pages: u64,
    /// Times this worker gave its heap's free memory back to the system when
    /// asked (`Runtime::release_free_memory`).
    pub memory_releases: u64,
    /// Time spent running tasks and driving I/O (not sleeping).
    pub busy: Duration,
}

impl WorkerStats {
    fn plus(self, o: WorkerStats) -> WorkerStats {
        WorkerStats {
            spawned: self.spawned + o.spawned,
            polled: self.polled + o.polled,
            suspended: self.suspended + o.suspended,
            migrated_out: self.migrated_out + o.migrated_out,
            migrated_in: self.migrated_in + o.migrated_in,
            io_submitted: self.io_submitted + o.io_submitted,
            io_completed: self.io_completed + o.io_completed,
            extra_run_pages: self.extra_run_pages + o.extra_run_pages,
            memory_releases: self.memory_releases + o.memory_releases,
            busy: self.busy + o.busy,
        }
    }
}

/// A snapshot of all counters of a runtime.
#[derive(Debug, Clone, Default)]
pub struct RuntimeStats {
    /// One entry per worker thread.
    pub workers: Vec<WorkerStats>,
    /// Work done on a caller's thread by `run_serial`.
    pub caller: WorkerStats,
}

impl RuntimeStats {
    /// Sum over the workers and the caller's thread.
    pub fn total(&self) -> WorkerStats {
        self.workers.iter().fold(self.caller, |acc, w| acc.plus(*w))
    }

    /// Total tasks migrated between workers.
    pub fn migrations(&self) -> u64 {
        self.workers.iter().map(|w| w.migrated_out).sum()
    }
}
