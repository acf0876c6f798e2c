//! The join's build sink: collects the build input with per-worker partial state, counts
//! its memory, and past its share of the limit writes its rows hash-partitioned to disk
//! (the build half of the grace hash join in [`super::spill`]) — or, for a hybrid hash
//! join, partitions them in memory and writes out only the partitions that do not fit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kura_common::{Batch, ColumnData, DataType, Vector};

use super::spill::KeyUse;
use super::{spill, BuildSide, Held, JoinAlgorithm, JoinSpec, JoinTable};
use crate::context::{ExecContext, OwnShare};
use crate::error::{ExecError, ExecResult};
use crate::expr::compact_batch;
use crate::ops::concat;
use crate::pipeline::{LocalState, Sink};
use crate::spill::key_set::KeySet;
use crate::spill::partitions::{Partitions, MAX_LEVEL, PARTITIONS};

/// What a hash index takes per build row, about (a hash table's slot at its
/// load factor and the chain link): counted before the index is built when
/// deciding to spill, so that a narrow build side is not kept only to find
/// that its index does not fit.
const INDEX_BYTES_PER_ROW: u64 = 24;

/// Collects the build input (breaker of the build pipeline).
pub struct JoinBuildSink {
    /// How profiles name this join's memory (its build keys).
    label: Option<String>,
    spec: Arc<JoinSpec>,
    algorithm: Arc<dyn JoinAlgorithm>,
    parts: Mutex<Vec<Batch>>,
    table: OnceLock<Arc<JoinTable>>,
    /// Whether the build side may go to disk past half the memory limit (a
    /// grace hash join, see [`spill`]), at which partitioning level, and the
    /// plan node charged with the bytes written.
    may_spill: bool,
    level: u32,
    /// A partition's own budget for its rows (see [`JoinBuildSink::too_big`]).
    budget: Option<u64>,
    node: usize,
    /// Set once the build side spills: every batch then goes to `spilled`.
    spilling: AtomicBool,
    spilled: OnceLock<Arc<Partitions>>,
    /// A hybrid hash join: spilled partitions stay in memory while they fit,
    /// and those left at the end are built into `resident`, the table the
    /// probe rows of those partitions are joined with as they pass.
    hybrid: bool,
    resident: Mutex<Option<Resident>>,
    /// The keys of the rows partitioned once the build side spills, for the
    /// probe side to leave rows without a partner unwritten (see [`KeySet`]);
    /// none when the join keeps such rows or too little memory was left.
    key_set: OnceLock<Option<Arc<KeySet>>>,
    /// Bytes this sink reserved (given back when a partition is done, or
    /// handed to the built table).
    share: OwnShare,
    /// Build rows held in memory.
    rows: AtomicU64,
}

impl JoinBuildSink {
    pub fn new(spec: Arc<JoinSpec>, algorithm: Arc<dyn JoinAlgorithm>) -> JoinBuildSink {
        JoinBuildSink {
            label: None,
            spec,
            algorithm,
            parts: Mutex::new(Vec::new()),
            table: OnceLock::new(),
            may_spill: false,
            level: 0,
            budget: None,
            node: crate::context::NO_NODE,
            spilling: AtomicBool::new(false),
            spilled: OnceLock::new(),
            hybrid: false,
            resident: Mutex::new(None),
            key_set: OnceLock::new(),
            share: OwnShare::default(),
            rows: AtomicU64::new(0),
        }
    }

    /// Lets the build side spill to partitions of `level` past half the
    /// memory limit, when the join can run partition by partition (probed by
    /// rows of `probe_types`) and `level` is not past the deepest.
    pub fn at_level(mut self, level: u32, node: usize, probe_types: Vec<DataType>) -> Self {
        self.may_spill = level <= MAX_LEVEL && spill::can_partition(&self.spec, &probe_types);
        self.level = level;
        self.node = node;
        self
    }

    /// Makes a spilling build side keep the partitions that fit in memory (a
    /// hybrid hash join), where the join allows: not a null-aware one, whose
    /// answer for a row can depend on every build row of its correlation.
    pub fn hybrid(mut self) -> Self {
        self.hybrid = self.may_spill && !self.spec.join_type.null_aware();
        self
    }

    /// The table of the partitions a hybrid join kept in memory, and which
    /// partitions those are (after `finish`, when the build side spilled).
    pub fn take_resident(&self) -> Option<Resident> {
        self.resident
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The build rows' partitions, once the build side spilled (after `finish`).
    pub fn take_spilled(&self) -> Option<Arc<Partitions>> {
        if self.spilling.load(Ordering::Relaxed) {
            self.spilled.get().cloned()
        } else {
            None
        }
    }

    /// Whether `bytes` more rows make the build side spill: past half of the
    /// memory the query leaves it for a whole join; past its own budget for a partition
    /// of a spilled one, so that partitions joined at once by several workers
    /// do not push each other down a level for what the others hold.
    /// The index is not built yet: it is counted at [`INDEX_BYTES_PER_ROW`].
    fn too_big(&self, bytes: u64, rows: usize, ctx: &ExecContext) -> bool {
        let rows = self.rows.load(Ordering::Relaxed) + rows as u64;
        let index = rows.saturating_mul(INDEX_BYTES_PER_ROW);
        match self.budget {
            Some(budget) => self.reserved().saturating_add(bytes + index) > budget,
            // Half of what the query leaves this build (its room plus what the
            // build already holds): a small build spills only when others hold
            // nearly everything, and a large one while half is still left
            // for reading its partitions back.
            None => self.share.past(&ctx.memory, bytes + index, 1, 2),
        }
    }

    /// Gives the build side of a partition `budget` bytes of rows before it
    /// spills a level down (see [`JoinBuildSink::too_big`]).
    pub fn with_budget(mut self, budget: u64) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Bytes this sink reserved from the query's memory.
    pub fn reserved(&self) -> u64 {
        self.share.held()
    }

    fn partitions(&self, ctx: &ExecContext) -> &Arc<Partitions> {
        self.spilled.get_or_init(|| {
            Arc::new(if self.hybrid {
                // Resident partitions hold at most what the build side may
                // (see `too_big`): left to grow until the limit refused them,
                // they took the room other operators of the query needed.
                let cap = self
                    .budget
                    .unwrap_or_else(|| ctx.memory.room().saturating_add(self.share.held()) / 2);
                Partitions::hybrid(self.level, self.node, cap)
            } else {
                Partitions::new(self.level, self.node)
            })
        })
    }

    /// How a spilled build row's key is kept: added to the key set (made when
    /// the first row spills, sized from the memory left then).
    fn recording(&self, ctx: &ExecContext) -> KeyUse<'_> {
        let set = self.key_set.get_or_init(|| {
            if self.spec.join_type.keeps_unmatched_probe() {
                return None;
            }
            KeySet::sized_for(ctx.memory.room(), &ctx.memory).map(Arc::new)
        });
        match set {
            Some(set) => KeyUse::Record(set),
            None => KeyUse::Ignore,
        }
    }

    /// The key set of the build side's spilled rows, for its probe side
    /// (which gives its memory back once every probe row has passed).
    pub fn key_set(&self) -> Option<Arc<KeySet>> {
        self.key_set.get().cloned().flatten()
    }

    /// Moves rows held before the spill began into the (hybrid) partitions,
    /// giving back what they held as rows of their own.
    fn partition_held(&self, batches: Vec<Batch>, ctx: &ExecContext) -> ExecResult<()> {
        let keys = spill::partition_keys(&self.spec, &self.spec.build_keys);
        for b in batches {
            self.share.release(&ctx.memory, batch_bytes(&b));
            self.rows.fetch_sub(b.num_rows as u64, Ordering::Relaxed);
            spill::spill_batch(self.partitions(ctx), keys, b, self.recording(ctx), ctx)?;
        }
        Ok(())
    }

    /// Writes resident partitions out, the largest first, until the build
    /// side holds at most half of what the query leaves it (a partition of a
    /// spilled join: its budget) — its rows and,
    /// at [`INDEX_BYTES_PER_ROW`], their index to come. Rows held since
    /// before the spill began (in workers' states not yet merged) join the
    /// partitions at the end, spread over them by hash: only the resident
    /// partitions' part of them is counted, as only that part will stay.
    fn evict_to_fit(&self, ctx: &ExecContext) -> ExecResult<()> {
        let parts = self.partitions(ctx);
        loop {
            let kept = parts.resident_count() as u64;
            let held = self.share.held();
            let resident = parts.resident_bytes();
            let staying = resident + held * kept / PARTITIONS as u64;
            let rows = parts.resident_rows()
                + self.rows.load(Ordering::Relaxed) * kept / PARTITIONS as u64;
            let index = rows.saturating_mul(INDEX_BYTES_PER_ROW);
            // A partition of a spilled join has its own budget (see
            // `too_big`); a whole join half of what the query leaves it.
            let allowed = self
                .budget
                .unwrap_or_else(|| ctx.memory.room().saturating_add(held + resident) / 2);
            let over = staying.saturating_add(index) > allowed;
            if !over || !parts.evict_largest(ctx)? {
                return Ok(());
            }
        }
    }

    /// The end of a hybrid build side: every row partitioned, partitions
    /// written out until the rest fit, the rest built into the resident table
    /// (or, when its index does not fit after all, written out too).
    fn finish_hybrid(&self, held: Vec<Batch>, ctx: &ExecContext) -> ExecResult<()> {
        let parts = self.partitions(ctx).clone();
        self.partition_held(held, ctx)?;
        self.evict_to_fit(ctx)?;
        let (resident, batches) = parts.take_resident();
        self.share.counted(parts.take_resident_bytes());
        if batches.is_empty() {
            ctx.memory.release(self.share.take());
            return parts.flush(ctx);
        }
        match self.build_table(batches, ctx)? {
            Built::Table(table) => {
                // The join's own partitions (a partition of a spilled join
                // partitioned again keeps sub-partitions of its own).
                if self.budget.is_none() {
                    let kept = resident.iter().filter(|&&r| r).count() as u64;
                    ctx.record(self.node, |s| s.partitions_in_memory = kept);
                }
                *self.resident.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(Resident { table, resident });
                parts.flush(ctx)
            }
            Built::IndexTooBig(rows) => self.spill_held(vec![rows], ctx),
        }
    }

    /// What a failed reservation names: at the deepest partitioning level,
    /// rows that no further partitioning splits (one key's, a skewed key).
    fn what(&self, what: &'static str) -> &'static str {
        if self.level > MAX_LEVEL {
            "a hash join partition of keys too frequent to split further (a skewed join key)"
        } else {
            what
        }
    }

    fn reserve(&self, bytes: u64, what: &'static str, ctx: &ExecContext) -> ExecResult<()> {
        self.share.reserve(&ctx.memory, bytes, what)
    }

    /// Writes `batches` (rows held before the spill began) to the partitions,
    /// gives back every byte held, and ends the build side's writing.
    fn spill_held(&self, batches: Vec<Batch>, ctx: &ExecContext) -> ExecResult<()> {
        self.spilling.store(true, Ordering::Relaxed);
        let parts = self.partitions(ctx);
        // A hybrid sink's partitions are made resident: rows kept in one here
        // would be neither written nor built into a table — lost, with the
        // memory they reserved.
        parts.unresident_all();
        for b in batches {
            let keys = spill::partition_keys(&self.spec, &self.spec.build_keys);
            spill::spill_batch(parts, keys, b, self.recording(ctx), ctx)?;
        }
        ctx.memory.release(self.share.take());
        parts.flush(ctx)
    }

    /// A build batch once the build side spills: written to its partition,
    /// or for a hybrid join kept in its partition while it fits, together
    /// with the rows this worker held before.
    fn spill_consumed(
        &self,
        local: &mut LocalState,
        batch: Batch,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        self.spilling.store(true, Ordering::Relaxed);
        let keys = spill::partition_keys(&self.spec, &self.spec.build_keys);
        if !self.hybrid {
            return spill::spill_batch(self.partitions(ctx), keys, batch, self.recording(ctx), ctx);
        }
        // This worker's rows held so far join the partitions, which
        // keep in memory what fits.
        if let Some(v) = local.downcast_mut::<Vec<Batch>>() {
            self.partition_held(std::mem::take(v), ctx)?;
        }
        spill::spill_batch(self.partitions(ctx), keys, batch, self.recording(ctx), ctx)?;
        self.evict_to_fit(ctx)
    }

    /// Names the build keys for memory profiles (e.g. `orders.o_orderkey`).
    pub fn with_label(mut self, keys: Option<String>) -> Self {
        self.label = keys;
        self
    }

    pub fn table(&self) -> ExecResult<Arc<JoinTable>> {
        self.table
            .get()
            .cloned()
            .ok_or_else(|| ExecError::Internal("join probed before build finished".into()))
    }
}

pub(crate) fn vector_bytes(v: &Vector) -> u64 {
    // Allocated, not used, bytes: what the process holds for the vector.
    let data = match &v.data {
        ColumnData::Bool(x) => x.capacity(),
        ColumnData::I32(x) => x.capacity() * 4,
        ColumnData::I64(x) => x.capacity() * 8,
        ColumnData::F64(x) => x.capacity() * 8,
        ColumnData::I128(x) => x.capacity() * 16,
        ColumnData::Str(s) => s.data.capacity() + s.offsets.capacity() * 4,
    };
    (data + v.validity.as_ref().map_or(0, |x| x.capacity())) as u64
}

/// Bytes held by a batch (memory accounting).
pub fn batch_bytes(b: &Batch) -> u64 {
    b.columns.iter().map(vector_bytes).sum()
}

impl Sink for JoinBuildSink {
    fn local(&self) -> LocalState {
        Box::new(Vec::<Batch>::new())
    }
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        let bytes = batch_bytes(&batch);
        if self.may_spill {
            // Spilling already, past its share, or other workers took the room
            // since `too_big` looked (the partitions of a spilled join, joined
            // at once): the batch goes to the partitions.
            if self.spilling.load(Ordering::Relaxed)
                || self.too_big(bytes, batch.num_rows, ctx)
                || !self.share.try_reserve(&ctx.memory, bytes)
            {
                return self.spill_consumed(local, batch, ctx);
            }
        } else {
            self.reserve(bytes, self.what("hash join build"), ctx)?;
        }
        self.rows
            .fetch_add(batch.num_rows as u64, Ordering::Relaxed);
        if let Some(v) = local.downcast_mut::<Vec<Batch>>() {
            v.push(batch);
        }
        Ok(())
    }
    fn merge(&self, local: LocalState, _ctx: &ExecContext) -> ExecResult<()> {
        if let Ok(v) = local.downcast::<Vec<Batch>>() {
            self.parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(*v);
        }
        Ok(())
    }
    /// One list of batches per worker: a worker that starts spilling then
    /// partitions every row it held (see `consume`), all workers at once,
    /// instead of the caller partitioning the rows of finished morsels alone
    /// after the last one.
    fn local_per_worker(&self) -> bool {
        self.may_spill
    }
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        if self.spilling.load(Ordering::Relaxed) {
            if self.hybrid {
                return self.finish_hybrid(parts, ctx);
            }
            return self.spill_held(parts, ctx);
        }
        match self.build_table(parts, ctx)? {
            Built::Table(table) => {
                let _ = self.table.set(table);
                Ok(())
            }
            // The rows fit but their index does not: join by partitions.
            Built::IndexTooBig(rows) => self.spill_held(vec![rows], ctx),
        }
    }
}

/// A hybrid hash join's partitions kept in memory: their table, and which
/// partitions they are (by [`crate::spill::partitions::partition_of`] at the
/// build side's level).
pub struct Resident {
    pub table: Arc<JoinTable>,
    pub resident: Vec<bool>,
}

/// What building a table of rows gave.
enum Built {
    Table(Arc<JoinTable>),
    /// The rows, given back: their index did not fit (only when the join may spill).
    IndexTooBig(Batch),
}

impl JoinBuildSink {
    /// Builds the table of `parts` (this sink holds their memory; the table
    /// takes it over).
    fn build_table(&self, parts: Vec<Batch>, ctx: &ExecContext) -> ExecResult<Built> {
        let all = concat(&self.spec.build_types, parts);
        let keys = self
            .spec
            .build_keys
            .iter()
            .map(|k| k.eval(&all))
            .collect::<ExecResult<Vec<_>>>()?;
        let has_null_key = keys
            .last()
            .is_some_and(|k| (0..all.num_rows).any(|i| k.is_null(i)));
        let mut null_safe = self.spec.null_safe.clone();
        null_safe.resize(keys.len(), false);
        let mut side = BuildSide {
            rows: all.num_rows,
            columns: all.columns,
            keys,
            has_null_key,
            null_safe,
        };
        let index = self.algorithm.index(&side, ctx)?;
        // Reserved only if it fits when the join can spill: a refused
        // reservation must not count, even for a moment, against the
        // partitions other workers join at the same time.
        if self.may_spill {
            if !self.share.try_reserve(&ctx.memory, index.bytes()) {
                drop(index);
                return Ok(Built::IndexTooBig(Batch {
                    columns: side.columns,
                    num_rows: side.rows,
                    selection: None,
                }));
            }
        } else {
            self.reserve(index.bytes(), self.what("hash join table"), ctx)?;
        }
        let correlation = if self.spec.join_type.null_aware() && side.keys.len() > 1 {
            let in_key = side.keys.pop();
            let in_rule = side.null_safe.pop();
            let index = self.algorithm.index(&side, ctx)?;
            side.keys.extend(in_key);
            side.null_safe.extend(in_rule);
            self.reserve(index.bytes(), "hash join table", ctx)?;
            Some(index)
        } else {
            None
        };
        // From here the table holds the reservation: it is given back when the
        // table is dropped, not when the query ends.
        let held = Held::new(ctx.memory.clone(), self.share.take());
        let mut table = JoinTable {
            side,
            index,
            correlation,
            protection: None,
            held: Some(held),
        };
        table.register(&self.spec, self.label.as_deref());
        if let Some(hook) = &ctx.cache.hash_tables {
            let keys = JoinTable::keys_label(&self.spec, self.label.as_deref());
            let bytes: u64 = table.regions().iter().map(|&(_, len, _)| len as u64).sum();
            table.protection = hook.built(&keys, bytes, &|| table.touch_lines());
        }
        Ok(Built::Table(Arc::new(table)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use kura_common::Value;

    use super::*;
    use crate::expr::PhysExpr;
    use crate::ops::join::hash::HashJoin;
    use crate::plan::JoinType;

    /// A hybrid build side that never began spilling, whose rows fit but whose
    /// index does not, writes every row to disk and gives all its memory back
    /// (its partitions start resident: rows left in one were lost, and with
    /// them the matches of their keys, when the memory the other workers held
    /// at that moment let a partition stay).
    #[test]
    fn a_hybrid_build_whose_index_does_not_fit_writes_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let n = 10_000;
        let keys: Vec<Value> = (0..n).map(Value::BigInt).collect();
        let column = Vector::from_values(DataType::BigInt, &keys).unwrap();
        let row_bytes = vector_bytes(&column);
        // Room for the rows and a fifth more: not for their index.
        let ctx = ExecContext::new(Arc::new(AtomicBool::new(false)), row_bytes * 6 / 5)
            .with_spill(dir.path().to_path_buf(), u64::MAX);
        let key = PhysExpr::column(0, DataType::BigInt);
        let spec = Arc::new(JoinSpec {
            join_type: JoinType::Inner,
            probe_keys: vec![key.clone()],
            build_keys: vec![key],
            residual: None,
            build_types: vec![DataType::BigInt],
            null_safe: vec![],
        });
        let sink = JoinBuildSink::new(spec, Arc::new(HashJoin))
            .at_level(1, crate::context::NO_NODE, vec![DataType::BigInt])
            .with_budget(u64::MAX)
            .hybrid();
        let mut local = sink.local();
        let batch = Batch {
            columns: vec![column],
            num_rows: n as usize,
            selection: None,
        };
        sink.consume(&mut local, batch, &ctx).unwrap();
        sink.merge(local, &ctx).unwrap();
        sink.finish(&ctx).unwrap();
        let parts = sink.take_spilled().expect("the build side spilled");
        assert!(sink.take_resident().is_none());
        assert_eq!(parts.resident_count(), 0);
        let written: u64 = (0..PARTITIONS)
            .filter_map(|p| parts.take(p))
            .map(|f| f.rows())
            .sum();
        assert_eq!(written, n as u64);
        ctx.memory.release(sink.reserved());
        assert_eq!(ctx.memory.used(), 0);
    }
}
