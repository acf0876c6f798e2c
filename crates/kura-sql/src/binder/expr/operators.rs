//! Binding of operators: unary, AND/OR chains, binary arithmetic and
//! comparisons with their implicit conversions.

use super::*;

pub(super) fn bin(op: BinaryOp, l: PhysExpr, r: PhysExpr, t: DataType) -> PhysExpr {
    fold(PhysExpr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
        data_type: t,
    })
}

/// Joins operands with an associative operator as a balanced tree (at least one).
pub(super) fn balanced(op: BinaryOp, mut xs: Vec<PhysExpr>) -> PhysExpr {
    while xs.len() > 1 {
        let mut next = Vec::with_capacity(xs.len().div_ceil(2));
        let mut it = xs.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => bin(op, a, b, DataType::Boolean),
                None => a,
            });
        }
        xs = next;
    }
    xs.pop().expect("a connective has operands")
}

/// `e` as a date literal when it is a timestamp literal at midnight and
/// `other` is a date; `e` unchanged otherwise.
pub(super) fn midnight_as_date(e: PhysExpr, other: &PhysExpr) -> PhysExpr {
    use kura_common::timestamp::{time_of_day, to_date};
    match (&e, other.data_type()) {
        (
            PhysExpr::Literal {
                value: Value::Timestamp(t),
                ..
            },
            DataType::Date,
        ) if time_of_day(*t) == 0 => PhysExpr::literal(Value::Date(to_date(*t)), DataType::Date),
        _ => e,
    }
}

impl Binder<'_> {
    /// Unary operators: NOT, minus, plus and bitwise NOT.
    pub(super) fn bind_unary(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            E::UnaryOp { op, expr } => {
                let x = self.bind_expr(expr, cx)?;
                match op {
                    ast::UnaryOperator::Not => Ok(fold(PhysExpr::Not(Box::new(self.check_bool(
                        x,
                        "NOT",
                        pos(expr),
                    )?)))),
                    ast::UnaryOperator::Minus => {
                        if is_untyped_null(&x) {
                            // As PostgreSQL: `- unknown` matches several numeric operators.
                            return Err(SqlError::mismatch(
                                "operator is not unique: - unknown",
                                pos(e),
                            ));
                        }
                        if x.data_type() == DataType::Interval {
                            return Ok(self.interval_negate(x));
                        }
                        if !x.data_type().is_numeric() {
                            return Err(SqlError::mismatch(
                                format!("operator does not exist: - {}", x.data_type()),
                                pos(e),
                            ));
                        }
                        Ok(fold(PhysExpr::Negate(Box::new(x))))
                    }
                    ast::UnaryOperator::Plus => Ok(x),
                    ast::UnaryOperator::BitwiseNot => self.bit_not(x, pos(e)),
                    other => Err(SqlError::unsupported(format!("operator {other}"), pos(e))),
                }
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }

    /// Binds a chain `a AND b AND ...` (or OR) as one: the operands are gathered
    /// without recursion and joined as a balanced tree, so a chain of thousands
    /// of terms is neither deep nor quadratic (AND and OR are associative in
    /// three-valued logic, and the operands keep their order).
    pub(super) fn bind_connective(
        &mut self,
        e: &ast::Expr,
        op: &ast::BinaryOperator,
        cx: &mut ExprCtx,
    ) -> SqlResult<PhysExpr> {
        let (bop, clause) = match op {
            ast::BinaryOperator::And => (BinaryOp::And, "AND"),
            _ => (BinaryOp::Or, "OR"),
        };
        let mut operands = Vec::new();
        let mut pending = vec![e];
        while let Some(x) = pending.pop() {
            match x {
                ast::Expr::BinaryOp { left, op: o, right } if o == op => {
                    pending.push(right);
                    pending.push(left);
                }
                _ => operands.push(x),
            }
        }
        let p = pos(e);
        let mut bound = Vec::with_capacity(operands.len());
        for x in operands {
            let b = self.bind_expr(x, cx)?;
            bound.push(self.check_bool(b, clause, p)?);
        }
        Ok(balanced(bop, bound))
    }

    pub(super) fn bind_binary(
        &mut self,
        l: &ast::Expr,
        op: &ast::BinaryOperator,
        r: &ast::Expr,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        use ast::BinaryOperator as B;
        let a = self.bind_expr(l, cx)?;
        let b = self.bind_expr(r, cx)?;
        if let Some(e) = self.bind_json_op(op, &a, &b, p)? {
            return Ok(e);
        }
        // Date or timestamp ± a constant interval: months and days added as
        // the calendar does (a date stays a date when no clock part is added).
        if matches!(op, B::Plus | B::Minus) {
            if let Some(iv) = crate::binder::interval_fn::constant_interval(&b) {
                let d = if is_text_literal(&a) {
                    coerce(a.clone(), DataType::Date, p)?
                } else {
                    a.clone()
                };
                if matches!(d.data_type(), DataType::Date | DataType::Timestamp) {
                    let negate = matches!(op, B::Minus);
                    return self.plus_interval(d, (iv.months, iv.days, iv.micros), negate, op, p);
                }
            }
            if let (Some(iv), B::Plus) = (crate::binder::interval_fn::constant_interval(&a), op) {
                if matches!(b.data_type(), DataType::Date | DataType::Timestamp) {
                    return self.plus_interval(b, (iv.months, iv.days, iv.micros), false, op, p);
                }
            }
        }
        let bitwise = match op {
            B::BitwiseAnd => Some(ScalarFunc::BitAnd),
            B::BitwiseOr => Some(ScalarFunc::BitOr),
            B::PGBitwiseXor => Some(ScalarFunc::BitXor),
            B::PGBitwiseShiftLeft => Some(ScalarFunc::ShiftLeft),
            B::PGBitwiseShiftRight => Some(ScalarFunc::ShiftRight),
            _ => None,
        };
        if let Some(func) = bitwise {
            return self.bitwise(func, &op.to_string(), a, b, p);
        }
        if matches!(op, B::PGExp) {
            return self.bind_math("power", vec![a, b], p);
        }
        let bop = match op {
            B::Plus => BinaryOp::Add,
            B::Minus => BinaryOp::Sub,
            B::Multiply => BinaryOp::Mul,
            B::Divide => BinaryOp::Div,
            B::Modulo => BinaryOp::Mod,
            B::Eq => BinaryOp::Eq,
            B::NotEq => BinaryOp::NotEq,
            B::Lt => BinaryOp::Lt,
            B::LtEq => BinaryOp::LtEq,
            B::Gt => BinaryOp::Gt,
            B::GtEq => BinaryOp::GtEq,
            B::And => BinaryOp::And,
            B::Or => BinaryOp::Or,
            B::StringConcat => BinaryOp::Concat,
            other => return Err(SqlError::unsupported(format!("operator {other}"), p)),
        };
        if !matches!(bop, BinaryOp::And | BinaryOp::Or) {
            if let Some(e) = self.interval_operator(bop, &a, &b, p)? {
                return Ok(e);
            }
        }
        match bop {
            BinaryOp::And | BinaryOp::Or => {
                let clause = if bop == BinaryOp::And { "AND" } else { "OR" };
                let a = self.check_bool(a, clause, p)?;
                let b = self.check_bool(b, clause, p)?;
                Ok(bin(bop, a, b, DataType::Boolean))
            }
            o if o.is_comparison()
                && !matches!(o, BinaryOp::Eq | BinaryOp::NotEq)
                && (a.data_type().is_array() || b.data_type().is_array()) =>
            {
                // Held as text, arrays would order as their text does.
                Err(SqlError::unsupported(
                    format!(
                        "operator {} between arrays (kura compares arrays for equality only)",
                        o.symbol()
                    ),
                    p,
                ))
            }
            o if o.is_comparison() => self.comparison(o, a, b, p),
            BinaryOp::Concat if a.data_type().is_array() || b.data_type().is_array() => {
                self.array_concat(a, b, p)
            }
            BinaryOp::Concat
                if [&a, &b].iter().all(|x| {
                    x.data_type() == DataType::Bytea || is_text_literal(x) || is_untyped_null(x)
                }) && (a.data_type() == DataType::Bytea || b.data_type() == DataType::Bytea) =>
            {
                // Binary data joined, not its text forms.
                let a = coerce(a, DataType::Bytea, p)?;
                let b = coerce(b, DataType::Bytea, p)?;
                Ok(crate::binder::binary_fn::binary_call(
                    kura_exec::expr::binary::BinaryFunc::Concat,
                    vec![a, b],
                    DataType::Bytea,
                ))
            }
            BinaryOp::Concat => {
                let a = coerce(a.clone(), DataType::Varchar(None), p).unwrap_or(a);
                let b = coerce(b.clone(), DataType::Varchar(None), p).unwrap_or(b);
                Ok(bin(bop, a, b, DataType::Varchar(None)))
            }
            _ => self.arithmetic(bop, a, b, p),
        }
    }

    pub(in crate::binder) fn arithmetic(
        &mut self,
        op: BinaryOp,
        a: PhysExpr,
        b: PhysExpr,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let (a, b) = self.unify_params(a, b);
        // A quoted literal against a typed operand takes that type, as PostgreSQL
        // resolves an `unknown` literal ('abc' + 1 fails as an invalid integer).
        let (a, b) = if is_text_literal(&b) && !a.data_type().is_text() && !is_null_literal(&a) {
            let t = a.data_type();
            (a, coerce(b, t, p)?)
        } else if is_text_literal(&a) && !b.data_type().is_text() && !is_null_literal(&b) {
            let t = b.data_type();
            (coerce(a, t, p)?, b)
        } else {
            (a, b)
        };
        let (ta, tb) = (a.data_type(), b.data_type());
        if is_null_literal(&a) || is_null_literal(&b) {
            // The result is NULL, of the type the operator gives its operands' types: a
            // NULL keeps the type a CAST gave it; an untyped NULL takes the other's.
            let ta = if is_untyped_null(&a) { tb } else { ta };
            let tb = if is_untyped_null(&b) { ta } else { tb };
            let t = match (ta, tb, op) {
                (DataType::Date, DataType::Date, BinaryOp::Sub) => DataType::Integer,
                (DataType::Date, t, BinaryOp::Add | BinaryOp::Sub)
                | (t, DataType::Date, BinaryOp::Add)
                    if t.is_integer() =>
                {
                    DataType::Date
                }
                _ => arith_type(op, ta, tb, p)?,
            };
            return Ok(PhysExpr::literal(Value::Null, t));
        }
        match (ta, tb, op) {
            (DataType::Date, DataType::Date, BinaryOp::Sub) => {
                return Ok(bin(op, a, b, DataType::Integer))
            }
            (DataType::Date, t, BinaryOp::Add | BinaryOp::Sub) if t.is_integer() => {
                // PostgreSQL adds an int4 number of days: a SMALLINT is widened
                // first, so negating -32768 does not overflow.
                let b = if t == DataType::SmallInt {
                    coerce(b, DataType::Integer, p)?
                } else {
                    b
                };
                let n = if op == BinaryOp::Sub {
                    fold(PhysExpr::Negate(Box::new(b)))
                } else {
                    b
                };
                return Ok(fold(PhysExpr::Func {
                    func: ScalarFunc::AddDays,
                    args: vec![a, n],
                    data_type: DataType::Date,
                }));
            }
            (t, DataType::Date, BinaryOp::Add) if t.is_integer() => {
                return Ok(fold(PhysExpr::Func {
                    func: ScalarFunc::AddDays,
                    args: vec![b, a],
                    data_type: DataType::Date,
                }));
            }
            _ => {}
        }
        let t = arith_type(op, ta, tb, p)?;
        Ok(bin(op, a, b, t))
    }

    /// A `$n` parameter being described takes the other side's type.
    pub(in crate::binder) fn unify_params(
        &mut self,
        a: PhysExpr,
        b: PhysExpr,
    ) -> (PhysExpr, PhysExpr) {
        let mut fix = |x: PhysExpr, other: &PhysExpr| match param_marker(&x) {
            Some(n) if param_marker(other).is_none() => {
                let t = other.data_type();
                if let Some(slot) = self.params.types.get_mut(n - 1) {
                    slot.get_or_insert(t);
                }
                PhysExpr::literal(Value::Null, t)
            }
            _ => x,
        };
        let a2 = fix(a, &b);
        let b2 = fix(b, &a2);
        (a2, b2)
    }

    /// Typed comparison, converting a text literal to the other side's type.
    pub(in crate::binder) fn comparison(
        &mut self,
        op: BinaryOp,
        a: PhysExpr,
        b: PhysExpr,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let (a, b) = self.unify_params(a, b);
        let is_text_lit = is_text_literal;
        let (a, b) = if is_text_lit(&b) && !a.data_type().is_text() {
            let t = a.data_type();
            (a, coerce(b, t, p)?)
        } else if (is_text_lit(&a) && !b.data_type().is_text()) || is_untyped_null(&a) {
            let t = b.data_type();
            (coerce(a, t, p)?, b)
        } else if is_untyped_null(&b) {
            let t = a.data_type();
            (a, coerce(b, t, p)?)
        } else {
            (a, b)
        };
        // A date against a constant midnight (`d < date '1995-01-01' +
        // interval '1 month'`) compares as dates: the same answer, and the
        // date column is read as it is stored (zone maps, indexes).
        let a = midnight_as_date(a, &b);
        let b = midnight_as_date(b, &a);
        // A date meets a timestamp at its midnight.
        let (a, b) = match (a.data_type(), b.data_type()) {
            (DataType::Date, DataType::Timestamp) => (coerce(a, DataType::Timestamp, p)?, b),
            (DataType::Timestamp, DataType::Date) => (a, coerce(b, DataType::Timestamp, p)?),
            _ => (a, b),
        };
        if let Some(e) = crate::binder::json_fn::json_comparison(op, &a, &b, p)? {
            return Ok(e);
        }
        let (ta, tb) = (a.data_type(), b.data_type());
        if (ta, tb) == (DataType::Interval, DataType::Interval) {
            // Intervals compare by span: `1 mon` = `30 days`.
            let (a, b) = (
                crate::binder::interval_fn::span(a),
                crate::binder::interval_fn::span(b),
            );
            return self.comparison(op, a, b, p);
        }
        if common_type(ta, tb).is_none() {
            return Err(SqlError::mismatch(
                format!("operator does not exist: {ta} {} {tb}", op.symbol()),
                p,
            ));
        }
        Ok(bin(op, a, b, DataType::Boolean))
    }
}
