//! COPY with the client: `COPY ... FROM STDIN` (CopyInResponse, then the
//! client's CopyData streamed into the engine's loader while it runs) and
//! `COPY ... TO STDOUT` (CopyOutResponse, one CopyData a row as the query runs).

use std::fmt::Debug;
use std::io::Read;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::{CopyResponse, Response, Tag};
use pgwire::api::{ClientInfo, ErrorHandler};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyOutResponse};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;
use sqlparser::ast::{CopyTarget, Statement};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::respond::error_info;
use super::Connection;
use crate::engine::{CopyInput, CopyOutput, Engine, EngineError, EngineSession, Outcome};

/// CopyData messages received but not yet read by the loader: the connection
/// stops reading from the client beyond this, so a fast client never makes
/// the server hold more than this many messages (plus the loader's chunks).
const COPY_IN_MESSAGES: usize = 64;

/// Batches of lines a `COPY ... TO STDOUT` may have ready before the client
/// takes them (as for streamed query results).
const COPY_OUT_BATCHES: usize = 4;

/// Which way a statement copies with the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// `COPY ... FROM STDIN`.
    In,
    /// `COPY ... TO STDOUT`.
    Out,
}

/// Whether `stmt` (one statement) is a COPY with the client, and which way.
pub(crate) fn direction(stmt: &str) -> Option<Direction> {
    // Cheap test first: only statements that start with COPY are parsed.
    let head = crate::sql_scan::strip_leading_comments(stmt);
    if !head
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy"))
    {
        return None;
    }
    // The parsed statement may be too deep for this thread's stack to drop.
    kura::stack::on_statement_stack(|| {
        let stmts = kura::session::parse(stmt).ok()?;
        match stmts.as_slice() {
            [Statement::Copy {
                to: false,
                target: CopyTarget::Stdin,
                ..
            }] => Some(Direction::In),
            [Statement::Copy {
                to: true,
                target: CopyTarget::Stdout,
                ..
            }] => Some(Direction::Out),
            _ => None,
        }
    })
}

/// What the connection sends the loader.
enum Message {
    Data(Bytes),
    /// CopyDone: the data is complete.
    Done,
    /// CopyFail, with the client's message.
    Fail(String),
}

/// A `COPY ... FROM STDIN` in progress: where the client's data goes, and the
/// statement running on the session.
pub(super) struct CopyInJob {
    data: mpsc::Sender<Message>,
    job: JoinHandle<Result<Outcome, EngineError>>,
}

/// The client's data as the loader reads it, on the statement's thread.
struct Input {
    rx: mpsc::Receiver<Message>,
    /// Told the columns a row has and whether the data is binary.
    started: Option<oneshot::Sender<(usize, bool)>>,
    buf: Bytes,
    done: bool,
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.buf.is_empty() && !self.done {
            match self.rx.blocking_recv() {
                Some(Message::Data(b)) => self.buf = b,
                Some(Message::Done) => self.done = true,
                Some(Message::Fail(m)) => {
                    return Err(std::io::Error::other(format!(
                        "COPY from stdin failed: {m}"
                    )))
                }
                // Dropped without CopyDone: the client went away (or sent
                // something else); the load must not commit what it had.
                None => {
                    return Err(std::io::Error::other(
                        "COPY from stdin ended without CopyDone from the client",
                    ))
                }
            }
        }
        let n = self.buf.len().min(out.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        let _ = self.buf.split_to(n);
        Ok(n)
    }
}

impl CopyInput for Input {
    fn start(&mut self, columns: usize, binary: bool) {
        if let Some(tx) = self.started.take() {
            let _ = tx.send((columns, binary));
        }
    }
}

/// Where a `COPY ... TO STDOUT` puts its lines, on the statement's thread.
struct Output {
    /// Told the columns a row has and whether the data is binary.
    started: Option<oneshot::Sender<(usize, bool)>>,
    lines: mpsc::Sender<Vec<Vec<u8>>>,
}

impl CopyOutput for Output {
    fn start(&mut self, columns: usize, binary: bool) {
        if let Some(tx) = self.started.take() {
            let _ = tx.send((columns, binary));
        }
    }

    fn lines(&mut self, lines: Vec<Vec<u8>>) -> bool {
        self.lines.blocking_send(lines).is_ok()
    }
}

fn join_error(e: tokio::task::JoinError) -> EngineError {
    EngineError::new("XX000", format!("internal error: {e}"))
}

fn user_error(e: EngineError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

impl<E: Engine> Connection<E> {
    fn copy_job(&self) -> std::sync::MutexGuard<'_, Option<CopyInJob>> {
        self.copy_in.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends a `COPY ... FROM STDIN` that the client left without CopyDone or
    /// CopyFail (it sent another query): nothing of it is committed.
    pub(super) async fn abandon_copy_in(&self) {
        let job = self.copy_job().take();
        if let Some(CopyInJob { data, job }) = job {
            drop(data);
            let _ = job.await;
        }
    }

    /// Starts `COPY ... FROM STDIN`: the statement runs on the session, its
    /// loader waiting for data; the client is told to send it once the
    /// statement is checked (table, columns, options).
    pub(super) async fn start_copy_in(&self, stmt: &str) -> Result<Response, EngineError> {
        self.abandon_copy_in().await;
        let (data, rx) = mpsc::channel(COPY_IN_MESSAGES);
        let (started, columns) = oneshot::channel();
        let runner = self.runner.clone();
        let sql = stmt.to_string();
        let job = tokio::spawn(async move {
            runner
                .run(move |s: &mut E::Session| {
                    let mut input = Input {
                        rx,
                        started: Some(started),
                        buf: Bytes::new(),
                        done: false,
                    };
                    s.copy_in(&sql, &mut input)
                })
                .await
        });
        // The statement drops its end of `columns` unsent when it fails
        // before wanting data.
        match columns.await {
            Ok((columns, binary)) => {
                *self.copy_job() = Some(CopyInJob { data, job });
                Ok(Response::CopyIn(CopyResponse::new(
                    i8::from(binary),
                    columns,
                    futures::stream::empty(),
                )))
            }
            Err(_) => match job.await.map_err(join_error)? {
                Err(e) => Err(e),
                Ok(outcome) => Ok(Response::Execution(Tag::new(&outcome.tag))),
            },
        }
    }

    /// Runs `COPY ... TO STDOUT`, sending CopyOutResponse, a CopyData per
    /// line, CopyDone and the command tag itself (pgwire's own COPY OUT path
    /// counts a header line as a row and answers an error with CopyFail, which
    /// a backend may not send). Returns what is left to answer: an error, or
    /// nothing.
    pub(super) async fn copy_out<C>(
        &self,
        client: &mut C,
        stmt: &str,
    ) -> PgWireResult<Option<EngineError>>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (lines_tx, mut lines) = mpsc::channel(COPY_OUT_BATCHES);
        let (started, columns) = oneshot::channel();
        let runner = self.runner.clone();
        let sql = stmt.to_string();
        let job = tokio::spawn(async move {
            runner
                .run(move |s: &mut E::Session| {
                    let mut output = Output {
                        started: Some(started),
                        lines: lines_tx,
                    };
                    s.copy_out(&sql, &mut output)
                })
                .await
        });
        let Ok((columns, binary)) = columns.await else {
            // The statement ended before its query started: its error.
            return Ok(match job.await {
                Ok(Ok(outcome)) => {
                    client
                        .send(PgWireBackendMessage::CommandComplete(
                            Tag::new(&outcome.tag).into(),
                        ))
                        .await?;
                    None
                }
                Ok(Err(e)) => Some(e),
                Err(e) => Some(join_error(e)),
            });
        };
        let format = i8::from(binary);
        let formats = vec![i16::from(format); columns];
        client
            .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                format,
                columns as i16,
                formats,
            )))
            .await?;
        while let Some(batch) = lines.recv().await {
            for line in batch {
                client
                    .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
                        line,
                    ))))
                    .await?;
            }
            client.flush().await?;
        }
        match job.await {
            Ok(Ok(outcome)) => {
                client
                    .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
                    .await?;
                client
                    .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                        outcome.tag,
                    )))
                    .await?;
                Ok(None)
            }
            Ok(Err(e)) => Ok(Some(e)),
            Err(e) => Ok(Some(join_error(e))),
        }
    }
}

#[async_trait]
impl<E: Engine> CopyHandler for Connection<E>
where
    <E::Session as EngineSession>::Prepared: Send + Sync,
{
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let data = self.copy_job().as_ref().map(|j| j.data.clone());
        if let Some(data) = data {
            // Waits while the loader is behind. A send fails once the load
            // has ended with an error; the rest of the data is then dropped,
            // as PostgreSQL does, and the error answers CopyDone.
            let _ = data.send(Message::Data(copy_data.data)).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let job = self.copy_job().take();
        let Some(CopyInJob { data, job }) = job else {
            return Ok(());
        };
        let _ = data.send(Message::Done).await;
        drop(data);
        match job.await.map_err(join_error).and_then(|r| r) {
            Ok(outcome) => {
                client
                    .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                        outcome.tag,
                    )))
                    .await?;
                Ok(())
            }
            Err(e) => Err(user_error(e)),
        }
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let job = self.copy_job().take();
        if let Some(CopyInJob { data, job }) = job {
            let _ = data.send(Message::Fail(fail.message.clone())).await;
            drop(data);
            // The load rolls back before the next statement may run.
            let _ = job.await;
        }
        PgWireError::UserError(Box::new(ErrorInfo::new(
            SEVERITY_ERROR.to_owned(),
            "57014".to_owned(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}

/// Any error while a `COPY ... FROM STDIN` is in progress ends it, unloaded
/// (the client sent something other than copy data, say): the loader sees its
/// data stop without CopyDone and rolls back, freeing the session for the
/// next statement.
impl<E: Engine> ErrorHandler for Connection<E> {
    fn on_error<C>(&self, _client: &C, _error: &mut PgWireError)
    where
        C: ClientInfo,
    {
        drop(self.copy_job().take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_copy_with_the_client_is_recognised() {
        assert_eq!(direction("COPY t FROM STDIN"), Some(Direction::In));
        assert_eq!(
            direction("-- load\n copy t (a, b) from stdin with (format csv);"),
            Some(Direction::In)
        );
        assert_eq!(
            direction("/* x */ COPY ( select 1 ) TO STDOUT csv header"),
            Some(Direction::Out)
        );
        assert_eq!(direction("copy t to stdout"), Some(Direction::Out));
        assert_eq!(direction("copy t from 'x.csv'"), None);
        assert_eq!(direction("select 'copy t from stdin'"), None);
        assert_eq!(direction("copyx"), None);
    }
}
