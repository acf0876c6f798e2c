//! Predicates: IS [NOT] NULL / DISTINCT FROM / TRUE / FALSE, BETWEEN, IN lists
//! and LIKE / ILIKE.

use super::operators::{balanced, bin};
use super::*;

impl Binder<'_> {
    /// IS tests, BETWEEN, IN lists and LIKE.
    pub(super) fn bind_predicate(
        &mut self,
        e: &ast::Expr,
        cx: &mut ExprCtx,
    ) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            E::IsNull(x) | E::IsNotNull(x) => {
                let b = self.bind_expr(x, cx)?;
                Ok(fold(PhysExpr::IsNull {
                    expr: Box::new(b),
                    negated: matches!(e, E::IsNotNull(_)),
                }))
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let l = self.bind_expr(a, cx)?;
                let r = self.bind_expr(b, cx)?;
                let same = self.comparison(BinaryOp::NotDistinct, l, r, pos(e))?;
                Ok(if matches!(e, E::IsDistinctFrom(..)) {
                    PhysExpr::Not(Box::new(same))
                } else {
                    same
                })
            }
            E::IsTrue(x) | E::IsFalse(x) | E::IsNotTrue(x) | E::IsNotFalse(x) => {
                let b = self.bind_expr(x, cx)?;
                let b = self.check_bool(b, "IS TRUE/IS FALSE", pos(x))?;
                // `b IS TRUE` is CASE WHEN b THEN true ELSE false (NULL is not
                // true), `b IS FALSE` the same of NOT b; the NOT forms negate
                // those (both are never NULL).
                let tested = if matches!(e, E::IsTrue(_) | E::IsNotTrue(_)) {
                    b
                } else {
                    PhysExpr::Not(Box::new(b))
                };
                let test = PhysExpr::Case {
                    whens: vec![(
                        tested,
                        PhysExpr::literal(Value::Boolean(true), DataType::Boolean),
                    )],
                    otherwise: Some(Box::new(PhysExpr::literal(
                        Value::Boolean(false),
                        DataType::Boolean,
                    ))),
                    data_type: DataType::Boolean,
                };
                Ok(if matches!(e, E::IsTrue(_) | E::IsFalse(_)) {
                    test
                } else {
                    PhysExpr::Not(Box::new(test))
                })
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.bind_expr(expr, cx)?;
                let lo = self.bind_expr(low, cx)?;
                let hi = self.bind_expr(high, cx)?;
                let a = self.comparison(BinaryOp::GtEq, x.clone(), lo, pos(e))?;
                let b = self.comparison(BinaryOp::LtEq, x, hi, pos(e))?;
                let both = bin(BinaryOp::And, a, b, DataType::Boolean);
                Ok(if *negated {
                    PhysExpr::Not(Box::new(both))
                } else {
                    both
                })
            }
            E::InList {
                expr,
                list,
                negated,
            } => {
                let mut x = self.bind_expr(expr, cx)?;
                let mut items = Vec::with_capacity(list.len());
                for i in list {
                    // A `$n` being described takes the other side's type
                    // (`col IN ($1, $2)`, `$1 IN (col)`), as in a comparison.
                    let item = self.bind_expr(i, cx)?;
                    let (a, b) = self.unify_params(x, item);
                    x = a;
                    items.push(b);
                }
                // An untyped NULL on the left takes the type of the list (PostgreSQL
                // resolves `unknown IN (2, 3)` as integers); NULLs in the list are left
                // out of the resolution the same way.
                let mut ty = if is_untyped_null(&x) {
                    items
                        .iter()
                        .find(|i| !is_untyped_null(i))
                        .map_or(x.data_type(), |i| i.data_type())
                } else {
                    x.data_type()
                };
                for i in &items {
                    if !is_untyped_null(i)
                        && !matches!(i, PhysExpr::Literal { value: Value::Text(_), .. } if !ty.is_text())
                    {
                        ty = common_type(ty, i.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!(
                                    "IN list types {} and {} cannot be matched",
                                    x.data_type(),
                                    i.data_type()
                                ),
                                pos(e),
                            )
                        })?;
                    }
                }
                // A CHAR(n) value tested against string constants compares as
                // CHAR (trailing blanks insignificant): the constants take its
                // type, as PostgreSQL's unknown literals do, and it is not cast.
                let char_against_strings = matches!(x.data_type(), DataType::Char(_))
                    && items.iter().all(|i| {
                        matches!(
                            i,
                            PhysExpr::Literal {
                                value: Value::Text(_) | Value::Null,
                                ..
                            }
                        )
                    });
                if char_against_strings {
                    let vals = items
                        .into_iter()
                        .filter_map(|i| match i {
                            PhysExpr::Literal { value, .. } => Some(value),
                            _ => None,
                        })
                        .collect();
                    return Ok(fold(PhysExpr::InList {
                        expr: Box::new(x),
                        list: vals,
                        negated: *negated,
                    }));
                }
                // jsonb compares by value, item by item (json not at all).
                let all_const = items.iter().all(|i| matches!(i, PhysExpr::Literal { .. }))
                    && !matches!(x.data_type(), DataType::Json | DataType::Jsonb);
                if all_const {
                    let mut vals = Vec::new();
                    for i in items {
                        if let PhysExpr::Literal { value, .. } = coerce(i, ty, pos(e))? {
                            vals.push(value);
                        }
                    }
                    let x = coerce(x, ty, pos(e))?;
                    return Ok(fold(PhysExpr::InList {
                        expr: Box::new(x),
                        list: vals,
                        negated: *negated,
                    }));
                }
                let p = pos(e);
                let mut eqs = Vec::with_capacity(items.len());
                for i in items {
                    eqs.push(self.comparison(BinaryOp::Eq, x.clone(), i, p)?);
                }
                let any = if eqs.is_empty() {
                    PhysExpr::literal(Value::Boolean(false), DataType::Boolean)
                } else {
                    balanced(BinaryOp::Or, eqs)
                };
                Ok(if *negated {
                    fold(PhysExpr::Not(Box::new(any)))
                } else {
                    any
                })
            }
            E::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            }
            | E::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            } => {
                if escape_char.is_some() {
                    return Err(SqlError::unsupported("LIKE ... ESCAPE", pos(e)));
                }
                let x = self.bind_expr(expr, cx)?;
                if !x.data_type().is_text() && !is_null_literal(&x) {
                    return Err(SqlError::mismatch(
                        format!("operator does not exist: {} ~~ unknown", x.data_type()),
                        pos(e),
                    ));
                }
                let p = match self.bind_expr(pattern, cx)? {
                    PhysExpr::Literal {
                        value: Value::Text(s),
                        ..
                    } => s,
                    _ => {
                        return Err(SqlError::unsupported(
                            "non-constant LIKE pattern",
                            pos(pattern),
                        ))
                    }
                };
                let ci = matches!(e, E::ILike { .. });
                let (x, p) = if ci {
                    (
                        PhysExpr::Func {
                            func: ScalarFunc::Lower,
                            args: vec![x],
                            data_type: DataType::Varchar(None),
                        },
                        p.to_lowercase(),
                    )
                } else {
                    (x, p)
                };
                Ok(fold(PhysExpr::Like {
                    expr: Box::new(x),
                    pattern: LikePattern::new(&p),
                    negated: *negated,
                }))
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }
}
