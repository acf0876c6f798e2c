//! Hash aggregation: group keys map to group numbers, each aggregate keeps a typed
//! accumulator array indexed by group. Each worker aggregates into local state that
//! is merged into the shared table at the end. Past half its memory limit an
//! aggregation spills: a worker writes its groups' partial states, hash-partitioned
//! by key, to temporary files and starts again with an empty table (aggregates whose
//! state is a set or a list of values write the input rows instead); at the end each
//! partition is aggregated in turn with the groups still held.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use kura_common::{Batch, DataType, Vector, BATCH_SIZE};

use crate::context::{ExecContext, MemoryTracker, OwnShare, NO_NODE};
use crate::error::{ExecError, ExecResult};
use crate::expr::budget::ValueScope;
use crate::expr::{compact_batch, PhysExpr};
use crate::keys::{encode_row, int_key, single_int_key};
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

use crate::spill::partitions::{partition_of, Partitions, MAX_LEVEL, PARTITIONS};
use crate::spill::result::ResultFile;
use byte_codes::{ByteCodes, OneByteKeys};

/// The one-byte keys' table is built only while it takes at most this share
/// of the memory the query has left.
const BYTE_CODES_ROOM_SHARE: u64 = 16;
use byte_keys::ByteKeys;
use dense::DenseGroups;
/// The widest key range an aggregation numbers as an array from the start.
pub use dense::MAX_RANGE_SLOTS;
use group_map::SKIP;

pub(crate) use acc::{new_acc, Acc};

/// Local (per-worker) or shared aggregation state.
struct AggState {
    map: ByteKeys,
    /// Groups of a single integer key (order keys, part keys: up to millions of
    /// groups), without encoding each row's key as an allocated byte string.
    int_map: HashMap<i64, u32>,
    /// The same groups while their keys are dense (`None` once they were not).
    dense: Option<DenseGroups>,
    /// The group of the NULL key in `int_map`'s case.
    null_group: Option<u32>,
    /// Groups of a few small keys packed into 16 bytes (`None` once a key did
    /// not fit: `map` holds every group from then on).
    packed: Option<(PackedLayout, HashMap<u128, u32>)>,
    /// The packed map's groups by key code while keys are one-byte texts
    /// (created at the first batch of such keys).
    byte_codes: Option<ByteCodes>,
    keys: Vec<Vector>,
    accs: Vec<Acc>,
    groups: usize,
    /// What the group tables and keys held when last reserved.
    reserved: u64,
    /// Every byte this state reserved (tables, keys, accumulators' values):
    /// what a spilled aggregation gives back once the state is done.
    charged: u64,
    /// The group tables' capacities and ranges last named in the memory-object
    /// registry (profiling only).
    registered: ((usize, usize), Vec<(usize, usize)>),
}

impl AggState {
    fn new(key_types: &[DataType], calls: &[AggCall], key_range: Option<(i64, i64)>) -> AggState {
        AggState {
            map: ByteKeys::default(),
            int_map: HashMap::new(),
            dense: Some(
                key_range.map_or_else(DenseGroups::new, |(lo, hi)| DenseGroups::over(lo, hi)),
            ),
            null_group: None,
            packed: PackedLayout::new(key_types).map(|l| (l, HashMap::new())),
            byte_codes: None,
            keys: key_types.iter().map(|t| Vector::new(*t, 0)).collect(),
            accs: calls.iter().map(new_acc).collect(),
            groups: 0,
            reserved: 0,
            charged: 0,
            registered: ((0, 0), Vec::new()),
        }
    }

    /// Names the group tables in the memory-object registry after they grew
    /// (profiling only; growth is geometric, so this walks the tables rarely).
    fn register(&mut self, operator: impl Fn() -> String) {
        use kura_common::memobj;
        let packed_capacity = self.packed.as_ref().map_or(0, |p| p.1.capacity());
        let capacities = (
            self.int_map.capacity()
                + packed_capacity
                + self
                    .dense
                    .as_ref()
                    .and_then(|d| d.region())
                    .map_or(0, |r| r.1),
            self.map.capacity(),
        );
        if !memobj::enabled() || capacities == self.registered.0 {
            return;
        }
        let now: Vec<(usize, usize)> = super::join::hash::map_span(&self.int_map)
            .into_iter()
            .chain(self.dense.as_ref().and_then(|d| d.region()))
            .chain(self.map.spans())
            .chain(
                self.packed
                    .iter()
                    .flat_map(|p| super::join::hash::map_span(&p.1)),
            )
            .collect();
        for &(start, len) in &self.registered.1 {
            memobj::unregister(start, len);
        }
        for &(start, len) in &now {
            memobj::register(start, len, || {
                memobj::Object::new(memobj::ObjectKind::AggregateTable, "group table")
                    .with_operator(operator())
            });
        }
        self.registered = (capacities, now);
    }

    /// Group number of each row, creating groups as needed.
    fn group_ids(&mut self, keys: &[Vector], n: usize, ctx: &ExecContext) -> ExecResult<Vec<u32>> {
        if keys.is_empty() {
            if self.groups == 0 {
                self.add_groups(1);
            }
            return Ok(vec![0; n]);
        }
        let mut ids = Vec::with_capacity(n);
        // Rows that made a new group, in group order.
        let mut new_rows = Vec::new();
        let key_refs: Vec<&Vector> = keys.iter().collect();
        if single_int_key(keys) {
            self.int_group_ids(&keys[0], n, &mut ids, &mut new_rows);
        } else if !self.one_byte_group_ids(&key_refs, n, None, &mut ids, &mut new_rows, ctx)? {
            match self.pack(keys, n) {
                Some(packed) => self.packed_group_ids(&packed, &mut ids, &mut new_rows),
                None => self.byte_group_ids(keys, n, &mut ids, &mut new_rows),
            }
        }
        self.add_keys(&key_refs, &new_rows, ctx)?;
        Ok(ids)
    }

    /// Group numbers of the `selected` rows (the first `n` when `None`) through
    /// the one-byte key table, when every key of this batch is a one-byte text
    /// and the packed map is in use; `false` (nothing changed) otherwise. Rows
    /// that made a new group go to `new_rows` as positions among those rows.
    fn one_byte_group_ids(
        &mut self,
        keys: &[&Vector],
        n: usize,
        selected: Option<&[u32]>,
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
        ctx: &ExecContext,
    ) -> ExecResult<bool> {
        let Some((layout, map)) = self.packed.as_mut() else {
            return Ok(false);
        };
        // The table is a fixed 256 kB per worker: a speed-up, not worth a
        // query under a small memory limit (Q1 under 512kB failed for it).
        if self.byte_codes.is_none() && ByteCodes::BYTES * BYTE_CODES_ROOM_SHARE > ctx.memory.room()
        {
            return Ok(false);
        }
        let Some(codes) = OneByteKeys::of(keys) else {
            return Ok(false);
        };
        if n > codes.len() || selected.is_some_and(|s| s.iter().any(|&r| r as usize >= codes.len()))
        {
            return Ok(false);
        }
        let table = match &mut self.byte_codes {
            Some(t) => t,
            None => self.byte_codes.insert(ByteCodes::new()),
        };
        let before = self.groups;
        let row_of = |pos: usize| selected.map_or(pos, |s| s[pos] as usize);
        // A code met for the first time: its key packed and found (or added)
        // in the packed map, as the packed path would.
        let resolve = |pos: usize| -> ExecResult<u32> {
            let row = [row_of(pos) as u32];
            let key = layout
                .pack_at(keys, 1, Some(&row))
                .and_then(|k| k.first().copied())
                .ok_or_else(|| ExecError::Internal("one-byte keys did not pack".into()))?;
            Ok(packed_group(map, key, before, new_rows, pos))
        };
        match selected {
            Some(sel) => table.group_ids(&codes, sel.iter().map(|&r| r as usize), ids, resolve)?,
            None => table.group_ids(&codes, 0..n, ids, resolve)?,
        }
        Ok(true)
    }

    /// Group numbers of the `selected` rows of packable `keys`, read in place;
    /// `None` (nothing changed) when this batch's keys do not pack.
    fn packed_group_ids_at(
        &mut self,
        keys: &[&Vector],
        selected: &[u32],
        ctx: &ExecContext,
    ) -> ExecResult<Option<Vec<u32>>> {
        let mut ids = Vec::with_capacity(selected.len());
        let mut new_rows = Vec::new();
        if !self.one_byte_group_ids(keys, 0, Some(selected), &mut ids, &mut new_rows, ctx)? {
            let Some((layout, _)) = &self.packed else {
                return Ok(None);
            };
            let Some(packed) = layout.pack_at(keys, selected.len(), Some(selected)) else {
                return Ok(None);
            };
            self.packed_group_ids(&packed, &mut ids, &mut new_rows);
        }
        for r in &mut new_rows {
            *r = selected[*r as usize];
        }
        self.add_keys(keys, &new_rows, ctx)?;
        Ok(Some(ids))
    }

    /// Appends the groups first met at `rows` of `keys`, in group order.
    fn add_keys(&mut self, keys: &[&Vector], rows: &[u32], ctx: &ExecContext) -> ExecResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        for (k, v) in self.keys.iter_mut().zip(keys) {
            k.append(&v.take(rows));
        }
        self.add_groups(rows.len());
        // The tables and keys as allocated (text keys in full, doubling
        // growth's spare room included), and the accumulators' slots.
        let held = self.held_bytes() + (self.groups * 16 * self.accs.len()) as u64;
        let grown = held.saturating_sub(self.reserved);
        self.reserved = self.reserved.max(held);
        self.charged += grown;
        ctx.memory.reserve(grown, "hash aggregation")
    }

    /// Bytes the group tables and the group keys hold.
    fn held_bytes(&self) -> u64 {
        fn map_bytes<K, V>(m: &HashMap<K, V>) -> usize {
            m.capacity() * (std::mem::size_of::<(K, V)>() + 1)
        }
        let tables = self.map.held_bytes() as usize
            + map_bytes(&self.int_map)
            + self.packed.as_ref().map_or(0, |p| map_bytes(&p.1))
            + self.byte_codes.as_ref().map_or(0, |t| t.bytes() as usize)
            + self
                .dense
                .as_ref()
                .and_then(|d| d.region())
                .map_or(0, |r| r.1);
        tables as u64 + self.keys.iter().map(super::join::vector_bytes).sum::<u64>()
    }

    /// One integer key: `dense` while the keys are dense, else `int_map`; and
    /// `null_group` for NULL.
    fn int_group_ids(
        &mut self,
        key: &Vector,
        n: usize,
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) {
        let before = self.groups;
        // The key of the row before and its group: tables are often stored in
        // key order (lineitem by l_orderkey), so runs of one key skip the table.
        let mut last: Option<(i64, u32)> = None;
        for row in 0..n {
            let next = (before + new_rows.len()) as u32;
            let (id, added) = match int_key(key, row) {
                Some(k) => match last {
                    Some((lk, id)) if lk == k => (id, false),
                    _ => {
                        let dense = self.dense.as_mut().and_then(|d| d.get_or_insert(k, next));
                        let found = match dense {
                            Some(found) => found,
                            None => {
                                if let Some(d) = self.dense.take() {
                                    // Too sparse for the array: its groups move to
                                    // the map, which takes every key from now on.
                                    self.int_map.extend(d.entries());
                                }
                                match self.int_map.entry(k) {
                                    Entry::Occupied(e) => (*e.get(), false),
                                    Entry::Vacant(e) => (*e.insert(next), true),
                                }
                            }
                        };
                        last = Some((k, found.0));
                        found
                    }
                },
                None => match self.null_group {
                    Some(g) => (g, false),
                    None => (*self.null_group.insert(next), true),
                },
            };
            if added {
                new_rows.push(row as u32);
            }
            ids.push(id);
        }
    }

    /// Keys packed into 16 bytes: the packed map.
    fn packed_group_ids(&mut self, packed: &[u128], ids: &mut Vec<u32>, new_rows: &mut Vec<u32>) {
        let before = self.groups;
        let Some((_, map)) = self.packed.as_mut() else {
            return;
        };
        // The groups of recent keys, direct-mapped by a multiplicative hash:
        // few groups (TPC-H Q1's four flag pairs) and runs of one key skip
        // the table's hashing and probing.
        const RECENT: usize = 16;
        let mut recent = [(0u128, u32::MAX); RECENT];
        for (row, k) in packed.iter().enumerate() {
            let fold = (*k as u64) ^ ((*k >> 64) as u64);
            let slot = (fold.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT.ilog2())) as usize;
            let (rk, rid) = recent[slot];
            if rid != u32::MAX && rk == *k {
                ids.push(rid);
                continue;
            }
            let id = packed_group(map, *k, before, new_rows, row);
            recent[slot] = (*k, id);
            ids.push(id);
        }
    }

    /// Any other keys: encoded as byte strings.
    fn byte_group_ids(
        &mut self,
        keys: &[Vector],
        n: usize,
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) {
        let before = self.groups;
        let mut buf = Vec::new();
        for row in 0..n {
            buf.clear();
            encode_row(keys, row, true, &mut buf);
            let hash = self.map.hash(&buf);
            let id = match self.map.get(hash, &buf) {
                Some(g) => g,
                None => {
                    let g = (before + new_rows.len()) as u32;
                    self.insert_bytes(hash, &buf, g);
                    new_rows.push(row as u32);
                    g
                }
            };
            ids.push(id);
        }
    }

    /// Adds group `g` with encoded key `key` to the byte-string map.
    fn insert_bytes(&mut self, hash: u64, key: &[u8], g: u32) {
        self.map.insert(hash, key, g);
    }

    /// The batch's keys packed, or `None` (for good, after moving the packed
    /// groups into the byte-string map) when the keys are not packable.
    fn pack(&mut self, keys: &[Vector], n: usize) -> Option<Vec<u128>> {
        let (layout, _) = self.packed.as_ref()?;
        if let Some(p) = layout.pack(keys, n) {
            return Some(p);
        }
        self.packed = None;
        self.byte_codes = None;
        let mut buf = Vec::new();
        for g in 0..self.groups {
            buf.clear();
            encode_row(&self.keys, g, true, &mut buf);
            let hash = self.map.hash(&buf);
            self.insert_bytes(hash, &buf, g as u32);
        }
        None
    }

    fn add_groups(&mut self, n: usize) {
        self.groups += n;
        let g = self.groups;
        self.accs.iter_mut().for_each(|a| a.grow(g));
    }
}

/// The group of packed key `key` in `map`, added as group `before +
/// new_rows.len()` (its row `row` noted in `new_rows`) when new.
fn packed_group(
    map: &mut HashMap<u128, u32>,
    key: u128,
    before: usize,
    new_rows: &mut Vec<u32>,
    row: usize,
) -> u32 {
    let next = (before + new_rows.len()) as u32;
    match map.entry(key) {
        Entry::Occupied(e) => *e.get(),
        Entry::Vacant(e) => {
            new_rows.push(row as u32);
            *e.insert(next)
        }
    }
}

impl Drop for AggState {
    fn drop(&mut self) {
        // Freed memory must not keep the table's name for whatever reuses it.
        for &(start, len) in &self.registered.1 {
            kura_common::memobj::unregister(start, len);
        }
    }
}

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
        AggregateSink {
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

    /// Whether the aggregation spills from now on: it does already, or it
    /// holds more than half of what its query leaves it (its groups plus the
    /// room left; the other half is for reading the partitions back). Without keys there is one group, and nothing to
    /// partition.
    fn spills(&self, ctx: &ExecContext, extra: u64) -> bool {
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
    fn past_share(&self, ctx: &ExecContext, extra: u64) -> bool {
        !self.group_by.is_empty() && self.share.past(&ctx.memory, extra, 1, 2)
    }

    /// The partitions spilled states or rows go to.
    fn partitions(&self) -> Arc<Partitions> {
        let mut spilled = self.spilled.lock().unwrap_or_else(|e| e.into_inner());
        spilled
            .get_or_insert_with(|| Arc::new(Partitions::new(0, self.node)))
            .clone()
    }

    /// Writes a worker's groups (keys and partial states) to the partitions
    /// and gives its memory back; `st` starts again empty. Keys met again
    /// later make new partial states, folded together per partition at the end.
    fn spill_state(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
        self.spilling.store(true, Ordering::Relaxed);
        let mut old = std::mem::replace(st, AggState::new(&self.key_types, &self.calls, None));
        let written = self.write_state(&mut old, ctx);
        self.share.release(&ctx.memory, old.charged);
        written
    }

    /// [`AggregateSink::spill_state`]'s writing, a chunk of groups at a time
    /// (the state's columns are copied out as they are written).
    fn write_state(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
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

    /// Writes a batch's rows to the partitions instead of aggregating them
    /// (when the aggregates' states are not columns: see `spills_states`).
    fn spill_batch(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
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

    /// The result of a spilled aggregation: every partition of the held
    /// states' groups and of the spilled rows, aggregated in turn, its groups
    /// written to a temporary file as each partition is done. Memory was what
    /// made it spill: the whole result held (and counted) would take the room
    /// the operators reading it need, and with many groups pass the limit.
    fn finish_spilled(
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
    fn drain(
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
            if let (Some(mut file), Some(types)) = (parts.take(p), parts.types()) {
                if self.spills_states && single_int_type(&self.key_types) {
                    // A state per group and table it was in: about the groups
                    // to come, so the map does not rehash its way there (as
                    // far as a quarter of the room allows).
                    let fit = ctx.memory.room() / 4 / INT_MAP_ENTRY_BYTES;
                    st.int_map.reserve(file.rows().min(fit) as usize);
                }
                let mut blocks = file.reader(types.to_vec())?;
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
                            && ctx.memory.used() > mark
                        {
                            sub = Some(Partitions::new(level + 1, self.node));
                        }
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
    fn merge_states(&self, st: &mut AggState, ids: &[u32], states: &[Vector]) -> ExecResult<()> {
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
    fn charge_values(&self, st: &mut AggState, ctx: &ExecContext) -> ExecResult<()> {
        for acc in &mut st.accs {
            let grown = acc.take_grown();
            if grown > 0 {
                st.charged += grown;
                ctx.memory.reserve(grown, "aggregate values")?;
            }
        }
        Ok(())
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

    /// Adds a compacted batch's rows, of groups `ids`, to every aggregate.
    fn update(
        &self,
        st: &mut AggState,
        ids: &[u32],
        mut batch: Batch,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        if !self.common_args.is_empty() {
            // Columns after the arguments' (group keys are read already) make
            // room for the shared sub-expressions.
            batch.columns.truncate(self.arg_columns.len());
            for e in &self.common_args {
                let v = e.eval(&batch)?;
                batch.columns.push(v);
            }
        }
        let counts = acc::batch_counts(st.groups, ids);
        for (acc, call) in st.accs.iter_mut().zip(&self.calls) {
            let arg = call.arg.as_ref().map(|a| a.eval_ref(&batch)).transpose()?;
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
                        .map(|e| e.eval(&batch))
                        .collect::<ExecResult<Vec<_>>>()?;
                    acc.update_with(ids, a, &more)?;
                }
                _ => acc.update_counted(ids, arg.as_deref(), counts.as_deref())?,
            }
            let grown = acc.take_grown();
            if grown > 0 {
                st.charged += grown;
                ctx.memory.reserve(grown, "aggregate values")?;
            }
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

/// About what a new group takes besides its accumulators' slots (its key,
/// its table entry), for deciding before a batch whether it fits.
const GROUP_BYTES_BOUND: usize = 64;

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

/// The batch compacted to its selection in the columns marked in `read` only;
/// the others become empty, never to be read.
fn compact_read(batch: Batch, read: &[bool]) -> Batch {
    let Some(sel) = batch.selection else {
        return batch;
    };
    let columns = batch
        .columns
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            if read.get(i).copied().unwrap_or(false) {
                c.take(&sel)
            } else {
                Vector::new(c.data_type, 0)
            }
        })
        .collect();
    Batch {
        columns,
        num_rows: sel.len(),
        selection: None,
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
        if self.spills_states {
            // Past its share a worker writes its groups out and goes on
            // aggregating into an empty table: rows keep being folded into
            // groups, so what reaches the disk is at most one partial state
            // per group and table, not every row.
            // What this batch's rows will likely add as new groups: as many
            // as the rows so far made per row (Q1: none; Q18: one in four).
            let rows = rows as u64;
            let per_group = (16 * self.calls.len() + GROUP_BYTES_BOUND) as u64;
            let seen = self.rows_seen.load(Ordering::Relaxed);
            let made = self.groups_made.load(Ordering::Relaxed);
            let batch_bound = (rows * per_group).saturating_mul(made) / seen.max(1);
            if self.past_share(ctx, allocated + batch_bound) {
                self.spill_state(st, ctx)?;
                if self.past_share(ctx, batch_bound) {
                    // Even an empty table is past the share (other workers'
                    // tables or other operators hold the memory): the batch is
                    // folded on its own, uncounted like rows on their way to a
                    // file, and written out as states.
                    let mut loose = ctx.clone();
                    loose.memory = Arc::new(MemoryTracker::new(u64::MAX));
                    let mut alone = AggState::new(&self.key_types, &self.calls, None);
                    self.aggregate_batch(&mut alone, batch, &loose)?;
                    return self.write_state(&mut alone, ctx);
                }
            }
        } else if self.spills(ctx, allocated) {
            return self.spill_batch(batch, ctx);
        }
        // What the state reserves for this batch is the aggregation's own.
        let before = st.charged;
        let groups = st.groups;
        let done = self.aggregate_batch(st, batch, ctx);
        self.share.counted(st.charged - before);
        self.rows_seen.fetch_add(rows as u64, Ordering::Relaxed);
        self.groups_made
            .fetch_add(st.groups.saturating_sub(groups) as u64, Ordering::Relaxed);
        done
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
                let ids = global.group_ids(&local.keys, local.groups, ctx)?;
                global.register(|| self.operator());
                for (a, b) in global.accs.iter_mut().zip(&mut local.accs) {
                    a.merge(b, &ids);
                }
                // The worker's reservations stay with the state its groups
                // went to (given back together if that state is spilled).
                global.charged += local.charged;
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
mod tests {
    use std::sync::atomic::AtomicBool;

    use kura_common::Value;

    use super::*;

    fn col(index: usize, data_type: DataType) -> PhysExpr {
        PhysExpr::Column { index, data_type }
    }

    /// Groups by (k, t) with count(*), sum(v), count(DISTINCT v), min(t),
    /// string_agg(t, ',') and bool_and(v > 0)-like bool_and over column 3.
    fn sink(dir: &std::path::Path) -> (AggregateSink, ExecContext, ExecContext) {
        let text = DataType::Varchar(None);
        let calls = vec![
            AggCall::simple(AggFunc::CountStar, None, DataType::BigInt),
            AggCall::simple(
                AggFunc::Sum,
                Some(col(1, DataType::BigInt)),
                DataType::Decimal {
                    precision: 38,
                    scale: 0,
                },
            ),
            AggCall {
                distinct: true,
                ..AggCall::simple(
                    AggFunc::Count,
                    Some(col(1, DataType::BigInt)),
                    DataType::BigInt,
                )
            },
            AggCall::simple(AggFunc::Min, Some(col(2, text)), text),
            AggCall {
                extra: vec![PhysExpr::Literal {
                    value: Value::Text(",".into()),
                    data_type: text,
                }],
                ..AggCall::simple(AggFunc::StringAgg, Some(col(2, text)), text)
            },
            AggCall::simple(
                AggFunc::BoolAnd,
                Some(col(3, DataType::Boolean)),
                DataType::Boolean,
            ),
        ];
        let s = AggregateSink::new(vec![col(0, DataType::BigInt), col(4, text)], calls);
        let free = ExecContext::unbounded();
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 4 << 20)
            .with_spill(dir.to_path_buf(), u64::MAX);
        (s, free, small)
    }

    /// Row `i` of the input: 2,002 groups over keys with NULLs.
    fn batch(from: usize, n: usize) -> Batch {
        let text = DataType::Varchar(None);
        let rows = from..from + n;
        let value = |v: Option<Value>| v.unwrap_or(Value::Null);
        let column = |ty: DataType, f: &dyn Fn(usize) -> Option<Value>| {
            let vals: Vec<Value> = rows.clone().map(|i| value(f(i))).collect();
            Vector::from_values(ty, &vals).unwrap()
        };
        Batch::new(vec![
            column(DataType::BigInt, &|i| {
                (i % 97 != 0).then_some(Value::BigInt((i % 2_000) as i64))
            }),
            column(DataType::BigInt, &|i| {
                (i % 13 != 0).then_some(Value::BigInt((i % 7) as i64))
            }),
            column(text, &|i| Some(Value::Text(format!("s{}", i % 5)))),
            column(DataType::Boolean, &|i| Some(Value::Boolean(i % 1000 != 3))),
            column(text, &|i| Some(Value::Text(["a", "b"][i % 2].into()))),
        ])
    }

    /// Every result row as text, sorted (string_agg's order is not defined:
    /// its parts are sorted too).
    fn run(s: &AggregateSink, ctx: &ExecContext) -> ExecResult<Vec<String>> {
        let mut locals = vec![s.local(), s.local()];
        for (i, from) in (0..200_000).step_by(1000).enumerate() {
            s.consume(&mut locals[i % 2], batch(from, 1000), ctx)?;
        }
        for l in locals {
            s.merge(l, ctx)?;
        }
        s.finish(ctx)?;
        let mut rows = Vec::new();
        let batches = match s.take_spilled() {
            Some(file) => file.read_all()?,
            None => s.take(),
        };
        for b in batches {
            for r in 0..b.len() {
                let mut vals: Vec<String> = b
                    .columns
                    .iter()
                    .map(|c| format!("{:?}", c.get_value(r)))
                    .collect();
                let mut parts: Vec<&str> = vals[6].split(',').collect();
                parts.sort();
                vals[6] = parts.join(",");
                rows.push(vals.join("|"));
            }
        }
        rows.sort();
        Ok(rows)
    }

    #[test]
    fn a_spilled_aggregation_gives_the_same_groups() {
        let dir = std::env::temp_dir().join(format!("kura-agg-spill-{}", std::process::id()));
        let (s, free, _) = sink(&dir);
        let expected = run(&s, &free).unwrap();
        assert_eq!(expected.len(), 2_002);
        let (s, _, small) = sink(&dir.clone());
        let s = s.with_node(0);
        let got = run(&s, &small).unwrap();
        // The result went to a temporary file: none of it stays counted
        // against the limit (held, it took the room of the operators above).
        assert_eq!(small.memory.used(), 0);
        let stats = small.stats();
        assert!(stats[0].spilled_bytes > 0, "nothing spilled");
        assert_eq!(got, expected);
        // Every temporary file is gone.
        assert_eq!(small.spill.written(), 0);
        let left = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Groups by (k, t) with aggregates whose state is a few columns: all of
    /// count(*), count(v), sum(v), avg(v), min(t), max(v), bool_or, and a
    /// double sum and avg; or (`all` false) count(*) and sum(v) only.
    fn state_sink(all: bool) -> AggregateSink {
        let text = DataType::Varchar(None);
        let big = || Some(col(1, DataType::BigInt));
        let wide = DataType::Decimal {
            precision: 38,
            scale: 0,
        };
        let double = || {
            Some(PhysExpr::Cast {
                expr: Box::new(col(1, DataType::BigInt)),
                to: DataType::Double,
            })
        };
        let mut calls = vec![
            AggCall::simple(AggFunc::CountStar, None, DataType::BigInt),
            AggCall::simple(AggFunc::Sum, big(), wide),
        ];
        if all {
            calls.extend([
                AggCall::simple(AggFunc::Count, big(), DataType::BigInt),
                AggCall::simple(AggFunc::Avg, big(), wide),
                AggCall::simple(AggFunc::Min, Some(col(2, text)), text),
                AggCall::simple(AggFunc::Max, big(), DataType::BigInt),
                AggCall::simple(
                    AggFunc::BoolOr,
                    Some(col(3, DataType::Boolean)),
                    DataType::Boolean,
                ),
                AggCall::simple(AggFunc::Sum, double(), DataType::Double),
                AggCall::simple(AggFunc::Avg, double(), DataType::Double),
            ]);
        }
        AggregateSink::new(vec![col(0, DataType::BigInt), col(4, text)], calls)
    }

    /// Row `i` of the state sink's input: key `i / per_key` (NULL every 97th
    /// row), t "a" or "b" by key, v NULL in every row of keys ending in 3.
    fn state_batch(from: usize, n: usize, per_key: usize) -> Batch {
        let text = DataType::Varchar(None);
        let mut b = batch(from, n);
        let rows = from..from + n;
        let key = |i: usize| (i / per_key) as i64;
        let keys: Vec<Value> = rows
            .clone()
            .map(|i| {
                if i % 97 == 0 {
                    Value::Null
                } else {
                    Value::BigInt(key(i))
                }
            })
            .collect();
        let v: Vec<Value> = rows
            .clone()
            .map(|i| {
                if key(i) % 10 == 3 {
                    Value::Null
                } else {
                    Value::BigInt((i % 1_000) as i64 - 300)
                }
            })
            .collect();
        let t: Vec<Value> = rows
            .map(|i| Value::Text(["a", "b"][key(i) as usize % 2].into()))
            .collect();
        b.columns[0] = Vector::from_values(DataType::BigInt, &keys).unwrap();
        b.columns[1] = Vector::from_values(DataType::BigInt, &v).unwrap();
        b.columns[4] = Vector::from_values(text, &t).unwrap();
        b
    }

    /// The sorted result rows of 200,000 input rows, `per_key` rows a key.
    fn run_states(s: &AggregateSink, ctx: &ExecContext, per_key: usize) -> ExecResult<Vec<String>> {
        let mut locals = vec![s.local(), s.local()];
        for (i, from) in (0..200_000).step_by(1000).enumerate() {
            s.consume(&mut locals[i % 2], state_batch(from, 1000, per_key), ctx)?;
        }
        for l in locals {
            s.merge(l, ctx)?;
        }
        s.finish(ctx)?;
        let batches = match s.take_spilled() {
            Some(file) => file.read_all()?,
            None => s.take(),
        };
        let mut rows: Vec<String> = batches
            .iter()
            .flat_map(|b| (0..b.len()).map(move |r| format!("{:?}", b.row(r))))
            .collect();
        rows.sort();
        Ok(rows)
    }

    #[test]
    fn a_spilled_aggregation_writes_partial_states_and_gives_the_same_groups() {
        let dir = std::env::temp_dir().join(format!("kura-agg-states-{}", std::process::id()));
        for (all, per_key) in [(true, 4), (false, 8)] {
            let s = state_sink(all);
            assert!(s.spills_states);
            let expected = run_states(&s, &ExecContext::unbounded(), per_key).unwrap();
            // Every key, and the NULL key with "a" and with "b".
            assert_eq!(expected.len(), 200_000 / per_key + 2);
            assert!(expected.iter().any(|r| r.contains("Null")));
            let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
                .with_spill(dir.clone(), u64::MAX);
            let s = state_sink(all).with_node(0);
            let got = run_states(&s, &small, per_key).unwrap();
            assert_eq!(got, expected);
            let spilled = small.stats()[0].spilled_bytes;
            assert!(spilled > 0, "nothing spilled");
            if !all {
                // States, not rows: a partial state per key (and table it
                // was in) is a quarter of the rows' 16 bytes of key and value.
                assert!(spilled < 200_000 * 16 / 2, "{spilled} bytes spilled");
            }
            assert_eq!(small.memory.used(), 0);
            assert_eq!(small.spill.written(), 0);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_batch_past_the_share_even_alone_goes_to_disk_as_states() {
        // Another operator holds most of the memory: the aggregation is past
        // its share with an empty table, so each batch is folded on its own
        // and written out (a batch's groups alone would not fit the room).
        let dir = std::env::temp_dir().join(format!("kura-agg-alone-{}", std::process::id()));
        let expected = run_states(&state_sink(true), &ExecContext::unbounded(), 1).unwrap();
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
            .with_spill(dir.clone(), u64::MAX);
        small.memory.reserve(700 << 10, "another operator").unwrap();
        let s = state_sink(true).with_node(0);
        let got = run_states(&s, &small, 1).unwrap();
        assert_eq!(got, expected);
        assert!(small.stats()[0].spilled_bytes > 0, "nothing spilled");
        assert_eq!(small.memory.used(), 700 << 10);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_group_past_the_limit_still_fails() {
        let dir = std::env::temp_dir().join(format!("kura-agg-one-{}", std::process::id()));
        let text = DataType::Varchar(None);
        let calls = vec![AggCall {
            extra: vec![PhysExpr::Literal {
                value: Value::Text(",".into()),
                data_type: text,
            }],
            ..AggCall::simple(AggFunc::StringAgg, Some(col(2, text)), text)
        }];
        // One key for every row: group by (k / 1e9).
        let s = AggregateSink::new(vec![col(3, DataType::Boolean)], calls);
        let small = ExecContext::new(Arc::new(AtomicBool::new(false)), 1 << 20)
            .with_spill(dir.clone(), u64::MAX);
        let mut local = s.local();
        let mut result = Ok(());
        for from in (0..200_000).step_by(1000) {
            let mut b = batch(from, 1000);
            b.columns[3] =
                Vector::from_values(DataType::Boolean, &vec![Value::Boolean(true); 1000]).unwrap();
            result = s.consume(&mut local, b, &small);
            if result.is_err() {
                break;
            }
        }
        let result = result
            .and_then(|_| s.merge(local, &small))
            .and_then(|_| s.finish(&small));
        let e = result.unwrap_err();
        assert_eq!(e.sqlstate(), "53200");
        assert!(e.to_string().contains("single group"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
