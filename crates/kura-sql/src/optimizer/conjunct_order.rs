//! The order in which a scan evaluates its filter's conjuncts. Each conjunct
//! narrows the selection the next one sees, so the cheap and selective go
//! first: ascending cost / (1 − selectivity), the classic rank of predicate
//! ordering. TPC-H Q12 wrote `l_shipmode IN ('MAIL', 'SHIP')` — a text
//! comparison against every row — before the date conditions that keep one
//! row in seven.
//!
//! Only conjuncts that cannot fail move: a conjunct that might raise an error
//! (arithmetic that overflows, a division, a cast) is protected by those before
//! it, as in PostgreSQL's row-by-row evaluation, so with one of those present
//! the order written is kept.

use kura_common::types::PhysicalType;
use kura_exec::expr::PhysExpr;

use super::estimate::{selectivity, Estimate};

/// `filters` (conjuncts of one scan) in evaluation order.
pub fn order(mut filters: Vec<PhysExpr>, est: &Estimate) -> Vec<PhysExpr> {
    let Some(costs) = filters.iter().map(cost).collect::<Option<Vec<f64>>>() else {
        return filters;
    };
    let mut ranked: Vec<(f64, PhysExpr)> = filters
        .drain(..)
        .zip(costs)
        .map(|(f, c)| {
            let kept = selectivity(&f, est);
            (c / (1.0 - kept).max(1e-3), f)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    ranked.into_iter().map(|(_, f)| f).collect()
}

fn is_text(e: &PhysExpr) -> bool {
    e.data_type().physical() == PhysicalType::Str
}

/// Relative cost per row of a conjunct that cannot fail; `None` when it might.
fn cost(e: &PhysExpr) -> Option<f64> {
    Some(match e {
        PhysExpr::Column { .. } => 0.5,
        PhysExpr::Literal { .. } => 0.0,
        PhysExpr::Binary {
            op, left, right, ..
        } if op.is_comparison() => {
            let c = 1.0 + cost(left)? + cost(right)?;
            if is_text(left) || is_text(right) {
                3.0 * c
            } else {
                c
            }
        }
        PhysExpr::Binary {
            op: kura_exec::expr::BinaryOp::And | kura_exec::expr::BinaryOp::Or,
            left,
            right,
            ..
        } => cost(left)? + cost(right)?,
        PhysExpr::Not(x) => cost(x)?,
        PhysExpr::IsNull { expr, .. } => 0.5 + cost(expr)?,
        PhysExpr::InList { expr, list, .. } => {
            let c = 1.0 + 0.25 * list.len() as f64 + cost(expr)?;
            if is_text(expr) {
                3.0 * c
            } else {
                c
            }
        }
        PhysExpr::Like { expr, .. } => 10.0 + cost(expr)?,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::{DataType, Value};
    use kura_exec::expr::BinaryOp;

    fn column(index: usize, data_type: DataType) -> Box<PhysExpr> {
        Box::new(PhysExpr::Column { index, data_type })
    }
    fn binary(op: BinaryOp, left: Box<PhysExpr>, right: Box<PhysExpr>) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left,
            right,
            data_type: DataType::Boolean,
        }
    }
    fn int(v: i32) -> Box<PhysExpr> {
        Box::new(PhysExpr::Literal {
            value: Value::Integer(v),
            data_type: DataType::Integer,
        })
    }
    fn estimate() -> Estimate {
        let mut e = Estimate {
            rows: 1000.0,
            ..Default::default()
        };
        e.range.insert(0, (0.0, 1000.0));
        e.ndv.insert(0, 1000.0);
        e.ndv.insert(1, 7.0);
        e
    }

    #[test]
    fn selective_integer_tests_go_before_text_lists() {
        let text_in = PhysExpr::InList {
            expr: column(1, DataType::Char(10)),
            list: vec![Value::Text("MAIL".into()), Value::Text("SHIP".into())],
            negated: false,
        };
        let narrow = binary(BinaryOp::Lt, column(0, DataType::Integer), int(100));
        let wide = binary(BinaryOp::Lt, column(0, DataType::Integer), int(500));
        let ordered = order(
            vec![text_in.clone(), wide.clone(), narrow.clone()],
            &estimate(),
        );
        assert_eq!(ordered, vec![narrow, wide, text_in]);
    }

    #[test]
    fn a_conjunct_that_can_fail_keeps_the_written_order() {
        let guard = binary(BinaryOp::NotEq, column(0, DataType::Integer), int(0));
        let division = binary(
            BinaryOp::Gt,
            Box::new(PhysExpr::Binary {
                op: BinaryOp::Div,
                left: int(10),
                right: column(0, DataType::Integer),
                data_type: DataType::Integer,
            }),
            int(1),
        );
        let written = vec![guard, division];
        assert_eq!(order(written.clone(), &estimate()), written);
    }
}
