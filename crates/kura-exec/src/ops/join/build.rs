//! The join's build sink: collects the build input with per-worker partial state, counts
//! its memory, and past its share of the limit writes its rows hash-partitioned to disk
//! (the build half of the grace hash join in [`super::spill`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kura_common::{Batch, ColumnData, DataType, Vector};

use super::{spill, BuildSide, Held, JoinAlgorithm, JoinSpec, JoinTable};
use crate::context::{ExecContext, OwnShare};
use crate::error::{ExecError, ExecResult};
use crate::expr::compact_batch;
use crate::ops::concat;
use crate::pipeline::{LocalState, Sink};
use crate::spill::partitions::{Partitions, MAX_LEVEL};

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

    /// The build rows' partitions, once the build side spilled (after `finish`).
    pub fn take_spilled(&self) -> Option<Arc<Partitions>> {
        if self.spilling.load(Ordering::Relaxed) {
            Some(self.partitions().clone())
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

    fn partitions(&self) -> &Arc<Partitions> {
        self.spilled
            .get_or_init(|| Arc::new(Partitions::new(self.level, self.node)))
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
        let parts = self.partitions();
        for b in batches {
            let keys = spill::partition_keys(&self.spec, &self.spec.build_keys);
            spill::spill_batch(parts, keys, b, ctx)?;
        }
        ctx.memory.release(self.share.take());
        parts.flush(ctx)
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
        if self.may_spill
            && (self.spilling.load(Ordering::Relaxed) || self.too_big(bytes, batch.num_rows, ctx))
        {
            self.spilling.store(true, Ordering::Relaxed);
            let keys = spill::partition_keys(&self.spec, &self.spec.build_keys);
            return spill::spill_batch(self.partitions(), keys, batch, ctx);
        }
        self.rows
            .fetch_add(batch.num_rows as u64, Ordering::Relaxed);
        self.reserve(bytes, self.what("hash join build"), ctx)?;
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
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        if self.spilling.load(Ordering::Relaxed) {
            return self.spill_held(parts, ctx);
        }
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
        // Asked first when the join can spill: a failed reservation would
        // count the index against the query until given back, making
        // partitions other workers join at that moment fail for nothing.
        let room = if self.may_spill {
            ctx.memory.check_room(index.bytes(), "hash join table")
        } else {
            Ok(())
        };
        let what = self.what("hash join table");
        if let Err(e) = room.and_then(|()| self.reserve(index.bytes(), what, ctx)) {
            if self.may_spill && e.is_out_of_memory() {
                // The rows fit but their index does not: join by partitions.
                drop(index);
                let rows = Batch {
                    columns: side.columns,
                    num_rows: side.rows,
                    selection: None,
                };
                return self.spill_held(vec![rows], ctx);
            }
            return Err(e);
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
        let _ = self.table.set(Arc::new(table));
        Ok(())
    }
}
