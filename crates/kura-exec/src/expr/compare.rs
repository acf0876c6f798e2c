//! Vectorized comparison kernels (=, <>, <, <=, >, >=) over numbers, dates, booleans and
//! text; text compares bytewise, with trailing blanks ignored when a CHAR(n) value takes
//! part (PostgreSQL's bpchar semantics) and significant between VARCHARs.

use std::cmp::Ordering;

use kura_common::{ColumnData, DataType, Vector};

use super::arith::{merge_validity, rescale_all, scale_of, to_f64, to_i128};
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

fn test(op: BinaryOp, o: Ordering) -> bool {
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
        (ColumnData::I32(a), ColumnData::I32(b)) if l.data_type == r.data_type => {
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
            let (sa, sb) = (scale_of(l.data_type), scale_of(r.data_type));
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
