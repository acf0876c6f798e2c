//! Settings of the task runtime: worker count, pinning, load balancing, ring size.

use std::time::Duration;

/// How a runtime performs reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoBackend {
    /// Use io_uring where the kernel allows it, else synchronous `pread`.
    Auto,
    /// Always synchronous `pread` (for comparison and for kernels without io_uring).
    Sync,
}

/// Configuration of a [`Runtime`](super::Runtime).
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Number of worker threads; 0 means one per available core.
    pub workers: usize,
    /// Pin worker `i` to the `i`-th allowed core (where the OS allows it).
    pub pin: bool,
    /// How often the balancer compares runnable counts; `None` disables balancing.
    pub balance_interval: Option<Duration>,
    /// A worker receives tasks only when its runnable count is below
    /// `mean * (1 - balance_ratio)`; 0.5 means "at most half the mean".
    pub balance_ratio: f64,
    /// Submission-queue entries of each worker's io_uring.
    pub ring_entries: u32,
    /// Read path.
    pub io: IoBackend,
    /// Bytes of freed I/O buffers each worker keeps for reuse. A scan's
    /// read-ahead can have thousands of page reads in flight at once; keeping
    /// all their buffers afterwards held 40 MB per worker that no query used.
    pub pool_cache_bytes: usize,
    /// Sampling interval of the timeline recorder.
    pub timeline_interval: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            workers: 0,
            pin: true,
            balance_interval: Some(Duration::from_millis(2)),
            balance_ratio: 0.5,
            ring_entries: 256,
            io: IoBackend::Auto,
            // A full ring of 16 KiB page reads (256 entries).
            pool_cache_bytes: 4 << 20,
            timeline_interval: Duration::from_millis(50),
        }
    }
}

impl RuntimeConfig {
    /// The worker count after resolving 0 to the number of available cores.
    pub fn resolved_workers(&self) -> usize {
        if self.workers > 0 {
            self.workers
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }
    }
}
