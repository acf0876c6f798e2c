//! The boundary between the wire protocol and the database: what a connection
//! needs from a SQL session, independent of how the engine answers it.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;

use kura_common::{DataType, Value};

/// Where `COPY ... FROM STDIN` reads the client's data, and where `COPY ... TO
/// STDOUT` puts its lines: kura's own interfaces, taken as they are.
pub use kura::{CopyInput, CopyOutput};

/// A result column: its name and SQL type.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub data_type: DataType,
}

/// Rows of a result, produced lazily so a large result is encoded as it is sent
/// rather than copied whole into wire messages first. A streamed result's rows
/// arrive while its query still runs, and an error may follow rows already sent.
pub type RowSource = Pin<Box<dyn Stream<Item = Result<Vec<Value>, EngineError>> + Send>>;

/// Rows already at hand, as a [`RowSource`].
pub fn rows_of(rows: impl Iterator<Item = Vec<Value>> + Send + 'static) -> RowSource {
    Box::pin(futures::stream::iter(rows.map(Ok)))
}

/// Receives a streamed statement's result while it runs (on the thread that
/// runs it): the columns once, then rows.
pub trait StreamOut: Send {
    fn columns(&mut self, columns: Vec<Column>);
    /// False when the client wants no more (it went away): the query stops.
    fn rows(&mut self, rows: Vec<Vec<Value>>) -> bool;
}

/// What one executed statement produced.
pub struct Outcome {
    /// Empty for statements that return no rows (DDL, SET, COPY ...).
    pub columns: Vec<Column>,
    pub rows: RowSource,
    /// PostgreSQL command tag, e.g. `SELECT 4`, `CREATE TABLE`, `COPY 150000`.
    pub tag: String,
}

impl Outcome {
    /// True when the statement answers with a row set (even an empty one).
    pub fn returns_rows(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// What a prepared statement takes and gives, known before it runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// Type of each `$n` parameter, `None` where the statement does not fix it.
    pub params: Vec<Option<DataType>>,
    /// Result columns; `None` when the engine learns them only by running the
    /// statement (then the server asks [`EngineSession::describe`] or runs the
    /// bound statement early, at Describe, and keeps the result for Execute).
    pub columns: Option<Vec<Column>>,
}

/// An error as the client sees it: SQLSTATE, message and where in the
/// statement it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub sqlstate: String,
    pub message: String,
    /// Line and column (from 1) in the statement's own text, when known.
    pub at: Option<(u64, u64)>,
    /// The ErrorResponse's position: a character index (from 1) into the
    /// query string the client sent, once [`EngineError::located`] knows it.
    pub position: Option<usize>,
}

impl EngineError {
    pub fn new(sqlstate: &str, message: impl Into<String>) -> Self {
        EngineError {
            sqlstate: sqlstate.to_string(),
            message: message.into(),
            at: None,
            position: None,
        }
    }

    /// The error with its place in statement `stmt`: line and column, from 1.
    pub fn at(mut self, line: u64, column: u64) -> Self {
        self.at = Some((line, column));
        self
    }

    /// The error placed in the query string `query`, of which `stmt` (where
    /// the error's line and column count) is a part.
    pub fn located(mut self, query: &str, stmt: &str) -> Self {
        let Some((line, column)) = self.at else {
            return self;
        };
        // `stmt` is a slice of `query` (the simple protocol's statements are);
        // otherwise it is looked for.
        let (q, s) = (query.as_ptr() as usize, stmt.as_ptr() as usize);
        let start = if s >= q && s + stmt.len() <= q + query.len() {
            s - q
        } else {
            query.find(stmt).unwrap_or(0)
        };
        let mut chars = query[..start].chars().count();
        for (i, text) in stmt.split('\n').enumerate() {
            if i + 1 == line as usize {
                let column = (column.max(1) - 1) as usize;
                self.position = Some(chars + column.min(text.chars().count()) + 1);
                return self;
            }
            chars += text.chars().count() + 1;
        }
        self
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.sqlstate)
    }
}

/// Asks the query running in a session to stop; callable from any thread.
pub type Canceller = Arc<dyn Fn() + Send + Sync>;

/// A database that hands out sessions, shared by every connection.
pub trait Engine: Send + Sync + 'static {
    type Session: EngineSession;
    /// A new session with default settings (one per client connection).
    fn session(&self) -> Self::Session;
    /// Human-readable product and version, the text of `SELECT version()`.
    fn version(&self) -> String;
    /// The memory all sessions' queries may use together, when bounded: the
    /// server keeps at most an eighth of it free for reuse between statements.
    fn memory_budget(&self) -> Option<u64> {
        None
    }
}

/// One client's SQL session. Calls block until the statement is done, so the
/// server runs them on blocking threads, never on the async workers.
pub trait EngineSession: Send + 'static {
    type Prepared: Send + Sync + 'static;
    /// Runs one statement.
    fn execute(&mut self, sql: &str) -> Result<Outcome, EngineError>;
    /// Parses and plans one statement with `$n` parameters without running it.
    fn prepare(&mut self, sql: &str) -> Result<(Self::Prepared, Shape), EngineError>;
    /// Runs a prepared statement with parameter values.
    fn execute_prepared(
        &mut self,
        prepared: &Self::Prepared,
        params: &[Value],
    ) -> Result<Outcome, EngineError>;
    /// Runs one statement; if it is a query, its columns and rows go to `out`
    /// as it runs (the outcome returned then carries no rows of its own).
    /// Engines that cannot stream answer as [`EngineSession::execute`].
    fn execute_streaming(
        &mut self,
        sql: &str,
        out: &mut dyn StreamOut,
    ) -> Result<Outcome, EngineError> {
        let _ = out;
        self.execute(sql)
    }
    /// [`EngineSession::execute_prepared`], streaming as `execute_streaming` does.
    fn execute_prepared_streaming(
        &mut self,
        prepared: &Self::Prepared,
        params: &[Value],
        out: &mut dyn StreamOut,
    ) -> Result<Outcome, EngineError> {
        let _ = out;
        self.execute_prepared(prepared, params)
    }
    /// Checks a `COPY ... FROM STDIN` without running it (its table, columns
    /// and options), for the extended protocol's Parse.
    fn check_copy(&mut self, sql: &str) -> Result<(), EngineError> {
        let _ = sql;
        Ok(())
    }
    /// Runs one `COPY ... FROM STDIN`, reading the client's data from `input`
    /// (told the column count once the statement is checked).
    fn copy_in(&mut self, sql: &str, input: &mut dyn CopyInput) -> Result<Outcome, EngineError> {
        let _ = (sql, input);
        Err(EngineError::new(
            "0A000",
            "COPY FROM STDIN is not supported",
        ))
    }
    /// Runs one `COPY ... TO STDOUT`, its lines (one a row) going to `output`
    /// as the query runs.
    fn copy_out(&mut self, sql: &str, output: &mut dyn CopyOutput) -> Result<Outcome, EngineError> {
        let _ = (sql, output);
        Err(EngineError::new("0A000", "COPY TO STDOUT is not supported"))
    }
    /// Result columns of a prepared statement whose shape left them open,
    /// without its parameter values.
    fn describe(&mut self, prepared: &Self::Prepared) -> Result<Vec<Column>, EngineError>;
    /// A handle that cancels whatever this session is running at the time.
    fn canceller(&self) -> Canceller;
    /// Who the client is, for `current_user`, `current_database()`,
    /// `pg_backend_pid()` and `version()` in its statements.
    fn set_identity(&mut self, identity: Identity) {
        let _ = identity;
    }
    /// Result columns of the open cursor `name` (a Describe of a portal
    /// that `DECLARE` opened), `None` if there is no such cursor.
    fn cursor_columns(&mut self, name: &str) -> Option<Vec<Column>> {
        let _ = name;
        None
    }
}

/// A client connection's identity as its statements see it.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    pub user: String,
    pub database: String,
    pub pid: i32,
    pub version: String,
    /// Named by `--superuser`: may change database-wide settings.
    pub superuser: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_placed_in_the_query_string_by_characters() {
        let query = "select 1;\nselect 'é',\n  nope";
        let stmt = &query[10..];
        let e = EngineError::new("42703", "x").at(2, 3).located(query, stmt);
        // 10 characters before the statement, 'select 'é',\n' is 12 more.
        assert_eq!(e.position, Some(10 + 12 + 3));
        let alone = EngineError::new("42703", "x")
            .at(1, 8)
            .located("select nope", "select nope");
        assert_eq!(alone.position, Some(8));
        let unplaced = EngineError::new("XX000", "x").located(query, stmt);
        assert_eq!(unplaced.position, None);
    }
}
