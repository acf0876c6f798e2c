//! The physical optimizer rule that moves work into the shards' fragments (paper 003 §2,
//! phase 2 of the shared-nothing configuration): bottom-up, a hash join of co-located leaves
//! ([`crate::colocated_join`]), an aggregation whose groups each live on one shard
//! ([`crate::complete_agg`]) and a filter over a leaf ([`crate::shard_filter`]) each become
//! one leaf, so the next operator up may become one too. The replaced node's parent keeps
//! what it required of its input: a hash partitioning is restored by a repartition above the
//! leaf, a single partition by a coalesce.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_expr::{Distribution, Partitioning};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, ExecutionPlan, ExecutionPlanProperties, ReplaceChildrenOptions,
};

use crate::error::{DistError, DistResult};
use crate::exec::KuraShardScanExec;

/// Replaces joins, aggregations and filters the shards can answer for by shard leaves.
#[derive(Debug)]
pub struct PushToShards {
    enabled: bool,
}

impl PushToShards {
    /// On unless [`crate::partial_agg::PUSHDOWN_ENV`] is `off`.
    pub fn from_env() -> Self {
        PushToShards {
            enabled: crate::partial_agg::pushdown_enabled(),
        }
    }
}

/// The leaf that does `node`'s work on the shards, when one can.
fn pushed(node: &Arc<dyn ExecutionPlan>) -> DistResult<Option<KuraShardScanExec>> {
    if let Some(join) = node.downcast_ref::<HashJoinExec>() {
        return crate::colocated_join::pushed(join);
    }
    if let Some(join) = node.downcast_ref::<NestedLoopJoinExec>() {
        return crate::colocated_join::pushed_nested_loop(join);
    }
    if let Some(agg) = node.downcast_ref::<AggregateExec>() {
        return crate::complete_agg::pushed(agg);
    }
    if let Some(filter) = node.downcast_ref::<FilterExec>() {
        return crate::shard_filter::pushed(filter);
    }
    Ok(None)
}

/// `leaf` where `child` was, as its parent requires its input to be spread: a hash
/// partitioning restored by a repartition, a single partition by a coalesce.
fn in_place_of(
    child: &Arc<dyn ExecutionPlan>,
    leaf: KuraShardScanExec,
    required: Option<&Distribution>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let leaf: Arc<dyn ExecutionPlan> = Arc::new(leaf);
    Ok(match required {
        Some(Distribution::KeyPartitioned(exprs)) => Arc::new(RepartitionExec::try_new(
            leaf,
            Partitioning::Hash(exprs.clone(), child.output_partitioning().partition_count()),
        )?),
        Some(Distribution::SinglePartition) => Arc::new(CoalescePartitionsExec::new(leaf)),
        Some(Distribution::UnspecifiedDistribution) | None => leaf,
        // The deprecated name of KeyPartitioned, or a requirement this rule does not know:
        // leave the node to DataFusion.
        Some(_) => Arc::clone(child),
    })
}

impl PhysicalOptimizerRule for PushToShards {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.enabled {
            return Ok(plan);
        }
        // Bottom-up, at each node's parent: a join becomes a leaf before the join or
        // aggregation above it is looked at.
        let plan = plan
            .transform_up(|node| {
                let children = node.children();
                let required = node.input_distribution_requirements();
                let orderings = node.required_input_ordering();
                let mut changed = false;
                let mut new_children = Vec::with_capacity(children.len());
                for (i, child) in children.into_iter().enumerate() {
                    // A leaf gives its rows in no particular order.
                    let keeps_order = orderings.get(i).is_some_and(|o| o.is_some());
                    let replacement = if keeps_order {
                        None
                    } else {
                        pushed(child).map_err(DistError::into_datafusion)?
                    };
                    match replacement {
                        Some(leaf) => {
                            changed = true;
                            new_children.push(in_place_of(
                                child,
                                leaf,
                                required.child_distribution(i),
                            )?);
                        }
                        None => new_children.push(Arc::clone(child)),
                    }
                }
                if !changed {
                    return Ok(Transformed::no(node));
                }
                Ok(Transformed::yes(node.replace_children(
                    new_children,
                    ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
                )?))
            })?
            .data;
        // The root has no parent to require anything of it.
        match pushed(&plan).map_err(DistError::into_datafusion)? {
            Some(leaf) => Ok(Arc::new(leaf)),
            None => Ok(plan),
        }
    }

    fn name(&self) -> &str {
        "kura_push_to_shards"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
