//! A session: settings, a cancel flag, and `execute` — parse the SQL, run each
//! statement, turn a panic inside a query into an error so the database stays open.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

mod copy;
mod database_io;
mod parsing;
mod prepare;
mod registered;
mod session_statements;
mod settings;
mod transaction;
mod transaction_modes;

use session_statements::*;
use settings::*;

use sqlparser::ast::Statement;

use kura_common::settings::{Scope, SettingError, Settings, SETTINGS};
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::Storage;

pub use crate::cancel::CancelHandle;
use crate::error::{KuraError, KuraResult};
use crate::parsing::is_database_mark;
pub use crate::parsing::parse;
pub use crate::prepared::Prepared;
pub use crate::progress::Progress;
use crate::result::{QueryResult, ResultColumn, RowSink};
use crate::stack::{on_statement_stack, DropOnStack};
use crate::txn::{Isolation, Tx, TxnState};

/// One connection's state.
pub struct Session {
    storage: Arc<Storage>,
    settings: Settings,
    cancel: CancelHandle,
    progress: Option<Arc<Progress>>,
    file_access: crate::file_access::FileAccess,
    /// Inside `BEGIN ... COMMIT` or not.
    txn: std::sync::Mutex<TxnState>,
    /// The database's memory budget shared by every session's queries.
    shared_memory: Arc<kura_exec::context::MemoryTracker>,
    /// Who and where the session is (`current_user`, `version()` ...).
    identity: crate::identity::Identity,
    /// When the open transaction began (`now()`), microseconds since 1970.
    txn_start: Option<i64>,
    /// `PREPARE`d statements by name.
    pub(crate) prepared: crate::prepared::PreparedStatements,
    /// Open cursors by name.
    pub(crate) cursors: crate::cursor::Cursors,
    /// The database's LLC control, shared by every session.
    llc: Arc<crate::llc::Llc>,
    /// The session's temporary tables (dropped with the session).
    temp: crate::txn::TempTables,
    /// Relations the program registered (`Session::register_arrow`).
    pub(crate) registered: crate::registered::Registered,
    /// What `currval` returns in this session.
    sequences: Arc<crate::sequences::SessionSequences>,
}

impl Session {
    pub(crate) fn new(
        storage: Arc<Storage>,
        shared_memory: Arc<kura_exec::context::MemoryTracker>,
        llc: Arc<crate::llc::Llc>,
        database_settings: Arc<kura_common::settings::DatabaseSettings>,
    ) -> Self {
        Session {
            llc,
            shared_memory,
            storage,
            settings: Settings::for_database(database_settings),
            cancel: CancelHandle::default(),
            progress: None,
            file_access: crate::file_access::FileAccess::Any,
            txn: std::sync::Mutex::new(TxnState::Idle),
            identity: crate::identity::Identity::default(),
            txn_start: None,
            prepared: Default::default(),
            cursors: Default::default(),
            temp: Default::default(),
            registered: Default::default(),
            sequences: Default::default(),
        }
    }

    /// Sets who and where the session is, as `current_user`, `current_database()`,
    /// `pg_backend_pid()` and `version()` report it (the server's values).
    pub fn set_identity(&mut self, identity: crate::identity::Identity) {
        self.identity = identity;
    }

    /// Which server files `COPY ... FROM 'file'` may read in this session.
    pub fn set_file_access(&mut self, access: crate::file_access::FileAccess) {
        self.file_access = access;
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// The database's LLC control.
    pub fn llc(&self) -> &Arc<crate::llc::Llc> {
        &self.llc
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Reports progress of loads (COPY) to `f`.
    pub fn set_progress(&mut self, f: Option<Arc<Progress>>) {
        self.progress = f;
    }

    /// Runs every statement in `sql`; returns the last result.
    pub fn execute(&mut self, sql: &str) -> KuraResult<QueryResult> {
        self.execute_all(sql)?
            .pop()
            .ok_or_else(|| KuraError::Syntax("empty query".into()))
    }

    /// Runs every statement in `sql`; returns each result.
    pub fn execute_all(&mut self, sql: &str) -> KuraResult<Vec<QueryResult>> {
        on_statement_stack(|| {
            let (statements, _parsed) = self.parse_counted(sql);
            // A statement that does not parse aborts an open transaction too.
            crate::txn::after_statement(&mut self.lock_txn(), &statements);
            let run = || -> KuraResult<Vec<QueryResult>> {
                let statements = statements?;
                let mut out = Vec::with_capacity(statements.len());
                for stmt in &statements {
                    out.push(self.execute_statement(stmt)?);
                }
                Ok(out)
            };
            let r = run();
            self.cancel.end_text();
            r
        })
    }

    /// Runs every statement in `sql` like [`Session::execute`], except that the
    /// rows of the last statement, if it is a query, go to `sink` while it runs
    /// (the result returned then holds its columns and tag but no rows): a
    /// large result is never held whole.
    pub fn execute_streaming(
        &mut self,
        sql: &str,
        sink: &mut dyn RowSink,
    ) -> KuraResult<QueryResult> {
        on_statement_stack(|| {
            let (statements, _parsed) = self.parse_counted(sql);
            crate::txn::after_statement(&mut self.lock_txn(), &statements);
            let run = || -> KuraResult<QueryResult> {
                let statements = statements?;
                let Some((last, before)) = statements.split_last() else {
                    return Err(KuraError::Syntax("empty query".into()));
                };
                for stmt in before {
                    self.execute_statement(stmt)?;
                }
                self.stream_statement(last, None, sink)
            };
            let r = run();
            self.cancel.end_text();
            r
        })
    }

    /// One statement, a query streamed into `sink`; others as `execute_statement`.
    fn stream_statement(
        &mut self,
        stmt: &Statement,
        params: Option<&[Value]>,
        sink: &mut dyn RowSink,
    ) -> KuraResult<QueryResult> {
        if !matches!(stmt, Statement::Query(_)) {
            return match params {
                Some(p) if is_session_statement(stmt) => self.run_session_statement(stmt, p),
                Some(p) if !is_local(stmt) => self.run_with_params(stmt, p),
                _ => self.execute_statement(stmt),
            };
        }
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let params = params.map(|p| p.to_vec());
        let r = guard(|| crate::query::run_streaming(&self.query_context(), stmt, params, sink));
        self.finish(r)
    }

    /// Runs one parsed statement.
    pub fn execute_statement(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r = guard(|| self.dispatch(stmt));
        self.finish(r)
    }

    /// The catalog this session's statements read: the committed one, or the
    /// open transaction's own.
    pub fn catalog(&self) -> Arc<kura_storage::Catalog> {
        self.tx().catalog()
    }

    /// The catalog of this session's temporary tables (`None` until it makes
    /// one); its names hide the database's in every statement.
    pub fn temp_catalog(&self) -> Option<Arc<kura_storage::Catalog>> {
        self.tx().temp_catalog()
    }

    pub(crate) fn query_context(&self) -> crate::query_context::QueryContext<'_> {
        let statement_start = kura_common::timestamp::now_utc();
        let mut settings: Vec<(String, String)> = SETTINGS
            .iter()
            .map(|s| (s.name.to_string(), self.settings.value(s.name)))
            .collect();
        settings.extend(
            crate::client_settings::CLIENT_SETTINGS
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string())),
        );
        for name in ["transaction_isolation", "transaction_read_only"] {
            if let Some(v) = self.transaction_setting(name) {
                settings.push((name.to_string(), v));
            }
        }
        let superuser = if self.identity.superuser { "on" } else { "off" };
        settings.push(("is_superuser".to_string(), superuser.to_string()));
        crate::query_context::QueryContext {
            storage: &self.storage,
            settings: &self.settings,
            cancel: &self.cancel,
            tx: self.tx(),
            sequences: &self.sequences,
            shared_memory: &self.shared_memory,
            llc: &self.llc,
            file_access: &self.file_access,
            registered: &self.registered,
            copying: false,
            info: Arc::new(kura_sql::SessionInfo {
                version: self.identity.version.clone(),
                database: self.identity.database.clone(),
                user: self.identity.user.clone(),
                backend_pid: self.identity.backend_pid,
                transaction_start: self.txn_start.unwrap_or(statement_start),
                statement_start,
                settings,
            }),
        }
    }

    fn dispatch(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        crate::temp::refuse_unsupported(stmt)?;
        match stmt {
            Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. } => self.transaction_control(stmt),
            Statement::CreateTable(ct) if ct.query.is_none() && ct.temporary => {
                crate::temp::create_table(&self.tx(), ct)
            }
            Statement::CreateTable(ct) if ct.query.is_none() => {
                crate::ddl::create_table(&self.tx(), ct)
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } if matches!(
                object_type,
                sqlparser::ast::ObjectType::Table | sqlparser::ast::ObjectType::View
            ) =>
            {
                crate::temp::drop_tables(&self.tx(), *object_type, *if_exists, names)
            }
            Statement::Discard { object_type } => self.discard(*object_type),
            Statement::CreateSequence { .. } => crate::sequences::create_sequence(&self.tx(), stmt),
            Statement::Drop {
                object_type: sqlparser::ast::ObjectType::Sequence,
                if_exists,
                names,
                cascade,
                ..
            } => crate::sequences::drop_sequences(&self.tx(), *if_exists, names, *cascade),
            Statement::CreateIndex(ci) => {
                let tx = self.tx();
                let tx = match tx.is_temp(&crate::names::object_name(&ci.table_name)) {
                    true => crate::temp::ddl_tx(&tx, "CREATE INDEX")?,
                    false => tx,
                };
                crate::ddl::create_index(&tx, ci, self.progress.as_deref())
            }
            Statement::Drop {
                object_type: sqlparser::ast::ObjectType::Index,
                if_exists,
                names,
                ..
            } => crate::temp::drop_indexes(&self.tx(), *if_exists, names),
            Statement::Copy {
                source: sqlparser::ast::CopySource::Table { table_name, .. },
                to,
                target,
                options,
                legacy_options,
                ..
            } if is_database_mark(table_name) => {
                let sqlparser::ast::CopyTarget::File { filename } = target else {
                    return Err(KuraError::Syntax(
                        "EXPORT DATABASE / IMPORT DATABASE take a directory: 'dir'".into(),
                    ));
                };
                match to {
                    true => self.export_database(filename, options, legacy_options),
                    false if options.is_empty() && legacy_options.is_empty() => {
                        self.import_database(filename)
                    }
                    false => Err(KuraError::Unsupported(
                        "options of IMPORT DATABASE (load.sql says how each file is read)".into(),
                    )),
                }
            }
            Statement::Copy {
                to: true,
                target: sqlparser::ast::CopyTarget::File { filename },
                ..
            } => self.copy_to_file(stmt, filename),
            Statement::Copy { to: true, .. } => Err(KuraError::Unsupported(
                "COPY ... TO STDOUT sends rows to a client of `kura serve` that sent it as a \
                 simple query (psql's \\copy, psycopg's cursor.copy()); otherwise write a \
                 file: COPY ... TO 'file', or use kura -c with --format csv"
                    .into(),
            )),
            Statement::Copy {
                source,
                target,
                options,
                legacy_options,
                ..
            } => self.copy_from(source, target, options, legacy_options),
            Statement::Set(set) => self.set(set),
            Statement::Reset(reset) => self.reset(&reset.reset),
            Statement::ShowVariable { variable } => self.show(variable),
            Statement::ExplainTable { table_name, .. } => {
                let name = crate::names::object_name(table_name);
                let catalog = self.catalog();
                // A temporary table first, as every statement resolves names.
                let table = self.tx().table(&name);
                crate::describe::describe(&name, table, &catalog, |sql| self.prepare(sql))
            }
            Statement::ShowTables { .. } => Ok(crate::describe::show_tables(&self.tx())),
            s if is_session_statement(s) => self.session_statement(s, None),
            other => crate::query::run_statement(&self.query_context(), other),
        }
    }
}

/// Runs `f` on a statement's stack, turning a panic into an internal error so
/// the session stays usable.
fn guard<T>(f: impl FnOnce() -> KuraResult<T>) -> KuraResult<T> {
    match on_statement_stack(|| std::panic::catch_unwind(AssertUnwindSafe(f))) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!("internal error: {what}");
            Err(KuraError::Internal(what))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Held cursors give their memory back to the shared budget.
        self.cursors.release_all(&self.shared_memory);
    }
}
