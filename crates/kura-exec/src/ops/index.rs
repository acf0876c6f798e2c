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
//! A morsel is sized by the table pages its rows need, not by leaves or probe
//! rows: an index scan cuts a piece into slices of its rows, and an index join
//! its probe input into short runs of keys, so that each morsel's reads fit the
//! pins its task may hold and many tasks keep the disk's queue full.
//!
//! Columns the index entries store exactly (key columns of fixed width,
//! included columns) are decoded from the leaves fixed in round 0 and never
//! fetched from the table. When that is every column needed the read is
//! index-only: no further rounds, no table page.

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
use crate::pipeline::{morsel_page_target, Emit, Source};
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

/// Which of an index operator's columns come from the index entries (key
/// columns that decode exactly, included columns) and which from the table: a
/// column the entries hold costs no table page, even when others must be
/// fetched. When all come from the entries the read is index-only.
struct ColumnSources {
    /// Where a read of the entries puts each stored column; `None` when no
    /// column comes from the entries.
    decode: Option<Vec<Option<usize>>>,
    /// Whether output column `i` comes from the entries.
    stored: Vec<bool>,
}

impl ColumnSources {
    /// The sources of `columns`, or an error when the plan asked for an
    /// index-only read the index cannot serve.
    fn of(index: &IndexSource, columns: &[usize], index_only: bool) -> ExecResult<ColumnSources> {
        let (wanted, stored) = index.stored_layout(columns);
        if index_only && !stored.iter().all(|&s| s) {
            return Err(ExecError::Internal(format!(
                "index {} does not store every column the plan reads from it",
                index.name
            )));
        }
        let decode = stored.iter().any(|&s| s).then_some(wanted);
        Ok(ColumnSources { decode, stored })
    }

    /// Positions among `at` of the columns the table must give.
    fn table_positions(&self, at: std::ops::Range<usize>) -> Vec<usize> {
        at.filter(|&i| !self.stored[i]).collect()
    }

    fn index_only(&self) -> bool {
        self.stored.iter().all(|&s| s)
    }
}

/// Table columns at positions `at` of `columns`.
fn table_columns(columns: &[usize], at: &[usize]) -> Vec<usize> {
    at.iter().map(|&i| columns[i]).collect()
}

/// Empty vectors of the table columns `columns`.
fn empty_columns(table: &dyn TableSource, columns: &[usize], rows: usize) -> Vec<Vector> {
    columns
        .iter()
        .map(|&c| Vector::new(table.columns()[c].data_type, rows))
        .collect()
}

/// Rows of a piece: row ids, and (at their output positions) the columns
/// decoded from the index entries.
type Found = (Vec<u64>, Vec<Option<Vector>>);

/// One morsel of an index scan: slice `slice` of `of` equal slices of piece
/// `piece`'s rows (in row order). A fetching scan cuts a piece whose rows need
/// more table pages than a task can have in flight into slices, so that many
/// tasks read at once (paper 003); an index-only scan reads no table page and
/// keeps one slice per piece.
#[derive(Debug, Clone, Copy)]
struct Slice {
    piece: usize,
    slice: usize,
    of: usize,
}

/// A piece's rows once its leaves were read, shared by its slices; dropped when
/// the last slice has taken its share.
#[derive(Default)]
struct PieceRows {
    found: Option<Arc<Found>>,
    slices_left: usize,
}

/// Reads the rows an index range finds.
pub struct IndexScanSource {
    table: Arc<dyn TableSource>,
    index: Arc<IndexSource>,
    columns: Vec<usize>,
    filter: Option<PhysExpr>,
    sources: ColumnSources,
    /// Positions of the columns read from the table, and those table columns.
    fetch_at: Vec<usize>,
    fetch_columns: Vec<usize>,
    node: usize,
    pieces: Vec<LeafRange>,
    slices: Vec<Slice>,
    /// Rows of each piece, read once by whichever of its slices comes first.
    rows: Vec<Mutex<PieceRows>>,
}

/// Slices a fetching scan cuts a piece of about `rows` rows into: enough that
/// each needs about `target` table pages at most, counting a page per column
/// per row (rows on a shared page only make slices smaller than needed), and
/// no slice shorter than [`MIN_SLICE_ROWS`] rows by the estimate.
fn slices_for(rows: f64, columns: usize, target: usize) -> usize {
    let by_pages = (rows * columns as f64 / target.max(1) as f64).ceil();
    let by_rows = (rows / MIN_SLICE_ROWS as f64).floor().max(1.0);
    by_pages.min(by_rows).max(1.0) as usize
}

/// Rows below which a slice is not worth its task.
const MIN_SLICE_ROWS: usize = 16;

impl IndexScanSource {
    /// Cuts the ranges into pieces (reads the index's inner nodes) and the
    /// pieces of a fetching scan into slices.
    pub fn new(
        table: Arc<dyn TableSource>,
        index: Arc<IndexSource>,
        ranges: &[KeyRange],
        columns: Vec<usize>,
        filter: Option<PhysExpr>,
        index_only: bool,
        node: usize,
    ) -> ExecResult<IndexScanSource> {
        let sources = ColumnSources::of(&index, &columns, index_only)?;
        let fetch_at = sources.table_positions(0..columns.len());
        let fetch_columns = table_columns(&columns, &fetch_at);
        let target = match table.buffer_manager() {
            Some(bm) if !fetch_columns.is_empty() => Some(morsel_page_target(&bm)),
            _ => None,
        };
        // Each piece's rows by the estimate of its range (exact for a range
        // within a few leaves), shared out by leaves.
        let mut pieces = Vec::new();
        let mut piece_rows = Vec::new();
        for r in ranges {
            let of_range = index.pieces(r)?;
            let leaves: usize = of_range.iter().map(|p| p.leaves.len()).sum();
            let spanned = leaves as f64 * index.entries_per_leaf();
            let estimate = if target.is_some() {
                index.estimate(r).unwrap_or(spanned).min(spanned)
            } else {
                spanned
            };
            for p in &of_range {
                piece_rows.push(estimate * p.leaves.len() as f64 / leaves.max(1) as f64);
            }
            pieces.extend(of_range);
        }
        let mut slices = Vec::new();
        let mut rows = Vec::with_capacity(pieces.len());
        for (piece, &estimate) in piece_rows.iter().enumerate() {
            let of = target.map_or(1, |t| slices_for(estimate, fetch_columns.len(), t));
            slices.extend((0..of).map(|slice| Slice { piece, slice, of }));
            rows.push(Mutex::new(PieceRows {
                found: None,
                slices_left: of,
            }));
        }
        Ok(IndexScanSource {
            table,
            index,
            columns,
            filter,
            sources,
            fetch_at,
            fetch_columns,
            node,
            pieces,
            slices,
            rows,
        })
    }

    /// Row ids of a piece in row order (fetching then walks each column's pages
    /// once), and the columns the entries store, decoded (in row order too, so
    /// every plan gives rows alike).
    fn piece_rows(&self, piece: &LeafRange) -> ExecResult<Found> {
        let Some(layout) = &self.sources.decode else {
            let mut rows = self.index.scan_piece(piece)?;
            rows.sort_unstable();
            return Ok((rows, vec![None; self.columns.len()]));
        };
        let mut cols = empty_columns(self.table.as_ref(), &self.columns, 0);
        let rows = self.index.scan_piece_into(piece, layout, &mut cols)?;
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_unstable_by_key(|&i| rows[i as usize]);
        let sorted = order.iter().map(|&i| rows[i as usize]).collect();
        let cols = cols
            .iter()
            .zip(&self.sources.stored)
            .map(|(c, &stored)| stored.then(|| c.take(&order)))
            .collect();
        Ok((sorted, cols))
    }

    /// The rows of a morsel's piece, read on first use and kept for its other
    /// slices; `last` gives up this slice's hold on them.
    fn rows_of(&self, slice: Slice, last: bool) -> ExecResult<Arc<Found>> {
        let mut held = lock(&self.rows[slice.piece]);
        let found = match &held.found {
            Some(f) => f.clone(),
            None => {
                let f = Arc::new(self.piece_rows(&self.pieces[slice.piece])?);
                held.found = Some(f.clone());
                f
            }
        };
        if last {
            held.slices_left = held.slices_left.saturating_sub(1);
            if held.slices_left == 0 {
                held.found = None;
            }
        }
        Ok(found)
    }

    /// The positions of a slice's rows among its piece's rows.
    fn slice_range(slice: Slice, rows: usize) -> std::ops::Range<usize> {
        rows * slice.slice / slice.of..rows * (slice.slice + 1) / slice.of
    }
}

impl Source for IndexScanSource {
    fn morsels(&self) -> usize {
        self.slices.len()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let slice = self.slices.get(morsel)?;
        let piece = &self.pieces[slice.piece];
        Some((self.index.bm.clone(), piece.leaves.clone()))
    }

    fn more_pages(
        &self,
        morsel: usize,
        round: usize,
    ) -> ExecResult<Option<(Arc<BufferManager>, Vec<PageId>)>> {
        let Some(&slice) = self.slices.get(morsel) else {
            return Ok(None);
        };
        if round != 1 || self.fetch_columns.is_empty() {
            return Ok(None);
        }
        let found = self.rows_of(slice, false)?;
        let rows = &found.0[Self::slice_range(slice, found.0.len())];
        Ok(data_pages(self.table.as_ref(), &self.fetch_columns, rows))
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        let Some(&slice) = self.slices.get(morsel) else {
            return Ok(());
        };
        let io0 = ctx.io_counters();
        let found = self.rows_of(slice, true)?;
        let range = Self::slice_range(slice, found.0.len());
        let rows = &found.0[range.clone()];
        let decoded = &found.1;
        let io1 = ctx.io_counters();
        ctx.record(self.node, |s| {
            s.pages_fixed += io1.0 - io0.0;
            s.pages_read += io1.1 - io0.1;
        });
        for (k, chunk) in rows.chunks(BATCH_SIZE).enumerate() {
            ctx.check_cancel()?;
            let io0 = ctx.io_counters();
            let start = (range.start + k * BATCH_SIZE) as u32;
            let idx: Vec<u32> = (start..start + chunk.len() as u32).collect();
            let mut cols: Vec<Option<Vector>> = decoded
                .iter()
                .map(|c| c.as_ref().map(|c| c.take(&idx)))
                .collect();
            let fetched = fetch(self.table.as_ref(), &self.fetch_columns, chunk)?;
            for (&at, col) in self.fetch_at.iter().zip(fetched) {
                cols[at] = Some(col);
            }
            let batch = batch_of(cols.into_iter().flatten().collect(), chunk.len());
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
    /// The planner's estimate of inner rows per probe row: how many probe
    /// keys a morsel takes so that its fetches fit the pages a task can have
    /// in flight.
    pub matches_per_key: f64,
    pub node: usize,
}

/// Probe keys per morsel of an index join that reads `fetched` columns from
/// the table: as many as need about [`morsel_page_target`] pages (a page per
/// fetched column per match; an index-only join a leaf per key), at least
/// [`MIN_MORSEL_KEYS`], at most a batch.
fn keys_per_morsel(spec: &IndexJoinSpec, fetched: usize) -> usize {
    let Some(bm) = spec.table.buffer_manager() else {
        return BATCH_SIZE;
    };
    let pages_per_key = if fetched == 0 {
        1.0
    } else {
        spec.matches_per_key.max(1.0) * fetched as f64
    };
    let keys = (morsel_page_target(&bm) as f64 / pages_per_key).floor() as usize;
    keys.clamp(MIN_MORSEL_KEYS, BATCH_SIZE)
}

/// Probe keys below which a morsel of an index join is not worth its task.
const MIN_MORSEL_KEYS: usize = 8;

/// How far one batch of probe keys has got.
#[derive(Default)]
struct JoinPiece {
    keys: Option<Vec<Vec<Value>>>,
    /// `(probe row, row id)` matches in probe order.
    found: Option<Vec<(usize, u64)>>,
    /// Distinct inner rows (ascending) that passed the inner predicates, and
    /// the columns known for them so far (decoded from the entries or fetched),
    /// at their output positions.
    rows: Option<Vec<u64>>,
    fetched: Vec<Option<Vector>>,
    /// The inner predicates were applied to `rows`.
    filtered: bool,
}

/// An index nested-loop join over its materialised probe input.
pub struct IndexJoinSource {
    spec: IndexJoinSpec,
    sources: ColumnSources,
    inner_types: Vec<DataType>,
    probe: Vec<Batch>,
    pieces: Vec<Mutex<JoinPiece>>,
}

impl IndexJoinSource {
    /// `probe`: the outer input's batches, compacted, of at most a batch each;
    /// cut further into morsels of [`keys_per_morsel`] probe rows.
    pub fn new(spec: IndexJoinSpec, probe: Vec<Batch>) -> ExecResult<IndexJoinSource> {
        let sources = ColumnSources::of(&spec.index, &spec.columns, spec.index_only)?;
        let fetched = sources.table_positions(0..spec.columns.len()).len();
        let keys = keys_per_morsel(&spec, fetched);
        let probe: Vec<Batch> = probe
            .into_iter()
            .flat_map(|b| super::split_rows(b, keys))
            .collect();
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
        Ok(IndexJoinSource {
            sources,
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
        let Some(layout) = &self.sources.decode else {
            let found = self.spec.index.lookup_many(keys)?;
            let mut rows: Vec<u64> = found.iter().map(|p| p.1).collect();
            rows.sort_unstable();
            rows.dedup();
            piece.found = Some(found);
            piece.rows = Some(rows);
            piece.fetched = vec![None; self.spec.columns.len()];
            return Ok(());
        };
        // Each matching entry is decoded once; the distinct rows (ascending)
        // take the stored columns from their first entry.
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
        piece.fetched = cols
            .iter()
            .zip(&self.sources.stored)
            .map(|(c, &stored)| stored.then(|| c.take(&take)))
            .collect();
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
        // Columns the entries store were decoded with the search already.
        self.fetch_missing(piece, 0..nf, &rows)?;
        let first: Vec<Vector> = piece.fetched[..nf].iter().flatten().cloned().collect();
        let keep = selection_of(&f.eval(&batch_of(first, rows.len()))?)?;
        if keep.len() < rows.len() {
            rows = keep.iter().map(|&k| rows[k as usize]).collect();
            for c in piece.fetched.iter_mut().flatten() {
                *c = c.take(&keep);
            }
        }
        piece.rows = Some(rows);
        Ok(())
    }

    /// Fetches from the table the columns at positions `at` not known yet.
    fn fetch_missing(
        &self,
        piece: &mut JoinPiece,
        at: std::ops::Range<usize>,
        rows: &[u64],
    ) -> ExecResult<()> {
        let missing: Vec<usize> = at.filter(|&i| piece.fetched[i].is_none()).collect();
        let columns = table_columns(&self.spec.columns, &missing);
        let got = fetch(self.spec.table.as_ref(), &columns, rows)?;
        for (i, col) in missing.into_iter().zip(got) {
            piece.fetched[i] = Some(col);
        }
        Ok(())
    }

    /// Step 4: the remaining columns of the surviving rows.
    fn fetch_rest(&self, morsel: usize, piece: &mut JoinPiece) -> ExecResult<()> {
        self.filter(morsel, piece)?;
        let rows = piece.rows.take().unwrap_or_default();
        let all = 0..self.spec.columns.len();
        let fetched = self.fetch_missing(piece, all, &rows);
        piece.rows = Some(rows);
        fetched
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
        let inner: Vec<Vector> = piece.fetched.into_iter().flatten().collect();
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
        if self.sources.index_only() {
            return Ok(None);
        }
        let mut piece = lock(slot);
        let table = self.spec.table.as_ref();
        let (nf, all) = (self.filter_columns(), self.spec.columns.len());
        let from_table = |at| table_columns(&self.spec.columns, &self.sources.table_positions(at));
        Ok(match round {
            1 => {
                self.search(morsel, &mut piece)?;
                let rows = piece.rows.as_deref().unwrap_or_default();
                let first = if nf > 0 { 0..nf } else { 0..all };
                data_pages(table, &from_table(first), rows)
            }
            2 if nf > 0 && nf < all => {
                self.filter(morsel, &mut piece)?;
                let rows = piece.rows.as_deref().unwrap_or_default();
                data_pages(table, &from_table(nf..all), rows)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_need_about_the_target_pages_and_keep_enough_rows() {
        // 32,000 rows, 4 columns: 128,000 pages at most.
        assert_eq!(slices_for(32_000.0, 4, 512), 250);
        assert_eq!(slices_for(32_000.0, 4, 1 << 20), 1);
        // Never slices of fewer than MIN_SLICE_ROWS rows by the estimate.
        assert_eq!(slices_for(40.0, 8, 64), 2);
        assert_eq!(slices_for(3.0, 8, 1), 1);
        assert_eq!(slices_for(0.0, 4, 512), 1);
    }

    #[test]
    fn slices_cover_every_row_once() {
        for rows in [0usize, 1, 7, 100, 1001] {
            for of in [1usize, 2, 3, 16, 250] {
                let mut next = 0;
                for slice in 0..of {
                    let r = IndexScanSource::slice_range(
                        Slice {
                            piece: 0,
                            slice,
                            of,
                        },
                        rows,
                    );
                    assert_eq!(r.start, next, "{rows} rows, {of} slices");
                    next = r.end;
                }
                assert_eq!(next, rows);
            }
        }
    }
}
