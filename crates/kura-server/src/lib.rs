//! kura-server: the PostgreSQL wire protocol in front of the kura database, so
//! psql, JDBC (pgjdbc), psycopg and other PostgreSQL clients work unchanged
//! (paper 003: the engine is reached over a protocol and JDBC). Built on the
//! `pgwire` crate; tokio lives only in this crate.

pub mod auth;
pub mod cancel;
pub mod codec;
pub mod compat;
mod conn;
pub mod engine;
pub mod error;
pub mod gate;
pub mod kura_engine;
pub mod run;
pub mod server;
mod shared;
pub mod sql_scan;
pub mod tls;
mod trim;
pub mod types;
mod wire;

pub use auth::{Credentials, Verifier};
pub use engine::{Canceller, Column, Engine, EngineError, EngineSession, Outcome, Shape};
pub use error::{ServerError, ServerResult};
pub use kura_engine::KuraEngine;
pub use run::{parse_listen, serve_until_signal};
pub use server::{Auth, Server, ServerConfig, ServerSummary};
pub use tls::Tls;

/// The PostgreSQL version kura's protocol and catalog answers follow; drivers
/// read it (`server_version`) to pick their feature set.
pub const SERVER_VERSION: &str = kura::identity::PG_VERSION;
pub const SERVER_VERSION_NUM: &str = kura::identity::PG_VERSION_NUM;
