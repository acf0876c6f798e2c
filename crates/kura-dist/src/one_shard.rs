//! A cluster of one shard (paper 003 §2 on a single server, the distributed engine's own
//! overhead): datafusion-distributed runs a plan it finds nothing to spread in the
//! coordinating process, where no shard is, and it removes a network boundary between one
//! task and one task. So each shard leaf of a one-shard cluster gets a boundary of its own —
//! the library's `NetworkCoalesceExec` — fed by [`ONE_SHARD_TASKS`] tasks on the shard's
//! worker: the shard's fragment, and a task with no rows ([`crate::tasks::scale_up`]). The
//! planner keeps boundaries given in the plan as they are, so the rest of the plan (what the
//! shard leaves do not already do: final aggregation, sorting) runs in the coordinator. On a
//! one-shard cluster every join of shard leaves runs on the shard ([`crate::join_side`]), so
//! the leaves are few and large.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::NetworkCoalesceExec;

use crate::exec::KuraShardScanExec;

/// Tasks of a one-shard cluster's leaf stage: the shard's, and an empty one that keeps the
/// boundary from being removed.
pub const ONE_SHARD_TASKS: usize = 2;

/// Puts a network boundary above each shard leaf of a one-shard cluster.
#[derive(Debug)]
pub struct OneShardBoundaries;

impl PhysicalOptimizerRule for OneShardBoundaries {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let bounded = plan.transform_up(|node| match node.downcast_ref::<KuraShardScanExec>() {
            Some(leaf) if leaf.fragment().shards == 1 => {
                let mut boundary: Arc<dyn ExecutionPlan> =
                    Arc::new(NetworkCoalesceExec::try_new(node, ONE_SHARD_TASKS, 1)?);
                // One partition per task comes out; the empty task's must be read too. A
                // parent that reads one partition (a sort placed before this rule ran)
                // would leave it unread: its task would never finish, and the metrics of
                // an EXPLAIN ANALYZE, which wait for every task, never come.
                if boundary.output_partitioning().partition_count() > 1 {
                    boundary = Arc::new(CoalescePartitionsExec::new(boundary));
                }
                Ok(Transformed::yes(shielded(boundary)?))
            }
            _ => Ok(Transformed::no(node)),
        })?;
        // A plan with boundaries of its own is run as given: one output partition, as the
        // distributed planner would make it.
        let plan = bounded.data;
        if bounded.transformed && plan.output_partitioning().partition_count() > 1 {
            return Ok(Arc::new(CoalescePartitionsExec::new(plan)));
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "kura_one_shard_boundaries"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `boundary` under a projection of all its columns. datafusion-distributed pushes the fetch
/// of a boundary's parent into the stage below it as a row limit — right under a coalesce
/// or a limit, wrong under a top-k sort (`ORDER BY ... LIMIT`), which would then sort a few
/// arbitrary rows: the distributed planner puts its own boundaries above such sorts, but
/// these boundaries sit under whatever the coordinator runs. The projection has no fetch.
fn shielded(boundary: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = boundary.schema();
    let columns: Vec<ProjectionExpr> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| ProjectionExpr {
            expr: Arc::new(Column::new(f.name(), i)) as Arc<dyn PhysicalExpr>,
            alias: f.name().clone(),
        })
        .collect();
    Ok(Arc::new(ProjectionExec::try_new(columns, boundary)?))
}
