//! Equi-joins with residual predicates, in two interchangeable implementations
//! (hash join, nested-loop join) behind [`JoinAlgorithm`], spilling to disk as a grace hash
//! join past the memory limit ([`spill`]). Both share the build sink ([`build`]: collect the
//! build input and evaluate its keys, with per-worker partial state) and
//! the probe transform (find candidate pairs, apply the residual, shape the output
//! for the join type); they differ only in how candidate pairs are found.

mod build;
pub mod filter;
pub mod hash;
pub mod nested_loop;
pub mod spill;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kura_common::{Batch, ColumnData, DataType, Vector};

use super::{gather_read, take_or_null, NO_ROW};
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{compact_batch, selection_of, PhysExpr};
use crate::pipeline::Transform;
use crate::plan::JoinType;

pub(crate) use build::vector_bytes;
pub use build::{batch_bytes, JoinBuildSink, Resident};

/// The build input, gathered: its columns and its evaluated key columns.
pub struct BuildSide {
    pub columns: Vec<Vector>,
    pub keys: Vec<Vector>,
    pub rows: usize,
    /// Some build row has a NULL in the last key (the `IN` key of null-aware joins).
    pub has_null_key: bool,
    /// Per key: NULL matches NULL (`IS NOT DISTINCT FROM`); missing entries are false.
    pub null_safe: Vec<bool>,
}

/// Finds the build rows whose keys equal each probe row's keys.
pub trait JoinIndex: Send + Sync {
    /// Appends `(probe row, build row)` pairs with equal, non-NULL keys, in probe-row order.
    fn candidates(
        &self,
        probe_keys: &[Vector],
        rows: usize,
        out: &mut Vec<(u32, u32)>,
    ) -> ExecResult<()>;
    /// Appends the probe rows (ascending) with at least one build row of equal,
    /// non-NULL keys.
    fn matching_rows(
        &self,
        probe_keys: &[Vector],
        rows: usize,
        out: &mut Vec<u32>,
    ) -> ExecResult<()> {
        let mut pairs = Vec::with_capacity(rows);
        self.candidates(probe_keys, rows, &mut pairs)?;
        out.extend(pairs.into_iter().map(|p| p.0));
        out.dedup();
        Ok(())
    }
    /// Bytes held, for the memory budget.
    fn bytes(&self) -> u64;
    /// The memory it holds, as `(start, length, what)` ranges, for the
    /// memory-object registry (only asked while profiling is on).
    fn regions(&self) -> Vec<(usize, usize, &'static str)> {
        Vec::new()
    }
}

/// A join implementation: how to index the build side.
pub trait JoinAlgorithm: Send + Sync {
    fn index(&self, build: &BuildSide, ctx: &ExecContext) -> ExecResult<Box<dyn JoinIndex>>;
}

/// What both sides of one join node agree on.
pub struct JoinSpec {
    pub join_type: JoinType,
    pub probe_keys: Vec<PhysExpr>,
    pub build_keys: Vec<PhysExpr>,
    pub residual: Option<PhysExpr>,
    pub build_types: Vec<DataType>,
    /// Per key pair: NULL matches NULL (`IS NOT DISTINCT FROM`, the domain keys of
    /// decorrelated subqueries); missing entries are false.
    pub null_safe: Vec<bool>,
}

/// The built side of a join, shared by the probe transform.
pub struct JoinTable {
    pub side: BuildSide,
    pub index: Box<dyn JoinIndex>,
    /// Null-aware joins with correlation keys: an index on those keys alone (all but
    /// the `IN` key), to find the set of build rows a probe row's `IN` compares with.
    pub correlation: Option<Box<dyn JoinIndex>>,
    /// Warm-and-protect of this table in the LLC, while it lives (`llc_protect
    /// = 'hash_join:...'`); dropped with the table.
    protection: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The query memory the build side reserved for the table, given back when
    /// the table is dropped (its probe pipeline done): a finished join must not
    /// count against the operators that run after it, or they spill — and a
    /// spilled join's partitions fail — for memory nobody holds.
    #[allow(dead_code)] // held for its Drop
    held: Option<Held>,
}

/// Bytes reserved from a query's memory tracker, released on drop.
pub(crate) struct Held {
    memory: Arc<crate::context::MemoryTracker>,
    bytes: u64,
}

impl Held {
    pub(crate) fn new(memory: Arc<crate::context::MemoryTracker>, bytes: u64) -> Held {
        Held { memory, bytes }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.memory.release(self.bytes);
    }
}

impl JoinTable {
    /// A table of `side` with its `index`, nothing else (tests of other operators).
    #[cfg(test)]
    pub(crate) fn new_for_test(side: BuildSide, index: Box<dyn JoinIndex>) -> JoinTable {
        JoinTable {
            side,
            index,
            correlation: None,
            protection: None,
            held: None,
        }
    }

    /// Reads one byte of every cache line the table holds; the lines read.
    fn touch_lines(&self) -> u64 {
        let mut lines = 0u64;
        let mut sum = 0u8;
        for (start, len, _) in self.regions() {
            let mut at = start;
            while at < start + len {
                // SAFETY: every region is memory of a live slice this table
                // owns (its index and build columns), and `at` lies inside it.
                sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(at as *const u8) });
                lines += 1;
                at = (at | 63) + 1;
            }
        }
        std::hint::black_box(sum);
        lines
    }

    /// The label of the build keys (as the memory profiler names the table).
    fn keys_label(spec: &JoinSpec, label: Option<&str>) -> String {
        label.map(str::to_string).unwrap_or_else(|| {
            let keys: Vec<String> = spec.build_keys.iter().map(|k| k.to_string()).collect();
            keys.join(", ")
        })
    }

    /// Every range this table holds: the index's, then the gathered build columns.
    fn regions(&self) -> Vec<(usize, usize, &'static str)> {
        let mut all = self.index.regions();
        if let Some(c) = &self.correlation {
            all.extend(c.regions());
        }
        for v in &self.side.columns {
            all.extend(vector_region(v).map(|(s, l)| (s, l, "build rows")));
        }
        all
    }

    /// Names the table's memory in the memory-object registry (profiling only).
    fn register(&self, spec: &JoinSpec, label: Option<&str>) {
        if !kura_common::memobj::enabled() {
            return;
        }
        let keys = Self::keys_label(spec, label);
        let operator = format!("hash join build on {keys}");
        for (start, len, what) in self.regions() {
            kura_common::memobj::register(start, len, || {
                kura_common::memobj::Object::new(kura_common::memobj::ObjectKind::HashTable, what)
                    .with_operator(operator.clone())
            });
        }
    }
}

impl Drop for JoinTable {
    fn drop(&mut self) {
        // Freed memory must not keep the table's name for whatever reuses it.
        if kura_common::memobj::enabled() {
            for (start, len, _) in self.regions() {
                kura_common::memobj::unregister(start, len);
            }
        }
    }
}

/// The data range of a vector (its values; strings: their bytes).
pub(crate) fn vector_region(v: &Vector) -> Option<(usize, usize)> {
    fn of<T>(x: &[T]) -> (usize, usize) {
        (x.as_ptr() as usize, std::mem::size_of_val(x))
    }
    let r = match &v.data {
        ColumnData::Bool(x) => of(x),
        ColumnData::I32(x) => of(x),
        ColumnData::I64(x) => of(x),
        ColumnData::F64(x) => of(x),
        ColumnData::I128(x) => of(x),
        ColumnData::Str(s) => of(&s.data),
    };
    (r.1 > 0).then_some(r)
}

/// Probes the built table with each batch of the probe pipeline.
pub struct JoinProbeOp {
    pub spec: Arc<JoinSpec>,
    pub table: Arc<JoinTable>,
    /// FULL and RIGHT joins: which build rows some probe row matched, shared by
    /// every worker so that the unmatched ones are emitted exactly once, after the
    /// probe side ends.
    build_matched: Option<Vec<AtomicBool>>,
    /// The probe side's column types, for the NULL columns of unmatched build rows.
    probe_types: Vec<DataType>,
}

/// Pairs evaluated against a residual at a time: bounds the memory of joins whose
/// candidates are many (no equality keys).
const PAIR_CHUNK: usize = 1 << 16;

impl JoinProbeOp {
    pub fn new(
        spec: Arc<JoinSpec>,
        table: Arc<JoinTable>,
        probe_types: Vec<DataType>,
    ) -> JoinProbeOp {
        let build_matched = spec.join_type.marks_build().then(|| {
            (0..table.side.rows)
                .map(|_| AtomicBool::new(false))
                .collect()
        });
        JoinProbeOp {
            spec,
            table,
            build_matched,
            probe_types,
        }
    }

    fn pairs_batch(&self, probe: &Batch, pairs: &[(u32, u32)]) -> Batch {
        let pi: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let bi: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut cols: Vec<Vector> = probe.columns.iter().map(|c| c.take(&pi)).collect();
        cols.extend(self.table.side.columns.iter().map(|c| take_or_null(c, &bi)));
        if cols.is_empty() {
            Batch::with_rows(pairs.len())
        } else {
            Batch::new(cols)
        }
    }

    /// The pairs that pass the residual, evaluated a bounded chunk at a time (in order).
    fn filter_pairs(
        &self,
        probe: &Batch,
        pairs: Vec<(u32, u32)>,
        ctx: &ExecContext,
    ) -> ExecResult<Vec<(u32, u32)>> {
        let Some(res) = &self.spec.residual else {
            return Ok(pairs);
        };
        let mut out = Vec::new();
        for chunk in pairs.chunks(PAIR_CHUNK) {
            ctx.check_cancel()?;
            let keep = selection_of(&res.eval(&self.pairs_batch(probe, chunk))?)?;
            out.extend(keep.iter().map(|&k| chunk[k as usize]));
        }
        Ok(out)
    }

    /// Without equality keys: the pairs of `rows` × `build` (all build rows when
    /// `None`) that pass the residual, in probe-row order. Pairs are generated a
    /// chunk at a time, never all at once; with `first_only` a probe row stops at
    /// its first passing pair (EXISTS needs one), so a row that matches early costs
    /// little.
    fn cross_pairs(
        &self,
        probe: &Batch,
        rows: &[u32],
        build: Option<&[u32]>,
        first_only: bool,
        ctx: &ExecContext,
    ) -> ExecResult<Vec<(u32, u32)>> {
        let total = build.map_or(self.table.side.rows, |b| b.len());
        let at = |k: usize| build.map_or(k as u32, |b| b[k]);
        let mut out = Vec::new();
        if total == 0 || rows.is_empty() {
            return Ok(out);
        }
        let Some(res) = &self.spec.residual else {
            for &p in rows {
                out.extend((0..if first_only { 1 } else { total }).map(|k| (p, at(k))));
            }
            return Ok(out);
        };
        // Each round gives every active probe row the next block of build rows.
        let mut cursor = vec![0usize; rows.len()];
        let mut active: Vec<usize> = (0..rows.len()).collect();
        let mut done = vec![false; rows.len()];
        let mut chunk: Vec<(u32, u32)> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        while !active.is_empty() {
            ctx.check_cancel()?;
            let block = (PAIR_CHUNK / active.len()).max(16).min(total);
            chunk.clear();
            owner.clear();
            for &a in &active {
                let end = (cursor[a] + block).min(total);
                for k in cursor[a]..end {
                    chunk.push((rows[a], at(k)));
                    owner.push(a);
                }
                cursor[a] = end;
            }
            let keep = selection_of(&res.eval(&self.pairs_batch(probe, &chunk))?)?;
            for &k in &keep {
                let a = owner[k as usize];
                if first_only {
                    if done[a] {
                        continue;
                    }
                    done[a] = true;
                }
                out.push(chunk[k as usize]);
            }
            active.retain(|&a| !done[a] && cursor[a] < total);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Build rows no probe row matched (FULL, RIGHT and RIGHT ANTI joins) — or,
    /// for a RIGHT SEMI join, the rows some probe row matched — with NULL probe
    /// columns where the join emits them, once every probe batch has been joined.
    fn unmatched_build(&self) -> Option<Batch> {
        let probe_types: &[DataType] = if self.spec.join_type.emits_probe_columns() {
            &self.probe_types
        } else {
            &[]
        };
        let matched = self.build_matched.as_ref()?;
        let want = self.spec.join_type == JoinType::RightSemi;
        let idx: Vec<u32> = (0..matched.len() as u32)
            .filter(|&i| matched[i as usize].load(Ordering::Relaxed) == want)
            .collect();
        if idx.is_empty() {
            return None;
        }
        let mut cols: Vec<Vector> = probe_types
            .iter()
            .map(|t| {
                let mut v = Vector::new(*t, idx.len());
                for _ in &idx {
                    v.push_null();
                }
                v
            })
            .collect();
        cols.extend(self.table.side.columns.iter().map(|c| c.take(&idx)));
        Some(if cols.is_empty() {
            Batch::with_rows(idx.len())
        } else {
            Batch::new(cols)
        })
    }
}

impl Transform for JoinProbeOp {
    /// The hash index and the build rows a match reads.
    fn reused_bytes(&self) -> u64 {
        let t = &self.table;
        let rows: u64 = t
            .side
            .columns
            .iter()
            .map(|c| (t.side.rows * c.data_type.fixed_width().unwrap_or(16)) as u64)
            .sum();
        t.index.bytes() + t.correlation.as_ref().map_or(0, |c| c.bytes()) + rows
    }

    fn tail(&self, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        Ok(self.unmatched_build())
    }

    fn fan_out(&self) -> usize {
        let one_per_probe_row = matches!(
            self.spec.join_type,
            JoinType::Semi | JoinType::Anti | JoinType::Mark
        ) || !self.spec.join_type.emits_probe_columns();
        if one_per_probe_row || !self.spec.probe_keys.is_empty() {
            1
        } else {
            self.table.side.rows.max(1)
        }
    }

    fn apply_each(
        &self,
        batch: Batch,
        ctx: &ExecContext,
        out: &mut dyn FnMut(Batch) -> ExecResult<bool>,
    ) -> ExecResult<bool> {
        let build_rows = self.table.side.rows.max(1);
        let n = batch.len();
        // Semi, anti and mark joins emit at most one row per probe row, and their
        // pairs are already formed a chunk at a time, stopping at a row's first
        // match; splitting their batch would only defeat that early stop.
        let semi_like = matches!(
            self.spec.join_type,
            JoinType::Semi | JoinType::Anti | JoinType::Mark
        );
        if !self.spec.join_type.emits_probe_columns() {
            // Right semi and anti joins only mark build rows now; their rows
            // come out at the end.
            self.mark_build(batch, ctx)?;
            return Ok(true);
        }
        if semi_like
            || !self.spec.probe_keys.is_empty()
            || n.saturating_mul(build_rows) <= PAIR_CHUNK
        {
            return match self.apply(batch, ctx)? {
                Some(b) => out(b),
                None => Ok(false),
            };
        }
        // Every probe row's result depends on that row alone, so the batch can be
        // joined a few rows at a time.
        let probe = compact_batch(batch);
        let step = (PAIR_CHUNK / build_rows).max(1);
        for start in (0..n).step_by(step) {
            ctx.check_cancel()?;
            let rows = (start..(start + step).min(n)).map(|r| r as u32).collect();
            let part = with_selection(probe.clone(), rows);
            let Some(joined) = self.apply(part, ctx)? else {
                return Ok(false);
            };
            if !out(joined)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn apply(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        if self.keys_decide() {
            return self.apply_by_keys(batch).map(Some);
        }
        let probe = compact_batch(batch);
        let n = probe.num_rows;
        let keys = self.probe_key_vectors(&probe)?;
        let semi_like = matches!(
            self.spec.join_type,
            JoinType::Semi | JoinType::Anti | JoinType::Mark
        );
        if self.spec.join_type == JoinType::Mark && !keys.is_empty() && self.spec.residual.is_none()
        {
            // Only whether a partner exists matters: one look-up per probe row
            // instead of a walk of every build row with its key (semi and
            // anti joins do the same in `apply_by_keys`).
            let mut rows = Vec::with_capacity(n);
            self.table.index.matching_rows(&keys, n, &mut rows)?;
            return Ok(Some(with_mark(probe, matched_rows(rows, n), None)));
        }
        let pairs = self.joined_pairs(&probe, &keys, semi_like, None, ctx)?;
        let out = match self.spec.join_type {
            JoinType::RightSemi | JoinType::RightAnti => {
                return Err(ExecError::Internal(
                    "right semi and anti joins mark build rows; they emit no pairs".into(),
                ))
            }
            JoinType::Inner => self.pairs_batch(&probe, &pairs),
            JoinType::Right => {
                if let Some(m) = &self.build_matched {
                    for p in &pairs {
                        m[p.1 as usize].store(true, Ordering::Relaxed);
                    }
                }
                self.pairs_batch(&probe, &pairs)
            }
            JoinType::Left | JoinType::Single | JoinType::Full => {
                if let Some(m) = &self.build_matched {
                    for p in &pairs {
                        m[p.1 as usize].store(true, Ordering::Relaxed);
                    }
                }
                let single = self.spec.join_type == JoinType::Single;
                let full = outer_pairs(&pairs, n, single)?;
                self.pairs_batch(&probe, &full)
            }
            JoinType::Semi | JoinType::Anti | JoinType::Mark => {
                let matched = matched_rows(pairs.iter().map(|p| p.0), n);
                match self.spec.join_type {
                    JoinType::Semi => with_selection(probe, rows_where(&matched, true)),
                    JoinType::Anti => with_selection(probe, rows_where(&matched, false)),
                    _ => with_mark(probe, matched, None),
                }
            }
            JoinType::NullAwareAnti | JoinType::NullAwareMark => {
                let matched = matched_rows(pairs.iter().map(|p| p.0), n);
                let unknown = self.unknown_rows(&probe, &keys, &matched, ctx)?;
                if self.spec.join_type == JoinType::NullAwareAnti {
                    let keep = (0..n)
                        .filter(|&i| !matched[i] && !unknown[i])
                        .map(|i| i as u32)
                        .collect();
                    with_selection(probe, keep)
                } else {
                    with_mark(probe, matched, Some(unknown))
                }
            }
        };
        Ok(Some(out))
    }
}

impl JoinProbeOp {
    /// Whether equal keys alone decide the pairs (no residual) and the output
    /// is the probe rows with their partners or a choice of probe rows: the
    /// probe batch is then joined as it comes, its selection unapplied.
    fn keys_decide(&self) -> bool {
        !self.spec.probe_keys.is_empty()
            && self.spec.residual.is_none()
            && matches!(
                self.spec.join_type,
                JoinType::Inner
                    | JoinType::Left
                    | JoinType::Right
                    | JoinType::Full
                    | JoinType::Single
                    | JoinType::Semi
                    | JoinType::Anti
            )
    }

    /// A join that [`keys_decide`](Self::keys_decide): only the key columns
    /// are read at the batch's selection, and each other probe column is
    /// gathered once, straight into the output (compacting the batch first
    /// copied every probe column twice); semi and anti joins narrow the
    /// selection and copy nothing.
    fn apply_by_keys(&self, batch: Batch) -> ExecResult<Batch> {
        let keys = self.probe_keys_at_selection(&batch)?;
        let n = batch.len();
        // Positions among the selected rows → rows of the batch's columns.
        let row_of = |p: u32| batch.selection.as_ref().map_or(p, |s| s[p as usize]);
        if matches!(self.spec.join_type, JoinType::Semi | JoinType::Anti) {
            let mut rows = Vec::with_capacity(n);
            self.table.index.matching_rows(&keys, n, &mut rows)?;
            let rows = if self.spec.join_type == JoinType::Semi {
                rows
            } else {
                rows_where(&matched_rows(rows.iter().copied(), n), false)
            };
            let rows = rows.into_iter().map(row_of).collect();
            return Ok(with_selection(batch, rows));
        }
        let mut pairs = Vec::with_capacity(n);
        self.table.index.candidates(&keys, n, &mut pairs)?;
        if let Some(m) = &self.build_matched {
            for p in &pairs {
                m[p.1 as usize].store(true, Ordering::Relaxed);
            }
        }
        if matches!(
            self.spec.join_type,
            JoinType::Left | JoinType::Single | JoinType::Full
        ) {
            let single = self.spec.join_type == JoinType::Single;
            pairs = outer_pairs(&pairs, n, single)?;
        }
        if batch.selection.is_some() {
            for p in &mut pairs {
                p.0 = row_of(p.0);
            }
        }
        Ok(self.pairs_batch(&batch, &pairs))
    }

    /// The probe keys over the selected rows of `batch`, reading only the
    /// columns they use.
    fn probe_keys_at_selection(&self, batch: &Batch) -> ExecResult<Vec<Vector>> {
        let Some(sel) = &batch.selection else {
            return self.probe_key_vectors(batch);
        };
        let mut read = Vec::new();
        for k in &self.spec.probe_keys {
            k.columns(&mut read);
        }
        let keys_only = gather_read(&batch.columns, sel, |i| read.contains(&i));
        self.probe_key_vectors(&keys_only)
    }

    /// The probe keys evaluated over `probe`.
    fn probe_key_vectors(&self, probe: &Batch) -> ExecResult<Vec<Vector>> {
        self.spec.probe_keys.iter().map(|k| k.eval(probe)).collect()
    }

    /// The (probe row, build row) pairs that meet the keys and the residual;
    /// build rows already `marked` are not tried again. Without equality keys
    /// the residual alone decides (for an uncorrelated EXISTS, with no residual
    /// either, one build row settles every probe row when `first_only`).
    fn joined_pairs(
        &self,
        probe: &Batch,
        keys: &[Vector],
        first_only: bool,
        marked: Option<&[AtomicBool]>,
        ctx: &ExecContext,
    ) -> ExecResult<Vec<(u32, u32)>> {
        let n = probe.num_rows;
        if keys.is_empty() {
            let all: Vec<u32> = (0..n as u32).collect();
            return self.cross_pairs(probe, &all, None, first_only, ctx);
        }
        // A probe row matches about once (a foreign key's): sized for that,
        // the pairs are not copied through a series of doublings.
        let mut pairs = Vec::with_capacity(n);
        self.table.index.candidates(keys, n, &mut pairs)?;
        if let Some(m) = marked {
            pairs.retain(|p| !m[p.1 as usize].load(Ordering::Relaxed));
        }
        self.filter_pairs(probe, pairs, ctx)
    }

    /// Marks the build rows that a row of `batch` matches (keys and residual).
    /// Rows already marked are left out of the look-up first: once a build row
    /// has a partner, more of them change nothing.
    fn mark_build(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let Some(matched) = &self.build_matched else {
            return Err(ExecError::Internal("right semi join without marks".into()));
        };
        let probe = compact_batch(batch);
        let keys = self.probe_key_vectors(&probe)?;
        let pairs = self.joined_pairs(&probe, &keys, false, Some(matched), ctx)?;
        for p in &pairs {
            matched[p.1 as usize].store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// For `x IN (subquery)`: which probe rows without a match have an unknown (NULL)
    /// result. That is so when the row's set — the build rows that pass its correlation
    /// (keys before the `IN` key, and the residual) — is not empty and either `x` is NULL
    /// or the set holds a NULL `IN` key. Rows that cannot be unknown (a non-NULL `x`
    /// while no build row has a NULL `IN` key) are settled without a look-up.
    fn unknown_rows(
        &self,
        probe: &Batch,
        keys: &[Vector],
        matched: &[bool],
        ctx: &ExecContext,
    ) -> ExecResult<Vec<bool>> {
        let n = probe.num_rows;
        let side = &self.table.side;
        let in_key = keys
            .last()
            .ok_or_else(|| ExecError::Internal("null-aware join without an IN key".into()))?;
        let mut unknown = vec![false; n];
        let ask: Vec<u32> = (0..n)
            .filter(|&i| !matched[i] && side.rows > 0 && (side.has_null_key || in_key.is_null(i)))
            .map(|i| i as u32)
            .collect();
        if ask.is_empty() {
            return Ok(unknown);
        }
        let correlated = keys.len() > 1 || self.spec.residual.is_some();
        if !correlated {
            // Every probe row is compared with the whole (non-empty) build side.
            for &i in &ask {
                unknown[i as usize] = true;
            }
            return Ok(unknown);
        }
        // The build rows of each asked row's set: equal correlation keys, then the residual.
        let pairs = match &self.table.correlation {
            Some(index) => {
                let mut pairs = Vec::new();
                let sub: Vec<Vector> = keys[..keys.len() - 1]
                    .iter()
                    .map(|k| k.take(&ask))
                    .collect();
                index.candidates(&sub, ask.len(), &mut pairs)?;
                for p in &mut pairs {
                    p.0 = ask[p.0 as usize];
                }
                self.filter_pairs(probe, pairs, ctx)?
            }
            None => {
                // Only the residual correlates: a row with a NULL `x` is unknown when its
                // set has any row, one with a non-NULL `x` when its set has a NULL.
                let build_in_key = side.keys.last().ok_or_else(|| {
                    ExecError::Internal("null-aware join without an IN key".into())
                })?;
                let null_builds: Vec<u32> = (0..side.rows as u32)
                    .filter(|&r| build_in_key.is_null(r as usize))
                    .collect();
                let (null_x, set_x): (Vec<u32>, Vec<u32>) =
                    ask.iter().partition(|&&i| in_key.is_null(i as usize));
                let mut pairs = self.cross_pairs(probe, &null_x, None, true, ctx)?;
                pairs.extend(self.cross_pairs(probe, &set_x, Some(&null_builds), true, ctx)?);
                pairs
            }
        };
        let build_in_key = side
            .keys
            .last()
            .ok_or_else(|| ExecError::Internal("null-aware join without an IN key".into()))?;
        for (i, r) in pairs {
            if in_key.is_null(i as usize) || build_in_key.is_null(r as usize) {
                unknown[i as usize] = true;
            }
        }
        Ok(unknown)
    }
}

/// Per probe row: whether it is among `rows` (probe rows with a match).
fn matched_rows(rows: impl IntoIterator<Item = u32>, n: usize) -> Vec<bool> {
    let mut matched = vec![false; n];
    for r in rows {
        matched[r as usize] = true;
    }
    matched
}

fn rows_where(matched: &[bool], want: bool) -> Vec<u32> {
    (0..matched.len() as u32)
        .filter(|&i| matched[i as usize] == want)
        .collect()
}

/// The probe rows plus a BOOLEAN column: `matched`, NULL where `unknown`.
fn with_mark(probe: Batch, matched: Vec<bool>, unknown: Option<Vec<bool>>) -> Batch {
    let validity = unknown
        .filter(|u| u.iter().any(|&x| x))
        .map(|u| u.into_iter().map(|x| !x).collect());
    let mark = Vector {
        data_type: DataType::Boolean,
        data: ColumnData::Bool(matched),
        validity,
    };
    let mut cols = probe.columns;
    cols.push(mark);
    Batch::new(cols)
}

/// Outer-join pairs: every `(probe row, match)` pair (in probe-row order) plus
/// `(row, NO_ROW)` for each of the `rows` probe rows without one; with `single`
/// (a scalar subquery) a second match for a row is an error.
pub fn outer_pairs(pairs: &[(u32, u32)], rows: usize, single: bool) -> ExecResult<Vec<(u32, u32)>> {
    let mut full = Vec::with_capacity(pairs.len().max(rows));
    let mut k = 0;
    for row in 0..rows as u32 {
        let start = k;
        while k < pairs.len() && pairs[k].0 == row {
            full.push(pairs[k]);
            k += 1;
        }
        if k == start {
            full.push((row, NO_ROW));
        } else if k - start > 1 && single {
            return Err(ExecError::SubqueryTooManyRows);
        }
    }
    Ok(full)
}

fn with_selection(b: Batch, sel: Vec<u32>) -> Batch {
    Batch {
        selection: Some(sel),
        ..b
    }
}
