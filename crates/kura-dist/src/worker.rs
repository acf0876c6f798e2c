//! `kura cluster worker`: a datafusion-distributed Arrow Flight worker serving one shard
//! database (paper 003 §2, one server of the shared-nothing configuration).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use kura::OpenOptions;
use tokio::net::TcpListener;

use crate::channel::KuraChannels;
use crate::codec::KuraCodec;
use crate::error::{DistError, DistResult};
use crate::shard::{ShardDb, ShardInfo};

/// A worker whose queries decode kura leaves onto `db`.
pub fn worker(db: Arc<ShardDb>) -> Worker {
    // One set of channels for all the worker's queries (to the other workers, for shuffles).
    let channels = KuraChannels::default();
    Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let db = db.clone();
        let channels = channels.clone();
        async move {
            Ok(ctx
                .builder
                .with_distributed_user_codec(KuraCodec::worker(db))
                .with_distributed_channel_resolver(channels)
                .build())
        }
    })
}

/// Serves `db` on `listener` until the server fails.
pub async fn serve(db: Arc<ShardDb>, listener: TcpListener) -> DistResult<()> {
    // TCP_NODELAY on every connection: tonic sets it only on listeners it binds itself, and
    // without it each small gRPC message waited for the peer's delayed ACK (a one-worker
    // query took 87 ms however little it read).
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(worker(db).into_worker_server())
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| DistError::Cluster(format!("worker server: {e}")))
}

/// Binds `listen`, opens the shard database (refusing a file that is not one) and serves it;
/// `ready(address, shard)` is called once it listens. Blocks until the server fails.
pub fn run_worker(
    shard_db: &Path,
    listen: &str,
    opts: OpenOptions,
    ready: impl FnOnce(SocketAddr, &ShardInfo),
) -> DistResult<()> {
    let db = Arc::new(ShardDb::open(shard_db, opts)?);
    let rt = crate::runtime()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(listen).await.map_err(|e| DistError::Io {
            what: format!("listening on {listen}"),
            source: e,
        })?;
        let addr = listener.local_addr().map_err(|e| DistError::Io {
            what: format!("listening on {listen}"),
            source: e,
        })?;
        ready(addr, &db.info);
        serve(db, listener).await
    })
}
