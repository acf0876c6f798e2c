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
