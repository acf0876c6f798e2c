//! The crate's one error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("unknown cache policy '{name}'; valid policies: {}", crate::POLICY_NAMES.join(", "))]
    UnknownPolicy { name: String },
    #[error("cache policy '{name}' cannot manage a buffer pool: {reason}")]
    UnsuitableForBuffer { name: String, reason: &'static str },
    #[error("invalid cache configuration: {0}")]
    InvalidConfig(String),
    #[error("{path}:{line}: {message}")]
    TraceParse {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    BadTrace { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
