//! The `PhysicalExtensionCodec` that carries a kura shard leaf from the coordinator to the
//! workers (paper 003 §2: the plan travels to the servers holding the data).
//!
//! The leaf travels as its fragment and shard number (postcard); a worker's codec gives the
//! decoded leaf that worker's shard database.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use serde::{Deserialize, Serialize};

use crate::error::DistError;
use crate::exec::KuraShardScanExec;
use crate::fragment::Fragment;
use crate::shard::ShardDb;

/// What goes over the wire for one leaf.
#[derive(Serialize, Deserialize)]
struct WireLeaf {
    fragment: Fragment,
    shard: Option<usize>,
}

/// Encodes kura shard leaves; on a worker, decodes them onto its shard database.
#[derive(Debug, Clone, Default)]
pub struct KuraCodec {
    db: Option<Arc<ShardDb>>,
}

impl KuraCodec {
    /// The coordinator's codec (it only encodes).
    pub fn coordinator() -> Self {
        KuraCodec { db: None }
    }

    /// A worker's codec: decoded leaves read `db`.
    pub fn worker(db: Arc<ShardDb>) -> Self {
        KuraCodec { db: Some(db) }
    }
}

fn codec_err(what: &str, e: impl std::fmt::Display) -> DataFusionError {
    DistError::Cluster(format!("kura leaf codec: {what}: {e}")).into_datafusion()
}

impl PhysicalExtensionCodec for KuraCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return Err(codec_err(
                "decoding",
                format!("a shard leaf has no inputs, got {}", inputs.len()),
            ));
        }
        let wire: WireLeaf = postcard::from_bytes(buf).map_err(|e| codec_err("decoding", e))?;
        let exec = KuraShardScanExec::try_new(Arc::new(wire.fragment), wire.shard, self.db.clone())
            .map_err(DistError::into_datafusion)?;
        Ok(Arc::new(exec))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(exec) = node.downcast_ref::<KuraShardScanExec>() else {
            return Err(codec_err(
                "encoding",
                format!("not a kura shard leaf: {}", node.name()),
            ));
        };
        let wire = WireLeaf {
            fragment: exec.fragment().as_ref().clone(),
            shard: exec.shard(),
        };
        let bytes = postcard::to_allocvec(&wire).map_err(|e| codec_err("encoding", e))?;
        buf.extend_from_slice(&bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::{ColumnDef, FragmentKind};
    use datafusion_proto::physical_plan::DefaultPhysicalProtoConverter;

    #[test]
    fn round_trip() {
        let fragment = Fragment {
            kind: FragmentKind::Scan {
                table: "orders".into(),
                filters: vec!["(\"o_orderkey\" < 10)".into()],
                limit: None,
                placement: crate::placement::Placement::Split {
                    column: "o_orderkey".into(),
                    partitioning: Some("orderkey".into()),
                },
                aggregate: None,
            },
            columns: vec![ColumnDef {
                name: "o_orderkey".into(),
                data_type: kura_common::DataType::Integer,
            }],
            shards: 3,
        };
        let exec = KuraShardScanExec::try_new(Arc::new(fragment.clone()), Some(2), None).unwrap();
        let codec = KuraCodec::coordinator();
        let mut buf = Vec::new();
        codec
            .try_encode(Arc::new(exec), &mut buf, &DefaultPhysicalProtoConverter {})
            .unwrap();
        let ctx = TaskContext::default();
        let back = codec
            .try_decode(&buf, &[], &ctx, &DefaultPhysicalProtoConverter {})
            .unwrap();
        let back = back.downcast_ref::<KuraShardScanExec>().unwrap();
        assert_eq!(back.fragment().as_ref(), &fragment);
        assert_eq!(back.shard(), Some(2));
        assert!(codec
            .try_decode(b"\xff\xff", &[], &ctx, &DefaultPhysicalProtoConverter {})
            .is_err());
    }
}
