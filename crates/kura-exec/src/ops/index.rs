//! Index operators (paper 003's selective plans): the index range scan, a source
//! whose morsels are runs of leaves (one task each; their leaf pages are fixed
//! asynchronously first in the out-of-order mode), and the index nested-loop
//! join, a transform that looks up each probe batch's keys in the inner table's
//! index — one independent piece of work per batch of probe keys.

use std::sync::Arc;

use kura_common::{Batch, DataType, Value, Vector, BATCH_SIZE};
use kura_storage::index::{KeyRange, LeafRange};
use kura_storage::{BufferManager, PageId};

use super::{take_or_null, NO_ROW};
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{compact_batch, eval_predicate, selection_of, PhysExpr};
use crate::index_source::IndexSource;
use crate::pipeline::{Emit, Source, Transform};
use crate::plan::JoinType;
use crate::source::TableSource;

/// Fetches columns `columns` of the rows `row_ids` (ascending, so neighbouring
/// rows share their page: at most one page per column per row).
fn fetch(table: &dyn TableSource, columns: &[usize], row_ids: &[u64]) -> ExecResult<Vec<Vector>> {
    columns
        .iter()
        .map(|&c| table.fetch_rows(c, row_ids))
        .collect()
}

fn batch_of(cols: Vec<Vector>, rows: usize) -> Batch {
    if cols.is_empty() {
        Batch::with_rows(rows)
    } else {
        Batch::new(cols)
    }
}

/// Reads the rows an index range finds.
pub struct IndexScanSource {
    table: Arc<dyn TableSource>,
    index: Arc<IndexSource>,
    columns: Vec<usize>,
    filter: Option<PhysExpr>,
    node: usize,
    pieces: Vec<LeafRange>,
}

impl IndexScanSource {
    /// Cuts the ranges into pieces (reads the index's inner nodes).
    pub fn new(
        table: Arc<dyn TableSource>,
        index: Arc<IndexSource>,
        ranges: &[KeyRange],
        columns: Vec<usize>,
        filter: Option<PhysExpr>,
        node: usize,
    ) -> ExecResult<IndexScanSource> {
        let mut pieces = Vec::new();
        for r in ranges {
            pieces.extend(index.pieces(r)?);
        }
        Ok(IndexScanSource {
            table,
            index,
            columns,
            filter,
            node,
            pieces,
        })
    }
}

impl Source for IndexScanSource {
    fn morsels(&self) -> usize {
        self.pieces.len()
    }

    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let piece = self.pieces.get(morsel)?;
        Some((self.index.bm.clone(), piece.leaves.clone()))
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        let Some(piece) = self.pieces.get(morsel) else {
            return Ok(());
        };
        let io0 = ctx.io_counters();
        let mut rows = self.index.scan_piece(piece)?;
        // Row order, not key order: fetching then walks each column's pages once.
        rows.sort_unstable();
        let io1 = ctx.io_counters();
        ctx.record(self.node, |s| {
            s.pages_fixed += io1.0 - io0.0;
            s.pages_read += io1.1 - io0.1;
        });
        for chunk in rows.chunks(BATCH_SIZE) {
            ctx.check_cancel()?;
            let io0 = ctx.io_counters();
            let batch = batch_of(
                fetch(self.table.as_ref(), &self.columns, chunk)?,
                chunk.len(),
            );
            let io1 = ctx.io_counters();
            ctx.record(self.node, |s| {
                s.pages_fixed += io1.0 - io0.0;
                s.pages_read += io1.1 - io0.1;
            });
            let batch = match &self.filter {
                Some(f) => eval_predicate(f, batch)?,
                None => batch,
            };
            if !batch.is_empty() && !emit(batch)? {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// What an index nested-loop join does, fixed at planning.
pub struct IndexJoinSpec {
    pub join_type: JoinType,
    pub table: Arc<dyn TableSource>,
    pub index: Arc<IndexSource>,
    pub probe_keys: Vec<PhysExpr>,
    /// Inner columns fetched, in output order.
    pub columns: Vec<usize>,
    /// Over the first `filter_columns` fetched columns only (the planner puts the
    /// columns the inner table's predicates read first), so rows that fail them
    /// are dropped before the other columns are fetched.
    pub inner_filter: Option<PhysExpr>,
    pub filter_columns: usize,
    /// Over probe columns followed by the fetched inner columns.
    pub residual: Option<PhysExpr>,
    pub node: usize,
}

/// The probe side's transform of an index nested-loop join.
pub struct IndexJoinOp {
    spec: IndexJoinSpec,
    inner_types: Vec<DataType>,
}

impl IndexJoinOp {
    pub fn new(spec: IndexJoinSpec) -> ExecResult<IndexJoinOp> {
        if !matches!(
            spec.join_type,
            JoinType::Inner | JoinType::Left | JoinType::Single | JoinType::Semi | JoinType::Anti
        ) {
            return Err(ExecError::Internal(format!(
                "an index nested-loop join cannot run a {:?} join",
                spec.join_type
            )));
        }
        if spec.probe_keys.is_empty() || spec.probe_keys.len() > spec.index.columns.len() {
            return Err(ExecError::Internal(format!(
                "index {} has {} key columns; the join gives {}",
                spec.index.name,
                spec.index.columns.len(),
                spec.probe_keys.len()
            )));
        }
        let inner_types = spec
            .columns
            .iter()
            .map(|&c| {
                spec.table
                    .columns()
                    .get(c)
                    .map(|col| col.data_type)
                    .ok_or_else(|| ExecError::Internal(format!("no inner column #{c}")))
            })
            .collect::<ExecResult<Vec<_>>>()?;
        Ok(IndexJoinOp { spec, inner_types })
    }

    /// The inner rows matching the batch's keys that pass the inner filter:
    /// `(probe row, position in the returned columns)` pairs in probe order, and
    /// the fetched columns of the distinct rows.
    fn matches(&self, keys: &[Vector], n: usize) -> ExecResult<(Vec<(u32, u32)>, Vec<Vector>)> {
        let spec = &self.spec;
        let probes: Vec<Vec<Value>> = (0..n)
            .map(|i| keys.iter().map(|k| k.get_value(i)).collect())
            .collect();
        let found = spec.index.lookup_many(&probes)?;
        let mut rows: Vec<u64> = found.iter().map(|p| p.1).collect();
        rows.sort_unstable();
        rows.dedup();
        // Phase 1: the columns the inner predicates read, for every distinct row.
        let nf = spec.filter_columns.min(spec.columns.len());
        let mut first = fetch(spec.table.as_ref(), &spec.columns[..nf], &rows)?;
        if let Some(f) = &spec.inner_filter {
            let keep = selection_of(&f.eval(&batch_of(first.clone(), rows.len()))?)?;
            if keep.len() < rows.len() {
                rows = keep.iter().map(|&k| rows[k as usize]).collect();
                first = first.iter().map(|c| c.take(&keep)).collect();
            }
        }
        // Phase 2: the rest, for the surviving rows only.
        let rest = fetch(spec.table.as_ref(), &spec.columns[nf..], &rows)?;
        first.extend(rest);
        let pairs = found
            .iter()
            .filter_map(|&(p, r)| {
                rows.binary_search(&r)
                    .ok()
                    .map(|pos| (p as u32, pos as u32))
            })
            .collect();
        Ok((pairs, first))
    }

    fn joined(&self, probe: &Batch, inner: &[Vector], pairs: &[(u32, u32)]) -> Batch {
        let pi: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let ii: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut cols: Vec<Vector> = probe.columns.iter().map(|c| c.take(&pi)).collect();
        cols.extend(inner.iter().map(|c| take_or_null(c, &ii)));
        batch_of(cols, pairs.len())
    }
}

impl Transform for IndexJoinOp {
    fn apply(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let probe = compact_batch(batch);
        let n = probe.num_rows;
        let keys = self
            .spec
            .probe_keys
            .iter()
            .map(|k| k.eval(&probe))
            .collect::<ExecResult<Vec<_>>>()?;
        let io0 = ctx.io_counters();
        let (mut pairs, inner) = self.matches(&keys, n)?;
        let io1 = ctx.io_counters();
        ctx.record(self.spec.node, |s| {
            s.pages_fixed += io1.0 - io0.0;
            s.pages_read += io1.1 - io0.1;
        });
        debug_assert_eq!(inner.len(), self.inner_types.len());
        if let Some(res) = &self.spec.residual {
            if !pairs.is_empty() {
                let joined = self.joined(&probe, &inner, &pairs);
                let keep = selection_of(&res.eval(&joined)?)?;
                pairs = keep.iter().map(|&k| pairs[k as usize]).collect();
            }
        }
        let out = match self.spec.join_type {
            JoinType::Inner => self.joined(&probe, &inner, &pairs),
            JoinType::Left | JoinType::Single => {
                let mut full = Vec::with_capacity(pairs.len().max(n));
                let mut k = 0;
                for row in 0..n as u32 {
                    let start = k;
                    while k < pairs.len() && pairs[k].0 == row {
                        full.push(pairs[k]);
                        k += 1;
                    }
                    if k == start {
                        full.push((row, NO_ROW));
                    } else if k - start > 1 && self.spec.join_type == JoinType::Single {
                        return Err(ExecError::SubqueryTooManyRows);
                    }
                }
                self.joined(&probe, &inner, &full)
            }
            JoinType::Semi | JoinType::Anti => {
                let mut matched = vec![false; n];
                for p in &pairs {
                    matched[p.0 as usize] = true;
                }
                let want = self.spec.join_type == JoinType::Semi;
                let sel = (0..n as u32)
                    .filter(|&i| matched[i as usize] == want)
                    .collect();
                Batch {
                    selection: Some(sel),
                    ..probe
                }
            }
            other => {
                return Err(ExecError::Internal(format!(
                    "an index nested-loop join cannot run a {other:?} join"
                )))
            }
        };
        Ok(Some(out))
    }
}
