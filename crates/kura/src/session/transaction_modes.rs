//! A session's transaction modes: the isolation level and read-only flag of
//! `BEGIN ...`, `SET TRANSACTION ...`, `SET SESSION CHARACTERISTICS AS
//! TRANSACTION ...` and `SET transaction_isolation`, and what `SHOW` reports
//! of them (PostgreSQL's rules; see `txn` for what each level does).

use sqlparser::ast::{TransactionAccessMode, TransactionMode};

use super::{setting_error, Session};
use crate::error::{KuraError, KuraResult};
use crate::txn::{Isolation, TxnState};

impl Session {
    /// The level and access mode a `BEGIN` with `modes` starts: the session's
    /// defaults where a mode is not given.
    pub(super) fn transaction_modes(
        &self,
        modes: &[TransactionMode],
    ) -> KuraResult<(Isolation, bool)> {
        let mut isolation = self.default_isolation();
        let mut read_only = self.settings.flag("default_transaction_read_only");
        for m in modes {
            match m {
                TransactionMode::IsolationLevel(l) => isolation = Isolation::from_ast(l)?,
                TransactionMode::AccessMode(a) => {
                    read_only = matches!(a, TransactionAccessMode::ReadOnly)
                }
            }
        }
        Ok((isolation, read_only))
    }

    /// `SET TRANSACTION modes` (this transaction) or, with `session`,
    /// `SET SESSION CHARACTERISTICS AS TRANSACTION modes` (later ones).
    pub(super) fn set_transaction(
        &mut self,
        modes: &[TransactionMode],
        session: bool,
    ) -> KuraResult<()> {
        let mut isolation = None;
        let mut read_only = None;
        for m in modes {
            match m {
                TransactionMode::IsolationLevel(l) => isolation = Some(Isolation::from_ast(l)?),
                TransactionMode::AccessMode(a) => {
                    read_only = Some(matches!(a, TransactionAccessMode::ReadOnly))
                }
            }
        }
        if !session {
            return self.set_transaction_modes(isolation, read_only);
        }
        if let Some(level) = isolation {
            self.settings
                .set("default_transaction_isolation", level.name())
                .map_err(setting_error)?;
        }
        if let Some(ro) = read_only {
            self.settings
                .set(
                    "default_transaction_read_only",
                    if ro { "on" } else { "off" },
                )
                .map_err(setting_error)?;
        }
        Ok(())
    }

    /// Changes the open transaction's modes. The level can change only before
    /// its first statement; outside a transaction this does nothing, with
    /// PostgreSQL's warning.
    pub(super) fn set_transaction_modes(
        &mut self,
        isolation: Option<Isolation>,
        read_only: Option<bool>,
    ) -> KuraResult<()> {
        let mut state = self.lock_txn();
        let TxnState::Open(open) = &mut *state else {
            tracing::warn!("SET TRANSACTION can only be used in transaction blocks");
            return Ok(());
        };
        if let Some(level) = isolation.filter(|l| *l != open.isolation) {
            if open.started {
                return Err(KuraError::State {
                    sqlstate: "25001",
                    message: "SET TRANSACTION ISOLATION LEVEL must be called before any query"
                        .into(),
                });
            }
            open.isolation = level;
        }
        if let Some(ro) = read_only {
            if !ro && open.read_only && open.started {
                return Err(KuraError::State {
                    sqlstate: "25001",
                    message: "transaction read-write mode must be set before any query".into(),
                });
            }
            open.read_only = ro;
        }
        Ok(())
    }

    /// `SET transaction_isolation` / `SET transaction_read_only`: this
    /// transaction's modes, as `SET TRANSACTION` sets them; `None` for other names.
    pub(super) fn set_transaction_setting(
        &mut self,
        name: &str,
        value: &str,
    ) -> Option<KuraResult<()>> {
        let invalid = || {
            KuraError::Invalid(format!(
                "invalid value for parameter \"{}\": \"{value}\"",
                name.to_ascii_lowercase()
            ))
        };
        if name.eq_ignore_ascii_case("transaction_isolation") {
            return Some(match Isolation::parse(value) {
                Some(level) => self.set_transaction_modes(Some(level), None),
                None => Err(invalid()),
            });
        }
        if name.eq_ignore_ascii_case("transaction_read_only") {
            // Read as every on/off setting is read.
            return Some(match kura_common::settings::parse_bool(value) {
                Some(read_only) => self.set_transaction_modes(None, Some(read_only)),
                None => Err(invalid()),
            });
        }
        None
    }

    /// `transaction_isolation` / `transaction_read_only`: the open
    /// transaction's, else what a new one would get. `None` for other names.
    pub(super) fn transaction_setting(&self, name: &str) -> Option<String> {
        let state = self.lock_txn();
        let open = match &*state {
            TxnState::Open(open) => Some((open.isolation, open.read_only)),
            _ => None,
        };
        let (isolation, read_only) = open.unwrap_or_else(|| {
            (
                self.default_isolation(),
                self.settings.flag("default_transaction_read_only"),
            )
        });
        match name {
            "transaction_isolation" => Some(isolation.name().to_string()),
            "transaction_read_only" => Some(if read_only { "on" } else { "off" }.to_string()),
            _ => None,
        }
    }

    fn default_isolation(&self) -> Isolation {
        Isolation::parse(&self.settings.value("default_transaction_isolation")).unwrap_or_default()
    }
}
