//! Transactions of a session — `BEGIN`, `COMMIT`, `ROLLBACK` — on the storage's
//! single shadow-paged write transaction: a transaction's statements see each
//! other's changes, other sessions see only what was committed, and a rollback
//! leaves no trace. A statement that fails inside a transaction aborts it, as in
//! PostgreSQL (SQLSTATE 25P02 until `ROLLBACK`).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kura_storage::{Catalog, Storage, WriteTxn};

use crate::error::{KuraError, KuraResult};
use crate::session::CancelHandle;

/// Where a session stands.
#[derive(Default)]
pub(crate) enum TxnState {
    /// Autocommit: every statement commits on its own.
    #[default]
    Idle,
    /// Between `BEGIN` and `COMMIT`/`ROLLBACK`. The write transaction is taken
    /// at the first write, so a transaction that only reads never holds other
    /// writers up (drivers open one around every query when autocommit is off).
    Open {
        writer: Option<Box<WriteTxn>>,
        /// The catalog as the transaction's writes left it, read by its statements.
        snapshot: Option<Arc<Catalog>>,
    },
    /// A statement failed inside the transaction; its changes are gone, and
    /// only `COMMIT` or `ROLLBACK` (both roll back) end it.
    Failed,
}

/// How often a statement waiting for another session's write transaction
/// checks for cancellation and its time limit.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// What one statement reads and writes: the committed database in autocommit
/// mode, the open transaction's state inside `BEGIN ... COMMIT`.
#[derive(Clone, Copy)]
pub(crate) struct Tx<'a> {
    pub storage: &'a Arc<Storage>,
    pub state: &'a Mutex<TxnState>,
    pub cancel: &'a CancelHandle,
}

impl Tx<'_> {
    fn lock(&self) -> MutexGuard<'_, TxnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The catalog a statement reads.
    pub fn catalog(&self) -> Arc<Catalog> {
        match &*self.lock() {
            TxnState::Open {
                snapshot: Some(s), ..
            } => s.clone(),
            _ => self.storage.catalog(),
        }
    }

    /// Runs `f` on the write transaction: inside `BEGIN` on the session's own
    /// (taken now if this is its first write), else on a new one committed
    /// when `f` succeeds. Changes of a failed `f` are never committed.
    pub fn write<T>(&self, f: impl FnOnce(&mut WriteTxn) -> KuraResult<T>) -> KuraResult<T> {
        let taken = match &mut *self.lock() {
            TxnState::Open { writer, .. } => Some(writer.take()),
            _ => None,
        };
        match taken {
            None => {
                let mut txn = self.acquire()?;
                let out = f(&mut txn)?;
                txn.commit()?;
                Ok(out)
            }
            Some(open) => {
                let mut txn = match open {
                    Some(txn) => txn,
                    None => Box::new(self.acquire()?),
                };
                // On an error the transaction is dropped here (rolled back);
                // the session then marks itself failed.
                let out = f(&mut txn)?;
                let snapshot = txn.snapshot()?;
                if let TxnState::Open {
                    writer,
                    snapshot: s,
                } = &mut *self.lock()
                {
                    *writer = Some(txn);
                    *s = Some(snapshot);
                }
                Ok(out)
            }
        }
    }

    /// Takes the write transaction, waiting while another session holds it;
    /// the wait ends with the statement's cancellation or time limit.
    fn acquire(&self) -> KuraResult<WriteTxn> {
        loop {
            self.cancel.check()?;
            if let Some(txn) = self.storage.try_begin(WAIT_SLICE)? {
                return Ok(txn);
            }
        }
    }
}

/// `BEGIN`: PostgreSQL answers a nested one with a warning and stays put.
pub(crate) fn begin(state: &mut TxnState) -> Option<&'static str> {
    match state {
        TxnState::Idle => {
            *state = TxnState::Open {
                writer: None,
                snapshot: None,
            };
            None
        }
        _ => Some("there is already a transaction in progress"),
    }
}

/// `COMMIT`: makes the transaction's writes durable and visible; the tag says
/// what happened (`ROLLBACK` for a failed transaction, as in PostgreSQL).
pub(crate) fn commit(state: &mut TxnState) -> KuraResult<(&'static str, Option<&'static str>)> {
    match std::mem::take(state) {
        TxnState::Idle => Ok(("COMMIT", Some("there is no transaction in progress"))),
        TxnState::Open { writer, .. } => {
            if let Some(txn) = writer {
                txn.commit()?;
            }
            Ok(("COMMIT", None))
        }
        TxnState::Failed => Ok(("ROLLBACK", None)),
    }
}

/// `ROLLBACK`: forgets the transaction's writes.
pub(crate) fn rollback(state: &mut TxnState) -> Option<&'static str> {
    match std::mem::take(state) {
        TxnState::Idle => Some("there is no transaction in progress"),
        _ => None,
    }
}

/// After a statement: an error inside a transaction aborts it.
pub(crate) fn after_statement<T>(state: &mut TxnState, r: &KuraResult<T>) {
    if r.is_err() && matches!(state, TxnState::Open { .. }) {
        *state = TxnState::Failed;
    }
}

/// Before a statement: a failed transaction refuses everything but its end.
pub(crate) fn check_not_failed(state: &TxnState) -> KuraResult<()> {
    match state {
        TxnState::Failed => Err(KuraError::InFailedTransaction),
        _ => Ok(()),
    }
}
