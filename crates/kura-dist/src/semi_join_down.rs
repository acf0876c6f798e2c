//! Semi joins moved below inner joins, to the input that holds their keys (paper 003 §2):
//! DataFusion decorrelates `o_orderkey IN (SELECT l_orderkey ... GROUP BY l_orderkey HAVING
//! ...)` into a semi join above the whole FROM list — in TPC-H Q18 above CUSTOMER ⋈ ORDERS ⋈
//! LINEITEM, which meet across partitionings. Moved onto ORDERS, the semi join is a
//! join of co-located inputs that [`crate::colocated_join`] runs on the shards (the subquery's
//! aggregation runs whole there, [`crate::complete_agg`]), and the orders it keeps are what
//! [`crate::regroup_joins`] then joins with LINEITEM on the shards too.
//!
//! A semi join keeps the rows of its left input that have a match; when its keys are columns
//! of one input of an inner join below it, keeping that input's rows first gives the same rows
//! (an inner join neither adds nor changes the columns the keys read). Only semi joins
//! without a join filter and without null-aware semantics (not NOT IN) move.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

use crate::regroup_joins::uses_only;

/// Moves semi joins below inner joins, onto the input holding their keys.
#[derive(Debug)]
pub struct SemiJoinsDown {
    enabled: bool,
}

impl SemiJoinsDown {
    /// On unless [`crate::partial_agg::PUSHDOWN_ENV`] is `off`.
    pub fn from_env() -> Self {
        SemiJoinsDown {
            enabled: crate::partial_agg::pushdown_enabled(),
        }
    }
}

impl OptimizerRule for SemiJoinsDown {
    fn name(&self) -> &str {
        "kura_semi_joins_down"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !self.enabled {
            return Ok(Transformed::no(plan));
        }
        match moved_down(&plan)? {
            Some(p) => Ok(Transformed::yes(p)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// `plan` with its semi join moved below the inner join under it (as far down as it goes),
/// if it is one that can move.
fn moved_down(plan: &LogicalPlan) -> Result<Option<LogicalPlan>> {
    let LogicalPlan::Join(semi) = plan else {
        return Ok(None);
    };
    if semi.join_type != JoinType::LeftSemi || semi.null_aware || semi.filter.is_some() {
        return Ok(None);
    }
    // The inner join, or a projection of its columns (projection pushdown puts one there).
    let (inner, projection) = match semi.left.as_ref() {
        LogicalPlan::Join(j) => (j, None),
        LogicalPlan::Projection(p) if p.expr.iter().all(|e| matches!(e, Expr::Column(_))) => {
            match p.input.as_ref() {
                LogicalPlan::Join(j) => (j, Some(p)),
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    if inner.join_type != JoinType::Inner || inner.null_aware {
        return Ok(None);
    }
    for left_side in [true, false] {
        let input = if left_side { &inner.left } else { &inner.right };
        if !semi.on.iter().all(|(l, _)| uses_only(l, input.schema())) {
            continue;
        }
        let kept = LogicalPlan::Join(Join::try_new(
            Arc::clone(input),
            Arc::clone(&semi.right),
            semi.on.clone(),
            None,
            JoinType::LeftSemi,
            semi.join_constraint,
            semi.null_equality,
            false,
        )?);
        // Further down, where the input is an inner join itself.
        let kept = Arc::new(moved_down(&kept)?.unwrap_or(kept));
        let (left, right) = if left_side {
            (kept, Arc::clone(&inner.right))
        } else {
            (Arc::clone(&inner.left), kept)
        };
        let joined = LogicalPlan::Join(Join::try_new(
            left,
            right,
            inner.on.clone(),
            inner.filter.clone(),
            JoinType::Inner,
            inner.join_constraint,
            inner.null_equality,
            false,
        )?);
        let rebuilt = match projection {
            Some(p) => LogicalPlanBuilder::from(joined)
                .project(p.expr.clone())?
                .build()?,
            None => joined,
        };
        // The semi join's output is its left input's: the same columns as before.
        if rebuilt.schema().fields() != plan.schema().fields() {
            return Ok(None);
        }
        return Ok(Some(rebuilt));
    }
    Ok(None)
}
