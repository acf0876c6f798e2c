//! Hash aggregation: group keys map to group numbers, each aggregate keeps a typed
//! accumulator array indexed by group. Each worker aggregates into local state that
//! is merged into the shared table at the end. Past half its memory limit an
//! aggregation spills: a worker writes its groups' partial states, hash-partitioned
//! by key, to temporary files and starts again with an empty table (aggregates whose
//! state is a set or a list of values write the input rows instead); at the end each
//! partition is aggregated in turn with the groups still held.
//! Over input clustered on its one key, [`OrderedAggregateOp`] groups by runs
//! instead and uses this sink only for the runs at the edges of its batches.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kura_common::{Batch, DataType, Vector, BATCH_SIZE};

use crate::context::{ExecContext, MemoryTracker, OwnShare, NO_NODE};
use crate::error::{ExecError, ExecResult};
use crate::expr::budget::ValueScope;
use crate::expr::{compact_batch, PhysExpr};
use crate::keys_packed::PackedLayout;
use crate::pipeline::{LocalState, Sink};
use crate::plan::{AggCall, AggFunc};

mod acc;
mod byte_codes;
mod byte_keys;
mod collect;
mod common;
mod dense;
mod distinct;
mod group_map;
mod moments;
mod ordered;
mod spill;
mod state;

use crate::spill::partitions::Partitions;
use crate::spill::result::ResultFile;

/// The widest key range an aggregation numbers as an array from the start.
pub use dense::MAX_RANGE_SLOTS;

pub(crate) use acc::{new_acc, Acc};
pub use ordered::OrderedAggregateOp;
use state::AggState;

/// Hash aggregation breaker.
pub struct AggregateSink {
    group_by: Vec<PhysExpr>,
    calls: Vec<AggCall>,
    key_types: Vec<DataType>,
    shared: Mutex<Option<AggState>>,
    result: Mutex<Vec<Batch>>,
    /// The result, when the aggregation spilled.
    spilled_result: Mutex<Option<ResultFile>>,
    /// How profiles name the grouping keys (e.g. `lineitem.l_returnflag`).
    label: Option<String>,
    /// When the keys are plain columns that pack: those columns, read in place
    /// at a batch's selection (TPC-H Q1's flags are not copied first).
    packed_columns: Option<Vec<usize>>,
    /// Per input column: whether an aggregate's argument reads it.
    arg_columns: Vec<bool>,
    /// Sub-expressions of several arguments, computed once a batch into the
    /// columns after the last one the arguments read (`arg_columns.len()`).
    common_args: Vec<PhysExpr>,
    /// Per call: the first call summing the same argument when two or more
    /// `sum`/`avg` calls do (TPC-H Q1's `avg(l_quantity)` beside
    /// `sum(l_quantity)`): a batch's sums per group are then added once.
    same_sum: Vec<Option<usize>>,
    /// Whether an argument calls a sequence or a random function: evaluated
    /// only on the rows the selection keeps (`nextval` advances once a row).
    volatile_args: bool,
    /// The planner's range of a single integer key (see `PlanKind::Aggregate`).
    key_range: Option<(i64, i64)>,
    /// The plan node whose statistics show what was spilled.
    node: usize,
    /// Set once the aggregation spills: a worker then writes its state to
    /// `spilled` whenever it passes the aggregation's share (or, when
    /// `spills_states` is false, writes every row there instead of aggregating
    /// it), and merges no more.
    spilling: AtomicBool,
    /// Whether every aggregate's state is a few columns per group (counts,
    /// sums, averages, extremes): the aggregation then spills partial states,
    /// each group once per state written, not the rows that made them.
    spills_states: bool,
    /// Rows aggregated into worker tables, and the groups they made there:
    /// how many groups a batch is likely to add.
    rows_seen: AtomicU64,
    groups_made: AtomicU64,
    /// The spilled states or rows, partitioned by key (created at the first).
    spilled: Mutex<Option<Arc<Partitions>>>,
    /// Worker states not merged into `shared` because the aggregation spills.
    held: Mutex<Vec<AggState>>,
    /// What the states reserved of the query's memory (counted as batches are
    /// consumed; given back with the states).
    share: OwnShare,
}

impl AggregateSink {
    pub fn new(group_by: Vec<PhysExpr>, mut calls: Vec<AggCall>) -> AggregateSink {
        let key_types: Vec<DataType> = group_by.iter().map(|e| e.data_type()).collect();
        let packed_columns = PackedLayout::new(&key_types)
            .and_then(|_| {
                group_by
                    .iter()
                    .map(|e| match e {
                        PhysExpr::Column { index, .. } => Some(*index),
                        _ => None,
                    })
                    .collect::<Option<Vec<usize>>>()
            })
            .filter(|c| !c.is_empty());
        let mut read = Vec::new();
        calls
            .iter()
            .flat_map(|c| c.exprs())
            .for_each(|a| a.columns(&mut read));
        let width = read.iter().max().map_or(0, |m| m + 1);
        let mut arg_columns = vec![false; width];
        read.into_iter().for_each(|c| arg_columns[c] = true);
        let mut args: Vec<&mut PhysExpr> = calls.iter_mut().flat_map(|c| c.exprs_mut()).collect();
        let common_args = common::extract(&mut args, width);
        let spills_states =
            !group_by.is_empty() && calls.iter().all(|c| new_acc(c).state_width().is_some());
        let same_sum = same_sums(&calls);
        let volatile_args = calls
            .iter()
            .flat_map(|c| c.exprs())
            .any(|e| e.is_volatile())
            || common_args.iter().any(PhysExpr::is_volatile);
        AggregateSink {
            same_sum,
            volatile_args,
            spills_states,
            rows_seen: AtomicU64::new(0),
            groups_made: AtomicU64::new(0),
            common_args,
            group_by,
            calls,
            key_types,
            shared: Mutex::new(None),
            result: Mutex::new(Vec::new()),
            spilled_result: Mutex::new(None),
            label: None,
            packed_columns,
            arg_columns,
            key_range: None,
            node: NO_NODE,
            spilling: AtomicBool::new(false),
            spilled: Mutex::new(None),
            held: Mutex::new(Vec::new()),
            share: OwnShare::default(),
        }
    }

    /// The plan node charged with spilled bytes (EXPLAIN ANALYZE).
    pub fn with_node(mut self, node: usize) -> Self {
        self.node = node;
        self
    }

    /// Folds a batch on its own and writes it out as states: even an empty
    /// table is past the share (other workers' tables or other operators hold
    /// the memory), so its groups are uncounted, like rows on their way to a
    /// file.
    fn write_batch_alone(&self, batch: Batch, rows: u64, ctx: &ExecContext) -> ExecResult<()> {
        let mut loose = ctx.clone();
        loose.memory = Arc::new(MemoryTracker::new(u64::MAX));
        let mut alone = AggState::new(&self.key_types, &self.calls, None);
        self.aggregate_batch(&mut alone, batch, &loose)?;
        self.rows_seen.fetch_add(rows, Ordering::Relaxed);
        self.groups_made
            .fetch_add(alone.groups as u64, Ordering::Relaxed);
        self.write_state(&mut alone, ctx)
    }

    /// Groups a batch's rows into `st` and updates their accumulators.
    fn aggregate_batch(
        &self,
        st: &mut AggState,
        batch: Batch,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        if let (Some(cols), Some(sel)) = (&self.packed_columns, &batch.selection) {
            let keys: Vec<&Vector> = cols.iter().filter_map(|&c| batch.columns.get(c)).collect();
            if keys.len() == cols.len() {
                if let Some(ids) = st.packed_group_ids_at(&keys, sel, ctx)? {
                    st.register(|| self.operator());
                    let batch = match self.update_all_rows(st, &ids, batch, ctx)? {
                        None => return Ok(()),
                        Some(batch) => batch,
                    };
                    let args = compact_read(batch, &self.arg_columns);
                    return self.update(st, &ids, args, ctx);
                }
            }
        }
        let batch = compact_batch(batch);
        let n = batch.num_rows;
        let keys = self
            .group_by
            .iter()
            .map(|e| e.eval(&batch))
            .collect::<ExecResult<Vec<_>>>()?;
        let ids = st.group_ids(&keys, n, ctx)?;
        st.register(|| self.operator());
        self.update(st, &ids, batch, ctx)
    }

    /// The result batches of a finished state (its keys are taken).
    fn result_of(&self, st: &mut AggState) -> ExecResult<Vec<Batch>> {
        let mut cols = std::mem::take(&mut st.keys);
        for (acc, call) in st.accs.iter().zip(&self.calls) {
            cols.push(acc.finish(call, st.groups)?);
        }
        let all = if cols.is_empty() {
            Batch::with_rows(st.groups)
        } else {
            Batch::new(cols)
        };
        Ok(if st.groups <= BATCH_SIZE {
            vec![all]
        } else {
            super::split(all)
        })
    }

    /// Numbers the groups of a single integer key over `range` from the start
    /// (the planner's estimate of the keys' span, dense enough for an array).
    pub fn with_key_range(mut self, range: Option<(i64, i64)>) -> Self {
        let one_int_key = matches!(
            self.key_types.as_slice(),
            [DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Date]
        );
        self.key_range = range.filter(|_| one_int_key);
        self
    }

    /// Names the grouping keys for memory profiles.
    pub fn with_label(mut self, keys: Option<String>) -> Self {
        self.label = keys;
        self
    }

    /// How the memory-object registry names this operator.
    fn operator(&self) -> String {
        let keys = self.label.clone().unwrap_or_else(|| {
            let keys: Vec<String> = self.group_by.iter().map(|k| k.to_string()).collect();
            keys.join(", ")
        });
        format!("hash aggregation on {keys}")
    }

    /// The result held in memory (empty when the aggregation spilled: see
    /// [`AggregateSink::take_spilled`]).
    pub fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.result.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The result of an aggregation that spilled, on disk.
    pub fn take_spilled(&self) -> Option<ResultFile> {
        self.spilled_result
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// A batch whose selection keeps nearly all its rows, aggregated over all
    /// of them: the rows left out go to a spare group past the last, emptied
    /// after the batch, so the arguments' columns are not copied to the
    /// selection first (TPC-H Q1 keeps 98 % of lineitem). `ids` are the
    /// selected rows' groups. Returns the batch when it must be compacted
    /// instead: a sparser selection, accumulators other than counts, sums and
    /// averages, a volatile argument, or an argument that fails on some row — perhaps one the
    /// selection leaves out, so the compacted batch decides whether it fails.
    fn update_all_rows(
        &self,
        st: &mut AggState,
        ids: &[u32],
        mut batch: Batch,
        ctx: &ExecContext,
    ) -> ExecResult<Option<Batch>> {
        let n = batch.num_rows;
        let dense = batch
            .selection
            .as_ref()
            .is_some_and(|s| s.len() * 8 >= n * 7);
        if !dense || self.volatile_args || !st.accs.iter().all(Acc::has_plain_slots) {
            return Ok(Some(batch));
        }
        let Some(sel) = batch.selection.take() else {
            return Ok(Some(batch));
        };
        let args = match self
            .add_common_args(&mut batch)
            .and_then(|_| self.eval_args(&batch))
        {
            Ok(args) => args,
            Err(_) => {
                batch.selection = Some(sel);
                return Ok(Some(batch));
            }
        };
        let spare = st.groups;
        let mut all = vec![spare as u32; n];
        for (&row, &g) in sel.iter().zip(ids) {
            all[row as usize] = g;
        }
        st.accs.iter_mut().for_each(|a| a.grow(spare + 1));
        let folded = self.fold(st, spare + 1, &all, &batch, args, ctx);
        st.accs.iter_mut().for_each(|a| a.truncate(spare));
        folded.map(|_| None)
    }

    /// Computes the arguments' shared sub-expressions into the columns after
    /// the arguments' (group keys are read already).
    fn add_common_args(&self, batch: &mut Batch) -> ExecResult<()> {
        if !self.common_args.is_empty() {
            batch.columns.truncate(self.arg_columns.len());
            for e in &self.common_args {
                let v = e.eval(batch)?;
                batch.columns.push(v);
            }
        }
        Ok(())
    }

    /// Every call's argument over the batch (`None` for count(*)).
    fn eval_args<'b>(&self, batch: &'b Batch) -> ExecResult<Vec<Option<Cow<'b, Vector>>>> {
        self.calls
            .iter()
            .map(|c| c.arg.as_ref().map(|a| a.eval_ref(batch)).transpose())
            .collect()
    }

    /// Adds a compacted batch's rows, of groups `ids`, to every aggregate.
    fn update(
        &self,
        st: &mut AggState,
        ids: &[u32],
        mut batch: Batch,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        self.add_common_args(&mut batch)?;
        let args = self.eval_args(&batch)?;
        self.fold(st, st.groups, ids, &batch, args, ctx)
    }

    /// Adds rows of groups `ids` (below `groups`), whose arguments are
    /// `args`, to every aggregate.
    fn fold(
        &self,
        st: &mut AggState,
        groups: usize,
        ids: &[u32],
        batch: &Batch,
        args: Vec<Option<Cow<'_, Vector>>>,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        let counts = acc::batch_counts(groups, ids);
        // A batch's sums per group of an argument several calls sum, at the
        // first of those calls (`None`: not integers without NULLs).
        let mut summed: Vec<Option<Vec<i128>>> = vec![None; self.calls.len()];
        // Values the accumulators keep (text extremes, arrays, DISTINCT sets).
        let mut grown = 0;
        for (i, ((acc, call), arg)) in st.accs.iter_mut().zip(&self.calls).zip(args).enumerate() {
            if let (Some(first), Some(a), Some(n)) = (self.same_sum[i], &arg, &counts) {
                if first == i {
                    summed[i] = acc::batch_sums(groups, ids, a);
                }
                if let Some(sums) = &summed[first] {
                    if acc.add_batch_sums(sums, n)? {
                        continue;
                    }
                }
            }
            match (&arg, call.extra.is_empty() && call.order.is_empty()) {
                (Some(a), false) => {
                    // Ordered-set aggregates sort by `arg` itself: only
                    // string_agg and array_agg read their ORDER BY keys.
                    let keys = matches!(
                        call.func,
                        AggFunc::StringAgg
                            | AggFunc::ArrayAgg
                            | AggFunc::JsonAgg
                            | AggFunc::JsonObjectAgg
                    )
                    .then_some(&call.order);
                    let more = call
                        .extra
                        .iter()
                        .chain(keys.into_iter().flatten().map(|k| &k.expr))
                        .map(|e| e.eval(batch))
                        .collect::<ExecResult<Vec<_>>>()?;
                    acc.update_with(ids, a, &more)?;
                }
                _ => acc.update_counted(ids, arg.as_deref(), counts.as_deref())?,
            }
            grown += acc.take_grown();
        }
        if grown > 0 {
            st.charge(grown, ctx, "aggregate values")?;
        }
        Ok(())
    }
}

/// For each call, the first call with the same argument when at least two
/// plain (not DISTINCT) `sum` or `avg` calls sum it.
fn same_sums(calls: &[AggCall]) -> Vec<Option<usize>> {
    let sums = |c: &AggCall| {
        matches!(c.func, AggFunc::Sum | AggFunc::Avg)
            && !c.distinct
            && c.extra.is_empty()
            && c.order.is_empty()
            && c.arg.is_some()
    };
    calls
        .iter()
        .map(|c| {
            if !sums(c) {
                return None;
            }
            let mut same = calls
                .iter()
                .enumerate()
                .filter(|(_, o)| sums(o) && o.arg == c.arg);
            let first = same.next().map(|(j, _)| j);
            same.next().and(first)
        })
        .collect()
}

/// About what a new group takes besides its accumulators' slots (its key,
/// its table entry), for deciding before a batch whether it fits.
const GROUP_BYTES_BOUND: usize = 64;

/// About what a `DISTINCT` aggregate's set of values takes for a new group
/// (a small hash table's first allocation).
const DISTINCT_SET_BYTES: usize = 128;

/// The batch compacted to its selection in the columns marked in `read` only;
/// the others become empty, never to be read.
fn compact_read(batch: Batch, read: &[bool]) -> Batch {
    match &batch.selection {
        None => batch,
        Some(sel) => crate::ops::gather_read(&batch.columns, sel, |i| {
            read.get(i).copied().unwrap_or(false)
        }),
    }
}

impl Sink for AggregateSink {
    fn local_per_worker(&self) -> bool {
        // Groups are found by key whichever state saw a row; DISTINCT sets too.
        true
    }

    fn local(&self) -> LocalState {
        Box::new(AggState::new(&self.key_types, &self.calls, self.key_range))
    }

    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let st = local
            .downcast_mut::<AggState>()
            .ok_or_else(|| ExecError::Internal("aggregate state".into()))?;
        // Decided before the batch changes any state: a reservation that fails
        // halfway cannot be undone. A fresh state's tables are allocated but
        // not reserved yet (a dense table over the keys' estimated span): its
        // first batch reserves them.
        let allocated = st.held_bytes().saturating_sub(st.reserved);
        let rows = batch.selection.as_ref().map_or(batch.num_rows, |s| s.len());
        // What this batch's rows will likely add as new groups: as many
        // as the rows so far made per row (Q1: none; Q18: one in four;
        // before any row, one per row), each with its slots and its key
        // (the batch's bytes bound its keys' — long text keys count).
        let rows = rows as u64;
        let sets = self.calls.iter().filter(|c| c.distinct).count();
        let per_group =
            (16 * self.calls.len() + DISTINCT_SET_BYTES * sets + GROUP_BYTES_BOUND) as u64;
        let (seen, made) = match self.rows_seen.load(Ordering::Relaxed) {
            0 => (1, 1),
            seen => (seen, self.groups_made.load(Ordering::Relaxed)),
        };
        let grown = rows * per_group + crate::ops::join::batch_bytes(&batch);
        let batch_bound = grown.saturating_mul(made) / seen;
        let want = allocated + batch_bound;
        // The batch's growth is reserved ahead, and only where it fits: two
        // workers that both found room in the share cannot then make each
        // other's reservation fail halfway through a batch — the one refused
        // spills instead.
        let credit = if self.spills_states {
            // Past its share a worker writes its groups out and goes on
            // aggregating into an empty table: rows keep being folded into
            // groups, so what reaches the disk is at most one partial state
            // per group and table, not every row.
            match self.reserve_ahead(ctx, want) {
                Some(taken) => taken,
                None => {
                    self.spill_state(st, ctx)?;
                    match self.reserve_ahead(ctx, batch_bound) {
                        Some(taken) => taken,
                        None => return self.write_batch_alone(batch, rows, ctx),
                    }
                }
            }
        } else {
            let taken = (!self.spills(ctx, want))
                .then(|| self.reserve_ahead(ctx, want))
                .flatten();
            match taken {
                Some(taken) => taken,
                None => {
                    self.spilling.store(true, Ordering::Relaxed);
                    return self.spill_batch(batch, ctx);
                }
            }
        };
        // What the state reserves for this batch is the aggregation's own.
        st.credit = credit;
        // A state that can be written out may pass the limit within the
        // batch (another worker or operator took the room its estimate
        // counted on) and is written out right after it.
        st.may_overdraw = self.spills_states && !self.group_by.is_empty();
        let before = st.charged;
        let groups = st.groups;
        let done = self.aggregate_batch(st, batch, ctx);
        ctx.memory.release(std::mem::take(&mut st.credit));
        st.may_overdraw = false;
        self.share.counted(st.charged - before);
        self.rows_seen.fetch_add(rows, Ordering::Relaxed);
        self.groups_made
            .fetch_add(st.groups.saturating_sub(groups) as u64, Ordering::Relaxed);
        done?;
        if std::mem::take(&mut st.over_limit) {
            self.spill_state(st, ctx)?;
        }
        Ok(())
    }

    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()> {
        let mut local = *local
            .downcast::<AggState>()
            .map_err(|_| ExecError::Internal("aggregate state".into()))?;
        // A merge may grow the shared table by as much as the worker's: past
        // half the memory the worker's state is written out (or kept apart,
        // when states are not columns) instead.
        if self.spills_states
            && (self.spilling.load(Ordering::Relaxed) || self.past_share(ctx, local.charged))
        {
            return self.spill_state(&mut local, ctx);
        }
        if self.spills(ctx, local.charged) {
            self.held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(local);
            return Ok(());
        }
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        match shared.as_mut() {
            None => *shared = Some(local),
            Some(global) => {
                // As with a batch: a merge past the limit writes the shared
                // state out once it is done, where states can be written.
                global.may_overdraw = self.spills_states && !self.group_by.is_empty();
                let ids = global.group_ids(&local.keys, local.groups, ctx);
                global.may_overdraw = false;
                let ids = ids?;
                global.register(|| self.operator());
                for (a, b) in global.accs.iter_mut().zip(&mut local.accs) {
                    a.merge(b, &ids);
                }
                // The worker's reservations stay with the state its groups
                // went to (given back together if that state is spilled).
                global.charged += local.charged;
                if std::mem::take(&mut global.over_limit) {
                    self.spill_state(global, ctx)?;
                }
            }
        }
        Ok(())
    }

    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        // Results built from kept values (a `string_agg`) count while built.
        let _values = ValueScope::enter(&ctx.memory);
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if self.spilling.load(Ordering::Relaxed) {
            let mut sources =
                std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
            sources.extend(shared.take());
            let parts = self
                .spilled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let parts = parts.unwrap_or_else(|| Arc::new(Partitions::new(0, self.node)));
            parts.flush(ctx)?;
            let file = self.finish_spilled(sources, parts, ctx)?;
            *self
                .spilled_result
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(file);
            return Ok(());
        }
        let mut st = shared
            .take()
            .unwrap_or_else(|| AggState::new(&self.key_types, &self.calls, None));
        if self.group_by.is_empty() && st.groups == 0 {
            // An aggregate without GROUP BY returns one row even over no input.
            st.add_groups(1);
        }
        let batches = self.result_of(&mut st)?;
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = batches;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
