//! The connections between the coordinator and the workers (and between workers): gRPC
//! channels with a connect timeout and HTTP/2 keep-alives, so a worker that dies or hangs
//! fails the query within seconds instead of leaving it hanging, and the check that names
//! the worker that does not answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion_distributed::grpc::{create_worker_client, BoxCloneSyncChannel};
use datafusion_distributed::{ChannelResolver, GetWorkerInfoRequest, WorkerChannel};
use tonic::transport::{Channel, Endpoint};
use url::Url;

/// How long connecting to a worker may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How often an open connection is pinged, and how long a ping may go unanswered before the
/// connection (and the query using it) fails.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(2);
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// One channel per worker URL, made on first use and reused (a tonic channel reconnects by
/// itself after its worker comes back).
#[derive(Clone, Default)]
pub struct KuraChannels {
    channels: Arc<Mutex<HashMap<Url, Channel>>>,
}

impl KuraChannels {
    async fn channel(&self, url: &Url) -> Result<Channel, DataFusionError> {
        if let Some(c) = self.channels.lock().unwrap().get(url) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| DataFusionError::Configuration(format!("worker URL {url}: {e}")))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let channel = endpoint.connect().await.map_err(|e| {
            DataFusionError::Execution(format!("cannot connect to kura worker {url}: {e}"))
        })?;
        self.channels
            .lock()
            .unwrap()
            .insert(url.clone(), channel.clone());
        Ok(channel)
    }
}

#[async_trait]
impl ChannelResolver for KuraChannels {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> Result<Box<dyn WorkerChannel>, DataFusionError> {
        let channel = self.channel(url).await?;
        Ok(create_worker_client(BoxCloneSyncChannel::new(channel)))
    }
}

/// Whether a worker answers: its worker-info call returns within [`CONNECT_TIMEOUT`] (a
/// worker that is gone refuses the connection; one that hangs accepts it but never answers).
pub async fn answers(channels: &KuraChannels, url: &Url) -> Result<(), String> {
    let call = async {
        let mut client = channels
            .get_worker_client_for_url(url)
            .await
            .map_err(|e| e.to_string())?;
        client
            .get_worker_info(GetWorkerInfoRequest {})
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, call).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())),
    }
}
