//! Vectorized arithmetic kernels: exact scaled-integer math for INTEGER/BIGINT/DECIMAL
//! (i128 intermediates, PostgreSQL scale rules decided by the planner) and f64 for DOUBLE.

use kura_common::decimal::pow10;
use kura_common::{ColumnData, DataType, Vector};

use super::arith_narrow;
use super::BinaryOp;
use crate::error::{ExecError, ExecResult};

/// Integer-like values widened to i128 (their scale is the vector type's scale).
pub fn to_i128(v: &Vector) -> Vec<i128> {
    match &v.data {
        ColumnData::I32(x) => x.iter().map(|&a| a as i128).collect(),
        ColumnData::I64(x) => x.iter().map(|&a| a as i128).collect(),
        ColumnData::I128(x) => x.clone(),
        ColumnData::Bool(x) => x.iter().map(|&a| a as i128).collect(),
        ColumnData::F64(x) => x.iter().map(|&a| a as i128).collect(),
        ColumnData::Str(s) => vec![0; s.len()],
    }
}

/// Any numeric vector as f64.
pub fn to_f64(v: &Vector) -> Vec<f64> {
    let s = v.data_type.decimal_scale();
    let div = 10f64.powi(s as i32);
    match &v.data {
        ColumnData::F64(x) => x.clone(),
        ColumnData::I32(x) => x.iter().map(|&a| a as f64 / div).collect(),
        ColumnData::I64(x) => x.iter().map(|&a| a as f64 / div).collect(),
        ColumnData::I128(x) => x.iter().map(|&a| a as f64 / div).collect(),
        ColumnData::Bool(x) => x.iter().map(|&a| a as u8 as f64).collect(),
        ColumnData::Str(s) => vec![0.0; s.len()],
    }
}

/// Any numeric vector as f64, borrowed when it already is one (no copy on the hot path).
pub fn f64_view(v: &Vector) -> std::borrow::Cow<'_, [f64]> {
    match &v.data {
        ColumnData::F64(x) => std::borrow::Cow::Borrowed(x),
        _ => std::borrow::Cow::Owned(to_f64(v)),
    }
}

/// Rescales every value from scale `from` to `to` (rounding half away from zero).
pub fn rescale_all(v: &mut [i128], from: u8, to: u8) -> ExecResult<()> {
    if from == to {
        return Ok(());
    }
    if to > from {
        let m = pow10((to - from) as u32);
        for x in v.iter_mut() {
            *x = x
                .checked_mul(m)
                .ok_or_else(|| ExecError::OutOfRange("decimal rescale".into()))?;
        }
    } else {
        let d = pow10((from - to) as u32);
        for x in v.iter_mut() {
            let q = *x / d;
            let r = *x % d;
            *x = if r.abs() * 2 >= d { q + x.signum() } else { q };
        }
    }
    Ok(())
}

/// Builds a vector of type `dt` from i128 values already at `dt`'s scale.
pub fn from_i128(vals: Vec<i128>, validity: Option<Vec<bool>>, dt: DataType) -> ExecResult<Vector> {
    let valid = |i: usize| validity.as_ref().is_none_or(|v| v[i]);
    let data = match dt {
        DataType::SmallInt | DataType::Integer => {
            let (lo, hi) = dt.integer_range().unwrap_or_default();
            let mut out = Vec::with_capacity(vals.len());
            for (i, &x) in vals.iter().enumerate() {
                match x {
                    _ if (lo as i128..=hi as i128).contains(&x) => out.push(x as i32),
                    _ if !valid(i) => out.push(0),
                    _ => return Err(ExecError::integer_out_of_range(dt)),
                }
            }
            ColumnData::I32(out)
        }
        DataType::Date => {
            let mut out = Vec::with_capacity(vals.len());
            for (i, &x) in vals.iter().enumerate() {
                match i32::try_from(x) {
                    Ok(y) => out.push(y),
                    Err(_) if !valid(i) => out.push(0),
                    Err(_) => return Err(ExecError::OutOfRange(format!("{x} does not fit {dt}"))),
                }
            }
            ColumnData::I32(out)
        }
        DataType::Double => ColumnData::F64(vals.iter().map(|&x| x as f64).collect()),
        _ if dt.physical() == kura_common::types::PhysicalType::I64 => {
            let mut out = Vec::with_capacity(vals.len());
            for (i, &x) in vals.iter().enumerate() {
                match i64::try_from(x) {
                    Ok(y) => out.push(y),
                    Err(_) if !valid(i) => out.push(0),
                    Err(_) if dt == DataType::BigInt => {
                        return Err(ExecError::integer_out_of_range(dt))
                    }
                    Err(_) => {
                        return Err(ExecError::OutOfRange(format!("value does not fit {dt}")))
                    }
                }
            }
            ColumnData::I64(out)
        }
        _ => ColumnData::I128(vals),
    };
    Ok(Vector {
        data_type: dt,
        data,
        validity,
    })
}

pub fn merge_validity(a: &Option<Vec<bool>>, b: &Option<Vec<bool>>) -> Option<Vec<bool>> {
    match (a, b) {
        (None, None) => None,
        (Some(a), None) => Some(a.clone()),
        (None, Some(b)) => Some(b.clone()),
        (Some(a), Some(b)) => Some(a.iter().zip(b).map(|(x, y)| *x && *y).collect()),
    }
}

/// `l op r` for arithmetic `op`, producing type `out`.
pub fn arithmetic(op: BinaryOp, l: &Vector, r: &Vector, out: DataType) -> ExecResult<Vector> {
    let validity = merge_validity(&l.validity, &r.validity);
    let valid = |i: usize| validity.as_ref().is_none_or(|v| v[i]);
    if out == DataType::Double {
        let (a, b) = (f64_view(l), f64_view(r));
        let (a, b) = (&a[..], &b[..]);
        // One loop per operator (not a match per row), so each one vectorizes.
        fn each(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
            a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
        }
        let res = match op {
            BinaryOp::Add => each(a, b, |x, y| x + y),
            BinaryOp::Sub => each(a, b, |x, y| x - y),
            BinaryOp::Mul => each(a, b, |x, y| x * y),
            BinaryOp::Div | BinaryOp::Mod => {
                if (0..a.len().min(b.len())).any(|i| b[i] == 0.0 && valid(i)) {
                    return Err(ExecError::DivisionByZero);
                }
                if op == BinaryOp::Div {
                    each(a, b, |x, y| x / y)
                } else {
                    each(a, b, |x, y| x % y)
                }
            }
            _ => return Err(ExecError::Internal(format!("{op:?} is not arithmetic"))),
        };
        return Ok(Vector {
            data_type: out,
            data: ColumnData::F64(res),
            validity,
        });
    }
    if let Some(v) = arith_narrow::arithmetic(op, l, r, out, &validity) {
        return Ok(v);
    }
    wide(op, l, r, out, validity)
}

/// `l op r` for integer and decimal `op` in exact 128-bit arithmetic, the path
/// every value takes when the 64-bit one cannot answer.
pub(super) fn wide(
    op: BinaryOp,
    l: &Vector,
    r: &Vector,
    out: DataType,
    validity: Option<Vec<bool>>,
) -> ExecResult<Vector> {
    let valid = |i: usize| validity.as_ref().is_none_or(|v| v[i]);
    let (sa, sb, so) = (
        l.data_type.decimal_scale(),
        r.data_type.decimal_scale(),
        out.decimal_scale(),
    );
    let mut a = to_i128(l);
    let mut b = to_i128(r);
    let overflow =
        || ExecError::OutOfRange(format!("result of {} does not fit {out}", op.symbol()));
    let mut res = Vec::with_capacity(a.len());
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mod => {
            let s = sa.max(sb);
            rescale_all(&mut a, sa, s)?;
            rescale_all(&mut b, sb, s)?;
            for i in 0..a.len() {
                let v = match op {
                    BinaryOp::Add => a[i].checked_add(b[i]),
                    BinaryOp::Sub => a[i].checked_sub(b[i]),
                    _ => {
                        if b[i] == 0 {
                            if valid(i) {
                                return Err(ExecError::DivisionByZero);
                            }
                            Some(0)
                        } else {
                            Some(a[i] % b[i])
                        }
                    }
                };
                res.push(v.ok_or_else(overflow)?);
            }
            rescale_all(&mut res, s, so)?;
        }
        BinaryOp::Mul => {
            for i in 0..a.len() {
                res.push(a[i].checked_mul(b[i]).ok_or_else(overflow)?);
            }
            rescale_all(&mut res, sa + sb, so)?;
        }
        BinaryOp::Div => {
            // q = a / b at scale so: a·10^(so - sa + sb) / b, rounded half away from zero
            // for decimals, truncated for integers (PostgreSQL integer division).
            let shift = so as i32 - sa as i32 + sb as i32;
            let is_int = !matches!(out, DataType::Decimal { .. });
            for i in 0..a.len() {
                if b[i] == 0 {
                    if valid(i) {
                        return Err(ExecError::DivisionByZero);
                    }
                    res.push(0);
                    continue;
                }
                let (num, den) = if shift >= 0 {
                    (a[i].checked_mul(pow10(shift as u32)), Some(b[i]))
                } else {
                    (Some(a[i]), b[i].checked_mul(pow10((-shift) as u32)))
                };
                let v = match (num, den) {
                    (Some(n), Some(d)) if is_int => n / d,
                    (Some(n), Some(d)) => {
                        kura_common::decimal::div_round(n, d).ok_or_else(overflow)?
                    }
                    _ => {
                        // Too wide for i128: fall back to f64, exact enough for the digits kept.
                        let f = a[i] as f64 / b[i] as f64 * 10f64.powi(shift);
                        f.round() as i128
                    }
                };
                res.push(v);
            }
        }
        _ => return Err(ExecError::Internal(format!("{op:?} is not arithmetic"))),
    }
    from_i128(res, validity, out)
}
