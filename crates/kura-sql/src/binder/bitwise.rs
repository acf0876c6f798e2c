//! Binding of PostgreSQL's bitwise operators on integers (`&`, `|`, `#`, `~`,
//! `<<`, `>>`): both sides of `&`, `|` and `#` widen to the wider integer
//! type; a shift keeps its left side's type and counts in integer.

use kura_common::{DataType, Value};
use kura_exec::expr::{PhysExpr, ScalarFunc};

use super::types::{coerce, fold, is_null_literal, is_untyped_literal, is_untyped_null};
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

/// The wider of two integer types.
fn wider(a: DataType, b: DataType) -> DataType {
    let rank = |t: DataType| match t {
        DataType::SmallInt => 0,
        DataType::Integer => 1,
        _ => 2,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

/// An operand's integer type: an untyped literal or NULL reads as integer.
fn operand_type(e: &PhysExpr) -> DataType {
    if is_untyped_literal(e) {
        DataType::Integer
    } else {
        e.data_type()
    }
}

impl Binder<'_> {
    /// `a op b` for a bitwise `op` (`symbol` as written).
    pub(super) fn bitwise(
        &mut self,
        func: ScalarFunc,
        symbol: &str,
        a: PhysExpr,
        b: PhysExpr,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let shift = matches!(func, ScalarFunc::ShiftLeft | ScalarFunc::ShiftRight);
        let (a, b) = self.unify_params(a, b);
        let a = self.type_param(a, DataType::Integer);
        let b = self.type_param(b, DataType::Integer);
        let (ta, tb) = (operand_type(&a), operand_type(&b));
        if !ta.is_integer() || !tb.is_integer() {
            return Err(SqlError::mismatch(
                format!("operator does not exist: {ta} {symbol} {tb}"),
                p,
            ));
        }
        let (out, right) = if shift {
            (ta, DataType::Integer)
        } else {
            let t = wider(ta, tb);
            (t, t)
        };
        let a = coerce(a, out, p)?;
        let b = coerce(b, right, p)?;
        if is_null_literal(&a) || is_null_literal(&b) {
            return Ok(PhysExpr::literal(Value::Null, out));
        }
        Ok(fold(PhysExpr::Func {
            func,
            args: vec![a, b],
            data_type: out,
        }))
    }

    /// `~a`.
    pub(super) fn bit_not(&mut self, a: PhysExpr, p: Pos) -> SqlResult<PhysExpr> {
        let a = self.type_param(a, DataType::Integer);
        let t = operand_type(&a);
        if !t.is_integer() {
            return Err(SqlError::mismatch(
                format!("operator does not exist: ~ {t}"),
                p,
            ));
        }
        let untyped = is_untyped_null(&a);
        let a = coerce(a, t, p)?;
        if untyped || is_null_literal(&a) {
            return Ok(PhysExpr::literal(Value::Null, t));
        }
        Ok(fold(PhysExpr::Func {
            func: ScalarFunc::BitNot,
            args: vec![a],
            data_type: t,
        }))
    }
}
