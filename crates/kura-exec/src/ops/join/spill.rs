//! Grace and hybrid hash join: a join whose build side passes half the query's
//! memory limit writes both inputs to temporary files, hash-partitioned by join
//! key, and joins them a partition at a time — disk as the level of the memory
//! hierarchy below RAM (paper 003's hash join, larger than memory). A hybrid
//! join keeps the build partitions that fit in memory and joins their probe
//! rows as they pass ([`HybridProbeOp`]); only the other partitions' rows go to
//! disk. A partition whose build side is still too big is partitioned again,
//! both sides, a level down.

use std::sync::{Arc, RwLock};

use kura_common::{Batch, DataType, Vector};

use super::{JoinAlgorithm, JoinBuildSink, JoinProbeOp, JoinSpec, Resident};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::budget::ValueScope;
use crate::expr::{compact_batch, PhysExpr};
use crate::pipeline::{Emit, LocalState, Sink, Source, Transform};
use crate::plan::JoinType;
use crate::spill::key_set::KeySet;
use crate::spill::partitions::{key_hashes, partition, Partitions, NO_PARTITION, PARTITIONS};
use crate::spill::SpillFile;

/// Whether a join can run partition by partition: it has keys to partition by
/// (see [`partition_keys`]; rows of different keys never meet) and both sides
/// have columns to write. An uncorrelated `NOT IN` cannot: whether a row's
/// answer is NULL depends on every row of the subquery, not those of a key.
pub(super) fn can_partition(spec: &JoinSpec, probe_types: &[DataType]) -> bool {
    !partition_keys(spec, &spec.build_keys).is_empty()
        && !spec.build_types.is_empty()
        && !probe_types.is_empty()
}

/// The keys (of either side) a spilled join partitions by: all of them, or
/// for a null-aware join (`NOT IN` with correlation) its correlation keys,
/// all but the `IN` key — a row's set, the build rows of its correlation
/// keys, then lies whole in its partition, where whether the row's answer is
/// NULL (a NULL in the set) can be told.
pub(super) fn partition_keys<'a>(spec: &JoinSpec, keys: &'a [PhysExpr]) -> &'a [PhysExpr] {
    if spec.join_type.null_aware() {
        &keys[..keys.len().saturating_sub(1)]
    } else {
        keys
    }
}

/// What a spilled join's rows do with the key set of its build side's rows
/// ([`KeySet`]), kept when the join drops probe rows without a partner.
#[derive(Clone, Copy)]
pub(super) enum KeyUse<'a> {
    /// Keys not looked at (the join keeps unmatched probe rows, or the query
    /// had too little memory left for a set).
    Ignore,
    /// Build rows: their keys are added.
    Record(&'a KeySet),
    /// Probe rows: a row whose key is not in the set has no partner and is
    /// not written.
    Require(&'a KeySet),
}

impl<'a> KeyUse<'a> {
    fn of(set: Option<&'a KeySet>, record: bool) -> KeyUse<'a> {
        match set {
            Some(s) if record => KeyUse::Record(s),
            Some(s) => KeyUse::Require(s),
            None => KeyUse::Ignore,
        }
    }

    /// Adds or looks up the keys of rows with `hashes` bound for partitions
    /// `part`; a probe row without a partner gets [`NO_PARTITION`]. Returns
    /// how many did.
    fn apply(self, hashes: &[u64], part: &mut [u8]) -> u64 {
        match self {
            KeyUse::Ignore => 0,
            KeyUse::Record(set) => {
                hashes.iter().for_each(|&h| set.insert(h));
                0
            }
            KeyUse::Require(set) => {
                let mut dropped = 0;
                for (&h, p) in hashes.iter().zip(part.iter_mut()) {
                    if *p != NO_PARTITION && !set.may_contain(h) {
                        *p = NO_PARTITION;
                        dropped += 1;
                    }
                }
                dropped
            }
        }
    }
}

/// Writes `batch`'s rows to `parts`, each by the partition of its `keys`,
/// adding their keys to the build side's key set or leaving out the probe
/// rows it has no key of (`set`).
pub(super) fn spill_batch(
    parts: &Partitions,
    keys: &[PhysExpr],
    batch: Batch,
    set: KeyUse,
    ctx: &ExecContext,
) -> ExecResult<()> {
    let batch = compact_batch(batch);
    let n = batch.num_rows;
    if n == 0 {
        return Ok(());
    }
    let key_values = keys
        .iter()
        .map(|k| k.eval(&batch))
        .collect::<ExecResult<Vec<Vector>>>()?;
    let hashes = key_hashes(parts.level, &key_values, n);
    drop(key_values);
    let mut part: Vec<u8> = hashes.iter().map(|&h| partition(h)).collect();
    let dropped = set.apply(&hashes, &mut part);
    if dropped > 0 {
        ctx.record(parts.node(), |s| s.unspilled_probe_rows += dropped);
    }
    if dropped as usize == n {
        return Ok(());
    }
    let columns: Vec<&Vector> = batch.columns.iter().collect();
    parts.add_rows(&part, &columns, n, ctx)
}

/// The probe side of a spilled join, written to partitions of the same level
/// as the build side's (breaker of the probe pipeline).
pub struct ProbePartitionSink {
    spec: Arc<JoinSpec>,
    parts: Arc<Partitions>,
    /// The build side's key set: rows without a key in it are not written.
    key_set: Option<Arc<KeySet>>,
}

impl ProbePartitionSink {
    pub fn new(
        spec: Arc<JoinSpec>,
        level: u32,
        node: usize,
        key_set: Option<Arc<KeySet>>,
    ) -> ProbePartitionSink {
        ProbePartitionSink {
            spec,
            parts: Arc::new(Partitions::new(level, node)),
            key_set,
        }
    }

    /// The written partitions (after the pipeline ran).
    pub fn partitions(&self) -> Arc<Partitions> {
        self.parts.clone()
    }
}

impl Sink for ProbePartitionSink {
    fn local(&self) -> LocalState {
        Box::new(())
    }
    fn consume(&self, _: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let keys = partition_keys(&self.spec, &self.spec.probe_keys);
        let set = KeyUse::of(self.key_set.as_deref(), false);
        spill_batch(&self.parts, keys, batch, set, ctx)
    }
    fn merge(&self, _: LocalState, _: &ExecContext) -> ExecResult<()> {
        Ok(())
    }
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        if let Some(set) = &self.key_set {
            set.release(&ctx.memory);
        }
        self.parts.flush(ctx)
    }
    fn local_per_worker(&self) -> bool {
        true
    }
}

/// The probe side of a hybrid hash join: each probe row of a partition kept
/// in memory is joined at once with the resident table; the others' rows are
/// written to the probe side's partitions, joined after every probe row has
/// passed (by a [`GraceJoinSource`], the pipeline's next phase).
pub struct HybridProbeOp {
    spec: Arc<JoinSpec>,
    /// The probe of the resident table, dropped (its memory given back) once
    /// the probe side ended, before the partitions on disk are joined.
    probe: RwLock<Option<Arc<JoinProbeOp>>>,
    resident: Vec<bool>,
    parts: Arc<Partitions>,
    /// The build side's key set: rows bound for disk without a key in it are
    /// not written.
    key_set: Option<Arc<KeySet>>,
}

impl HybridProbeOp {
    pub fn new(
        spec: Arc<JoinSpec>,
        resident: Resident,
        parts: Arc<Partitions>,
        probe_types: Vec<DataType>,
        key_set: Option<Arc<KeySet>>,
    ) -> HybridProbeOp {
        let probe = JoinProbeOp::new(spec.clone(), resident.table, probe_types);
        HybridProbeOp {
            spec,
            probe: RwLock::new(Some(Arc::new(probe))),
            resident: resident.resident,
            parts,
            key_set,
        }
    }

    fn probe(&self) -> ExecResult<Arc<JoinProbeOp>> {
        self.probe
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                crate::error::ExecError::Internal("hybrid join probed after its end".into())
            })
    }
}

impl Transform for HybridProbeOp {
    fn apply(&self, _batch: Batch, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        Err(crate::error::ExecError::Internal(
            "a hybrid join's probe emits through apply_each".into(),
        ))
    }

    fn apply_each(
        &self,
        batch: Batch,
        ctx: &ExecContext,
        out: &mut dyn FnMut(Batch) -> ExecResult<bool>,
    ) -> ExecResult<bool> {
        let batch = compact_batch(batch);
        let n = batch.num_rows;
        if n == 0 {
            return Ok(true);
        }
        let keys = partition_keys(&self.spec, &self.spec.probe_keys)
            .iter()
            .map(|k| k.eval(&batch))
            .collect::<ExecResult<Vec<Vector>>>()?;
        let hashes = key_hashes(self.parts.level, &keys, n);
        drop(keys);
        let mut part: Vec<u8> = hashes.iter().map(|&h| partition(h)).collect();
        let mut in_memory = Vec::new();
        for (row, p) in part.iter_mut().enumerate() {
            if self.resident[*p as usize] {
                in_memory.push(row as u32);
                *p = NO_PARTITION;
            }
        }
        if in_memory.len() < n {
            let dropped = KeyUse::of(self.key_set.as_deref(), false).apply(&hashes, &mut part);
            if dropped > 0 {
                ctx.record(self.parts.node(), |s| s.unspilled_probe_rows += dropped);
            }
            if in_memory.len() + (dropped as usize) < n {
                let columns: Vec<&Vector> = batch.columns.iter().collect();
                self.parts.add_rows(&part, &columns, n, ctx)?;
            }
        }
        if in_memory.is_empty() {
            return Ok(true);
        }
        // The resident partitions' rows are probed at their selection, not
        // copied out first (the probe gathers only what it emits).
        let mut joined = batch;
        if in_memory.len() < n {
            joined.selection = Some(in_memory);
        }
        self.probe()?.apply_each(joined, ctx, out)
    }

    fn reused_bytes(&self) -> u64 {
        self.probe().map_or(0, |p| p.reused_bytes())
    }

    fn fan_out(&self) -> usize {
        self.probe().map_or(1, |p| p.fan_out())
    }

    /// The resident table's unmatched build rows (outer joins); the probe
    /// rows on disk written out; the table dropped.
    fn tail(&self, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        if let Some(set) = &self.key_set {
            set.release(&ctx.memory);
        }
        self.parts.flush(ctx)?;
        let probe = self.probe.write().unwrap_or_else(|e| e.into_inner()).take();
        match probe {
            Some(p) => p.tail(ctx),
            None => Ok(None),
        }
    }
}

/// The output of a spilled join: one morsel per partition, each joined in
/// memory (its build rows indexed, its probe rows streamed past them).
pub struct GraceJoinSource {
    spec: Arc<JoinSpec>,
    algorithm: Arc<dyn JoinAlgorithm>,
    build: Arc<Partitions>,
    probe: Arc<Partitions>,
    probe_types: Vec<DataType>,
    node: usize,
}

impl GraceJoinSource {
    pub fn new(
        spec: Arc<JoinSpec>,
        algorithm: Arc<dyn JoinAlgorithm>,
        build: Arc<Partitions>,
        probe: Arc<Partitions>,
        probe_types: Vec<DataType>,
        node: usize,
    ) -> GraceJoinSource {
        GraceJoinSource {
            spec,
            algorithm,
            build,
            probe,
            probe_types,
            node,
        }
    }

    /// Joins one partition: its build rows (`build`, `None` when it has none)
    /// with its probe rows, at partitioning `level`. A build side that passes
    /// half the memory again is partitioned a level down, and so is the probe
    /// side with it.
    fn join_partition(
        &self,
        level: u32,
        build: Option<SpillFile>,
        probe: Option<SpillFile>,
        ctx: &ExecContext,
        emit: &mut Emit,
    ) -> ExecResult<bool> {
        let jt = self.spec.join_type;
        let keeps_probe_rows = jt.keeps_unmatched_probe();
        if (probe.is_none() && !jt.keeps_unmatched_build() && jt != JoinType::RightAnti)
            || (build.is_none() && !keeps_probe_rows)
        {
            return Ok(true);
        }
        // A quarter of the memory left: the rows, then about as much again
        // for their index, leave the other half for the partitions other
        // workers join at the same time.
        let sink = JoinBuildSink::new(self.spec.clone(), self.algorithm.clone())
            .at_level(level + 1, self.node, self.probe_types.clone())
            .with_budget(ctx.memory.room() / 4)
            .hybrid();
        let mut local = sink.local();
        if let Some(file) = &build {
            let mut blocks = file.reader(self.spec.build_types.clone());
            while let Some((columns, n)) = blocks.next_block()? {
                ctx.check_cancel()?;
                let _values = ValueScope::enter(&ctx.memory);
                sink.consume(&mut local, rows_of(columns, n), ctx)?;
            }
        }
        drop(build);
        sink.merge(local, ctx)?;
        let done = sink.finish(ctx);
        let more = match done.map(|()| sink.take_spilled()) {
            Ok(Some(sub_build)) => {
                let sub = SubBuild {
                    level: level + 1,
                    parts: sub_build,
                    key_set: sink.key_set(),
                };
                match sink.take_resident() {
                    Some(resident) => self.join_hybrid(sub, resident, probe, ctx, emit),
                    None => self.join_spilled(sub, probe, ctx, emit),
                }
            }
            Ok(None) => self.probe_partition(&sink, probe, ctx, emit),
            Err(e) => Err(e),
        };
        ctx.memory.release(sink.reserved());
        more
    }

    /// Streams a partition's probe rows past its built table, then emits the
    /// table's tail (the unmatched build rows of outer joins).
    fn probe_partition(
        &self,
        sink: &JoinBuildSink,
        probe: Option<SpillFile>,
        ctx: &ExecContext,
        emit: &mut Emit,
    ) -> ExecResult<bool> {
        let op = JoinProbeOp::new(self.spec.clone(), sink.table()?, self.probe_types.clone());
        if let Some(file) = &probe {
            let mut blocks = file.reader(self.probe_types.clone());
            while let Some((columns, n)) = blocks.next_block()? {
                ctx.check_cancel()?;
                // Values the join builds live for one block, as a pipeline's
                // do for one batch (the morsel, a whole partition, is long).
                let _values = ValueScope::enter(&ctx.memory);
                if !op.apply_each(rows_of(columns, n), ctx, emit)? {
                    return Ok(false);
                }
            }
        }
        match op.tail(ctx)? {
            Some(t) => emit(t),
            None => Ok(true),
        }
    }

    /// A partition whose build side was partitioned again at `level`, keeping
    /// the sub-partitions that fit in memory (`resident`): its probe rows of
    /// those are joined as they are read, the others' written to
    /// sub-partitions, each of which is then joined.
    fn join_hybrid(
        &self,
        build: SubBuild,
        resident: Resident,
        probe: Option<SpillFile>,
        ctx: &ExecContext,
        emit: &mut Emit,
    ) -> ExecResult<bool> {
        let SubBuild {
            level,
            parts: build,
            key_set,
        } = build;
        let sub_probe = Arc::new(Partitions::new(level, self.node));
        let op = HybridProbeOp::new(
            self.spec.clone(),
            resident,
            sub_probe.clone(),
            self.probe_types.clone(),
            key_set,
        );
        if let Some(file) = &probe {
            let mut blocks = file.reader(self.probe_types.clone());
            while let Some((columns, n)) = blocks.next_block()? {
                ctx.check_cancel()?;
                let _values = ValueScope::enter(&ctx.memory);
                if !op.apply_each(rows_of(columns, n), ctx, emit)? {
                    return Ok(false);
                }
            }
        }
        drop(probe);
        // Writes the rest of the probe rows out and drops the resident table.
        let tail = op.tail(ctx)?;
        drop(op);
        if let Some(t) = tail {
            if !emit(t)? {
                return Ok(false);
            }
        }
        for p in 0..PARTITIONS {
            if !self.join_partition(level, build.take(p), sub_probe.take(p), ctx, emit)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A partition whose build side was partitioned again at `level`: its
    /// probe rows are partitioned the same way, and each sub-partition joined.
    fn join_spilled(
        &self,
        build: SubBuild,
        probe: Option<SpillFile>,
        ctx: &ExecContext,
        emit: &mut Emit,
    ) -> ExecResult<bool> {
        let SubBuild {
            level,
            parts: build,
            key_set,
        } = build;
        let sub_probe = Partitions::new(level, self.node);
        if let Some(file) = &probe {
            let mut blocks = file.reader(self.probe_types.clone());
            let set = KeyUse::of(key_set.as_deref(), false);
            while let Some((columns, n)) = blocks.next_block()? {
                ctx.check_cancel()?;
                let _values = ValueScope::enter(&ctx.memory);
                let keys = partition_keys(&self.spec, &self.spec.probe_keys);
                spill_batch(&sub_probe, keys, rows_of(columns, n), set, ctx)?;
            }
        }
        drop(probe);
        if let Some(set) = key_set {
            set.release(&ctx.memory);
        }
        sub_probe.flush(ctx)?;
        for p in 0..PARTITIONS {
            if !self.join_partition(level, build.take(p), sub_probe.take(p), ctx, emit)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Source for GraceJoinSource {
    fn morsels(&self) -> usize {
        PARTITIONS
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        let level = self.build.level;
        self.join_partition(
            level,
            self.build.take(morsel),
            self.probe.take(morsel),
            ctx,
            emit,
        )?;
        Ok(())
    }
}

/// A partition's build side partitioned a level down: its sub-partitions and
/// the key set of their rows.
struct SubBuild {
    level: u32,
    parts: Arc<Partitions>,
    key_set: Option<Arc<KeySet>>,
}

/// A block read back from a partition, as a batch.
fn rows_of(columns: Vec<Vector>, n: usize) -> Batch {
    Batch {
        columns,
        num_rows: n,
        selection: None,
    }
}
