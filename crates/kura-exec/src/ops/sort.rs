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
use std::sync::atomic::{AtomicBool, Ordering as Atomic};
use std::sync::Mutex;

use kura_common::{Batch, DataType};

use super::sort_order::{order_rows, sort_run, Ordered};
use super::sort_run::Run;
use super::sort_spill::{merge_runs, write_ordered, RunFormat, SortedRunSource, SpilledRun};
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
        let run = self.order_rows(std::mem::take(&mut buf.batches), ctx)?;
        let spilled = write_ordered(run, &self.format(), ctx)?;
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
            // Reserved only if it fits: a refusal counts nothing, so that it
            // cannot fail another worker's reservation at that moment.
            _ if self.share.try_reserve(&ctx.memory, bytes) => self.spill_if_full(o, ctx),
            _ => {
                // Too little left to hold even this batch (what other operators
                // hold, finished windows' results before this one): the overflow
                // goes to disk now however small the run. Counted until written.
                self.share.counted(bytes);
                ctx.memory.charge(bytes);
                let mut full = std::mem::take(&mut *o);
                drop(o);
                self.spill(&mut full, ctx)
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
        let run = self.order_rows(all, ctx)?;
        let format = self.format();
        if run.len() > 0 {
            spilled.push(write_ordered(run, &format, ctx)?);
        }
        self.share.release(&ctx.memory, held);
        if let Some(run) = merge_runs(spilled, &format, self.limit, ctx)? {
            *self.sorted_file.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(SortedRunSource::new(run, &format));
        }
        Ok(())
    }

    /// The rows of a run to be written to disk, in order.
    fn order_rows(&self, batches: Vec<Batch>, ctx: &ExecContext) -> ExecResult<Ordered> {
        order_rows(&self.keys, &self.types, self.limit, batches, &|| {
            ctx.check_cancel()
        })
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
        // Past half of its share (the rest is for merging the runs back), or
        // other workers took the room since: the batch goes the spilling way.
        if self.spilling.load(Atomic::Relaxed)
            || self.share.past(&ctx.memory, bytes, 1, 2)
            || !self.share.try_reserve(&ctx.memory, bytes)
        {
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
                let (held, kept) = (buf.bytes, batch_bytes(&run.rows));
                buf.rows = run.rows.len();
                buf.bytes = kept;
                buf.batches.push(run.rows);
                if kept > held {
                    return self.share.reserve(&ctx.memory, kept - held, "sort");
                }
                self.share.release(&ctx.memory, held - kept);
            }
        }
        Ok(())
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
    use super::super::sort_order::{int_prefix, sort_canceling};
    use super::*;
    use crate::expr::PhysExpr;
    use kura_common::{Value, Vector};

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
