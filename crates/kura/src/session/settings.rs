//! SET and SHOW in a session: session settings, the database-wide ones, and the client
//! settings drivers send.

use super::*;
use crate::client_settings::{client_setting_value, is_client_setting};

/// The error a refused `SET` gives: 55P02 for a server setting, 22023 for
/// the rest (an unknown name too, as kura always answered).
pub(super) fn setting_error(e: SettingError) -> KuraError {
    match e {
        SettingError::ReadOnly(_) => KuraError::State {
            sqlstate: e.sqlstate(),
            message: e.to_string(),
        },
        e => KuraError::Invalid(e.to_string()),
    }
}

/// Statements the session runs itself (not through the SQL engine).
pub(super) fn is_local(stmt: &Statement) -> bool {
    match stmt {
        Statement::CreateTable(ct) => ct.query.is_none(),
        Statement::Drop { object_type, .. } => matches!(
            object_type,
            sqlparser::ast::ObjectType::Table
                | sqlparser::ast::ObjectType::View
                | sqlparser::ast::ObjectType::Index
        ),
        Statement::CreateIndex(_) => true,
        Statement::Copy { .. }
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. }
        | Statement::Set(_)
        | Statement::Reset(_)
        | Statement::ShowVariable { .. }
        | Statement::ExplainTable { .. }
        | Statement::ShowTables { .. }
        | Statement::Discard { .. } => true,
        s => is_session_statement(s),
    }
}

impl Session {
    /// `SET name = value` / `SET name TO value`.
    pub(super) fn set(&mut self, set: &sqlparser::ast::Set) -> KuraResult<QueryResult> {
        use sqlparser::ast::{Expr, Set};
        if let Set::SetTransaction {
            modes,
            snapshot,
            session,
        } = set
        {
            if snapshot.is_some() {
                return Err(KuraError::Unsupported("SET TRANSACTION SNAPSHOT".into()));
            }
            self.set_transaction(modes, *session)?;
            return Ok(QueryResult::command("SET"));
        }
        let Set::SingleAssignment {
            variable, values, ..
        } = set
        else {
            return Err(KuraError::Unsupported(format!("{set}")));
        };
        let name = variable.to_string().to_ascii_lowercase();
        let value = match values.as_slice() {
            [Expr::Value(v)] => match &v.value {
                sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            [Expr::Identifier(id)]
                if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") =>
            {
                self.reset_setting(&name)?;
                return Ok(QueryResult::command("SET"));
            }
            [Expr::Identifier(id)] => id.value.clone(),
            [other] => other.to_string(),
            _ => return Err(KuraError::Invalid(format!("SET {name} takes one value"))),
        };
        self.set_setting(&name, &value)?;
        Ok(QueryResult::command("SET"))
    }

    /// `RESET name` / `RESET ALL`: back to the value a new session starts with.
    pub(super) fn reset(&mut self, reset: &sqlparser::ast::Reset) -> KuraResult<QueryResult> {
        use sqlparser::ast::Reset;
        match reset {
            Reset::ConfigurationParameter(name) => {
                self.reset_setting(&name.to_string().to_ascii_lowercase())?
            }
            Reset::ALL => {
                // Database-wide and server settings are not the session's to undo.
                for spec in SETTINGS.iter().filter(|s| s.scope == Scope::Session) {
                    self.settings.reset(spec.name).map_err(setting_error)?;
                }
            }
            Reset::SessionAuthorization => {
                return Err(KuraError::Unsupported("RESET SESSION AUTHORIZATION".into()))
            }
        }
        Ok(QueryResult::command("RESET"))
    }

    /// Sets `name` back to its default (`RESET name`, `SET name TO DEFAULT`).
    pub(super) fn reset_setting(&mut self, name: &str) -> KuraResult<()> {
        let Some(spec) = Settings::spec(name) else {
            if is_client_setting(name) {
                return Ok(());
            }
            return Err(KuraError::Invalid(format!(
                "unrecognized configuration parameter \"{name}\""
            )));
        };
        match spec.scope {
            // Its default is not what the database runs with (options given
            // when it was opened): the value wanted must be named.
            Scope::Database => Err(KuraError::Unsupported(format!(
                "RESET of {name}, which changes every session of the database: SET it to the value wanted"
            ))),
            Scope::Server | Scope::Session => {
                self.settings.reset(spec.name).map_err(setting_error)
            }
        }
    }

    /// Changes a setting, applying those that act on shared state at once.
    pub fn set_setting(&mut self, name: &str, value: &str) -> KuraResult<()> {
        if let Some(r) = self.set_transaction_setting(name, value) {
            return r;
        }
        let Some(spec) = Settings::spec(name) else {
            if is_client_setting(name) {
                // Settings PostgreSQL drivers send at connect time; accepted, no effect.
                return Ok(());
            }
            return Err(setting_error(SettingError::Unknown(name.to_string())));
        };
        match spec.scope {
            Scope::Session => return self.settings.set(name, value).map_err(setting_error),
            Scope::Server => return Err(setting_error(SettingError::ReadOnly(spec.name))),
            Scope::Database if !self.identity.superuser => {
                return Err(KuraError::PermissionDenied(format!(
                    "permission denied to set parameter \"{}\": it changes every session of \
                     the database, and user \"{}\" is not a superuser",
                    spec.name, self.identity.user
                )));
            }
            Scope::Database => {}
        }
        // A database-wide setting: the value is checked, then applied to the
        // database, then stored where every session reads it; a change the
        // database refuses leaves the setting as it was.
        spec.ty.parse(value).map_err(|message| {
            setting_error(SettingError::Invalid {
                name: spec.name,
                message,
            })
        })?;
        if name.eq_ignore_ascii_case("llc_protect") {
            // Database-wide, like resident_indexes: applied first, so a failed
            // warm leaves the setting as it was.
            let v = value.trim();
            if v.is_empty() || v.eq_ignore_ascii_case("none") {
                self.llc.release()?;
            } else {
                self.llc.protect(&self.storage, v)?;
            }
        }
        if name.eq_ignore_ascii_case("resident_indexes") {
            // Applied first: a set the pool cannot hold leaves the setting as it was.
            self.storage.set_resident_indexes(value)?;
        }
        if name.eq_ignore_ascii_case("buffer_policy") {
            self.storage.buffer().set_policy(value)?;
        }
        let before = self.settings.entry(spec.name).expect("registered");
        self.settings.set(name, value).map_err(setting_error)?;
        if ["tier2", "tier2_mode", "tier2_policy", "tier2_kind"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            if let Err(e) = self.apply_tier2(name) {
                self.settings.restore(spec.name, before);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Applies `SET tier2*` to the database's pool. The tier is database-wide:
    /// `SET tier2` gives it a size (keeping the mode, policy and kind of the
    /// tier in place, if any); `SET tier2_mode`/`tier2_policy`/`tier2_kind`
    /// rebuild the tier in place
    /// (a rebuilt tier starts empty) or, with none, only wait for `SET tier2`.
    pub(super) fn apply_tier2(&mut self, name: &str) -> KuraResult<()> {
        use kura_storage::{TierCapacity, TierConfig};
        let bm = self.storage.buffer();
        let mode = || {
            kura_storage::buffer::parse_tier_mode(&self.settings.value("tier2_mode"))
                .map_err(KuraError::Invalid)
        };
        let kind = || {
            kura_storage::buffer::parse_tier_kind(&self.settings.value("tier2_kind"))
                .map_err(KuraError::Invalid)
        };
        let config = match (name.to_ascii_lowercase().as_str(), bm.tier_config()) {
            ("tier2", current) => {
                let Some(bytes) = self.settings.size("tier2") else {
                    return Ok(bm.set_tier(None)?);
                };
                let mut c = match current {
                    Some(c) => c,
                    None => TierConfig {
                        capacity: TierCapacity::Bytes(bytes),
                        mode: mode()?,
                        policy: self.settings.value("tier2_policy"),
                        kind: kind()?,
                    },
                };
                c.capacity = TierCapacity::Bytes(bytes);
                c
            }
            (_, None) => return Ok(()),
            ("tier2_mode", Some(mut c)) => {
                c.mode = mode()?;
                c
            }
            ("tier2_kind", Some(mut c)) => {
                c.kind = kind()?;
                c
            }
            (_, Some(mut c)) => {
                c.policy = self.settings.value("tier2_policy");
                c
            }
        };
        Ok(bm.set_tier(Some(config))?)
    }

    /// `SHOW name` / `SHOW ALL`.
    pub(super) fn show(&self, variable: &[sqlparser::ast::Ident]) -> KuraResult<QueryResult> {
        let name = variable
            .iter()
            .map(|i| i.value.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(" ");
        let text = DataType::Varchar(None);
        if name == "all" {
            let mut names = Vector::new(text, SETTINGS.len());
            let mut values = Vector::new(text, SETTINGS.len());
            let mut descr = Vector::new(text, SETTINGS.len());
            for s in SETTINGS {
                names.push_value(&Value::Text(s.name.into()));
                values.push_value(&Value::Text(self.settings.value(s.name)));
                descr.push_value(&Value::Text(s.description.into()));
            }
            let cols = ["name", "setting", "description"]
                .iter()
                .map(|n| ResultColumn {
                    name: n.to_string(),
                    data_type: text,
                })
                .collect();
            return Ok(QueryResult::rows_of(
                cols,
                vec![Batch::new(vec![names, values, descr])],
            ));
        }
        let name = match name.as_str() {
            "transaction isolation level" => "transaction_isolation".to_string(),
            _ => name,
        };
        let value = match self.settings.get(&name) {
            Some(v) => v,
            None if name == "is_superuser" => {
                if self.identity.superuser { "on" } else { "off" }.to_string()
            }
            None => match self.transaction_setting(&name) {
                Some(v) => v,
                None => client_setting_value(&name)
                    .ok_or_else(|| {
                        KuraError::Invalid(format!(
                            "unrecognized configuration parameter \"{name}\""
                        ))
                    })?
                    .to_string(),
            },
        };
        let v = Vector::from_values(text, &[Value::Text(value)]).expect("text vector");
        Ok(QueryResult::rows_of(
            vec![ResultColumn {
                name,
                data_type: text,
            }],
            vec![Batch::new(vec![v])],
        ))
    }
}
