//! Asynchronous page fixes (paper 003): a hit returns at once; a miss reads the
//! page with [`read_at`] on the worker's ring while the task is suspended, then
//! fills the reserved frame; a fix of a page someone else is reading awaits that
//! read's completion through a waker instead of blocking the worker. Concurrent
//! fixes of one page therefore share one read.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use kura_storage::{
    BufferManager, FixAttempt, InFlight, PageGuard, PageId, StorageError, StorageResult,
};

use super::context::buffer;
use super::io::read::read_at;

/// Counters of the asynchronous fixes since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageFixStats {
    /// Reads issued by asynchronous fixes.
    pub reads: u64,
    /// Fixes that waited for another task's read of the same page.
    pub shared_waits: u64,
    /// The largest number of asynchronous reads in flight at one time.
    pub max_in_flight: u64,
}

static READS: AtomicU64 = AtomicU64::new(0);
static SHARED_WAITS: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static MAX_IN_FLIGHT: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the asynchronous fix counters.
pub fn page_fix_stats() -> PageFixStats {
    PageFixStats {
        reads: READS.load(Ordering::Relaxed),
        shared_waits: SHARED_WAITS.load(Ordering::Relaxed),
        max_in_flight: MAX_IN_FLIGHT.load(Ordering::Relaxed),
    }
}

/// Reads asynchronously in flight right now.
pub fn reads_in_flight() -> u64 {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// Decrements the in-flight count even when the awaiting task is dropped.
struct InFlightCount;

impl InFlightCount {
    fn start() -> InFlightCount {
        READS.fetch_add(1, Ordering::Relaxed);
        let now = IN_FLIGHT.fetch_add(1, Ordering::Relaxed) + 1;
        MAX_IN_FLIGHT.fetch_max(now, Ordering::Relaxed);
        InFlightCount
    }
}

impl Drop for InFlightCount {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Fixes `page` without blocking the worker: see the module doc.
pub async fn fix_async(bm: &Arc<BufferManager>, page: PageId) -> StorageResult<PageGuard> {
    loop {
        match bm.try_fix(page)? {
            FixAttempt::Hit(guard) => return Ok(guard),
            FixAttempt::Miss(mut ticket) => {
                let file = bm.file();
                let size = file.page_size();
                let result = {
                    let _counted = InFlightCount::start();
                    read_at(file.raw_fd(), page * size as u64, buffer(size)).await
                };
                let read = match result {
                    (Ok(n), _) if n < size => Err(StorageError::Corrupt {
                        path: file.path().to_path_buf(),
                        page,
                        what: format!(
                            "page lies beyond the end of the file (read {n} of {size} bytes)"
                        ),
                    }),
                    (Ok(_), data) => {
                        ticket.buffer()[..size].copy_from_slice(&data[..size]);
                        Ok(())
                    }
                    (Err(source), _) => Err(StorageError::Io {
                        path: file.path().to_path_buf(),
                        op: "read page",
                        source,
                    }),
                };
                return bm.complete(ticket, read);
            }
            FixAttempt::InFlight(waiting) => {
                SHARED_WAITS.fetch_add(1, Ordering::Relaxed);
                let waiting = until_done(waiting).await;
                if let Some(guard) = waiting.wait() {
                    return Ok(guard);
                }
                // The other read failed: try the page ourselves (and report its error).
            }
        }
    }
}

/// Suspends until the read `waiting` shares has finished (either way).
async fn until_done(waiting: InFlight) -> InFlight {
    poll_fn(|cx| {
        if waiting.register_waker(cx.waker()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    waiting
}
