//! The engine behind the server: kura's `Database` façade. Each connection gets
//! a `kura::Session`; statements with `$n` parameters are parsed, planned and
//! described once by `Session::prepare` and run with bound values by
//! `Session::execute_prepared`.

use std::sync::Arc;

use kura::{Database, FileAccess, KuraError, QueryResult, Session};
use kura_common::{DataType, Value};
use sqlparser::ast::Statement;

use crate::engine::{
    rows_of, Canceller, Column, Engine, EngineError, EngineSession, Identity, Outcome, Shape,
    StreamOut,
};

/// A kura database served over the wire.
pub struct KuraEngine {
    db: Database,
    file_access: FileAccess,
}

impl KuraEngine {
    /// Serves `db`; clients may not read server files with COPY until
    /// [`KuraEngine::with_file_access`] says which.
    pub fn new(db: Database) -> Self {
        KuraEngine {
            db,
            file_access: FileAccess::Denied,
        }
    }

    /// Which server files clients' `COPY ... FROM 'file'` may read.
    pub fn with_file_access(mut self, access: FileAccess) -> Self {
        self.file_access = access;
        self
    }
}

impl Engine for KuraEngine {
    type Session = KuraSession;

    fn session(&self) -> KuraSession {
        let mut session = self.db.session();
        session.set_file_access(self.file_access.clone());
        KuraSession { session }
    }

    fn version(&self) -> String {
        kura::identity::version_text()
    }

    fn memory_budget(&self) -> Option<u64> {
        Some(self.db.shared_memory().1)
    }
}

pub struct KuraSession {
    session: Session,
}

/// A statement prepared by the façade, with the parameter count the server
/// checks Bind messages against.
pub struct KuraPrepared {
    prepared: kura::Prepared,
    params: usize,
    /// The façade described no columns for a statement that returns rows: they
    /// are learned by running it (see [`KuraSession::describe`]).
    columns_open: bool,
}

/// A kura error for the client: its place in the statement goes to the
/// ErrorResponse's position field (psql draws its caret there), so the
/// message drops the `line l, column c: ` it starts with (or a parse error's
/// `at Line: l, Column: c` it ends with).
fn engine_error(e: KuraError) -> EngineError {
    let message = e.to_string();
    match e.position() {
        Some((line, column)) => {
            let prefix = format!("line {line}, column {column}: ");
            let suffix = format!(" at Line: {line}, Column: {column}");
            let message = message.strip_prefix(&prefix).unwrap_or(&message);
            let message = message.strip_suffix(&suffix).unwrap_or(message);
            EngineError::new(e.sqlstate(), message).at(line, column)
        }
        None => EngineError::new(e.sqlstate(), message),
    }
}

fn columns(cols: Vec<kura::ResultColumn>) -> Vec<Column> {
    cols.into_iter()
        .map(|c| Column {
            name: c.name,
            data_type: c.data_type,
        })
        .collect()
}

fn outcome(result: QueryResult) -> Outcome {
    let QueryResult {
        columns: cols,
        batches,
        tag,
    } = result;
    let rows = batches.into_iter().flat_map(|b| {
        let n = b.len();
        (0..n).map(move |i| b.row(i))
    });
    Outcome {
        columns: columns(cols),
        rows: rows_of(rows),
        tag,
    }
}

/// A streamed query's batches, turned into rows on the query's thread.
struct Rows<'a>(&'a mut dyn StreamOut);

impl kura::RowSink for Rows<'_> {
    fn columns(&mut self, cols: &[kura::ResultColumn]) {
        self.0.columns(columns(cols.to_vec()));
    }
    fn rows(&mut self, batch: kura::Batch) -> bool {
        let rows = (0..batch.len()).map(|i| batch.row(i)).collect();
        self.0.rows(rows)
    }
}

fn check_param_count(prepared: &KuraPrepared, params: &[Value]) -> Result<(), EngineError> {
    if params.len() != prepared.params {
        return Err(EngineError::new(
            "08P01",
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                prepared.params
            ),
        ));
    }
    Ok(())
}

/// Whether `sql` (one statement) answers with a row set.
fn returns_rows(sql: &str) -> bool {
    // The parsed statements may be too deep for this thread's stack to drop.
    kura::stack::on_statement_stack(|| returns_rows_on_stack(sql))
}

fn returns_rows_on_stack(sql: &str) -> bool {
    kura::session::parse(sql).is_ok_and(|stmts| {
        stmts.iter().any(|s| {
            matches!(
                s,
                Statement::Query(_) | Statement::ShowVariable { .. } | Statement::Explain { .. }
            )
        })
    })
}

/// The parameter types announced to the client. The façade types every `$n`
/// it can infer and reports the rest as text; a `$n` beyond its list (a
/// statement kind it does not describe) is left open, which the protocol layer
/// announces as text too. Text is the safe fallback: every client can send it
/// and the engine coerces a text value like an untyped literal, as it would
/// `'1994-01-01'` written in the SQL.
fn param_shape(types: &[DataType], count: usize) -> Vec<Option<DataType>> {
    (0..count.max(types.len()))
        .map(|i| types.get(i).copied())
        .collect()
}

impl EngineSession for KuraSession {
    type Prepared = KuraPrepared;

    fn execute(&mut self, sql: &str) -> Result<Outcome, EngineError> {
        self.session.execute(sql).map(outcome).map_err(engine_error)
    }

    fn execute_streaming(
        &mut self,
        sql: &str,
        out: &mut dyn StreamOut,
    ) -> Result<Outcome, EngineError> {
        self.session
            .execute_streaming(sql, &mut Rows(out))
            .map(outcome)
            .map_err(engine_error)
    }

    fn execute_prepared_streaming(
        &mut self,
        prepared: &KuraPrepared,
        params: &[Value],
        out: &mut dyn StreamOut,
    ) -> Result<Outcome, EngineError> {
        check_param_count(prepared, params)?;
        self.session
            .execute_prepared_streaming(&prepared.prepared, params, &mut Rows(out))
            .map(outcome)
            .map_err(engine_error)
    }

    fn prepare(&mut self, sql: &str) -> Result<(KuraPrepared, Shape), EngineError> {
        let prepared = self.session.prepare(sql).map_err(engine_error)?;
        let params = param_shape(
            &prepared.param_types,
            crate::sql_scan::placeholder_count(sql),
        );
        let columns_open = prepared.columns.is_empty() && returns_rows(sql);
        let shape = Shape {
            params,
            columns: (!columns_open).then(|| columns(prepared.columns.clone())),
        };
        let prepared = KuraPrepared {
            params: shape.params.len(),
            prepared,
            columns_open,
        };
        Ok((prepared, shape))
    }

    /// Values arrive decoded by the type the client declared, else the type
    /// the statement expects, else as text; where the client's type differs
    /// from the statement's (an `int4` for a decimal column, say) the engine
    /// binds the value as a literal of the client's type and coerces it there.
    fn execute_prepared(
        &mut self,
        prepared: &KuraPrepared,
        params: &[Value],
    ) -> Result<Outcome, EngineError> {
        check_param_count(prepared, params)?;
        self.session
            .execute_prepared(&prepared.prepared, params)
            .map(outcome)
            .map_err(engine_error)
    }

    fn check_copy(&mut self, sql: &str) -> Result<(), EngineError> {
        self.session.check_copy(sql).map_err(engine_error)
    }

    fn copy_in(
        &mut self,
        sql: &str,
        input: &mut dyn crate::engine::CopyInput,
    ) -> Result<Outcome, EngineError> {
        self.session
            .copy_in(sql, input)
            .map(outcome)
            .map_err(engine_error)
    }

    fn copy_out(
        &mut self,
        sql: &str,
        output: &mut dyn crate::engine::CopyOutput,
    ) -> Result<Outcome, EngineError> {
        self.session
            .copy_out(sql, output)
            .map(outcome)
            .map_err(engine_error)
    }

    fn describe(&mut self, prepared: &KuraPrepared) -> Result<Vec<Column>, EngineError> {
        if !prepared.columns_open {
            return Ok(columns(prepared.prepared.columns.clone()));
        }
        // A row-returning statement the façade does not describe: its columns
        // come from running it, with NULL for every parameter.
        let nulls = vec![Value::Null; prepared.params];
        Ok(self.execute_prepared(prepared, &nulls)?.columns)
    }

    fn canceller(&self) -> Canceller {
        let handle = self.session.cancel_handle();
        Arc::new(move || handle.cancel())
    }

    fn set_identity(&mut self, identity: Identity) {
        self.session.set_identity(kura::identity::Identity {
            user: identity.user,
            database: identity.database,
            backend_pid: identity.pid,
            version: identity.version,
            superuser: identity.superuser,
        });
    }

    fn cursor_columns(&mut self, name: &str) -> Option<Vec<Column>> {
        self.session.cursor_columns(name).map(columns)
    }
}
