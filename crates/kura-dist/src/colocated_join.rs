//! Joins run on the shards (paper 003 §2, phase 2 of the shared-nothing configuration): a
//! DataFusion hash join of two kura shard leaves becomes one leaf whose fragment joins them
//! in kura, when every shard can answer for its own rows —
//! both tables split by the join key in the same partitioning (ORDERS and LINEITEM by order
//! key), or one side replicated on every shard (NATION, SUPPLIER). The join's rows then never
//! cross the network; a further join or a partial aggregation
//! ([`crate::partial_agg`]) may build on the new leaf.
//!
//! Inner, semi, anti and outer hash joins on equal keys (NULL matching nothing), with a join
//! filter kura can evaluate ([`crate::physical_sql`]); the sides reached through projections
//! and repartitions ([`crate::join_side`]). On a cluster of one shard every join of its
//! leaves qualifies. [`crate::push_rule`] is the optimizer rule that applies it.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::DistResult;
use crate::exec::KuraShardScanExec;
use crate::join_side::{query_leaf, side, tables_of, SidePlacement};
use crate::physical_sql::to_kura_sql;

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

/// What a join is, whichever DataFusion operator runs it.
struct JoinParts<'a> {
    join_type: JoinType,
    left: &'a Arc<dyn ExecutionPlan>,
    right: &'a Arc<dyn ExecutionPlan>,
    /// Equal keys (none for a nested-loop join).
    on: Vec<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)>,
    filter: Option<&'a JoinFilter>,
    projection: Option<&'a [usize]>,
    schema: SchemaRef,
}

/// The leaf joining a hash join's sides on the shards, when it gives the same rows.
pub(crate) fn pushed(join: &HashJoinExec) -> DistResult<Option<KuraShardScanExec>> {
    if join.null_aware || join.null_equality() != NullEquality::NullEqualsNothing {
        return Ok(None);
    }
    pushed_join(JoinParts {
        join_type: *join.join_type(),
        left: join.left(),
        right: join.right(),
        on: join.on().to_vec(),
        filter: join.filter(),
        projection: join.projection.as_deref(),
        schema: join.schema(),
    })
}

/// The leaf joining a nested-loop join's sides on the shards (a join on a condition other
/// than equal keys, or a cross join with a one-row aggregate: TPC-H Q22), when one side is
/// replicated.
pub(crate) fn pushed_nested_loop(
    join: &NestedLoopJoinExec,
) -> DistResult<Option<KuraShardScanExec>> {
    pushed_join(JoinParts {
        join_type: *join.join_type(),
        left: join.left(),
        right: join.right(),
        on: Vec::new(),
        filter: join.filter(),
        projection: join.projection().as_deref(),
        schema: join.schema(),
    })
}

fn pushed_join(join: JoinParts) -> DistResult<Option<KuraShardScanExec>> {
    let kind = match join.join_type {
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
    let (Some(left), Some(right)) = (side(join.left, "l"), side(join.right, "r")) else {
        return Ok(None);
    };
    let (lschema, rschema) = (join.left.schema(), join.right.schema());
    let mut on = Vec::new();
    for (l, r) in &join.on {
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
    let filter = match join.filter {
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
    // A join without a condition: only the cross product of an inner join.
    if conditions.is_empty() {
        if !matches!(kind, JoinKind::Inner) {
            return Ok(None);
        }
        conditions.push("TRUE".to_string());
    }
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
    let columns: Vec<String> = match join.projection {
        Some(p) => p.iter().map(|&i| columns[i].clone()).collect(),
        None => columns,
    };
    let mut tables = tables_of(left.leaf.fragment());
    tables.extend(tables_of(right.leaf.fragment()));
    query_leaf(
        &columns,
        &from,
        tables,
        &placement,
        &join.schema,
        left.leaf.fragment().shards,
    )
}
