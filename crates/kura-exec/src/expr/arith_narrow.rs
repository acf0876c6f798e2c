//! The 64-bit path of decimal and integer arithmetic: `+`, `-` and `*` on values that
//! fit 64 bits are computed with one machine instruction per row and an overflow
//! flag, instead of widening both operands to 128 bits (decimals as scaled 64-bit
//! integers, 128 bits only where needed).
//! Any overflow, in any row, hands the whole vector back to the exact 128-bit path,
//! which gives the same answer or the same error: this path only ever skips work.

use std::borrow::Cow;

use kura_common::decimal::pow10;
use kura_common::types::PhysicalType;
use kura_common::{ColumnData, DataType, Value, Vector};

use crate::expr::BinaryOp;

/// `l op r` in 64-bit arithmetic, or `None` when the 128-bit path must decide
/// (an operand or an intermediate beyond 64 bits, or an operator not handled).
pub fn arithmetic(
    op: BinaryOp,
    l: &Vector,
    r: &Vector,
    out: DataType,
    validity: &Option<Vec<bool>>,
) -> Option<Vector> {
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
        return None;
    }
    let (sa, sb, so) = (
        l.data_type.decimal_scale(),
        r.data_type.decimal_scale(),
        out.decimal_scale(),
    );
    let a = as_i64(l)?;
    let b = as_i64(r)?;
    if a.len() != b.len() {
        return None;
    }
    let (res, s) = match op {
        BinaryOp::Mul => (mul(&a, &b)?, sa + sb),
        _ => {
            let s = sa.max(sb);
            let a = scale_up(a, s - sa)?;
            let b = scale_up(b, s - sb)?;
            (add_sub(&a, &b, op == BinaryOp::Sub)?, s)
        }
    };
    finish(res, s, so, out, validity.clone())
}

/// `v op c` (`c op v` when `constant_left`) for a non-NULL integer or decimal
/// constant `c` of type `c_type`, in one pass over `v` without materializing
/// the constant (TPC-H Q1's `1 - l_discount`, `1 + l_tax`); `None` as for
/// [`arithmetic`].
pub fn with_constant(
    op: BinaryOp,
    v: &Vector,
    c: &Value,
    c_type: DataType,
    constant_left: bool,
    out: DataType,
) -> Option<Vector> {
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
        return None;
    }
    let (sv, sc, so) = (
        v.data_type.decimal_scale(),
        c_type.decimal_scale(),
        out.decimal_scale(),
    );
    let c: i64 = match (c, c_type) {
        (Value::Integer(x), t) if t.is_integer() => *x as i64,
        (Value::BigInt(x), t) if t.is_integer() => *x,
        (Value::Decimal(x, s), DataType::Decimal { scale, .. }) if *s == scale => {
            i64::try_from(*x).ok()?
        }
        _ => return None,
    };
    let a = as_i64(v)?;
    let mut overflow = false;
    let (res, s): (Vec<i64>, u8) = match op {
        BinaryOp::Mul => (
            map_flagged(&a, &mut overflow, |x| x.overflowing_mul(c)),
            sv + sc,
        ),
        _ => {
            let s = sv.max(sc);
            let c = c.checked_mul(i64::try_from(pow10((s - sc) as u32)).ok()?)?;
            let a = scale_up(a, s - sv)?;
            // One loop per operator, so each is a plain (vectorizable) pass.
            let res = match (op == BinaryOp::Sub, constant_left) {
                (false, _) => map_flagged(&a, &mut overflow, |x| x.overflowing_add(c)),
                (true, false) => map_flagged(&a, &mut overflow, |x| x.overflowing_sub(c)),
                (true, true) => map_flagged(&a, &mut overflow, |x| c.overflowing_sub(x)),
            };
            (res, s)
        }
    };
    if overflow {
        return None;
    }
    finish(res, s, so, out, v.validity.clone())
}

/// `f` of every value, `overflow` set when `f` says so for any.
#[inline(always)]
fn map_flagged(a: &[i64], overflow: &mut bool, f: impl Fn(i64) -> (i64, bool)) -> Vec<i64> {
    // A plain loop over a zeroed output with the flag a local: flags kept in a
    // variable that `map`'s closure captured were stored to memory every row,
    // and each row waited for the previous row's store (TPC-H Q1's
    // `1 - l_discount` cost 3 ns a row).
    let mut out = vec![0i64; a.len()];
    let mut o = false;
    for (z, &x) in out.iter_mut().zip(a) {
        let (r, flag) = f(x);
        *z = r;
        o |= flag;
    }
    *overflow |= o;
    out
}

/// `f` of every pair of values, as [`map_flagged`]; `None` when `f` flagged any.
#[inline(always)]
fn zip_flagged(a: &[i64], b: &[i64], f: impl Fn(i64, i64) -> (i64, bool)) -> Option<Vec<i64>> {
    let mut out = vec![0i64; a.len().min(b.len())];
    let mut o = false;
    for ((z, &x), &y) in out.iter_mut().zip(a).zip(b) {
        let (r, flag) = f(x, y);
        *z = r;
        o |= flag;
    }
    (!o).then_some(out)
}

/// Results `res` at scale `s` as a vector of type `out` (scale `so`).
fn finish(
    res: Vec<i64>,
    s: u8,
    so: u8,
    out: DataType,
    validity: Option<Vec<bool>>,
) -> Option<Vector> {
    let res = rescale(res, s, so)?;
    let data = match out.physical() {
        PhysicalType::I64 if out != DataType::Double => ColumnData::I64(res),
        PhysicalType::I128 => ColumnData::I128(res.into_iter().map(i128::from).collect()),
        PhysicalType::I32 => {
            // A SMALLINT result is held in 32 bits but must fit 16: one beyond
            // goes to the 128-bit path, which raises the error.
            let (lo, hi) = match out {
                DataType::SmallInt => (i16::MIN as i64, i16::MAX as i64),
                _ => (i32::MIN as i64, i32::MAX as i64),
            };
            let mut v = Vec::with_capacity(res.len());
            for x in res {
                if !(lo..=hi).contains(&x) {
                    return None;
                }
                v.push(x as i32);
            }
            ColumnData::I32(v)
        }
        _ => return None,
    };
    Some(Vector {
        data_type: out,
        data,
        validity,
    })
}

/// The values as i64, borrowed where they already are; `None` for non-integer
/// data or a 128-bit value beyond 64 bits (NULL slots included: the 128-bit path
/// knows to ignore them).
fn as_i64(v: &Vector) -> Option<Cow<'_, [i64]>> {
    match &v.data {
        ColumnData::I64(x) => Some(Cow::Borrowed(x)),
        ColumnData::I32(x) => Some(Cow::Owned(x.iter().map(|&a| a as i64).collect())),
        ColumnData::I128(x) => {
            // Every value narrowed, then one test that none lost bits: no
            // early exit, so the loop has no branch per row.
            let mut out = vec![0i64; x.len()];
            let mut lost = false;
            for (o, &a) in out.iter_mut().zip(x) {
                *o = a as i64;
                lost |= *o as i128 != a;
            }
            (!lost).then_some(Cow::Owned(out))
        }
        _ => None,
    }
}

/// Multiplies every value by 10^by; `None` on overflow.
fn scale_up(v: Cow<'_, [i64]>, by: u8) -> Option<Cow<'_, [i64]>> {
    if by == 0 {
        return Some(v);
    }
    let m = i64::try_from(pow10(by as u32)).ok()?;
    let mut overflow = false;
    let out = map_flagged(&v, &mut overflow, |x| x.overflowing_mul(m));
    (!overflow).then_some(Cow::Owned(out))
}

fn add_sub(a: &[i64], b: &[i64], sub: bool) -> Option<Vec<i64>> {
    if sub {
        zip_flagged(a, b, i64::overflowing_sub)
    } else {
        zip_flagged(a, b, i64::overflowing_add)
    }
}

fn mul(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    zip_flagged(a, b, i64::overflowing_mul)
}

/// From scale `from` to `to`, rounding half away from zero as the 128-bit path does.
fn rescale(v: Vec<i64>, from: u8, to: u8) -> Option<Vec<i64>> {
    if from == to {
        return Some(v);
    }
    if to > from {
        return scale_up(Cow::Owned(v), to - from).map(Cow::into_owned);
    }
    let d = i64::try_from(pow10((from - to) as u32)).ok()?;
    Some(
        v.into_iter()
            .map(|x| {
                let (q, r) = (x / d, x % d);
                // |r| < d ≤ 10^18, so 2·|r| fits.
                if r.abs() * 2 >= d {
                    q + x.signum()
                } else {
                    q
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dec(precision: u8, scale: u8) -> DataType {
        DataType::Decimal { precision, scale }
    }

    fn vector(dt: DataType, vals: &[i128]) -> Vector {
        let data = match dt.physical() {
            PhysicalType::I32 => ColumnData::I32(vals.iter().map(|&x| x as i32).collect()),
            PhysicalType::I64 => ColumnData::I64(vals.iter().map(|&x| x as i64).collect()),
            _ => ColumnData::I128(vals.to_vec()),
        };
        Vector {
            data_type: dt,
            data,
            validity: None,
        }
    }

    /// The exact 128-bit path on its own, for comparison.
    fn wide(op: BinaryOp, l: &Vector, r: &Vector, out: DataType) -> Result<Vector, String> {
        crate::expr::arith::wide(op, l, r, out, None).map_err(|e| e.to_string())
    }

    #[test]
    fn tpch_q1_expressions_take_the_narrow_path() {
        let price = vector(dec(15, 2), &[900_300, 500_000, 10_494_950]);
        let disc = vector(dec(15, 2), &[4, 10, 0]);
        let one = vector(DataType::Integer, &[1, 1, 1]);
        let one_minus = arithmetic(BinaryOp::Sub, &one, &disc, dec(16, 2), &None).unwrap();
        assert_eq!(one_minus.data, ColumnData::I64(vec![96, 90, 100]));
        let disc_price = arithmetic(BinaryOp::Mul, &price, &one_minus, dec(31, 4), &None).unwrap();
        assert_eq!(
            disc_price.data,
            ColumnData::I128(vec![86_428_800, 45_000_000, 1_049_495_000])
        );
    }

    #[test]
    fn overflow_hands_over_to_the_wide_path() {
        let big = vector(DataType::BigInt, &[i64::MAX as i128, 2]);
        let two = vector(DataType::BigInt, &[2, 2]);
        assert!(arithmetic(BinaryOp::Mul, &big, &two, dec(38, 0), &None).is_none());
        assert!(arithmetic(BinaryOp::Add, &big, &two, dec(38, 0), &None).is_none());
        let wide_val = vector(dec(38, 0), &[i64::MAX as i128 + 1, 0]);
        assert!(arithmetic(BinaryOp::Sub, &wide_val, &two, dec(38, 0), &None).is_none());
        // A scale change that overflows 64 bits.
        let scaled = vector(dec(18, 0), &[i64::MAX as i128 / 10, 0]);
        let frac = vector(dec(18, 2), &[1, 1]);
        assert!(arithmetic(BinaryOp::Add, &scaled, &frac, dec(38, 2), &None).is_none());
        // Division and modulo are not taken.
        assert!(arithmetic(BinaryOp::Div, &two, &two, DataType::BigInt, &None).is_none());
    }

    #[test]
    fn smallint_results_beyond_16_bits_take_the_wide_path_and_fail() {
        let s = |vals: &[i128]| vector(DataType::SmallInt, vals);
        let out = DataType::SmallInt;
        let sum = arithmetic(BinaryOp::Add, &s(&[1, 32766]), &s(&[2, 1]), out, &None).unwrap();
        assert_eq!(sum.data, ColumnData::I32(vec![3, 32767]));
        assert!(arithmetic(BinaryOp::Add, &s(&[32767]), &s(&[1]), out, &None).is_none());
        assert!(with_constant(
            BinaryOp::Mul,
            &s(&[200]),
            &Value::Integer(200),
            out,
            false,
            out
        )
        .is_none());
        let err = crate::expr::arith::arithmetic(BinaryOp::Sub, &s(&[-32768]), &s(&[1]), out)
            .unwrap_err();
        assert_eq!(err.to_string(), "smallint out of range");
    }

    #[test]
    fn a_constant_operand_is_not_materialized_and_matches_the_vector_path() {
        let disc = vector(dec(15, 2), &[4, 10, 0]);
        let one_minus = with_constant(
            BinaryOp::Sub,
            &disc,
            &Value::Integer(1),
            DataType::Integer,
            true,
            dec(16, 2),
        )
        .unwrap();
        assert_eq!(one_minus.data, ColumnData::I64(vec![96, 90, 100]));
        // Division is not taken; a constant that does not match its type is not either.
        assert!(with_constant(
            BinaryOp::Div,
            &disc,
            &Value::Integer(1),
            DataType::Integer,
            false,
            dec(16, 2)
        )
        .is_none());
        assert!(with_constant(
            BinaryOp::Add,
            &disc,
            &Value::Integer(1),
            dec(5, 2),
            false,
            dec(16, 2)
        )
        .is_none());
        // Overflow hands over to the wide path.
        let big = vector(DataType::BigInt, &[i64::MAX as i128 - 1]);
        assert!(with_constant(
            BinaryOp::Add,
            &big,
            &Value::BigInt(2),
            DataType::BigInt,
            false,
            dec(38, 0)
        )
        .is_none());
        assert!(with_constant(
            BinaryOp::Sub,
            &big,
            &Value::BigInt(-2),
            DataType::BigInt,
            true,
            dec(38, 0)
        )
        .is_some());
    }

    proptest! {
        /// A constant operand gives what the same constant broadcast to a
        /// vector gives on the 128-bit path, on either side, at any scales.
        #[test]
        fn constant_equals_broadcast(
            vals in proptest::collection::vec(-10_000_000_000i64..10_000_000_000, 1..40),
            c in -1_000_000i64..1_000_000,
            sv in 0u8..5, sc in 0u8..5, so in 0u8..9, op in 0..3usize, left in any::<bool>(),
        ) {
            let op = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul][op];
            let v = vector(dec(18, sv), &vals.iter().map(|&x| x as i128).collect::<Vec<_>>());
            let cv = vector(dec(18, sc), &vec![c as i128; vals.len()]);
            for out in [dec(38, so), dec(18, so)] {
                let got = with_constant(op, &v, &Value::Decimal(c as i128, sc), dec(18, sc), left, out);
                let (l, r) = if left { (&cv, &v) } else { (&v, &cv) };
                if let Some(got) = got {
                    prop_assert_eq!(Ok(got.data), wide(op, l, r, out).map(|w| w.data));
                }
            }
        }

        /// Wherever the 64-bit path answers, its answer is the 128-bit path's.
        #[test]
        fn narrow_equals_wide(
            vals in proptest::collection::vec((-10_000_000_000i64..10_000_000_000, -1_000_000i64..1_000_000), 1..40),
            sa in 0u8..5, sb in 0u8..5, so in 0u8..9, op in 0..3usize,
        ) {
            let op = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul][op];
            let l = vector(dec(18, sa), &vals.iter().map(|v| v.0 as i128).collect::<Vec<_>>());
            let r = vector(dec(18, sb), &vals.iter().map(|v| v.1 as i128).collect::<Vec<_>>());
            let out = dec(38, so);
            if let Some(v) = arithmetic(op, &l, &r, out, &None) {
                let w = wide(op, &l, &r, out).unwrap();
                prop_assert_eq!(v.data, w.data);
            }
            let out18 = dec(18, so);
            if let Some(v) = arithmetic(op, &l, &r, out18, &None) {
                prop_assert_eq!(Ok(v.data), wide(op, &l, &r, out18).map(|w| w.data));
            }
        }
    }
}
