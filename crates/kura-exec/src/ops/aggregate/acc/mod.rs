//! Aggregate accumulators: one typed array per aggregate, indexed by group
//! (count, exact integer and decimal sums and averages, floating sums and
//! averages, min/max, DISTINCT), with update, merge and the final values.

use kura_common::decimal::{div_round, pow10};
use kura_common::types::PhysicalType;
use kura_common::{ColumnData, DataType, Value, Vector};

use super::collect::CollectAcc;
use super::distinct::DistinctAcc;
use super::moments::MomentAcc;
use crate::error::{ExecError, ExecResult};
use crate::ops::minmax::MinMaxAcc;
use crate::plan::{AggCall, AggFunc};

use super::group_map::SKIP;

mod lanes;
mod state;

use lanes::{add_dense, count_rows};
pub(crate) use lanes::{batch_counts, batch_sums};
use state::fold_bool;

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
    Distinct(DistinctAcc),
    /// `bool_and` (`and` set) / `bool_or`: per group 0 for no row yet, else
    /// 1 + the value so far.
    Bool {
        and: bool,
        vals: Vec<u8>,
    },
    Moment(MomentAcc),
    /// The aggregates that sort a group's values (see [`CollectAcc`]).
    Collect(CollectAcc),
}

pub(crate) fn new_acc(call: &AggCall) -> Acc {
    let arg_float = call
        .arg
        .as_ref()
        .is_some_and(|a| a.data_type() == DataType::Double);
    // string_agg and array_agg keep their rows anyway: DISTINCT drops the
    // repeated ones when they are sorted (see `CollectAcc::finish`).
    if call.distinct && !matches!(call.func, AggFunc::StringAgg | AggFunc::ArrayAgg) {
        let int_arg = call.arg.as_ref().is_some_and(|a| {
            matches!(
                a.data_type().physical(),
                PhysicalType::I32 | PhysicalType::I64
            )
        });
        return Acc::Distinct(DistinctAcc::new(int_arg, call.func != AggFunc::Count));
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
        AggFunc::BoolAnd | AggFunc::BoolOr => Acc::Bool {
            and: call.func == AggFunc::BoolAnd,
            vals: Vec::new(),
        },
        AggFunc::Moment(m) => {
            Acc::Moment(MomentAcc::new(m, call.arg.as_ref().map(|a| a.data_type())))
        }
        AggFunc::StringAgg | AggFunc::PercentileCont | AggFunc::PercentileDisc | AggFunc::Mode => {
            Acc::Collect(CollectAcc::new(false))
        }
        AggFunc::ArrayAgg | AggFunc::JsonAgg | AggFunc::JsonObjectAgg => {
            Acc::Collect(CollectAcc::new(true))
        }
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
            Acc::Distinct(d) => d.grow(groups),
            Acc::Bool { vals, .. } => vals.resize(groups, 0),
            Acc::Moment(m) => m.grow(groups),
            // Rows carry their group: nothing is kept per group.
            Acc::Collect(_) => {}
        }
    }

    /// Whether the accumulator is a few plain values per group, which
    /// [`Acc::truncate`] can drop.
    pub(crate) fn has_plain_slots(&self) -> bool {
        matches!(
            self,
            Acc::Count(_)
                | Acc::SumInt { .. }
                | Acc::SumFloat { .. }
                | Acc::AvgInt { .. }
                | Acc::AvgFloat { .. }
        )
    }

    /// Drops the groups from `groups` on, of an accumulator with plain slots
    /// (see [`Acc::has_plain_slots`]; the others are left as they are).
    pub(crate) fn truncate(&mut self, groups: usize) {
        match self {
            Acc::Count(c) => c.truncate(groups),
            Acc::SumInt { sums, seen } => {
                sums.truncate(groups);
                seen.truncate(groups);
            }
            Acc::SumFloat { sums, seen } => {
                sums.truncate(groups);
                seen.truncate(groups);
            }
            Acc::AvgInt { sums, counts } => {
                sums.truncate(groups);
                counts.truncate(groups);
            }
            Acc::AvgFloat { sums, counts } => {
                sums.truncate(groups);
                counts.truncate(groups);
            }
            _ => {}
        }
    }

    /// Folds rows of `arg` (None for count(*)) into groups `g`.
    pub(crate) fn update(&mut self, g: &[u32], arg: Option<&Vector>) -> ExecResult<()> {
        self.update_counted(g, arg, None)
    }

    /// [`Acc::update`], given the rows per group of `g` when
    /// [`batch_counts`] counted them.
    pub(crate) fn update_counted(
        &mut self,
        g: &[u32],
        arg: Option<&Vector>,
        batch: Option<&[i64]>,
    ) -> ExecResult<()> {
        let valid = |i: usize| arg.is_none_or(|a| !a.is_null(i));
        let add_counts = |counts: &mut [i64]| match batch {
            Some(b) => counts.iter_mut().zip(b).for_each(|(c, n)| *c += n),
            None => count_rows(counts, g),
        };
        match self {
            Acc::Count(c) => {
                if arg.is_none_or(|a| a.validity.is_none()) {
                    add_counts(c);
                    return Ok(());
                }
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
                    match batch {
                        Some(b) => seen.iter_mut().zip(b).for_each(|(s, &n)| *s |= n > 0),
                        None => g.iter().for_each(|&gi| seen[gi as usize] = true),
                    }
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
                    add_counts(counts);
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
                let x = crate::expr::floats_view(a);
                if a.validity.is_none() {
                    lanes::add_floats(sums, g, &x);
                    match batch {
                        Some(b) => seen.iter_mut().zip(b).for_each(|(s, &n)| *s |= n > 0),
                        None => g.iter().for_each(|&gi| seen[gi as usize] = true),
                    }
                    return Ok(());
                }
                for i in 0..g.len() {
                    if valid(i) {
                        sums[g[i] as usize] += x[i];
                        seen[g[i] as usize] = true;
                    }
                }
            }
            Acc::AvgFloat { sums, counts } => {
                let a = arg.ok_or_else(|| ExecError::Internal("avg without argument".into()))?;
                let x = crate::expr::floats_view(a);
                if a.validity.is_none() {
                    lanes::add_floats(sums, g, &x);
                    add_counts(counts);
                    return Ok(());
                }
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
            Acc::Distinct(d) => {
                let a =
                    arg.ok_or_else(|| ExecError::Internal("DISTINCT without argument".into()))?;
                d.update(g, a)?;
            }
            Acc::Bool { .. } | Acc::Moment(_) | Acc::Collect(_) => {
                let a = arg.ok_or_else(|| ExecError::Internal("aggregate argument".into()))?;
                self.update_with(g, a, &[])?;
            }
        }
        Ok(())
    }

    /// Adds one batch's sums per group of an argument without NULLs
    /// ([`batch_sums`]) and its rows per group ([`batch_counts`]) to an integer
    /// `sum` or `avg`; `false` (nothing added) for any other accumulator.
    pub(crate) fn add_batch_sums(&mut self, batch: &[i128], rows: &[i64]) -> ExecResult<bool> {
        let add = |sums: &mut [i128], what: &str| {
            for (s, b) in sums.iter_mut().zip(batch) {
                *s = s
                    .checked_add(*b)
                    .ok_or_else(|| ExecError::OutOfRange(format!("{what} overflows")))?;
            }
            Ok::<_, ExecError>(())
        };
        match self {
            Acc::SumInt { sums, seen } => {
                add(sums, "sum")?;
                seen.iter_mut().zip(rows).for_each(|(s, &n)| *s |= n > 0);
            }
            Acc::AvgInt { sums, counts } => {
                add(sums, "avg")?;
                counts.iter_mut().zip(rows).for_each(|(c, n)| *c += n);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Folds rows into the aggregates that take more than one argument or
    /// ORDER BY keys: `more` holds the call's `extra` arguments then (for
    /// `string_agg`) its order keys, evaluated over the batch.
    pub(crate) fn update_with(&mut self, g: &[u32], a: &Vector, more: &[Vector]) -> ExecResult<()> {
        match self {
            Acc::Bool { and, vals } => {
                let ColumnData::Bool(x) = &a.data else {
                    return Err(ExecError::Internal(format!(
                        "bool_and over {}",
                        a.data_type
                    )));
                };
                for (i, &gi) in g.iter().enumerate() {
                    if a.is_null(i) {
                        continue;
                    }
                    let v = &mut vals[gi as usize];
                    let now = x[i];
                    *v = 1 + match *v {
                        0 => now,
                        old if *and => (old == 2) && now,
                        old => (old == 2) || now,
                    } as u8;
                }
            }
            Acc::Moment(m) => m.update(g, a, more.first()),
            Acc::Collect(c) => c.update(g, a, more),
            _ => return Err(ExecError::Internal("aggregate of one argument".into())),
        }
        Ok(())
    }

    /// Memory the accumulator took since the last call, for the aggregates
    /// whose state grows with the rows rather than the groups.
    pub(crate) fn take_grown(&mut self) -> u64 {
        match self {
            Acc::Collect(c) => c.take_grown(),
            _ => 0,
        }
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
            Acc::Distinct(_) | Acc::Bool { .. } | Acc::Moment(_) | Acc::Collect(_) => {
                return Err(ExecError::Internal(
                    "this aggregate in a running window".into(),
                ))
            }
        }
        Ok(())
    }

    /// Whether [`Acc::carry`] can fold this accumulator's groups into each
    /// other: the aggregates a running window frame computes.
    pub(crate) fn carries(&self) -> bool {
        matches!(
            self,
            Acc::Count(_)
                | Acc::SumInt { .. }
                | Acc::SumFloat { .. }
                | Acc::AvgInt { .. }
                | Acc::AvgFloat { .. }
                | Acc::MinMax(_)
        )
    }

    /// Folds group `from` of `other` into group `to` here: a running window
    /// computed a run of rows at a time starts a run with the state its
    /// partition reached at the end of the run before.
    pub(crate) fn carry_from(&mut self, to: usize, other: &Acc, from: usize) {
        self.merge_group(to, other, from);
    }

    /// Folds `other` (a worker's state, dropped after) into this one; kept
    /// values move rather than being copied. `ids[g]` is the group here of
    /// `other`'s group `g`, or [`SKIP`] for a group left in `other` (a spilled
    /// aggregation folds its state one partition at a time).
    pub(super) fn merge(&mut self, other: &mut Acc, ids: &[u32]) {
        match (self, &mut *other) {
            (Acc::Distinct(a), Acc::Distinct(b)) => a.merge(b, ids),
            (Acc::Collect(a), Acc::Collect(b)) => a.merge(b, ids),
            (this, _) => {
                for (from, &to) in ids.iter().enumerate() {
                    if to != SKIP {
                        this.merge_group(to as usize, &*other, from);
                    }
                }
            }
        }
    }

    /// [`Acc::merge`] of the groups `sel` of `other` only (`ids` marks the
    /// others [`SKIP`]): a spilled aggregation folds a partition's groups
    /// without walking every group of `other` for each partition.
    pub(super) fn merge_some(&mut self, other: &mut Acc, ids: &[u32], sel: &[u32]) {
        match (self, &mut *other) {
            (Acc::Distinct(a), Acc::Distinct(b)) => a.merge(b, ids),
            (Acc::Collect(a), Acc::Collect(b)) => a.merge(b, ids),
            (this, _) => {
                for &from in sel {
                    let to = ids[from as usize];
                    this.merge_group(to as usize, &*other, from as usize);
                }
            }
        }
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
            (Acc::Bool { and, vals }, Acc::Bool { vals: v2, .. }) => {
                vals[to] = fold_bool(*and, vals[to], v2[from]);
            }
            (Acc::Moment(a), Acc::Moment(b)) => a.merge_group(to, b, from),
            _ => {}
        }
    }

    /// The final value of every group, as a vector of `call.data_type`.
    pub(crate) fn finish(&self, call: &AggCall, groups: usize) -> ExecResult<Vector> {
        let out = call.data_type;
        let in_scale = call
            .arg
            .as_ref()
            .map_or(0, |a| a.data_type().decimal_scale());
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
            DataType::SmallInt | DataType::Integer => Value::Integer(x as i32),
            DataType::BigInt => Value::BigInt(x as i64),
            DataType::Double => Value::Double(x as f64 / 10f64.powi(s as i32)),
            _ => Value::Decimal(x, s),
        };
        match self {
            Acc::Count(c) if out == DataType::BigInt && c.len() >= groups => {
                v.data = ColumnData::I64(c[..groups].to_vec());
            }
            Acc::Count(c) => c.iter().try_for_each(|&x| push(&mut v, Value::BigInt(x)))?,
            Acc::SumInt { sums, seen } if sums.len() >= groups => {
                if let Some(data) = sums_as_column(&sums[..groups], &seen[..groups], in_scale, out)
                {
                    v.data = data;
                    if seen[..groups].iter().any(|s| !s) {
                        v.validity = Some(seen[..groups].to_vec());
                    }
                    return Ok(v);
                }
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
                let out_scale = out.decimal_scale();
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
            Acc::Bool { vals, .. } => {
                for &b in &vals[..groups] {
                    push(
                        &mut v,
                        match b {
                            0 => Value::Null,
                            b => Value::Boolean(b == 2),
                        },
                    )?;
                }
            }
            Acc::Moment(m) => return m.finish(groups),
            Acc::Collect(c) => return c.finish(call, groups),
            Acc::Distinct(d) if call.func == AggFunc::Count => d
                .counts(groups)
                .iter()
                .try_for_each(|&c| push(&mut v, Value::BigInt(c)))?,
            Acc::Distinct(d) => {
                for g in d.values_by_group(groups)? {
                    push(&mut v, distinct_result(call, &g, in_scale)?)?;
                }
            }
        }
        Ok(v)
    }
}

/// Integer sums as their output column directly, where no value changes on the
/// way: BIGINT sums of integers, and DECIMAL(38, s) sums of decimals of scale
/// `s` that fit 38 digits (1.5 million TPC-H Q18 order sums no longer go through
/// a cast of a `Value` each). `None` leaves them to the general path, which also
/// reports an overflow. Groups never seen hold 0 (they are NULL by validity).
fn sums_as_column(sums: &[i128], seen: &[bool], in_scale: u8, out: DataType) -> Option<ColumnData> {
    let value = |g: usize| if seen[g] { sums[g] } else { 0 };
    match out {
        DataType::BigInt => (0..sums.len())
            .map(|g| i64::try_from(value(g)).ok())
            .collect::<Option<Vec<i64>>>()
            .map(ColumnData::I64),
        DataType::Decimal {
            precision: 38,
            scale,
        } if scale == in_scale => {
            let limit = pow10(38);
            (0..sums.len())
                .map(|g| Some(value(g)).filter(|x| x.unsigned_abs() < limit as u128))
                .collect::<Option<Vec<i128>>>()
                .map(ColumnData::I128)
        }
        _ => None,
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

#[cfg(test)]
mod tests;
