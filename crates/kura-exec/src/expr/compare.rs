//! Vectorized comparison kernels (=, <>, <, <=, >, >=) over numbers, dates, booleans and
//! text; text compares bytewise, with trailing blanks ignored when a CHAR(n) value takes
//! part (PostgreSQL's bpchar semantics) and significant between VARCHARs.

use std::cmp::Ordering;

use kura_common::{ColumnData, DataType, Value, Vector};

use super::arith::{merge_validity, rescale_all, to_f64, to_i128};
use super::BinaryOp;
use crate::error::{ExecError, ExecResult};

/// Text without trailing blanks, the form CHAR values compare in.
pub fn trim_blanks(s: &[u8]) -> &[u8] {
    let mut e = s.len();
    while e > 0 && s[e - 1] == b' ' {
        e -= 1;
    }
    &s[..e]
}

/// Whether an ordering satisfies comparison `op`.
pub(crate) fn test(op: BinaryOp, o: Ordering) -> bool {
    match op {
        BinaryOp::Eq => o == Ordering::Equal,
        BinaryOp::NotEq => o != Ordering::Equal,
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::LtEq => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        BinaryOp::GtEq => o != Ordering::Less,
        _ => false,
    }
}

/// `v op c` (or `c op v` when `constant_left`) for a text vector and a text
/// constant, without repeating the constant per row: a long literal compared
/// with a column would otherwise be copied into every row of every batch.
pub fn compare_text_constant(
    op: BinaryOp,
    v: &Vector,
    constant: &[u8],
    constant_type: DataType,
    constant_left: bool,
) -> Option<Vector> {
    let ColumnData::Str(s) = &v.data else {
        return None;
    };
    let padded =
        matches!(v.data_type, DataType::Char(_)) || matches!(constant_type, DataType::Char(_));
    let c = if padded {
        trim_blanks(constant)
    } else {
        constant
    };
    let out = (0..v.len())
        .map(|i| {
            let x = s.get_bytes(i);
            let o = if padded { trim_blanks(x) } else { x }.cmp(c);
            test(op, if constant_left { o.reverse() } else { o })
        })
        .collect();
    Some(Vector {
        data_type: DataType::Boolean,
        data: ColumnData::Bool(out),
        validity: v.validity.clone().filter(|m| m.iter().any(|b| !*b)),
    })
}

/// A non-NULL numeric, date or timestamp constant as a value of a column of
/// type `column` stored in 64 bits or fewer (a decimal rescaled to the
/// column's scale); `None` when the types do not compare this way, the constant
/// has more decimal places than the column, or it does not fit 64 bits at the
/// column's scale (the general path decides those).
pub fn constant_in_width(
    column: DataType,
    constant: &Value,
    constant_type: DataType,
) -> Option<i64> {
    let numeric = |t: DataType| t.is_integer() || matches!(t, DataType::Decimal { .. });
    let comparable = (numeric(column) && numeric(constant_type))
        || (column == DataType::Date && constant_type == DataType::Date)
        || (column == DataType::Timestamp && constant_type == DataType::Timestamp);
    if !comparable {
        return None;
    }
    let (c, t) = match *constant {
        Value::Integer(x) => (x as i128, 0),
        Value::BigInt(x) | Value::Timestamp(x) => (x as i128, 0),
        Value::Date(x) => (x as i128, 0),
        Value::Decimal(x, scale) => (x, scale),
        _ => return None,
    };
    let s = column.decimal_scale();
    if t > s {
        return None;
    }
    i64::try_from(c.checked_mul(kura_common::decimal::pow10((s - t) as u32))?).ok()
}

/// `v op c` (or `c op v` when `constant_left`) for an integer, decimal, date or
/// timestamp vector in 32 or 64 bits and a non-NULL constant of a comparable type,
/// compared in the vector's own width with one loop per operator: no copy of the
/// constant per row, no widening to 128 bits. `None` when the constant has more
/// decimal places than the vector (or does not fit 64 bits at its scale): the
/// general path decides those.
pub fn compare_constant(
    op: BinaryOp,
    v: &Vector,
    constant: &Value,
    constant_type: DataType,
    constant_left: bool,
) -> Option<Vector> {
    let c = constant_in_width(v.data_type, constant, constant_type)?;
    let op = if constant_left { op.flip() } else { op };
    macro_rules! by_op {
        ($x:expr, $c:expr) => {{
            let (x, c) = ($x, $c);
            match op {
                BinaryOp::Eq => x.iter().map(|&a| a == c).collect(),
                BinaryOp::NotEq => x.iter().map(|&a| a != c).collect(),
                BinaryOp::Lt => x.iter().map(|&a| a < c).collect(),
                BinaryOp::LtEq => x.iter().map(|&a| a <= c).collect(),
                BinaryOp::Gt => x.iter().map(|&a| a > c).collect(),
                BinaryOp::GtEq => x.iter().map(|&a| a >= c).collect(),
                _ => return None,
            }
        }};
    }
    let out: Vec<bool> = match &v.data {
        ColumnData::I64(x) => by_op!(x, c),
        ColumnData::I32(x) => match i32::try_from(c) {
            Ok(c) => by_op!(x, c),
            // Beyond every 32-bit value: compare in 64 bits (rare).
            Err(_) => {
                let wide: Vec<i64> = x.iter().map(|&a| a as i64).collect();
                by_op!(&wide, c)
            }
        },
        _ => return None,
    };
    Some(Vector {
        data_type: DataType::Boolean,
        data: ColumnData::Bool(out),
        validity: v.validity.clone().filter(|m| m.iter().any(|b| !*b)),
    })
}

/// `l op r` as a BOOLEAN vector (NULL where either side is NULL).
pub fn compare(op: BinaryOp, l: &Vector, r: &Vector) -> ExecResult<Vector> {
    let validity = merge_validity(&l.validity, &r.validity);
    let n = l.len();
    let out: Vec<bool> = match (&l.data, &r.data) {
        (ColumnData::Str(a), ColumnData::Str(b)) => {
            let padded = matches!(l.data_type, DataType::Char(_))
                || matches!(r.data_type, DataType::Char(_));
            if padded {
                (0..n)
                    .map(|i| {
                        test(
                            op,
                            trim_blanks(a.get_bytes(i)).cmp(trim_blanks(b.get_bytes(i))),
                        )
                    })
                    .collect()
            } else {
                (0..n)
                    .map(|i| test(op, a.get_bytes(i).cmp(b.get_bytes(i))))
                    .collect()
            }
        }
        (ColumnData::Bool(a), ColumnData::Bool(b)) => {
            (0..n).map(|i| test(op, a[i].cmp(&b[i]))).collect()
        }
        // SMALLINT and INTEGER are both held in 32 bits: compared as they are.
        (ColumnData::I32(a), ColumnData::I32(b))
            if l.data_type == r.data_type
                || (l.data_type.is_integer() && r.data_type.is_integer()) =>
        {
            (0..n).map(|i| test(op, a[i].cmp(&b[i]))).collect()
        }
        (ColumnData::I64(a), ColumnData::I64(b)) if l.data_type == r.data_type => {
            (0..n).map(|i| test(op, a[i].cmp(&b[i]))).collect()
        }
        (ColumnData::F64(_), _) | (_, ColumnData::F64(_)) => {
            let a = to_f64(l);
            let b = to_f64(r);
            (0..n).map(|i| test(op, a[i].total_cmp(&b[i]))).collect()
        }
        (ColumnData::Str(_), _)
        | (_, ColumnData::Str(_))
        | (ColumnData::Bool(_), _)
        | (_, ColumnData::Bool(_)) => {
            return Err(ExecError::Internal(format!(
                "cannot compare {} with {}",
                l.data_type, r.data_type
            )))
        }
        _ => {
            let (sa, sb) = (l.data_type.decimal_scale(), r.data_type.decimal_scale());
            let s = sa.max(sb);
            let mut a = to_i128(l);
            let mut b = to_i128(r);
            rescale_all(&mut a, sa, s)?;
            rescale_all(&mut b, sb, s)?;
            (0..n).map(|i| test(op, a[i].cmp(&b[i]))).collect()
        }
    };
    Ok(Vector {
        data_type: DataType::Boolean,
        data: ColumnData::Bool(out),
        validity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::eval::broadcast;
    use proptest::prelude::*;

    const OPS: [BinaryOp; 6] = [
        BinaryOp::Eq,
        BinaryOp::NotEq,
        BinaryOp::Lt,
        BinaryOp::LtEq,
        BinaryOp::Gt,
        BinaryOp::GtEq,
    ];

    fn dec(scale: u8) -> DataType {
        DataType::Decimal {
            precision: 15,
            scale,
        }
    }

    /// The constant path against the general one (the constant copied per row).
    fn check(v: &Vector, c: &Value, ct: DataType) {
        for op in OPS {
            for left in [false, true] {
                let Some(fast) = compare_constant(op, v, c, ct, left) else {
                    continue;
                };
                let b = broadcast(c, ct, v.len()).unwrap();
                let slow = if left {
                    compare(op, &b, v).unwrap()
                } else {
                    compare(op, v, &b).unwrap()
                };
                for i in 0..v.len() {
                    assert_eq!(fast.is_null(i), slow.is_null(i), "{op:?} {left} row {i}");
                    if !fast.is_null(i) {
                        assert_eq!(fast.get_value(i), slow.get_value(i), "{op:?} {left} {c}");
                    }
                }
            }
        }
    }

    #[test]
    fn decimal_column_with_integer_and_decimal_constants() {
        let qty = Vector::from_values(
            dec(2),
            &[
                Value::Decimal(2300, 2),
                Value::Decimal(2400, 2),
                Value::Null,
            ],
        )
        .unwrap();
        let lt = compare_constant(
            BinaryOp::Lt,
            &qty,
            &Value::Integer(24),
            DataType::Integer,
            false,
        )
        .unwrap();
        assert_eq!(lt.get_value(0), Value::Boolean(true));
        assert_eq!(lt.get_value(1), Value::Boolean(false));
        assert!(lt.is_null(2));
        check(&qty, &Value::Integer(24), DataType::Integer);
        check(&qty, &Value::Decimal(5, 2), dec(2));
        // More decimal places than the column: the general path decides.
        assert!(
            compare_constant(BinaryOp::Lt, &qty, &Value::Decimal(23001, 3), dec(3), false)
                .is_none()
        );
        // Dates compare with dates only.
        assert!(
            compare_constant(BinaryOp::Lt, &qty, &Value::Date(5), DataType::Date, false).is_none()
        );
    }

    #[test]
    fn integer_column_with_a_constant_beyond_32_bits() {
        let v = Vector::from_values(
            DataType::Integer,
            &[Value::Integer(i32::MAX), Value::Integer(-5)],
        )
        .unwrap();
        check(&v, &Value::BigInt(i32::MAX as i64 + 1), DataType::BigInt);
        check(&v, &Value::BigInt(i32::MIN as i64 - 1), DataType::BigInt);
    }

    proptest! {
        #[test]
        fn constant_path_equals_general_path(
            vals in proptest::collection::vec(proptest::option::of(-100_000i64..100_000), 1..50),
            c in -100_000i64..100_000, vs in 0u8..4, cs in 0u8..4, date in any::<bool>(),
        ) {
            if date {
                let v: Vec<Value> = vals.iter().map(|x| x.map_or(Value::Null, |x| Value::Date(x as i32))).collect();
                let v = Vector::from_values(DataType::Date, &v).unwrap();
                check(&v, &Value::Date(c as i32), DataType::Date);
            } else {
                let v: Vec<Value> = vals.iter().map(|x| x.map_or(Value::Null, |x| Value::Decimal(x as i128, vs))).collect();
                let v = Vector::from_values(dec(vs), &v).unwrap();
                check(&v, &Value::Decimal(c as i128, cs), dec(cs));
                check(&v, &Value::BigInt(c), DataType::BigInt);
            }
        }
    }
}
