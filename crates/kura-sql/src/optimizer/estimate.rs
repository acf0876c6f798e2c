//! Cardinality estimates from catalog statistics (row counts, distinct counts,
//! min/max): selectivities of predicates and sizes of joins and groupings.

use std::collections::{HashMap, HashSet};

use kura_common::Value;
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::JoinType;

use crate::logical::{refs_of, ColId, Logical};

use super::cardinality::Estimate;

fn literal_f64(e: &PhysExpr) -> Option<f64> {
    match e {
        PhysExpr::Literal { value, .. } => value.as_f64(),
        _ => None,
    }
}

fn is_col(e: &PhysExpr) -> Option<ColId> {
    match e {
        PhysExpr::Column { index, .. } => Some(*index),
        PhysExpr::Cast { expr, .. } => is_col(expr),
        _ => None,
    }
}

/// Fraction of rows a predicate keeps.
pub fn selectivity(p: &PhysExpr, est: &Estimate) -> f64 {
    let s = match p {
        PhysExpr::Binary {
            op: BinaryOp::And,
            left,
            right,
            ..
        } => conjunction([&**left, &**right].into_iter(), est),
        PhysExpr::Binary {
            op: BinaryOp::Or,
            left,
            right,
            ..
        } => {
            let (a, b) = (selectivity(left, est), selectivity(right, est));
            a + b - a * b
        }
        PhysExpr::Not(x) => 1.0 - selectivity(x, est),
        PhysExpr::Binary {
            op, left, right, ..
        } if op.is_comparison() => {
            let (c, lit, op) = match (
                is_col(left),
                literal_f64(right),
                is_col(right),
                literal_f64(left),
            ) {
                (Some(c), _, _, _) if matches!(**right, PhysExpr::Literal { .. }) => {
                    (Some(c), literal_f64(right), *op)
                }
                (_, _, Some(c), _) if matches!(**left, PhysExpr::Literal { .. }) => {
                    (Some(c), literal_f64(left), op.flip())
                }
                _ => (None, None, *op),
            };
            match (c, op) {
                (Some(c), BinaryOp::Eq) => 1.0 / est.ndv.get(&c).copied().unwrap_or(10.0).max(1.0),
                (Some(c), BinaryOp::NotEq) => {
                    1.0 - 1.0 / est.ndv.get(&c).copied().unwrap_or(10.0).max(1.0)
                }
                (Some(c), o) => match (lit, est.range.get(&c)) {
                    (Some(v), Some(&(lo, hi))) if hi > lo => {
                        let f = (v - lo) / (hi - lo);
                        let f = if matches!(o, BinaryOp::Lt | BinaryOp::LtEq) {
                            f
                        } else {
                            1.0 - f
                        };
                        f.clamp(0.0, 1.0)
                    }
                    _ => 0.3,
                },
                (None, BinaryOp::Eq) => {
                    let (a, b) = (est.ndv_of(left), est.ndv_of(right));
                    1.0 / a.max(b).max(1.0)
                }
                _ => 0.3,
            }
        }
        PhysExpr::InList {
            expr,
            list,
            negated,
        } => {
            let f = list.len() as f64 / est.ndv_of(expr).max(1.0);
            let f = f.min(1.0);
            if *negated {
                1.0 - f
            } else {
                f
            }
        }
        PhysExpr::Like {
            expr,
            pattern,
            negated,
        } => {
            let range = is_col(expr).and_then(|c| est.text.get(&c));
            let f = match (pattern.literal_prefix(), range) {
                (Some(p), Some((lo, hi))) => {
                    prefix_fraction(p, lo.as_bytes(), hi.as_bytes(), est.ndv_of(expr))
                }
                (Some(_), None) => 0.05,
                _ => 0.1,
            };
            if *negated {
                1.0 - f
            } else {
                f
            }
        }
        PhysExpr::IsNull { negated, .. } => {
            if *negated {
                0.95
            } else {
                0.05
            }
        }
        PhysExpr::Literal {
            value: Value::Boolean(true),
            ..
        } => 1.0,
        PhysExpr::Literal { .. } => 0.0,
        _ => 0.3,
    };
    s.clamp(0.0, 1.0)
}

/// Fraction of rows a conjunction keeps. Range bounds on one column combine into
/// one interval of its [min, max] (`d >= x AND d < y` keeps `y - x` of it), where
/// multiplying them as independent would keep about a quarter of the rows however
/// narrow the interval: TPC-H's three-month date windows were estimated 6× too
/// large, which turned joins the wrong way round.
pub fn conjunction<'a>(preds: impl Iterator<Item = &'a PhysExpr>, est: &Estimate) -> f64 {
    fn flatten<'a>(p: &'a PhysExpr, out: &mut Vec<&'a PhysExpr>) {
        match p {
            PhysExpr::Binary {
                op: BinaryOp::And,
                left,
                right,
                ..
            } => {
                flatten(left, out);
                flatten(right, out);
            }
            p => out.push(p),
        }
    }
    let mut conjuncts = Vec::new();
    for p in preds {
        flatten(p, &mut conjuncts);
    }
    // Per column: the tightest lower and upper bound seen.
    let mut bounds: HashMap<ColId, (f64, f64)> = HashMap::new();
    let mut s = 1.0;
    for p in conjuncts {
        match range_bound(p, est) {
            Some((c, lower, upper)) => {
                let b = bounds
                    .entry(c)
                    .or_insert((f64::NEG_INFINITY, f64::INFINITY));
                b.0 = b.0.max(lower);
                b.1 = b.1.min(upper);
            }
            None => s *= selectivity(p, est),
        }
    }
    for (c, (lower, upper)) in bounds {
        let (lo, hi) = est.range[&c];
        let (a, b) = (lower.max(lo), upper.min(hi));
        let f = if a > b {
            0.0
        } else {
            let floor = 1.0 / est.ndv.get(&c).copied().unwrap_or(10.0).max(1.0);
            ((b - a) / (hi - lo)).clamp(floor, 1.0)
        };
        s *= f;
    }
    s.clamp(0.0, 1.0)
}

/// `column < literal` and the like, where the column's range is known: the
/// column and the bounds the comparison puts on it (one of them infinite).
fn range_bound(p: &PhysExpr, est: &Estimate) -> Option<(ColId, f64, f64)> {
    let PhysExpr::Binary {
        op, left, right, ..
    } = p
    else {
        return None;
    };
    let (c, v, op) = match (
        is_col(left),
        literal_f64(right),
        is_col(right),
        literal_f64(left),
    ) {
        (Some(c), Some(v), _, _) => (c, v, *op),
        (_, _, Some(c), Some(v)) => (c, v, op.flip()),
        _ => return None,
    };
    let &(lo, hi) = est.range.get(&c)?;
    if hi <= lo {
        return None;
    }
    match op {
        BinaryOp::Lt | BinaryOp::LtEq => Some((c, f64::NEG_INFINITY, v)),
        BinaryOp::Gt | BinaryOp::GtEq => Some((c, v, f64::INFINITY)),
        _ => None,
    }
}

/// Fraction of a table's rows its scan filters keep. The conjuncts an index can
/// answer are counted in that index (a histogram with one bucket per leaf, so
/// skew and correlated bounds such as BETWEEN are estimated as they are); the
/// others use the column statistics.
fn scan_selectivity(
    table: &dyn kura_exec::TableSource,
    cols: &[(usize, ColId)],
    filters: &[PhysExpr],
    est: &Estimate,
) -> f64 {
    let heuristic = |fs: &mut dyn Iterator<Item = &PhysExpr>| -> f64 { conjunction(fs, est) };
    let rows = table.row_count() as f64;
    if rows <= 0.0 {
        return heuristic(&mut filters.iter());
    }
    let Some((index, ranges, found)) = super::access::best_index_range(table, cols, filters) else {
        return heuristic(&mut filters.iter());
    };
    // The conjuncts on the key columns the ranges constrain are the index's to
    // estimate; the rest multiply in as usual.
    let constrained = ranges.first().map_or(0, |r| {
        r.eq.len() + usize::from(r.last != kura_exec::plan::LastColumn::Any)
    });
    let key_cols: HashSet<usize> = index.columns[..constrained.min(index.columns.len())]
        .iter()
        .copied()
        .collect();
    let answered = |f: &PhysExpr| {
        super::access::answerable_column(table, cols, f).is_some_and(|c| key_cols.contains(&c))
    };
    let others = heuristic(&mut filters.iter().filter(|f| !answered(f)));
    (found / rows).clamp(0.0, 1.0) * others
}

/// Fraction of a column's values in `[lo, hi]` that start with `p`. Past the
/// prefix `lo` and `hi` share, the first byte is placed between theirs; further
/// digits count 1/10 each (generated keys, phone numbers: near uniform), and
/// further letters once 1/26 (words are far from uniform). At least one value.
fn prefix_fraction(p: &[u8], lo: &[u8], hi: &[u8], ndv: f64) -> f64 {
    let floor = 1.0 / ndv.max(1.0);
    let common = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
    let k = common.min(p.len());
    if p[..k] != lo[..k] {
        return floor;
    }
    if p.len() <= common {
        return 1.0;
    }
    let c = p[common];
    let a = lo.get(common).copied().unwrap_or(0);
    let b = hi.get(common).copied().unwrap_or(u8::MAX);
    if c < a || c > b {
        return floor;
    }
    let mut f = 1.0 / (b as f64 - a as f64 + 1.0);
    let mut letters = false;
    for &x in &p[common + 1..] {
        if x.is_ascii_digit() {
            f /= 10.0;
        } else if !letters {
            letters = true;
            f /= 26.0;
        }
    }
    f.clamp(floor, 1.0)
}

/// Rows of `l ⋈ r` under conditions `on`.
pub fn join_rows(l: &Estimate, r: &Estimate, on: &[PhysExpr]) -> f64 {
    let mut rows = l.rows * r.rows;
    let mut both = l.clone();
    both.ndv.extend(r.ndv.clone());
    both.range.extend(r.range.clone());
    both.rows = rows;
    // Equalities between the two sides form one composite key: its distinct
    // count on each side is the product of the columns' counts, but at most the
    // side's rows. Multiplying per-column selectivities instead treats the columns
    // of a composite foreign key (lineitem → partsupp) as independent and
    // underestimates such a join by orders of magnitude.
    let (mut domain, mut keys) = (1.0f64, 0);
    let (mut lbase, mut rbase) = (Some(0.0f64), Some(0.0f64));
    for p in on {
        if let PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } = p
        {
            let side = match (is_col(left), is_col(right)) {
                (Some(a), Some(b)) if l.ndv.contains_key(&a) && r.ndv.contains_key(&b) => {
                    Some((a, b))
                }
                (Some(a), Some(b)) if l.ndv.contains_key(&b) && r.ndv.contains_key(&a) => {
                    Some((b, a))
                }
                _ => None,
            };
            if let Some((a, b)) = side {
                let x = l.ndv[&a].min(l.rows.max(1.0));
                let y = r.ndv[&b].min(r.rows.max(1.0));
                domain *= x.max(y).max(1.0);
                lbase = lbase.zip(l.base.get(&a)).map(|(m, v)| m.max(*v));
                rbase = rbase.zip(r.base.get(&b)).map(|(m, v)| m.max(*v));
                keys += 1;
                continue;
            }
        }
        rows *= selectivity(p, &both);
    }
    if keys > 1 {
        // Every combination that occurs is a row of each side's stored table.
        for b in [lbase, rbase].into_iter().flatten() {
            domain = domain.min(b.max(1.0));
        }
    }
    if keys > 0 {
        rows /= domain;
    }
    rows
}

/// Statistics of `l ⋈ r` producing `rows`: both inputs' columns, and for an
/// equality `a = b` both columns keep only the values both sides hold.
pub fn joined(l: &Estimate, r: &Estimate, on: &[PhysExpr], rows: f64) -> Estimate {
    let mut e = l.clone();
    e.absorb(r);
    e.rows = rows;
    for p in on {
        if let PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } = p
        {
            if let (Some(a), Some(b)) = (is_col(left), is_col(right)) {
                if let (Some(&x), Some(&y)) = (e.ndv.get(&a), e.ndv.get(&b)) {
                    let m = x.min(y);
                    e.ndv.insert(a, m);
                    e.ndv.insert(b, m);
                }
            }
        }
    }
    e.cap();
    e
}

/// Fraction of `l`'s rows with a partner in `r`: for each equality key, the share of
/// `l`'s distinct values that `r` can hold (containment); the tightest key wins.
pub fn semi_fraction(l: &Estimate, r: &Estimate, on: &[PhysExpr]) -> f64 {
    let mut f: Option<f64> = None;
    for p in on {
        if let PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } = p
        {
            let (lk, rk) = match (is_col(left), is_col(right)) {
                (Some(a), Some(b)) if l.ndv.contains_key(&a) && r.ndv.contains_key(&b) => (a, b),
                (Some(a), Some(b)) if l.ndv.contains_key(&b) && r.ndv.contains_key(&a) => (b, a),
                _ => continue,
            };
            let x = (r.ndv[&rk] / l.ndv[&lk].max(1.0)).min(1.0);
            f = Some(f.map_or(x, |y: f64| y.min(x)));
        }
    }
    f.unwrap_or(0.5)
}

/// Whether a LEFT, semi or anti join builds its preserved (left) side and probes
/// the other — a RIGHT, RIGHT SEMI or RIGHT ANTI join — because the left side
/// promises much fewer rows (the planner's choice, shared with the magic-set
/// restriction, which such a build makes redundant).
pub fn builds_left_side(left: &Logical, right: &Logical) -> bool {
    estimate(left).rows * 2.0 < estimate(right).rows
}

/// Estimate of a logical plan's output.
pub fn estimate(plan: &Logical) -> Estimate {
    if let Some(e) = super::estimate_memo::recall(plan) {
        return e;
    }
    let e = estimate_afresh(plan);
    super::estimate_memo::remember(plan, &e);
    e
}

fn estimate_afresh(plan: &Logical) -> Estimate {
    let mut e = match plan {
        Logical::Scan {
            table,
            cols,
            filters,
        } => {
            let sampled = table.sample().map_or(1.0, |s| s.fraction());
            let mut e = Estimate {
                rows: table.row_count() as f64 * sampled,
                ..Default::default()
            };
            for (i, id) in cols {
                if let Some(s) = table.column_stats(*i) {
                    e.ndv.insert(*id, (s.distinct as f64).max(1.0));
                    e.base.insert(*id, e.rows);
                    if let (Some(lo), Some(hi)) = (s.min.as_f64(), s.max.as_f64()) {
                        e.range.insert(*id, (lo, hi));
                    }
                    if let (Value::Text(lo), Value::Text(hi)) = (&s.min, &s.max) {
                        e.text.insert(*id, (lo.clone(), hi.clone()));
                    }
                }
            }
            let sel = scan_selectivity(table.as_ref(), cols, filters, &e);
            e.text.clear();
            e.rows = (e.rows * sel).max(if e.rows > 0.0 { 1.0 } else { 0.0 });
            e
        }
        Logical::Values { rows, .. } => Estimate {
            rows: rows.len() as f64,
            ..Default::default()
        },
        Logical::Filter { input, predicate } => {
            let mut e = estimate(input);
            e.rows = (e.rows * selectivity(predicate, &e)).max(1.0);
            e
        }
        Logical::Project { input, exprs } => {
            let i = estimate(input);
            let mut e = Estimate {
                rows: i.rows,
                ..Default::default()
            };
            for (x, id) in exprs {
                e.ndv.insert(*id, i.ndv_of(x));
                if let Some(c) = is_col(x) {
                    if let Some(r) = i.range.get(&c) {
                        e.range.insert(*id, *r);
                    }
                    if let Some(b) = i.base.get(&c) {
                        e.base.insert(*id, *b);
                    }
                }
            }
            e
        }
        Logical::Join {
            join_type,
            left,
            right,
            on,
            ..
        } => {
            let (l, r) = (estimate(left), estimate(right));
            let inner = join_rows(&l, &r, on);
            let mut e = l.clone();
            match join_type {
                JoinType::Inner => e = joined(&l, &r, on, inner.max(1.0)),
                JoinType::Left => {
                    e.absorb(&r);
                    e.rows = inner.max(l.rows);
                }
                JoinType::Right => {
                    e.absorb(&r);
                    e.rows = inner.max(r.rows);
                }
                JoinType::Single => e.absorb(&r),
                JoinType::Full => {
                    e.absorb(&r);
                    e.rows = inner.max(l.rows).max(r.rows);
                }
                JoinType::Mark | JoinType::NullAwareMark => {}
                JoinType::Semi => {
                    e.rows = (l.rows * semi_fraction(&l, &r, on))
                        .max(1.0)
                        .min(inner.max(1.0))
                }
                JoinType::Anti | JoinType::NullAwareAnti => e.rows = (l.rows * 0.5).max(1.0),
                // Lowering's forms only (the preserved side built on the right).
                JoinType::RightSemi => {
                    e = r.clone();
                    e.rows = (r.rows * semi_fraction(&r, &l, on))
                        .max(1.0)
                        .min(inner.max(1.0))
                }
                JoinType::RightAnti => {
                    e = r.clone();
                    e.rows = (r.rows * 0.5).max(1.0)
                }
            }
            e
        }
        Logical::Aggregate { input, group, aggs } => {
            let i = estimate(input);
            let groups: f64 = group.iter().map(|(g, _)| i.ndv_of(g)).product();
            let rows = if group.is_empty() {
                1.0
            } else {
                groups.min(i.rows).max(1.0)
            };
            let mut e = Estimate {
                rows,
                ..Default::default()
            };
            for (g, id) in group {
                e.ndv.insert(*id, i.ndv_of(g));
                if let Some(c) = is_col(g) {
                    if let Some(r) = i.range.get(&c) {
                        e.range.insert(*id, *r);
                    }
                }
            }
            for (_, id) in aggs {
                e.ndv.insert(*id, rows);
            }
            e
        }
        Logical::Sort { input, limit, .. } => {
            let mut e = estimate(input);
            if let Some(l) = limit {
                e.rows = e.rows.min(*l as f64);
            }
            e
        }
        Logical::Limit { input, limit, .. } => {
            let mut e = estimate(input);
            if let Some(l) = limit {
                e.rows = e.rows.min(*l as f64);
            }
            e
        }
        // Replicated rows are at most the input's rows per group.
        Logical::Replicate { input, .. } => estimate(input),
        // A window keeps its input's rows and adds columns.
        Logical::Window { input, .. } => estimate(input),
        Logical::Union { inputs, cols } => {
            let rows = inputs.iter().map(|(p, _)| estimate(p).rows).sum();
            let mut e = Estimate {
                rows,
                ..Default::default()
            };
            for c in cols {
                e.ndv.insert(*c, rows);
            }
            e
        }
    };
    e.cap();
    e
}

/// Whether `e` reads only columns in `ids`.
pub fn covered(e: &PhysExpr, ids: &std::collections::HashSet<ColId>) -> bool {
    refs_of(e).iter().all(|c| ids.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::DataType;

    fn col() -> Box<PhysExpr> {
        Box::new(PhysExpr::Column {
            index: 0,
            data_type: DataType::Integer,
        })
    }
    fn cmp(op: BinaryOp, v: i32) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: col(),
            right: Box::new(PhysExpr::Literal {
                value: Value::Integer(v),
                data_type: DataType::Integer,
            }),
            data_type: DataType::Boolean,
        }
    }
    fn and(a: PhysExpr, b: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            op: BinaryOp::And,
            left: Box::new(a),
            right: Box::new(b),
            data_type: DataType::Boolean,
        }
    }
    fn uniform_0_to_1000() -> Estimate {
        let mut e = Estimate {
            rows: 1000.0,
            ..Default::default()
        };
        e.range.insert(0, (0.0, 1000.0));
        e.ndv.insert(0, 1000.0);
        e
    }

    #[test]
    fn bounds_on_one_column_form_an_interval() {
        let e = uniform_0_to_1000();
        let window = and(cmp(BinaryOp::GtEq, 300), cmp(BinaryOp::Lt, 400));
        assert!((selectivity(&window, &e) - 0.1).abs() < 1e-9);
        // The same conjuncts as a scan's filter list.
        let list = [cmp(BinaryOp::GtEq, 300), cmp(BinaryOp::Lt, 400)];
        assert!((conjunction(list.iter(), &e) - 0.1).abs() < 1e-9);
        // A single bound is unchanged.
        assert!((selectivity(&cmp(BinaryOp::Lt, 250), &e) - 0.25).abs() < 1e-9);
    }

    #[test]
    fn empty_and_point_intervals() {
        let e = uniform_0_to_1000();
        let empty = and(cmp(BinaryOp::Gt, 600), cmp(BinaryOp::Lt, 400));
        assert_eq!(selectivity(&empty, &e), 0.0);
        let point = and(cmp(BinaryOp::GtEq, 500), cmp(BinaryOp::LtEq, 500));
        assert!((selectivity(&point, &e) - 0.001).abs() < 1e-9);
    }
}
