//! A session: settings, a cancel flag, and `execute` — parse the SQL, run each
//! statement, turn a panic inside a query into an error so the database stays open.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

mod transaction_modes;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use kura_common::settings::{Scope, Settings, SETTINGS};
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::Storage;

pub use crate::cancel::CancelHandle;
use crate::error::{KuraError, KuraResult};
use crate::result::{QueryResult, ResultColumn, RowSink};
use crate::stack::{on_statement_stack, DropOnStack, MAX_STATEMENT_BYTES};
use crate::txn::{Isolation, Tx, TxnState};

/// Progress of long work: label, units done, units total.
pub type Progress = dyn Fn(&str, u64, u64) + Send + Sync;

/// A statement parsed and described once, to run many times with parameters
/// (`$1`, `$2`, ... — the PostgreSQL extended protocol).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    statement: DropOnStack<Statement>,
    /// Types of `$1..$n`, as far as the statement determines them.
    pub param_types: Vec<DataType>,
    /// Result columns; empty for statements that return none.
    pub columns: Vec<ResultColumn>,
    /// What its syntax tree was reserved from the shared memory budget (a long
    /// text), held while any copy of it lives.
    parse_memory: Option<Arc<crate::limits::ParseMemory>>,
}

/// One connection's state.
pub struct Session {
    storage: Arc<Storage>,
    settings: Settings,
    cancel: CancelHandle,
    progress: Option<Arc<Progress>>,
    file_access: crate::copy::FileAccess,
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
    temp: crate::temp::TempTables,
    /// What `currval` returns in this session.
    sequences: Arc<crate::sequences::SessionSequences>,
}

impl Session {
    pub(crate) fn new(
        storage: Arc<Storage>,
        shared_memory: Arc<kura_exec::context::MemoryTracker>,
        llc: Arc<crate::llc::Llc>,
    ) -> Self {
        Session {
            llc,
            shared_memory,
            storage,
            settings: Settings::default(),
            cancel: CancelHandle::default(),
            progress: None,
            file_access: crate::copy::FileAccess::Any,
            txn: std::sync::Mutex::new(TxnState::Idle),
            identity: crate::identity::Identity::default(),
            txn_start: None,
            prepared: Default::default(),
            cursors: Default::default(),
            temp: Default::default(),
            sequences: Default::default(),
        }
    }

    /// Sets who and where the session is, as `current_user`, `current_database()`,
    /// `pg_backend_pid()` and `version()` report it (the server's values).
    pub fn set_identity(&mut self, identity: crate::identity::Identity) {
        self.identity = identity;
    }

    /// Which server files `COPY ... FROM 'file'` may read in this session.
    pub fn set_file_access(&mut self, access: crate::copy::FileAccess) {
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

    /// Parses `sql` with what its syntax tree may take reserved from the budget
    /// all running queries share (see `limits`); the reservation is kept as long
    /// as the statements.
    fn parse_counted(
        &self,
        sql: &str,
    ) -> (
        KuraResult<Vec<Statement>>,
        Option<crate::limits::ParseMemory>,
    ) {
        let memory = match crate::limits::reserve_parse(sql, &self.shared_memory) {
            Ok(memory) => memory,
            Err(e) => return (Err(e), None),
        };
        if !crate::limits::parses_long(sql) {
            return (parse(sql), memory);
        }
        // A long text parses for seconds: its time limit and a cancel request
        // count from here, not only once it runs — and its first statement's
        // limit counts from here too (one limit for the text, not two).
        self.cancel.start_parse(self.settings.statement_timeout());
        let cancel = self.cancel.clone();
        let parsed = crate::limits::parse_interruptibly(sql, memory, || cancel.is_canceled());
        match parsed {
            Ok(Some((statements, memory))) => (Ok(statements), memory),
            Ok(None) => {
                let r = self.cancel.check().map(|()| Vec::new());
                self.cancel.start(None);
                (r, None)
            }
            Err(e) => {
                self.cancel.start(None);
                (Err(e), None)
            }
        }
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

    /// Runs one `COPY t [(columns)] FROM STDIN` statement, reading its data
    /// from `input` (a client's; see `kura serve`).
    pub fn copy_in(
        &mut self,
        sql: &str,
        input: &mut dyn crate::copy::CopyInput,
    ) -> KuraResult<QueryResult> {
        self.run_copy(sql, false, |s, stmt| match stmt {
            Statement::Copy {
                source,
                options,
                legacy_options,
                ..
            } => crate::copy::copy_from_input(
                &s.query_context(),
                source,
                options,
                legacy_options,
                input,
            ),
            _ => unreachable!("run_copy passes COPY statements only"),
        })
    }

    /// Checks a `COPY ... FROM STDIN` statement without running it (its
    /// table, columns and options); any other statement passes.
    pub fn check_copy(&mut self, sql: &str) -> KuraResult<()> {
        match parse(sql)?.as_slice() {
            [Statement::Copy {
                source,
                options,
                legacy_options,
                to: false,
                ..
            }] => {
                crate::copy::check_copy_from(&self.query_context(), source, options, legacy_options)
            }
            _ => Ok(()),
        }
    }

    /// Runs one `COPY t [(columns)] | (query) TO STDOUT` statement, its lines
    /// going to `output` as the query runs.
    pub fn copy_out(
        &mut self,
        sql: &str,
        output: &mut dyn crate::copy_out::CopyOutput,
    ) -> KuraResult<QueryResult> {
        self.run_copy(sql, true, |s, stmt| s.copy_to(stmt, output))
    }

    /// One COPY statement of the direction `to`, run as `execute_statement`
    /// runs statements (transaction state, time limit, contained panics).
    fn run_copy(
        &mut self,
        sql: &str,
        to: bool,
        f: impl FnOnce(&Self, &Statement) -> KuraResult<QueryResult>,
    ) -> KuraResult<QueryResult> {
        on_statement_stack(|| {
            let statements = parse(sql);
            crate::txn::after_statement(&mut self.lock_txn(), &statements);
            let stmt = match statements?.as_slice() {
                [stmt @ Statement::Copy { to: t, .. }] if *t == to => stmt.clone(),
                _ => {
                    return Err(KuraError::Invalid(format!(
                        "expected one COPY ... {} statement",
                        if to { "TO" } else { "FROM" }
                    )))
                }
            };
            self.check_transaction(&stmt)?;
            self.cancel.start(self.settings.statement_timeout());
            let r = guard(|| f(self, &stmt));
            self.finish(r)
        })
    }

    /// `COPY ... TO`: the source query's rows as lines into `output`.
    fn copy_to(
        &self,
        stmt: &Statement,
        output: &mut dyn crate::copy_out::CopyOutput,
    ) -> KuraResult<QueryResult> {
        let Statement::Copy {
            source,
            options,
            legacy_options,
            ..
        } = stmt
        else {
            return Err(KuraError::Internal("copy_to without COPY".into()));
        };
        let query = crate::copy_out::source_query(source)?;
        let format = crate::copy_out::OutFormat::new(options, legacy_options)?;
        let mut lines = crate::copy_out::Lines::new(format, output);
        crate::query::run_streaming(&self.query_context(), &query, None, &mut lines)?;
        let rows = lines.finish()?;
        Ok(QueryResult::command(format!("COPY {rows}")))
    }

    /// `COPY ... TO 'file'`.
    fn copy_to_file(&self, stmt: &Statement, name: &str) -> KuraResult<QueryResult> {
        let mut file = crate::copy_out::FileOutput::create(&self.file_access, name)?;
        let r = self.copy_to(stmt, &mut file)?;
        file.finish(name)?;
        Ok(r)
    }

    /// [`Session::execute_prepared`] with a query's rows going to `sink`.
    pub fn execute_prepared_streaming(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
        sink: &mut dyn RowSink,
    ) -> KuraResult<QueryResult> {
        let params = (!params.is_empty()).then_some(params);
        self.stream_statement(&prepared.statement, params, sink)
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

    /// Parses and describes one statement without running it.
    pub fn prepare(&mut self, sql: &str) -> KuraResult<Prepared> {
        on_statement_stack(|| self.prepare_on_stack(sql))
    }

    fn prepare_on_stack(&mut self, sql: &str) -> KuraResult<Prepared> {
        let (statements, memory) = self.parse_counted(sql);
        // A prepared statement runs later, on a time limit of its own.
        self.cancel.end_text();
        let mut statements = statements?;
        if statements.len() != 1 {
            return Err(KuraError::Invalid(format!(
                "a prepared statement must hold exactly one statement, found {}",
                statements.len()
            )));
        }
        let statement = statements.pop().unwrap();
        let mut prepared = self.prepare_parsed(sql.to_string(), statement)?;
        prepared.parse_memory = memory.map(Arc::new);
        Ok(prepared)
    }

    /// Describes one parsed statement without running it.
    fn prepare_parsed(&mut self, sql: String, statement: Statement) -> KuraResult<Prepared> {
        let (param_types, columns) = if is_session_statement(&statement) {
            self.describe_session_statement(&statement)?
        } else if is_local(&statement) {
            let columns = match &statement {
                Statement::ExplainTable { .. } => {
                    crate::describe::columns_of(&crate::describe::DESCRIBE_COLUMNS)
                }
                Statement::ShowTables { .. } => {
                    crate::describe::columns_of(&crate::describe::SHOW_TABLES_COLUMNS)
                }
                Statement::ShowVariable { variable } => vec![ResultColumn {
                    name: variable
                        .iter()
                        .map(|i| i.value.to_ascii_lowercase())
                        .collect::<Vec<_>>()
                        .join(" "),
                    data_type: DataType::Varchar(None),
                }],
                _ => Vec::new(),
            };
            (Vec::new(), columns)
        } else {
            guard(|| crate::query::describe(&self.query_context(), &statement))?
        };
        Ok(Prepared {
            sql,
            statement: DropOnStack::new(statement),
            param_types,
            columns,
            parse_memory: None,
        })
    }

    /// Runs a prepared statement with values for its parameters.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        if is_session_statement(&prepared.statement) && !params.is_empty() {
            return self.run_session_statement(&prepared.statement, params);
        }
        if params.is_empty() || is_local(&prepared.statement) {
            return self.execute_statement(&prepared.statement);
        }
        self.run_with_params(&prepared.statement, params)
    }

    fn run_with_params(&mut self, stmt: &Statement, params: &[Value]) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r =
            guard(|| crate::query::run_statement_with_params(&self.query_context(), stmt, params));
        self.finish(r)
    }

    /// Runs one parsed statement.
    pub fn execute_statement(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r = guard(|| self.dispatch(stmt));
        self.finish(r)
    }

    /// Refuses statements in a transaction an error aborted (all but its end);
    /// brings the transaction's view up to date for a statement that may read
    /// rows (see `Tx::append_rows`).
    fn check_transaction(&self, stmt: &Statement) -> KuraResult<()> {
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

    fn lock_txn(&self) -> std::sync::MutexGuard<'_, TxnState> {
        self.txn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True between `BEGIN` and `COMMIT`/`ROLLBACK` (also when an error aborted
    /// the transaction).
    pub fn in_transaction(&self) -> bool {
        !matches!(*self.lock_txn(), TxnState::Idle | TxnState::Writing)
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

    pub(crate) fn tx(&self) -> Tx<'_> {
        Tx {
            storage: &self.storage,
            state: &self.txn,
            cancel: &self.cancel,
            settings: &self.settings,
            temp: &self.temp,
        }
    }

    pub(crate) fn query_context(&self) -> crate::query::QueryContext<'_> {
        let statement_start = kura_common::timestamp::now_utc();
        let mut settings: Vec<(String, String)> = SETTINGS
            .iter()
            .map(|s| (s.name.to_string(), self.settings.value(s.name)))
            .collect();
        settings.extend(
            CLIENT_SETTINGS
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
        crate::query::QueryContext {
            storage: &self.storage,
            settings: &self.settings,
            cancel: &self.cancel,
            tx: self.tx(),
            sequences: &self.sequences,
            shared_memory: &self.shared_memory,
            llc: &self.llc,
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

    /// `BEGIN`, `COMMIT [AND CHAIN]`, `ROLLBACK [AND CHAIN]`, `SAVEPOINT`,
    /// `RELEASE [SAVEPOINT]`, `ROLLBACK TO [SAVEPOINT]`.
    fn transaction_control(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
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
    fn savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
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
    fn release_savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
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
    fn rollback_to_savepoint(&mut self, name: &str) -> KuraResult<QueryResult> {
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
    fn finish<T>(&self, r: KuraResult<T>) -> KuraResult<T> {
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
    fn discard(&mut self, what: sqlparser::ast::DiscardObject) -> KuraResult<QueryResult> {
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
                let tx = match tx.is_temp(&crate::ddl::object_name(&ci.table_name)) {
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
            } => crate::copy::copy_from(
                &self.query_context(),
                source,
                target,
                options,
                legacy_options,
                &self.file_access,
                self.progress.as_deref(),
            ),
            Statement::Set(set) => self.set(set),
            Statement::ShowVariable { variable } => self.show(variable),
            Statement::ExplainTable { table_name, .. } => {
                crate::describe::describe(self, table_name.to_string().trim_matches('"'))
            }
            Statement::ShowTables { .. } => Ok(crate::describe::show_tables(self)),
            s if is_session_statement(s) => self.session_statement(s, None),
            other => crate::query::run_statement(&self.query_context(), other),
        }
    }

    /// `SET name = value` / `SET name TO value`.
    fn set(&mut self, set: &sqlparser::ast::Set) -> KuraResult<QueryResult> {
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
            [Expr::Identifier(id)] => id.value.clone(),
            [other] => other.to_string(),
            _ => return Err(KuraError::Invalid(format!("SET {name} takes one value"))),
        };
        self.set_setting(&name, &value)?;
        Ok(QueryResult::command("SET"))
    }

    /// Changes a setting, applying those that act on shared state at once.
    pub fn set_setting(&mut self, name: &str, value: &str) -> KuraResult<()> {
        if let Some(r) = self.set_transaction_setting(name, value) {
            return r;
        }
        if Settings::spec(name).is_some_and(|s| s.scope == Scope::Database)
            && !self.identity.superuser
        {
            return Err(KuraError::PermissionDenied(format!(
                "permission denied to set parameter \"{}\": it changes every session of \
                 the database, and user \"{}\" is not a superuser",
                name.to_ascii_lowercase(),
                self.identity.user
            )));
        }
        if Settings::spec(name).is_none() && is_client_setting(name) {
            // Settings PostgreSQL drivers send at connect time; accepted, no effect.
            return Ok(());
        }
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
        let before = self.settings.clone();
        self.settings.set(name, value).map_err(KuraError::Invalid)?;
        if name.eq_ignore_ascii_case("buffer_policy") {
            self.storage.buffer().set_policy(value)?;
        }
        if ["tier2", "tier2_mode", "tier2_policy", "tier2_kind"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            if let Err(e) = self.apply_tier2(name) {
                self.settings = before;
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
    fn apply_tier2(&mut self, name: &str) -> KuraResult<()> {
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
                let size = self.settings.value("tier2");
                if size == "off" {
                    return Ok(bm.set_tier(None)?);
                }
                let bytes = kura_common::size::parse_size(&size)
                    .map_err(|e| KuraError::Invalid(format!("tier2: {e}")))?;
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
    fn show(&self, variable: &[sqlparser::ast::Ident]) -> KuraResult<QueryResult> {
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

/// A savepoint's name as PostgreSQL keeps it: folded to lower case unless
/// quoted.
fn savepoint_name(name: &sqlparser::ast::Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

/// Statements the session runs itself (not through the SQL engine).
fn is_local(stmt: &Statement) -> bool {
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
        | Statement::ShowVariable { .. }
        | Statement::ExplainTable { .. }
        | Statement::ShowTables { .. }
        | Statement::Discard { .. } => true,
        s => is_session_statement(s),
    }
}

/// Parses SQL text into statements (PostgreSQL dialect); a `MOVE` is read as
/// the `FETCH` it moves like, marked so (sqlparser does not know MOVE), and a
/// `FETCH`/`MOVE` without a direction as `NEXT`.
///
/// A statement may parse into a very deep tree; run the parse and everything
/// that holds the statements (including dropping them) inside
/// [`on_statement_stack`].
pub fn parse(sql: &str) -> KuraResult<Vec<Statement>> {
    parse_moves(sql)
}

fn parse_sql(sql: &str) -> KuraResult<Vec<Statement>> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(KuraError::TooLong(format!(
            "the statement text is {} bytes; at most {MAX_STATEMENT_BYTES} are accepted",
            sql.len()
        )));
    }
    crate::limits::check_statement_shape(sql)?;
    let parse_with = |limit: usize| {
        on_statement_stack(|| {
            Parser::new(&PostgreSqlDialect {})
                .with_recursion_limit(limit)
                .try_with_sql(sql)
                .and_then(|mut p| p.parse_statements())
        })
    };
    let stmts = parse_with(PARSER_RECURSION_LIMIT)
        .map_err(|e| match e {
            // sqlparser sometimes swallows its recursion limit (a keyword
            // such as NOT is retried as a column name) and reports a syntax
            // error instead. A real syntax error does not move when the limit
            // is raised; one caused by the limit does.
            sqlparser::parser::ParserError::ParserError(_) | sqlparser::parser::ParserError::TokenizerError(_)
                if parse_with(2 * PARSER_RECURSION_LIMIT)
                    .err()
                    .is_none_or(|again| again.to_string() != e.to_string()) =>
            {
                sqlparser::parser::ParserError::RecursionLimitExceeded
            }
            e => e,
        })
    .map_err(|e| match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => KuraError::TooDeep(format!(
            "the statement nests more than {PARSER_RECURSION_LIMIT} levels of parentheses, subqueries or function calls"
        )),
        e => {
            let msg = e.to_string();
            KuraError::Syntax(
                msg.strip_prefix("sql parser error: ")
                    .unwrap_or(&msg)
                    .to_string(),
            )
        }
    })?;
    crate::table_rules::refuse_dropped_column_words(sql, &stmts)?;
    Ok(stmts)
}

/// How deeply parentheses, subqueries and calls may nest in the SQL text
/// (sqlparser's default is 50; PostgreSQL accepts more, and the statement stack
/// has room for this many).
const PARSER_RECURSION_LIMIT: usize = 500;

/// Parameters PostgreSQL clients set or ask for that have no meaning in
/// kura, with the values kura reports for them.
const CLIENT_SETTINGS: &[(&str, &str)] = &[
    ("server_version", crate::identity::PG_VERSION),
    ("server_version_num", crate::identity::PG_VERSION_NUM),
    ("server_encoding", "UTF8"),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_table_access_method", "heap"),
    ("timezone", "UTC"),
    ("standard_conforming_strings", "on"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    // PostgreSQL's build-time limit on an index's columns, which pgjdbc
    // reads before it lists keys; kura's indexes take as many.
    ("max_index_keys", "32"),
    ("search_path", "public"),
    ("application_name", ""),
    ("extra_float_digits", ""),
];

/// The value kura reports for client parameter `name` (`time zone` is SET's
/// spelling of `timezone`).
pub(crate) fn client_setting_value(name: &str) -> Option<&'static str> {
    let name = if name == "time zone" {
        "timezone"
    } else {
        name
    };
    CLIENT_SETTINGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
}

fn is_client_setting(name: &str) -> bool {
    client_setting_value(name).is_some()
}

/// `PREPARE`, `EXECUTE`, `DEALLOCATE` and the cursor statements: run by the
/// session on its own state (see `prepared` and `cursor`).
fn is_session_statement(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::Prepare { .. }
            | Statement::Execute {
                name: Some(_),
                immediate: false,
                ..
            }
            | Statement::Deallocate { .. }
            | Statement::Declare { .. }
            | Statement::Fetch { .. }
            | Statement::Close { .. }
    )
}

/// The statement name `EXECUTE` names, folded as PostgreSQL folds it.
fn execute_name(n: &sqlparser::ast::ObjectName) -> String {
    match n.0.as_slice() {
        [part] => part
            .as_ident()
            .map(crate::prepared::name_of)
            .unwrap_or_else(|| part.to_string()),
        _ => n.to_string(),
    }
}

/// Marks a `FETCH` that stands for `MOVE` (which sqlparser does not know):
/// `FETCH ... INTO` is not PostgreSQL, so its target is free to carry the mark.
const MOVE_MARK: &str = "\u{0}move";

/// [`parse`], reading `MOVE ...` as the `FETCH` it moves like: statements
/// that start with the word MOVE are parsed as FETCH and marked.
fn parse_moves(sql: &str) -> KuraResult<Vec<Statement>> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("move") && !lower.contains("fetch") {
        return parse_sql(sql);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return parse_sql(sql);
    };
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut moves = Vec::new();
    let mut rewritten = false;
    let mut statement = 0;
    let mut at_start = true;
    // Just after a statement's FETCH or MOVE, before its next token.
    let mut after_fetch = false;
    let mut after_forward = false;
    let mut text = String::with_capacity(sql.len() + 16);
    for t in &tokens {
        if matches!(t, Token::Whitespace(_)) {
            text.push_str(&t.to_string());
            continue;
        }
        if after_fetch {
            after_fetch = false;
            // PostgreSQL's `FETCH [FROM|IN] name` means NEXT; sqlparser wants
            // the direction written.
            const DIRECTIONS: &[&str] = &[
                "next", "prior", "first", "last", "absolute", "relative", "all", "forward",
                "backward",
            ];
            if word(t, "from") || word(t, "in") {
                text.push_str("NEXT ");
                rewritten = true;
            } else if matches!(t, Token::Word(_)) && !DIRECTIONS.iter().any(|d| word(t, d)) {
                text.push_str("NEXT FROM ");
                rewritten = true;
            }
            after_forward = word(t, "forward") || word(t, "backward");
        } else if after_forward {
            after_forward = false;
            // `FORWARD FROM name` is FORWARD 1.
            if word(t, "from") || word(t, "in") {
                text.push_str("1 ");
                rewritten = true;
            }
        }
        match t {
            Token::SemiColon => {
                if !at_start {
                    statement += 1;
                }
                at_start = true;
            }
            _ if at_start && word(t, "move") => {
                moves.push(statement);
                at_start = false;
                after_fetch = true;
                text.push_str("FETCH");
                continue;
            }
            _ if at_start && word(t, "fetch") => {
                at_start = false;
                after_fetch = true;
            }
            _ => at_start = false,
        }
        text.push_str(&t.to_string());
    }
    if moves.is_empty() && !rewritten {
        return parse_sql(sql);
    }
    let mut statements = parse_sql(&text)?;
    for i in moves {
        if let Some(Statement::Fetch { into, .. }) = statements.get_mut(i) {
            *into = Some(sqlparser::ast::ObjectName::from(vec![
                sqlparser::ast::Ident::new(MOVE_MARK),
            ]));
        }
    }
    Ok(statements)
}

impl Session {
    /// A session statement with parameter values (extended protocol).
    fn run_session_statement(
        &mut self,
        stmt: &Statement,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r = guard(|| self.session_statement(stmt, Some(params)));
        self.finish(r)
    }

    /// Parameter types and result columns of a session statement.
    fn describe_session_statement(
        &mut self,
        stmt: &Statement,
    ) -> KuraResult<(Vec<DataType>, Vec<ResultColumn>)> {
        Ok(match stmt {
            Statement::Execute { name: Some(n), .. } => {
                let p = self.prepared.get(&execute_name(n))?;
                (Vec::new(), p.prepared.columns.clone())
            }
            Statement::Fetch { name, into, .. } if into.is_none() => {
                let c = self.cursors.get(&crate::prepared::name_of(name))?;
                (Vec::new(), c.columns.clone())
            }
            Statement::Declare { stmts } => {
                match stmts.first().and_then(|d| d.for_query.as_ref()) {
                    Some(q) => {
                        let query = Statement::Query(q.clone());
                        let (types, _) =
                            guard(|| crate::query::describe(&self.query_context(), &query))?;
                        (types, Vec::new())
                    }
                    None => (Vec::new(), Vec::new()),
                }
            }
            _ => (Vec::new(), Vec::new()),
        })
    }

    /// Runs `PREPARE`, `EXECUTE`, `DEALLOCATE`, `DECLARE`, `FETCH`/`MOVE`, `CLOSE`.
    fn session_statement(
        &mut self,
        stmt: &Statement,
        params: Option<&[Value]>,
    ) -> KuraResult<QueryResult> {
        use crate::prepared::{name_of, SqlPrepared};
        match stmt {
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => {
                let name = name_of(name);
                // Checked first: a duplicate is refused before any work.
                if self.prepared.get(&name).is_ok() {
                    return Err(KuraError::State {
                        sqlstate: "42P05",
                        message: format!("prepared statement \"{name}\" already exists"),
                    });
                }
                let declared = data_types
                    .iter()
                    .map(|t| kura_sql::binder::types::sql_type(t, Default::default()))
                    .collect::<Result<Vec<_>, _>>()?;
                let inner = (**statement).clone();
                let count = crate::prepared::placeholder_count(&inner);
                let prepared = self.prepare_parsed(inner.to_string(), inner)?;
                let types =
                    crate::prepared::parameter_types(&declared, &prepared.param_types, count);
                self.prepared.add(name, SqlPrepared { prepared, types })?;
                Ok(QueryResult::command("PREPARE"))
            }
            Statement::Execute {
                name: Some(n),
                parameters,
                ..
            } => {
                let name = execute_name(n);
                let p = self.prepared.get(&name)?.clone();
                let args = self.evaluate_arguments(parameters, params)?;
                let values = crate::prepared::bind_arguments(&name, &p, args)?;
                let stmt = &p.prepared.statement;
                if is_session_statement(stmt) {
                    return self.session_statement(stmt, Some(&values));
                }
                if values.is_empty() || is_local(stmt) {
                    return self.dispatch(stmt);
                }
                crate::query::run_statement_with_params(&self.query_context(), stmt, &values)
            }
            Statement::Deallocate { name, .. } => {
                if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
                    self.prepared.remove(None)?;
                    return Ok(QueryResult::command("DEALLOCATE ALL"));
                }
                self.prepared.remove(Some(&name_of(name)))?;
                Ok(QueryResult::command("DEALLOCATE"))
            }
            Statement::Declare { stmts } => {
                let [d] = stmts.as_slice() else {
                    return Err(KuraError::Unsupported("DECLARE of several names".into()));
                };
                let (Some(q), [cursor]) = (&d.for_query, d.names.as_slice()) else {
                    return Err(KuraError::Unsupported(format!("DECLARE {d}")));
                };
                if d.scroll == Some(true) {
                    return Err(KuraError::Unsupported(
                        "SCROLL cursors (kura's cursors scan forward only)".into(),
                    ));
                }
                let hold = d.hold == Some(true);
                let in_txn = self.in_transaction();
                if !hold && !in_txn {
                    return Err(KuraError::State {
                        sqlstate: "25P01",
                        message: "DECLARE CURSOR can only be used in transaction blocks".into(),
                    });
                }
                let name = name_of(cursor);
                if self.cursors.get(&name).is_ok() {
                    return Err(KuraError::State {
                        sqlstate: "42P03",
                        message: format!("cursor \"{name}\" already exists"),
                    });
                }
                let result =
                    crate::query::collect(&self.query_context(), q, params.map(|p| p.to_vec()))?;
                let shared = self.shared_memory.clone();
                self.cursors.declare(
                    &name,
                    result.columns,
                    result.batches,
                    hold,
                    in_txn,
                    &shared,
                )?;
                Ok(QueryResult::command("DECLARE CURSOR"))
            }
            Statement::Fetch {
                name,
                direction,
                into,
                ..
            } => {
                let move_only = into
                    .as_ref()
                    .is_some_and(|i| i.to_string().contains(MOVE_MARK));
                if into.is_some() && !move_only {
                    return Err(KuraError::Unsupported("FETCH ... INTO".into()));
                }
                self.cursors.fetch(&name_of(name), direction, move_only)
            }
            Statement::Close { cursor } => {
                let shared = self.shared_memory.clone();
                match cursor {
                    sqlparser::ast::CloseCursor::All => {
                        self.cursors.close(None, &shared)?;
                        Ok(QueryResult::command("CLOSE CURSOR ALL"))
                    }
                    sqlparser::ast::CloseCursor::Specific { name } => {
                        self.cursors.close(Some(&name_of(name)), &shared)?;
                        Ok(QueryResult::command("CLOSE CURSOR"))
                    }
                }
            }
            other => Err(KuraError::Unsupported(format!("statement: {other}"))),
        }
    }

    /// `EXECUTE`'s argument expressions as values (constant expressions,
    /// evaluated as a one-row query; `$n` inside them take `params`).
    fn evaluate_arguments(
        &mut self,
        args: &[sqlparser::ast::Expr],
        params: Option<&[Value]>,
    ) -> KuraResult<Vec<Value>> {
        if args.is_empty() {
            return Ok(Vec::new());
        }
        let list = args
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut parsed = parse(&format!("SELECT {list}"))?;
        let Some(Statement::Query(q)) = parsed.pop() else {
            return Err(KuraError::Internal("EXECUTE arguments".into()));
        };
        let r = crate::query::collect(&self.query_context(), &q, params.map(|p| p.to_vec()))?;
        r.rows()
            .pop()
            .ok_or_else(|| KuraError::Internal("EXECUTE arguments gave no row".into()))
    }
}

impl Session {
    /// Columns of open cursor `name` (the wire protocol describes a cursor
    /// as a portal of that name).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<ResultColumn>> {
        self.cursors.get(name).ok().map(|c| c.columns.clone())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Held cursors give their memory back to the shared budget.
        self.cursors.release_all(&self.shared_memory);
    }
}
