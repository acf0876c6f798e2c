//! A query whose rows reach Python as Arrow while it runs: the query runs on a thread of its
//! own and hands its batches through a small bounded queue to the reader, which converts them
//! to Arrow as they come — the conversion overlaps the query instead of following it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use kura::{KuraError, Prepared, QueryResult, ResultColumn, RowSink, Session, Value};
use kura_common::{Batch, DataType};

/// Batches the query may run ahead of a reader: enough to keep both busy, few enough that a
/// reader that stops reading holds little memory. A Table's reader takes every batch as it
/// comes (it holds them all in the end anyway): the query never waits for the conversion.
pub const READER_QUEUE: usize = 16;
pub const UNBOUNDED: usize = usize::MAX;

/// Why a stream ended without its rows.
pub enum Failure {
    Kura(KuraError),
    Closed,
    /// A later statement on the connection (or the reader going away) ended it.
    Stopped,
    Panicked,
}

struct State {
    columns: Option<Vec<ResultColumn>>,
    items: VecDeque<Batch>,
    /// Set once the query has finished; the error is handed out once.
    end: Option<Result<(), Failure>>,
    stopped: bool,
    capacity: usize,
}

/// The queue between the query's thread and the reader.
pub struct Pipe {
    state: Mutex<State>,
    changed: Condvar,
}

/// What the reader waited for.
pub enum Next {
    Rows(Batch),
    Done,
    Failed(Failure),
    /// Nothing yet (the caller checks for Ctrl-C and waits again).
    Waiting,
}

impl Pipe {
    fn new(capacity: usize) -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(State {
                columns: None,
                items: VecDeque::new(),
                end: None,
                stopped: false,
                capacity,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, end: Result<(), Failure>) {
        let mut s = self.lock();
        if s.end.is_none() {
            s.end = Some(end);
        }
        self.changed.notify_all();
    }

    /// Ends the query at its next batch unless it has already finished: its reader is gone,
    /// or a later statement needs the session.
    pub fn stop(&self) {
        let mut s = self.lock();
        s.stopped = true;
        if s.end.is_none() {
            s.items.clear();
        }
        self.changed.notify_all();
    }

    /// Whether the query is still running.
    pub fn running(&self) -> bool {
        self.lock().end.is_none()
    }

    /// The result's columns, once the query has them (or its failure).
    pub fn columns(&self, wait: Duration) -> Result<Option<Vec<ResultColumn>>, Failure> {
        let deadline = Instant::now() + wait;
        let mut s = self.lock();
        loop {
            if let Some(c) = &s.columns {
                return Ok(Some(c.clone()));
            }
            if let Some(end) = s.end.as_mut() {
                return match std::mem::replace(end, Ok(())) {
                    Err(f) => Err(f),
                    Ok(()) => Ok(Some(Vec::new())),
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The next batch, waiting at most `wait` for it.
    pub fn next(&self, wait: Duration) -> Next {
        let deadline = Instant::now() + wait;
        let mut s = self.lock();
        loop {
            if let Some(b) = s.items.pop_front() {
                self.changed.notify_all();
                return Next::Rows(b);
            }
            if let Some(end) = s.end.as_mut() {
                return match std::mem::replace(end, Ok(())) {
                    Err(f) => Next::Failed(f),
                    Ok(()) => Next::Done,
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Next::Waiting;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// The query's side of the pipe.
struct Sink(Arc<Pipe>);

impl RowSink for Sink {
    fn columns(&mut self, columns: &[ResultColumn]) {
        self.0.lock().columns = Some(columns.to_vec());
        self.0.changed.notify_all();
    }

    fn rows(&mut self, batch: Batch) -> bool {
        if batch.is_empty() {
            return !self.0.lock().stopped;
        }
        let mut s = self.0.lock();
        while s.items.len() >= s.capacity && !s.stopped {
            s = self.0.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.stopped {
            return false;
        }
        s.items.push_back(batch);
        self.0.changed.notify_all();
        true
    }
}

/// Finishes the pipe if the query's thread unwinds, so that its reader does not wait forever
/// (after a normal end, finishing again changes nothing).
struct FinishOnUnwind(Arc<Pipe>);

impl Drop for FinishOnUnwind {
    fn drop(&mut self) {
        self.0.finish(Err(Failure::Panicked));
    }
}

/// What the query's thread runs.
pub enum Job {
    Text(String),
    Prepared(Box<Prepared>, Vec<Value>),
}

/// The session as the connection holds it.
pub type Shared = Arc<Mutex<Option<(kura::Database, Session)>>>;

/// Starts `job` on a thread of its own, which holds the session until the query ends; at most
/// `capacity` batches wait for the reader.
pub fn start(state: Shared, job: Job, capacity: usize) -> std::io::Result<Arc<Pipe>> {
    let pipe = Pipe::new(capacity);
    let theirs = pipe.clone();
    std::thread::Builder::new()
        .name("kura-stream".into())
        .spawn(move || {
            let _unwind = FinishOnUnwind(theirs.clone());
            let end = {
                let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
                match guard.as_mut() {
                    None => Err(Failure::Closed),
                    // Stopped before it started: a later statement came first.
                    Some(_) if theirs.lock().stopped => Err(Failure::Stopped),
                    Some((_, session)) => {
                        let mut sink = Sink(theirs.clone());
                        let r = match &job {
                            Job::Text(sql) => session.execute_streaming(sql, &mut sink),
                            Job::Prepared(p, values) => {
                                session.execute_prepared_streaming(p, values, &mut sink)
                            }
                        };
                        finished(&theirs, r)
                    }
                }
            };
            // The session is released (the guard dropped) before the reader hears of the end:
            // a statement right after the last batch then finds it free.
            theirs.finish(end);
        })?;
    Ok(pipe)
}

/// The end of a statement streamed: a statement that was not a query (the text's last one
/// turned out a command) returns its rows whole; they go to the reader as well.
fn finished(pipe: &Pipe, r: Result<QueryResult, KuraError>) -> Result<(), Failure> {
    let r = r.map_err(Failure::Kura)?;
    let mut s = pipe.lock();
    if s.stopped {
        return Err(Failure::Stopped);
    }
    if s.columns.is_none() {
        s.columns = Some(r.columns);
        s.items
            .extend(r.batches.into_iter().filter(|b| !b.is_empty()));
    }
    Ok(())
}

/// The Arrow schema of a result's columns (every column nullable).
pub fn schema_of(columns: &[ResultColumn]) -> Result<SchemaRef, KuraError> {
    let columns: Vec<(String, DataType, bool)> = columns
        .iter()
        .map(|c| (c.name.clone(), c.data_type, true))
        .collect();
    Ok(Arc::new(kura_exec::arrow::arrow_schema(&columns)?))
}

/// Merges kura's batches (a few thousand rows) into Arrow chunks of `chunk_rows`: Arrow's
/// consumers pay per chunk (each becomes a pandas block, crosses the C interface). Each batch
/// is converted as it comes and a chunk concatenated once its rows are known, so every output
/// buffer is allocated once at its size (growing merged batches cost page faults and copies).
pub struct Chunker {
    pub schema: SchemaRef,
    chunk_rows: usize,
    pending: Vec<RecordBatch>,
    rows: usize,
}

impl Chunker {
    pub fn new(schema: SchemaRef, chunk_rows: usize) -> Chunker {
        Chunker {
            schema,
            chunk_rows: chunk_rows.max(1),
            pending: Vec::new(),
            rows: 0,
        }
    }

    /// Takes a batch; a chunk when enough rows have come.
    pub fn push(&mut self, b: Batch) -> Result<Option<RecordBatch>, KuraError> {
        let converted = kura_exec::arrow::batch_to_arrow(b, &self.schema)?;
        self.rows += converted.num_rows();
        self.pending.push(converted);
        if self.rows >= self.chunk_rows {
            return self.flush();
        }
        Ok(None)
    }

    /// The rows still held, as a chunk (none when there are none).
    pub fn flush(&mut self) -> Result<Option<RecordBatch>, KuraError> {
        self.rows = 0;
        match self.pending.len() {
            0 => Ok(None),
            1 => Ok(self.pending.pop()),
            _ => {
                let chunk = arrow_select::concat::concat_batches(&self.schema, &self.pending)
                    .map_err(|e| {
                        KuraError::Internal(format!("concatenating Arrow batches: {e}"))
                    })?;
                self.pending.clear();
                Ok(Some(chunk))
            }
        }
    }
}
