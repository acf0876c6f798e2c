//! An accumulator's partial state as columns: what a spilled aggregation
//! writes for its groups, and folds back into groups met again.

use kura_common::{ColumnData, DataType, Vector};

use super::Acc;
use crate::error::{ExecError, ExecResult};
use crate::ops::minmax::WIDE_STATE;

impl Acc {
    /// How many columns this accumulator's state takes when a spilled
    /// aggregation writes its groups to disk; `None` for the accumulators that
    /// keep values or several statistics per group (DISTINCT sets, collected
    /// values, moments): their aggregation spills its input rows instead.
    pub(crate) fn state_width(&self) -> Option<usize> {
        match self {
            Acc::Count(_)
            | Acc::SumInt { .. }
            | Acc::SumFloat { .. }
            | Acc::MinMax(_)
            | Acc::Bool { .. } => Some(1),
            Acc::AvgInt { .. } | Acc::AvgFloat { .. } => Some(2),
            Acc::Distinct(_) | Acc::Moment(_) | Acc::Collect(_) => None,
        }
    }

    /// Groups `from..to`'s state as [`Acc::state_width`] columns, appended to
    /// `out`: what a spilled aggregation writes instead of the rows that made
    /// it, folded back by [`Acc::merge_state`]. A sum's NULL marks a group that
    /// saw no value.
    pub(crate) fn state(&self, from: usize, to: usize, out: &mut Vec<Vector>) -> ExecResult<()> {
        let wide = |v: &[i128], seen: Option<&[bool]>| Vector {
            data_type: WIDE_STATE,
            data: ColumnData::I128(v[from..to].to_vec()),
            validity: seen.map(|s| s[from..to].to_vec()),
        };
        let float = |v: &[f64], seen: Option<&[bool]>| Vector {
            data_type: DataType::Double,
            data: ColumnData::F64(v[from..to].to_vec()),
            validity: seen.map(|s| s[from..to].to_vec()),
        };
        let count = |c: &[i64]| Vector {
            data_type: DataType::BigInt,
            data: ColumnData::I64(c[from..to].to_vec()),
            validity: None,
        };
        match self {
            Acc::Count(c) => out.push(count(c)),
            Acc::SumInt { sums, seen } => out.push(wide(sums, Some(seen))),
            Acc::SumFloat { sums, seen } => out.push(float(sums, Some(seen))),
            Acc::AvgInt { sums, counts } => out.extend([wide(sums, None), count(counts)]),
            Acc::AvgFloat { sums, counts } => out.extend([float(sums, None), count(counts)]),
            Acc::MinMax(m) => out.push(m.state(from, to)?),
            Acc::Bool { vals, .. } => out.push(Vector {
                data_type: DataType::Integer,
                data: ColumnData::I32(vals[from..to].iter().map(|&v| v as i32).collect()),
                validity: None,
            }),
            Acc::Distinct(_) | Acc::Moment(_) | Acc::Collect(_) => {
                return Err(ExecError::Internal(
                    "this aggregate's state is not written as columns".into(),
                ))
            }
        }
        Ok(())
    }

    /// Folds rows of state columns (as [`Acc::state`] wrote them) into groups
    /// `g`: row `i` into group `g[i]`.
    pub(crate) fn merge_state(&mut self, g: &[u32], cols: &[Vector]) -> ExecResult<()> {
        let mismatch = || ExecError::Internal("spilled aggregate state".into());
        let col = |i: usize| cols.get(i).ok_or_else(mismatch);
        match self {
            Acc::Count(c) => {
                let ColumnData::I64(v) = &col(0)?.data else {
                    return Err(mismatch());
                };
                g.iter().zip(v).for_each(|(&gi, x)| c[gi as usize] += x);
            }
            Acc::SumInt { sums, seen } => {
                let a = col(0)?;
                let ColumnData::I128(v) = &a.data else {
                    return Err(mismatch());
                };
                for (i, &gi) in g.iter().enumerate().filter(|(i, _)| !a.is_null(*i)) {
                    let gi = gi as usize;
                    sums[gi] = sums[gi]
                        .checked_add(v[i])
                        .ok_or_else(|| ExecError::OutOfRange("sum overflows".into()))?;
                    seen[gi] = true;
                }
            }
            Acc::SumFloat { sums, seen } => {
                let a = col(0)?;
                let ColumnData::F64(v) = &a.data else {
                    return Err(mismatch());
                };
                for (i, &gi) in g.iter().enumerate().filter(|(i, _)| !a.is_null(*i)) {
                    sums[gi as usize] += v[i];
                    seen[gi as usize] = true;
                }
            }
            Acc::AvgInt { sums, counts } => {
                let (ColumnData::I128(s), ColumnData::I64(c)) = (&col(0)?.data, &col(1)?.data)
                else {
                    return Err(mismatch());
                };
                for (i, &gi) in g.iter().enumerate() {
                    let gi = gi as usize;
                    sums[gi] = sums[gi]
                        .checked_add(s[i])
                        .ok_or_else(|| ExecError::OutOfRange("avg overflows".into()))?;
                    counts[gi] += c[i];
                }
            }
            Acc::AvgFloat { sums, counts } => {
                let (ColumnData::F64(s), ColumnData::I64(c)) = (&col(0)?.data, &col(1)?.data)
                else {
                    return Err(mismatch());
                };
                for (i, &gi) in g.iter().enumerate() {
                    sums[gi as usize] += s[i];
                    counts[gi as usize] += c[i];
                }
            }
            Acc::MinMax(m) => m.update(g, col(0)?)?,
            Acc::Bool { and, vals } => {
                let ColumnData::I32(v) = &col(0)?.data else {
                    return Err(mismatch());
                };
                for (&gi, &o) in g.iter().zip(v) {
                    let cur = &mut vals[gi as usize];
                    *cur = fold_bool(*and, *cur, o as u8);
                }
            }
            Acc::Distinct(_) | Acc::Moment(_) | Acc::Collect(_) => return Err(mismatch()),
        }
        Ok(())
    }
}

/// Two `bool_and` (`and`) / `bool_or` states combined (0: no row yet, else
/// 1 + the value so far).
pub(super) fn fold_bool(and: bool, a: u8, b: u8) -> u8 {
    match (a, b) {
        (0, o) | (o, 0) => o,
        (a, b) if and => 1 + (a == 2 && b == 2) as u8,
        (a, b) => 1 + (a == 2 || b == 2) as u8,
    }
}
