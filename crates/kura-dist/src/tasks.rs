//! How a shard leaf becomes tasks and where the tasks run (datafusion-distributed's task
//! count, leaf scale-up and routing hooks): one task per shard, task `i` on the worker of
//! shard `i`; a one-shard cluster's leaves take [`crate::one_shard`]'s two tasks.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedLeafExec, NetworkBoundaryExt,
    NetworkCoalesceExec, RouteTasksEvent, RouteTasksEventResponse, ScaleUpLeafNodeEvent,
    ScaleUpLeafNodeEventResponse,
};
use url::Url;

use crate::error::DistError;
use crate::exec::KuraShardScanExec;
use crate::one_shard::ONE_SHARD_TASKS;

/// A shard leaf needs exactly one task per shard.
pub(crate) fn desired_tasks(
    ev: DesiredTaskCountEvent,
) -> Option<Result<DesiredTaskCountEventResponse>> {
    let scan = ev.plan.downcast_ref::<KuraShardScanExec>()?;
    Some(Ok(DesiredTaskCountEventResponse::maximum(
        scan.fragment().shards,
    )))
}

/// Splits a shard leaf into one variant per shard. A shard leaf runs in a stage of one task
/// per shard; when the planner gives its stage fewer tasks (an operator it runs in one task,
/// such as the null-aware anti join of `NOT IN`, sits above the leaf in the same stage), the
/// leaf becomes a stage of its own, one task per shard, gathered by a `NetworkCoalesceExec`
/// into the stage's tasks. A one-shard cluster's leaf stage has [`ONE_SHARD_TASKS`] tasks:
/// the shard's, and one with no rows.
pub(crate) fn scale_up(ev: ScaleUpLeafNodeEvent) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let scan = ev.plan.downcast_ref::<KuraShardScanExec>()?;
    let shards = scan.fragment().shards;
    let mut variants: Vec<Arc<dyn ExecutionPlan>> = (0..shards)
        .map(|s| Arc::new(scan.for_shard(s)) as Arc<dyn ExecutionPlan>)
        .collect();
    if shards == 1 && ev.task_count == ONE_SHARD_TASKS {
        let partitions = variants[0].output_partitioning().partition_count();
        variants.push(Arc::new(
            EmptyExec::new(scan.schema()).with_partitions(partitions),
        ));
    }
    let tasks = variants.len();
    let leaf = match DistributedLeafExec::try_new(Arc::clone(ev.plan), variants) {
        Ok(leaf) => Arc::new(leaf) as Arc<dyn ExecutionPlan>,
        Err(e) => return Some(Err(e)),
    };
    let plan = match ev.task_count {
        n if n == tasks => Ok(leaf),
        n if n >= 1 && n < tasks => NetworkCoalesceExec::try_new(leaf, tasks, n)
            .map(|nc| Arc::new(nc) as Arc<dyn ExecutionPlan>),
        n => Err(DistError::Cluster(format!(
            "a kura shard leaf needs one task per shard ({shards}), the planner gave {n}"
        ))
        .into_datafusion()),
    };
    Some(plan.map(ScaleUpLeafNodeEventResponse::new))
}

/// Whether the stage headed by `plan` reads shards (its leaves, not those of the stages
/// below its network boundaries).
fn has_shard_leaf(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if plan.downcast_ref::<KuraShardScanExec>().is_some() {
        return true;
    }
    if let Some(leaf) = plan.downcast_ref::<DistributedLeafExec>() {
        return leaf
            .original()
            .downcast_ref::<KuraShardScanExec>()
            .is_some();
    }
    if plan.is_network_boundary() {
        return false;
    }
    plan.children().into_iter().any(has_shard_leaf)
}

/// Task `i` of a stage reading shards goes to the worker of shard `i` (every task of a
/// one-shard cluster to its worker); other stages are spread round robin.
pub(crate) fn route(
    ev: RouteTasksEvent,
    workers: &Arc<Vec<Url>>,
    shards: usize,
) -> Option<Result<RouteTasksEventResponse>> {
    if !has_shard_leaf(ev.plan) {
        return None;
    }
    if shards == 1 {
        return Some(Ok(RouteTasksEventResponse::new(vec![
            workers[0].clone();
            ev.task_count
        ])));
    }
    if ev.task_count != shards {
        return Some(Err(DistError::Cluster(format!(
            "a stage reading kura shards has {} tasks for {shards} shards",
            ev.task_count
        ))
        .into_datafusion()));
    }
    Some(Ok(RouteTasksEventResponse::new(workers.as_ref().clone())))
}
