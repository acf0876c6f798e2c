//! The extended query protocol (Parse/Bind/Describe/Execute/Sync): statements
//! with `$n` parameters are prepared by the engine once and executed with
//! decoded parameter values; portals with row limits are served by pgwire.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use futures::SinkExt;
use kura_common::Value;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{
    send_describe_response, send_execution_response, send_query_response, ExtendedQueryHandler,
};
use pgwire::api::results::{
    DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo, Response,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{Describe, Execute, TARGET_TYPE_BYTE_PORTAL};
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;

use super::respond::{
    column_formats, compat_columns, fields, in_failed_transaction, outcome_response, user_error,
};
use super::{Connection, Runner};
use crate::codec::decode_param;
use crate::compat::{self, Compat};
use crate::engine::{Engine, EngineError, EngineSession, Outcome, Shape};
use crate::sql_scan;
use crate::types::{from_pg_type, pg_type};

/// A parsed statement: answered by the server, or prepared by the engine.
pub enum ParsedStatement<P> {
    Compat(Compat),
    Engine {
        prepared: Arc<P>,
        shape: Shape,
    },
    /// `COPY ... FROM STDIN` / `TO STDOUT`, run when executed (its data then
    /// flows as in the simple protocol; rust-postgres sends COPY this way).
    Copy(String, super::copy::Direction),
}

type Stmt<S> = Arc<ParsedStatement<<S as EngineSession>::Prepared>>;

/// Prepares statements on the connection's session (pgwire's QueryParser).
pub struct Parser<S: EngineSession> {
    runner: Arc<Runner<S>>,
}

impl<S: EngineSession> Parser<S> {
    pub fn new(runner: Arc<Runner<S>>) -> Self {
        Parser { runner }
    }
}

#[async_trait]
impl<S: EngineSession> QueryParser for Parser<S> {
    type Statement = Stmt<S>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if sql_scan::statements(sql).len() > 1 {
            return Err(user_error(EngineError::new(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )));
        }
        if let Some(c) = compat::recognise(sql) {
            return Ok(Some(Arc::new(ParsedStatement::Compat(c))));
        }
        if let Some(direction) = super::copy::direction(sql) {
            // Errors a COPY can have before its data (table, columns,
            // options) are the Parse's, as in PostgreSQL: a client that
            // fails there sends no data.
            let text = sql.to_string();
            self.runner
                .run(move |s: &mut S| s.check_copy(&text))
                .await
                .map_err(|e| user_error(e.located(sql, sql)))?;
            return Ok(Some(Arc::new(ParsedStatement::Copy(
                sql.to_string(),
                direction,
            ))));
        }
        let text = sql;
        let sql = sql.to_string();
        let (prepared, shape) = self
            .runner
            .run(move |s: &mut S| s.prepare(&sql))
            .await
            .map_err(|e| user_error(e.located(text, text)))?;
        Ok(Some(Arc::new(ParsedStatement::Engine {
            prepared: Arc::new(prepared),
            shape,
        })))
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(match stmt.as_ref() {
            ParsedStatement::Compat(_) | ParsedStatement::Copy(..) => Vec::new(),
            // A parameter the statement leaves open is described as text, which
            // every client can send.
            ParsedStatement::Engine { shape, .. } => shape
                .params
                .iter()
                .map(|p| p.as_ref().map_or(Type::TEXT, pg_type))
                .collect(),
        })
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let columns = match stmt.as_ref() {
            ParsedStatement::Compat(c) => compat_columns(c),
            // Its rows are COPY data, not a result.
            ParsedStatement::Copy(..) => Vec::new(),
            // Open columns are answered by the describe overrides below.
            ParsedStatement::Engine { shape, .. } => shape.columns.clone().unwrap_or_default(),
        };
        let formats = column_formats(format, columns.len()).map_err(user_error)?;
        Ok(fields(&columns, &formats))
    }
}

#[async_trait]
impl<E: Engine> ExtendedQueryHandler for Connection<E> {
    type Statement = Stmt<E::Session>;
    type QueryParser = Parser<E::Session>;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    /// An Execute without a row limit on a fresh portal sends the rows as the
    /// query produces them (pgwire's own Execute gathers a portal's rows first,
    /// so a large result would sit whole in memory and an error would discard
    /// the rows before it); everything else goes the library's way.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_owned();
        let portal = match client.portal_store().get_portal(&name) {
            Some(Entry::Value(portal)) => portal,
            _ => return self._on_execute(client, message).await,
        };
        if let ParsedStatement::Compat(c) = portal.statement.statement.as_ref() {
            super::resume_status(client, c);
        }
        if let ParsedStatement::Copy(sql, direction) = portal.statement.statement.as_ref() {
            return self.execute_copy(client, sql, *direction).await;
        }
        let fresh = matches!(*portal.state().lock().await, PortalExecutionState::Initial);
        if message.max_rows != 0
            || !fresh
            || !matches!(client.state(), PgWireConnectionState::ReadyForQuery)
        {
            return self._on_execute(client, message).await;
        }
        let mut transaction_status = client.transaction_status();
        client.set_state(PgWireConnectionState::QueryInProgress);
        match self.do_query(client, portal.as_ref(), 0).await? {
            Response::Query(results) => {
                // The portal is done once its rows are sent; a second Execute
                // of it answers with no rows, as pgwire's own would.
                *portal.state().lock().await = PortalExecutionState::Finished;
                send_query_response(client, results, false).await?;
            }
            Response::EmptyQuery => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
            }
            Response::Execution(tag) => send_execution_response(client, tag).await?,
            Response::TransactionStart(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_in_transaction_state();
            }
            Response::TransactionEnd(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_idle_state();
                client.portal_store().rm_portal(DEFAULT_NAME);
            }
            Response::Error(e) => {
                client
                    .send(PgWireBackendMessage::ErrorResponse((*e).into()))
                    .await?;
                transaction_status = transaction_status.to_error_state();
            }
            _ => {
                return Err(PgWireError::ApiError(
                    "COPY is not answered through an Execute".into(),
                ))
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(transaction_status);
        Ok(())
    }

    /// A Describe of a portal the connection does not hold may name a cursor
    /// that SQL `DECLARE` opened (psycopg's named cursors describe theirs so):
    /// the session answers with its columns.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_owned();
        if message.target_type == TARGET_TYPE_BYTE_PORTAL
            && client.portal_store().get_portal(&name).is_none()
        {
            let columns = self
                .runner
                .run(move |s: &mut E::Session| Ok(s.cursor_columns(&name)))
                .await
                .ok()
                .flatten();
            if let Some(columns) = columns {
                let formats = vec![FieldFormat::Text; columns.len()];
                let response = DescribePortalResponse::new(fields(&columns, &formats));
                return send_describe_response(client, &response).await;
            }
        }
        self._on_describe(client, message).await
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let tx = client.transaction_status();
        match portal.statement.statement.as_ref() {
            ParsedStatement::Compat(c) => {
                if tx == TransactionStatus::Error && !c.ends_failed_transaction() {
                    return Err(user_error(in_failed_transaction()));
                }
                if let Compat::Deallocate(name) = c {
                    let protocol = name
                        .as_deref()
                        .is_some_and(|n| client.portal_store().get_statement(n).is_some());
                    if let Some(n) = name.as_deref().filter(|_| protocol) {
                        client.portal_store().rm_statement(n);
                    }
                    return self
                        .deallocate(name.as_deref(), protocol)
                        .await
                        .map_err(user_error);
                }
                if c.is_transaction_control() {
                    return self.transaction_control(c, tx).await.map_err(user_error);
                }
                let n = compat_columns(c).len();
                let formats =
                    column_formats(Some(&portal.result_column_format), n).map_err(user_error)?;
                self.answer_compat(c, formats).map_err(user_error)
            }
            ParsedStatement::Copy(..) => Err(user_error(EngineError::new(
                "0A000",
                "COPY in an Execute with a row limit or a resumed portal",
            ))),
            ParsedStatement::Engine { prepared, shape } => {
                if tx == TransactionStatus::Error {
                    return Err(user_error(in_failed_transaction()));
                }
                // Ran early for a Describe of this portal: send that result.
                if let Some(outcome) = self.take_early(portal) {
                    let formats =
                        column_formats(Some(&portal.result_column_format), outcome.columns.len())
                            .map_err(user_error)?;
                    return Ok(outcome_response(outcome, formats));
                }
                // Streamed only without a row limit: a suspended portal would
                // keep its query (and session) waiting for the next Execute
                // while the client may run other statements.
                let outcome = self
                    .run_portal(portal, prepared, shape, max_rows == 0)
                    .await
                    .map_err(user_error)?;
                let formats =
                    column_formats(Some(&portal.result_column_format), outcome.columns.len())
                        .map_err(user_error)?;
                Ok(outcome_response(outcome, formats))
            }
        }
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Self::Statement>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let parser = self.query_parser();
        let server_types = parser.get_parameter_types(&target.statement)?;
        // Types the client declared win over what the statement implies.
        let n = target.parameter_types.len().max(server_types.len());
        let params = (0..n)
            .map(|i| {
                target
                    .parameter_types
                    .get(i)
                    .cloned()
                    .flatten()
                    .or_else(|| server_types.get(i).cloned())
                    .unwrap_or(Type::TEXT)
            })
            .collect();
        let fields = match target.statement.as_ref() {
            ParsedStatement::Engine {
                prepared,
                shape: Shape { columns: None, .. },
            } => {
                let prepared = prepared.clone();
                let columns = self
                    .runner
                    .run(move |s: &mut E::Session| s.describe(&prepared))
                    .await
                    .map_err(user_error)?;
                fields(&columns, &vec![FieldFormat::Text; columns.len()])
            }
            _ => parser.get_result_schema(&target.statement, None)?,
        };
        Ok(DescribeStatementResponse::new(params, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Self::Statement>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match portal.statement.statement.as_ref() {
            ParsedStatement::Engine { prepared, shape } if shape.columns.is_none() => {
                // The columns are known only by running: run now, keep the
                // result for the Execute that follows.
                let outcome = self
                    .run_portal(portal, prepared, shape, false)
                    .await
                    .map_err(user_error)?;
                let formats =
                    column_formats(Some(&portal.result_column_format), outcome.columns.len())
                        .map_err(user_error)?;
                let fields = fields(&outcome.columns, &formats);
                self.keep_early(portal, outcome);
                Ok(DescribePortalResponse::new(fields))
            }
            _ => {
                let schema = self.query_parser().get_result_schema(
                    &portal.statement.statement,
                    Some(&portal.result_column_format),
                )?;
                Ok(DescribePortalResponse::new(schema))
            }
        }
    }
}

impl<E: Engine> Connection<E> {
    /// Executes a portal, its rows gathered whole (`stream` false) or, for a
    /// query, streaming to the client as it runs.
    async fn run_portal(
        &self,
        portal: &Portal<Stmt<E::Session>>,
        prepared: &Arc<<E::Session as EngineSession>::Prepared>,
        shape: &Shape,
        stream: bool,
    ) -> Result<Outcome, EngineError> {
        let params = bind_parameters(portal, shape)?;
        let prepared = prepared.clone();
        if stream {
            self.runner
                .run_streaming(move |s: &mut E::Session, out| {
                    s.execute_prepared_streaming(&prepared, &params, out)
                })
                .await
        } else {
            self.runner
                .run(move |s: &mut E::Session| s.execute_prepared(&prepared, &params))
                .await
        }
    }

    /// Identity of a portal object (a rebound portal of the same name is another).
    fn portal_key(portal: &Portal<Stmt<E::Session>>) -> usize {
        std::ptr::from_ref(portal) as usize
    }

    fn keep_early(&self, portal: &Portal<Stmt<E::Session>>, outcome: Outcome) {
        let mut st = self.state();
        // Only the latest portal's early result is kept: clients describe and
        // execute a portal back to back.
        st.early = Some((Self::portal_key(portal), portal.name.clone(), outcome));
    }

    fn take_early(&self, portal: &Portal<Stmt<E::Session>>) -> Option<Outcome> {
        let mut st = self.state();
        match &st.early {
            Some((key, name, _)) if *key == Self::portal_key(portal) && *name == portal.name => {
                st.early.take().map(|(_, _, o)| o)
            }
            _ => None,
        }
    }
}

/// Decodes a portal's parameters: each by the type the client declared for it,
/// else the type the statement expects there, else as text.
fn bind_parameters<P>(
    portal: &Portal<Arc<ParsedStatement<P>>>,
    shape: &Shape,
) -> Result<Vec<Value>, EngineError> {
    let given = portal.parameters.len();
    if shape.params.len() > given {
        return Err(EngineError::new(
            "08P01",
            format!(
                "bind message supplies {given} parameters, but prepared statement requires {}",
                shape.params.len()
            ),
        ));
    }
    let declared = &portal.statement.parameter_types;
    (0..given)
        .map(|i| {
            let client_type = declared
                .get(i)
                .cloned()
                .flatten()
                .and_then(|t| from_pg_type(&t));
            let dt = client_type.or_else(|| shape.params.get(i).copied().flatten());
            let binary = match &portal.parameter_format {
                Format::UnifiedText => false,
                Format::UnifiedBinary => true,
                Format::Individual(codes) => codes.get(i).is_some_and(|c| *c == 1),
            };
            decode_param(portal.parameters[i].as_deref(), dt.as_ref(), binary).map_err(|m| {
                // A number beyond its type is 22003, as PostgreSQL's input
                // functions raise it; any other unreadable value 22P02.
                let code = if m.contains("out of range") {
                    "22003"
                } else {
                    "22P02"
                };
                EngineError::new(code, m)
            })
        })
        .collect()
}

impl<E: Engine> Connection<E> {
    /// Executes a COPY with the client from the extended protocol: a COPY
    /// FROM STDIN answers CopyInResponse and the connection takes CopyData
    /// until CopyDone (then the client's Sync); a COPY TO STDOUT sends its
    /// data and CommandComplete.
    async fn execute_copy<C>(
        &self,
        client: &mut C,
        sql: &str,
        direction: super::copy::Direction,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let tx = client.transaction_status();
        let failed = if tx == TransactionStatus::Error {
            Some(in_failed_transaction())
        } else {
            match direction {
                super::copy::Direction::In => match self.start_copy_in(sql).await {
                    Ok(Response::CopyIn(resp)) => {
                        client.set_state(PgWireConnectionState::CopyInProgress(true));
                        pgwire::api::copy::send_copy_in_response(client, resp).await?;
                        return Ok(());
                    }
                    Ok(Response::Execution(tag)) => {
                        send_execution_response(client, tag).await?;
                        None
                    }
                    Ok(_) => None,
                    Err(e) => Some(e),
                },
                super::copy::Direction::Out => self.copy_out(client, sql).await?,
            }
        };
        if let Some(e) = failed {
            client
                .send(PgWireBackendMessage::ErrorResponse(
                    super::respond::error_info(e.located(sql, sql)).into(),
                ))
                .await?;
            client.set_transaction_status(tx.to_error_state());
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        Ok(())
    }
}
