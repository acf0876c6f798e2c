//! Hash aggregation: group keys map to group numbers, each aggregate keeps a typed
//! accumulator array indexed by group. Each worker aggregates into local state that
//! is merged into the shared table at the end.

use std::sync::Mutex;

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use kura_common::decimal::{div_round, pow10};
use kura_common::{Batch, ColumnData, DataType, Value, Vector, BATCH_SIZE};

use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::{compact_batch, PhysExpr};
use crate::keys::{encode_row, int_key, single_int_key};
use crate::keys_packed::PackedLayout;
use crate::ops::minmax::MinMaxAcc;
use crate::pipeline::{LocalState, Sink};
use crate::plan::{AggCall, AggFunc};

fn scale(dt: DataType) -> u8 {
    match dt {
        DataType::Decimal { scale, .. } => scale,
        _ => 0,
    }
}

/// Accumulators of one aggregate, one slot per group.
pub(crate) enum Acc {
    Count(Vec<i64>),
    SumInt {
        sums: Vec<i128>,
        seen: Vec<bool>,
    },
    SumFloat {
        sums: Vec<f64>,
        seen: Vec<bool>,
    },
    AvgInt {
        sums: Vec<i128>,
        counts: Vec<i64>,
    },
    AvgFloat {
        sums: Vec<f64>,
        counts: Vec<i64>,
    },
    MinMax(MinMaxAcc),
    /// DISTINCT: the distinct argument values per group, aggregated at the end.
    /// `seen` maps a value's key bytes (as `encode_row` writes them for the argument's
    /// own type) to its place in `vals`, so merging two workers' states compares the
    /// very bytes each update produced instead of re-encoding values whose physical
    /// width depends on a type it no longer knows.
    Distinct {
        seen: Vec<HashMap<Vec<u8>, u32>>,
        vals: Vec<Vec<Value>>,
    },
}

pub(crate) fn new_acc(call: &AggCall) -> Acc {
    let arg_float = call
        .arg
        .as_ref()
        .is_some_and(|a| a.data_type() == DataType::Double);
    if call.distinct {
        return Acc::Distinct {
            seen: Vec::new(),
            vals: Vec::new(),
        };
    }
    match call.func {
        AggFunc::CountStar | AggFunc::Count => Acc::Count(Vec::new()),
        AggFunc::Sum if arg_float => Acc::SumFloat {
            sums: Vec::new(),
            seen: Vec::new(),
        },
        AggFunc::Sum => Acc::SumInt {
            sums: Vec::new(),
            seen: Vec::new(),
        },
        AggFunc::Avg if arg_float => Acc::AvgFloat {
            sums: Vec::new(),
            counts: Vec::new(),
        },
        AggFunc::Avg => Acc::AvgInt {
            sums: Vec::new(),
            counts: Vec::new(),
        },
        AggFunc::Min | AggFunc::Max => Acc::MinMax(MinMaxAcc::new(
            call.func == AggFunc::Min,
            call.arg.as_ref().map_or(call.data_type, |a| a.data_type()),
        )),
    }
}

/// Adds row `i` of `a` to `sums[g[i]]` for every row when `a` has no NULLs and
/// integer data (one tight loop, an overflow flag instead of a branch per row):
/// `Some(false)` if a sum overflowed, `None` when the caller's general loop must
/// run.
fn add_dense(sums: &mut [i128], g: &[u32], a: &Vector) -> Option<bool> {
    fn add_all<T: Copy + Into<i128>>(sums: &mut [i128], g: &[u32], x: &[T]) -> bool {
        let mut overflow = false;
        for (&gi, &v) in g.iter().zip(x) {
            let s = &mut sums[gi as usize];
            let (r, o) = s.overflowing_add(v.into());
            *s = r;
            overflow |= o;
        }
        !overflow
    }
    if a.validity.is_some() || a.len() < g.len() {
        return None;
    }
    match &a.data {
        ColumnData::I32(x) => Some(add_all(sums, g, x)),
        ColumnData::I64(x) => Some(add_all(sums, g, x)),
        ColumnData::I128(x) => Some(add_all(sums, g, x)),
        _ => None,
    }
}

impl Acc {
    pub(crate) fn grow(&mut self, groups: usize) {
        match self {
            Acc::Count(c) => c.resize(groups, 0),
            Acc::SumInt { sums, seen } => {
                sums.resize(groups, 0);
                seen.resize(groups, false);
            }
            Acc::SumFloat { sums, seen } => {
                sums.resize(groups, 0.0);
                seen.resize(groups, false);
            }
            Acc::AvgInt { sums, counts } => {
                sums.resize(groups, 0);
                counts.resize(groups, 0);
            }
            Acc::AvgFloat { sums, counts } => {
                sums.resize(groups, 0.0);
                counts.resize(groups, 0);
            }
            Acc::MinMax(m) => m.grow(groups),
            Acc::Distinct { seen, vals } => {
                seen.resize_with(groups, HashMap::new);
                vals.resize_with(groups, Vec::new);
            }
        }
    }

    /// Folds rows of `arg` (None for count(*)) into groups `g`.
    pub(crate) fn update(&mut self, g: &[u32], arg: Option<&Vector>) -> ExecResult<()> {
        let valid = |i: usize| arg.is_none_or(|a| !a.is_null(i));
        match self {
            Acc::Count(c) => {
                for (i, &gi) in g.iter().enumerate() {
                    if valid(i) {
                        c[gi as usize] += 1;
                    }
                }
            }
            Acc::SumInt { sums, seen } => {
                let a = arg.ok_or_else(|| ExecError::Internal("sum without argument".into()))?;
                if let Some(added) = add_dense(sums, g, a) {
                    if !added {
                        return Err(ExecError::OutOfRange("sum overflows".into()));
                    }
                    g.iter().for_each(|&gi| seen[gi as usize] = true);
                    return Ok(());
                }
                let add = |sums: &mut Vec<i128>,
                           seen: &mut Vec<bool>,
                           i: usize,
                           x: i128|
                 -> ExecResult<()> {
                    let s = &mut sums[g[i] as usize];
                    *s = s
                        .checked_add(x)
                        .ok_or_else(|| ExecError::OutOfRange("sum overflows".into()))?;
                    seen[g[i] as usize] = true;
                    Ok(())
                };
                match &a.data {
                    ColumnData::I32(v) => {
                        for (i, x) in v.iter().enumerate().take(g.len()) {
                            if valid(i) {
                                add(sums, seen, i, *x as i128)?;
                            }
                        }
                    }
                    ColumnData::I64(v) => {
                        for (i, x) in v.iter().enumerate().take(g.len()) {
                            if valid(i) {
                                add(sums, seen, i, *x as i128)?;
                            }
                        }
                    }
                    ColumnData::I128(v) => {
                        for (i, x) in v.iter().enumerate().take(g.len()) {
                            if valid(i) {
                                add(sums, seen, i, *x)?;
                            }
                        }
                    }
                    _ => return Err(ExecError::Internal(format!("sum over {}", a.data_type))),
                }
            }
            Acc::AvgInt { sums, counts } => {
                let a = arg.ok_or_else(|| ExecError::Internal("avg without argument".into()))?;
                let overflow = || ExecError::OutOfRange("avg overflows".into());
                if let Some(added) = add_dense(sums, g, a) {
                    if !added {
                        return Err(overflow());
                    }
                    g.iter().for_each(|&gi| counts[gi as usize] += 1);
                    return Ok(());
                }
                let x = crate::expr::ints_of(a);
                for i in 0..g.len() {
                    if valid(i) {
                        let s = &mut sums[g[i] as usize];
                        *s = s.checked_add(x[i]).ok_or_else(overflow)?;
                        counts[g[i] as usize] += 1;
                    }
                }
            }
            Acc::SumFloat { sums, seen } => {
                let a = arg.ok_or_else(|| ExecError::Internal("sum without argument".into()))?;
                let x = crate::expr::floats_of(a);
                for i in 0..g.len() {
                    if valid(i) {
                        sums[g[i] as usize] += x[i];
                        seen[g[i] as usize] = true;
                    }
                }
            }
            Acc::AvgFloat { sums, counts } => {
                let a = arg.ok_or_else(|| ExecError::Internal("avg without argument".into()))?;
                let x = crate::expr::floats_of(a);
                for i in 0..g.len() {
                    if valid(i) {
                        sums[g[i] as usize] += x[i];
                        counts[g[i] as usize] += 1;
                    }
                }
            }
            Acc::MinMax(m) => {
                let a =
                    arg.ok_or_else(|| ExecError::Internal("min/max without argument".into()))?;
                m.update(g, a)?;
            }
            Acc::Distinct { seen, vals } => {
                let a =
                    arg.ok_or_else(|| ExecError::Internal("DISTINCT without argument".into()))?;
                let cols = std::slice::from_ref(a);
                let mut buf = Vec::new();
                for (i, &gi) in g.iter().enumerate() {
                    buf.clear();
                    let gi = gi as usize;
                    // Look up by slice first: a repeated value costs no allocation.
                    if encode_row(cols, i, false, &mut buf)
                        && !seen[gi].contains_key(buf.as_slice())
                    {
                        seen[gi].insert(buf.clone(), vals[gi].len() as u32);
                        vals[gi].push(a.get_value(i));
                    }
                }
            }
        }
        Ok(())
    }

    /// Folds group `from` into group `to` of the same accumulator: running window
    /// aggregates carry each peer group's state into the next one.
    pub(crate) fn carry(&mut self, from: usize, to: usize) -> ExecResult<()> {
        match self {
            Acc::Count(c) => c[to] += c[from],
            Acc::SumInt { sums, seen } => {
                sums[to] = sums[to]
                    .checked_add(sums[from])
                    .ok_or_else(|| ExecError::OutOfRange("sum overflows".into()))?;
                seen[to] |= seen[from];
            }
            Acc::SumFloat { sums, seen } => {
                sums[to] += sums[from];
                seen[to] |= seen[from];
            }
            Acc::AvgInt { sums, counts } => {
                sums[to] = sums[to]
                    .checked_add(sums[from])
                    .ok_or_else(|| ExecError::OutOfRange("avg overflows".into()))?;
                counts[to] += counts[from];
            }
            Acc::AvgFloat { sums, counts } => {
                sums[to] += sums[from];
                counts[to] += counts[from];
            }
            Acc::MinMax(m) => m.carry(from, to),
            Acc::Distinct { .. } => {
                return Err(ExecError::Internal(
                    "DISTINCT in a running aggregate".into(),
                ))
            }
        }
        Ok(())
    }

    /// Folds group `from` of `other` into group `to` of `self`.
    fn merge_group(&mut self, to: usize, other: &Acc, from: usize) {
        match (self, other) {
            (Acc::Count(a), Acc::Count(b)) => a[to] += b[from],
            (Acc::SumInt { sums, seen }, Acc::SumInt { sums: s2, seen: n2 }) => {
                sums[to] += s2[from];
                seen[to] |= n2[from];
            }
            (Acc::SumFloat { sums, seen }, Acc::SumFloat { sums: s2, seen: n2 }) => {
                sums[to] += s2[from];
                seen[to] |= n2[from];
            }
            (
                Acc::AvgInt { sums, counts },
                Acc::AvgInt {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                sums[to] += s2[from];
                counts[to] += c2[from];
            }
            (
                Acc::AvgFloat { sums, counts },
                Acc::AvgFloat {
                    sums: s2,
                    counts: c2,
                },
            ) => {
                sums[to] += s2[from];
                counts[to] += c2[from];
            }
            (Acc::MinMax(a), Acc::MinMax(b)) => a.merge_group(to, b, from),
            (Acc::Distinct { seen, vals }, Acc::Distinct { seen: s2, vals: v2 }) => {
                for (key, &at) in &s2[from] {
                    if let Entry::Vacant(slot) = seen[to].entry(key.clone()) {
                        slot.insert(vals[to].len() as u32);
                        vals[to].push(v2[from][at as usize].clone());
                    }
                }
            }
            _ => {}
        }
    }

    /// The final value of every group, as a vector of `call.data_type`.
    pub(crate) fn finish(&self, call: &AggCall, groups: usize) -> ExecResult<Vector> {
        let out = call.data_type;
        let in_scale = call.arg.as_ref().map_or(0, |a| scale(a.data_type()));
        let mut v = Vector::new(out, groups);
        let push = |v: &mut Vector, x: Value| -> ExecResult<()> {
            let x = crate::expr::cast_value(&x, out)?;
            if v.push_value(&x) {
                Ok(())
            } else {
                Err(ExecError::Internal(format!(
                    "aggregate value {x} is not {out}"
                )))
            }
        };
        let int_value = |x: i128, s: u8| match out {
            DataType::Integer => Value::Integer(x as i32),
            DataType::BigInt => Value::BigInt(x as i64),
            DataType::Double => Value::Double(x as f64 / 10f64.powi(s as i32)),
            _ => Value::Decimal(x, s),
        };
        match self {
            Acc::Count(c) => c.iter().try_for_each(|&x| push(&mut v, Value::BigInt(x)))?,
            Acc::SumInt { sums, seen } => {
                for g in 0..groups {
                    push(
                        &mut v,
                        if seen[g] {
                            int_value(sums[g], in_scale)
                        } else {
                            Value::Null
                        },
                    )?;
                }
            }
            Acc::SumFloat { sums, seen } => {
                for g in 0..groups {
                    push(
                        &mut v,
                        if seen[g] {
                            Value::Double(sums[g])
                        } else {
                            Value::Null
                        },
                    )?;
                }
            }
            Acc::AvgInt { sums, counts } => {
                let out_scale = scale(out);
                for g in 0..groups {
                    if counts[g] == 0 {
                        push(&mut v, Value::Null)?;
                    } else if out == DataType::Double {
                        push(
                            &mut v,
                            Value::Double(
                                sums[g] as f64 / 10f64.powi(in_scale as i32) / counts[g] as f64,
                            ),
                        )?;
                    } else {
                        let shift = out_scale.saturating_sub(in_scale) as u32;
                        let q = sums[g]
                            .checked_mul(pow10(shift))
                            .and_then(|n| div_round(n, counts[g] as i128))
                            .ok_or_else(|| ExecError::OutOfRange("avg".into()))?;
                        push(&mut v, Value::Decimal(q, in_scale + shift as u8))?;
                    }
                }
            }
            Acc::AvgFloat { sums, counts } => {
                for g in 0..groups {
                    push(
                        &mut v,
                        if counts[g] == 0 {
                            Value::Null
                        } else {
                            Value::Double(sums[g] / counts[g] as f64)
                        },
                    )?;
                }
            }
            Acc::MinMax(m) => return m.finish(groups, out),
            Acc::Distinct { vals, .. } => {
                for g in vals.iter().take(groups) {
                    push(&mut v, distinct_result(call, g, in_scale)?)?;
                }
            }
        }
        Ok(v)
    }
}

fn distinct_result(call: &AggCall, vals: &[Value], in_scale: u8) -> ExecResult<Value> {
    let ty = call
        .arg
        .as_ref()
        .map_or(DataType::BigInt, |a| a.data_type());
    let vec = Vector::from_values(ty, vals)
        .ok_or_else(|| ExecError::Internal("distinct values".into()))?;
    let base = AggCall {
        distinct: false,
        ..call.clone()
    };
    let mut acc = new_acc(&base);
    acc.grow(1);
    acc.update(&vec![0; vals.len()], Some(&vec))?;
    let _ = in_scale;
    Ok(acc.finish(&base, 1)?.get_value(0))
}

/// Local (per-worker) or shared aggregation state.
struct AggState {
    map: HashMap<Box<[u8]>, u32>,
    /// Groups of a single integer key (order keys, part keys: up to millions of
    /// groups), without encoding each row's key as an allocated byte string.
    int_map: HashMap<i64, u32>,
    /// The group of the NULL key in `int_map`'s case.
    null_group: Option<u32>,
    /// Groups of a few small keys packed into 16 bytes (`None` once a key did
    /// not fit: `map` holds every group from then on).
    packed: Option<(PackedLayout, HashMap<u128, u32>)>,
    keys: Vec<Vector>,
    accs: Vec<Acc>,
    groups: usize,
    bytes: u64,
    /// The group tables' capacities and ranges last named in the memory-object
    /// registry (profiling only).
    registered: ((usize, usize), Vec<(usize, usize)>),
}

impl AggState {
    fn new(key_types: &[DataType], calls: &[AggCall]) -> AggState {
        AggState {
            map: HashMap::new(),
            int_map: HashMap::new(),
            null_group: None,
            packed: PackedLayout::new(key_types).map(|l| (l, HashMap::new())),
            keys: key_types.iter().map(|t| Vector::new(*t, 0)).collect(),
            accs: calls.iter().map(new_acc).collect(),
            groups: 0,
            bytes: 0,
            registered: ((0, 0), Vec::new()),
        }
    }

    /// Names the group tables in the memory-object registry after they grew
    /// (profiling only; growth is geometric, so this walks the tables rarely).
    fn register(&mut self, operator: impl Fn() -> String) {
        use kura_common::memobj;
        let packed_capacity = self.packed.as_ref().map_or(0, |p| p.1.capacity());
        let capacities = (
            self.int_map.capacity() + packed_capacity,
            self.map.capacity(),
        );
        if !memobj::enabled() || capacities == self.registered.0 {
            return;
        }
        let now: Vec<(usize, usize)> = super::join::hash::map_span(&self.int_map)
            .into_iter()
            .chain(super::join::hash::map_span(&self.map))
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
        let mut buf = Vec::new();
        let mut new_rows = Vec::new();
        let before = self.groups;
        let int = single_int_key(keys);
        if int {
            // The key of the row before and its group: tables are often stored
            // in key order (lineitem by l_orderkey), so runs of one key skip the
            // hash table.
            let mut last: Option<(i64, u32)> = None;
            for row in 0..n {
                let next = (before + new_rows.len()) as u32;
                let (id, added) = match int_key(&keys[0], row) {
                    Some(k) if last.is_some_and(|(lk, _)| lk == k) => {
                        (last.map_or(0, |(_, id)| id), false)
                    }
                    Some(k) => {
                        let found = match self.int_map.entry(k) {
                            Entry::Occupied(e) => (*e.get(), false),
                            Entry::Vacant(e) => {
                                e.insert(next);
                                (next, true)
                            }
                        };
                        last = Some((k, found.0));
                        found
                    }
                    None => match self.null_group {
                        Some(g) => (g, false),
                        None => {
                            self.null_group = Some(next);
                            (next, true)
                        }
                    },
                };
                if added {
                    self.bytes += 24;
                    new_rows.push(row as u32);
                }
                ids.push(id);
            }
        }
        let packed = if int { None } else { self.pack(keys, n) };
        if let Some((packed_keys, map)) = packed.as_ref().zip(self.packed.as_mut()) {
            for (row, k) in packed_keys.iter().enumerate() {
                let next = (before + new_rows.len()) as u32;
                let id = match map.1.entry(*k) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => {
                        e.insert(next);
                        self.bytes += 32;
                        new_rows.push(row as u32);
                        next
                    }
                };
                ids.push(id);
            }
        }
        for row in 0..if int || packed.is_some() { 0 } else { n } {
            buf.clear();
            encode_row(keys, row, true, &mut buf);
            let id = match self.map.get(buf.as_slice()) {
                Some(&g) => g,
                None => {
                    let g = (before + new_rows.len()) as u32;
                    self.bytes += buf.len() as u64 + 48;
                    self.map.insert(buf.clone().into_boxed_slice(), g);
                    new_rows.push(row as u32);
                    g
                }
            };
            ids.push(id);
        }
        if !new_rows.is_empty() {
            for (k, v) in self.keys.iter_mut().zip(keys) {
                k.append(&v.take(&new_rows));
            }
            let added = new_rows.len();
            self.add_groups(added);
            ctx.memory.reserve(
                added as u64 * (48 + 16 * self.accs.len() as u64),
                "hash aggregation",
            )?;
        }
        Ok(ids)
    }

    /// The batch's keys packed, or `None` (for good, after moving the packed
    /// groups into the byte-string map) when the keys are not packable.
    fn pack(&mut self, keys: &[Vector], n: usize) -> Option<Vec<u128>> {
        let (layout, _) = self.packed.as_ref()?;
        if let Some(p) = layout.pack(keys, n) {
            return Some(p);
        }
        self.packed = None;
        let mut buf = Vec::new();
        for g in 0..self.groups {
            buf.clear();
            encode_row(&self.keys, g, true, &mut buf);
            self.bytes += buf.len() as u64 + 16;
            self.map.insert(buf.clone().into_boxed_slice(), g as u32);
        }
        None
    }

    fn add_groups(&mut self, n: usize) {
        self.groups += n;
        let g = self.groups;
        self.accs.iter_mut().for_each(|a| a.grow(g));
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
}

impl AggregateSink {
    pub fn new(group_by: Vec<PhysExpr>, calls: Vec<AggCall>) -> AggregateSink {
        let key_types = group_by.iter().map(|e| e.data_type()).collect();
        AggregateSink {
            group_by,
            calls,
            key_types,
            shared: Mutex::new(None),
            result: Mutex::new(Vec::new()),
            label: None,
        }
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
}

impl Sink for AggregateSink {
    fn local(&self) -> LocalState {
        Box::new(AggState::new(&self.key_types, &self.calls))
    }

    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let st = local
            .downcast_mut::<AggState>()
            .ok_or_else(|| ExecError::Internal("aggregate state".into()))?;
        let batch = compact_batch(batch);
        let n = batch.num_rows;
        let keys = self
            .group_by
            .iter()
            .map(|e| e.eval(&batch))
            .collect::<ExecResult<Vec<_>>>()?;
        let ids = st.group_ids(&keys, n, ctx)?;
        st.register(|| self.operator());
        for (acc, call) in st.accs.iter_mut().zip(&self.calls) {
            let arg = call.arg.as_ref().map(|a| a.eval(&batch)).transpose()?;
            acc.update(&ids, arg.as_ref())?;
        }
        Ok(())
    }

    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()> {
        let local = *local
            .downcast::<AggState>()
            .map_err(|_| ExecError::Internal("aggregate state".into()))?;
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        match shared.as_mut() {
            None => *shared = Some(local),
            Some(global) => {
                let ids = global.group_ids(&local.keys, local.groups, ctx)?;
                global.register(|| self.operator());
                for (a, b) in global.accs.iter_mut().zip(&local.accs) {
                    for (from, &to) in ids.iter().enumerate() {
                        a.merge_group(to as usize, b, from);
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(&self, _ctx: &ExecContext) -> ExecResult<()> {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut st = shared
            .take()
            .unwrap_or_else(|| AggState::new(&self.key_types, &self.calls));
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
