//! PostgreSQL's bitwise operators on integers: `&`, `|`, `#` (exclusive or),
//! `~` (not), `<<` and `>>`. A shift counts modulo the width the operand is
//! shifted in (32 bits for smallint and integer, 64 for bigint), as
//! PostgreSQL's C shifts do on the machines it runs on; a smallint shifted
//! left keeps its low 16 bits.

use kura_common::{DataType, Value, Vector};

use super::ScalarFunc;
use crate::error::ExecResult;

/// Row `r` of argument `i` as an integer (`None` for NULL).
fn int(args: &[Vector], i: usize, r: usize) -> Option<i64> {
    args.get(i).and_then(|v| v.get_value(r).as_i64())
}

/// `a op b` in `out`'s width (the operands are of it, or narrower).
fn apply(func: ScalarFunc, a: i64, b: i64, out: DataType) -> i64 {
    match func {
        ScalarFunc::BitAnd => a & b,
        ScalarFunc::BitOr => a | b,
        ScalarFunc::BitXor => a ^ b,
        ScalarFunc::BitNot => !a,
        ScalarFunc::ShiftLeft | ScalarFunc::ShiftRight => {
            let left = func == ScalarFunc::ShiftLeft;
            match out {
                DataType::BigInt if left => a.wrapping_shl(b as u32),
                DataType::BigInt => a.wrapping_shr(b as u32),
                _ => {
                    let x = a as i32;
                    let shifted = if left {
                        x.wrapping_shl(b as u32)
                    } else {
                        x.wrapping_shr(b as u32)
                    };
                    if out == DataType::SmallInt {
                        i64::from(shifted as i16)
                    } else {
                        i64::from(shifted)
                    }
                }
            }
        }
        _ => 0,
    }
}

/// Applies one of this module's operators to argument vectors of `n` rows.
pub fn call(func: ScalarFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    super::row_kernel::row_by_row(func.name(), out, n, |r| {
        let a = int(args, 0, r);
        let b = if func == ScalarFunc::BitNot {
            Some(0)
        } else {
            int(args, 1, r)
        };
        Ok(match (a, b) {
            (Some(a), Some(b)) => {
                let x = apply(func, a, b, out);
                match out {
                    DataType::BigInt => Value::BigInt(x),
                    _ => Value::Integer(x as i32),
                }
            }
            _ => Value::Null,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_follow_postgresql() {
        use DataType::{BigInt, Integer, SmallInt};
        assert_eq!(apply(ScalarFunc::BitAnd, 12, 10, Integer), 8);
        assert_eq!(apply(ScalarFunc::BitOr, 12, 10, Integer), 14);
        assert_eq!(apply(ScalarFunc::BitXor, 12, 10, Integer), 6);
        assert_eq!(apply(ScalarFunc::BitNot, 5, 0, Integer), -6);
        assert_eq!(apply(ScalarFunc::ShiftLeft, 1, 15, SmallInt), -32768);
        assert_eq!(apply(ScalarFunc::ShiftLeft, 1, 16, SmallInt), 0);
        assert_eq!(apply(ScalarFunc::ShiftLeft, 1, 32, Integer), 1);
        assert_eq!(apply(ScalarFunc::ShiftLeft, 1, 40, BigInt), 1 << 40);
        assert_eq!(apply(ScalarFunc::ShiftRight, -8, 1, Integer), -4);
    }
}
