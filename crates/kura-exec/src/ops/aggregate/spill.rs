//! A hash aggregation past its share of memory: partial states (or rows)
//! written hash-partitioned by key, and each partition aggregated in turn at
//! the end, a level down again when it is still too big.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kura_common::{Batch, DataType, Vector, BATCH_SIZE};

use super::group_map::SKIP;
use super::{AggState, AggregateSink};
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::budget::ValueScope;
use crate::expr::compact_batch;
use crate::spill::partitions::{partition_of, Partitions, MAX_LEVEL, PARTITIONS};
use crate::spill::result::ResultFile;

impl AggregateSink {
    /// Whether the aggregation spills from now on: it does already, or it
    /// holds more than half of what its query leaves it (its groups plus the
    /// room left; the other half is for reading the partitions back). Without keys there is one group, and nothing to
    /// partition.
    pub(super) fn spills(&self, ctx: &ExecContext, extra: u64) -> bool {
        if self.group_by.is_empty() {
            return false;
        }
        if self.spilling.load(Ordering::Relaxed) {
            return true;
        }
        if self.share.past(&ctx.memory, extra, 1, 2) {
            self.spilling.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Whether `extra` more bytes take the aggregation past half of what its
    /// query leaves it (the other half is for reading the partitions back).
    pub(super) fn past_share(&self, ctx: &ExecContext, extra: u64) -> bool {
        !self.group_by.is_empty() && self.share.past(&ctx.memory, extra, 1, 2)
    }

    /// Reserves `bytes` a batch is likely to add, when they keep the
    /// aggregation within its share and fit the memory left at this moment:
    /// `Some` of what was taken (nothing for an aggregation without groups,
    /// which cannot spill and reserves as it grows), `None` when the caller
    /// must spill.
    pub(super) fn reserve_ahead(&self, ctx: &ExecContext, bytes: u64) -> Option<u64> {
        if self.group_by.is_empty() {
            return Some(0);
        }
        (!self.past_share(ctx, bytes) && ctx.memory.try_reserve(bytes)).then_some(bytes)
    }

    /// The partitions spilled states or rows go to.
    pub(super) fn partitions(&self) -> Arc<Partitions> {
        let mut spilled = self.spilled.lock().unwrap_or_else(|e| e.into_inner());
        spilled
            .get_or_insert_with(|| Arc::new(Partitions::new(0, self.node)))
            .clone()
    }

    /// Writes a worker's groups (keys and partial states) to the partitions
    /// and gives its memory back; `st` starts again empty. Keys met again
    /// later make new partial states, folded together per partition at the end.
    pub(super) fn spill_state(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
        self.spilling.store(true, Ordering::Relaxed);
        let mut old = std::mem::replace(st, AggState::new(&self.key_types, &self.calls, None));
        let written = self.write_state(&mut old, ctx);
        self.share.release(&ctx.memory, old.charged);
        written
    }

    /// [`AggregateSink::spill_state`]'s writing, a chunk of groups at a time
    /// (the state's columns are copied out as they are written).
    pub(super) fn write_state(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
        if st.groups == 0 {
            return Ok(());
        }
        let parts = self.partitions();
        let keys = std::mem::take(&mut st.keys);
        for from in (0..st.groups).step_by(STATE_CHUNK_GROUPS) {
            ctx.check_cancel()?;
            let to = st.groups.min(from + STATE_CHUNK_GROUPS);
            let chunk: Vec<Vector> = keys.iter().map(|k| k.slice(from, to - from)).collect();
            let mut states = Vec::new();
            for acc in &st.accs {
                acc.state(from, to, &mut states)?;
            }
            parts.add(&chunk, &states, to - from, ctx)?;
        }
        Ok(())
    }

    /// Writes a batch's rows to the partitions instead of aggregating them
    /// (when the aggregates' states are not columns: see `spills_states`).
    pub(super) fn spill_batch(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        let n = batch.num_rows;
        let keys = self
            .group_by
            .iter()
            .map(|e| e.eval(&batch))
            .collect::<ExecResult<Vec<_>>>()?;
        // Only what the aggregates' arguments read is written.
        let columns: Vec<Vector> = batch
            .columns
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                if self.arg_columns.get(i).copied().unwrap_or(false) {
                    c
                } else {
                    Vector::new(c.data_type, 0)
                }
            })
            .collect();
        self.partitions().add(&keys, &columns, n, ctx)
    }

    /// The result of a spilled aggregation: every partition of the held
    /// states' groups and of the spilled rows, aggregated in turn, its groups
    /// written to a temporary file as each partition is done. Memory was what
    /// made it spill: the whole result held (and counted) would take the room
    /// the operators reading it need, and with many groups pass the limit.
    pub(super) fn finish_spilled(
        &self,
        mut sources: Vec<AggState>,
        parts: Arc<Partitions>,
        ctx: &ExecContext,
    ) -> ExecResult<ResultFile> {
        let mut out = ResultFile::new(self.node);
        self.drain(&mut sources, &parts, ctx, &mut out)?;
        for src in sources {
            ctx.memory.release(src.charged);
        }
        Ok(out)
    }

    /// Aggregates each partition at `parts`'s level in turn: its groups held
    /// in `sources` (moved out of them), then its spilled rows, re-partitioned a
    /// level down when they outgrow the memory left; emits the groups to `out`.
    pub(super) fn drain(
        &self,
        sources: &mut [AggState],
        parts: &Partitions,
        ctx: &ExecContext,
        out: &mut ResultFile,
    ) -> ExecResult<()> {
        let level = parts.level;
        // Each source's groups by partition.
        let groups_of: Vec<Vec<Vec<u32>>> = sources
            .iter()
            .map(|src| {
                let mut by_part = vec![Vec::new(); PARTITIONS];
                for (g, &p) in partition_of(level, &src.keys, src.groups)
                    .iter()
                    .enumerate()
                {
                    by_part[p as usize].push(g as u32);
                }
                by_part
            })
            .collect();
        // Each source's group numbers in the partition being built (SKIP for
        // groups of other partitions), reset after each partition.
        let mut ids: Vec<Vec<u32>> = sources.iter().map(|s| vec![SKIP; s.groups]).collect();
        let nkeys = self.key_types.len();
        for p in 0..PARTITIONS {
            ctx.check_cancel()?;
            let mut st = AggState::new(&self.key_types, &self.calls, None);
            // A partition's keys are spread over the whole range: an array
            // over that range would hold mostly empty slots.
            st.dense = None;
            // The partition may pass the limit by what one source or chunk
            // adds (the room the mark counts on can be taken meanwhile by
            // other workers or queries): its later rows then go a level down.
            // A single group cannot be split, so it never may.
            st.may_overdraw = level < MAX_LEVEL;
            for ((src, by_part), ids) in sources.iter_mut().zip(&groups_of).zip(&mut ids) {
                let sel = &by_part[p];
                if sel.is_empty() {
                    continue;
                }
                let keys: Vec<Vector> = src.keys.iter().map(|k| k.take(sel)).collect();
                let new = st.group_ids(&keys, sel.len(), ctx)?;
                for (&g, &id) in sel.iter().zip(&new) {
                    ids[g as usize] = id;
                }
                for (a, b) in st.accs.iter_mut().zip(&mut src.accs) {
                    a.merge_some(b, ids, sel);
                }
                for &g in sel {
                    ids[g as usize] = SKIP;
                }
                self.charge_values(&mut st, ctx)?;
            }
            let mut sub: Option<Partitions> = None;
            // The partition may take half the memory left: the other half is
            // for re-partitioning it, should it need to be.
            let mark = ctx.memory.used() + ctx.memory.room() / 2;
            if let (Some(file), Some(types)) = (parts.take(p), parts.types()) {
                if self.spills_states && single_int_type(&self.key_types) {
                    // A state per group and table it was in: about the groups
                    // to come, so the map does not rehash its way there (as
                    // far as a quarter of the room allows).
                    let fit = ctx.memory.room() / 4 / INT_MAP_ENTRY_BYTES;
                    st.int_map.reserve(file.rows().min(fit) as usize);
                }
                let mut blocks = file.reader(types.to_vec());
                let mut chunks = Vec::new();
                while let Some((columns, n)) = blocks.next_block()? {
                    ctx.check_cancel()?;
                    chunks.clear();
                    chunks_of(columns, n, &mut chunks);
                    for (mut columns, n) in chunks.drain(..) {
                        let args = columns.split_off(nkeys);
                        let keys = columns;
                        // Past the mark the partition's other rows go a
                        // level down; one group cannot be split.
                        if sub.is_none()
                            && level < MAX_LEVEL
                            && st.groups > 1
                            && (ctx.memory.used() > mark || st.over_limit)
                        {
                            sub = Some(Partitions::new(level + 1, self.node));
                        }
                        st.may_overdraw = level < MAX_LEVEL && st.groups != 1;
                        match &sub {
                            Some(s) => s.add(&keys, &args, n, ctx)?,
                            None if self.spills_states => {
                                let applied = st.group_ids(&keys, n, ctx).and_then(|ids| {
                                    self.merge_states(&mut st, &ids, &args)?;
                                    self.charge_values(&mut st, ctx)
                                });
                                applied.map_err(|e| one_group(e, st.groups))?;
                            }
                            None => {
                                let batch = Batch {
                                    columns: args,
                                    num_rows: n,
                                    selection: None,
                                };
                                // The arguments' values live for this chunk, as a
                                // pipeline's do for a batch.
                                let _values = ValueScope::enter(&ctx.memory);
                                let applied = st
                                    .group_ids(&keys, n, ctx)
                                    .and_then(|ids| self.update(&mut st, &ids, batch, ctx));
                                applied.map_err(|e| one_group(e, st.groups))?;
                            }
                        }
                    }
                }
            }
            if let Some(sub) = sub {
                sub.flush(ctx)?;
                self.drain(std::slice::from_mut(&mut st), &sub, ctx, out)?;
            } else {
                // What building the results takes (sorting a group's values)
                // is given back per partition; the results are counted with
                // the whole result at the end.
                let _values = ValueScope::enter(&ctx.memory);
                for b in self.result_of(&mut st)? {
                    out.add(b, ctx)?;
                }
            }
            ctx.memory.release(st.charged);
        }
        Ok(())
    }

    /// Folds spilled partial states (the columns [`Acc::state`] wrote, in
    /// the aggregates' order) into groups `ids` of `st`.
    pub(super) fn merge_states(
        &self,
        st: &mut AggState,
        ids: &[u32],
        states: &[Vector],
    ) -> ExecResult<()> {
        let mut at = 0;
        for acc in &mut st.accs {
            let width = acc
                .state_width()
                .ok_or_else(|| ExecError::Internal("aggregate state width".into()))?;
            let cols = states
                .get(at..at + width)
                .ok_or_else(|| ExecError::Internal("spilled aggregate states".into()))?;
            acc.merge_state(ids, cols)?;
            at += width;
        }
        Ok(())
    }

    /// Charges what a state's accumulators took for values since last asked.
    pub(super) fn charge_values(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
        let grown: u64 = st.accs.iter_mut().map(|acc| acc.take_grown()).sum();
        if grown > 0 {
            st.charge(grown, ctx, "aggregate values")?;
        }
        Ok(())
    }
}

/// What an entry of a single integer key's group map takes, spare room
/// included (a bucket of 12 bytes and a control byte at a load of 7/8 or less).
const INT_MAP_ENTRY_BYTES: u64 = 24;

/// Whether the group key is one integer column (grouped in `int_map`).
fn single_int_type(types: &[DataType]) -> bool {
    use kura_common::types::PhysicalType;
    matches!(types, [t] if matches!(t.physical(), PhysicalType::I32 | PhysicalType::I64))
}

/// Groups written per chunk when a worker spills its state: the copies of the
/// state's columns stay small beside the state itself.
const STATE_CHUNK_GROUPS: usize = 16 * BATCH_SIZE;

/// Rows of a spilled block applied between two looks at the memory: a
/// block's collected values (`string_agg`) may take several times its bytes.
const CHUNK_ROWS: usize = 256;

/// A block read back (`n` rows) as chunks of at most [`CHUNK_ROWS`] rows;
/// empty columns (never read) stay empty.
fn chunks_of(columns: Vec<Vector>, n: usize, out: &mut Vec<(Vec<Vector>, usize)>) {
    if n <= CHUNK_ROWS {
        out.push((columns, n));
        return;
    }
    for start in (0..n).step_by(CHUNK_ROWS) {
        let rows: Vec<u32> = (start as u32..n.min(start + CHUNK_ROWS) as u32).collect();
        let part = columns
            .iter()
            .map(|c| {
                if c.is_empty() {
                    Vector::new(c.data_type, 0)
                } else {
                    c.take(&rows)
                }
            })
            .collect();
        out.push((part, rows.len()));
    }
}

/// A spilled partition's group that alone passed the memory limit: no
/// partitioning can help, and the error says so.
fn one_group(e: ExecError, groups: usize) -> ExecError {
    match e {
        ExecError::OutOfMemory { limit, .. } if groups <= 1 => ExecError::OutOfMemory {
            what: "a single group of a hash aggregation",
            limit,
        },
        e => e,
    }
}
