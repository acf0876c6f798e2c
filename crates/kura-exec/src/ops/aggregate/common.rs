//! Sub-expressions shared by several aggregate arguments, computed once a batch
//! (TPC-H Q1: `l_extendedprice * (1 - l_discount)` in two of its sums).

use crate::expr::{BinaryOp, PhysExpr};

/// Rewrites `args` so that each sub-expression found in more than one place
/// is read from column `base + k` instead, where the returned `k`-th
/// expression computes it from the input columns (all below `base`).
///
/// Only sub-expressions every row evaluates anyway are shared: those reached
/// from an argument's root through arithmetic, negation and casts. One under a
/// CASE branch or the right side of AND/OR may be skipped for some rows (say,
/// a division guarded by the CASE), so evaluating it for all would be wrong.
pub fn extract(args: &mut [&mut PhysExpr], base: usize) -> Vec<PhysExpr> {
    let mut common = Vec::new();
    loop {
        let mut found = Vec::new();
        for a in args.iter() {
            shareable(a, &mut found);
        }
        // The largest repeated one first: its own parts are then no longer repeated.
        let best = found
            .iter()
            .filter(|e| found.iter().filter(|o| o == e).count() > 1)
            .max_by_key(|e| size(e));
        let Some(best) = best.map(|e| (*e).clone()) else {
            return common;
        };
        let column = PhysExpr::column(base + common.len(), best.data_type());
        for a in args.iter_mut() {
            replace(a, &best, &column);
        }
        common.push(best);
    }
}

/// The shareable sub-expressions of `e` (itself included), outermost first.
fn shareable<'a>(e: &'a PhysExpr, out: &mut Vec<&'a PhysExpr>) {
    match e {
        PhysExpr::Binary {
            op, left, right, ..
        } if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            if reads_a_column(e) {
                out.push(e);
            }
            shareable(left, out);
            shareable(right, out);
        }
        PhysExpr::Negate(inner) | PhysExpr::Cast { expr: inner, .. } => {
            if reads_a_column(e) {
                out.push(e);
            }
            shareable(inner, out);
        }
        _ => {}
    }
}

/// Replaces every shareable occurrence of `what` in `e` by `with`.
fn replace(e: &mut PhysExpr, what: &PhysExpr, with: &PhysExpr) {
    if e == what {
        *e = with.clone();
        return;
    }
    match e {
        PhysExpr::Binary {
            op, left, right, ..
        } if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
            replace(left, what, with);
            replace(right, what, with);
        }
        PhysExpr::Negate(inner) | PhysExpr::Cast { expr: inner, .. } => replace(inner, what, with),
        _ => {}
    }
}

fn reads_a_column(e: &PhysExpr) -> bool {
    let mut cols = Vec::new();
    e.columns(&mut cols);
    !cols.is_empty()
}

/// Nodes in `e`.
fn size(e: &PhysExpr) -> usize {
    match e {
        PhysExpr::Binary { left, right, .. } => 1 + size(left) + size(right),
        PhysExpr::Negate(inner) | PhysExpr::Cast { expr: inner, .. } => 1 + size(inner),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::{DataType, Value};

    fn col(i: usize) -> PhysExpr {
        PhysExpr::column(i, DataType::BigInt)
    }
    fn one() -> PhysExpr {
        PhysExpr::literal(Value::BigInt(1), DataType::BigInt)
    }
    fn bin(op: BinaryOp, l: PhysExpr, r: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
            data_type: DataType::BigInt,
        }
    }

    #[test]
    fn q1_shares_the_discounted_price() {
        // sum(#1 * (1 - #2)), sum(#1 * (1 - #2) * (1 + #3)), sum(#0)
        let disc = bin(BinaryOp::Mul, col(1), bin(BinaryOp::Sub, one(), col(2)));
        let mut a = disc.clone();
        let mut b = bin(
            BinaryOp::Mul,
            disc.clone(),
            bin(BinaryOp::Add, one(), col(3)),
        );
        let mut c = col(0);
        let common = extract(&mut [&mut a, &mut b, &mut c], 4);
        assert_eq!(common, vec![disc]);
        assert_eq!(a, col(4));
        assert_eq!(
            b,
            bin(BinaryOp::Mul, col(4), bin(BinaryOp::Add, one(), col(3)))
        );
        assert_eq!(c, col(0));
    }

    #[test]
    fn nothing_shared_under_case_or_short_circuit() {
        let div = bin(BinaryOp::Div, col(0), col(1));
        let mut guarded = PhysExpr::Case {
            whens: vec![(bin(BinaryOp::NotEq, col(1), one()), div.clone())],
            otherwise: None,
            data_type: DataType::BigInt,
        };
        let mut and = bin(BinaryOp::And, col(2), div.clone());
        let mut plain = div.clone();
        let common = extract(&mut [&mut guarded, &mut and, &mut plain], 3);
        assert!(common.is_empty());
        assert_eq!(plain, div);
        // Columns and literals alone are not worth sharing.
        let (mut x, mut y) = (
            bin(BinaryOp::Add, one(), one()),
            bin(BinaryOp::Add, one(), one()),
        );
        assert!(extract(&mut [&mut x, &mut y], 0).is_empty());
    }
}
