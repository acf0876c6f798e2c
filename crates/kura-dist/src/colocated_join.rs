//! Joins run on the shards (paper 003 §2, phase 2 of the shared-nothing configuration): a
//! physical optimizer rule that replaces a DataFusion hash join of two kura shard leaves by one
//! leaf whose fragment joins them in kura, when every shard can answer for its own rows —
//! both tables split by the join key in the same partitioning (ORDERS and LINEITEM by order
//! key), or one side replicated on every shard (NATION, SUPPLIER). The join's rows then never
//! cross the network; a further join or a partial aggregation
//! ([`crate::partial_agg`]) may build on the new leaf.
//!
//! Inner, semi, anti and outer hash joins on equal keys (NULL matching nothing), with a join
//! filter kura can evaluate ([`crate::physical_sql`]); the sides reached through projections
//! and repartitions ([`crate::join_side`]). On a cluster of one shard every join of its
//! leaves qualifies. The join's parent keeps what it required of its input: a hash partitioning
//! is restored by a repartition above the leaf, a single partition by a coalesce.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_expr::{Distribution, Partitioning};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, ExecutionPlan, ExecutionPlanProperties, ReplaceChildrenOptions,
};

use crate::error::{DistError, DistResult};
use crate::exec::KuraShardScanExec;
use crate::fragment::{Fragment, FragmentKind, OutputField};
use crate::join_side::{side, tables_of, SidePlacement};
use crate::physical_sql::to_kura_sql;

/// Replaces hash joins of co-located kura shard leaves by one leaf joining on the shards.
#[derive(Debug)]
pub struct PushColocatedJoins {
    enabled: bool,
}

impl PushColocatedJoins {
    /// On unless [`crate::partial_agg::PUSHDOWN_ENV`] is `off`.
    pub fn from_env() -> Self {
        PushColocatedJoins {
            enabled: crate::partial_agg::pushdown_enabled(),
        }
    }
}

impl PhysicalOptimizerRule for PushColocatedJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.enabled {
            return Ok(plan);
        }
        // Bottom-up, at each join's parent: an inner join becomes a leaf before the join
        // above it is looked at.
        plan.transform_up(|node| {
            let children = node.children();
            let required = node.input_distribution_requirements();
            let orderings = node.required_input_ordering();
            let mut changed = false;
            let mut new_children = Vec::with_capacity(children.len());
            for (i, child) in children.into_iter().enumerate() {
                let keeps_order = orderings.get(i).is_some_and(|o| o.is_some());
                let replacement = match child.downcast_ref::<HashJoinExec>() {
                    Some(join) if !keeps_order => {
                        pushed(join).map_err(DistError::into_datafusion)?
                    }
                    _ => None,
                };
                match replacement {
                    Some(leaf) => {
                        changed = true;
                        let leaf: Arc<dyn ExecutionPlan> = Arc::new(leaf);
                        let partitions = child.output_partitioning().partition_count();
                        new_children.push(match required.child_distribution(i) {
                            Some(Distribution::KeyPartitioned(exprs)) => {
                                Arc::new(RepartitionExec::try_new(
                                    leaf,
                                    Partitioning::Hash(exprs.clone(), partitions),
                                )?) as Arc<dyn ExecutionPlan>
                            }
                            Some(Distribution::SinglePartition) => {
                                Arc::new(CoalescePartitionsExec::new(leaf))
                            }
                            Some(Distribution::UnspecifiedDistribution) | None => leaf,
                            // The deprecated name of KeyPartitioned, or a requirement
                            // this rule does not know: leave the join to DataFusion.
                            Some(_) => Arc::clone(child),
                        });
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
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "kura_push_colocated_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The joins that may run on the shards.
#[derive(Clone, Copy)]
enum JoinKind {
    Inner,
    /// A semi or anti join keeping the rows of one side: `EXISTS` or `NOT EXISTS`.
    Filtering(JoinSide, &'static str),
    /// A left or right outer join, preserving the given side.
    Outer(JoinSide),
    Full,
}

impl JoinKind {
    /// Whether rows of `side` come out whether or not they match.
    fn keeps_unmatched(self, side: JoinSide) -> bool {
        match self {
            JoinKind::Inner => false,
            JoinKind::Filtering(kept, _) | JoinKind::Outer(kept) => kept == side,
            JoinKind::Full => true,
        }
    }

    /// Whether `side`'s columns are NULL in rows of the other side that matched nothing.
    fn pads_with_nulls(self, side: JoinSide) -> bool {
        match self {
            JoinKind::Outer(kept) => kept != side,
            JoinKind::Full => true,
            JoinKind::Inner | JoinKind::Filtering(..) => false,
        }
    }

    /// The SQL join of two derived tables (not for semi and anti joins).
    fn sql_join(self) -> &'static str {
        match self {
            JoinKind::Outer(JoinSide::Left) => "LEFT JOIN",
            JoinKind::Outer(_) => "RIGHT JOIN",
            JoinKind::Full => "FULL JOIN",
            JoinKind::Inner | JoinKind::Filtering(..) => "JOIN",
        }
    }
}

/// The leaf joining `join`'s sides on the shards, when it gives the same rows.
fn pushed(join: &HashJoinExec) -> DistResult<Option<KuraShardScanExec>> {
    let kind = match *join.join_type() {
        JoinType::Inner => JoinKind::Inner,
        JoinType::LeftSemi => JoinKind::Filtering(JoinSide::Left, "EXISTS"),
        JoinType::LeftAnti => JoinKind::Filtering(JoinSide::Left, "NOT EXISTS"),
        JoinType::RightSemi => JoinKind::Filtering(JoinSide::Right, "EXISTS"),
        JoinType::RightAnti => JoinKind::Filtering(JoinSide::Right, "NOT EXISTS"),
        JoinType::Left => JoinKind::Outer(JoinSide::Left),
        JoinType::Right => JoinKind::Outer(JoinSide::Right),
        JoinType::Full => JoinKind::Full,
        _ => return Ok(None),
    };
    if join.null_aware || join.null_equality() != NullEquality::NullEqualsNothing {
        return Ok(None);
    }
    let (Some(left), Some(right)) = (side(join.left(), "l"), side(join.right(), "r")) else {
        return Ok(None);
    };
    let (lschema, rschema) = (join.left().schema(), join.right().schema());
    let mut on = Vec::new();
    for (l, r) in join.on() {
        let (Some(l), Some(r)) = (
            to_kura_sql(l, &left.columns, &lschema),
            to_kura_sql(r, &right.columns, &rschema),
        ) else {
            return Ok(None);
        };
        on.push((l, r));
    }
    // Where the joined rows live, if every shard can answer for its own.
    let placement = match (&left.placement, &right.placement) {
        (SidePlacement::Replicated, SidePlacement::Replicated) => SidePlacement::Replicated,
        (
            SidePlacement::Split {
                partitioning: lp,
                keys: lk,
            },
            SidePlacement::Split {
                partitioning: rp,
                keys: rk,
            },
        ) if lp == rp && on.iter().any(|(l, r)| lk.contains(l) && rk.contains(r)) => {
            // The key columns of a side whose rows may come out without a match are NULL
            // there: only the other side's still say where a row lives.
            let mut keys = Vec::new();
            if !kind.pads_with_nulls(JoinSide::Left) {
                keys.extend(lk.iter().cloned());
            }
            if !kind.pads_with_nulls(JoinSide::Right) {
                keys.extend(rk.iter().cloned());
            }
            SidePlacement::Split {
                partitioning: lp.clone(),
                keys,
            }
        }
        // A split side against a replicated one: each shard joins its slice with all of the
        // other — except where the replicated side's rows come out whether or not they
        // match (kept by a semi or anti join, preserved by an outer join): every shard
        // would give them once.
        (split @ SidePlacement::Split { .. }, SidePlacement::Replicated)
            if !kind.keeps_unmatched(JoinSide::Right) =>
        {
            split.clone()
        }
        (SidePlacement::Replicated, split @ SidePlacement::Split { .. })
            if !kind.keeps_unmatched(JoinSide::Left) =>
        {
            split.clone()
        }
        _ => return Ok(None),
    };
    // The filter over its intermediate columns, each taken from one side.
    let filter = match join.filter() {
        None => None,
        Some(f) => {
            let inputs: Option<Vec<String>> = f
                .column_indices()
                .iter()
                .map(|c| match c.side {
                    JoinSide::Left => left.columns.get(c.index).cloned(),
                    JoinSide::Right => right.columns.get(c.index).cloned(),
                    JoinSide::None => None,
                })
                .collect();
            let Some(inputs) = inputs else {
                return Ok(None);
            };
            match to_kura_sql(f.expression(), &inputs, f.schema()) {
                Some(sql) => Some(sql),
                None => return Ok(None),
            }
        }
    };
    let mut conditions: Vec<String> = on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
    conditions.extend(filter);
    let (lsql, rsql) = (
        left.leaf.fragment().sql().unwrap_or_default(),
        right.leaf.fragment().sql().unwrap_or_default(),
    );
    // The join's columns before its own projection, and the FROM clause.
    let (columns, from) = match kind {
        JoinKind::Filtering(kept, exists) => {
            let (kept_side, kept_sql, other_sql, other_alias, kept_alias) = match kept {
                JoinSide::Left => (&left, &lsql, &rsql, "r", "l"),
                _ => (&right, &rsql, &lsql, "l", "r"),
            };
            (
                kept_side.columns.clone(),
                format!(
                    "({kept_sql}) AS \"{kept_alias}\" WHERE {exists} (SELECT 1 FROM ({other_sql}) AS \"{other_alias}\" WHERE {})",
                    conditions.join(" AND ")
                ),
            )
        }
        _ => {
            let mut all = left.columns.clone();
            all.extend(right.columns.iter().cloned());
            (
                all,
                format!(
                    "({lsql}) AS \"l\" {} ({rsql}) AS \"r\" ON {}",
                    kind.sql_join(),
                    conditions.join(" AND ")
                ),
            )
        }
    };
    let columns: Vec<String> = match &join.projection {
        Some(p) => p.iter().map(|&i| columns[i].clone()).collect(),
        None => columns,
    };
    let schema = join.schema();
    if columns.len() != schema.fields().len() {
        return Ok(None);
    }
    let select: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} AS \"c{i}\""))
        .collect();
    let key = match &placement {
        SidePlacement::Split { partitioning, keys } => {
            let at: Vec<usize> = columns
                .iter()
                .enumerate()
                .filter(|(_, c)| keys.contains(c))
                .map(|(i, _)| i)
                .collect();
            (!at.is_empty()).then(|| (partitioning.clone(), at))
        }
        _ => None,
    };
    let mut tables = tables_of(left.leaf.fragment());
    tables.extend(tables_of(right.leaf.fragment()));
    let fields = OutputField::of_schema(&schema);
    let fragment = Fragment {
        kind: FragmentKind::Query {
            sql: format!("SELECT {} FROM {from}", select.join(", ")),
            tables,
            replicated: matches!(placement, SidePlacement::Replicated),
            key,
            fields,
        },
        columns: Vec::new(),
        shards: left.leaf.fragment().shards,
    };
    let leaf = KuraShardScanExec::try_new(Arc::new(fragment), None, None)?;
    if leaf.schema().fields() != schema.fields() {
        return Ok(None);
    }
    Ok(Some(leaf))
}
