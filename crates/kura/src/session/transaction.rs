//! Transactions in a session: BEGIN, COMMIT, ROLLBACK, savepoints, and the state a failed
//! statement leaves.

use super::*;

/// A savepoint's name as PostgreSQL keeps it: folded to lower case unless
/// quoted.
pub(super) fn savepoint_name(name: &sqlparser::ast::Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

impl Session {
    /// Refuses statements in a transaction an error aborted (all but its end);
    /// brings the transaction's view up to date for a statement that may read
    /// rows (see `Tx::append_rows`).
    pub(super) fn check_transaction(&self, stmt: &Statement) -> KuraResult<()> {
        if matches!(stmt, Statement::Commit { .. } | Statement::Rollback { .. }) {
            return Ok(());
        }
        let mut state = self.lock_txn();
        crate::txn::check_not_failed(&state)?;
        if !crate::txn::appends_only(stmt) {
            crate::txn::refresh(&mut state)?;
            crate::txn::refresh(&mut self.temp.lock())?;
        }
        Ok(())
    }

    pub(super) fn lock_txn(&self) -> std::sync::MutexGuard<'_, TxnState> {
        self.txn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True between `BEGIN` and `COMMIT`/`ROLLBACK` (also when an error aborted
    /// the transaction).
    pub fn in_transaction(&self) -> bool {
        !matches!(*self.lock_txn(), TxnState::Idle | TxnState::Writing)
    }

    pub(crate) fn tx(&self) -> Tx<'_> {
        Tx {
            storage: &self.storage,
            state: &self.txn,
            cancel: &self.cancel,
            settings: &self.settings,
            temp: &self.temp,
        }
    }

    /// `BEGIN`, `COMMIT [AND CHAIN]`, `ROLLBACK [AND CHAIN]`, `SAVEPOINT`,
    /// `RELEASE [SAVEPOINT]`, `ROLLBACK TO [SAVEPOINT]`.
    pub(super) fn transaction_control(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        match stmt {
            Statement::Savepoint { name } => return self.savepoint(&savepoint_name(name)),
            Statement::ReleaseSavepoint { name } => {
                return self.release_savepoint(&savepoint_name(name))
            }
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => return self.rollback_to_savepoint(&savepoint_name(name)),
            _ => {}
        }
        let (isolation, read_only) = match stmt {
            Statement::StartTransaction { modes, .. } => self.transaction_modes(modes)?,
            _ => (Isolation::ReadCommitted, false),
        };
        // `AND CHAIN`: a new transaction with the same modes begins at once.
        let chain = match stmt {
            Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
                let what = if matches!(stmt, Statement::Commit { .. }) {
                    "COMMIT"
                } else {
                    "ROLLBACK"
                };
                let modes = match &*self.lock_txn() {
                    TxnState::Open(open) | TxnState::Failed(open) => {
                        Some((open.isolation, open.read_only))
                    }
                    TxnState::Idle | TxnState::Writing => None,
                };
                Some(modes.ok_or_else(|| KuraError::State {
                    sqlstate: "25P01",
                    message: format!("{what} AND CHAIN can only be used in transaction blocks"),
                })?)
            }
            _ => None,
        };
        match stmt {
            // A nested BEGIN (a warning) keeps the first one's time.
            Statement::StartTransaction { .. } if self.txn_start.is_none() => {
                self.txn_start = Some(kura_common::timestamp::now_utc());
            }
            Statement::Commit { .. } => {
                self.txn_start = None;
                let failed = matches!(*self.lock_txn(), TxnState::Failed(_));
                self.cursors.end_transaction(!failed, &self.shared_memory);
            }
            Statement::Rollback { .. } => {
                self.txn_start = None;
                self.cursors.end_transaction(false, &self.shared_memory);
            }
            _ => {}
        }
        let state = &mut *self.txn.lock().unwrap_or_else(|p| p.into_inner());
        let (tag, warning) = match stmt {
            Statement::StartTransaction { .. } => {
                ("BEGIN", crate::txn::begin(state, isolation, read_only))
            }
            Statement::Commit { .. } => {
                // The temporary part commits only after the database's did.
                let r = crate::txn::commit(state);
                let committed = matches!(r, Ok(("COMMIT", None)));
                crate::temp::end_transaction(&self.temp, committed)?;
                r?
            }
            Statement::Rollback { .. } => {
                crate::temp::end_transaction(&self.temp, false)?;
                ("ROLLBACK", crate::txn::rollback(state))
            }
            other => {
                return Err(KuraError::Internal(format!(
                    "{other} reached transaction control"
                )))
            }
        };
        if let Some((isolation, read_only)) = chain {
            // PostgreSQL chains after a failed transaction too (whose COMMIT
            // rolled back); the new transaction starts clean.
            crate::txn::begin(state, isolation, read_only);
            self.txn_start = Some(kura_common::timestamp::now_utc());
        }
        if let Some(w) = warning {
            tracing::warn!("{w}");
        }
        Ok(QueryResult::command(tag))
    }

    /// `SAVEPOINT name`, in the database's part of the transaction and in
    /// its temporary tables' part (when that has begun; if it begins later,
    /// it starts with this savepoint as a marker).
    pub(super) fn savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
        let cursors = self.cursors.mark();
        let mut main = self.txn.lock().unwrap_or_else(|p| p.into_inner());
        let mut temp = self.temp.lock();
        let in_temp = matches!(*temp, TxnState::Open(_)) && matches!(*main, TxnState::Open(_));
        if in_temp {
            crate::txn::savepoint(&mut temp, name, cursors)?;
        }
        if let Err(e) = crate::txn::savepoint(&mut main, name, cursors) {
            if in_temp {
                // Both parts keep the same savepoints.
                let _ = crate::txn::release(&mut temp, name);
            }
            return Err(e);
        }
        Ok(QueryResult::command("SAVEPOINT"))
    }

    /// `RELEASE [SAVEPOINT] name`, in both parts of the transaction.
    pub(super) fn release_savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
        let mut main = self.txn.lock().unwrap_or_else(|p| p.into_inner());
        crate::txn::release(&mut main, name)?;
        let mut temp = self.temp.lock();
        if matches!(*temp, TxnState::Open(_)) {
            // The same savepoints as the database's part: found there too.
            let _ = crate::txn::release(&mut temp, name);
        }
        Ok(QueryResult::command("RELEASE"))
    }

    /// `ROLLBACK TO [SAVEPOINT] name`, in both parts of the transaction;
    /// recovers a failed one. Cursors declared since the savepoint close.
    pub(super) fn rollback_to_savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
        let mut main = self.txn.lock().unwrap_or_else(|p| p.into_inner());
        let cursors = crate::txn::rollback_to(&mut main, name)?;
        self.cursors.rollback_to(cursors, &self.shared_memory);
        let mut temp = self.temp.lock();
        if matches!(*temp, TxnState::Open(_) | TxnState::Failed(_))
            && crate::txn::rollback_to(&mut temp, name).is_err()
        {
            // Not there (cannot happen: both parts keep the same savepoints):
            // the temporary part forgets everything rather than keep what
            // it wrote after the savepoint.
            crate::txn::rollback(&mut temp);
        }
        Ok(QueryResult::command("ROLLBACK"))
    }

    /// Ends a statement: disarms its time limit, reports a cancellation that
    /// the time limit caused as such (57014 either way, as in PostgreSQL), and
    /// aborts an open transaction when the statement failed.
    pub(super) fn finish<T>(&self, r: KuraResult<T>) -> KuraResult<T> {
        crate::txn::after_statement(&mut self.lock_txn(), &r);
        let timed_out = self.cancel.timed_out();
        self.cancel.start(None);
        match r {
            Err(e) if e.sqlstate() == "57014" && timed_out => Err(KuraError::StatementTimeout),
            r => r,
        }
    }

    /// `DISCARD ALL | TEMP | PLANS | SEQUENCES`: ALL and TEMP drop the session's
    /// temporary tables (a pooled connection handed to another client must not
    /// show it the last one's), ALL and SEQUENCES its `currval` state; kura
    /// keeps no plans to drop.
    pub(super) fn discard(
        &mut self,
        what: sqlparser::ast::DiscardObject,
    ) -> KuraResult<QueryResult> {
        use sqlparser::ast::DiscardObject as D;
        if matches!(what, D::ALL | D::TEMP) {
            if self.in_transaction() {
                // PostgreSQL refuses DISCARD ALL here (25001); DISCARD TEMP
                // would have to come back with a ROLLBACK, which kura cannot.
                return Err(KuraError::State {
                    sqlstate: if what == D::ALL { "25001" } else { "0A000" },
                    message: format!("DISCARD {what} cannot run inside a transaction block"),
                });
            }
            self.temp = Default::default();
        }
        if matches!(what, D::ALL | D::SEQUENCES) {
            self.sequences.discard();
        }
        Ok(QueryResult::command(format!("DISCARD {what}")))
    }
}
