//! Lowering to index plans (paper 003): a scan whose predicates an index answers
//! with few rows becomes an index range scan, and a join whose inner side is a
//! table with an index on the join keys becomes an index nested-loop join — each
//! only when its estimated cost is below the full scan (and hash join) it
//! replaces. `SET enable_index = off` turns both off.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kura_common::DataType;
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::plan::KeyRange;
use kura_exec::{IndexSource, JoinType, PlanKind, PlanNode, TableSource};

use super::{remap, Lowering};
use crate::binder::types::coerce;
use crate::error::{Pos, SqlResult};
use crate::logical::{col, conjunction, map_columns, refs, refs_of, ColId, Logical};
use crate::optimizer::access::{
    fetch_cost, index_only_cost, index_range_candidates, is_full, probe_type_fits, scan_cost,
    zone_fraction, HASH_BUILD_ROW, HASH_PROBE_ROW,
};
use crate::optimizer::estimate::estimate;

/// An index of the inner table that the join's equalities can probe.
struct JoinProbe {
    index: Arc<IndexSource>,
    /// Outer-side expression for each leading key column, cast to its type.
    keys: Vec<PhysExpr>,
    /// Positions in `on` of the conjuncts the keys answer.
    used: Vec<usize>,
}

/// The column id `e` reads when it is exactly one column of the scan.
fn scan_column(e: &PhysExpr, cols: &[(usize, ColId)]) -> Option<(usize, ColId)> {
    match e {
        PhysExpr::Column { index, .. } => cols.iter().find(|c| c.1 == *index).copied(),
        _ => None,
    }
}

/// The index (longest usable key prefix, unique first) that equalities of `on`
/// between the outer side and the inner table's columns can probe.
fn compares_varchar(p: &PhysExpr) -> bool {
    match p {
        PhysExpr::Binary { left, right, .. } => {
            matches!(left.data_type(), DataType::Varchar(_))
                || matches!(right.data_type(), DataType::Varchar(_))
        }
        _ => false,
    }
}

fn join_probe(
    table: &dyn TableSource,
    cols: &[(usize, ColId)],
    outer_ids: &HashSet<ColId>,
    on: &[PhysExpr],
    columns: &[usize],
) -> SqlResult<Option<JoinProbe>> {
    // (table column, outer expression, conjunct position) of each usable equality.
    let mut eqs: Vec<(usize, &PhysExpr, usize)> = Vec::new();
    for (i, p) in on.iter().enumerate() {
        let PhysExpr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
            ..
        } = p
        else {
            continue;
        };
        let from_outer = |e: &PhysExpr| {
            let r = refs_of(e);
            !r.is_empty() && r.iter().all(|c| outer_ids.contains(c))
        };
        if let (Some((tc, _)), true) = (scan_column(left, cols), from_outer(right)) {
            eqs.push((tc, right, i));
        } else if let (Some((tc, _)), true) = (scan_column(right, cols), from_outer(left)) {
            eqs.push((tc, left, i));
        }
    }
    if eqs.is_empty() {
        return Ok(None);
    }
    let mut best: Option<JoinProbe> = None;
    for index in table.indexes() {
        let mut keys = Vec::new();
        let mut used = Vec::new();
        for (k, &c) in index.columns.iter().enumerate() {
            let key_type = index.key_types()[k];
            let Some(&(_, e, i)) = eqs
                .iter()
                .find(|(tc, e, _)| *tc == c && probe_type_fits(e.data_type(), key_type))
            else {
                break;
            };
            let e = if e.data_type() == key_type || e.data_type().is_text() {
                e.clone()
            } else {
                coerce(e.clone(), key_type, Pos::default())?
            };
            keys.push(e);
            used.push(i);
        }
        if keys.is_empty() {
            continue;
        }
        // Among equally good probes, one whose entries store every inner column
        // the join needs (index-only) saves the row fetches.
        let covers = |ix: &IndexSource| ix.index_only_layout(columns).is_some();
        let better = match &best {
            None => true,
            Some(b) => {
                keys.len() > b.keys.len()
                    || (keys.len() == b.keys.len()
                        && index.unique
                        && !b.index.unique
                        && keys.len() == index.columns.len())
                    || (keys.len() == b.keys.len()
                        && index.unique == b.index.unique
                        && covers(&index)
                        && !covers(&b.index))
            }
        };
        if better {
            best = Some(JoinProbe { index, keys, used });
        }
    }
    Ok(best)
}

/// Estimated inner rows per probe key: rows over the distinct keys of the probed
/// columns (one for a full unique key).
fn rows_per_key(table: &dyn TableSource, probe: &JoinProbe) -> f64 {
    let rows = table.row_count() as f64;
    let n = probe.keys.len();
    if probe.index.unique && n == probe.index.columns.len() {
        return 1.0;
    }
    let distinct: f64 = probe.index.columns[..n]
        .iter()
        .map(|&c| {
            table
                .column_stats(c)
                .map_or(rows, |s| (s.distinct as f64).max(1.0))
        })
        .product();
    (rows / distinct.clamp(1.0, rows.max(1.0))).max(1.0)
}

/// A join's inner side as a table scan: the scan itself, or a projection of
/// plain columns over one (a subquery's `SELECT` list), whose ids are renamed to
/// the scan's. `rename` maps projection ids to scan ids.
struct InnerScan<'p> {
    table: &'p Arc<dyn TableSource>,
    cols: &'p [(usize, ColId)],
    filters: &'p [PhysExpr],
    rename: HashMap<ColId, ColId>,
}

fn inner_scan<'p>(inner: &'p Logical, needed: &HashSet<ColId>) -> Option<InnerScan<'p>> {
    match inner {
        Logical::Scan {
            table,
            cols,
            filters,
        } => Some(InnerScan {
            table,
            cols,
            filters,
            rename: HashMap::new(),
        }),
        Logical::Project { input, exprs } => {
            let Logical::Scan {
                table,
                cols,
                filters,
            } = input.as_ref()
            else {
                return None;
            };
            let mut rename = HashMap::new();
            let mut targets = HashSet::new();
            for (e, id) in exprs {
                match e {
                    PhysExpr::Column { index, .. } if targets.insert(*index) => {
                        rename.insert(*id, *index);
                    }
                    // A computed (or repeated) column the join needs: not a plain scan.
                    _ if needed.contains(id) => return None,
                    _ => {}
                }
            }
            Some(InnerScan {
                table,
                cols,
                filters,
                rename,
            })
        }
        _ => None,
    }
}

fn renamed(e: &PhysExpr, rename: &HashMap<ColId, ColId>) -> PhysExpr {
    map_columns(e, &mut |id, ty| col(*rename.get(&id).unwrap_or(&id), ty))
}

impl Lowering<'_> {
    /// An index range scan for `plan` (a scan), when one is cheaper.
    pub(super) fn index_scan(
        &self,
        plan: &Logical,
        required: &HashSet<ColId>,
    ) -> SqlResult<Option<(PlanNode, Vec<ColId>)>> {
        let Logical::Scan {
            table,
            cols,
            filters,
        } = plan
        else {
            return Ok(None);
        };
        if !self.opts.enable_index {
            return Ok(None);
        }
        let candidates = index_range_candidates(table.as_ref(), cols, filters);
        if candidates.is_empty() {
            return Ok(None);
        }
        let mut need = required.clone();
        filters.iter().for_each(|f| refs(f, &mut need));
        let read: Vec<(usize, ColId)> = cols
            .iter()
            .filter(|(_, id)| need.contains(id))
            .copied()
            .collect();
        let columns: Vec<usize> = read.iter().map(|r| r.0).collect();
        let fraction = zone_fraction(table.as_ref(), cols, filters);
        let full = scan_cost(table.as_ref(), &columns, fraction);
        // The cheapest index plan: per index, fetching the rows from the table or
        // (when its entries store every column needed) reading them from the
        // index alone. (cost, index, ranges, index-only)
        let mut best: Option<(f64, Arc<IndexSource>, Vec<KeyRange>, bool)> = None;
        for (index, ranges, rows) in candidates {
            let fetch = if ranges.iter().any(is_full) {
                f64::INFINITY
            } else {
                fetch_cost(table.as_ref(), &columns, rows, ranges.len() as f64)
            };
            let from_index = match index.index_only_layout(&columns) {
                Some(_) => index_only_cost(&index, rows, ranges.len() as f64),
                None => f64::INFINITY,
            };
            let cost = fetch.min(from_index);
            if cost < f64::INFINITY && best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, index, ranges, from_index < fetch));
            }
        }
        let Some((by_index, index, ranges, index_only)) = best else {
            return Ok(None);
        };
        if by_index >= full && self.opts.enable_seqscan {
            return Ok(None);
        }
        let layout: Vec<ColId> = read.iter().map(|r| r.1).collect();
        let filter = conjunction(filters.clone())
            .map(|f| remap(&f, &layout))
            .transpose()?;
        let kind = PlanKind::IndexScan {
            table: table.clone(),
            index,
            ranges,
            columns,
            filter,
            index_only,
        };
        Ok(Some((
            self.node(plan, "index_scan", kind, self.types(&layout)),
            layout,
        )))
    }

    /// An index nested-loop join for `plan` (a join), when one is cheaper than
    /// the hash join: the outer side is lowered as usual and each of its batches
    /// probes an index of the inner table.
    pub(super) fn index_join(
        &self,
        plan: &Logical,
        required: &HashSet<ColId>,
    ) -> SqlResult<Option<(PlanNode, Vec<ColId>)>> {
        let Logical::Join {
            join_type,
            left,
            right,
            on,
            mark: None,
        } = plan
        else {
            return Ok(None);
        };
        if !self.opts.enable_index
            || !matches!(
                join_type,
                JoinType::Inner
                    | JoinType::Left
                    | JoinType::Single
                    | JoinType::Semi
                    | JoinType::Anti
            )
        {
            return Ok(None);
        }
        let (l, r) = (estimate(left), estimate(right));
        // The hash join's cost beyond its two inputs: build on the right, probe
        // with the left.
        let hash_extra = HASH_BUILD_ROW * r.rows + HASH_PROBE_ROW * l.rows;
        let mut orientations = vec![(left.as_ref(), right.as_ref(), l.rows)];
        if *join_type == JoinType::Inner {
            orientations.push((right.as_ref(), left.as_ref(), r.rows));
        }
        let mut needed = required.clone();
        on.iter().for_each(|p| refs(p, &mut needed));
        // The cheapest orientation: (cost, outer side, inner scan, its `on`, probe,
        // index-only).
        type Choice<'a> = (
            f64,
            &'a Logical,
            InnerScan<'a>,
            Vec<PhysExpr>,
            JoinProbe,
            bool,
        );
        let mut best: Option<Choice> = None;
        for (outer, inner, outer_rows) in orientations {
            let Some(scan) = inner_scan(inner, &needed) else {
                continue;
            };
            let table = scan.table.as_ref();
            let on: Vec<PhysExpr> = on.iter().map(|p| renamed(p, &scan.rename)).collect();
            let outer_ids: HashSet<ColId> = outer.output().into_iter().collect();
            // Columns the inner side must deliver, either way.
            let mut need: HashSet<ColId> = needed
                .iter()
                .map(|c| *scan.rename.get(c).unwrap_or(c))
                .collect();
            scan.filters.iter().for_each(|f| refs(f, &mut need));
            let columns: Vec<usize> = scan
                .cols
                .iter()
                .filter(|(_, id)| need.contains(id))
                .map(|c| c.0)
                .collect();
            let Some(probe) = join_probe(table, scan.cols, &outer_ids, &on, &columns)? else {
                continue;
            };
            let fraction = zone_fraction(table, scan.cols, scan.filters);
            let hash = scan_cost(table, &columns, fraction) + hash_extra;
            let matches = outer_rows * rows_per_key(table, &probe);
            let fetch = fetch_cost(table, &columns, matches, outer_rows);
            // The matches' columns straight from the index entries, when stored there.
            let only = match probe.index.index_only_layout(&columns) {
                Some(_) => index_only_cost(&probe.index, matches, outer_rows),
                None => f64::INFINITY,
            };
            let cost = fetch.min(only);
            let cheaper = cost < hash || !self.opts.enable_seqscan;
            if cheaper && best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, outer, scan, on, probe, only < fetch));
            }
        }
        let Some((_, outer, scan, on, probe, index_only)) = best else {
            return Ok(None);
        };
        let (table, cols, filters) = (scan.table, scan.cols, scan.filters);
        // Scan ids back to the names the join's consumers know them by.
        let back: HashMap<ColId, ColId> = scan.rename.iter().map(|(p, s)| (*s, *p)).collect();
        let outer_ids: HashSet<ColId> = outer.output().into_iter().collect();
        let inner_ids: HashSet<ColId> = cols.iter().map(|c| c.1).collect();
        let mut need: HashSet<ColId> = needed
            .iter()
            .map(|c| *scan.rename.get(c).unwrap_or(c))
            .collect();
        on.iter().for_each(|p| refs(p, &mut need));
        let outer_need: HashSet<ColId> = need
            .iter()
            .filter(|c| outer_ids.contains(c))
            .copied()
            .collect();
        let (oplan, olayout) = self.lower(outer, &outer_need)?;
        // Inner columns: those of the inner predicates first (fetched, then
        // filtered, before the others are fetched).
        let mut filter_ids = HashSet::new();
        filters.iter().for_each(|f| refs(f, &mut filter_ids));
        let mut inner_need: HashSet<ColId> = need
            .iter()
            .filter(|c| inner_ids.contains(c))
            .copied()
            .collect();
        inner_need.extend(filter_ids.iter().copied());
        let mut inner_read: Vec<(usize, ColId)> = cols
            .iter()
            .filter(|c| filter_ids.contains(&c.1))
            .copied()
            .collect();
        inner_read.extend(
            cols.iter()
                .filter(|c| inner_need.contains(&c.1) && !filter_ids.contains(&c.1))
                .copied(),
        );
        let ilayout: Vec<ColId> = inner_read.iter().map(|c| c.1).collect();
        let probe_keys = probe
            .keys
            .iter()
            .map(|k| remap(k, &olayout))
            .collect::<SqlResult<Vec<_>>>()?;
        let inner_filter = conjunction(filters.to_vec())
            .map(|f| remap(&f, &ilayout))
            .transpose()?;
        let rest: Vec<PhysExpr> = on
            .iter()
            .enumerate()
            // Index keys hold text without trailing blanks, so an index probe on a VARCHAR
            // key also finds values that differ only in them: such a key stays checked.
            .filter(|(i, p)| !probe.used.contains(i) || compares_varchar(p))
            .map(|(_, p)| p.clone())
            .collect();
        let mut both = olayout.clone();
        both.extend(ilayout.iter().copied());
        let residual = conjunction(rest).map(|r| remap(&r, &both)).transpose()?;
        let mut layout = olayout;
        if join_type.emits_build_columns() {
            layout.extend(ilayout.iter().map(|c| *back.get(c).unwrap_or(c)));
        }
        let output: Vec<DataType> = self.types(&layout);
        let columns: Vec<usize> = inner_read.iter().map(|c| c.0).collect();
        // Costed on the same column set; checked again on the final order.
        let index_only = index_only && probe.index.index_only_layout(&columns).is_some();
        let kind = PlanKind::IndexJoin {
            join_type: *join_type,
            probe: Box::new(oplan),
            table: table.clone(),
            index: probe.index,
            probe_keys,
            columns,
            inner_filter,
            residual,
            index_only,
        };
        Ok(Some((
            self.node(plan, "index_nested_loop_join", kind, output),
            layout,
        )))
    }
}
