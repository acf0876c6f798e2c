//! Conjunct order of a filter: comparisons of fixed-width columns and constants
//! run first, everything else (text, LIKE, functions, arithmetic) after them, on
//! the rows they let through. A predicate is applied one conjunct at a time (see
//! `eval_predicate`), so TPC-H Q12's `l_shipmode IN (...)` then compares text on
//! the 15 % of rows its date ranges keep instead of on every row.
//!
//! Among those, comparisons with a constant go before comparisons of two columns.
//!
//! Only conjuncts that cannot fail move ahead, and the others keep their order:
//! a guard such as `x <> 0 AND 1 / x > 1` still shields its division, since the
//! division only ever sees fewer rows than it did.

use kura_common::types::PhysicalType;
use kura_common::DataType;

use super::{BinaryOp, PhysExpr};

/// `pred` with its cheap, infallible conjuncts first (stable otherwise).
pub fn cheap_first(pred: &PhysExpr) -> PhysExpr {
    let mut parts = Vec::new();
    flatten(pred, &mut parts);
    if parts.len() < 2 {
        return pred.clone();
    }
    let (cheap, rest): (Vec<&PhysExpr>, Vec<&PhysExpr>) =
        parts.into_iter().partition(|e| is_cheap(e));
    // Among the cheap ones, tests against a constant first: one column's pass
    // each, and usually narrower than two columns compared (TPC-H Q12's year
    // of receipt dates keeps 15 %, each `l_shipdate < l_commitdate` half).
    let (constant, columns): (Vec<&PhysExpr>, Vec<&PhysExpr>) =
        cheap.into_iter().partition(|e| against_constant(e));
    let reordered = !(constant.is_empty() || columns.is_empty());
    if !reordered && (constant.len() + columns.len() == 0 || rest.is_empty()) {
        return pred.clone();
    }
    let mut it = constant.into_iter().chain(columns).chain(rest).cloned();
    let first = it.next().expect("two or more conjuncts");
    it.fold(first, |acc, e| PhysExpr::Binary {
        op: BinaryOp::And,
        left: Box::new(acc),
        right: Box::new(e),
        data_type: DataType::Boolean,
    })
}

/// The conjuncts of `e`, left to right.
pub(super) fn flatten<'a>(e: &'a PhysExpr, out: &mut Vec<&'a PhysExpr>) {
    match e {
        PhysExpr::Binary {
            op: BinaryOp::And,
            left,
            right,
            ..
        } => {
            flatten(left, out);
            flatten(right, out);
        }
        _ => out.push(e),
    }
}

/// A column or constant of a fixed-width type (no text).
fn fixed_width_operand(e: &PhysExpr) -> bool {
    match e {
        PhysExpr::Column { data_type, .. } | PhysExpr::Literal { data_type, .. } => {
            data_type.physical() != PhysicalType::Str
        }
        _ => false,
    }
}

/// A comparison of fixed-width columns and constants, or a NULL test of a
/// column: a few cycles per row, and it cannot fail.
fn is_cheap(e: &PhysExpr) -> bool {
    match e {
        PhysExpr::Binary {
            op, left, right, ..
        } if op.is_comparison() => fixed_width_operand(left) && fixed_width_operand(right),
        PhysExpr::IsNull { expr, .. } => matches!(**expr, PhysExpr::Column { .. }),
        _ => false,
    }
}

/// A cheap conjunct that tests one column: against a constant, or for NULL.
fn against_constant(e: &PhysExpr) -> bool {
    match e {
        PhysExpr::Binary { left, right, .. } => {
            matches!(**left, PhysExpr::Literal { .. })
                || matches!(**right, PhysExpr::Literal { .. })
        }
        PhysExpr::IsNull { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::Value;

    fn col(index: usize, data_type: DataType) -> PhysExpr {
        PhysExpr::Column { index, data_type }
    }

    fn bin(op: BinaryOp, l: PhysExpr, r: PhysExpr, data_type: DataType) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            data_type,
        }
    }

    fn and(l: PhysExpr, r: PhysExpr) -> PhysExpr {
        bin(BinaryOp::And, l, r, DataType::Boolean)
    }

    #[test]
    fn text_goes_after_dates_and_guards_keep_their_order() {
        let text = bin(
            BinaryOp::Eq,
            col(0, DataType::Char(10)),
            PhysExpr::Literal {
                value: Value::Text("MAIL".into()),
                data_type: DataType::Char(10),
            },
            DataType::Boolean,
        );
        let date = bin(
            BinaryOp::Lt,
            col(1, DataType::Date),
            col(2, DataType::Date),
            DataType::Boolean,
        );
        let guard = bin(
            BinaryOp::NotEq,
            col(3, DataType::Integer),
            PhysExpr::Literal {
                value: Value::Integer(0),
                data_type: DataType::Integer,
            },
            DataType::Boolean,
        );
        let division = bin(
            BinaryOp::Gt,
            bin(
                BinaryOp::Div,
                PhysExpr::Literal {
                    value: Value::Integer(1),
                    data_type: DataType::Integer,
                },
                col(3, DataType::Integer),
                DataType::Integer,
            ),
            PhysExpr::Literal {
                value: Value::Integer(1),
                data_type: DataType::Integer,
            },
            DataType::Boolean,
        );
        let pred = and(
            and(and(text.clone(), guard.clone()), division.clone()),
            date.clone(),
        );
        let mut got = Vec::new();
        let ordered = cheap_first(&pred);
        flatten(&ordered, &mut got);
        let got: Vec<PhysExpr> = got.into_iter().cloned().collect();
        // Cheap ones first in their order (guard, date), then text and the
        // division in theirs: the division still comes after its guard.
        assert_eq!(got, vec![guard.clone(), date.clone(), text, division]);
        // All cheap, constants first: unchanged.
        let cheap = and(guard.clone(), date.clone());
        assert_eq!(cheap_first(&cheap), cheap);
        // All cheap, two columns compared first: the constant moves ahead.
        assert_eq!(cheap_first(&and(date, guard)), cheap);
    }
}
