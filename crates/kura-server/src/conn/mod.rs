//! One client connection: its session, its client parameters, and the pgwire
//! handlers (startup, simple query, extended query) that serve it.

mod copy;
mod extended;
mod respond;
mod runner;
mod sasl;
mod simple;
mod startup;

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use pgwire::api::auth::mechanism::AuthMechanism;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ErrorHandler, PgWireServerHandlers};

use crate::cancel::CancelByKey;
use crate::compat::ClientParameters;
use crate::engine::{Engine, EngineSession};
use crate::shared::Shared;

pub use runner::Runner;

/// Before a statement that recovers a failed transaction or starts the next
/// one (`ROLLBACK TO SAVEPOINT`, `COMMIT AND CHAIN`; see
/// [`crate::compat::Compat::Resume`]): the connection's status is set to "in
/// a transaction" now, since pgwire derives the status reported in
/// ReadyForQuery from the statement's answer, and none leads from "failed"
/// back to "in a transaction". If the statement fails, its error sets
/// "failed" again.
fn resume_status<C: pgwire::api::ClientInfo>(client: &mut C, c: &crate::compat::Compat) {
    use pgwire::messages::response::TransactionStatus;
    if matches!(c, crate::compat::Compat::Resume(_))
        && client.transaction_status() == TransactionStatus::Error
    {
        client.set_transaction_status(TransactionStatus::Transaction);
    }
}

/// Per-connection state and handlers.
pub struct Connection<E: Engine> {
    shared: Arc<Shared<E>>,
    runner: Arc<Runner<E::Session>>,
    parser: Arc<extended::Parser<E::Session>>,
    state: Mutex<ConnState>,
    /// The connection's place in the server's gate: logging in, then a session.
    admission: Arc<crate::gate::Admission>,
    /// The `COPY ... FROM STDIN` whose data the client is sending.
    copy_in: Mutex<Option<copy::CopyInJob>>,
}

#[derive(Default)]
struct ConnState {
    params: ClientParameters,
    /// Backend process id handed to the client (for CancelRequest).
    pid: Option<i32>,
    /// The SCRAM exchange in progress.
    scram: Option<Box<dyn AuthMechanism>>,
    /// The exchange's next password message is its first, the
    /// SASLInitialResponse (parsed here, see `sasl`).
    scram_initial: bool,
    /// A portal's result computed at Describe (portal identity, name, result).
    early: Option<(usize, String, crate::engine::Outcome)>,
}

impl<E: Engine> Connection<E> {
    pub fn new(
        shared: Arc<Shared<E>>,
        peer: Option<OwnedFd>,
        admission: Arc<crate::gate::Admission>,
    ) -> Arc<Self> {
        let session = shared.engine.session();
        let runner = Arc::new(Runner::new(
            session,
            shared.live_sessions.clone(),
            peer,
            shared.trim.clone(),
        ));
        Arc::new(Connection {
            parser: Arc::new(extended::Parser::new(runner.clone())),
            runner,
            shared,
            state: Mutex::new(ConnState::default()),
            admission,
            copy_in: Mutex::new(None),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ConnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<E: Engine> Drop for Connection<E> {
    fn drop(&mut self) {
        if let Some(pid) = self.state().pid {
            self.shared.cancels.unregister(pid);
        }
    }
}

/// The handler set pgwire asks for, all served by one [`Connection`].
pub struct Handlers<E: Engine>(pub Arc<Connection<E>>);

impl<E: Engine> PgWireServerHandlers for Handlers<E>
where
    <E::Session as EngineSession>::Prepared: Send + Sync,
{
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.0.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.0.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.0.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.0.clone()
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        self.0.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::new(CancelByKey(self.0.shared.cancels.clone()))
    }
}
