//! Access paths over B+tree indexes (paper 003's selective plans): which scan
//! predicates an index can answer as key ranges, how many rows those ranges hold
//! (counted in the index itself), and the costs that decide between a full scan
//! plus hash join and an index scan plus index nested-loop join.
//!
//! Costs are in "sequential page" units: reading and decoding one column page in
//! a scan costs 1. The other constants were calibrated against measured
//! operator times (EXPLAIN ANALYZE of (A)–(D) at TPC-H SF 1, warm buffer).

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::ops::scan::zone_may_match;
use kura_exec::plan::{KeyRange, LastColumn};
use kura_exec::{IndexSource, TableSource};

use crate::logical::ColId;

/// Fetching one value of one column by row id (fix the page through the buffer
/// manager's table, locate, decode one value): measured at ≈ 350 ns against
/// ≈ 1.5 µs per scanned page (TPC-H SF 1, warm).
pub const ROW_FETCH: f64 = 0.2;
/// One probe of an index (encode the key, descend, search a leaf).
pub const PROBE: f64 = 0.5;
/// Reading a page at a random position instead of in sequence.
pub const RANDOM_PAGE: f64 = 1.0;
/// Decoding one index entry's stored columns in an index-only read (walk the
/// entry's bytes, push a few values): a small fraction of a row fetch.
pub const ENTRY_DECODE: f64 = 0.03;
/// Inserting one row into a hash table.
pub const HASH_BUILD_ROW: f64 = 0.002;
/// Probing a hash table with one row.
pub const HASH_PROBE_ROW: f64 = 0.001;
/// Most values an IN list may have to become separate index ranges.
const MAX_IN_RANGES: usize = 256;

/// What the conjuncts of a scan say about one column.
#[derive(Debug, Clone, Default)]
pub struct ColumnCondition {
    pub eq: Option<Value>,
    pub lower: Option<Bound<Value>>,
    pub upper: Option<Bound<Value>>,
    pub prefix: Option<String>,
    pub in_list: Option<Vec<Value>>,
}

/// The table column a scan expression reads directly (a column, or a numeric
/// column widened to another numeric type).
fn table_column(e: &PhysExpr, cols: &[(usize, ColId)], table: &dyn TableSource) -> Option<usize> {
    match e {
        PhysExpr::Column { index, .. } => cols.iter().find(|c| c.1 == *index).map(|c| c.0),
        PhysExpr::Cast { expr, to } => {
            let c = table_column(expr, cols, table)?;
            let from = table.columns()[c].data_type;
            (from.is_numeric() && to.is_numeric()).then_some(c)
        }
        _ => None,
    }
}

fn literal(e: &PhysExpr) -> Option<&Value> {
    match e {
        PhysExpr::Literal { value, .. } if !value.is_null() => Some(value),
        _ => None,
    }
}

/// The table column a conjunct constrains in a way an index search can answer
/// (`col op literal` but `<>`, `LIKE 'prefix%'`, `IN (...)`).
pub fn answerable_column(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    f: &PhysExpr,
) -> Option<usize> {
    column_conditions(table, cols, std::slice::from_ref(f))
        .into_iter()
        .find(|(_, c)| {
            c.eq.is_some()
                || c.lower.is_some()
                || c.upper.is_some()
                || c.prefix.is_some()
                || c.in_list.is_some()
        })
        .map(|(col, _)| col)
}

/// Folds the conjuncts an index could answer into conditions per table column.
pub fn column_conditions(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    filters: &[PhysExpr],
) -> HashMap<usize, ColumnCondition> {
    let mut out: HashMap<usize, ColumnCondition> = HashMap::new();
    for f in filters {
        match f {
            PhysExpr::Binary {
                op, left, right, ..
            } if op.is_comparison() => {
                let (c, v, op) = match (
                    table_column(left, cols, table),
                    literal(right),
                    table_column(right, cols, table),
                    literal(left),
                ) {
                    (Some(c), Some(v), _, _) => (c, v.clone(), *op),
                    (_, _, Some(c), Some(v)) => (c, v.clone(), op.flip()),
                    _ => continue,
                };
                let cond = out.entry(c).or_default();
                match op {
                    BinaryOp::Eq => cond.eq = Some(v),
                    BinaryOp::Gt => cond.lower = Some(Bound::Excluded(v)),
                    BinaryOp::GtEq => cond.lower = Some(Bound::Included(v)),
                    BinaryOp::Lt => cond.upper = Some(Bound::Excluded(v)),
                    BinaryOp::LtEq => cond.upper = Some(Bound::Included(v)),
                    _ => {}
                }
            }
            PhysExpr::Like {
                expr,
                pattern,
                negated: false,
            } => {
                let Some(c) = table_column(expr, cols, table) else {
                    continue;
                };
                let Some(p) = pattern.literal_prefix() else {
                    continue;
                };
                if let Ok(p) = std::str::from_utf8(p) {
                    out.entry(c).or_default().prefix = Some(p.to_string());
                }
            }
            PhysExpr::InList {
                expr,
                list,
                negated: false,
            } => {
                let Some(c) = table_column(expr, cols, table) else {
                    continue;
                };
                let mut vals: Vec<Value> = list.iter().filter(|v| !v.is_null()).cloned().collect();
                vals.sort_by(|a, b| a.total_cmp(b));
                vals.dedup_by(|a, b| a.total_cmp(b).is_eq());
                if vals.len() <= MAX_IN_RANGES {
                    out.entry(c).or_default().in_list = Some(vals);
                }
            }
            _ => {}
        }
    }
    out
}

/// The key ranges of `index` that hold every row satisfying the conditions (a
/// superset: the scan's predicate is still applied to what they find), and how
/// many key columns they constrain; `None` when the index does not help.
pub fn index_ranges(
    index: &IndexSource,
    conds: &HashMap<usize, ColumnCondition>,
) -> Option<(Vec<KeyRange>, usize)> {
    let mut eq = Vec::new();
    for &c in &index.columns {
        match conds.get(&c).and_then(|k| k.eq.clone()) {
            Some(v) => eq.push(v),
            None => break,
        }
    }
    let used = eq.len();
    let next = index.columns.get(used).and_then(|c| conds.get(c));
    let Some(cond) = next else {
        return (used > 0).then(|| (vec![KeyRange::eq(eq)], used));
    };
    let t = index.key_types()[used];
    if cond.lower.is_some() || cond.upper.is_some() {
        let range = KeyRange::range(
            eq,
            cond.lower.clone().unwrap_or(Bound::Unbounded),
            cond.upper.clone().unwrap_or(Bound::Unbounded),
        );
        return Some((vec![range], used + 1));
    }
    if let (Some(p), true) = (&cond.prefix, t.is_text()) {
        return Some((vec![KeyRange::prefix(eq, p)], used + 1));
    }
    if let Some(list) = &cond.in_list {
        let ranges = list
            .iter()
            .map(|v| {
                let mut k = eq.clone();
                k.push(v.clone());
                KeyRange::eq(k)
            })
            .collect();
        return Some((ranges, used + 1));
    }
    (used > 0).then(|| (vec![KeyRange::eq(eq)], used))
}

/// Estimated entries of the ranges, counted in the index.
pub fn ranges_rows(index: &IndexSource, ranges: &[KeyRange]) -> Option<f64> {
    ranges.iter().map(|r| index.estimate(r)).sum()
}

/// Every index that answers some of the scan's conditions: the index, its
/// ranges and their estimated rows.
pub fn index_range_candidates(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    filters: &[PhysExpr],
) -> Vec<(Arc<IndexSource>, Vec<KeyRange>, f64)> {
    let indexes = table.indexes();
    if indexes.is_empty() || filters.is_empty() {
        return Vec::new();
    }
    let conds = column_conditions(table, cols, filters);
    if conds.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for ix in indexes {
        let Some((ranges, _)) = index_ranges(&ix, &conds) else {
            continue;
        };
        let Some(rows) = ranges_rows(&ix, &ranges) else {
            continue;
        };
        out.push((ix, ranges, rows));
    }
    out
}

/// The index that answers the scan's conditions with the fewest rows: the index,
/// its ranges and their estimated rows.
pub fn best_index_range(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    filters: &[PhysExpr],
) -> Option<(Arc<IndexSource>, Vec<KeyRange>, f64)> {
    let mut best: Option<(Arc<IndexSource>, Vec<KeyRange>, f64)> = None;
    for c in index_range_candidates(table, cols, filters) {
        if best.as_ref().is_none_or(|b| c.2 < b.2) {
            best = Some(c);
        }
    }
    best
}

/// Pages touched when `rows` random rows are fetched from a column of `pages`
/// pages (each page is touched once however many of its rows are fetched).
pub fn touched_pages(pages: f64, rows: f64) -> f64 {
    if pages <= 0.0 {
        return 0.0;
    }
    pages * (1.0 - (-rows / pages).exp())
}

/// Share of a table's rows a scan reads after zone maps skip pages, from the
/// `column op literal` filters.
pub fn zone_fraction(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    filters: &[PhysExpr],
) -> f64 {
    let mut fraction: f64 = 1.0;
    for f in filters {
        let PhysExpr::Binary {
            op, left, right, ..
        } = f
        else {
            continue;
        };
        if !op.is_comparison() || *op == BinaryOp::NotEq {
            continue;
        }
        let (c, v, op) = match (&**left, &**right) {
            (PhysExpr::Column { index, .. }, PhysExpr::Literal { value, .. }) => {
                (*index, value, *op)
            }
            (PhysExpr::Literal { value, .. }, PhysExpr::Column { index, .. }) => {
                (*index, value, op.flip())
            }
            _ => continue,
        };
        let Some(&(tc, _)) = cols.iter().find(|x| x.1 == c) else {
            continue;
        };
        if v.is_null() {
            continue;
        }
        let zones = table.zones(tc);
        let total: u64 = zones.iter().map(|z| z.row_count).sum();
        if total == 0 {
            continue;
        }
        let kept: u64 = zones
            .iter()
            .filter(|z| zone_may_match(z, op, v))
            .map(|z| z.row_count)
            .sum();
        fraction = fraction.min(kept as f64 / total as f64);
    }
    fraction
}

/// Cost of scanning `columns` of `table` (after zone-map skipping).
pub fn scan_cost(table: &dyn TableSource, columns: &[usize], fraction: f64) -> f64 {
    let pages: f64 = columns
        .iter()
        .map(|&c| table.page_count(c) as f64)
        .sum::<f64>()
        .max(1.0);
    pages * fraction
}

/// Cost of fetching `rows` rows' `columns` by row id, after `probes` index probes
/// (or one range search when `probes` is 0) that find them.
pub fn fetch_cost(table: &dyn TableSource, columns: &[usize], rows: f64, probes: f64) -> f64 {
    let pages: f64 = columns
        .iter()
        .map(|&c| touched_pages(table.page_count(c) as f64, rows))
        .sum();
    probes * PROBE + pages * RANDOM_PAGE + rows * columns.len().max(1) as f64 * ROW_FETCH
}

/// Cost of an index-only read of `rows` entries found by `probes` searches
/// (equality probes or ranges, at least one): the leaves holding them, read at
/// random positions, and each entry decoded. No table page is read.
pub fn index_only_cost(index: &IndexSource, rows: f64, probes: f64) -> f64 {
    let probes = probes.max(1.0);
    let leaves = index.leaf_count();
    // Each search starts in a leaf (neighbouring keys share theirs); the matches
    // then fill leaves one after the other.
    let start_leaves = touched_pages(leaves, probes);
    let pages = (start_leaves + rows / index.entries_per_leaf().max(1.0)).min(leaves);
    probes * PROBE + pages * RANDOM_PAGE + rows * ENTRY_DECODE
}

/// Whether a probe value of type `from` can look up keys of type `key` (after a
/// cast to `key` that loses nothing).
pub fn probe_type_fits(from: DataType, key: DataType) -> bool {
    from == key
        || (from.is_text() && key.is_text())
        || (from.is_numeric()
            && key.is_numeric()
            && crate::binder::types::common_type(from, key) == Some(key))
}

/// Whether `r` restricts nothing (the whole index).
pub fn is_full(r: &KeyRange) -> bool {
    r.eq.is_empty() && r.last == LastColumn::Any
}
