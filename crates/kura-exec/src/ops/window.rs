//! Window functions: a blocking operator that gathers its input, sorts it by
//! partition and order keys, and appends one column per window function
//! (ranking functions here; frames in `window_frame`, the functions reading
//! other rows in `window_value`).
//!
//! Past half its memory limit a window with PARTITION BY sorts its input with
//! the external merge sort (`sort_spill`) and computes its functions a chunk
//! of whole partitions at a time as the sorted rows are read back, writing
//! the result to a temporary file: memory holds one chunk, not the input.
//! When every function only looks back — ranks and running aggregates — a
//! partition larger than a chunk (and a window without PARTITION BY, one
//! partition) is cut between peer groups instead, each chunk starting from
//! the ranks and aggregate states the one before ended with. Functions that
//! read the whole partition or rows ahead (`lead`, `ntile`, `percent_rank`,
//! frames ending after the current row) need the partition in memory.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as Atomic};
use std::sync::Mutex;

use kura_common::{Batch, ColumnData, DataType, Vector};

use super::aggregate::{new_acc, Acc};
use super::join::{batch_bytes, vector_bytes};
use super::sort::SortSink;
use super::sort_run::cmp_rows;
use super::sort_spill::{RunFormat, RunWriter, SortedRunSource};
use super::{concat, split};
use crate::context::{ExecContext, OwnShare, NO_NODE};
use crate::error::{ExecError, ExecResult};
use crate::expr::{compact_batch, PhysExpr};
use crate::pipeline::{LocalState, Sink, Source};
use crate::plan::{FrameBound, FramePick, FrameUnits, SortKey, WindowFrame, WindowFunc};

use super::window_layout::Layout;
use super::{window_frame, window_value};

/// A worker's buffered input, or (once the window spills) its state of the
/// external sort the rows go to instead.
#[derive(Default)]
struct Buffered {
    batches: Vec<Batch>,
    sorting: Option<LocalState>,
}

/// Window breaker: every function of one node shares its window.
pub struct WindowSink {
    partition_by: Vec<PhysExpr>,
    order_by: Vec<SortKey>,
    functions: Vec<WindowFunc>,
    types: Vec<DataType>,
    input: Mutex<Vec<Batch>>,
    result: Mutex<Vec<Batch>>,
    /// The plan node whose statistics show what was spilled.
    node: usize,
    /// Set once the window spills: every worker's rows then go to `sorter`.
    spilling: AtomicBool,
    /// The external sort by partition and order keys of a window that spills.
    sorter: SortSink,
    /// The result, when the window spilled.
    result_file: Mutex<Option<SortedRunSource>>,
    /// The rows and results this window holds of the query's memory.
    share: OwnShare,
    /// Whether its functions allow a partition to be computed a chunk at a time.
    streams: bool,
}

/// What a chunk that ends inside a partition hands to the next chunk, which
/// goes on with that partition.
#[derive(Default)]
struct Carry {
    /// Row number, rank and dense rank of the chunk's last row.
    ranks: Ranks,
    /// Per function: a running aggregate's accumulator and its last group (the
    /// state of the partition's rows so far).
    accs: Vec<Option<(Acc, usize)>>,
}

/// Row number, rank and dense rank of a row within its partition.
type Ranks = (i64, i64, i64);

/// Where one function's partition stood at the end of the chunk before: the
/// ranks, and a running aggregate's accumulator with its last group.
type GoingOn<'a> = (Ranks, Option<&'a (Acc, usize)>);

/// A spilled window's chunk of whole partitions is computed once its rows
/// hold this share of the memory the query may still use (or this much).
const CHUNK_SHARE: u64 = 8;
const MAX_CHUNK_BYTES: u64 = 64 << 20;

impl WindowSink {
    pub fn new(
        partition_by: Vec<PhysExpr>,
        order_by: Vec<SortKey>,
        functions: Vec<WindowFunc>,
        types: Vec<DataType>,
    ) -> WindowSink {
        let mut w = WindowSink {
            partition_by,
            order_by,
            functions,
            sorter: SortSink::new(Vec::new(), types.clone(), None),
            types,
            input: Mutex::new(Vec::new()),
            result: Mutex::new(Vec::new()),
            node: NO_NODE,
            spilling: AtomicBool::new(false),
            share: OwnShare::default(),
            result_file: Mutex::new(None),
            streams: false,
        };
        w.streams = streams(&w.functions);
        w.sorter = SortSink::new(w.sort_keys(), w.types.clone(), None);
        w
    }

    /// The plan node charged with spilled bytes (EXPLAIN ANALYZE).
    pub fn with_node(mut self, node: usize) -> Self {
        self.node = node;
        self.sorter = self.sorter.with_node(node);
        self
    }

    /// The result, when the window did not spill (else none).
    pub fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.result.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The result in a temporary file, when the window spilled.
    pub(crate) fn take_spilled(&self) -> Option<SortedRunSource> {
        self.result_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Whether rows go to the external sort from now on: they do already, or
    /// the window holds more than half of what its query leaves it. Without PARTITION BY there is
    /// one partition: it spills only when its functions can be computed a chunk at a
    /// time ([`WindowSink::streams`]), else it is computed in memory whatever its size.
    fn spills(&self, ctx: &ExecContext, extra: u64) -> bool {
        if !self.can_spill() {
            return false;
        }
        if self.spilling.load(Atomic::Relaxed) {
            return true;
        }
        if self.share.past(&ctx.memory, extra, 1, 2) {
            self.spilling.store(true, Atomic::Relaxed);
            return true;
        }
        false
    }

    /// Whether the window's input may go to disk: it has partitions to
    /// compute apart, or its one partition can be computed a chunk at a time.
    fn can_spill(&self) -> bool {
        !self.partition_by.is_empty() || self.streams()
    }

    /// Whether a partition larger than memory can be computed a chunk at a time
    /// (see [`streams`]).
    fn streams(&self) -> bool {
        self.streams
    }

    /// What a memory error names as holding the rows: a partition must be held
    /// whole when a function reads rows ahead of the current one.
    fn what_holds_rows(&self) -> &'static str {
        match self.streams() {
            true => "window",
            false => {
                "window partition (held whole: lead, ntile, percent_rank, cume_dist, \
                 first/last/nth_value and frames ending past the current row read ahead)"
            }
        }
    }

    /// Hands `batches` (whose bytes were reserved here) to the external sort,
    /// which reserves them anew.
    fn to_sorter(
        &self,
        sorting: &mut LocalState,
        batches: Vec<Batch>,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        for b in batches {
            self.share.release(&ctx.memory, batch_bytes(&b));
            self.sorter.consume(sorting, b, ctx)?;
        }
        Ok(())
    }

    /// The window functions over `sorted` rows (sorted by partition and order
    /// keys, whole partitions) whose keys are `vals`: the rows with one column
    /// per function appended.
    ///
    /// `carry`, when the rows go on with the partition the chunk before ended
    /// in, is where that chunk left its ranks and running aggregates; the
    /// returned [`Carry`] is where this chunk leaves them.
    fn compute_all(
        &self,
        keys: &[SortKey],
        sorted: Batch,
        vals: &[Vector],
        ctx: &ExecContext,
        carry: Option<&Carry>,
    ) -> ExecResult<(Batch, Carry)> {
        let rows = sorted.len();
        let layout = self.layout(keys, vals, rows);
        let mut computed = Vec::with_capacity(self.functions.len());
        let mut out = Carry {
            ranks: rank_state(&layout, carry.map(|c| c.ranks)),
            accs: Vec::with_capacity(self.functions.len()),
        };
        for (i, f) in self.functions.iter().enumerate() {
            ctx.check_cancel()?;
            let key = vals.get(self.partition_by.len());
            let from = carry.map(|c| (c.ranks, c.accs.get(i).and_then(Option::as_ref)));
            let (v, acc) = self.compute(f, &sorted, &layout, key, from)?;
            self.share
                .reserve(&ctx.memory, vector_bytes(&v), "window")?;
            computed.push(v);
            out.accs.push(acc);
        }
        let mut columns = sorted.columns;
        columns.extend(computed);
        let batch = if columns.is_empty() {
            Batch::with_rows(rows)
        } else {
            Batch::new(columns)
        };
        Ok((batch, out))
    }

    /// The end of a window that spilled: every row sorted by the external
    /// sort, then the functions computed a chunk of whole partitions at a
    /// time, each chunk's result written to a temporary file.
    fn finish_spilled(&self, ctx: &ExecContext) -> ExecResult<()> {
        let batches = std::mem::take(&mut *self.input.lock().unwrap_or_else(|e| e.into_inner()));
        if !batches.is_empty() {
            let mut sorting = self.sorter.local();
            self.to_sorter(&mut sorting, batches, ctx)?;
            self.sorter.merge(sorting, ctx)?;
        }
        self.sorter.finish(ctx)?;
        // The sorted rows: from the sort's file, or in memory when it did not
        // need one after all.
        let file = self.sorter.take_spilled();
        let mut in_memory = self.sorter.take().into_iter();
        let mut block = 0;
        let mut next = || -> ExecResult<Option<Batch>> {
            match &file {
                Some(f) if block < f.morsels() => {
                    let mut got = None;
                    f.produce(block, ctx, &mut |b| {
                        got = Some(b);
                        Ok(true)
                    })?;
                    block += 1;
                    Ok(got)
                }
                Some(_) => Ok(None),
                None => {
                    // Reserved by the sort; reserved again below as a chunk's.
                    let b = in_memory.next();
                    ctx.memory.release(b.as_ref().map_or(0, batch_bytes));
                    Ok(b)
                }
            }
        };
        let keys = self.sort_keys();
        let np = self.partition_by.len();
        let base_target = (ctx.memory.room() / CHUNK_SHARE).min(MAX_CHUNK_BYTES);
        let mut target = base_target;
        let mut out: Option<RunWriter> = None;
        let mut out_types = Vec::new();
        let (mut chunk, mut held) = (Vec::new(), 0u64);
        let streams = self.streams();
        // Set while the rows read next go on with the partition the last
        // chunk was cut inside.
        let mut carry: Option<Carry> = None;
        loop {
            let b = next()?;
            let done = b.is_none();
            if let Some(b) = b {
                let bytes = batch_bytes(&b);
                ctx.memory.reserve(bytes, self.what_holds_rows())?;
                held += bytes;
                chunk.push(b);
            }
            if !done && held < target {
                continue;
            }
            let all = concat(&self.types, std::mem::take(&mut chunk));
            let rows = all.len();
            if rows == 0 {
                break;
            }
            let vals = keys
                .iter()
                .map(|k| k.expr.eval(&all))
                .collect::<ExecResult<Vec<_>>>()?;
            // The chunk ends where its last partition starts, which may go on
            // in the rows not read yet; when that is its first row and the
            // functions allow it, where its last peer group starts.
            let (mut end, mut inside) = (rows, false);
            if !done {
                end = last_run_start(&keys[..np], &vals[..np], rows);
                if end == 0 && streams {
                    end = last_run_start(&keys, &vals, rows);
                    inside = end > 0;
                }
            }
            if end == 0 {
                // One partition so far: read on (its rows stay reserved), to
                // twice as many rows before looking again.
                chunk.push(all);
                target = held.saturating_mul(2);
                continue;
            }
            target = base_target;
            let (head, vals) = if end == rows {
                (all, vals)
            } else {
                let cut = |c: &Vector| c.slice(0, end);
                let tail: Vec<Vector> = all
                    .columns
                    .iter()
                    .map(|c| c.slice(end, rows - end))
                    .collect();
                chunk.push(if tail.is_empty() {
                    Batch::with_rows(rows - end)
                } else {
                    Batch::new(tail)
                });
                let head = if all.columns.is_empty() {
                    Batch::with_rows(end)
                } else {
                    Batch::new(all.columns.iter().map(cut).collect())
                };
                (head, vals.iter().map(cut).collect())
            };
            let (result, left) = self.compute_all(&keys, head, &vals, ctx, carry.as_ref())?;
            carry = inside.then_some(left);
            let computed: u64 = result.columns[self.types.len()..]
                .iter()
                .map(vector_bytes)
                .sum();
            let w = match &mut out {
                Some(w) => w,
                None => {
                    out_types = result.columns.iter().map(|c| c.data_type).collect();
                    out.insert(RunWriter::new(self.node, ctx)?)
                }
            };
            let n = result.len();
            w.push(result.columns, n, ctx)?;
            // The chunk's rows and results are on disk: what stays held is
            // the next chunk's start.
            self.share.release(&ctx.memory, computed);
            let rest: u64 = chunk.iter().map(batch_bytes).sum();
            ctx.memory.release(held.saturating_sub(rest));
            held = rest;
            if done {
                break;
            }
        }
        ctx.memory.release(held);
        if let Some(w) = out {
            let format = RunFormat {
                types: out_types,
                keys: Vec::new(),
                node: self.node,
            };
            *self.result_file.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(SortedRunSource::new(w.finish(ctx)?, &format));
        }
        Ok(())
    }

    /// Partition keys (in any fixed order: only their equality matters) then the
    /// window's ORDER BY keys.
    fn sort_keys(&self) -> Vec<SortKey> {
        self.partition_by
            .iter()
            .map(|e| SortKey {
                expr: e.clone(),
                descending: false,
                nulls_first: false,
            })
            .chain(self.order_by.iter().cloned())
            .collect()
    }

    fn layout(&self, keys: &[SortKey], vals: &[Vector], rows: usize) -> Layout {
        Layout::of(keys, self.partition_by.len(), vals, rows)
    }

    /// The column of one function over the sorted rows, and a running
    /// aggregate's accumulator with its last group (for the next chunk).
    /// `from`: the ranks and this function's accumulator the chunk before
    /// ended with, when the first row goes on with its partition.
    fn compute(
        &self,
        f: &WindowFunc,
        sorted: &Batch,
        l: &Layout,
        key: Option<&Vector>,
        from: Option<GoingOn<'_>>,
    ) -> ExecResult<(Vector, Option<(Acc, usize)>)> {
        let rows = l.peer.len();
        // Row number, rank and dense rank within the partition, for the ranking
        // functions; `pick` chooses which one the function returns.
        let ranks = |pick: fn(i64, i64, i64) -> i64| {
            let out: Vec<i64> = rank_triples(l, from.map(|f| f.0))
                .map(|(n, r, d)| pick(n, r, d))
                .collect();
            Vector {
                data_type: DataType::BigInt,
                data: ColumnData::I64(out),
                validity: None,
            }
        };
        let v = match f {
            WindowFunc::RowNumber => ranks(|n, _, _| n),
            WindowFunc::Rank => ranks(|_, r, _| r),
            WindowFunc::DenseRank => ranks(|_, _, d| d),
            WindowFunc::PercentRank => window_value::percent_rank(l),
            WindowFunc::CumeDist => window_value::cume_dist(l),
            WindowFunc::Ntile(n) => window_value::ntile(l, &n.eval(sorted)?)?,
            WindowFunc::Shift {
                lead,
                value,
                offset,
                default,
            } => window_value::shift(
                l,
                *lead,
                &value.eval(sorted)?,
                &offset.eval(sorted)?,
                &default.eval(sorted)?,
            ),
            WindowFunc::FrameValue { pick, value, frame } => {
                let b = self.bounds(frame, l, key)?;
                let nth = match pick {
                    FramePick::Nth(n) => Some(n.eval(sorted)?),
                    _ => None,
                };
                let last = *pick == FramePick::Last;
                window_value::frame_value(&b, &value.eval(sorted)?, nth.as_ref(), last)?
            }
            WindowFunc::Aggregate(call, frame) if !running(frame) => {
                if call.distinct {
                    return Err(ExecError::Internal("DISTINCT window aggregate".into()));
                }
                let b = self.bounds(frame, l, key)?;
                let arg = call.arg.as_ref().map(|a| a.eval(sorted)).transpose()?;
                window_frame::aggregate(call, arg.as_ref(), &b)?
            }
            WindowFunc::Aggregate(call, frame) => {
                if call.distinct {
                    return Err(ExecError::Internal("DISTINCT window aggregate".into()));
                }
                // Rows sharing a frame share a group: the partition, the peer group,
                // or (ROWS) the row itself.
                let row_ids: Vec<u32>;
                let (group, starts): (&[u32], Option<&[bool]>) = match (&frame.end, frame.units) {
                    (FrameBound::UnboundedFollowing, _) => (&l.partition, None),
                    (_, FrameUnits::Rows) => {
                        row_ids = (0..rows as u32).collect();
                        (&row_ids, Some(&[]))
                    }
                    _ => (&l.peer, Some(&l.peer_start)),
                };
                let groups = group.last().map_or(0, |g| *g as usize + 1);
                let mut acc = new_acc(call);
                acc.grow(groups);
                let arg = call.arg.as_ref().map(|a| a.eval(sorted)).transpose()?;
                acc.update(group, arg.as_ref())?;
                if let (Some((before, last)), true) = (from.and_then(|f| f.1), starts.is_some()) {
                    // The partition began in the chunk before: its first group
                    // here starts from the state that chunk ended with.
                    acc.carry_from(0, before, *last);
                }
                if let Some(starts) = starts {
                    // Running frames: a group sees every earlier group of its
                    // partition, so each carries the running state forward.
                    for (i, &g) in group.iter().enumerate().skip(1) {
                        let new_group = starts.get(i).copied().unwrap_or(true);
                        if new_group && !l.partition_start[i] {
                            acc.carry(g as usize - 1, g as usize)?;
                        }
                    }
                }
                let v = acc.finish(call, groups)?.take(group);
                let last = groups.checked_sub(1);
                return Ok((v, last.map(|g| (acc, g))));
            }
        };
        Ok((v, None))
    }
}

/// Row number, rank and dense rank within its partition of each of the sorted
/// rows laid out as `l`, counting on from `from` when the first row goes on with
/// the partition of the rows before.
fn rank_triples(l: &Layout, from: Option<Ranks>) -> impl Iterator<Item = Ranks> + '_ {
    let (mut number, mut rank, mut dense) = from.unwrap_or((0, 0, 0));
    (0..l.peer.len()).map(move |i| {
        if l.partition_start[i] && (i > 0 || from.is_none()) {
            (number, rank, dense) = (0, 0, 0);
        }
        number += 1;
        if l.peer_start[i] {
            rank = number;
            dense += 1;
        }
        (number, rank, dense)
    })
}

/// The ranks of the last of the rows laid out as `l` (see [`rank_triples`]).
fn rank_state(l: &Layout, from: Option<Ranks>) -> Ranks {
    rank_triples(l, from)
        .last()
        .unwrap_or(from.unwrap_or((0, 0, 0)))
}

/// Where the last run of `rows` sorted rows equal on `keys` (evaluated as
/// `vals`) starts: 0 when all rows are one run.
fn last_run_start(keys: &[SortKey], vals: &[Vector], rows: usize) -> usize {
    let mut start = rows.saturating_sub(1);
    while start > 0 && cmp_rows(keys, vals, start - 1, vals, start) == Ordering::Equal {
        start -= 1;
    }
    start
}

/// Whether every function can be computed a run of whole peer groups at a time,
/// going on from the state the run before ended with: the ranks and aggregates
/// over a frame from the partition's start to the current row.
fn streams(functions: &[WindowFunc]) -> bool {
    functions.iter().all(|f| match f {
        WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => true,
        WindowFunc::Aggregate(call, frame) => {
            running(frame)
                && frame.end == FrameBound::CurrentRow
                && !call.distinct
                && new_acc(call).carries()
        }
        _ => false,
    })
}

/// Whether `frame` runs from the partition's first row to the current row, its
/// last peer or the partition's end: such aggregates carry a running state from
/// group to group (any aggregate can), the others slide (`window_frame`).
fn running(frame: &WindowFrame) -> bool {
    frame.start == FrameBound::UnboundedPreceding
        && matches!(
            frame.end,
            FrameBound::CurrentRow | FrameBound::UnboundedFollowing
        )
}

impl WindowSink {
    fn bounds(
        &self,
        frame: &WindowFrame,
        l: &Layout,
        key: Option<&Vector>,
    ) -> ExecResult<window_frame::Bounds> {
        let key = key.zip(self.order_by.first());
        window_frame::bounds(frame, l, key)
    }
}

impl Sink for WindowSink {
    fn local(&self) -> LocalState {
        Box::new(Buffered::default())
    }
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        let buf = local
            .downcast_mut::<Buffered>()
            .ok_or_else(|| ExecError::Internal("window state".into()))?;
        let bytes = batch_bytes(&batch);
        let spill = if self.can_spill() {
            // Past its share, or other workers took the room since `spills`
            // looked: reserved only if it fits, else this batch spills.
            self.spills(ctx, bytes) || !self.share.try_reserve(&ctx.memory, bytes)
        } else {
            self.share
                .reserve(&ctx.memory, bytes, self.what_holds_rows())?;
            false
        };
        if spill {
            self.spilling.store(true, Atomic::Relaxed);
            let sorting = buf.sorting.get_or_insert_with(|| self.sorter.local());
            self.to_sorter(sorting, std::mem::take(&mut buf.batches), ctx)?;
            return self.sorter.consume(sorting, batch, ctx);
        }
        buf.batches.push(batch);
        Ok(())
    }
    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()> {
        let buf = *local
            .downcast::<Buffered>()
            .map_err(|_| ExecError::Internal("window state".into()))?;
        if let Some(sorting) = buf.sorting {
            self.sorter.merge(sorting, ctx)?;
        }
        self.input
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(buf.batches);
        Ok(())
    }
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        if self.spilling.load(Atomic::Relaxed) {
            return self.finish_spilled(ctx);
        }
        let batches = std::mem::take(&mut *self.input.lock().unwrap_or_else(|e| e.into_inner()));
        let all = concat(&self.types, batches);
        let rows = all.num_rows;
        let keys = self.sort_keys();
        let vals = keys
            .iter()
            .map(|k| k.expr.eval(&all))
            .collect::<ExecResult<Vec<_>>>()?;
        let mut idx: Vec<u32> = (0..rows as u32).collect();
        idx.sort_by(|&x, &y| cmp_rows(&keys, &vals, x as usize, &vals, y as usize));
        ctx.check_cancel()?;
        let vals: Vec<Vector> = vals.iter().map(|v| v.take(&idx)).collect();
        let sorted = if all.columns.is_empty() {
            Batch::with_rows(rows)
        } else {
            Batch::new(all.columns.iter().map(|c| c.take(&idx)).collect())
        };
        drop(all);
        let (out, _) = self.compute_all(&keys, sorted, &vals, ctx, None)?;
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) =
            if rows == 0 { Vec::new() } else { split(out) };
        Ok(())
    }
}
