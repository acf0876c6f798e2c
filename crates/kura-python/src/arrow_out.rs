//! A streamed query as pyarrow: a Table built while the query runs, or a RecordBatchReader
//! that reads it as it runs.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::{ArrowError, SchemaRef};
use kura::{CancelHandle, ResultColumn};
use pyo3::prelude::*;

use crate::errors::{db_error, InterfaceError, InternalError};
use crate::sigint::Watch;
use crate::stream::{schema_of, Chunker, Failure, Next, Pipe};

/// How long the caller waits without the GIL before it lets Python's signal handlers run.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

const CLOSED: &str = "the connection is closed";
const STOPPED: &str = "the result was closed: a later statement ran on its connection";
const PANICKED: &str = "the query's thread stopped (a panic)";
const INTERRUPTED: &str = "canceling statement due to user request (Ctrl-C while reading)";

/// A failure as the Python exception of its kind.
pub fn failure_error(f: Failure) -> PyErr {
    match f {
        Failure::Kura(e) => db_error(e),
        Failure::Closed => InterfaceError::new_err(CLOSED),
        Failure::Stopped => InterfaceError::new_err(STOPPED),
        Failure::Panicked => InternalError::new_err(PANICKED),
    }
}

/// A failure's message, made without the GIL (see `Reader`).
fn failure_message(f: Failure) -> String {
    match f {
        Failure::Kura(e) => format!("{e} (SQLSTATE {})", e.sqlstate()),
        Failure::Closed => CLOSED.into(),
        Failure::Stopped => STOPPED.into(),
        Failure::Panicked => PANICKED.into(),
    }
}

/// Ctrl-C (any pending signal exception) while a stream runs: the query is cancelled and
/// waited for, so that the session is free when the exception is raised.
fn check_signals(py: Python<'_>, pipe: &Arc<Pipe>, cancel: &CancelHandle) -> PyResult<()> {
    if let Err(interrupt) = py.check_signals() {
        cancel.cancel();
        pipe.stop();
        let pipe = pipe.clone();
        py.detach(move || while !matches!(pipe.next(SIGNAL_POLL), Next::Done | Next::Failed(_)) {});
        return Err(interrupt);
    }
    Ok(())
}

/// The result's columns, waited for with the GIL released: planning errors raise here.
pub fn columns(
    py: Python<'_>,
    pipe: &Arc<Pipe>,
    cancel: &CancelHandle,
) -> PyResult<Vec<ResultColumn>> {
    loop {
        let p = pipe.clone();
        match py.detach(move || p.columns(SIGNAL_POLL)) {
            Ok(Some(c)) => return Ok(c),
            Ok(None) => check_signals(py, pipe, cancel)?,
            Err(f) => return Err(failure_error(f)),
        }
    }
}

/// Reads the whole stream into a pyarrow Table of chunks of `chunk_rows`, converting each
/// batch as it comes.
pub fn table<'py>(
    py: Python<'py>,
    pipe: Arc<Pipe>,
    cancel: &CancelHandle,
    chunk_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = columns(py, &pipe, cancel)?;
    let schema = schema_of(&columns).map_err(db_error)?;
    let mut chunker = Chunker::new(schema.clone(), chunk_rows);
    let mut chunks: Vec<RecordBatch> = Vec::new();
    loop {
        let (p, ch, out) = (&pipe, &mut chunker, &mut chunks);
        // Converts what comes for a while without the GIL; true at the end.
        let step = py.detach(move || -> Result<bool, Failure> {
            let until = std::time::Instant::now() + SIGNAL_POLL;
            loop {
                let left = until.saturating_duration_since(std::time::Instant::now());
                match p.next(left) {
                    Next::Rows(b) => out.extend(ch.push(b).map_err(Failure::Kura)?),
                    Next::Done => {
                        out.extend(ch.flush().map_err(Failure::Kura)?);
                        return Ok(true);
                    }
                    Next::Failed(f) => return Err(f),
                    Next::Waiting => return Ok(false),
                }
            }
        });
        match step {
            Ok(true) => break,
            Ok(false) => check_signals(py, &pipe, cancel)?,
            Err(f) => {
                pipe.stop();
                return Err(failure_error(f));
            }
        }
    }
    let table =
        Table::try_new(chunks, schema).map_err(|e| InternalError::new_err(e.to_string()))?;
    table.into_pyarrow(py)
}

/// A stream read by Arrow's consumers a chunk at a time. It waits without the GIL: its
/// consumer may call it from a thread of its own while the main thread holds the GIL, and
/// taking the GIL there would deadlock. So Ctrl-C is watched through kura's own SIGINT
/// handler ([`crate::sigint`]): a signal during a read cancels the query and fails the read,
/// and Python raises its KeyboardInterrupt as usual.
struct Reader {
    pipe: Arc<Pipe>,
    cancel: CancelHandle,
    chunker: Chunker,
    done: bool,
}

impl Reader {
    /// Ends the query after Ctrl-C: cancelled, waited for (so that the session is free).
    fn interrupted(&mut self) -> ArrowError {
        self.cancel.cancel();
        self.pipe.stop();
        while !matches!(self.pipe.next(SIGNAL_POLL), Next::Done | Next::Failed(_)) {}
        self.done = true;
        ArrowError::ExternalError(INTERRUPTED.into())
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let external = |e: String| ArrowError::ExternalError(e.into());
        let watch = Watch::start();
        while !self.done {
            if watch.fired() {
                return Some(Err(self.interrupted()));
            }
            match self.pipe.next(SIGNAL_POLL) {
                Next::Rows(b) => match self.chunker.push(b) {
                    Ok(Some(rb)) => return Some(Ok(rb)),
                    Ok(None) => {}
                    Err(e) => {
                        self.done = true;
                        return Some(Err(external(e.to_string())));
                    }
                },
                Next::Done => {
                    self.done = true;
                    return self
                        .chunker
                        .flush()
                        .map_err(|e| external(e.to_string()))
                        .transpose();
                }
                Next::Failed(f) => {
                    self.done = true;
                    return Some(Err(external(failure_message(f))));
                }
                Next::Waiting => {}
            }
        }
        None
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.chunker.schema.clone()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // A reader let go of before the end frees its query (and the session).
        self.pipe.stop();
    }
}

/// The stream as a pyarrow RecordBatchReader of chunks of about `chunk_rows`; errors of
/// planning raise here, later ones when a chunk is read.
pub fn reader<'py>(
    py: Python<'py>,
    pipe: Arc<Pipe>,
    cancel: &CancelHandle,
    chunk_rows: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = columns(py, &pipe, cancel)?;
    let schema = schema_of(&columns).map_err(db_error)?;
    let reader = Reader {
        pipe,
        cancel: cancel.clone(),
        chunker: Chunker::new(schema, chunk_rows),
        done: false,
    };
    let boxed: Box<dyn RecordBatchReader + Send> = Box::new(reader);
    boxed.into_pyarrow(py)
}
