//! Join ordering for a region of inner joins: greedy, cardinality-driven. Starting
//! from the cheapest connected pair, repeatedly join the input that keeps the
//! intermediate result smallest; the smaller side of each join becomes its build
//! (right) input. Cross products are taken only when nothing connected remains.

use std::collections::HashSet;

use kura_exec::expr::PhysExpr;
use kura_exec::JoinType;

use super::cardinality::Estimate;
use super::equivalence::Classes;
use super::estimate::{covered, estimate, join_rows, joined};
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
    let est = joined(&a.est, &b.est, &on, rows);
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

/// Largest region ordered exhaustively; beyond it the greedy order is used.
const MAX_DP_RELS: usize = 10;

/// How a subset of the region's inputs is best joined.
struct Best {
    cost: f64,
    est: Estimate,
    split: Option<(u32, u32)>,
}

/// Exhaustive (bushy) search over connected subsets — dynamic programming on
/// bitmasks — minimising the summed sizes of intermediate results plus build
/// inputs. Greedy ordering commits to its first cheap pair (often a tiny
/// dimension join) and can then be forced through large intermediates; the
/// search sees whole plans. Column equalities join through their equivalence
/// classes, so inputs related only transitively can be joined directly. Returns
/// `None` when the join graph is not connected (cross products are left to the
/// greedy order).
fn order_dp(parts: Vec<Part>, preds: Vec<PhysExpr>) -> Result<Logical, (Vec<Part>, Vec<PhysExpr>)> {
    let n = parts.len();
    let original = preds.clone();
    let (classes, preds) =
        Classes::extract(preds, |c| parts.iter().position(|x| x.ids.contains(&c)));
    // Which inputs each predicate reads; `None` for columns outside the region.
    let masks: Vec<Option<u32>> = preds
        .iter()
        .map(|p| {
            let mut m = 0u32;
            for c in refs_of(p) {
                let i = parts.iter().position(|x| x.ids.contains(&c))?;
                m |= 1 << i;
            }
            Some(m)
        })
        .collect();
    let spans = |m: u32, a: u32, b: u32| {
        masks
            .iter()
            .enumerate()
            .filter_map(move |(k, pm)| match pm {
                Some(pm) if *pm != 0 && pm & m == *pm && pm & a != 0 && pm & b != 0 => Some(k),
                _ => None,
            })
    };
    let full: u32 = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let mut best: Vec<Option<Best>> = (0..=full).map(|_| None).collect();
    for (i, p) in parts.iter().enumerate() {
        best[1 << i] = Some(Best {
            cost: 0.0,
            est: p.est.clone(),
            split: None,
        });
    }
    for m in 1..=full {
        if m.count_ones() < 2 {
            continue;
        }
        let low = m & m.wrapping_neg();
        let mut a = (m - 1) & m;
        let mut found: Option<Best> = None;
        while a > 0 {
            let b = m ^ a;
            if a & low != 0 && b != 0 {
                if let (Some(x), Some(y)) = (&best[a as usize], &best[b as usize]) {
                    let mut on = classes.joining(a, &x.est, b, &y.est);
                    on.extend(spans(m, a, b).map(|k| preds[k].clone()));
                    if !on.is_empty() {
                        let rows = join_rows(&x.est, &y.est, &on).max(1.0);
                        let cost = x.cost + y.cost + rows + x.est.rows.min(y.est.rows);
                        if found.as_ref().is_none_or(|f| cost < f.cost) {
                            let est = joined(&x.est, &y.est, &on, rows);
                            found = Some(Best {
                                cost,
                                est,
                                split: Some((a, b)),
                            });
                        }
                    }
                }
            }
            a = (a - 1) & m;
        }
        best[m as usize] = found;
    }
    if best[full as usize].is_none() {
        return Err((parts, original));
    }
    struct Plans<'a> {
        best: &'a [Option<Best>],
        classes: &'a Classes,
        preds: &'a [PhysExpr],
        masks: &'a [Option<u32>],
    }
    fn build(m: u32, p: &Plans, parts: &mut Vec<Option<Part>>, used: &mut [bool]) -> Part {
        let Plans {
            best,
            classes,
            preds,
            masks,
        } = p;
        let b = best[m as usize].as_ref().expect("planned subset");
        match b.split {
            None => parts[m.trailing_zeros() as usize]
                .take()
                .expect("each input used once"),
            Some((x, y)) => {
                let l = build(x, p, parts, used);
                let r = build(y, p, parts, used);
                let mut on = classes.joining(x, &l.est, y, &r.est);
                for (k, pm) in masks.iter().enumerate() {
                    if let Some(pm) = pm {
                        if !used[k] && *pm != 0 && pm & m == *pm && pm & x != 0 && pm & y != 0 {
                            used[k] = true;
                            on.push(preds[k].clone());
                        }
                    }
                }
                join(l, r, on)
            }
        }
    }
    let mut slots: Vec<Option<Part>> = parts.into_iter().map(Some).collect();
    let mut used = vec![false; preds.len()];
    let plans = Plans {
        best: &best,
        classes: &classes,
        preds: &preds,
        masks: &masks,
    };
    let plan = build(full, &plans, &mut slots, &mut used).plan;
    let rest: Vec<PhysExpr> = preds
        .into_iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|(p, _)| p)
        .collect();
    Ok(match conjunction(rest) {
        Some(p) => Logical::Filter {
            input: Box::new(plan),
            predicate: p,
        },
        None => plan,
    })
}

/// Orders the joins of `rels` connected by `preds`.
pub fn order_region(rels: Vec<Logical>, preds: Vec<PhysExpr>) -> Logical {
    let parts: Vec<Part> = rels
        .into_iter()
        .map(|plan| {
            let est = estimate(&plan);
            let ids = plan.output().into_iter().collect();
            Part { plan, est, ids }
        })
        .collect();
    let (mut parts, mut preds) = if (2..=MAX_DP_RELS).contains(&parts.len()) {
        match order_dp(parts, preds) {
            Ok(plan) => return plan,
            Err(back) => back,
        }
    } else {
        (parts, preds)
    };
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
