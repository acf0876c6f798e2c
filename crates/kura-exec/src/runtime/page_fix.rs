//! Asynchronous page fixes (paper 003): a hit returns at once; a miss reads the
//! page straight into its frame with [`read_into`] on the worker's ring while the task is suspended, then
//! fills the reserved frame; a fix of a page someone else is reading awaits that
//! read's completion through a waker instead of blocking the worker. Concurrent
//! fixes of one page therefore share one read — and so does a fix of a page that
//! read-ahead ([`prefetch_async`]) is still reading.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use kura_storage::{
    BufferManager, FixAttempt, InFlight, PageGuard, PageId, ReadTicket, StorageError, StorageResult,
};

use super::context;
use super::fix_stats::{count_frame_wait, count_prefetch, count_shared_wait, InFlightCount};
use super::io::read::{read_into, ReadTarget};

/// How long an asynchronous fix keeps trying while every frame is pinned before
/// it reports the pool exhausted: far longer than other tasks hold their pins
/// (a morsel's reads and its decoding), short enough that a pool truly too small
/// for the query fails with a clear error rather than hanging.
const FRAME_WAIT: Duration = Duration::from_secs(10);

/// Fixes `page` without blocking the worker: see the module doc.
pub async fn fix_async(bm: &Arc<BufferManager>, page: PageId) -> StorageResult<PageGuard> {
    Ok(fix_async_reading(bm, page).await?.0)
}

/// [`fix_async`], also saying whether this fix read the page itself (a miss),
/// rather than finding it resident or waiting for another task's read.
///
/// A miss that finds every frame pinned does not fail at once: in out-of-order
/// mode the pins belong to other tasks — morsels whose reads are in flight or
/// being decoded, read-ahead — that release them shortly, and the pin budget
/// bounds how many such tasks there are, but not to the frame (a small pool can
/// be pinned full for a moment). The task yields, so its worker reaps reads and
/// runs those tasks, and tries again, for up to [`FRAME_WAIT`].
pub async fn fix_async_reading(
    bm: &Arc<BufferManager>,
    page: PageId,
) -> StorageResult<(PageGuard, bool)> {
    let mut exhausted_since: Option<Instant> = None;
    loop {
        let attempt = match bm.try_fix(page) {
            Err(StorageError::BufferExhausted { .. })
                if exhausted_since.is_none_or(|t| t.elapsed() < FRAME_WAIT) =>
            {
                exhausted_since.get_or_insert_with(Instant::now);
                count_frame_wait();
                context::yield_now().await;
                continue;
            }
            other => other?,
        };
        match attempt {
            FixAttempt::Hit(guard) => return Ok((guard, false)),
            FixAttempt::Miss(ticket) => return Ok((read_ticket(bm, ticket).await?, true)),
            FixAttempt::InFlight(waiting) => {
                count_shared_wait();
                let waiting = until_done(waiting).await;
                if let Some(guard) = waiting.wait() {
                    return Ok((guard, false));
                }
                // The other read failed: try the page ourselves (and report its error).
            }
        }
    }
}

/// Read-ahead of `page`: reads it asynchronously when it is neither resident nor
/// being read and the buffer can spare a frame, and leaves it resident, unpinned.
/// Returns whether a read was issued. A failed read is not reported: the fix that
/// needs the page later reads it again and reports the error where it matters.
pub async fn prefetch_async(bm: &Arc<BufferManager>, page: PageId) -> bool {
    let Some(ticket) = bm.try_prefetch(page) else {
        return false;
    };
    count_prefetch();
    drop(read_ticket(bm, ticket).await);
    true
}

/// A miss's frame is read into directly: its ticket keeps the frame reserved
/// (LOADING, invisible to other readers) for as long as the read owns it, also
/// when the task awaiting it is dropped mid-read.
impl ReadTarget for ReadTicket {
    fn bytes(&mut self) -> &mut [u8] {
        self.buffer()
    }
}

/// Reads the page of a miss on the worker's ring straight into its frame and
/// completes the ticket.
async fn read_ticket(bm: &Arc<BufferManager>, ticket: ReadTicket) -> StorageResult<PageGuard> {
    let page = ticket.page();
    let file = bm.file();
    let size = file.page_size();
    let (result, ticket) = {
        let _counted = InFlightCount::start();
        // The pool counts it as one request, in flight until it returns.
        let _request = bm.start_read();
        read_into(file.raw_fd(), page * size as u64, ticket).await
    };
    let read = match result {
        Ok(n) if n < size => Err(StorageError::Corrupt {
            path: file.path().to_path_buf(),
            page,
            what: format!("page lies beyond the end of the file (read {n} of {size} bytes)"),
        }),
        Ok(_) => Ok(()),
        Err(source) => Err(StorageError::Io {
            path: file.path().to_path_buf(),
            op: "read page",
            source,
        }),
    };
    bm.complete(ticket, read)
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
