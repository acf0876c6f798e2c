//! Eager aggregation (Yan and Larson, VLDB 1995): a grouped aggregation over inner
//! joins is computed in two steps when that moves fewer bytes. The inputs that
//! hold the aggregates' arguments are joined and aggregated first, grouped by the
//! columns the rest of the query still needs (its join keys and group keys);
//! the other inputs — dimensions whose columns are only grouped on — are joined
//! to the few partial groups, and a final aggregation combines them.
//!
//! TPC-H Q10 groups 115,000 joined rows by seven customer columns, most of them
//! long text: every row carried ~200 bytes of customer data through the join and
//! was hashed on them. Pre-aggregated by `o_custkey`, 38,000 groups meet the
//! customer table instead.
//!
//! The rewrite is exact for SUM, COUNT, MIN and MAX (not DISTINCT, not AVG):
//! every joined row `(r, d)` of a final group lies in exactly one partial group
//! of `r` — the partial group's keys include every column of `r` that the join
//! with `d` or the final grouping reads — so combining the partials that meet
//! `d` (a sum of sums, of counts, a min of mins) gives the value over those
//! rows. A partial group meets each `d` it met before, duplicates included.
//! Grand totals (no GROUP BY) are left alone: over no rows COUNT must give 0,
//! where a sum of no partial counts is NULL.

use std::collections::{HashMap, HashSet};

use kura_exec::expr::PhysExpr;
use kura_exec::{AggCall, AggFunc};

use super::cardinality::Estimate;
use super::estimate::estimate;
use super::join_order::order_region;
use super::pushdown::{flatten, substitute};
use crate::logical::{col, map_columns, refs_of, ColId, Columns, Logical};

/// The partial groups must be at most this fraction of the rows they aggregate.
const MAX_GROUP_FRACTION: f64 = 0.5;
/// Joining the other inputs must keep at least this fraction of the aggregated
/// side's rows: a selective dimension join is better done first, as the join
/// order already does, than after an aggregation of rows it would drop.
const MIN_KEPT_FRACTION: f64 = 0.5;
/// Regions larger than this are left as they are: each of up to 2^n candidate
/// splits orders its inputs again, so the search grows about as 4^n (a chain of
/// eight joins costs 1 ms of planning, one of ten 6 ms).
const MAX_RELS: usize = 8;

/// Applies eager aggregation wherever it pays, bottom up.
pub fn apply(plan: Logical, cols: &mut Columns) -> Logical {
    let plan = plan.map_children(&mut |c| apply(c, cols));
    match plan {
        Logical::Aggregate { input, group, aggs } if !group.is_empty() => {
            match rewrite(&input, &group, &aggs, cols) {
                Some(p) => p,
                None => Logical::Aggregate { input, group, aggs },
            }
        }
        p => p,
    }
}

/// One way to split the region: the inputs aggregated first (`r`, a bit set).
struct Split {
    r: u32,
    groups: f64,
    plan: Logical,
    keys: Vec<PhysExpr>,
}

fn rewrite(
    input: &Logical,
    group: &[(PhysExpr, ColId)],
    aggs: &[(AggCall, ColId)],
    cols: &mut Columns,
) -> Option<Logical> {
    if aggs.iter().any(|(a, _)| a.distinct || !a.func.splits()) {
        return None;
    }
    // A projection between the aggregation and the joins is folded into the
    // aggregation's expressions.
    let (region, group, aggs): (&Logical, Vec<_>, Vec<_>) = match input {
        Logical::Project { input, exprs } => (
            input,
            group
                .iter()
                .map(|(g, id)| (substitute(g, exprs), *id))
                .collect(),
            aggs.iter()
                .map(|(a, id)| {
                    let mut a = a.clone();
                    a.arg = a.arg.map(|x| substitute(&x, exprs));
                    (a, *id)
                })
                .collect(),
        ),
        other => (other, group.to_vec(), aggs.to_vec()),
    };
    if !matches!(
        region,
        Logical::Join {
            join_type: kura_exec::JoinType::Inner,
            mark: None,
            ..
        } | Logical::Filter { .. }
    ) {
        return None;
    }
    let (mut rels, mut preds) = (Vec::new(), Vec::new());
    flatten(region.clone(), &mut rels, &mut preds);
    let n = rels.len();
    if !(2..=MAX_RELS).contains(&n) {
        return None;
    }
    let ids: Vec<HashSet<ColId>> = rels
        .iter()
        .map(|r| r.output().into_iter().collect())
        .collect();
    let mask_of = |e: &PhysExpr| -> Option<u32> {
        let mut m = 0u32;
        for c in refs_of(e) {
            m |= 1 << ids.iter().position(|s| s.contains(&c))?;
        }
        Some(m)
    };
    let mut needed = 0u32;
    for (a, _) in &aggs {
        if let Some(x) = &a.arg {
            needed |= mask_of(x)?;
        }
    }
    for (g, _) in &group {
        mask_of(g)?;
    }
    let pred_masks: Vec<u32> = preds.iter().map(mask_of).collect::<Option<_>>()?;
    let all_rows = estimate(region).rows;
    let leaves: Vec<Estimate> = rels.iter().map(estimate).collect();

    let full = (1u32 << n) - 1;
    let mut best: Option<Split> = None;
    for r in 1..full {
        if r & needed != needed || !connected(r, &pred_masks) {
            continue;
        }
        let r_ids: HashSet<ColId> = (0..n)
            .filter(|i| r & (1 << i) != 0)
            .flat_map(|i| ids[i].iter().copied())
            .collect();
        let keys = partial_keys(&group, &preds, &pred_masks, r, &r_ids);
        let r_rels: Vec<Logical> = (0..n)
            .filter(|i| r & (1 << i) != 0)
            .map(|i| rels[i].clone())
            .collect();
        let r_preds: Vec<PhysExpr> = preds
            .iter()
            .zip(&pred_masks)
            .filter(|(_, m)| **m & r == **m)
            .map(|(p, _)| p.clone())
            .collect();
        let plan = order_region(r_rels, r_preds);
        let rows = estimate(&plan).rows;
        let groups = group_count(&keys, &ids, &leaves).min(rows);
        if groups > MAX_GROUP_FRACTION * rows || all_rows < MIN_KEPT_FRACTION * rows {
            continue;
        }
        // Fewest partial groups; among near-equal ones, the fewest inputs
        // aggregated first (more of the wide dimension data joined late).
        let better = best.as_ref().is_none_or(|b| {
            groups < 0.99 * b.groups
                || (groups <= 1.01 * b.groups && r.count_ones() < b.r.count_ones())
        });
        if better {
            best = Some(Split {
                r,
                groups,
                plan,
                keys,
            });
        }
    }
    let split = best?;
    Some(build(split, rels, preds, &pred_masks, group, aggs, cols))
}

/// Whether the inputs in `r` are connected by the predicates within `r`.
fn connected(r: u32, pred_masks: &[u32]) -> bool {
    let mut reached = r & r.wrapping_neg();
    loop {
        let mut next = reached;
        for &m in pred_masks {
            if m & r == m && m & next != 0 {
                next |= m;
            }
        }
        if next == reached {
            return reached == r;
        }
        reached = next;
    }
}

/// What the partial aggregation groups by: each final group expression over the
/// aggregated side alone, and every column of that side read by the rest (mixed
/// group expressions, predicates joining the other inputs).
fn partial_keys(
    group: &[(PhysExpr, ColId)],
    preds: &[PhysExpr],
    pred_masks: &[u32],
    r: u32,
    r_ids: &HashSet<ColId>,
) -> Vec<PhysExpr> {
    let mut keys: Vec<PhysExpr> = Vec::new();
    let mut add = |e: PhysExpr| {
        if !keys.contains(&e) {
            keys.push(e);
        }
    };
    let columns_of = |e: &PhysExpr, add: &mut dyn FnMut(PhysExpr)| {
        let mut refs: Vec<ColId> = refs_of(e)
            .into_iter()
            .filter(|c| r_ids.contains(c))
            .collect();
        refs.sort_unstable();
        for c in refs {
            add(column_expr(e, c));
        }
    };
    for (g, _) in group {
        if refs_of(g).iter().all(|c| r_ids.contains(c)) {
            add(g.clone());
        } else {
            columns_of(g, &mut add);
        }
    }
    for (p, m) in preds.iter().zip(pred_masks) {
        if m & r != *m {
            columns_of(p, &mut add);
        }
    }
    keys
}

/// The column reference to `c` inside `e` (it carries the column's type).
fn column_expr(e: &PhysExpr, c: ColId) -> PhysExpr {
    let mut found = None;
    map_columns(e, &mut |id, ty| {
        if id == c {
            found = Some(col(id, ty));
        }
        col(id, ty)
    });
    found.expect("the column occurs in the expression")
}

/// Estimated distinct combinations of `keys`: the product of their columns'
/// distinct counts, each reduced for the filters on its input — `d` values
/// spread over `N` rows, of which `n` are kept, leave `d·(1 − (1 − n/N)^(N/d))`
/// (Cardenas' formula): ten percent of the orders cover far fewer than ten
/// percent of the customers only when each customer has few orders.
fn group_count(keys: &[PhysExpr], ids: &[HashSet<ColId>], leaves: &[Estimate]) -> f64 {
    let mut columns: HashSet<ColId> = HashSet::new();
    for k in keys {
        columns.extend(refs_of(k));
    }
    let mut product = 1.0f64;
    for c in columns {
        let Some(i) = ids.iter().position(|s| s.contains(&c)) else {
            continue;
        };
        let leaf = &leaves[i];
        let d = leaf.ndv.get(&c).copied().unwrap_or(leaf.rows).max(1.0);
        let kept = match leaf.base.get(&c) {
            Some(&base) if base > 0.0 => {
                let d = d.min(base);
                let s = (leaf.rows / base).clamp(0.0, 1.0);
                d * (1.0 - (1.0 - s).powf(base / d))
            }
            _ => d.min(leaf.rows),
        };
        product *= kept.max(1.0);
    }
    product
}

/// The rewritten plan: final aggregation over (partial aggregation ⋈ the rest).
fn build(
    split: Split,
    rels: Vec<Logical>,
    preds: Vec<PhysExpr>,
    pred_masks: &[u32],
    group: Vec<(PhysExpr, ColId)>,
    aggs: Vec<(AggCall, ColId)>,
    cols: &mut Columns,
) -> Logical {
    let Split { r, plan, keys, .. } = split;
    // Partial group keys get fresh ids; plain columns are renamed through them.
    let keyed: Vec<(PhysExpr, ColId)> = keys
        .into_iter()
        .map(|k| {
            let name = match &k {
                PhysExpr::Column { index, .. } => cols.name(*index).to_string(),
                _ => "partial key".to_string(),
            };
            let id = cols.add(&name, k.data_type());
            (k, id)
        })
        .collect();
    let renamed: HashMap<ColId, ColId> = keyed
        .iter()
        .filter_map(|(k, id)| match k {
            PhysExpr::Column { index, .. } => Some((*index, *id)),
            _ => None,
        })
        .collect();
    let rename = |e: &PhysExpr| {
        map_columns(e, &mut |c, ty| {
            col(renamed.get(&c).copied().unwrap_or(c), ty)
        })
    };
    let mut partials = Vec::new();
    let mut finals = Vec::new();
    for (a, id) in aggs {
        let pid = cols.add(cols.name(id).to_string().as_str(), a.data_type);
        let over = col(pid, a.data_type);
        let func = match a.func {
            AggFunc::Min => AggFunc::Min,
            AggFunc::Max => AggFunc::Max,
            _ => AggFunc::Sum,
        };
        finals.push((AggCall::simple(func, Some(over), a.data_type), id));
        partials.push((a, pid));
    }
    let final_group = group
        .into_iter()
        .map(|(g, id)| match keyed.iter().find(|(k, _)| *k == g) {
            Some((k, kid)) => (col(*kid, k.data_type()), id),
            None => (rename(&g), id),
        })
        .collect();
    let partial = Logical::Aggregate {
        input: Box::new(plan),
        group: keyed,
        aggs: partials,
    };
    let mut top = vec![partial];
    top.extend(
        rels.into_iter()
            .enumerate()
            .filter(|(i, _)| r & (1 << i) == 0)
            .map(|(_, rel)| rel),
    );
    let top_preds = preds
        .iter()
        .zip(pred_masks)
        .filter(|(_, m)| **m & r != **m)
        .map(|(p, _)| rename(p))
        .collect();
    Logical::Aggregate {
        input: Box::new(order_region(top, top_preds)),
        group: final_group,
        aggs: finals,
    }
}
