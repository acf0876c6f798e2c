//! Unique keys and the aggregations they make needless. A plan's rows are
//! unique on a set of its columns when a table stores that column in
//! increasing order (see `TableSource::unique`), when the columns are an
//! aggregation's groups, or when such a set passes through filters,
//! projections and joins that match each of its rows at most once (an
//! equality on every column of a unique key of the other side). A GROUP BY
//! whose keys hold a unique key of its input has one row per group: it
//! becomes a projection of that row (`sum(x)` is `x`, `count(*)` is 1).
//! TPC-H Q10 after eager aggregation: the customers' partial sums, joined to
//! `customer` by `c_custkey`, were grouped again by seven customer columns
//! (381,000 long text keys at SF 10).

use std::collections::{HashMap, HashSet};

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::{AggCall, AggFunc, JoinType};

use crate::logical::{ColId, Logical};

/// Sets of output columns of `plan` on which its rows are unique (the empty
/// set: at most one row). Not every such set: the ones the rules above find.
pub fn unique_keys(plan: &Logical) -> Vec<Vec<ColId>> {
    match plan {
        Logical::Scan { table, cols, .. } => cols
            .iter()
            .filter(|(c, _)| table.unique(*c))
            .map(|(_, id)| vec![*id])
            .collect(),
        Logical::Filter { input, .. }
        | Logical::Sort { input, .. }
        | Logical::Limit { input, .. }
        | Logical::Window { input, .. } => unique_keys(input),
        Logical::Project { input, exprs } => {
            let mut renamed: HashMap<ColId, ColId> = HashMap::new();
            for (e, out) in exprs {
                if let PhysExpr::Column { index, .. } = e {
                    renamed.entry(*index).or_insert(*out);
                }
            }
            unique_keys(input)
                .into_iter()
                .filter_map(|k| k.iter().map(|c| renamed.get(c).copied()).collect())
                .collect()
        }
        Logical::Aggregate { group, .. } => vec![group.iter().map(|g| g.1).collect()],
        Logical::Join {
            join_type,
            left,
            right,
            on,
            ..
        } => {
            let (lk, rk) = (unique_keys(left), unique_keys(right));
            let pairs = column_equalities(on);
            let lcols: HashSet<ColId> = left.output().into_iter().collect();
            let rcols: HashSet<ColId> = right.output().into_iter().collect();
            // Each row of one side meets at most one of the other when every
            // column of a unique key of the other is equated with its own.
            let at_most_once = |keys: &[Vec<ColId>], other: &HashSet<ColId>| {
                keys.iter().any(|k| {
                    k.iter().all(|c| {
                        pairs.iter().any(|&(a, b)| {
                            (a == *c && other.contains(&b)) || (b == *c && other.contains(&a))
                        })
                    })
                })
            };
            let right_once = at_most_once(&rk, &lcols);
            let left_once = at_most_once(&lk, &rcols);
            match join_type {
                JoinType::Inner => {
                    let mut keys = Vec::new();
                    if right_once {
                        keys.extend(lk);
                    }
                    if left_once {
                        keys.extend(rk);
                    }
                    keys
                }
                JoinType::Left | JoinType::Single if right_once => lk,
                JoinType::Semi
                | JoinType::Anti
                | JoinType::NullAwareAnti
                | JoinType::Mark
                | JoinType::NullAwareMark => lk,
                JoinType::RightSemi | JoinType::RightAnti => rk,
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// The `a = b` pairs of column ids among a conjunction's terms.
fn column_equalities(on: &[PhysExpr]) -> Vec<(ColId, ColId)> {
    on.iter()
        .filter_map(|p| match p {
            PhysExpr::Binary {
                op: BinaryOp::Eq,
                left,
                right,
                ..
            } => match (left.as_ref(), right.as_ref()) {
                (PhysExpr::Column { index: a, .. }, PhysExpr::Column { index: b, .. }) => {
                    Some((*a, *b))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// What an aggregate call gives over a group of one row, as an expression of
/// that row; `None` for the calls this does not rewrite.
fn one_row_value(call: &AggCall) -> Option<PhysExpr> {
    if !call.extra.is_empty() || !call.order.is_empty() {
        return None;
    }
    let as_result = |e: PhysExpr| {
        if e.data_type() == call.data_type {
            e
        } else {
            PhysExpr::Cast {
                expr: Box::new(e),
                to: call.data_type,
            }
        }
    };
    let int = |v: i64| PhysExpr::Literal {
        value: Value::BigInt(v),
        data_type: DataType::BigInt,
    };
    match call.func {
        AggFunc::Sum | AggFunc::Min | AggFunc::Max => Some(as_result(call.arg.clone()?)),
        AggFunc::CountStar => Some(as_result(int(1))),
        AggFunc::Count => Some(as_result(PhysExpr::Case {
            whens: vec![(
                PhysExpr::IsNull {
                    expr: Box::new(call.arg.clone()?),
                    negated: false,
                },
                int(0),
            )],
            otherwise: Some(Box::new(int(1))),
            data_type: DataType::BigInt,
        })),
        _ => None,
    }
}

/// Turns every aggregation whose groups are single rows into a projection
/// (see the module documentation).
pub fn eliminate_aggregates(plan: Logical) -> Logical {
    let plan = plan.map_children(&mut eliminate_aggregates);
    let Logical::Aggregate { input, group, aggs } = plan else {
        return plan;
    };
    let keys: HashSet<ColId> = group
        .iter()
        .filter_map(|(e, _)| match e {
            PhysExpr::Column { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    // A grand total (no GROUP BY) has a row even over no input: kept.
    let single_rows = !group.is_empty()
        && unique_keys(&input)
            .iter()
            .any(|k| k.iter().all(|c| keys.contains(c)));
    let values: Option<Vec<(PhysExpr, ColId)>> = single_rows
        .then(|| {
            aggs.iter()
                .map(|(call, id)| one_row_value(call).map(|e| (e, *id)))
                .collect()
        })
        .flatten();
    match values {
        Some(values) => Logical::Project {
            input,
            exprs: group.into_iter().chain(values).collect(),
        },
        None => Logical::Aggregate { input, group, aggs },
    }
}
