//! The simple query protocol: a query string of one or more statements, each
//! answered in turn; the first error ends the string, as in PostgreSQL.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::{FieldFormat, Response};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;

use super::respond::{error_info, in_failed_transaction, outcome_response};
use super::{copy, Connection};
use crate::compat::{self, Compat};
use crate::engine::{Engine, EngineError, EngineSession};
use crate::sql_scan;

#[async_trait]
impl<E: Engine> SimpleQueryHandler for Connection<E> {
    /// pgwire reports the transaction status from the answers alone, where
    /// nothing leads from a failed transaction back into a good one: a query
    /// string that starts with `ROLLBACK TO SAVEPOINT` (or `... AND CHAIN`)
    /// sets it first (see [`super::resume_status`]).
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Only a failed transaction's status is set here: the text is split
        // once more (for this) only then.
        if client.transaction_status() == TransactionStatus::Error {
            let first = sql_scan::statements(&query.query)
                .first()
                .and_then(|s| compat::recognise(s));
            if let Some(c) = first {
                super::resume_status(client, &c);
            }
        }
        self._on_query(client, query).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut tx = client.transaction_status();
        let mut out = Vec::new();
        let statements = sql_scan::statements(query);
        let count = statements.len();
        // A COPY the client left unfinished ends (unloaded) before anything else runs.
        self.abandon_copy_in().await;
        if let Some(resp) = self.copy_with_client(client, &statements, tx).await? {
            return Ok(resp);
        }
        for (i, stmt) in statements.into_iter().enumerate() {
            // Responses are sent once every statement has run, so only the last
            // may stream: a streamed query holds its session until its rows
            // are taken, and the next statement would wait for it.
            let last = i + 1 == count;
            let answer = self.simple_statement(client, stmt, tx, last).await;
            match answer {
                Ok(resp) => {
                    tx = match &resp {
                        Response::TransactionStart(_) => tx.to_in_transaction_state(),
                        Response::TransactionEnd(_) => tx.to_idle_state(),
                        _ => tx,
                    };
                    out.push(resp);
                }
                Err(e) => {
                    out.push(Response::Error(Box::new(error_info(
                        e.located(query, stmt),
                    ))));
                    break;
                }
            }
        }
        if out.is_empty() {
            out.push(Response::EmptyQuery);
        }
        Ok(out)
    }
}

impl<E: Engine> Connection<E> {
    /// A query string that is a COPY with the client (`FROM STDIN`, `TO
    /// STDOUT`): its answer, else `None`. Such a COPY must be the only
    /// statement of its string (what psql and the drivers send), since its
    /// data flows between this answer and the next query.
    async fn copy_with_client<C>(
        &self,
        client: &mut C,
        statements: &[&str],
        tx: TransactionStatus,
    ) -> PgWireResult<Option<Vec<Response>>>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let found = statements
            .iter()
            .find_map(|s| copy::direction(s).map(|d| (*s, d)));
        let Some((stmt, direction)) = found else {
            return Ok(None);
        };
        let error = |e: EngineError| Ok(Some(vec![Response::Error(Box::new(error_info(e)))]));
        if statements.len() != 1 {
            return error(EngineError::new(
                "0A000",
                "COPY FROM STDIN and COPY TO STDOUT must be sent as a query string of their own",
            ));
        }
        if tx == TransactionStatus::Error {
            return error(in_failed_transaction());
        }
        match direction {
            copy::Direction::In => match self.start_copy_in(stmt).await {
                Ok(resp) => Ok(Some(vec![resp])),
                Err(e) => error(e),
            },
            copy::Direction::Out => match self.copy_out(client, stmt).await? {
                None => Ok(Some(Vec::new())),
                Some(e) => error(e),
            },
        }
    }

    async fn simple_statement<C>(
        &self,
        client: &mut C,
        stmt: &str,
        tx: TransactionStatus,
        stream: bool,
    ) -> Result<Response, EngineError>
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let recognised = compat::recognise(stmt);
        if tx == TransactionStatus::Error
            && !recognised
                .as_ref()
                .is_some_and(Compat::ends_failed_transaction)
        {
            return Err(in_failed_transaction());
        }
        if let Some(c) = recognised {
            if let Compat::Deallocate(name) = &c {
                let protocol = name
                    .as_deref()
                    .is_some_and(|n| client.portal_store().get_statement(n).is_some());
                if let Some(n) = name.as_deref().filter(|_| protocol) {
                    client.portal_store().rm_statement(n);
                }
                return self.deallocate(name.as_deref(), protocol).await;
            }
            if c.is_transaction_control() {
                return self.transaction_control(&c, tx).await;
            }
            return self.answer_compat(&c, vec![FieldFormat::Text]);
        }
        let sql = stmt.to_string();
        let outcome = if stream {
            self.runner
                .run_streaming(move |s: &mut E::Session, out| s.execute_streaming(&sql, out))
                .await?
        } else {
            self.runner
                .run(move |s: &mut E::Session| s.execute(&sql))
                .await?
        };
        let n = outcome.columns.len();
        Ok(outcome_response(outcome, vec![FieldFormat::Text; n]))
    }
}
