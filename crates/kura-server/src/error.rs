//! Errors of the server itself (listening, runtime, configuration); query
//! errors travel to clients as ErrorResponses instead.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("invalid listen address {0:?} (expected HOST:PORT, e.g. 127.0.0.1:5433)")]
    BadAddress(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot install the signal handler: {0}")]
    Signal(std::io::Error),
    #[error("{0}")]
    Config(String),
}

pub type ServerResult<T> = Result<T, ServerError>;
