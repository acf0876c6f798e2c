//! The listener: accepts connections, serves each on its own task, and shuts
//! down gracefully (stop accepting, cancel running queries, close every
//! session) when told to.

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::RandomPidSecretKeyGenerator;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::cancel::CancelRegistry;
use crate::conn::{Connection, Handlers};
use crate::engine::Engine;
use crate::error::{ServerError, ServerResult};

/// How clients prove who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// Everyone is let in (the default, for loopback use).
    Trust,
    /// md5 password authentication; `user` restricts the login name when set.
    Md5 {
        user: Option<String>,
        password: String,
    },
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub auth: Auth,
    /// Reported by `current_database()`.
    pub database_name: String,
    /// How long shutdown waits for cancelled queries to wind down.
    pub shutdown_grace: Duration,
    /// Connections served at once; more are refused with 53300, as PostgreSQL does.
    pub max_connections: usize,
}

impl ServerConfig {
    pub fn new(listen: SocketAddr) -> Self {
        ServerConfig {
            listen,
            auth: Auth::Trust,
            database_name: "kura".into(),
            shutdown_grace: Duration::from_secs(10),
            max_connections: 100,
        }
    }
}

/// State every connection shares.
pub struct Shared<E: Engine> {
    pub(crate) engine: Arc<E>,
    pub(crate) auth: Auth,
    pub(crate) database_name: String,
    pub(crate) cancels: Arc<CancelRegistry>,
    pub(crate) pids: Arc<RandomPidSecretKeyGenerator>,
    /// Sessions alive (a session outlives its connection while its query winds down).
    pub(crate) live_sessions: Arc<AtomicUsize>,
    /// Connections open now, and how many may be.
    pub(crate) open_connections: AtomicUsize,
    pub(crate) max_connections: usize,
}

/// A bound server, ready to run.
pub struct Server<E: Engine> {
    listener: TcpListener,
    shared: Arc<Shared<E>>,
    grace: Duration,
}

/// What a finished server did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSummary {
    pub connections: u64,
    /// Sessions still alive when shutdown stopped waiting (0 after a clean close).
    pub sessions_left: usize,
}

impl<E: Engine> Server<E> {
    pub async fn bind(engine: Arc<E>, config: ServerConfig) -> ServerResult<Self> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| ServerError::Listen {
                    addr: config.listen.to_string(),
                    source,
                })?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                engine,
                auth: config.auth,
                database_name: config.database_name,
                cancels: Arc::new(CancelRegistry::default()),
                pids: Arc::new(RandomPidSecretKeyGenerator::default()),
                live_sessions: Arc::new(AtomicUsize::new(0)),
                open_connections: AtomicUsize::new(0),
                max_connections: config.max_connections,
            }),
            grace: config.shutdown_grace,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Number of sessions alive now (for tests and monitoring).
    pub fn live_sessions(&self) -> Arc<AtomicUsize> {
        self.shared.live_sessions.clone()
    }

    /// Serves until `shutdown` resolves, then stops accepting, cancels running
    /// queries, closes every connection and waits (up to the grace period) for
    /// every session to be dropped.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> ServerSummary {
        let mut tasks = JoinSet::new();
        let mut connections = 0u64;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, addr)) => {
                        connections += 1;
                        let shared = self.shared.clone();
                        tasks.spawn(async move {
                            if let Err(e) = serve_connection(shared, stream).await {
                                tracing::debug!(%addr, "connection ended: {e}");
                            }
                        });
                    }
                    // Running out of descriptors and the like: keep serving the
                    // others, retry after a pause.
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        drop(self.listener);
        tracing::info!("shutting down: cancelling running queries");
        self.shared.cancels.cancel_all();
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        let deadline = tokio::time::Instant::now() + self.grace;
        while self.shared.live_sessions.load(Ordering::SeqCst) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ServerSummary {
            connections,
            sessions_left: self.shared.live_sessions.load(Ordering::SeqCst),
        }
    }
}

async fn serve_connection<E: Engine>(
    shared: Arc<Shared<E>>,
    stream: TcpStream,
) -> std::io::Result<()> {
    /// Counts a connection while it is open.
    struct Open<'a>(&'a AtomicUsize);
    impl Drop for Open<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    shared.open_connections.fetch_add(1, Ordering::SeqCst);
    let counted = shared.clone();
    let _open = Open(&counted.open_connections);
    // A duplicate descriptor lets a running query notice the client vanish.
    let peer: Option<OwnedFd> = stream.as_fd().try_clone_to_owned().ok();
    let conn = Connection::new(shared, peer);
    pgwire::tokio::process_socket(stream, None, Handlers(conn)).await
}
