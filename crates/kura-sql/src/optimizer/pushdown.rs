//! Predicate push-down: every conjunct moves to the lowest operator whose output
//! covers its columns — into scans (where it also drives zone-map page skipping),
//! below projections and aggregations (rewritten through their expressions), into
//! the preserved side of outer/semi/anti joins — and regions of inner joins are
//! handed to the join orderer with their predicates.

use std::collections::HashSet;

use kura_common::DataType;
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::JoinType;

use super::estimate::{covered, estimate};
use super::join_order::order_region;
use crate::logical::{col, conjunction, conjuncts, map_columns, ColId, Columns, Logical};

/// Optimizes a plan (push-down and join ordering, then magic-set restriction);
/// `right_joins`: whether the planner may build a semi/anti join's preserved side
/// (`SET enable_right_join`), which makes the restriction of the other redundant.
pub fn optimize(plan: Logical, cols: &Columns, right_joins: bool) -> Logical {
    super::magic::restrict(push(plan, Vec::new(), cols), right_joins)
}

fn filter(plan: Logical, preds: Vec<PhysExpr>) -> Logical {
    match conjunction(preds) {
        Some(p) => Logical::Filter {
            input: Box::new(plan),
            predicate: p,
        },
        None => plan,
    }
}

fn disjuncts(e: &PhysExpr, out: &mut Vec<PhysExpr>) {
    match e {
        PhysExpr::Binary {
            op: BinaryOp::Or,
            left,
            right,
            ..
        } => {
            disjuncts(left, out);
            disjuncts(right, out);
        }
        e => out.push(e.clone()),
    }
}

fn or(a: PhysExpr, b: PhysExpr) -> PhysExpr {
    PhysExpr::Binary {
        op: BinaryOp::Or,
        left: Box::new(a),
        right: Box::new(b),
        data_type: DataType::Boolean,
    }
}

/// `(A ∧ B) ∨ (A ∧ C)` → `A ∧ (B ∨ C)`: conjuncts common to every disjunct are
/// factored out so they can become join keys or scan filters.
pub fn factor_or(e: PhysExpr) -> Vec<PhysExpr> {
    let mut ds = Vec::new();
    disjuncts(&e, &mut ds);
    if ds.len() < 2 {
        return vec![e];
    }
    let parts: Vec<Vec<PhysExpr>> = ds
        .iter()
        .map(|d| {
            let mut v = Vec::new();
            conjuncts(d.clone(), &mut v);
            v
        })
        .collect();
    let common: Vec<PhysExpr> = parts[0]
        .iter()
        .filter(|c| parts[1..].iter().all(|p| p.contains(c)))
        .cloned()
        .collect();
    if common.is_empty() {
        return vec![e];
    }
    let mut rest: Option<PhysExpr> = None;
    for p in parts {
        let left: Vec<PhysExpr> = p.into_iter().filter(|c| !common.contains(c)).collect();
        let Some(d) = conjunction(left) else {
            // One disjunct is exactly the common part: the OR is implied by it.
            return common;
        };
        rest = Some(match rest {
            None => d,
            Some(r) => or(r, d),
        });
    }
    let mut out = common;
    out.extend(rest);
    out
}

/// From an OR spanning several inputs, a weaker OR over one input's columns alone
/// (each disjunct keeps only its conjuncts over `ids`); `None` if some disjunct has none.
pub fn derive_for(e: &PhysExpr, ids: &HashSet<ColId>) -> Option<PhysExpr> {
    let mut ds = Vec::new();
    disjuncts(e, &mut ds);
    if ds.len() < 2 {
        return None;
    }
    let mut acc: Option<PhysExpr> = None;
    for d in ds {
        let mut cs = Vec::new();
        conjuncts(d, &mut cs);
        let mine: Vec<PhysExpr> = cs.into_iter().filter(|c| covered(c, ids)).collect();
        let part = conjunction(mine)?;
        acc = Some(match acc {
            None => part,
            Some(a) => or(a, part),
        });
    }
    acc
}

fn split_preds(preds: Vec<PhysExpr>) -> Vec<PhysExpr> {
    let mut out = Vec::new();
    for p in preds {
        let mut cs = Vec::new();
        conjuncts(p, &mut cs);
        for c in cs {
            out.extend(factor_or(c));
        }
    }
    out
}

fn push(plan: Logical, preds: Vec<PhysExpr>, cols: &Columns) -> Logical {
    let preds = split_preds(preds);
    match plan {
        Logical::Filter { input, predicate } => {
            let mut all = preds;
            all.push(predicate);
            push(*input, all, cols)
        }
        Logical::Scan {
            table,
            cols,
            mut filters,
        } => {
            filters.extend(preds);
            Logical::Scan {
                table,
                cols,
                filters,
            }
        }
        Logical::Join {
            join_type: JoinType::Inner,
            ..
        } => {
            let mut rels = Vec::new();
            let mut all = preds;
            let mut renames = Vec::new();
            flatten_with(plan, &mut rels, &mut all, Some(&mut renames));
            let all = split_preds(all);
            // Derived single-input filters from ORs spanning inputs.
            let mut extra = Vec::new();
            for p in &all {
                if matches!(
                    p,
                    PhysExpr::Binary {
                        op: BinaryOp::Or,
                        ..
                    }
                ) {
                    for r in &rels {
                        let ids: HashSet<ColId> = r.output().into_iter().collect();
                        if covered(p, &ids) {
                            continue;
                        }
                        if let Some(d) = derive_for(p, &ids) {
                            extra.push(d);
                        }
                    }
                }
            }
            let mut region_preds = Vec::new();
            let mut local: Vec<Vec<PhysExpr>> = vec![Vec::new(); rels.len()];
            for p in all.into_iter().chain(extra) {
                match rels
                    .iter()
                    .position(|r| covered(&p, &r.output().into_iter().collect()))
                {
                    Some(i) => local[i].push(p),
                    None => region_preds.push(p),
                }
            }
            let rels: Vec<Logical> = rels
                .into_iter()
                .zip(local)
                .map(|(r, l)| push(r, l, cols))
                .collect();
            let ordered = order_region(rels, region_preds);
            if renames.is_empty() {
                return ordered;
            }
            // The names the region's derived tables gave their columns, above it.
            let mut exprs: Vec<(PhysExpr, ColId)> = ordered
                .output()
                .into_iter()
                .map(|id| (col(id, cols.ty(id)), id))
                .collect();
            exprs.extend(renames);
            Logical::Project {
                input: Box::new(ordered),
                exprs,
            }
        }
        Logical::Join {
            join_type: JoinType::Semi,
            left,
            right,
            on,
            mark: None,
        } if sinks(&left, &right, &on) => push(sink_semi(*left, *right, on), preds, cols),
        Logical::Join {
            join_type,
            left,
            right,
            on,
            mark,
        } => {
            let lids: HashSet<ColId> = left.output().into_iter().collect();
            let rids: HashSet<ColId> = right.output().into_iter().collect();
            // Both inputs of a FULL join are preserved: no predicate moves into either.
            let full = join_type == JoinType::Full;
            let (down, above): (Vec<_>, Vec<_>) =
                preds.into_iter().partition(|p| !full && covered(p, &lids));
            let mut into_right = Vec::new();
            let mut into_left = Vec::new();
            let mut keep = Vec::new();
            // A null-aware join's conditions stay on it, in order: its IN key compares
            // NULLs of the whole set, so no condition may filter the build side first.
            let null_aware = join_type.null_aware();
            for c in split_preds(on) {
                if null_aware || full {
                    keep.push(c);
                } else if covered(&c, &rids) {
                    into_right.push(c);
                } else if join_type == JoinType::Inner && covered(&c, &lids) {
                    into_left.push(c);
                } else {
                    keep.push(c);
                }
            }
            let mut down = down;
            down.extend(into_left);
            let j = Logical::Join {
                join_type,
                left: Box::new(push(*left, down, cols)),
                right: Box::new(push(*right, into_right, cols)),
                on: keep,
                mark,
            };
            filter(j, above)
        }
        Logical::Project { input, exprs } => {
            let outs: HashSet<ColId> = exprs.iter().map(|e| e.1).collect();
            let (down, above): (Vec<_>, Vec<_>) =
                preds.into_iter().partition(|p| covered(p, &outs));
            let down = down.iter().map(|p| substitute(p, &exprs)).collect();
            filter(
                Logical::Project {
                    input: Box::new(push(*input, down, cols)),
                    exprs,
                },
                above,
            )
        }
        Logical::Aggregate { input, group, aggs } => {
            let keys: HashSet<ColId> = group.iter().map(|g| g.1).collect();
            let (down, above): (Vec<_>, Vec<_>) = preds
                .into_iter()
                .partition(|p| covered(p, &keys) && !group.is_empty());
            let down = down.iter().map(|p| substitute(p, &group)).collect();
            filter(
                Logical::Aggregate {
                    input: Box::new(push(*input, down, cols)),
                    group,
                    aggs,
                },
                above,
            )
        }
        Logical::Sort {
            input,
            keys,
            limit: None,
        } => Logical::Sort {
            input: Box::new(push(*input, preds, cols)),
            keys,
            limit: None,
        },
        Logical::Sort { input, keys, limit } => filter(
            Logical::Sort {
                input: Box::new(push(*input, Vec::new(), cols)),
                keys,
                limit,
            },
            preds,
        ),
        Logical::Limit {
            input,
            offset,
            limit,
        } => filter(
            Logical::Limit {
                input: Box::new(push(*input, Vec::new(), cols)),
                offset,
                limit,
            },
            preds,
        ),
        Logical::Union {
            inputs,
            cols: union_cols,
        } => {
            let inputs = inputs
                .into_iter()
                .map(|(p, ids)| (push(p, Vec::new(), cols), ids))
                .collect();
            filter(
                Logical::Union {
                    inputs,
                    cols: union_cols,
                },
                preds,
            )
        }
        // Filtering commutes with repeating rows.
        Logical::Replicate { input, count } => Logical::Replicate {
            input: Box::new(push(*input, preds, cols)),
            count,
        },
        // A predicate on partition key columns only keeps or drops whole
        // partitions, so it may run below the window (as in PostgreSQL); any other
        // would change the rows a partition holds.
        Logical::Window {
            input,
            partition,
            order,
            funcs,
        } => {
            let keys: HashSet<ColId> = partition
                .iter()
                .filter_map(|e| match e {
                    PhysExpr::Column { index, .. } => Some(*index),
                    _ => None,
                })
                .collect();
            let (down, above): (Vec<_>, Vec<_>) =
                preds.into_iter().partition(|p| covered(p, &keys));
            filter(
                Logical::Window {
                    input: Box::new(push(*input, down, cols)),
                    partition,
                    order,
                    funcs,
                },
                above,
            )
        }
        v @ Logical::Values { .. } => filter(v, preds),
    }
}

/// Whether a semi-join over a region of inner joins should move down onto the
/// input its condition reads: it is a filter of that input's rows, so it commutes
/// with the inner joins above, and when it keeps few rows (TPC-H Q18's `IN` over
/// large orders) the region's joins then see only those. A semi-join that keeps
/// most rows stays on top, where the joins may already have reduced its probe side.
fn sinks(left: &Logical, right: &Logical, on: &[PhysExpr]) -> bool {
    let region = match left {
        Logical::Filter { input, .. } => input.as_ref(),
        l => l,
    };
    let Logical::Join {
        join_type: JoinType::Inner,
        left: l,
        right: r,
        ..
    } = region
    else {
        return false;
    };
    // It must move below at least one join (or push() would come back here).
    let rids: HashSet<ColId> = right.output().into_iter().collect();
    let need: HashSet<ColId> = on
        .iter()
        .flat_map(crate::logical::refs_of)
        .filter(|c| !rids.contains(c))
        .collect();
    let covers = |p: &Logical| {
        let o: HashSet<ColId> = p.output().into_iter().collect();
        need.iter().all(|c| o.contains(c))
    };
    if !covers(l) && !covers(r) {
        return false;
    }
    let f = super::estimate::semi_fraction(&estimate(left), &estimate(right), on);
    f < 0.5
}

/// Puts `left ⋉ right` as deep into `left`'s inner joins and filters as the
/// columns of `on` allow.
fn sink_semi(left: Logical, right: Logical, on: Vec<PhysExpr>) -> Logical {
    let rids: HashSet<ColId> = right.output().into_iter().collect();
    let need: HashSet<ColId> = on
        .iter()
        .flat_map(crate::logical::refs_of)
        .filter(|c| !rids.contains(c))
        .collect();
    let covers = |p: &Logical| {
        let o: HashSet<ColId> = p.output().into_iter().collect();
        need.iter().all(|c| o.contains(c))
    };
    match left {
        Logical::Filter { input, predicate } if covers(&input) => Logical::Filter {
            input: Box::new(sink_semi(*input, right, on)),
            predicate,
        },
        Logical::Join {
            join_type: JoinType::Inner,
            left: l,
            right: r,
            on: on2,
            mark: None,
        } if covers(&l) || covers(&r) => {
            let (l, r) = if covers(&l) {
                (Box::new(sink_semi(*l, right, on)), r)
            } else {
                (l, Box::new(sink_semi(*r, right, on)))
            };
            Logical::Join {
                join_type: JoinType::Inner,
                left: l,
                right: r,
                on: on2,
                mark: None,
            }
        }
        other => Logical::Join {
            join_type: JoinType::Semi,
            left: Box::new(other),
            right: Box::new(right),
            on,
            mark: None,
        },
    }
}

/// Rewrites references to `defs` outputs into their defining expressions.
pub(super) fn substitute(p: &PhysExpr, defs: &[(PhysExpr, ColId)]) -> PhysExpr {
    map_columns(p, &mut |id, ty| match defs.iter().find(|d| d.1 == id) {
        Some((e, _)) => e.clone(),
        None => PhysExpr::Column {
            index: id,
            data_type: ty,
        },
    })
}

/// Collects the inputs and predicates of a tree of inner joins and filters.
pub(super) fn flatten(plan: Logical, rels: &mut Vec<Logical>, preds: &mut Vec<PhysExpr>) {
    flatten_with(plan, rels, preds, None)
}

/// [`flatten`], and — given `renames` — through projections that only name columns (a
/// derived table in FROM, such as the nested joins a cluster's shard runs): its inputs join
/// the region, so the orderer sees every table rather than one fixed join per derived table.
/// The predicates gathered above such a projection are rewritten to its input's columns, and
/// `renames` collects its columns for a projection above the ordered region.
fn flatten_with(
    plan: Logical,
    rels: &mut Vec<Logical>,
    preds: &mut Vec<PhysExpr>,
    mut renames: Option<&mut Vec<(PhysExpr, ColId)>>,
) {
    match plan {
        Logical::Join {
            join_type: JoinType::Inner,
            left,
            right,
            on,
            mark: None,
        } => {
            preds.extend(on);
            flatten_with(*left, rels, preds, renames.as_deref_mut());
            flatten_with(*right, rels, preds, renames);
        }
        Logical::Filter { input, predicate } => {
            preds.push(predicate);
            flatten_with(*input, rels, preds, renames);
        }
        Logical::Project { input, exprs }
            if renames.is_some()
                && exprs
                    .iter()
                    .all(|(e, _)| matches!(e, PhysExpr::Column { .. })) =>
        {
            for p in preds.iter_mut() {
                *p = substitute(p, &exprs);
            }
            if let Some(renames) = renames.as_deref_mut() {
                for r in renames.iter_mut() {
                    r.0 = substitute(&r.0, &exprs);
                }
                renames.extend(exprs);
            }
            flatten_with(*input, rels, preds, renames);
        }
        other => rels.push(other),
    }
}
