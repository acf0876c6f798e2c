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
use pgwire::messages::PgWireBackendMessage;

use super::respond::{error_info, in_failed_transaction, outcome_response};
use super::Connection;
use crate::compat::{self, Compat};
use crate::engine::{Engine, EngineError, EngineSession};
use crate::split;

#[async_trait]
impl<E: Engine> SimpleQueryHandler for Connection<E> {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut tx = client.transaction_status();
        let mut out = Vec::new();
        let statements = split::statements(query);
        let count = statements.len();
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
                    out.push(Response::Error(Box::new(error_info(e))));
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
            && !matches!(recognised, Some(Compat::Commit | Compat::Rollback))
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
