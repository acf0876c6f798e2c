//! The index nested-loop join (paper 003): its materialised probe input is cut
//! into runs of keys sized by the table pages their matches need; round 0 fixes
//! the leaves where the keys' searches start, round 1 the pages of the columns
//! the inner predicates read, round 2 the other columns of the rows that pass.

use std::sync::{Arc, Mutex};

use kura_common::{Batch, DataType, Value, Vector, BATCH_SIZE};
use kura_storage::{BufferManager, PageId};

use super::{batch_of, data_pages, fetch, lock, table_columns, ColumnSources};
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{selection_of, PhysExpr};
use crate::index_source::IndexSource;
use crate::ops::join::outer_pairs;
use crate::ops::take_or_null;
use crate::pipeline::{morsel_page_target, Emit, Source};
use crate::plan::JoinType;
use crate::source::TableSource;

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
            .flat_map(|b| crate::ops::split_rows(b, keys))
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
        ctx.charge_io(self.spec.node, io0);
        let out = self.output(morsel, piece)?;
        if !out.is_empty() {
            emit(out)?;
        }
        Ok(())
    }
}
