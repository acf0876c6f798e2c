//! The listener: accepts connections, serves each on its own task, and shuts
//! down gracefully (stop accepting, cancel running queries, close every
//! session) when told to.

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::AuthSource;
use pgwire::api::RandomPidSecretKeyGenerator;
use pgwire::tokio::TlsAcceptor;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::auth::Credentials;
use crate::cancel::CancelRegistry;
use crate::conn::{Connection, Handlers};
use crate::engine::Engine;
use crate::error::{ServerError, ServerResult};
use crate::shared::{ScramPair, Shared};
use crate::tls::Tls;
use crate::trim::MemoryTrim;

/// How clients prove who they are.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Everyone is let in (the default, for loopback use).
    Trust,
    /// SCRAM-SHA-256 against these users' verifiers (SCRAM-SHA-256-PLUS, bound
    /// to the certificate, for clients on TLS).
    Scram(Arc<Credentials>),
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub auth: Auth,
    /// Reported by `current_database()`.
    pub database_name: String,
    /// How long shutdown waits for cancelled queries to wind down.
    pub shutdown_grace: Duration,
    /// Logged-in sessions at once; more are refused with 53300, as PostgreSQL does.
    pub max_connections: usize,
    /// Connections logging in at once; past it the one logging in longest is
    /// closed for the newcomer (see `gate`).
    pub max_pending_connections: usize,
    /// Accept TLS with this certificate when clients ask for it.
    pub tls: Option<Tls>,
    /// Refuse clients that do not use TLS (28000).
    pub tls_required: bool,
    /// A connection that has not authenticated within this time is closed
    /// (PostgreSQL's `authentication_timeout`), so silent or slow clients
    /// cannot hold connection slots.
    pub auth_timeout: Duration,
    /// Let clients in without a password on an address other than loopback.
    pub allow_remote_without_password: bool,
    /// Users who may change database-wide settings (PostgreSQL's superusers).
    pub superusers: Vec<String>,
}

/// The user who may change database-wide settings unless `--superuser` says.
pub const DEFAULT_SUPERUSER: &str = "kura";

/// How long a client has to log in by default: a real client needs
/// milliseconds; a long timeout only lets idle connections hold resources.
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(10);

impl ServerConfig {
    pub fn new(listen: SocketAddr) -> Self {
        ServerConfig {
            listen,
            auth: Auth::Trust,
            database_name: "kura".into(),
            shutdown_grace: Duration::from_secs(10),
            max_connections: 100,
            max_pending_connections: crate::gate::DEFAULT_MAX_PENDING,
            tls: None,
            tls_required: false,
            auth_timeout: DEFAULT_AUTH_TIMEOUT,
            allow_remote_without_password: false,
            superusers: vec![DEFAULT_SUPERUSER.to_string()],
        }
    }
}

/// A bound server, ready to run.
pub struct Server<E: Engine> {
    listener: TcpListener,
    shared: Arc<Shared<E>>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
    auth_timeout: Duration,
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
        if matches!(config.auth, Auth::Trust)
            && !config.listen.ip().is_loopback()
            && !config.allow_remote_without_password
        {
            return Err(ServerError::Config(format!(
                "refusing to serve {} without passwords: anyone who can reach it would have \
                 full access (give a password file or KURA_PASSWORD, or --insecure-no-auth)",
                config.listen
            )));
        }
        if config.tls_required && config.tls.is_none() {
            return Err(ServerError::Config(
                "TLS is required but no certificate and key were given".into(),
            ));
        }
        let scram = match &config.auth {
            Auth::Trust => None,
            Auth::Scram(credentials) => {
                let source: Arc<dyn AuthSource> = credentials.clone();
                let plain = ScramAuth::new(source.clone());
                let mut tls = ScramAuth::new(source);
                if let Some(t) = &config.tls {
                    // A certificate pgwire cannot hash for channel binding
                    // (say Ed25519) still serves TLS, with SCRAM-SHA-256 only.
                    if let Err(e) = tls.configure_certificate(&t.cert_pem) {
                        tracing::warn!("no SCRAM channel binding with this certificate: {e}");
                    }
                }
                Some(ScramPair { plain, tls })
            }
        };
        let budget = engine.memory_budget();
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
                database_name: config.database_name,
                cancels: Arc::new(CancelRegistry::default()),
                pids: Arc::new(RandomPidSecretKeyGenerator::default()),
                live_sessions: Arc::new(AtomicUsize::new(0)),
                gate: crate::gate::Gate::new(config.max_pending_connections),
                max_connections: config.max_connections,
                superusers: config.superusers,
                scram,
                tls_required: config.tls_required,
                trim: Arc::new(MemoryTrim::new(budget)),
            }),
            grace: config.shutdown_grace,
            tls: config.tls.map(|t| t.acceptor),
            auth_timeout: config.auth_timeout,
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
        let trimmer = tokio::spawn(self.shared.trim.clone().run());
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, addr)) => {
                        connections += 1;
                        // As PostgreSQL does: a reply's last message is not held back until
                        // the client acknowledges the one before (Nagle's algorithm).
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::debug!(%addr, "TCP_NODELAY: {e}");
                        }
                        let shared = self.shared.clone();
                        let tls = self.tls.clone();
                        let auth_timeout = self.auth_timeout;
                        tasks.spawn(async move {
                            if let Err(e) = serve_connection(shared, stream, tls, auth_timeout).await {
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
        trimmer.abort();
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
    tls: Option<TlsAcceptor>,
    auth_timeout: Duration,
) -> std::io::Result<()> {
    /// Gives up the connection's place in the gate when it ends.
    struct Leave(Arc<crate::gate::Admission>);
    impl Drop for Leave {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let admission = shared.gate.admit();
    let _leave = Leave(admission.clone());
    let peer_addr = stream.peer_addr().ok();
    // A duplicate descriptor lets a running query notice the client vanish.
    let peer: Option<OwnedFd> = stream.as_fd().try_clone_to_owned().ok();
    let conn = Connection::new(shared, peer, admission.clone());
    // The deadline covers the TLS handshake, the startup packet and the
    // password exchange; an authenticated session may then idle freely.
    let deadline = async {
        tokio::time::sleep(auth_timeout).await;
        if admission.is_logged_in() {
            std::future::pending::<()>().await;
        }
    };
    // Without TLS the protocol error can be written to the socket directly if
    // the protocol library fails on a message (a duplicate descriptor, since
    // the library owns the stream).
    let plain: Option<OwnedFd> = if tls.is_none() {
        stream.as_fd().try_clone_to_owned().ok()
    } else {
        None
    };
    // pgwire's decoders see only frames checked first (see `wire`), but should
    // the library still panic, the panic ends this connection only, and the
    // client is told, as PostgreSQL tells it, before the connection closes.
    let served = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        crate::wire::process_socket(stream, tls, Handlers(conn)),
    ));
    tokio::select! {
        r = served => r.unwrap_or_else(|_| {
            tracing::warn!(peer = ?peer_addr, "invalid message from the client; connection closed");
            if let Some(fd) = plain {
                let _ = std::io::Write::write_all(
                    &mut std::fs::File::from(fd),
                    &protocol_violation("invalid message format"),
                );
            }
            Ok(())
        }),
        _ = deadline => {
            tracing::info!(
                peer = ?peer_addr,
                "closing a connection that did not authenticate within {auth_timeout:?}"
            );
            Ok(())
        }
        _ = admission.evicted() => {
            tracing::info!(
                peer = ?peer_addr,
                "closing a connection still logging in: newer connections need its place"
            );
            Ok(())
        }
    }
}

/// A FATAL ErrorResponse with SQLSTATE 08P01 (protocol_violation), as bytes.
fn protocol_violation(message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (field, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "08P01"),
        (b'M', message),
    ] {
        body.push(field);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = vec![b'E'];
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}
