//! The state every connection of one server shares: the engine, the cancel
//! keys, the connection gate, the authentication exchanges.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::RandomPidSecretKeyGenerator;

use crate::cancel::CancelRegistry;
use crate::engine::Engine;
use crate::trim::MemoryTrim;

/// State every connection shares.
pub struct Shared<E: Engine> {
    pub(crate) engine: Arc<E>,
    pub(crate) database_name: String,
    pub(crate) cancels: Arc<CancelRegistry>,
    pub(crate) pids: Arc<RandomPidSecretKeyGenerator>,
    /// Sessions alive (a session outlives its connection while its query winds down).
    pub(crate) live_sessions: Arc<AtomicUsize>,
    /// Connections logging in and sessions logged in, and how many may be.
    pub(crate) gate: Arc<crate::gate::Gate>,
    pub(crate) max_connections: usize,
    pub(crate) superusers: Vec<String>,
    /// The SCRAM exchanges offered: without channel binding (plain
    /// connections) and with it (TLS connections), when passwords are required.
    pub(crate) scram: Option<ScramPair>,
    pub(crate) tls_required: bool,
    pub(crate) trim: Arc<MemoryTrim>,
}

pub(crate) struct ScramPair {
    pub(crate) plain: ScramAuth,
    pub(crate) tls: ScramAuth,
}
