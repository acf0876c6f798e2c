//! kura-dist's one error type: kura's, DataFusion's and the cluster's own, joined as the
//! façade joins the layers' errors (DESIGN.md "Errors").

use thiserror::Error;

/// What went wrong loading, serving or querying a kura cluster.
#[derive(Debug, Error)]
pub enum DistError {
    /// An error of kura on a shard (parse, plan, execute, storage).
    #[error("kura: {0}")]
    Kura(#[from] kura::KuraError),
    /// An error of the converter from kura vectors to Arrow.
    #[error("{0}")]
    Arrow(#[from] kura_exec::ExecError),
    /// An error of DataFusion or datafusion-distributed (planning, exchange, a worker).
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A query failed and a worker no longer accepts connections.
    #[error(
        "kura worker {worker} (shard {shard}) is down ({reason}); the query failed: {query_error}"
    )]
    WorkerDown {
        worker: String,
        shard: usize,
        reason: String,
        query_error: String,
    },
    /// The front door's PostgreSQL-wire server.
    #[error("{0}")]
    Server(#[from] kura_server::ServerError),
    /// A statement the cluster cannot take as written (42601).
    #[error("{0}")]
    Syntax(String),
    /// A client's message that does not fit its statement (08P01).
    #[error("{0}")]
    Protocol(String),
    /// A shard database or cluster layout that does not fit the request.
    #[error("{0}")]
    Cluster(String),
    /// An address, file or network failure.
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

pub type DistResult<T> = Result<T, DistError>;

impl DistError {
    /// This error as DataFusion's, for the trait methods DataFusion calls.
    pub fn into_datafusion(self) -> datafusion::error::DataFusionError {
        match self {
            DistError::DataFusion(e) => e,
            other => datafusion::error::DataFusionError::External(Box::new(other)),
        }
    }
}

impl DistError {
    /// The SQLSTATE a client is told, as PostgreSQL would class the same failure: kura's own
    /// code for a shard's error, a connection failure (08006) for a worker that is gone, and
    /// for DataFusion's errors the class of its root cause (syntax, unknown table or column,
    /// unsupported, arithmetic); anything else is an internal error (XX000).
    pub fn sqlstate(&self) -> &'static str {
        match self {
            DistError::WorkerDown { .. } => "08006",
            DistError::Kura(k) => k.sqlstate(),
            DistError::DataFusion(e) => datafusion_sqlstate(e),
            DistError::Syntax(_) => "42601",
            DistError::Protocol(_) => "08P01",
            _ => "XX000",
        }
    }
}

fn datafusion_sqlstate(e: &datafusion::error::DataFusionError) -> &'static str {
    use datafusion::common::SchemaError;
    use datafusion::error::DataFusionError as E;
    use datafusion::sql::sqlparser::parser::ParserError;
    match e.find_root() {
        E::SQL(p, _) => match p.as_ref() {
            ParserError::RecursionLimitExceeded => "54001",
            _ => "42601",
        },
        E::SchemaError(s, _) => match s.as_ref() {
            SchemaError::FieldNotFound { .. } => "42703",
            SchemaError::AmbiguousReference { .. } => "42702",
            _ => "42P16",
        },
        E::Plan(m) if m.contains("table '") && m.contains("not found") => "42P01",
        E::Plan(m) if m.contains("column '") && m.contains("not found") => "42703",
        E::Plan(m) if m.contains("No function matches") || m.contains("Invalid function") => {
            "42883"
        }
        E::Plan(_) => "42000",
        E::NotImplemented(_) => "0A000",
        E::ResourcesExhausted(_) => "53200",
        E::ArrowError(a, _) => match a.as_ref() {
            arrow_schema::ArrowError::DivideByZero => "22012",
            arrow_schema::ArrowError::ArithmeticOverflow(_) => "22003",
            arrow_schema::ArrowError::CastError(_) | arrow_schema::ArrowError::ParseError(_) => {
                "22P02"
            }
            _ => "XX000",
        },
        E::Execution(m) if m.contains("Cast error") || m.contains("Cannot cast") => "22P02",
        _ => "XX000",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn state_of(sql: &str) -> &'static str {
        let ctx = SessionContext::new();
        let e = match ctx.sql(sql).await {
            Ok(df) => df.collect().await.expect_err(sql),
            Err(e) => e,
        };
        DistError::DataFusion(e).sqlstate()
    }

    #[tokio::test]
    async fn datafusion_errors_get_postgres_classes() {
        assert_eq!(state_of("selec 1").await, "42601");
        assert_eq!(state_of("select * from no_such_table").await, "42P01");
        assert_eq!(
            state_of("select nope from (select 1 as a) t").await,
            "42703"
        );
        assert_eq!(state_of("select no_such_function(1)").await, "42883");
    }
}
