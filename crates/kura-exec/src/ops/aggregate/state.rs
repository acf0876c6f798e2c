//! A hash aggregation's group table: keys to group numbers (dense array, one
//! integer key, packed small keys, one-byte codes or encoded bytes) and the
//! accumulators indexed by group.

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use kura_common::{DataType, Vector};

use super::byte_codes::{ByteCodes, OneByteKeys};
use super::byte_keys::ByteKeys;
use super::dense::DenseGroups;
use super::{new_acc, Acc};
use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::keys::{encode_row, int_key, single_int_key};
use crate::keys_packed::PackedLayout;
use crate::plan::AggCall;

/// The one-byte keys' table is built only while it takes at most this share
/// of the memory the query has left.
const BYTE_CODES_ROOM_SHARE: u64 = 16;

/// Local (per-worker) or shared aggregation state.
pub(super) struct AggState {
    pub(super) map: ByteKeys,
    /// Groups of a single integer key (order keys, part keys: up to millions of
    /// groups), without encoding each row's key as an allocated byte string.
    pub(super) int_map: HashMap<i64, u32>,
    /// The same groups while their keys are dense (`None` once they were not).
    pub(super) dense: Option<DenseGroups>,
    /// The group of the NULL key in `int_map`'s case.
    pub(super) null_group: Option<u32>,
    /// Groups of a few small keys packed into 16 bytes (`None` once a key did
    /// not fit: `map` holds every group from then on).
    pub(super) packed: Option<(PackedLayout, HashMap<u128, u32>)>,
    /// The packed map's groups by key code while keys are one-byte texts
    /// (created at the first batch of such keys).
    pub(super) byte_codes: Option<ByteCodes>,
    pub(super) keys: Vec<Vector>,
    pub(super) accs: Vec<Acc>,
    pub(super) groups: usize,
    /// What the group tables and keys held when last reserved.
    pub(super) reserved: u64,
    /// Every byte this state reserved (tables, keys, accumulators' values):
    /// what a spilled aggregation gives back once the state is done.
    pub(super) charged: u64,
    /// Bytes reserved ahead of the batch being aggregated (the batch's likely
    /// growth, taken only if it fit): its growth is drawn from them before
    /// anything more is asked, and what is left is given back after the batch.
    pub(super) credit: u64,
    /// Whether the batch in hand may take the state past the memory limit
    /// (its worker writes the state out right after it: see `over_limit`).
    /// A batch cannot be undone halfway, and its growth is known only once
    /// its keys are in the table (a table that doubles).
    pub(super) may_overdraw: bool,
    /// Set when a reservation passed the limit while `may_overdraw` was set;
    /// the bytes are counted all the same.
    pub(super) over_limit: bool,
    /// The group tables' capacities and ranges last named in the memory-object
    /// registry (profiling only).
    pub(super) registered: ((usize, usize), Vec<(usize, usize)>),
}

impl AggState {
    pub(super) fn new(
        key_types: &[DataType],
        calls: &[AggCall],
        key_range: Option<(i64, i64)>,
    ) -> AggState {
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
            credit: 0,
            may_overdraw: false,
            over_limit: false,
            registered: ((0, 0), Vec::new()),
        }
    }

    /// Names the group tables in the memory-object registry after they grew
    /// (profiling only; growth is geometric, so this walks the tables rarely).
    pub(super) fn register(&mut self, operator: impl Fn() -> String) {
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
        let now: Vec<(usize, usize)> = crate::ops::join::hash::map_span(&self.int_map)
            .into_iter()
            .chain(self.dense.as_ref().and_then(|d| d.region()))
            .chain(self.map.spans())
            .chain(
                self.packed
                    .iter()
                    .flat_map(|p| crate::ops::join::hash::map_span(&p.1)),
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
    pub(super) fn group_ids(
        &mut self,
        keys: &[Vector],
        n: usize,
        ctx: &ExecContext,
    ) -> ExecResult<Vec<u32>> {
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
    pub(super) fn one_byte_group_ids(
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
    pub(super) fn packed_group_ids_at(
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
    pub(super) fn add_keys(
        &mut self,
        keys: &[&Vector],
        rows: &[u32],
        ctx: &ExecContext,
    ) -> ExecResult<()> {
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
        self.charge(grown, ctx, "hash aggregation")
    }

    /// Reserves `bytes` the state grew by, drawn from its credit first; past
    /// the limit an error, unless the state may overdraw (the bytes stay
    /// counted either way, given back with `charged`).
    pub(super) fn charge(
        &mut self,
        bytes: u64,
        ctx: &ExecContext,
        what: &'static str,
    ) -> ExecResult<()> {
        self.charged += bytes;
        let from_credit = bytes.min(self.credit);
        self.credit -= from_credit;
        match ctx.memory.reserve(bytes - from_credit, what) {
            Err(e) if e.is_out_of_memory() && self.may_overdraw => {
                self.over_limit = true;
                Ok(())
            }
            reserved => reserved,
        }
    }

    /// Bytes the group tables and the group keys hold.
    pub(super) fn held_bytes(&self) -> u64 {
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
        tables as u64
            + self
                .keys
                .iter()
                .map(crate::ops::join::vector_bytes)
                .sum::<u64>()
    }

    /// One integer key: `dense` while the keys are dense, else `int_map`; and
    /// `null_group` for NULL.
    pub(super) fn int_group_ids(
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
    pub(super) fn packed_group_ids(
        &mut self,
        packed: &[u128],
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) {
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
    pub(super) fn byte_group_ids(
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
    pub(super) fn insert_bytes(&mut self, hash: u64, key: &[u8], g: u32) {
        self.map.insert(hash, key, g);
    }

    /// The batch's keys packed, or `None` (for good, after moving the packed
    /// groups into the byte-string map) when the keys are not packable.
    pub(super) fn pack(&mut self, keys: &[Vector], n: usize) -> Option<Vec<u128>> {
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

    pub(super) fn add_groups(&mut self, n: usize) {
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
