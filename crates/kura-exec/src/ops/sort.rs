//! Sort: each worker sorts its input into a run; the runs are merged at the end
//! (k-way merge), and a top-k limit truncates the result. Under a limit a worker
//! keeps only its best `limit` rows as input arrives (top-N), so `ORDER BY ...
//! LIMIT k` holds O(k) rows whatever the size of its input. Past half its
//! memory limit a sort becomes an external merge sort (`sort_spill`): a
//! worker's buffered rows are sorted into a run written to a temporary file,
//! and at the end every run is merged from disk into one sorted file that the
//! pipeline above reads a block at a time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering as Atomic};
use std::sync::Mutex;

use kura_common::memobj;
use kura_common::{Batch, ColumnData, DataType, Vector};

use super::sort_run::{cmp_rows, Run};
use super::sort_spill::{merge_runs, write_run, RunFormat, SortedRunSource, SpilledRun};
use super::{concat, join::batch_bytes, split};
use crate::context::{ExecContext, OwnShare, NO_NODE};
use crate::error::{ExecError, ExecResult};
use crate::expr::compact_batch;
use crate::pipeline::{LocalState, Sink};
use crate::plan::SortKey;

/// A worker's buffered input and the bytes reserved for it.
#[derive(Default)]
struct Buffered {
    batches: Vec<Batch>,
    rows: usize,
    bytes: u64,
}

/// Under a limit of `k` rows a worker's buffer is cut back to its best `k` rows
/// once it holds this many: at least twice the limit, so each cut sorts at most
/// three times what it keeps and the work per input row stays O(log k).
fn top_n_threshold(limit: usize) -> usize {
    limit.saturating_mul(2).max(kura_common::BATCH_SIZE * 4)
}

/// Below this many rows in all, the workers' runs are sorted one after the
/// other on the calling thread: handing them to the workers costs more.
const PARALLEL_SORT_ROWS: usize = kura_common::BATCH_SIZE * 4;

/// A worker spills its buffered rows only once they are this many bytes: when
/// the memory is held by others (a join's table below), runs of a few rows
/// would only make the merge wide.
const MIN_RUN_BYTES: u64 = 256 << 10;

/// Sort breaker.
pub struct SortSink {
    keys: Vec<SortKey>,
    types: Vec<DataType>,
    limit: Option<usize>,
    /// Each worker's buffered input (and the bytes reserved for it), sorted
    /// into runs (in parallel) at the end.
    pending: Mutex<Vec<(Vec<Batch>, u64)>>,
    result: Mutex<Vec<Batch>>,
    /// The plan node whose statistics show what was spilled.
    node: usize,
    /// Runs written to temporary files, in the order written.
    spilled: Mutex<Vec<SpilledRun>>,
    /// The sorted result, when the sort spilled.
    sorted_file: Mutex<Option<SortedRunSource>>,
    /// Set once the sort holds more than half of what its query leaves it (its
    /// rows plus the room left): from then on the workers' rows gather in
    /// `overflow`, written out as a run whenever it passes half again. A
    /// worker's own buffer may be small (a local state per morsel) while all
    /// of them together are not.
    spilling: AtomicBool,
    overflow: Mutex<Buffered>,
    /// The rows this sort holds of the query's memory.
    share: OwnShare,
}

impl SortSink {
    pub fn new(keys: Vec<SortKey>, types: Vec<DataType>, limit: Option<usize>) -> SortSink {
        SortSink {
            keys,
            types,
            limit,
            pending: Mutex::new(Vec::new()),
            result: Mutex::new(Vec::new()),
            node: NO_NODE,
            spilled: Mutex::new(Vec::new()),
            sorted_file: Mutex::new(None),
            spilling: AtomicBool::new(false),
            overflow: Mutex::new(Buffered::default()),
            share: OwnShare::default(),
        }
    }

    /// The plan node charged with spilled bytes (EXPLAIN ANALYZE).
    pub fn with_node(mut self, node: usize) -> Self {
        self.node = node;
        self
    }

    /// The sorted rows, when the sort did not spill (else none).
    pub fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.result.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The sorted rows in a temporary file, when the sort spilled.
    pub(crate) fn take_spilled(&self) -> Option<SortedRunSource> {
        self.sorted_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn format(&self) -> RunFormat {
        RunFormat {
            types: self.types.clone(),
            keys: self.keys.clone(),
            node: self.node,
        }
    }

    /// Sorts a worker's buffered rows into a run on disk and gives back their
    /// memory.
    fn spill(&self, buf: &mut Buffered, ctx: &ExecContext) -> ExecResult<()> {
        let run = self.sort_run(std::mem::take(&mut buf.batches), ctx)?;
        let spilled = write_run(run, &self.format(), ctx)?;
        self.share.release(&ctx.memory, buf.bytes);
        (buf.rows, buf.bytes) = (0, 0);
        self.spilled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(spilled);
        Ok(())
    }

    /// Adds a batch (`bytes` big, not reserved yet) and the worker's buffered
    /// rows to the shared overflow, which becomes a run on disk once the sort
    /// holds more than half of what its query leaves it, or at once when the
    /// batch does not fit what is left. Under a limit the overflow is first
    /// cut to its best rows, as a worker's buffer is (top-N).
    fn consume_spilling(
        &self,
        buf: &mut Buffered,
        batch: Batch,
        bytes: u64,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        let mut o = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        o.batches.append(&mut buf.batches);
        o.rows += std::mem::take(&mut buf.rows) + batch.len();
        o.bytes += std::mem::take(&mut buf.bytes) + bytes;
        o.batches.push(batch);
        match self.limit {
            Some(limit) if o.rows >= top_n_threshold(limit) => {
                let mut all = std::mem::take(&mut *o);
                drop(o);
                let run = self.sort_run(std::mem::take(&mut all.batches), ctx)?;
                self.share.release(&ctx.memory, all.bytes - bytes);
                let kept = batch_bytes(&run.rows);
                self.share.reserve(&ctx.memory, kept, "sort")?;
                let mut o = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
                o.rows += run.rows.len();
                o.bytes += kept;
                o.batches.push(run.rows);
                self.spill_if_full(o, ctx)
            }
            _ if ctx.memory.room() < bytes => {
                // Too little left to hold even this batch (what other operators
                // hold, finished windows' results before this one): the overflow
                // goes to disk now however small the run. Counted until written.
                self.share.counted(bytes);
                ctx.memory.charge(bytes);
                let mut full = std::mem::take(&mut *o);
                drop(o);
                self.spill(&mut full, ctx)
            }
            _ => {
                self.share.reserve(&ctx.memory, bytes, "sort")?;
                self.spill_if_full(o, ctx)
            }
        }
    }

    /// Writes the overflow `o` as a run when the memory passed half: runs of
    /// an eighth of the limit, so that few need merging; smaller ones only
    /// when what others hold (states not merged yet) leaves too little.
    fn spill_if_full(
        &self,
        mut o: std::sync::MutexGuard<'_, Buffered>,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        let run_bytes = (ctx.memory.limit() / 8).max(MIN_RUN_BYTES);
        let full = (o.bytes >= run_bytes && self.share.past(&ctx.memory, 0, 1, 2))
            || (o.bytes >= MIN_RUN_BYTES && self.share.past(&ctx.memory, 0, 3, 4));
        if !full {
            return Ok(());
        }
        let mut full = std::mem::take(&mut *o);
        // Sorted and written outside the lock: the others add on meanwhile.
        drop(o);
        self.spill(&mut full, ctx)
    }

    /// The end of a sort that spilled: the workers' remaining rows become runs
    /// on disk too, and every run is merged into one sorted file.
    fn finish_spilled(
        &self,
        pending: Vec<(Vec<Batch>, u64)>,
        mut spilled: Vec<SpilledRun>,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        let held: u64 = pending.iter().map(|p| p.1).sum();
        // One run of all (in order): a state per morsel would make many small.
        let all: Vec<Batch> = pending.into_iter().flat_map(|p| p.0).collect();
        let runs = vec![self.sort_run(all, ctx)?];
        let format = self.format();
        for run in runs.into_iter().filter(|r| !r.rows.is_empty()) {
            spilled.push(write_run(run, &format, ctx)?);
        }
        self.share.release(&ctx.memory, held);
        if let Some(run) = merge_runs(spilled, &format, self.limit, ctx)? {
            *self.sorted_file.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(SortedRunSource::new(run, &format));
        }
        Ok(())
    }

    fn sort_run(&self, batches: Vec<Batch>, ctx: &ExecContext) -> ExecResult<Run> {
        sort_run(&self.keys, &self.types, self.limit, batches, &|| {
            ctx.check_cancel()
        })
    }

    /// Sorts each worker's buffered input into a run, the runs in parallel when
    /// there are rows enough.
    fn sort_runs(&self, pending: Vec<Vec<Batch>>, ctx: &ExecContext) -> ExecResult<Vec<Run>> {
        let rows: usize = pending.iter().flatten().map(|b| b.len()).sum();
        if rows < PARALLEL_SORT_ROWS {
            return pending.into_iter().map(|b| self.sort_run(b, ctx)).collect();
        }
        let parts = pending
            .into_iter()
            .map(|batches| {
                let (keys, types, limit) = (self.keys.clone(), self.types.clone(), self.limit);
                let ctx = ctx.clone();
                move || sort_run(&keys, &types, limit, batches, &|| ctx.check_cancel())
            })
            .collect();
        crate::parallel::run_parts(ctx, parts)
    }
}

/// Sorts `idx` by `cmp`, asking `cancel` every `every` comparisons; a cancel
/// unwinds out of the sort (without the panic hook: it is not a panic).
/// Answering Equal from then on instead would break the total order the
/// standard sort checks, and it panics on that.
fn sort_canceling(
    idx: &mut [u32],
    mut cmp: impl FnMut(u32, u32) -> Ordering,
    cancel: &dyn Fn() -> ExecResult<()>,
    every: u32,
) -> ExecResult<()> {
    let mut compared = 0u32;
    let mut stopped = None;
    let sorted = catch_unwind(AssertUnwindSafe(|| {
        idx.sort_by(|&x, &y| {
            compared = compared.wrapping_add(1);
            if compared.is_multiple_of(every) {
                if let Err(e) = cancel() {
                    stopped = Some(e);
                    resume_unwind(Box::new(SortCanceled));
                }
            }
            cmp(x, y)
        })
    }));
    match (sorted, stopped) {
        (Ok(()), _) => Ok(()),
        (Err(payload), Some(e)) if payload.is::<SortCanceled>() => Err(e),
        (Err(payload), _) => resume_unwind(payload),
    }
}

/// The payload a canceled comparison sort unwinds with.
struct SortCanceled;

/// Sorts `batches` by `keys` into a run, cut to `limit` rows. `cancel` is
/// asked between the steps and between columns: a run of millions of wide
/// rows (a top-N over a cross product) takes seconds to sort and gather.
pub(super) fn sort_run(
    sort_keys: &[SortKey],
    types: &[DataType],
    limit: Option<usize>,
    batches: Vec<Batch>,
    cancel: &dyn Fn() -> ExecResult<()>,
) -> ExecResult<Run> {
    let all = concat(types, batches);
    cancel()?;
    let keys = sort_keys
        .iter()
        .map(|k| k.expr.eval(&all))
        .collect::<ExecResult<Vec<_>>>()?;
    cancel()?;
    let mut idx: Vec<u32> = (0..all.num_rows as u32).collect();
    let named = name_sort_buffers(&all, &keys, &idx);
    let mut prefix_sorted = None;
    match sort_keys
        .first()
        .zip(keys.first())
        .and_then(|(k, v)| int_prefix(k, v))
    {
        Some(prefix) => {
            // The first key as order-preserving integers beside the row
            // numbers: most comparisons read one contiguous array, and the
            // row number breaks ties last, so the unstable sort is stable.
            let (rest, rest_keys) = (&sort_keys[1..], &keys[1..]);
            let mut pairs: Vec<(u64, u32)> = prefix.into_iter().zip(0u32..).collect();
            pairs.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| cmp_rows(rest, rest_keys, a.1 as usize, rest_keys, b.1 as usize))
                    .then(a.1.cmp(&b.1))
            });
            pairs.truncate(limit.unwrap_or(usize::MAX));
            let mut sorted = Vec::with_capacity(pairs.len());
            for (slot, (p, row)) in idx.iter_mut().zip(pairs) {
                *slot = row;
                sorted.push(p);
            }
            prefix_sorted = Some(sorted);
        }
        None => {
            // Comparing rows key by key is slow (a second for a few million
            // rows): a cancel is asked every 65,536 comparisons.
            sort_canceling(
                &mut idx,
                |x, y| cmp_rows(sort_keys, &keys, x as usize, &keys, y as usize),
                cancel,
                65_536,
            )?;
        }
    }
    if let Some(l) = limit {
        idx.truncate(l);
    }
    cancel()?;
    let rows = if all.columns.is_empty() {
        Batch::with_rows(idx.len())
    } else {
        let mut columns = Vec::with_capacity(all.columns.len());
        for c in &all.columns {
            cancel()?;
            columns.push(c.take(&idx));
        }
        Batch::new(columns)
    };
    let keys = keys.iter().map(|k| k.take(&idx)).collect();
    for (start, len) in named {
        memobj::unregister(start, len);
    }
    Ok(Run {
        rows,
        keys,
        prefix: prefix_sorted,
    })
}

/// The merged order of sorted `runs`, as row numbers of the runs laid end to
/// end, cut to `limit`; ties keep the earlier run's row first (stability). Two
/// runs (two workers) merge with two cursors, more through a heap.
fn merge_order(
    runs: &[Run],
    keys: &[SortKey],
    limit: Option<usize>,
    ctx: &ExecContext,
) -> ExecResult<Vec<u32>> {
    let mut first = Vec::with_capacity(runs.len());
    let mut at = 0u32;
    for run in runs {
        first.push(at);
        at += run.rows.num_rows as u32;
    }
    let want = limit.unwrap_or(usize::MAX).min(at as usize);
    let mut order: Vec<u32> = Vec::with_capacity(want);
    if let [a, b] = runs {
        let (na, nb) = (a.rows.num_rows, b.rows.num_rows);
        let (mut i, mut j) = (0, 0);
        while order.len() < want {
            if order.len().is_multiple_of(65536) {
                ctx.check_cancel()?;
            }
            let take_a = j == nb || (i < na && a.cmp_row(i, b, j, keys) != Ordering::Greater);
            if take_a {
                order.push(i as u32);
                i += 1;
            } else {
                order.push(first[1] + j as u32);
                j += 1;
            }
        }
        return Ok(order);
    }
    let mut heap = BinaryHeap::new();
    for (r, run) in runs.iter().enumerate() {
        if run.rows.num_rows > 0 {
            heap.push(Head {
                run: r,
                row: 0,
                runs,
                keys,
            });
        }
    }
    while let Some(h) = heap.pop() {
        if order.len() >= want {
            break;
        }
        if order.len().is_multiple_of(65536) {
            ctx.check_cancel()?;
        }
        order.push(first[h.run] + h.row as u32);
        if h.row + 1 < runs[h.run].rows.num_rows {
            heap.push(Head {
                run: h.run,
                row: h.row + 1,
                runs,
                keys,
            });
        }
    }
    Ok(order)
}

/// The values of an integer sort key without NULLs as unsigned integers in the
/// key's order (the sign bit flipped; every bit flipped for a descending key),
/// or `None` for other keys.
fn int_prefix(key: &SortKey, v: &Vector) -> Option<Vec<u64>> {
    if v.validity.as_ref().is_some_and(|b| b.iter().any(|ok| !ok)) {
        return None;
    }
    let flip = if key.descending { u64::MAX } else { 0 };
    let image = |x: i64| (x as u64 ^ 1 << 63) ^ flip;
    match &v.data {
        ColumnData::I32(x) => Some(x.iter().map(|&x| image(x as i64)).collect()),
        ColumnData::I64(x) => Some(x.iter().map(|&x| image(x)).collect()),
        _ => None,
    }
}

/// Names a run's memory for the memory profiler while it is sorted: the
/// gathered input rows, the evaluated keys and the permutation. Returns the
/// spans to release afterwards (none when profiling is off).
fn name_sort_buffers(all: &Batch, keys: &[Vector], idx: &[u32]) -> Vec<(usize, usize)> {
    if !memobj::enabled() {
        return Vec::new();
    }
    let mut named = Vec::new();
    let mut name = |spans: Vec<(usize, usize)>, what: &'static str| {
        for (start, len) in spans {
            memobj::register(start, len, || {
                memobj::Object::new(memobj::ObjectKind::SortBuffer, what)
            });
            named.push((start, len));
        }
    };
    for c in &all.columns {
        name(c.data.spans(), "sort buffer: input rows");
    }
    for k in keys {
        name(k.data.spans(), "sort buffer: keys");
    }
    name(
        vec![(idx.as_ptr() as usize, std::mem::size_of_val(idx))],
        "sort buffer: permutation",
    );
    named
}

struct Head<'a> {
    run: usize,
    row: usize,
    runs: &'a [Run],
    keys: &'a [SortKey],
}

impl PartialEq for Head<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head<'_> {}
impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head<'_> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap; ties go to the earlier run (stability).
        self.runs[self.run]
            .cmp_row(self.row, &self.runs[o.run], o.row, self.keys)
            .then(self.run.cmp(&o.run))
            .reverse()
    }
}

impl Sink for SortSink {
    fn local(&self) -> LocalState {
        Box::new(Buffered::default())
    }
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        let buf = local
            .downcast_mut::<Buffered>()
            .ok_or_else(|| ExecError::Internal("sort state".into()))?;
        let bytes = batch_bytes(&batch);
        if self.spilling.load(Atomic::Relaxed) || self.share.past(&ctx.memory, bytes, 1, 2) {
            // Past half of its share: the rest is for merging the runs back.
            self.spilling.store(true, Atomic::Relaxed);
            return self.consume_spilling(buf, batch, bytes, ctx);
        }
        buf.rows += batch.len();
        buf.bytes += bytes;
        buf.batches.push(batch);
        if let Some(limit) = self.limit {
            if buf.rows >= top_n_threshold(limit) {
                // Top-N: keep this worker's best `limit` rows; the rest can never
                // be in the result, and dropping them is what bounds memory.
                let run = self.sort_run(std::mem::take(&mut buf.batches), ctx)?;
                self.share.release(&ctx.memory, buf.bytes - bytes);
                let kept = batch_bytes(&run.rows);
                buf.rows = run.rows.len();
                buf.bytes = kept;
                buf.batches.push(run.rows);
                return self.share.reserve(&ctx.memory, kept, "sort");
            }
        }
        self.share.reserve(&ctx.memory, bytes, "sort")
    }
    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()> {
        let buf = *local
            .downcast::<Buffered>()
            .map_err(|_| ExecError::Internal("sort state".into()))?;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.push((buf.batches, buf.bytes));
        // A local state per morsel holds few rows; together they pass the
        // limit: the merged ones become one run on disk, in morsel order.
        let held: u64 = pending.iter().map(|p| p.1).sum();
        if held >= MIN_RUN_BYTES && self.share.past(&ctx.memory, 0, 1, 2) {
            let mut all = Buffered {
                batches: std::mem::take(&mut *pending)
                    .into_iter()
                    .flat_map(|p| p.0)
                    .collect(),
                rows: 0,
                bytes: held,
            };
            drop(pending);
            self.spill(&mut all, ctx)?;
        }
        Ok(())
    }
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        let mut pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        let overflow =
            std::mem::take(&mut *self.overflow.lock().unwrap_or_else(|e| e.into_inner()));
        if !overflow.batches.is_empty() {
            pending.push((overflow.batches, overflow.bytes));
        }
        let spilled = std::mem::take(&mut *self.spilled.lock().unwrap_or_else(|e| e.into_inner()));
        if !spilled.is_empty() {
            return self.finish_spilled(pending, spilled, ctx);
        }
        let runs = self.sort_runs(pending.into_iter().map(|p| p.0).collect(), ctx)?;
        let merged = if runs.len() == 1 {
            runs.into_iter()
                .next()
                .map(|r| r.rows)
                .unwrap_or_else(|| Batch::with_rows(0))
        } else {
            let idx = merge_order(&runs, &self.keys, self.limit, ctx)?;
            let all = concat(&self.types, runs.into_iter().map(|r| r.rows).collect());
            if all.columns.is_empty() {
                Batch::with_rows(idx.len())
            } else {
                Batch::new(all.columns.iter().map(|c| c.take(&idx)).collect())
            }
        };
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = split(merged);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::PhysExpr;
    use kura_common::Value;

    fn key(descending: bool) -> SortKey {
        SortKey {
            expr: PhysExpr::Column {
                index: 0,
                data_type: DataType::BigInt,
            },
            descending,
            nulls_first: false,
        }
    }

    #[test]
    fn integer_prefixes_keep_the_keys_order() {
        let vals = [i64::MIN, -7, -1, 0, 1, 42, i64::MAX];
        let v = Vector::from_values(
            DataType::BigInt,
            &vals.iter().map(|&x| Value::BigInt(x)).collect::<Vec<_>>(),
        )
        .unwrap();
        let up = int_prefix(&key(false), &v).unwrap();
        assert!(up.windows(2).all(|w| w[0] < w[1]), "{up:?}");
        let down = int_prefix(&key(true), &v).unwrap();
        assert!(down.windows(2).all(|w| w[0] > w[1]), "{down:?}");
        let with_null =
            Vector::from_values(DataType::BigInt, &[Value::BigInt(1), Value::Null]).unwrap();
        assert!(int_prefix(&key(false), &with_null).is_none());
    }

    /// A batch of (k BIGINT, s VARCHAR, tag BIGINT) rows.
    fn rows(data: &[(Option<i64>, &str, i64)]) -> Batch {
        let k: Vec<Value> = data
            .iter()
            .map(|r| r.0.map_or(Value::Null, Value::BigInt))
            .collect();
        let s: Vec<Value> = data.iter().map(|r| Value::Text(r.1.into())).collect();
        let t: Vec<Value> = data.iter().map(|r| Value::BigInt(r.2)).collect();
        Batch::new(vec![
            Vector::from_values(DataType::BigInt, &k).unwrap(),
            Vector::from_values(DataType::Varchar(None), &s).unwrap(),
            Vector::from_values(DataType::BigInt, &t).unwrap(),
        ])
    }

    fn tags(b: &Batch) -> Vec<i64> {
        (0..b.num_rows)
            .map(|i| match b.columns[2].get_value(i) {
                Value::BigInt(t) => t,
                v => panic!("{v:?}"),
            })
            .collect()
    }

    #[test]
    fn merged_runs_equal_one_sort_of_everything() {
        let types = [DataType::BigInt, DataType::Varchar(None), DataType::BigInt];
        let keys = vec![
            key(true),
            SortKey {
                expr: PhysExpr::Column {
                    index: 1,
                    data_type: DataType::Varchar(None),
                },
                descending: false,
                nulls_first: false,
            },
        ];
        // Ties on k resolved by s, ties on both by arrival (the tag); one part
        // has a NULL k, so its run has no integer prefix and the merge compares
        // its rows key by key against the others'.
        let words = ["b", "a", "c", "a", "bb"];
        let parts: Vec<Vec<(Option<i64>, &str, i64)>> = (0..4)
            .map(|p| {
                (0..300)
                    .map(|i| {
                        let tag = p * 1000 + i;
                        let k = if p == 2 && i % 50 == 0 {
                            None
                        } else {
                            Some((tag * 7919 % 13) - 6)
                        };
                        (k, words[(tag * 31 % 5) as usize], tag)
                    })
                    .collect()
            })
            .collect();
        let ctx = ExecContext::new(std::sync::Arc::new(Default::default()), u64::MAX);
        for runs_of in [2, 3, 4] {
            for limit in [None, Some(7), Some(299), Some(5000)] {
                let all: Vec<(Option<i64>, &str, i64)> =
                    parts[..runs_of].iter().flatten().copied().collect();
                let expected =
                    sort_run(&keys, &types, limit, vec![rows(&all)], &|| Ok(())).unwrap();
                let runs: Vec<Run> = parts[..runs_of]
                    .iter()
                    .map(|p| sort_run(&keys, &types, limit, vec![rows(p)], &|| Ok(())).unwrap())
                    .collect();
                assert_eq!(runs[2 % runs_of].prefix.is_none(), runs_of > 2);
                let idx = merge_order(&runs, &keys, limit, &ctx).unwrap();
                let merged = concat(&types, runs.into_iter().map(|r| r.rows).collect());
                let got = Batch::new(merged.columns.iter().map(|c| c.take(&idx)).collect());
                assert_eq!(
                    tags(&got),
                    tags(&expected.rows),
                    "{runs_of} runs, limit {limit:?}"
                );
            }
        }
    }

    #[test]
    fn a_cancel_mid_comparison_sort_is_an_error_not_a_panic() {
        // Cancels at every point of a sort of scattered keys with ties: the
        // standard sort's merges see the comparisons before and after it.
        let keys: Vec<u64> = (0..3_000u64).map(|i| i * 2_654_435_761 % 997 / 3).collect();
        for every in [7, 64, 1_000] {
            for stop_at in 1.. {
                let asked = std::cell::Cell::new(0);
                let cancel = || {
                    asked.set(asked.get() + 1);
                    if asked.get() > stop_at {
                        Err(ExecError::Canceled)
                    } else {
                        Ok(())
                    }
                };
                let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
                let cmp = |x: u32, y: u32| keys[x as usize].cmp(&keys[y as usize]);
                match sort_canceling(&mut idx, cmp, &cancel, every) {
                    Err(ExecError::Canceled) => {}
                    Ok(()) => {
                        assert!(idx.windows(2).all(|w| cmp(w[0], w[1]).is_le()));
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
}
