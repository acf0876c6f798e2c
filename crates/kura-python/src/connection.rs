//! A connection: a kura database opened in this process and one session on it, run with the
//! GIL released and cancelled by Ctrl-C.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatchReader;
use arrow_pyarrow::FromPyArrow;
use kura::{CancelHandle, Database, KuraError, OpenOptions, QueryResult, Session, Value};
use kura_common::DataType;
use pyo3::prelude::*;

use crate::errors::{db_error, db_error_with, InterfaceError, InternalError, ProgrammingError};
use crate::result::PyQueryResult;
use crate::running::run_released;
use crate::stream::{Job, Pipe, Shared};
use crate::values::from_python;

/// A database file open in this process, with one session on it.
#[pyclass(module = "kura._kura", name = "Connection", frozen)]
pub struct PyConnection {
    state: Shared,
    cancel: CancelHandle,
    path: PathBuf,
    /// The query streaming to a reader, if any: it holds the session while it runs.
    active: Mutex<Option<Arc<Pipe>>>,
    /// Whether `close` was called, known without the session (a stream may hold it).
    is_closed: AtomicBool,
}

fn size_option(text: Option<&str>, what: &str) -> PyResult<Option<u64>> {
    text.map(|t| {
        kura_common::size::parse_size(t)
            .map_err(|e| ProgrammingError::new_err(format!("{what} {t:?}: {e}")))
    })
    .transpose()
}

fn closed() -> PyErr {
    InterfaceError::new_err("the connection is closed")
}

impl PyConnection {
    /// Ends a query still streaming to a reader: the session is needed by another statement
    /// (as in DuckDB, a later statement closes the pending result).
    fn stop_stream(&self) {
        if let Some(pipe) = self.active.lock().unwrap_or_else(|p| p.into_inner()).take() {
            if pipe.running() {
                pipe.stop();
            }
        }
    }

    /// Runs `work` on the session with the GIL released.
    fn with_session<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut Session) -> Result<T, KuraError> + Send,
    ) -> PyResult<T> {
        self.stop_stream();
        let state = self.state.clone();
        let done = run_released(py, &self.cancel, move || {
            let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut() {
                Some((_, session)) => Ok(work(session)),
                None => Err(()),
            }
        })?;
        done.map_err(|()| closed())?.map_err(db_error)
    }

    /// Starts `sql` (one query) streaming on a thread of its own, with `params` bound.
    fn start_stream(
        &self,
        py: Python<'_>,
        sql: &str,
        params: Option<&Bound<'_, PyAny>>,
        capacity: usize,
    ) -> PyResult<Arc<Pipe>> {
        let job = match params.filter(|p| !p.is_none()) {
            None => Job::Text(sql.to_string()),
            Some(params) => {
                let (prepared, values) = self.prepare_bound(py, sql, params)?;
                Job::Prepared(Box::new(prepared), values)
            }
        };
        self.stop_stream();
        let pipe = crate::stream::start(self.state.clone(), job, capacity)
            .map_err(|e| InternalError::new_err(format!("starting the query's thread: {e}")))?;
        *self.active.lock().unwrap_or_else(|p| p.into_inner()) = Some(pipe.clone());
        Ok(pipe)
    }

    /// `sql` prepared, with `params` (a sequence) bound to its placeholders.
    fn prepare_bound(
        &self,
        py: Python<'_>,
        sql: &str,
        params: &Bound<'_, PyAny>,
    ) -> PyResult<(kura::Prepared, Vec<Value>)> {
        if !is_sequence(params) {
            return Err(ProgrammingError::new_err(
                "parameters must be a sequence (a list or tuple) of values",
            ));
        }
        let (sql, count) =
            crate::qmark::number_placeholders(sql).map_err(|m| db_error_with("42601", m))?;
        let prepared = self.with_session(py, |s| s.prepare(&sql))?;
        let values = bind(params, count, &prepared.param_types)?;
        Ok((prepared, values))
    }
}

/// The statements `sql` holds and whether the last is a query (a SELECT, VALUES, TABLE, or
/// set operation of them), parsed without a session.
fn classify(sql: &str) -> Result<(usize, bool), KuraError> {
    kura::stack::on_statement_stack(|| {
        let statements = kura::session::parse(sql)?;
        let query = matches!(statements.last(), Some(sqlparser::ast::Statement::Query(_)));
        Ok((statements.len(), query))
    })
}

/// The parameters' values for a statement of `count` placeholders, typed as far as the
/// statement types them.
fn bind(params: &Bound<'_, PyAny>, count: usize, types: &[DataType]) -> PyResult<Vec<Value>> {
    let mut values = Vec::new();
    for (i, p) in params.try_iter()?.enumerate() {
        values.push(from_python(&p?, types.get(i))?);
    }
    if values.len() != count {
        return Err(ProgrammingError::new_err(format!(
            "the statement has {count} parameter(s), {} value(s) were given",
            values.len()
        )));
    }
    Ok(values)
}

fn is_sequence(params: &Bound<'_, PyAny>) -> bool {
    !params.is_none()
        && !params.is_instance_of::<pyo3::types::PyString>()
        && params.try_iter().is_ok()
}

#[pymethods]
impl PyConnection {
    /// Opens (creating when missing) the database file at `path`. `buffer` and `max_memory`
    /// are sizes (`'256MB'`, `'2GB'`); missing, kura's defaults (a quarter of memory for the
    /// buffer pool).
    #[new]
    #[pyo3(signature = (path, buffer=None, max_memory=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        buffer: Option<&str>,
        max_memory: Option<&str>,
    ) -> PyResult<Self> {
        let opts = OpenOptions {
            buffer_bytes: size_option(buffer, "buffer size")?,
            max_memory: size_option(max_memory, "max_memory")?,
            ..OpenOptions::default()
        };
        let at = path.clone();
        let db = py
            .detach(move || Database::open(&at, opts))
            .map_err(db_error)?;
        let session = db.session();
        let cancel = session.cancel_handle();
        Ok(PyConnection {
            state: Arc::new(Mutex::new(Some((db, session)))),
            cancel,
            path,
            active: Mutex::new(None),
            is_closed: AtomicBool::new(false),
        })
    }

    /// How many statements `sql` holds and whether the last one is a query; a syntax error
    /// raises.
    fn classify(&self, py: Python<'_>, sql: &str) -> PyResult<(usize, bool)> {
        let sql = sql.to_string();
        py.detach(move || classify(&sql)).map_err(db_error)
    }

    /// Runs every statement of `sql` but the last; returns the last one's text.
    fn run_leading(&self, py: Python<'_>, sql: &str) -> PyResult<String> {
        self.with_session(py, |s| {
            kura::stack::on_statement_stack(|| {
                let statements = kura::session::parse(sql)?;
                let Some((last, before)) = statements.split_last() else {
                    return Err(KuraError::Syntax("empty query".into()));
                };
                for stmt in before {
                    s.execute_statement(stmt)?;
                }
                Ok(last.to_string())
            })
        })
    }

    /// The columns (name, type) one statement would return, without running it.
    fn describe(&self, py: Python<'_>, sql: &str) -> PyResult<Vec<(String, String)>> {
        let (sql, _) =
            crate::qmark::number_placeholders(sql).map_err(|m| db_error_with("42601", m))?;
        let prepared = self.with_session(py, |s| s.prepare(&sql))?;
        Ok(prepared
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type.to_string().to_lowercase()))
            .collect())
    }

    /// Runs one query and returns its rows as a pyarrow Table of chunks of `chunk_rows`,
    /// converted while the query runs.
    #[pyo3(signature = (sql, params=None, chunk_rows=crate::result::ARROW_CHUNK_ROWS))]
    fn arrow_table<'py>(
        &self,
        py: Python<'py>,
        sql: &str,
        params: Option<&Bound<'py, PyAny>>,
        chunk_rows: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pipe = self.start_stream(py, sql, params, crate::stream::UNBOUNDED)?;
        crate::arrow_out::table(py, pipe, &self.cancel, chunk_rows)
    }

    /// Starts one query and returns a pyarrow RecordBatchReader of its rows in chunks of
    /// about `chunk_rows`. The query holds the connection until it is read to its end or
    /// the reader is let go of; another statement on the connection ends it.
    #[pyo3(signature = (sql, params=None, chunk_rows=crate::result::ARROW_CHUNK_ROWS))]
    fn arrow_reader<'py>(
        &self,
        py: Python<'py>,
        sql: &str,
        params: Option<&Bound<'py, PyAny>>,
        chunk_rows: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pipe = self.start_stream(py, sql, params, crate::stream::READER_QUEUE)?;
        crate::arrow_out::reader(py, pipe, &self.cancel, chunk_rows)
    }

    /// The database file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Runs `sql` (several statements when no parameters are given; the last one's result is
    /// returned) with `params` for its `?` or `$n` placeholders.
    #[pyo3(signature = (sql, params=None))]
    fn execute(
        &self,
        py: Python<'_>,
        sql: &str,
        params: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyQueryResult> {
        let params = params.filter(|p| !p.is_none());
        let result = match params {
            None => self.with_session(py, |s| {
                let mut all = s.execute_all(sql)?;
                Ok(all.pop().unwrap_or_else(|| QueryResult::command("")))
            })?,
            Some(params) => {
                let (prepared, values) = self.prepare_bound(py, sql, params)?;
                self.with_session(py, move |s| s.execute_prepared(&prepared, &values))?
            }
        };
        Ok(PyQueryResult::new(result))
    }

    /// Runs one statement once per parameter sequence in `seq_of_params`, prepared once;
    /// returns the rows changed in all.
    fn executemany(
        &self,
        py: Python<'_>,
        sql: &str,
        seq_of_params: &Bound<'_, PyAny>,
    ) -> PyResult<i64> {
        let (sql, count) =
            crate::qmark::number_placeholders(sql).map_err(|m| db_error_with("42601", m))?;
        let prepared = self.with_session(py, |s| s.prepare(&sql))?;
        // Bound in chunks: values in memory stay bounded for a long iterator.
        const CHUNK: usize = 4096;
        let mut total = 0i64;
        let mut rows: Vec<Vec<Value>> = Vec::with_capacity(CHUNK);
        let mut iter = seq_of_params.try_iter()?;
        loop {
            rows.clear();
            for p in iter.by_ref().take(CHUNK) {
                let p = p?;
                if !is_sequence(&p) {
                    return Err(ProgrammingError::new_err(
                        "each parameter set must be a sequence (a list or tuple) of values",
                    ));
                }
                rows.push(bind(&p, count, &prepared.param_types)?);
            }
            if rows.is_empty() {
                break;
            }
            let chunk = std::mem::take(&mut rows);
            let prepared = &prepared;
            let changed = self.with_session(py, move |s| {
                let mut n = 0i64;
                for values in &chunk {
                    let r = s.execute_prepared(prepared, values)?;
                    n += PyQueryResult::new(r).changed().max(0);
                }
                Ok(n)
            })?;
            total += changed;
        }
        Ok(total)
    }

    /// Makes `data` (a pyarrow Table or RecordBatchReader, or any object with
    /// `__arrow_c_stream__`) queryable as `name` in this connection.
    fn register(&self, py: Python<'_>, name: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let reader = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        let schema = reader.schema();
        let batches = py
            .detach(move || reader.collect::<Result<Vec<_>, _>>())
            .map_err(|e| db_error_with("22000", format!("reading {name:?}: {e}")))?;
        let name = name.to_string();
        self.with_session(py, move |s| s.register_arrow(&name, &schema, &batches))
    }

    /// Forgets a registered relation; false when there was none of that name.
    fn unregister(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let name = name.to_string();
        self.with_session(py, move |s| Ok(s.unregister(&name)))
    }

    /// Whether a transaction (`BEGIN`) is open.
    #[getter]
    fn in_transaction(&self, py: Python<'_>) -> PyResult<bool> {
        self.with_session(py, |s| Ok(s.in_transaction()))
    }

    /// Asks the running statement to stop (from another thread; Ctrl-C does it too).
    fn interrupt(&self) {
        self.cancel.cancel();
    }

    /// Generates TPC-H at scale factor `sf` and loads it (replacing any TPC-H tables), with
    /// the primary-key indexes when `indexes`; returns each table's rows.
    #[pyo3(signature = (sf, indexes=true))]
    fn tpch_load(&self, py: Python<'_>, sf: f64, indexes: bool) -> PyResult<Vec<(String, u64)>> {
        self.with_session(py, move |s| {
            let reports = kura::tpch::load(s, kura::tpch::load::Source::Generate(sf), &|_, _| {})?;
            if indexes {
                kura::tpch::load::create_indexes(s, &|_| {})?;
            }
            Ok(reports.into_iter().map(|r| (r.table, r.rows)).collect())
        })
    }

    /// Closes the session and the database (a transaction still open is rolled back).
    fn close(&self, py: Python<'_>) {
        self.is_closed.store(true, Ordering::Relaxed);
        self.stop_stream();
        let state = self.state.clone();
        py.detach(move || {
            let taken = state.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(taken);
        });
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.is_closed.load(Ordering::Relaxed)
    }
}
