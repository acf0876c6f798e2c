//! kura-dist: kura's shards as the leaves of a distributed plan run by datafusion-distributed
//! (DataFusion + Arrow Flight) — paper 003 §2, kura "configured as a shared-nothing database of
//! several Linux servers".
//!
//! [`load`] writes a cluster's shard databases; [`worker`] serves one shard as a Flight
//! worker; [`cluster::Cluster`] is the coordinator (DataFusion's SQL planner over
//! [`table::KuraTable`]s). A scan becomes a [`exec::KuraShardScanExec`] leaf carrying a
//! [`fragment::Fragment`] (projection, filters as kura SQL, limit, and — by [`push_rule`]:
//! [`colocated_join`], [`complete_agg`], [`shard_filter`], then [`partial_agg`] — joins of
//! co-located tables, aggregations whose groups each live on one shard, the filters above
//! them, and the first phase of the other aggregations) that kura runs on its shard;
//! [`codec::KuraCodec`] carries it to the workers, one task per shard routed to the shard's
//! worker. DataFusion does the exchange, final aggregation and cross-shard joins.

pub mod channel;
pub mod cluster;
pub mod codec;
pub mod colocated_join;
pub mod complete_agg;
pub mod convert;
pub mod error;
pub mod exec;
pub mod filter;
pub mod fragment;
pub mod frontdoor;
pub mod join_side;
pub mod load;
pub mod local;
pub mod one_shard;
pub mod partial_agg;
pub mod physical_sql;
pub mod placement;
pub mod prepared;
pub mod profile;
pub mod push_rule;
pub mod regroup_joins;
pub mod router;
pub mod semi_join_down;
pub mod shard;
pub mod shard_filter;
pub mod table;
pub mod tasks;
pub mod worker;

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

pub use cluster::Cluster;
pub use error::{DistError, DistResult};
pub use shard::{ShardDb, ShardInfo};

/// The multi-threaded runtime the blocking entry points run on.
pub fn runtime() -> DistResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| DistError::Io {
            what: "starting the async runtime".into(),
            source: e,
        })
}

/// `kura cluster query`: connects to `workers`, runs `sql` and returns its batches and the
/// time the query took (connecting excluded).
pub fn query_blocking(workers: &[String], sql: &str) -> DistResult<(Vec<RecordBatch>, Duration)> {
    runtime()?.block_on(async {
        let cluster = Cluster::connect(workers).await?;
        let start = Instant::now();
        let batches = cluster.sql(sql).await?;
        Ok((batches, start.elapsed()))
    })
}

/// `kura cluster query --explain`: the distributed plan of `sql`, as stages.
pub fn explain_blocking(workers: &[String], sql: &str) -> DistResult<String> {
    runtime()?.block_on(async {
        let cluster = Cluster::connect(workers).await?;
        cluster.explain(sql).await
    })
}

/// Batches as a text table.
pub fn format_batches(batches: &[RecordBatch]) -> DistResult<String> {
    datafusion::arrow::util::pretty::pretty_format_batches(batches)
        .map(|t| t.to_string())
        .map_err(|e| DistError::DataFusion(e.into()))
}
