//! Hash aggregation: group keys map to group numbers, each aggregate keeps a typed
//! accumulator array indexed by group. Each worker aggregates into local state that
//! is merged into the shared table at the end.

use std::sync::Mutex;

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use kura_common::{Batch, DataType, Vector, BATCH_SIZE};

use crate::context::ExecContext;
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
mod moments;

use byte_codes::{ByteCodes, OneByteKeys};
use byte_keys::ByteKeys;
use dense::DenseGroups;
/// The widest key range an aggregation numbers as an array from the start.
pub use dense::MAX_RANGE_SLOTS;

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
        } else if !self.one_byte_group_ids(&key_refs, n, None, &mut ids, &mut new_rows)? {
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
    ) -> ExecResult<bool> {
        let Some((layout, map)) = self.packed.as_mut() else {
            return Ok(false);
        };
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
        if !self.one_byte_group_ids(keys, 0, Some(selected), &mut ids, &mut new_rows)? {
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
        AggregateSink {
            common_args,
            group_by,
            calls,
            key_types,
            shared: Mutex::new(None),
            result: Mutex::new(Vec::new()),
            label: None,
            packed_columns,
            arg_columns,
            key_range: None,
        }
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

    pub fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.result.lock().unwrap_or_else(|e| e.into_inner()))
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
                ctx.memory.reserve(grown, "aggregate values")?;
            }
        }
        Ok(())
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

    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()> {
        let mut local = *local
            .downcast::<AggState>()
            .map_err(|_| ExecError::Internal("aggregate state".into()))?;
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        match shared.as_mut() {
            None => *shared = Some(local),
            Some(global) => {
                let ids = global.group_ids(&local.keys, local.groups, ctx)?;
                global.register(|| self.operator());
                for (a, b) in global.accs.iter_mut().zip(&mut local.accs) {
                    a.merge(b, &ids);
                }
            }
        }
        Ok(())
    }

    fn finish(&self, ctx: &ExecContext) -> ExecResult<()> {
        // Results built from kept values (a `string_agg`) count while built.
        let _values = ValueScope::enter(&ctx.memory);
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut st = shared
            .take()
            .unwrap_or_else(|| AggState::new(&self.key_types, &self.calls, None));
        if self.group_by.is_empty() && st.groups == 0 {
            // An aggregate without GROUP BY returns one row even over no input.
            st.add_groups(1);
        }
        let mut cols = std::mem::take(&mut st.keys);
        for (acc, call) in st.accs.iter().zip(&self.calls) {
            cols.push(acc.finish(call, st.groups)?);
        }
        let all = if cols.is_empty() {
            Batch::with_rows(st.groups)
        } else {
            Batch::new(cols)
        };
        let mut out = self.result.lock().unwrap_or_else(|e| e.into_inner());
        *out = if st.groups <= BATCH_SIZE {
            vec![all]
        } else {
            super::split(all)
        };
        Ok(())
    }
}
