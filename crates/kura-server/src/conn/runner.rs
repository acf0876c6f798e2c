//! Runs a session's blocking calls on the blocking thread pool, so the async
//! workers never wait on query work, and cancels the query when the client's
//! socket closes mid-query (the only way to notice a killed client, since the
//! connection reads no messages while a query runs).

use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::{Canceller, EngineError, EngineSession};
use crate::trim::{MemoryTrim, LONG_STATEMENT};

/// How often a running query checks whether its client is still there.
const PEER_POLL: Duration = Duration::from_millis(50);

/// A session plus what is needed to run its calls off the async threads.
pub struct Runner<S: EngineSession> {
    session: Arc<Mutex<Counted<S>>>,
    canceller: Canceller,
    /// A duplicate of the client socket's descriptor, only ever polled.
    peer: Option<Arc<OwnedFd>>,
    trim: Arc<MemoryTrim>,
}

/// A session that keeps a count of live sessions up to date, so shutdown can
/// wait until every session (and the query it may still run) is gone.
struct Counted<S> {
    session: S,
    live: Arc<AtomicUsize>,
    trim: Arc<MemoryTrim>,
}

impl<S> Drop for Counted<S> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
        // The session's memory is freed just after this body (fields drop
        // last); the trimmer acts on its next tick, when it is gone.
        self.trim.request();
    }
}

impl<S: EngineSession> Runner<S> {
    pub(crate) fn new(
        session: S,
        live: Arc<AtomicUsize>,
        peer: Option<OwnedFd>,
        trim: Arc<MemoryTrim>,
    ) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        let canceller = session.canceller();
        Runner {
            session: Arc::new(Mutex::new(Counted {
                session,
                live,
                trim: trim.clone(),
            })),
            canceller,
            peer: peer.map(Arc::new),
            trim,
        }
    }

    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// Runs `f` on the session on a blocking thread. A panic inside becomes an
    /// internal error for this statement; the session stays usable.
    pub async fn run<T, F>(&self, f: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&mut S) -> Result<T, EngineError> + Send + 'static,
    {
        let session = self.session.clone();
        let started = std::time::Instant::now();
        let mut job = tokio::task::spawn_blocking(move || {
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut guard.session))).unwrap_or_else(
                |_| {
                    Err(EngineError::new(
                        "XX000",
                        "internal error: the statement failed unexpectedly",
                    ))
                },
            )
        });
        let joined = tokio::select! {
            r = &mut job => r,
            _ = peer_gone(self.peer.clone()) => {
                (self.canceller)();
                tracing::debug!("client disconnected mid-query; query cancelled");
                job.await
            }
        };
        if started.elapsed() >= LONG_STATEMENT {
            self.trim.request();
        }
        joined.unwrap_or_else(|e| Err(EngineError::new("XX000", format!("internal error: {e}"))))
    }
}

/// Resolves once the peer has closed or reset the connection; never without a peer.
async fn peer_gone(peer: Option<Arc<OwnedFd>>) {
    let Some(fd) = peer else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(PEER_POLL).await;
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout; the descriptor stays open while `fd` lives.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n > 0
            && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
        {
            return;
        }
    }
}
