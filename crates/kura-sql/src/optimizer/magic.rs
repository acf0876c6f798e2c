//! Magic-set restriction of build sides: a decorrelated aggregate (or the build side of a semi/anti join) joined to a selective outer input is computed over the keys that input can produce.
//!
//! Decorrelation turns `x < (SELECT avg(y) FROM t WHERE t.k = outer.k)` into a
//! join with `SELECT k, avg(y) FROM t GROUP BY k`, which aggregates every key
//! even when the outer side keeps a handful (TPC-H Q17, Q20, Q2). Only groups whose
//! key matches an outer row can ever be joined, so the aggregate's input may be
//! semi-joined with a cheap superset of the outer keys — the filtered relation of
//! the outer side that produces them — without changing any surviving group: the
//! restriction depends on the group key alone, and a NULL key (never equal to
//! anything) is dropped by the semi-join exactly as the outer join would miss it.
//! For EXISTS / NOT EXISTS the same holds of any build side: only whether a
//! partner exists matters, so build rows no probe row can meet are dropped
//! before they are hashed (TPC-H Q4, Q21, Q22).

use std::collections::HashSet;

use kura_common::DataType;
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::JoinType;

use super::estimate::{builds_left_side, estimate};
use crate::logical::{refs_of, ColId, Logical};

/// How many times fewer keys the outer side must promise than the aggregate has
/// groups before the extra semi-join (and the recomputed outer relation) pays off.
const MIN_REDUCTION: f64 = 4.0;

/// Applies the restriction at every join of `plan` whose build side is a grouped
/// aggregate correlated on its keys, or a semi/anti join's build side; with
/// `right_joins` the planner may build the preserved side instead (see
/// [`builds_left_side`]).
pub fn restrict(plan: Logical, right_joins: bool) -> Logical {
    let plan = plan.map_children(&mut |p| restrict(p, right_joins));
    match plan {
        Logical::Join {
            join_type,
            left,
            right,
            on,
            mark,
        } if matches!(
            join_type,
            JoinType::Single | JoinType::Left | JoinType::Semi | JoinType::Anti
        ) =>
        {
            // Which rows of `right` a probe row can meet depends only on `on`; for
            // these join types unmatched build rows never reach the output, so
            // dropping build rows that match no probe row changes nothing.
            // (Mark and NullAwareAnti are excluded: a NULL anywhere in the build
            // side changes their answers.)
            let outer_built = right_joins && mark.is_none() && builds_left_side(&left, &right);
            let right = restrict_build(join_type, &left, *right, &on, outer_built);
            Logical::Join {
                join_type,
                left,
                right: Box::new(right),
                on,
                mark,
            }
        }
        p => p,
    }
}

/// Equalities `right column = expression over left` of a join condition.
fn key_pairs(
    on: &[PhysExpr],
    lids: &HashSet<ColId>,
    rids: &HashSet<ColId>,
) -> Vec<(PhysExpr, PhysExpr)> {
    let mut out = Vec::new();
    for p in on {
        let PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } = p
        else {
            continue;
        };
        for (r, l) in [(left, right), (right, left)] {
            if let PhysExpr::Column { index, .. } = **r {
                let lr = refs_of(l);
                if rids.contains(&index) && !lr.is_empty() && lr.iter().all(|c| lids.contains(c)) {
                    out.push(((**r).clone(), (**l).clone()));
                    break;
                }
            }
        }
    }
    out
}

/// Rewrites column references through `defs` (an operator's output definitions).
fn through(e: &PhysExpr, defs: &[(PhysExpr, ColId)]) -> Option<PhysExpr> {
    let mut ok = true;
    let out = crate::logical::map_columns(e, &mut |id, ty| match defs.iter().find(|d| d.1 == id) {
        Some((x, _)) => x.clone(),
        None => {
            ok = false;
            PhysExpr::Column {
                index: id,
                data_type: ty,
            }
        }
    });
    ok.then_some(out)
}

/// Follows `keys` (expressions over `plan`'s output) down through projections and
/// filters to a grouped aggregate; returns the keys as expressions over the
/// aggregate's input and the aggregate's estimated group count.
fn find_aggregate(plan: &Logical, keys: &[PhysExpr]) -> Option<(Vec<PhysExpr>, f64)> {
    match plan {
        Logical::Filter { input, .. } => find_aggregate(input, keys),
        Logical::Project { input, exprs } => {
            let keys = keys
                .iter()
                .map(|k| through(k, exprs))
                .collect::<Option<Vec<_>>>()?;
            find_aggregate(input, &keys)
        }
        Logical::Aggregate { group, .. } if !group.is_empty() => {
            let keys = keys
                .iter()
                .map(|k| through(k, group))
                .collect::<Option<Vec<_>>>()?;
            Some((keys, estimate(plan).rows))
        }
        _ => None,
    }
}

/// Whether a subtree is cheap enough to compute twice: scans, filters, projections
/// and inner joins, and semi/anti joins with a join-free build side (TPC-H Q20's
/// `IN (part …)`). Not one holding another restricted semi-join (Q21's two
/// EXISTS), which would be recomputed with its whole build side again.
fn cheap(p: &Logical) -> bool {
    fn join_free(p: &Logical) -> bool {
        match p {
            Logical::Scan { .. } | Logical::Values { .. } => true,
            Logical::Filter { input, .. } | Logical::Project { input, .. } => join_free(input),
            _ => false,
        }
    }
    match p {
        Logical::Scan { .. } | Logical::Values { .. } => true,
        Logical::Filter { input, .. } | Logical::Project { input, .. } => cheap(input),
        Logical::Join {
            join_type: JoinType::Inner,
            left,
            right,
            ..
        } => cheap(left) && cheap(right),
        Logical::Join {
            join_type: JoinType::Semi | JoinType::Anti,
            left,
            right,
            ..
        } => cheap(left) && join_free(right),
        _ => false,
    }
}

/// The subtrees of `plan` that output every column of `need`, from `plan` down.
fn chain<'a>(plan: &'a Logical, need: &HashSet<ColId>, out: &mut Vec<&'a Logical>) {
    if cheap(plan) {
        out.push(plan);
    }
    let has = |p: &Logical| {
        let o: HashSet<ColId> = p.output().into_iter().collect();
        need.iter().all(|c| o.contains(c))
    };
    match plan {
        Logical::Filter { input, .. } => chain(input, need, out),
        Logical::Project { input, exprs } => {
            let identity = need.iter().all(|c| {
                exprs.iter().any(|(e, id)| {
                    id == c && matches!(e, PhysExpr::Column { index, .. } if index == c)
                })
            });
            if identity && has(input) {
                chain(input, need, out);
            }
        }
        Logical::Join {
            join_type,
            left,
            right,
            ..
        } => {
            if has(left) {
                chain(left, need, out);
            } else if join_type.emits_build_columns() && has(right) {
                chain(right, need, out);
            }
        }
        _ => {}
    }
}

/// The restricted build side, or `right` unchanged when no restriction pays off;
/// `outer_built`: the planner will build `left` and probe with `right`.
fn restrict_build(
    join_type: JoinType,
    left: &Logical,
    right: Logical,
    on: &[PhysExpr],
    outer_built: bool,
) -> Logical {
    let lids: HashSet<ColId> = left.output().into_iter().collect();
    let rids: HashSet<ColId> = right.output().into_iter().collect();
    let pairs = key_pairs(on, &lids, &rids);
    if pairs.is_empty() {
        return right;
    }
    let rkeys: Vec<PhysExpr> = pairs.iter().map(|p| p.0.clone()).collect();
    let (inner_keys, groups, grouped) = match find_aggregate(&right, &rkeys) {
        Some((k, g)) => (k, g, true),
        // A semi/anti join asks only whether a partner exists: any build side may
        // shrink to the rows that can be partners (a large lineitem side hashed
        // whole otherwise). Not when the planner builds the outer side instead
        // (RIGHT SEMI / RIGHT ANTI: TPC-H Q4, Q21, Q22): that build's join filter
        // already drops this side's rows without a partner as they are read,
        // where the restriction would compute the outer side a second time.
        None if matches!(join_type, JoinType::Semi | JoinType::Anti) => {
            if outer_built {
                return right;
            }
            (rkeys, estimate(&right).rows, false)
        }
        None => return right,
    };
    let need: HashSet<ColId> = pairs.iter().flat_map(|p| refs_of(&p.1)).collect();
    let mut cands = Vec::new();
    chain(left, &need, &mut cands);
    let rows: Vec<f64> = cands.iter().map(|c| estimate(c).rows).collect();
    let best = rows.iter().copied().fold(f64::INFINITY, f64::min);
    // The deepest candidate about as selective as the best one: cheapest to
    // recompute for nearly the same reduction.
    let Some(i) = (0..cands.len()).rev().find(|&i| rows[i] <= 2.0 * best) else {
        return right;
    };
    if rows[i] * MIN_REDUCTION > groups {
        return right;
    }
    let magic = cands[i].clone();
    let cond: Vec<PhysExpr> = inner_keys
        .into_iter()
        .zip(pairs)
        .map(|(k, (_, outer))| PhysExpr::Binary {
            op: BinaryOp::Eq,
            left: Box::new(k),
            right: Box::new(outer),
            data_type: DataType::Boolean,
        })
        .collect();
    if grouped {
        inject(right, cond, magic)
    } else {
        semi_below(right, cond, magic)
    }
}

/// Puts the semi-join with `magic` under the aggregate found by [`find_aggregate`].
fn inject(plan: Logical, cond: Vec<PhysExpr>, magic: Logical) -> Logical {
    match plan {
        Logical::Filter { input, predicate } => Logical::Filter {
            input: Box::new(inject(*input, cond, magic)),
            predicate,
        },
        Logical::Project { input, exprs } => Logical::Project {
            input: Box::new(inject(*input, cond, magic)),
            exprs,
        },
        Logical::Aggregate { input, group, aggs } => Logical::Aggregate {
            input: Box::new(semi_below(*input, cond, magic)),
            group,
            aggs,
        },
        p => p,
    }
}

/// Places `input ⋉ magic` as deep as the keys allow: a semi-join on one input's
/// columns commutes with inner joins and filters above that input.
fn semi_below(input: Logical, cond: Vec<PhysExpr>, magic: Logical) -> Logical {
    let mids: HashSet<ColId> = magic.output().into_iter().collect();
    let inner_refs: HashSet<ColId> = cond
        .iter()
        .flat_map(refs_of)
        .filter(|c| !mids.contains(c))
        .collect();
    let covers = |p: &Logical| {
        let o: HashSet<ColId> = p.output().into_iter().collect();
        inner_refs.iter().all(|c| o.contains(c))
    };
    match input {
        Logical::Filter {
            input: i,
            predicate,
        } => Logical::Filter {
            input: Box::new(semi_below(*i, cond, magic)),
            predicate,
        },
        Logical::Project { input: i, exprs }
            if covers(&i)
                && inner_refs.iter().all(|c| {
                    exprs.iter().any(|(e, id)| {
                        id == c && matches!(e, PhysExpr::Column { index, .. } if index == c)
                    })
                }) =>
        {
            Logical::Project {
                input: Box::new(semi_below(*i, cond, magic)),
                exprs,
            }
        }
        Logical::Join {
            join_type: JoinType::Inner,
            left,
            right,
            on,
            mark,
        } if covers(&left) || covers(&right) => {
            let (left, right) = if covers(&left) {
                (Box::new(semi_below(*left, cond, magic)), right)
            } else {
                (left, Box::new(semi_below(*right, cond, magic)))
            };
            Logical::Join {
                join_type: JoinType::Inner,
                left,
                right,
                on,
                mark,
            }
        }
        other => Logical::Join {
            join_type: JoinType::Semi,
            left: Box::new(other),
            right: Box::new(magic),
            on: cond,
            mark: None,
        },
    }
}
