//! Running a server as a process: its own async runtime, serving until SIGINT
//! or SIGTERM, then shutting down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::signal::unix::{signal, SignalKind};

use crate::engine::Engine;
use crate::error::{ServerError, ServerResult};
use crate::server::{Server, ServerConfig, ServerSummary};

/// Serves `engine` until SIGINT or SIGTERM. `on_ready` is told the bound address
/// once connections are accepted (port 0 binds an ephemeral port).
pub fn serve_until_signal<E: Engine>(
    engine: Arc<E>,
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr),
) -> ServerResult<ServerSummary> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kura-server")
        .build()
        .map_err(ServerError::Runtime)?;
    runtime.block_on(async move {
        let mut interrupt = signal(SignalKind::interrupt()).map_err(ServerError::Signal)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(ServerError::Signal)?;
        let server = Server::bind(engine, config).await?;
        on_ready(server.local_addr());
        let stop = async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        };
        Ok(server.run(stop).await)
    })
}

/// Parses `HOST:PORT` (`localhost` allowed) into a socket address.
pub fn parse_listen(s: &str) -> ServerResult<SocketAddr> {
    let s = s.trim();
    let with_host = s
        .strip_prefix("localhost:")
        .map(|p| format!("127.0.0.1:{p}"));
    with_host
        .as_deref()
        .unwrap_or(s)
        .parse()
        .map_err(|_| ServerError::BadAddress(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("127.0.0.1:5433").unwrap().port(), 5433);
        assert!(parse_listen("localhost:0").unwrap().ip().is_loopback());
        assert!(parse_listen("[::1]:5433").unwrap().is_ipv6());
        assert!(parse_listen("nowhere").is_err());
    }
}
