//! Index operators (paper 003's selective plans), both written as sources whose
//! morsels are independent pieces that fix their pages in rounds, so that in the
//! out-of-order mode each piece is a task that suspends on its reads:
//! - the index range scan: a piece is a run of leaves; round 0 fixes the leaves,
//!   round 1 the column pages of the rows they name;
//! - the index nested-loop join: its (materialised) probe input is cut into
//!   batches of keys; round 0 fixes the leaves where the keys' searches start,
//!   round 1 the pages of the columns the inner predicates read, round 2 the
//!   other columns of the rows that pass them.
//!
//! In the serial and static modes the same pieces run with synchronous fixes.
//!
//! Index-only variants of both (the columns needed are all stored in the index
//! entries, as key or included columns) decode the columns from the leaves they
//! already fixed in round 0 and have no further rounds: no table page is read.

use std::sync::{Arc, Mutex};

use kura_common::{Batch, DataType, Value, Vector, BATCH_SIZE};
use kura_storage::index::{KeyRange, LeafRange};
use kura_storage::{BufferManager, PageId};

use super::join::outer_pairs;
use super::take_or_null;
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{eval_predicate, selection_of, PhysExpr};
use crate::index_source::IndexSource;
use crate::pipeline::{Emit, Source};
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

/// The pages of `columns` holding rows `rows` (ascending), with their buffer.
fn data_pages(
    table: &dyn TableSource,
    columns: &[usize],
    rows: &[u64],
) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
    let bm = table.buffer_manager()?;
    let mut pages = Vec::new();
    for &c in columns {
        pages.extend(table.row_pages(c, rows));
    }
    Some((bm, pages))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where an index-only read puts each stored column of an entry (see
/// `IndexSource::index_only_layout`), or an error when the plan asked for an
/// index-only read the index cannot serve.
fn index_only_layout(
    index: &IndexSource,
    columns: &[usize],
    index_only: bool,
) -> ExecResult<Option<Vec<Option<usize>>>> {
    if !index_only {
        return Ok(None);
    }
    index.index_only_layout(columns).map(Some).ok_or_else(|| {
        ExecError::Internal(format!(
            "index {} does not store every column the plan reads from it",
            index.name
        ))
    })
}

/// Empty vectors of the table columns `columns`.
fn empty_columns(table: &dyn TableSource, columns: &[usize], rows: usize) -> Vec<Vector> {
    columns
        .iter()
        .map(|&c| Vector::new(table.columns()[c].data_type, rows))
        .collect()
}

/// Rows of a piece: row ids, and the columns when they were decoded from the
/// index entries.
type Found = (Vec<u64>, Option<Vec<Vector>>);

/// Reads the rows an index range finds.
pub struct IndexScanSource {
    table: Arc<dyn TableSource>,
    index: Arc<IndexSource>,
    columns: Vec<usize>,
    filter: Option<PhysExpr>,
    /// Set for an index-only scan: where each stored column goes.
    layout: Option<Vec<Option<usize>>>,
    node: usize,
    pieces: Vec<LeafRange>,
    /// Row ids of each piece once its leaves were read (round 1), for `produce`.
    found: Vec<Mutex<Option<Found>>>,
}

impl IndexScanSource {
    /// Cuts the ranges into pieces (reads the index's inner nodes).
    pub fn new(
        table: Arc<dyn TableSource>,
        index: Arc<IndexSource>,
        ranges: &[KeyRange],
        columns: Vec<usize>,
        filter: Option<PhysExpr>,
        index_only: bool,
        node: usize,
    ) -> ExecResult<IndexScanSource> {
        let layout = index_only_layout(&index, &columns, index_only)?;
        let mut pieces = Vec::new();
        for r in ranges {
            pieces.extend(index.pieces(r)?);
        }
        let found = pieces.iter().map(|_| Mutex::new(None)).collect();
        Ok(IndexScanSource {
            table,
            index,
            columns,
            filter,
            layout,
            node,
            pieces,
            found,
        })
    }

    /// Row ids of a piece in row order (fetching then walks each column's pages
    /// once), from round 1 when it ran; an index-only scan also decodes the
    /// columns (and keeps row order too, so both plans give rows alike).
    fn rows(&self, morsel: usize) -> ExecResult<Found> {
        if let Some(r) = lock(&self.found[morsel]).take() {
            return Ok(r);
        }
        let piece = &self.pieces[morsel];
        let Some(layout) = &self.layout else {
            let mut rows = self.index.scan_piece(piece)?;
            rows.sort_unstable();
            return Ok((rows, None));
        };
        let mut cols = empty_columns(self.table.as_ref(), &self.columns, 0);
        let rows = self.index.scan_piece_into(piece, layout, &mut cols)?;
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_unstable_by_key(|&i| rows[i as usize]);
        let sorted = order.iter().map(|&i| rows[i as usize]).collect();
        let cols = cols.iter().map(|c| c.take(&order)).collect();
        Ok((sorted, Some(cols)))
    }
}

impl Source for IndexScanSource {
    fn morsels(&self) -> usize {
        self.pieces.len()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let piece = self.pieces.get(morsel)?;
        Some((self.index.bm.clone(), piece.leaves.clone()))
    }

    fn more_pages(
        &self,
        morsel: usize,
        round: usize,
    ) -> ExecResult<Option<(Arc<BufferManager>, Vec<PageId>)>> {
        if round != 1 || morsel >= self.pieces.len() || self.layout.is_some() {
            return Ok(None);
        }
        let rows = self.rows(morsel)?;
        let pages = data_pages(self.table.as_ref(), &self.columns, &rows.0);
        *lock(&self.found[morsel]) = Some(rows);
        Ok(pages)
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        if morsel >= self.pieces.len() {
            return Ok(());
        }
        let io0 = ctx.io_counters();
        let (rows, decoded) = self.rows(morsel)?;
        let io1 = ctx.io_counters();
        ctx.record(self.node, |s| {
            s.pages_fixed += io1.0 - io0.0;
            s.pages_read += io1.1 - io0.1;
        });
        for (k, chunk) in rows.chunks(BATCH_SIZE).enumerate() {
            ctx.check_cancel()?;
            let io0 = ctx.io_counters();
            let cols = match &decoded {
                Some(cols) => {
                    let start = (k * BATCH_SIZE) as u32;
                    let idx: Vec<u32> = (start..start + chunk.len() as u32).collect();
                    cols.iter().map(|c| c.take(&idx)).collect()
                }
                None => fetch(self.table.as_ref(), &self.columns, chunk)?,
            };
            let batch = batch_of(cols, chunk.len());
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
    /// The inner columns come from the index entries (no table page is read).
    pub index_only: bool,
    pub node: usize,
}

/// How far one batch of probe keys has got.
#[derive(Default)]
struct JoinPiece {
    keys: Option<Vec<Vec<Value>>>,
    /// `(probe row, row id)` matches in probe order.
    found: Option<Vec<(usize, u64)>>,
    /// Distinct inner rows (ascending) that passed the inner predicates, and
    /// the columns fetched for them so far.
    rows: Option<Vec<u64>>,
    fetched: Vec<Vector>,
    /// The inner predicates were applied to `rows`.
    filtered: bool,
}

/// An index nested-loop join over its materialised probe input.
pub struct IndexJoinSource {
    spec: IndexJoinSpec,
    /// Set for an index-only join: where each stored column goes.
    layout: Option<Vec<Option<usize>>>,
    inner_types: Vec<DataType>,
    probe: Vec<Batch>,
    pieces: Vec<Mutex<JoinPiece>>,
}

impl IndexJoinSource {
    /// `probe`: the outer input's batches, compacted, of at most a batch each.
    pub fn new(spec: IndexJoinSpec, probe: Vec<Batch>) -> ExecResult<IndexJoinSource> {
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
        let pieces = probe
            .iter()
            .map(|_| Mutex::new(JoinPiece::default()))
            .collect();
        let layout = index_only_layout(&spec.index, &spec.columns, spec.index_only)?;
        Ok(IndexJoinSource {
            layout,
            spec,
            inner_types,
            probe,
            pieces,
        })
    }

    fn filter_columns(&self) -> usize {
        self.spec.filter_columns.min(self.spec.columns.len())
    }

    /// Step 1: the probe keys of a batch, as values.
    fn keys(&self, morsel: usize, piece: &mut JoinPiece) -> ExecResult<()> {
        if piece.keys.is_some() {
            return Ok(());
        }
        let batch = &self.probe[morsel];
        let keys = self
            .spec
            .probe_keys
            .iter()
            .map(|k| k.eval(batch))
            .collect::<ExecResult<Vec<_>>>()?;
        piece.keys = Some(
            (0..batch.num_rows)
                .map(|i| keys.iter().map(|k| k.get_value(i)).collect())
                .collect(),
        );
        Ok(())
    }

    /// Step 2: the matching row ids (searches the leaves).
    fn search(&self, morsel: usize, piece: &mut JoinPiece) -> ExecResult<()> {
        self.keys(morsel, piece)?;
        if piece.found.is_some() {
            return Ok(());
        }
        let keys = piece.keys.as_deref().unwrap_or_default();
        let Some(layout) = &self.layout else {
            let found = self.spec.index.lookup_many(keys)?;
            let mut rows: Vec<u64> = found.iter().map(|p| p.1).collect();
            rows.sort_unstable();
            rows.dedup();
            piece.found = Some(found);
            piece.rows = Some(rows);
            return Ok(());
        };
        // Index-only: each matching entry is decoded once; the distinct rows
        // (ascending) take their columns from their first entry.
        let mut cols: Vec<Vector> = self
            .inner_types
            .iter()
            .map(|&t| Vector::new(t, 0))
            .collect();
        let found = self.spec.index.lookup_many_into(keys, layout, &mut cols)?;
        let mut by_row: Vec<(u64, u32)> = found.iter().map(|&(_, r, e)| (r, e)).collect();
        by_row.sort_unstable();
        by_row.dedup_by_key(|p| p.0);
        let take: Vec<u32> = by_row.iter().map(|p| p.1).collect();
        piece.fetched = cols.iter().map(|c| c.take(&take)).collect();
        piece.rows = Some(by_row.into_iter().map(|p| p.0).collect());
        piece.found = Some(found.into_iter().map(|(p, r, _)| (p, r)).collect());
        Ok(())
    }

    /// Step 3: the inner predicates' columns, and the rows that pass them.
    fn filter(&self, morsel: usize, piece: &mut JoinPiece) -> ExecResult<()> {
        self.search(morsel, piece)?;
        let nf = self.filter_columns();
        if piece.filtered {
            return Ok(());
        }
        piece.filtered = true;
        // A filter that reads no column (constant, such as a folded `10 > 42`)
        // still applies: it keeps all rows or none.
        let Some(f) = &self.spec.inner_filter else {
            return Ok(());
        };
        let mut rows = piece.rows.take().unwrap_or_default();
        let spec = &self.spec;
        // Index-only: every column was decoded with the search already.
        if self.layout.is_none() {
            piece.fetched = fetch(spec.table.as_ref(), &spec.columns[..nf], &rows)?;
        }
        let first = batch_of(piece.fetched[..nf].to_vec(), rows.len());
        let keep = selection_of(&f.eval(&first)?)?;
        if keep.len() < rows.len() {
            rows = keep.iter().map(|&k| rows[k as usize]).collect();
            piece.fetched = piece.fetched.iter().map(|c| c.take(&keep)).collect();
        }
        piece.rows = Some(rows);
        Ok(())
    }

    /// Step 4: the remaining columns of the surviving rows.
    fn fetch_rest(&self, morsel: usize, piece: &mut JoinPiece) -> ExecResult<()> {
        self.filter(morsel, piece)?;
        let done = piece.fetched.len();
        let rows = piece.rows.as_deref().unwrap_or_default();
        let rest = fetch(self.spec.table.as_ref(), &self.spec.columns[done..], rows)?;
        piece.fetched.extend(rest);
        Ok(())
    }

    fn joined(&self, probe: &Batch, inner: &[Vector], pairs: &[(u32, u32)]) -> Batch {
        let pi: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let ii: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut cols: Vec<Vector> = probe.columns.iter().map(|c| c.take(&pi)).collect();
        cols.extend(inner.iter().map(|c| take_or_null(c, &ii)));
        batch_of(cols, pairs.len())
    }

    /// Step 5: the join's output for one batch of probe rows.
    fn output(&self, morsel: usize, piece: JoinPiece) -> ExecResult<Batch> {
        let probe = &self.probe[morsel];
        let n = probe.num_rows;
        let rows = piece.rows.unwrap_or_default();
        let inner = piece.fetched;
        debug_assert_eq!(inner.len(), self.inner_types.len());
        let mut pairs: Vec<(u32, u32)> = piece
            .found
            .unwrap_or_default()
            .iter()
            .filter_map(|&(p, r)| {
                rows.binary_search(&r)
                    .ok()
                    .map(|pos| (p as u32, pos as u32))
            })
            .collect();
        if let Some(res) = &self.spec.residual {
            if !pairs.is_empty() {
                let joined = self.joined(probe, &inner, &pairs);
                let keep = selection_of(&res.eval(&joined)?)?;
                pairs = keep.iter().map(|&k| pairs[k as usize]).collect();
            }
        }
        Ok(match self.spec.join_type {
            JoinType::Inner => self.joined(probe, &inner, &pairs),
            JoinType::Left | JoinType::Single => {
                let single = self.spec.join_type == JoinType::Single;
                let full = outer_pairs(&pairs, n, single)?;
                self.joined(probe, &inner, &full)
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
                    ..probe.clone()
                }
            }
            other => {
                return Err(ExecError::Internal(format!(
                    "an index nested-loop join cannot run a {other:?} join"
                )))
            }
        })
    }
}

impl Source for IndexJoinSource {
    fn morsels(&self) -> usize {
        self.probe.len()
    }

    /// The index's leaves (interior nodes add about one in a few hundred).
    fn reused_bytes(&self) -> u64 {
        let index = &self.spec.index;
        index.tree.leaf_count * index.bm.page_size() as u64
    }

    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let mut piece = lock(self.pieces.get(morsel)?);
        // An error here surfaces again when the piece runs.
        self.keys(morsel, &mut piece).ok()?;
        let leaves = self
            .spec
            .index
            .leaves_for(piece.keys.as_deref().unwrap_or_default())
            .ok()?;
        Some((self.spec.index.bm.clone(), leaves))
    }

    fn more_pages(
        &self,
        morsel: usize,
        round: usize,
    ) -> ExecResult<Option<(Arc<BufferManager>, Vec<PageId>)>> {
        let Some(slot) = self.pieces.get(morsel) else {
            return Ok(None);
        };
        if self.layout.is_some() {
            return Ok(None);
        }
        let mut piece = lock(slot);
        let table = self.spec.table.as_ref();
        let nf = self.filter_columns();
        Ok(match round {
            1 => {
                self.search(morsel, &mut piece)?;
                let rows = piece.rows.as_deref().unwrap_or_default();
                let first = if nf > 0 {
                    &self.spec.columns[..nf]
                } else {
                    &self.spec.columns[..]
                };
                data_pages(table, first, rows)
            }
            2 if nf > 0 && nf < self.spec.columns.len() => {
                self.filter(morsel, &mut piece)?;
                let rows = piece.rows.as_deref().unwrap_or_default();
                data_pages(table, &self.spec.columns[nf..], rows)
            }
            _ => None,
        })
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        let Some(slot) = self.pieces.get(morsel) else {
            return Ok(());
        };
        ctx.check_cancel()?;
        let io0 = ctx.io_counters();
        let piece = {
            let mut piece = lock(slot);
            self.fetch_rest(morsel, &mut piece)?;
            std::mem::take(&mut *piece)
        };
        let io1 = ctx.io_counters();
        ctx.record(self.spec.node, |s| {
            s.pages_fixed += io1.0 - io0.0;
            s.pages_read += io1.1 - io0.1;
        });
        let out = self.output(morsel, piece)?;
        if !out.is_empty() {
            emit(out)?;
        }
        Ok(())
    }
}
