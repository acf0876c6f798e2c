//! External merge sort: sorted runs written to temporary files in blocks, merged
//! a bounded number at a time reading each run block by block, and the sorted
//! result read back one block per morsel.

use std::cmp::Ordering;

use kura_common::{Batch, ColumnData, DataType, StrVec, Vector, BATCH_SIZE};

use super::join::vector_bytes;
use super::sort_order::Ordered;
use super::sort_run::cmp_rows;
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::pipeline::{Emit, Source};
use crate::plan::SortKey;
use crate::spill::{SpillFile, SpillReader, READ_AHEAD};

/// Rows per block of a run file: one block is what a merge holds of each run.
pub(super) const BLOCK_ROWS: usize = BATCH_SIZE;

/// The most runs one merge reads at once, however much memory there is: more
/// cursors make each step of the heap slower and the reads smaller.
const MAX_FAN_IN: usize = 64;

/// How a sort's runs are laid out: the row columns, then the evaluated sort
/// keys (kept, not evaluated again when read: a key may be `random()`).
#[derive(Clone)]
pub(crate) struct RunFormat {
    pub types: Vec<DataType>,
    pub keys: Vec<SortKey>,
    /// The plan node charged with the bytes written (EXPLAIN ANALYZE).
    pub node: usize,
}

impl RunFormat {
    /// Every column of a block: the rows' types, then the keys'.
    fn block_types(&self) -> Vec<DataType> {
        self.types
            .iter()
            .copied()
            .chain(self.keys.iter().map(|k| k.expr.data_type()))
            .collect()
    }
}

/// A sorted run in a temporary file, in blocks of [`BLOCK_ROWS`] rows.
pub(crate) struct SpilledRun {
    file: SpillFile,
    rows: usize,
    /// The largest block's size in memory once read back.
    block_bytes: u64,
}

impl SpilledRun {
    #[cfg(test)]
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// Writes a run block by block as its rows come (a merge's output).
pub(crate) struct RunWriter {
    file: SpillFile,
    rows: usize,
    block_bytes: u64,
    pending: Vec<Vector>,
    pending_rows: usize,
    node: usize,
}

impl RunWriter {
    pub fn new(node: usize, ctx: &ExecContext) -> ExecResult<RunWriter> {
        let file = SpillFile::create(&ctx.spill)?;
        ctx.record(node, |s| s.spill_files += 1);
        Ok(RunWriter {
            file,
            rows: 0,
            block_bytes: 0,
            pending: Vec::new(),
            pending_rows: 0,
            node,
        })
    }

    /// Appends `rows` rows (`columns`: every column of the format, each of
    /// `rows` values); full blocks are written.
    pub fn push(&mut self, columns: Vec<Vector>, rows: usize, ctx: &ExecContext) -> ExecResult<()> {
        if rows == 0 {
            return Ok(());
        }
        if self.pending_rows == 0 && rows == BLOCK_ROWS {
            return self.write(&columns, rows, ctx);
        }
        if self.pending_rows == 0 {
            self.pending = columns;
        } else {
            for (to, from) in self.pending.iter_mut().zip(&columns) {
                to.append(from);
            }
        }
        self.pending_rows += rows;
        if self.pending_rows >= BLOCK_ROWS {
            self.flush(ctx)?;
        }
        Ok(())
    }

    fn flush(&mut self, ctx: &ExecContext) -> ExecResult<()> {
        if self.pending_rows > 0 {
            let pending = std::mem::take(&mut self.pending);
            let rows = std::mem::take(&mut self.pending_rows);
            self.write(&pending, rows, ctx)?;
        }
        Ok(())
    }

    fn write(&mut self, columns: &[Vector], rows: usize, ctx: &ExecContext) -> ExecResult<()> {
        let in_memory: u64 = columns.iter().map(vector_bytes).sum();
        self.block_bytes = self.block_bytes.max(in_memory);
        let written = self.file.write(columns, rows)?;
        self.rows += rows;
        ctx.record(self.node, |s| s.spilled_bytes += written);
        Ok(())
    }

    pub fn finish(mut self, ctx: &ExecContext) -> ExecResult<SpilledRun> {
        self.flush(ctx)?;
        self.file.seal()?;
        Ok(SpilledRun {
            file: self.file,
            rows: self.rows,
            block_bytes: self.block_bytes,
        })
    }
}

/// Writes a run in sort order to a temporary file, gathering a block at a
/// time: the run never has a sorted copy of itself beside it.
pub(super) fn write_ordered(
    run: Ordered,
    format: &RunFormat,
    ctx: &ExecContext,
) -> ExecResult<SpilledRun> {
    let mut w = RunWriter::new(format.node, ctx)?;
    ctx.record(format.node, |s| s.spill_runs += 1);
    let n = run.len();
    for start in (0..n).step_by(BLOCK_ROWS) {
        ctx.check_cancel()?;
        let len = BLOCK_ROWS.min(n - start);
        w.push(run.block(start, len), len, ctx)?;
    }
    w.finish(ctx)
}

/// Reads one run block by block during a merge.
struct Cursor<'a> {
    blocks: SpillReader<'a>,
    columns: Vec<Vector>,
    rows: usize,
    at: usize,
}

impl Cursor<'_> {
    /// Reads the run's next block; false when there is none.
    fn advance(&mut self) -> ExecResult<bool> {
        self.at = 0;
        self.rows = 0;
        self.columns.clear();
        let Some((columns, rows)) = self.blocks.next_block()? else {
            return Ok(false);
        };
        self.columns = columns;
        self.rows = rows;
        Ok(rows > 0 || self.advance()?)
    }
}

/// Merges `runs` in order into `out`, at most `limit` rows; ties keep the
/// earlier run's row first, so merging consecutive runs stays stable.
fn merge_into(
    runs: &[SpilledRun],
    format: &RunFormat,
    limit: usize,
    out: &mut RunWriter,
    ctx: &ExecContext,
) -> ExecResult<()> {
    let types = format.block_types();
    let width = format.types.len();
    let keys = &format.keys;
    let mut cursors: Vec<Cursor> = runs
        .iter()
        .map(|run| Cursor {
            blocks: run.file.reader(types.clone()),
            columns: Vec::new(),
            rows: 0,
            at: 0,
        })
        .collect();
    let mut heap: Vec<usize> = Vec::with_capacity(cursors.len());
    for (i, c) in cursors.iter_mut().enumerate() {
        if c.advance()? {
            heap.push(i);
        }
    }
    // Whether cursor `a`'s row goes before cursor `b`'s.
    let before = |cursors: &[Cursor], a: usize, b: usize| {
        let (x, y) = (&cursors[a], &cursors[b]);
        cmp_rows(keys, &x.columns[width..], x.at, &y.columns[width..], y.at).then(a.cmp(&b))
            == Ordering::Less
    };
    for i in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, i, &cursors, &before);
    }
    let mut picks: Vec<(u32, u32)> = Vec::with_capacity(BLOCK_ROWS);
    let mut emitted = 0usize;
    while let Some(&top) = heap.first() {
        if emitted >= limit {
            break;
        }
        let c = &mut cursors[top];
        picks.push((top as u32, c.at as u32));
        c.at += 1;
        emitted += 1;
        if c.at == c.rows {
            // The block's rows are gathered before it is replaced.
            flush(&cursors, &mut picks, out, ctx)?;
            if cursors[top].advance()? {
                sift_down(&mut heap, 0, &cursors, &before);
            } else {
                let last = heap.len() - 1;
                heap.swap(0, last);
                heap.pop();
                sift_down(&mut heap, 0, &cursors, &before);
            }
        } else {
            if picks.len() >= BLOCK_ROWS {
                flush(&cursors, &mut picks, out, ctx)?;
            }
            sift_down(&mut heap, 0, &cursors, &before);
        }
    }
    flush(&cursors, &mut picks, out, ctx)
}

fn sift_down(
    heap: &mut [usize],
    mut i: usize,
    cursors: &[Cursor],
    before: &impl Fn(&[Cursor], usize, usize) -> bool,
) {
    loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut best = i;
        if l < heap.len() && before(cursors, heap[l], heap[best]) {
            best = l;
        }
        if r < heap.len() && before(cursors, heap[r], heap[best]) {
            best = r;
        }
        if best == i {
            return;
        }
        heap.swap(i, best);
        i = best;
    }
}

/// Gathers the picked rows (cursor, row) of the cursors' current blocks into
/// `out`.
fn flush(
    cursors: &[Cursor],
    picks: &mut Vec<(u32, u32)>,
    out: &mut RunWriter,
    ctx: &ExecContext,
) -> ExecResult<()> {
    if picks.is_empty() {
        return Ok(());
    }
    ctx.check_cancel()?;
    let ncols = cursors.iter().map(|c| c.columns.len()).max().unwrap_or(0);
    let columns: Vec<Vector> = (0..ncols)
        .map(|col| {
            let sources: Vec<Option<&Vector>> =
                cursors.iter().map(|c| c.columns.get(col)).collect();
            gather(&sources, picks)
        })
        .collect();
    let rows = picks.len();
    picks.clear();
    out.push(columns, rows, ctx)
}

/// The values `picks` (source, row) of `sources` (vectors of one type; `None`
/// for a source none is picked from), in that order.
pub(crate) fn gather(sources: &[Option<&Vector>], picks: &[(u32, u32)]) -> Vector {
    let Some(first) = sources.iter().flatten().next() else {
        return Vector::new(DataType::Integer, 0);
    };
    fn pick<T: Copy + Default>(
        sources: &[Option<&Vector>],
        picks: &[(u32, u32)],
        get: impl Fn(&ColumnData) -> Option<&[T]>,
    ) -> Vec<T> {
        let slices: Vec<&[T]> = sources
            .iter()
            .map(|s| s.and_then(|v| get(&v.data)).unwrap_or(&[]))
            .collect();
        picks
            .iter()
            .map(|&(s, r)| {
                slices
                    .get(s as usize)
                    .and_then(|v| v.get(r as usize))
                    .copied()
                    .unwrap_or_default()
            })
            .collect()
    }
    let data = match &first.data {
        ColumnData::Bool(_) => ColumnData::Bool(pick(sources, picks, |d| match d {
            ColumnData::Bool(v) => Some(v),
            _ => None,
        })),
        ColumnData::I32(_) => ColumnData::I32(pick(sources, picks, |d| match d {
            ColumnData::I32(v) => Some(v),
            _ => None,
        })),
        ColumnData::I64(_) => ColumnData::I64(pick(sources, picks, |d| match d {
            ColumnData::I64(v) => Some(v),
            _ => None,
        })),
        ColumnData::I128(_) => ColumnData::I128(pick(sources, picks, |d| match d {
            ColumnData::I128(v) => Some(v),
            _ => None,
        })),
        ColumnData::F64(_) => ColumnData::F64(pick(sources, picks, |d| match d {
            ColumnData::F64(v) => Some(v),
            _ => None,
        })),
        ColumnData::Str(_) => {
            let strs: Vec<Option<&StrVec>> = sources
                .iter()
                .map(|s| match s.map(|v| &v.data) {
                    Some(ColumnData::Str(x)) => Some(x),
                    _ => None,
                })
                .collect();
            let mut out = StrVec::with_capacity(picks.len(), picks.len() * 16);
            for &(s, r) in picks {
                match strs.get(s as usize).copied().flatten() {
                    Some(x) if (r as usize) < x.len() => out.push(x.get_bytes(r as usize)),
                    _ => out.push(b""),
                }
            }
            ColumnData::Str(out)
        }
    };
    let validity = sources
        .iter()
        .flatten()
        .any(|v| v.validity.is_some())
        .then(|| {
            picks
                .iter()
                .map(|&(s, r)| {
                    sources
                        .get(s as usize)
                        .copied()
                        .flatten()
                        .is_some_and(|v| r < v.len() as u32 && !v.is_null(r as usize))
                })
                .collect()
        });
    Vector {
        data_type: first.data_type,
        data,
        validity,
    }
}

/// What a merge holds per run it reads: its largest block, and the bytes
/// read ahead of it.
fn merge_block_bytes(runs: &[SpilledRun]) -> u64 {
    let block = runs.iter().map(|r| r.block_bytes).max().unwrap_or(0);
    block + READ_AHEAD as u64
}

/// How many runs one merge reads at once: a block of each (and the block
/// being gathered and written) within half of what the memory limit leaves.
fn fan_in(runs: &[SpilledRun], ctx: &ExecContext) -> usize {
    let block = merge_block_bytes(runs).max(1);
    let budget = ctx.memory.room() / 2;
    let fit = (budget / block).saturating_sub(2);
    (fit.min(MAX_FAN_IN as u64) as usize).max(2)
}

/// Merges `runs` (in order) into one run of at most `limit` rows: passes of
/// merges of consecutive runs, a bounded number at a time, until one is left.
/// Counts the passes in the node's statistics.
pub(crate) fn merge_runs(
    mut runs: Vec<SpilledRun>,
    format: &RunFormat,
    limit: Option<usize>,
    ctx: &ExecContext,
) -> ExecResult<Option<SpilledRun>> {
    let limit = limit.unwrap_or(usize::MAX);
    while runs.len() > 1 {
        let fan_in = fan_in(&runs, ctx);
        let held = merge_block_bytes(&runs).saturating_mul(fan_in as u64 + 2);
        // The blocks a merge holds count against the limit while it runs.
        // Charged, not reserved: the fan-in fits what is left, and at its
        // least (two runs) a merge must go on whatever others hold.
        ctx.memory.charge(held);
        let merged = merge_pass(runs, format, limit, fan_in, ctx);
        ctx.memory.release(held);
        runs = merged?;
        ctx.record(format.node, |s| s.spill_merge_passes += 1);
    }
    Ok(runs.pop())
}

/// One pass: each `fan_in` consecutive runs become one.
fn merge_pass(
    runs: Vec<SpilledRun>,
    format: &RunFormat,
    limit: usize,
    fan_in: usize,
    ctx: &ExecContext,
) -> ExecResult<Vec<SpilledRun>> {
    let mut next = Vec::with_capacity(runs.len().div_ceil(fan_in));
    let mut runs = runs.into_iter().peekable();
    while runs.peek().is_some() {
        let mut group: Vec<SpilledRun> = runs.by_ref().take(fan_in).collect();
        if group.len() == 1 {
            next.extend(group.pop());
            continue;
        }
        let mut out = RunWriter::new(format.node, ctx)?;
        merge_into(&group, format, limit, &mut out, ctx)?;
        // The group's files go as soon as their rows are merged.
        drop(group);
        next.push(out.finish(ctx)?);
    }
    Ok(next)
}

/// The rows of a spilled, sorted run, a block per morsel (in order): the
/// source of the pipeline above a sort that spilled.
pub(crate) struct SortedRunSource {
    run: SpilledRun,
    /// Every column of a block; the first `width` are the rows'.
    types: Vec<DataType>,
    width: usize,
}

impl SortedRunSource {
    pub fn new(run: SpilledRun, format: &RunFormat) -> SortedRunSource {
        SortedRunSource {
            run,
            types: format.block_types(),
            width: format.types.len(),
        }
    }

    pub fn rows(&self) -> usize {
        self.run.rows
    }
}

impl Source for SortedRunSource {
    fn morsels(&self) -> usize {
        self.run.file.blocks() as usize
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        ctx.check_cancel()?;
        let (mut columns, rows) = self.run.file.read_block(morsel, &self.types)?;
        columns.truncate(self.width);
        let batch = if columns.is_empty() {
            Batch::with_rows(rows)
        } else {
            Batch::new(columns)
        };
        emit(batch)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "sort_spill_tests.rs"]
mod tests;
