//! Runs a session's blocking calls on the blocking thread pool, so the async
//! workers never wait on query work, and cancels the query when the client's
//! socket closes mid-query (the only way to notice a killed client, since the
//! connection reads no messages while a query runs).

use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;

use crate::engine::{Canceller, Column, EngineError, EngineSession, Outcome, StreamOut};
use crate::trim::{MemoryTrim, LONG_STATEMENT};
use kura_common::Value;
use tokio::sync::{mpsc, oneshot};

/// Batches of rows a streamed query may have ready before the client takes
/// them: the query waits beyond this, so a slow client holds a few batches in
/// the server, never its whole result.
const STREAM_BATCHES: usize = 4;

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
            contained(|| f(&mut guard.session))
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

impl<S: EngineSession> Runner<S> {
    /// Runs `f` like [`Runner::run`], but when the statement is a query the
    /// outcome comes back as soon as its columns are known, its rows following
    /// while the query runs: the rows the client has not taken yet are at most
    /// [`STREAM_BATCHES`] batches. The query's thread keeps the session until
    /// the last row is taken or the outcome is dropped (which stops the query).
    pub async fn run_streaming<F>(&self, f: F) -> Result<Outcome, EngineError>
    where
        F: FnOnce(&mut S, &mut dyn StreamOut) -> Result<Outcome, EngineError> + Send + 'static,
    {
        let (columns_tx, columns_rx) = oneshot::channel();
        let (rows_tx, rows_rx) = mpsc::channel(STREAM_BATCHES);
        let session = self.session.clone();
        let trim = self.trim.clone();
        let mut job = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            // Streamed or not, a long statement leaves freed memory to return.
            let _trim = TrimAfter(trim, started);
            let mut out = Channel {
                columns: Some(columns_tx),
                rows: rows_tx,
            };
            let r = contained(|| f(&mut guard.session, &mut out));
            match r {
                // Rows were sent: the error follows them on the stream.
                Err(e) if out.columns.is_none() => {
                    let _ = out.rows.blocking_send(Err(e.clone()));
                    Err(e)
                }
                r => r,
            }
        });
        let columns = tokio::select! {
            // Dropped unsent when the statement ends without streaming.
            c = columns_rx => c.ok(),
            _ = peer_gone(self.peer.clone()) => {
                (self.canceller)();
                tracing::debug!("client disconnected mid-query; query cancelled");
                None
            }
        };
        match columns {
            Some(columns) => {
                // The rows go out while the query runs: a client that goes
                // away must still cancel it (the query notices a closed
                // channel only when it next delivers rows).
                let (peer, canceller) = (self.peer.clone(), self.canceller.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = job => {}
                        _ = peer_gone(peer) => {
                            canceller();
                            tracing::debug!("client disconnected mid-result; query cancelled");
                        }
                    }
                });
                Ok(Outcome {
                    columns,
                    rows: Box::pin(
                        tokio_stream_of(rows_rx)
                            .map(|batch: Result<Vec<Vec<Value>>, EngineError>| match batch {
                                Ok(rows) => {
                                    futures::stream::iter(rows.into_iter().map(Ok)).left_stream()
                                }
                                Err(e) => {
                                    futures::stream::once(async move { Err(e) }).right_stream()
                                }
                            })
                            .flatten(),
                    ),
                    // pgwire counts the rows it sends and appends the count.
                    tag: "SELECT".into(),
                })
            }
            None => {
                // A query blocked on a full channel must see it close to end.
                drop(rows_rx);
                (&mut job).await.unwrap_or_else(|e| {
                    Err(EngineError::new("XX000", format!("internal error: {e}")))
                })
            }
        }
    }
}

/// Runs a statement; a panic inside becomes an internal error for it alone.
fn contained<T>(f: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(EngineError::new(
            "XX000",
            "internal error: the statement failed unexpectedly",
        ))
    })
}

/// Asks for a memory trim when dropped, if the statement ran long.
struct TrimAfter(Arc<MemoryTrim>, std::time::Instant);

impl Drop for TrimAfter {
    fn drop(&mut self) {
        if self.1.elapsed() >= LONG_STATEMENT {
            self.0.request();
        }
    }
}

/// A receiver as a stream (what tokio-stream's `ReceiverStream` does).
fn tokio_stream_of<T: Send + 'static>(
    mut rx: mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Where a streamed query's thread puts its result.
struct Channel {
    columns: Option<oneshot::Sender<Vec<Column>>>,
    rows: mpsc::Sender<Result<Vec<Vec<Value>>, EngineError>>,
}

impl StreamOut for Channel {
    fn columns(&mut self, columns: Vec<Column>) {
        if let Some(tx) = self.columns.take() {
            let _ = tx.send(columns);
        }
    }
    fn rows(&mut self, rows: Vec<Vec<Value>>) -> bool {
        self.rows.blocking_send(Ok(rows)).is_ok()
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
