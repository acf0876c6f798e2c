//! Join ordering for a region of inner joins: greedy, cardinality-driven. Starting
//! from the cheapest connected pair, repeatedly join the input that keeps the
//! intermediate result smallest; the smaller side of each join becomes its build
//! (right) input. Cross products are taken only when nothing connected remains.

use std::collections::HashSet;

use kura_exec::expr::PhysExpr;
use kura_exec::JoinType;

use super::estimate::{covered, estimate, join_rows, Estimate};
use crate::logical::{conjunction, refs_of, ColId, Logical};

struct Part {
    plan: Logical,
    est: Estimate,
    ids: HashSet<ColId>,
}

fn connected(a: &HashSet<ColId>, b: &HashSet<ColId>, preds: &[PhysExpr]) -> bool {
    preds.iter().any(|p| {
        let r = refs_of(p);
        r.iter().any(|c| a.contains(c)) && r.iter().any(|c| b.contains(c))
    })
}

fn applicable(preds: &mut Vec<PhysExpr>, ids: &HashSet<ColId>) -> Vec<PhysExpr> {
    let (now, later): (Vec<_>, Vec<_>) = std::mem::take(preds)
        .into_iter()
        .partition(|p| covered(p, ids));
    *preds = later;
    now
}

fn join(a: Part, b: Part, on: Vec<PhysExpr>) -> Part {
    let rows = join_rows(&a.est, &b.est, &on).max(1.0);
    let mut est = a.est.clone();
    est.ndv.extend(b.est.ndv.clone());
    est.range.extend(b.est.range.clone());
    est.rows = rows;
    for v in est.ndv.values_mut() {
        *v = v.min(rows);
    }
    let ids: HashSet<ColId> = a.ids.union(&b.ids).copied().collect();
    // Build on the smaller input.
    let (probe, build) = if a.est.rows >= b.est.rows {
        (a, b)
    } else {
        (b, a)
    };
    let plan = Logical::Join {
        join_type: JoinType::Inner,
        left: Box::new(probe.plan),
        right: Box::new(build.plan),
        on,
        mark: None,
    };
    Part { plan, est, ids }
}

/// Orders the joins of `rels` connected by `preds`.
pub fn order_region(rels: Vec<Logical>, mut preds: Vec<PhysExpr>) -> Logical {
    let mut parts: Vec<Part> = rels
        .into_iter()
        .map(|plan| {
            let est = estimate(&plan);
            let ids = plan.output().into_iter().collect();
            Part { plan, est, ids }
        })
        .collect();
    let mut current: Option<Part> = None;
    while !parts.is_empty() {
        let pick = match &current {
            None => {
                // Cheapest connected pair to start.
                let mut best: Option<(f64, usize, usize)> = None;
                for i in 0..parts.len() {
                    for j in i + 1..parts.len() {
                        if !connected(&parts[i].ids, &parts[j].ids, &preds) {
                            continue;
                        }
                        let ids: HashSet<ColId> =
                            parts[i].ids.union(&parts[j].ids).copied().collect();
                        let on: Vec<PhysExpr> =
                            preds.iter().filter(|p| covered(p, &ids)).cloned().collect();
                        let rows = join_rows(&parts[i].est, &parts[j].est, &on);
                        if best.is_none_or(|b| rows < b.0) {
                            best = Some((rows, i, j));
                        }
                    }
                }
                match best {
                    Some((_, i, j)) => {
                        let b = parts.remove(j);
                        let a = parts.remove(i);
                        let ids: HashSet<ColId> = a.ids.union(&b.ids).copied().collect();
                        let on = applicable(&mut preds, &ids);
                        current = Some(join(a, b, on));
                        continue;
                    }
                    None => {
                        // Nothing connected: start from the smallest input.
                        let i = (0..parts.len())
                            .min_by(|&x, &y| parts[x].est.rows.total_cmp(&parts[y].est.rows))
                            .unwrap_or(0);
                        current = Some(parts.remove(i));
                        continue;
                    }
                }
            }
            Some(cur) => {
                let mut best: Option<(f64, usize)> = None;
                for (i, p) in parts.iter().enumerate() {
                    if !connected(&cur.ids, &p.ids, &preds) {
                        continue;
                    }
                    let ids: HashSet<ColId> = cur.ids.union(&p.ids).copied().collect();
                    let on: Vec<PhysExpr> =
                        preds.iter().filter(|x| covered(x, &ids)).cloned().collect();
                    let rows = join_rows(&cur.est, &p.est, &on);
                    if best.is_none_or(|b| rows < b.0) {
                        best = Some((rows, i));
                    }
                }
                best.map(|b| b.1).unwrap_or_else(|| {
                    (0..parts.len())
                        .min_by(|&x, &y| parts[x].est.rows.total_cmp(&parts[y].est.rows))
                        .unwrap_or(0)
                })
            }
        };
        let p = parts.remove(pick);
        let cur = current.take().expect("current part is set");
        let ids: HashSet<ColId> = cur.ids.union(&p.ids).copied().collect();
        let on = applicable(&mut preds, &ids);
        current = Some(join(cur, p, on));
    }
    let plan = current.map(|c| c.plan).unwrap_or(Logical::Values {
        rows: vec![vec![]],
        cols: Vec::new(),
    });
    match conjunction(preds) {
        Some(p) => Logical::Filter {
            input: Box::new(plan),
            predicate: p,
        },
        None => plan,
    }
}
