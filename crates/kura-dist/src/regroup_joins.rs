//! Inner joins regrouped so that co-located tables meet (paper 003 §2): DataFusion joins in
//! the order of the FROM list, so `customer, orders, lineitem` becomes (CUSTOMER ⋈ ORDERS) ⋈
//! LINEITEM, and ORDERS never meets LINEITEM as a join of two shard leaves. This logical
//! optimizer rule rewrites `(A ⋈ B) ⋈ C` into `A ⋈ (B ⋈ C)` (with the columns in their old
//! order) when B and C are tables split in the same partitioning and the outer join's keys
//! pair their split columns — then [`crate::colocated_join`] runs B ⋈ C on the shards.
//!
//! Only where B or C is read through a filter ([`filtered`]: otherwise the join on the shards
//! sends more than the two tables would). Only inner joins are regrouped (associative, whatever the conditions); the outer join's
//! keys must use only B's and C's columns, and the filters of both joins go on the new upper
//! join, where every column is in scope. A projection of columns between the two joins (as
//! projection pushdown leaves one) is looked through; the result is projected to the outer
//! join's columns.

use std::sync::Arc;

use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, DFSchema};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

use crate::placement::Placement;
use crate::table::KuraTable;

/// Regroups `(A ⋈ B) ⋈ C` as `A ⋈ (B ⋈ C)` where B and C are co-located.
#[derive(Debug)]
pub struct RegroupForColocation {
    enabled: bool,
}

impl RegroupForColocation {
    /// On unless [`crate::partial_agg::PUSHDOWN_ENV`] is `off`.
    pub fn from_env() -> Self {
        RegroupForColocation {
            enabled: crate::partial_agg::pushdown_enabled(),
        }
    }
}

impl OptimizerRule for RegroupForColocation {
    fn name(&self) -> &str {
        "kura_regroup_for_colocation"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !self.enabled {
            return Ok(Transformed::no(plan));
        }
        match regrouped(&plan)? {
            Some(p) => Ok(Transformed::yes(p)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

fn plain_inner(j: &Join) -> bool {
    j.join_type == JoinType::Inner && !j.null_aware
}

/// `plan` regrouped, if it is `(A ⋈ B) ⋈ C` (or `(B ⋈ A) ⋈ C`) with B and C co-located.
fn regrouped(plan: &LogicalPlan) -> Result<Option<LogicalPlan>> {
    let LogicalPlan::Join(outer) = plan else {
        return Ok(None);
    };
    // The inner join, or a projection of its columns (projection pushdown puts one there).
    let (inner, projected) = match outer.left.as_ref() {
        LogicalPlan::Join(j) => (j, false),
        LogicalPlan::Projection(p) if p.expr.iter().all(|e| matches!(e, Expr::Column(_))) => {
            match p.input.as_ref() {
                LogicalPlan::Join(j) => (j, true),
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    if !plain_inner(outer) || !plain_inner(inner) || outer.null_equality != inner.null_equality {
        return Ok(None);
    }
    let c = &outer.right;
    for (b, a) in [(&inner.right, &inner.left), (&inner.left, &inner.right)] {
        if !outer.on.iter().all(|(l, _)| uses_only(l, b.schema())) {
            continue;
        }
        if !colocated(b, c, &outer.on) || !(filtered(b) || filtered(c)) {
            continue;
        }
        let bc = Join::try_new(
            Arc::clone(b),
            Arc::clone(c),
            outer.on.clone(),
            None,
            JoinType::Inner,
            outer.join_constraint,
            outer.null_equality,
            false,
        )?;
        let filter = match (&inner.filter, &outer.filter) {
            (Some(x), Some(y)) => Some(x.clone().and(y.clone())),
            (x, y) => x.clone().or_else(|| y.clone()),
        };
        // A's side of the inner keys stays on the left, B's moves into the right input.
        let on = if Arc::ptr_eq(b, &inner.right) {
            inner.on.clone()
        } else {
            inner
                .on
                .iter()
                .map(|(l, r)| (r.clone(), l.clone()))
                .collect()
        };
        let top = Join::try_new(
            Arc::clone(a),
            Arc::new(LogicalPlan::Join(bc)),
            on,
            filter,
            JoinType::Inner,
            inner.join_constraint,
            inner.null_equality,
            false,
        )?;
        let top = LogicalPlan::Join(top);
        if !projected
            && top.schema().fields() == plan.schema().fields()
            && top
                .schema()
                .iter()
                .map(|(q, _)| q.cloned())
                .eq(plan.schema().iter().map(|(q, _)| q.cloned()))
        {
            return Ok(Some(top));
        }
        // (B ⋈ A) ⋈ C, or a projection between the joins: the outer join's columns, in
        // their order.
        let columns: Vec<Expr> = plan
            .schema()
            .iter()
            .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
            .collect();
        return Ok(Some(
            LogicalPlanBuilder::from(top).project(columns)?.build()?,
        ));
    }
    Ok(None)
}

/// Whether every column `e` refers to is one of `schema`'s.
pub(crate) fn uses_only(e: &Expr, schema: &DFSchema) -> bool {
    e.column_refs().iter().all(|c| schema.has_column(c))
}

/// Whether `plan` reads its table through a filter. Only then is the regrouping worth it: a
/// join of two unfiltered co-located tables on their key (every LINEITEM row with its ORDERS
/// row) sends as many rows as the larger table, each as wide as both, which is more than the
/// two tables sent apart (TPC-H Q18 at SF 1 on two shards: 1.37 s regrouped, 0.95 s not). A
/// filter on either side makes the join send fewer rows than that side's table (Q3: 0.36 s →
/// 0.16 s, Q5, Q10).
fn filtered(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::TableScan(scan) => !scan.filters.is_empty(),
        LogicalPlan::Filter(_) => true,
        // A semi join keeps some of its left input's rows ([`crate::semi_join_down`]).
        LogicalPlan::Join(j) => j.join_type == JoinType::LeftSemi,
        LogicalPlan::Projection(p) => filtered(&p.input),
        LogicalPlan::SubqueryAlias(a) => filtered(&a.input),
        _ => false,
    }
}

/// Whether `b` and `c` read tables split in one partitioning, and `on` pairs their split
/// columns.
fn colocated(b: &LogicalPlan, c: &LogicalPlan, on: &[(Expr, Expr)]) -> bool {
    let (Some((bp, bcol)), Some((cp, ccol))) = (split_of(b), split_of(c)) else {
        return false;
    };
    bp == cp
        && on.iter().any(|(l, r)| {
            matches!((l, r), (Expr::Column(l), Expr::Column(r)) if l.name == bcol && r.name == ccol)
        })
}

/// The partitioning and split column of the kura table `plan` reads, through filters,
/// projections and aliases.
fn split_of(plan: &LogicalPlan) -> Option<(String, String)> {
    match plan {
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<KuraTable>()?;
            // One shard joins every table where it is: regrouping would only fix a join
            // order that kura, planning the shard's whole query, chooses better itself.
            if table.shards() == 1 {
                return None;
            }
            match table.placement() {
                Placement::Split {
                    column,
                    partitioning: Some(p),
                } => Some((p.clone(), column.clone())),
                _ => None,
            }
        }
        LogicalPlan::Filter(f) => split_of(&f.input),
        LogicalPlan::Join(j) if j.join_type == JoinType::LeftSemi => split_of(&j.left),
        LogicalPlan::Projection(p) => split_of(&p.input),
        LogicalPlan::SubqueryAlias(a) => split_of(&a.input),
        _ => None,
    }
}
