//! The index range scan (paper 003): a piece is a run of leaves, cut into
//! slices of its rows sized by the table pages they need; round 0 fixes the
//! leaves, round 1 the column pages of the slice's rows.

use std::sync::{Arc, Mutex};

use kura_common::{Vector, BATCH_SIZE};
use kura_storage::index::{KeyRange, LeafRange};
use kura_storage::{BufferManager, PageId};

use super::{batch_of, data_pages, empty_columns, fetch, lock, table_columns, ColumnSources};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::{eval_predicate, PhysExpr};
use crate::index_source::IndexSource;
use crate::pipeline::{morsel_page_target, Emit, Source};
use crate::source::TableSource;

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
        ctx.charge_io(self.node, io0);
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
            ctx.charge_io(self.node, io0);
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
