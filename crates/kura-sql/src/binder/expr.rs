//! Binding of scalar expressions: name resolution through nested scopes (outer
//! references make a subquery correlated), typing and implicit conversions,
//! aggregates (collected when binding an aggregating SELECT), date arithmetic with
//! intervals, and constant folding.

use kura_common::{DataType, Value};
use kura_exec::expr::registry::{Family, Kind};
use kura_exec::expr::{BinaryOp, LikePattern, PhysExpr, ScalarFunc};
use kura_exec::{AggCall, AggFunc};
use sqlparser::ast::{self, Spanned};

use super::types::{
    arith_type, coerce, common_type, fold, is_null_literal, is_untyped_null, number_literal,
    sql_type, text_null, DIV_SCALE,
};
use super::{norm, pos_of, AggCollector, Binder, Pending, Scope};
use crate::error::{did_you_mean, Pos, SqlError, SqlResult};
use crate::logical::col;

/// Where an expression is bound.
pub struct ExprCtx<'s> {
    pub scope: &'s Scope,
    pub outer: &'s [Scope],
    /// Set while binding an aggregating SELECT: aggregates are collected here.
    pub agg: Option<AggCollector>,
    pub pending: Vec<Pending>,
    /// The clause being bound (`WHERE`, `GROUP BY`, ...), named by errors about what
    /// the clause cannot hold.
    pub clause: Option<&'static str>,
    pub(super) in_aggregate: bool,
    /// Set where window functions may appear (a SELECT's list and ORDER BY).
    pub win: Option<super::window::WindowCollector>,
}

impl<'s> ExprCtx<'s> {
    pub fn new(scope: &'s Scope, outer: &'s [Scope]) -> ExprCtx<'s> {
        ExprCtx {
            scope,
            outer,
            agg: None,
            pending: Vec::new(),
            clause: None,
            in_aggregate: false,
            win: None,
        }
    }
}

/// A quoted string constant (its type is still open, like PostgreSQL's `unknown`).
fn is_text_literal(e: &PhysExpr) -> bool {
    matches!(
        e,
        PhysExpr::Literal {
            value: Value::Text(_),
            ..
        }
    )
}

/// Where an expression starts. sqlparser computes an expression's span from all
/// of its parts, so asking it at every level of a long `a OR b OR ...` chain or
/// for every item of an IN list would make binding quadratic; the start is
/// found by walking down to the leftmost operand instead. The walk is bounded:
/// an expression deeper than [`MAX_EXPR_DEPTH`] is refused anyway, and an
/// unbounded walk at every level of it would be quadratic again.
fn pos(e: &ast::Expr) -> Pos {
    use ast::Expr as E;
    let mut x = e;
    for step in 0.. {
        if step > MAX_EXPR_DEPTH {
            return Pos::default();
        }
        x = match x {
            E::BinaryOp { left, .. } => left,
            E::InList { expr, .. }
            | E::InSubquery { expr, .. }
            | E::Between { expr, .. }
            | E::Like { expr, .. }
            | E::ILike { expr, .. }
            | E::IsNull(expr)
            | E::IsNotNull(expr)
            | E::IsTrue(expr)
            | E::IsFalse(expr)
            | E::IsNotTrue(expr)
            | E::IsNotFalse(expr)
            | E::IsDistinctFrom(expr, _)
            | E::IsNotDistinctFrom(expr, _) => expr,
            _ => break,
        };
    }
    let p = Pos::from_span(x.span());
    if p.line == 0 {
        Pos::from_span(e.span())
    } else {
        p
    }
}

fn bin(op: BinaryOp, l: PhysExpr, r: PhysExpr, t: DataType) -> PhysExpr {
    fold(PhysExpr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
        data_type: t,
    })
}

/// Joins operands with an associative operator as a balanced tree (at least one).
fn balanced(op: BinaryOp, mut xs: Vec<PhysExpr>) -> PhysExpr {
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

/// An interval literal: months, days and microseconds (the clock units).
pub(super) fn interval(iv: &ast::Interval) -> SqlResult<(i32, i32, i64)> {
    let v = super::interval_fn::interval_literal(iv, pos(&iv.value))?;
    Ok((v.months, v.days, v.micros))
}

/// `timestamp ± interval`: months first (day clamped as for dates), then days
/// and the clock part.
fn add_timestamp_interval(
    ts: PhysExpr,
    (months, days, micros): (i32, i32, i64),
    negate: bool,
) -> PhysExpr {
    let sign = if negate { -1 } else { 1 };
    let shift = (days as i64 * kura_common::timestamp::MICROS_PER_DAY + micros) * sign;
    fold(PhysExpr::Func {
        func: ScalarFunc::AddInterval,
        args: vec![
            ts,
            PhysExpr::literal(Value::Integer(sign as i32 * months), DataType::Integer),
            PhysExpr::literal(Value::BigInt(shift), DataType::BigInt),
        ],
        data_type: DataType::Timestamp,
    })
}

fn add_interval(date: PhysExpr, (months, days, _): (i32, i32, i64), negate: bool) -> PhysExpr {
    let sign = if negate { -1 } else { 1 };
    let mut e = date;
    if months != 0 {
        e = fold(PhysExpr::Func {
            func: ScalarFunc::AddMonths,
            args: vec![
                e,
                PhysExpr::literal(Value::Integer(sign * months), DataType::Integer),
            ],
            data_type: DataType::Date,
        });
    }
    if days != 0 || months == 0 {
        e = fold(PhysExpr::Func {
            func: ScalarFunc::AddDays,
            args: vec![
                e,
                PhysExpr::literal(Value::Integer(sign * days), DataType::Integer),
            ],
            data_type: DataType::Date,
        });
    }
    e
}

/// Whether `name` is one of the aggregates bound here (`count`, `sum`, `avg`,
/// `min`, `max`).
pub(super) fn is_core_aggregate(name: &str) -> bool {
    kura_exec::expr::registry::find(name)
        .is_some_and(|f| f.family == Family::Core && f.kind == Kind::Aggregate)
}

/// Today as days since 1970-01-01, in UTC (kura's time zone).
fn today_utc() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (secs / 86_400) as i32
}

/// The deepest expression nesting the binder accepts. Every later pass (folding,
/// optimizer rewrites, EXPLAIN, evaluation, dropping the tree) recurses over
/// the bound tree, so a limit here bounds the stack all of them need: the
/// session runs each statement on a stack sized for this depth. AND/OR chains
/// and IN lists do not count against it: they are bound flat.
pub const MAX_EXPR_DEPTH: usize = 2000;

impl Binder<'_> {
    pub fn bind_expr(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        if self.expr_depth >= MAX_EXPR_DEPTH {
            return Err(SqlError::TooDeep {
                what: "the expression".into(),
                limit: MAX_EXPR_DEPTH,
                pos: pos(e),
            });
        }
        self.expr_depth += 1;
        let bound = self.bind_expr_node(e, cx);
        self.expr_depth -= 1;
        bound
    }

    fn bind_expr_node(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        // PostgreSQL's catalog forms (regular expressions, ::regclass, catalog functions).
        if let Some(bound) = self.bind_system_expr(e, cx, pos(e))? {
            return Ok(bound);
        }
        match e {
            E::Identifier(id) => match self.resolve(None, id, cx) {
                // `current_schema` written without parentheses, as SQL allows,
                // where no column of that name is in scope.
                Err(SqlError::UnknownColumn { .. })
                    if id.quote_style.is_none()
                        && id.value.eq_ignore_ascii_case("current_schema") =>
                {
                    Ok(PhysExpr::literal(
                        Value::Text("public".into()),
                        DataType::Varchar(None),
                    ))
                }
                r => r,
            },
            E::CompoundIdentifier(ids) => match ids.as_slice() {
                [q, c] => self.resolve(Some(q), c, cx),
                [_, q, c] => self.resolve(Some(q), c, cx),
                _ => Err(SqlError::unsupported(format!("name {e}"), pos(e))),
            },
            E::Nested(x) => self.bind_expr(x, cx),
            E::Value(v) => self.bind_value(&v.value, pos(e)),
            E::TypedString(ts) => {
                let t = sql_type(&ts.data_type, pos(e))?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                coerce(
                    PhysExpr::literal(Value::Text(text), DataType::Varchar(None)),
                    t,
                    pos(e),
                )
            }
            E::Interval(iv) => super::interval_fn::interval_value(
                super::interval_fn::interval_literal(iv, pos(e))?,
                pos(e),
            ),
            E::BinaryOp {
                op: op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or),
                ..
            } => self.bind_connective(e, op, cx),
            E::BinaryOp { left, op, right } => self.bind_binary(left, op, right, cx, pos(e)),
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
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let op = operand
                    .as_ref()
                    .map(|o| self.bind_expr(o, cx))
                    .transpose()?;
                let mut whens = Vec::new();
                for cw in conditions {
                    let c = self.bind_expr(&cw.condition, cx)?;
                    let c = match &op {
                        Some(o) => {
                            self.comparison(BinaryOp::Eq, o.clone(), c, pos(&cw.condition))?
                        }
                        None => self.check_bool(c, "CASE/WHEN", pos(&cw.condition))?,
                    };
                    whens.push((c, self.bind_expr(&cw.result, cx)?));
                }
                let otherwise = else_result
                    .as_ref()
                    .map(|x| self.bind_expr(x, cx))
                    .transpose()?;
                let mut ty: Option<DataType> = None;
                for t in whens.iter().map(|w| &w.1).chain(otherwise.iter()) {
                    if is_untyped_null(t) {
                        continue;
                    }
                    ty = Some(match ty {
                        None => t.data_type(),
                        Some(x) => common_type(x, t.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!("CASE types {x} and {} cannot be matched", t.data_type()),
                                pos(e),
                            )
                        })?,
                    });
                }
                let ty = ty.unwrap_or(DataType::Varchar(None));
                let whens = whens
                    .into_iter()
                    .map(|(c, t)| Ok((c, coerce(t, ty, pos(e))?)))
                    .collect::<SqlResult<Vec<_>>>()?;
                let otherwise = otherwise
                    .map(|o| coerce(o, ty, pos(e)))
                    .transpose()?
                    .map(Box::new);
                Ok(PhysExpr::Case {
                    whens,
                    otherwise,
                    data_type: ty,
                })
            }
            E::Cast {
                expr, data_type, ..
            } => {
                let t = sql_type(data_type, pos(e))?;
                if let (E::Array(a), true) = (expr.as_ref(), t.is_array()) {
                    if a.elem.is_empty() {
                        // `ARRAY[]::int[]`: the cast gives the empty array its type.
                        return Ok(PhysExpr::literal(Value::Text("{}".into()), t));
                    }
                }
                let x = self.bind_expr(expr, cx)?;
                if t.is_array()
                    && !(x.data_type().is_text() || x.data_type().is_array())
                    && !is_untyped_null(&x)
                {
                    return Err(SqlError::CannotCoerce {
                        message: format!("cannot cast type {} to {t}", x.data_type()),
                        pos: pos(e),
                    });
                }
                if let (DataType::Vector(_), true) =
                    (x.data_type(), t.is_array() && t != x.data_type())
                {
                    // PostgreSQL's array keeps the vector's subscripts (from
                    // 0), which kura's arrays (from 1) cannot hold.
                    return Err(SqlError::unsupported(
                        format!(
                            "casting {} to {t} (its subscripts start at 0, kura's arrays' at 1)",
                            x.data_type().to_string().to_lowercase()
                        ),
                        pos(e),
                    ));
                }
                if x.data_type().is_array() && !(t.is_array() || t.is_text()) {
                    return Err(SqlError::CannotCoerce {
                        message: format!("cannot cast type {} to {t}", x.data_type()),
                        pos: pos(e),
                    });
                }
                no_boolean_smallint_cast(x.data_type(), t, pos(e))?;
                if let Some(n) = param_marker(&x) {
                    // `$1::int` while describing: the cast gives the parameter its type.
                    if let Some(slot) = self.params.types.get_mut(n - 1) {
                        slot.get_or_insert(t);
                    }
                    return Ok(PhysExpr::literal(Value::Null, t));
                }
                if is_untyped_null(&x) && t == DataType::Varchar(None) {
                    // `CAST(NULL AS TEXT)` is text, not the untyped NULL it would fold to.
                    return Ok(text_null());
                }
                Ok(fold(coerce(x, t, pos(e))?))
            }
            E::Extract { field, expr, .. } => {
                let x = self.bind_expr(expr, cx)?;
                if x.data_type() == DataType::Interval {
                    let name = field.to_string().to_lowercase();
                    return self.interval_field(&name, x, pos(e));
                }
                // The calendar fields of a timestamp are its date's.
                let x = if x.data_type() == DataType::Timestamp
                    && matches!(
                        field,
                        ast::DateTimeField::Year
                            | ast::DateTimeField::Month
                            | ast::DateTimeField::Day
                    ) {
                    coerce(x, DataType::Date, pos(e))?
                } else {
                    x
                };
                if let Some(f) = date_field(field) {
                    if matches!(x.data_type(), DataType::Date | DataType::Timestamp) {
                        let data_type = f.result_type(x.data_type());
                        return Ok(fold(PhysExpr::Func {
                            func: ScalarFunc::DateField(f),
                            args: vec![x],
                            data_type,
                        }));
                    }
                }
                if x.data_type() == DataType::Timestamp {
                    let (func, data_type) = match field {
                        ast::DateTimeField::Hour => (ScalarFunc::ExtractHour, DataType::Integer),
                        ast::DateTimeField::Minute => {
                            (ScalarFunc::ExtractMinute, DataType::Integer)
                        }
                        ast::DateTimeField::Second => (
                            ScalarFunc::ExtractSecond,
                            DataType::Decimal {
                                precision: 8,
                                scale: 6,
                            },
                        ),
                        other => {
                            return Err(SqlError::unsupported(
                                format!("extract({other}) of a timestamp"),
                                pos(e),
                            ))
                        }
                    };
                    return Ok(fold(PhysExpr::Func {
                        func,
                        args: vec![x],
                        data_type,
                    }));
                }
                if x.data_type() != DataType::Date {
                    return Err(SqlError::mismatch(
                        format!("extract needs a date, not {}", x.data_type()),
                        pos(e),
                    ));
                }
                let func = match field {
                    ast::DateTimeField::Year => ScalarFunc::ExtractYear,
                    ast::DateTimeField::Month => ScalarFunc::ExtractMonth,
                    ast::DateTimeField::Day => ScalarFunc::ExtractDay,
                    other => {
                        return Err(SqlError::unsupported(format!("extract({other})"), pos(e)))
                    }
                };
                Ok(fold(PhysExpr::Func {
                    func,
                    args: vec![x],
                    data_type: DataType::Integer,
                }))
            }
            E::Position { expr, r#in } => {
                // POSITION(sub IN s) is strpos(s, sub).
                let args = vec![self.bind_expr(r#in, cx)?, self.bind_expr(expr, cx)?];
                self.bind_text_fn("strpos", args, pos(e))
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let s = self.bind_expr(expr, cx)?;
                let from = match substring_from {
                    Some(f) => self.bind_expr(f, cx)?,
                    None => PhysExpr::literal(Value::Integer(1), DataType::Integer),
                };
                let mut args = vec![s, from];
                if let Some(f) = substring_for {
                    args.push(self.bind_expr(f, cx)?);
                }
                self.scalar_call(ScalarFunc::Substring, args, pos(e))
            }
            E::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                ..
            } => {
                let s = self.bind_expr(expr, cx)?;
                self.scalar_call(ScalarFunc::Trim, vec![s], pos(e))
            }
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let func = match trim_where {
                    Some(ast::TrimWhereField::Leading) => ScalarFunc::LTrim,
                    Some(ast::TrimWhereField::Trailing) => ScalarFunc::RTrim,
                    _ => ScalarFunc::BTrim,
                };
                let mut args = vec![self.bind_expr(expr, cx)?];
                if let Some(chars) = trim_what {
                    args.push(self.bind_expr(chars, cx)?);
                }
                for a in &args {
                    if !a.data_type().is_text() && !is_null_literal(a) {
                        return Err(SqlError::mismatch(
                            format!("function {}({}) does not exist", func.name(), a.data_type()),
                            pos(e),
                        ));
                    }
                }
                super::functions::trim_call(func, args, pos(e))
            }
            E::Function(f) => self.bind_function(f, cx, pos(e)),
            E::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            }
            | E::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => {
                let x = self.bind_expr(expr, cx)?;
                let name = if matches!(e, E::Floor { .. }) {
                    "floor"
                } else {
                    "ceil"
                };
                self.bind_math(name, vec![x], pos(e))
            }
            E::Array(a) => self.bind_array_constructor(&a.elem, cx, pos(e)),
            E::AnyOp { .. } | E::AllOp { .. } => self.bind_quantified(e, cx, pos(e)),
            E::CompoundFieldAccess { root, access_chain } => {
                self.bind_subscript(root, access_chain, cx, pos(e))
            }
            E::Subquery(q) => self.scalar_subquery(q, cx, pos(e)),
            E::Exists { subquery, negated } => {
                let m = self.mark_subquery(subquery, None, cx, pos(e))?;
                Ok(if *negated {
                    PhysExpr::Not(Box::new(m))
                } else {
                    m
                })
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.bind_expr(expr, cx)?;
                let m = self.mark_subquery(subquery, Some(x), cx, pos(e))?;
                Ok(if *negated {
                    PhysExpr::Not(Box::new(m))
                } else {
                    m
                })
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }

    fn bind_value(&mut self, v: &ast::Value, p: Pos) -> SqlResult<PhysExpr> {
        match v {
            ast::Value::Number(n, _) => {
                let (v, t) = number_literal(n, p)?;
                Ok(PhysExpr::literal(v, t))
            }
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => Ok(
                PhysExpr::literal(Value::Text(s.clone()), DataType::Varchar(None)),
            ),
            ast::Value::Boolean(b) => Ok(PhysExpr::literal(Value::Boolean(*b), DataType::Boolean)),
            ast::Value::Null => Ok(PhysExpr::literal(Value::Null, DataType::Varchar(None))),
            ast::Value::Placeholder(name) => {
                let n: usize = name
                    .trim_start_matches('$')
                    .parse()
                    .map_err(|_| SqlError::unsupported(format!("parameter {name}"), p))?;
                if n == 0 {
                    return Err(SqlError::MissingParameter(0));
                }
                if self.params.types.len() < n {
                    self.params.types.resize(n, None);
                }
                Ok(match &self.params.values {
                    Some(vals) => {
                        let v = vals
                            .get(n - 1)
                            .cloned()
                            .ok_or(SqlError::MissingParameter(n))?;
                        param_literal(v, n)
                    }
                    None => PhysExpr::literal(
                        Value::Text(format!("{PARAM_MARK}{n}")),
                        DataType::Varchar(None),
                    ),
                })
            }
            other => Err(SqlError::unsupported(format!("literal {other}"), p)),
        }
    }

    fn resolve(
        &mut self,
        qualifier: Option<&ast::Ident>,
        id: &ast::Ident,
        cx: &ExprCtx,
    ) -> SqlResult<PhysExpr> {
        let name = norm(id);
        let q = qualifier.map(norm);
        for scope in std::iter::once(cx.scope).chain(cx.outer.iter().rev()) {
            let hits = scope.lookup(q.as_deref(), &name);
            match hits.len() {
                0 => continue,
                1 => return Ok(col(hits[0].id, hits[0].ty)),
                _ => {
                    // The same column reached through two names (e.g. USING) is not ambiguous.
                    if hits.iter().all(|h| h.id == hits[0].id) {
                        return Ok(col(hits[0].id, hits[0].ty));
                    }
                    return Err(SqlError::AmbiguousColumn {
                        name,
                        pos: pos_of(id),
                    });
                }
            }
        }
        let full = match &q {
            Some(q) => format!("{q}.{name}"),
            None => name.clone(),
        };
        let candidates: Vec<String> = std::iter::once(cx.scope)
            .chain(cx.outer.iter())
            .flat_map(|s| s.cols.iter())
            .map(|c| match (&q, &c.qualifier) {
                (Some(_), Some(cq)) => format!("{cq}.{}", c.name),
                _ => c.name.clone(),
            })
            .collect();
        let suggestion = did_you_mean(&full, candidates.iter().map(|s| s.as_str()));
        // The message names the column alone; the position points at the qualifier.
        Err(SqlError::UnknownColumn {
            name,
            pos: pos_of(qualifier.unwrap_or(id)),
            suggestion,
        })
    }

    /// Binds a chain `a AND b AND ...` (or OR) as one: the operands are gathered
    /// without recursion and joined as a balanced tree, so a chain of thousands
    /// of terms is neither deep nor quadratic (AND and OR are associative in
    /// three-valued logic, and the operands keep their order).
    fn bind_connective(
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

    /// `d ± interval` for a date (a date again, as kura always gave; with
    /// hours, minutes or seconds a timestamp, as in PostgreSQL) or a timestamp.
    fn plus_interval(
        &mut self,
        d: PhysExpr,
        iv: (i32, i32, i64),
        negate: bool,
        op: &ast::BinaryOperator,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        match d.data_type() {
            // A timestamp, as in PostgreSQL; computed on the date (cheaper).
            DataType::Date if iv.2 == 0 => Ok(fold(coerce(
                add_interval(d, iv, negate),
                DataType::Timestamp,
                p,
            )?)),
            DataType::Date => Ok(add_timestamp_interval(
                coerce(d, DataType::Timestamp, p)?,
                iv,
                negate,
            )),
            DataType::Timestamp => Ok(add_timestamp_interval(d, iv, negate)),
            t => Err(SqlError::mismatch(
                format!("operator does not exist: {t} {op} interval"),
                p,
            )),
        }
    }

    fn bind_binary(
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
            if let Some(iv) = super::interval_fn::constant_interval(&b) {
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
            if let (Some(iv), B::Plus) = (super::interval_fn::constant_interval(&a), op) {
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
                Ok(super::binary_fn::binary_call(
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

    pub(super) fn arithmetic(
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
    pub(super) fn unify_params(&mut self, a: PhysExpr, b: PhysExpr) -> (PhysExpr, PhysExpr) {
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
    pub(super) fn comparison(
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
        if let Some(e) = super::json_fn::json_comparison(op, &a, &b, p)? {
            return Ok(e);
        }
        let (ta, tb) = (a.data_type(), b.data_type());
        if (ta, tb) == (DataType::Interval, DataType::Interval) {
            // Intervals compare by span: `1 mon` = `30 days`.
            let (a, b) = (super::interval_fn::span(a), super::interval_fn::span(b));
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

    fn scalar_call(
        &mut self,
        func: ScalarFunc,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(SqlError::mismatch(format!("{} {what}", func.name()), p))
            }
        };
        // The length of binary data is its bytes.
        if let (ScalarFunc::Length, [a]) = (func, args.as_slice()) {
            if a.data_type() == DataType::Bytea {
                return Ok(super::binary_fn::binary_call(
                    kura_exec::expr::binary::BinaryFunc::Length,
                    args,
                    DataType::Integer,
                ));
            }
        }
        // An untyped NULL argument of a numeric function resolves to double precision,
        // the preferred type of PostgreSQL's numeric category (`abs(NULL)`).
        let args = if matches!(func, ScalarFunc::Abs | ScalarFunc::Round) {
            args.into_iter()
                .enumerate()
                .map(|(i, a)| {
                    if i == 0 && is_untyped_null(&a) {
                        PhysExpr::literal(Value::Null, DataType::Double)
                    } else {
                        a
                    }
                })
                .collect()
        } else {
            args
        };
        let t = match func {
            ScalarFunc::Substring => {
                need(
                    args.len() >= 2 && (args[0].data_type().is_text() || is_null_literal(&args[0])),
                    "needs text",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Upper | ScalarFunc::Lower | ScalarFunc::Trim => {
                need(
                    args.len() == 1 && args[0].data_type().is_text(),
                    "needs one text argument",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Length => {
                need(
                    args.len() == 1 && args[0].data_type().is_text(),
                    "needs one text argument",
                )?;
                DataType::Integer
            }
            ScalarFunc::Repeat => {
                need(
                    args.len() == 2
                        && (args[0].data_type().is_text() || is_null_literal(&args[0]))
                        && (args[1].data_type().is_integer() || is_null_literal(&args[1])),
                    "needs text and an integer",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Abs => {
                need(
                    args.len() == 1 && args[0].data_type().is_numeric(),
                    "needs one number",
                )?;
                args[0].data_type()
            }
            ScalarFunc::Round => {
                need(
                    !args.is_empty() && args.len() <= 2 && args[0].data_type().is_numeric(),
                    "needs a number",
                )?;
                match args[0].data_type() {
                    DataType::Decimal { precision, .. } => {
                        let d = match args.get(1) {
                            Some(PhysExpr::Literal {
                                value: Value::Integer(d),
                                ..
                            }) => (*d).clamp(0, 38) as u8,
                            None => 0,
                            _ => {
                                return Err(SqlError::unsupported(
                                    "round with non-constant digits",
                                    p,
                                ))
                            }
                        };
                        DataType::Decimal {
                            precision: precision.max(d + 1),
                            scale: d,
                        }
                    }
                    t => t,
                }
            }
            ScalarFunc::Coalesce => {
                let mut t: Option<DataType> = None;
                for a in &args {
                    if is_untyped_null(a) {
                        continue;
                    }
                    t = Some(match t {
                        None => a.data_type(),
                        Some(x) => common_type(x, a.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!(
                                    "COALESCE types {x} and {} cannot be matched",
                                    a.data_type()
                                ),
                                p,
                            )
                        })?,
                    });
                }
                t.unwrap_or(DataType::Varchar(None))
            }
            _ => {
                return Err(SqlError::Internal(format!(
                    "{} is not callable by name",
                    func.name()
                )))
            }
        };
        Ok(fold(PhysExpr::Func {
            func,
            args,
            data_type: t,
        }))
    }

    fn bind_function(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let name = match f.name.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) => norm(i),
            _ => return Err(SqlError::Syntax(format!("bad function name {}", f.name))),
        };
        if let (ast::FunctionArguments::Subquery(q), "array", 1) =
            (&f.args, name.as_str(), f.name.0.len())
        {
            return self.array_subquery(q, cx, p);
        }
        if name == "_pg_expandarray" {
            // Its rows are planned as a whole SELECT-list item (`select_srf`).
            return Err(SqlError::unsupported(
                "information_schema._pg_expandarray other than as a whole item of a SELECT list with a FROM clause",
                p,
            ));
        }
        if let Some(bound) = self.bind_more_function(f, &name, cx, p)? {
            return Ok(bound);
        }
        if let Some(bound) = self.bind_sequence_function(f, &name, cx, p)? {
            return Ok(bound);
        }
        if f.over.is_some() {
            return self.bind_window_call(f, &name, cx, p);
        }
        if name == "grouping" {
            return self.bind_grouping(f, cx, p);
        }
        // Clauses this binder does not apply are refused, never ignored: an ignored
        // ORDER BY or IGNORE NULLS would silently change the answer.
        if !f.within_group.is_empty() {
            return Err(SqlError::unsupported("WITHIN GROUP", p));
        }
        if f.null_treatment.is_some() {
            return Err(SqlError::unsupported("IGNORE/RESPECT NULLS", p));
        }
        if !matches!(f.parameters, ast::FunctionArguments::None) {
            return Err(SqlError::unsupported("function parameters", p));
        }
        if let ast::FunctionArguments::List(l) = &f.args {
            if let Some(c) = l.clauses.first() {
                return Err(SqlError::unsupported(format!("{c} in a function call"), p));
            }
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subquery as function argument", p))
            }
            ast::FunctionArguments::List(l) => {
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut star = false;
                let mut args = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                            args.push(e.clone())
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => {
                            return Err(SqlError::unsupported(
                                format!("argument form in {name}"),
                                p,
                            ))
                        }
                    }
                }
                (args, distinct, star)
            }
        };
        if is_core_aggregate(&name) {
            if cx.agg.is_none() {
                let place = cx.clause.map_or("here".to_string(), |c| format!("in {c}"));
                return Err(SqlError::Grouping {
                    message: format!("aggregate functions are not allowed {place}"),
                    pos: p,
                });
            }
            if cx.in_aggregate {
                return Err(SqlError::InvalidValue {
                    message: "aggregate function calls cannot be nested".into(),
                    pos: p,
                });
            }
            cx.in_aggregate = true;
            let agg = cx.agg.take();
            let arg = if star {
                // count(*) FILTER (WHERE c) counts the rows where c holds: count(CASE WHEN c THEN 1 END).
                (name == "count" && f.filter.is_some())
                    .then(|| Ok(PhysExpr::literal(Value::Integer(1), DataType::Integer)))
            } else {
                if args.len() != 1 {
                    cx.agg = agg;
                    cx.in_aggregate = false;
                    return Err(SqlError::mismatch(format!("{name} takes one argument"), p));
                }
                let r = self.bind_expr(&args[0], cx);
                Some(r)
            };
            let filter = f.filter.as_ref().map(|c| {
                let saved = cx.clause.replace("FILTER");
                let b = self.bind_expr(c, cx);
                cx.clause = saved;
                b
            });
            cx.agg = agg;
            cx.in_aggregate = false;
            let mut arg = arg.transpose()?;
            if let Some(filter) = filter.transpose()? {
                let filter = coerce(filter, DataType::Boolean, p)?;
                // FILTER (WHERE c): the aggregate sees its argument only where c is true.
                arg = arg.map(|a| {
                    let data_type = a.data_type();
                    PhysExpr::Case {
                        whens: vec![(filter, a)],
                        otherwise: None,
                        data_type,
                    }
                });
            }
            let call = aggregate_call(&name, arg, distinct, p)?;
            let ty = call.data_type;
            let collector = cx
                .agg
                .as_mut()
                .ok_or_else(|| SqlError::Internal("aggregate collector".into()))?;
            if let Some((_, id)) = collector.aggs.iter().find(|(c, _)| *c == call) {
                return Ok(col(*id, ty));
            }
            let id = self.cols.add(&name, ty);
            collector.aggs.push((call, id));
            return Ok(col(id, ty));
        }
        // Today's date (UTC): the transaction's, as `now()` is, in a session.
        if name == "current_date" && args.is_empty() {
            let today = self.catalog.session().map_or_else(today_utc, |s| {
                kura_common::timestamp::to_date(s.transaction_start)
            });
            return Ok(PhysExpr::literal(Value::Date(today), DataType::Date));
        }
        let bound = args
            .iter()
            .map(|a| self.bind_expr(a, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        if let Some(value) = self.session_function(&name, &bound, p)? {
            return Ok(value);
        }
        let func = match name.as_str() {
            "coalesce" => ScalarFunc::Coalesce,
            "abs" => ScalarFunc::Abs,
            "round" => ScalarFunc::Round,
            "upper" => ScalarFunc::Upper,
            "lower" => ScalarFunc::Lower,
            "length" | "char_length" => ScalarFunc::Length,
            "substr" | "substring" => ScalarFunc::Substring,
            "trim" => ScalarFunc::Trim,
            "repeat" => ScalarFunc::Repeat,
            "date_trunc" => {
                // A date is truncated as the timestamp of its midnight, as in PostgreSQL.
                let [unit, x] = bound.as_slice() else {
                    return Err(SqlError::mismatch(
                        "date_trunc takes a unit and a timestamp",
                        p,
                    ));
                };
                let x = match x.data_type() {
                    DataType::Timestamp => x.clone(),
                    DataType::Date => coerce(x.clone(), DataType::Timestamp, p)?,
                    _ if is_text_literal(x) || is_untyped_null(x) => {
                        coerce(x.clone(), DataType::Timestamp, p)?
                    }
                    t => {
                        return Err(SqlError::mismatch(
                            format!("function date_trunc(text, {t}) does not exist"),
                            p,
                        ))
                    }
                };
                if let PhysExpr::Literal {
                    value: Value::Text(u),
                    ..
                } = unit
                {
                    if kura_common::timestamp::trunc(u, 0).is_none() {
                        return Err(SqlError::InvalidValue {
                            message: format!("unit \"{u}\" not recognized for type timestamp"),
                            pos: p,
                        });
                    }
                } else {
                    return Err(SqlError::unsupported(
                        "date_trunc with a non-constant unit",
                        p,
                    ));
                }
                return Ok(fold(PhysExpr::Func {
                    func: ScalarFunc::DateTrunc,
                    args: vec![unit.clone(), x],
                    data_type: DataType::Timestamp,
                }));
            }
            "nullif" => {
                if bound.len() != 2 {
                    return Err(SqlError::mismatch("nullif takes two arguments", p));
                }
                let eq = self.comparison(BinaryOp::Eq, bound[0].clone(), bound[1].clone(), p)?;
                let first = if is_untyped_null(&bound[0]) {
                    PhysExpr::literal(Value::Null, bound[1].data_type())
                } else {
                    bound[0].clone()
                };
                let t = first.data_type();
                return Ok(PhysExpr::Case {
                    whens: vec![(eq, PhysExpr::literal(Value::Null, t))],
                    otherwise: Some(Box::new(first)),
                    data_type: t,
                });
            }
            _ => {
                let suggestion = did_you_mean(
                    &name,
                    kura_exec::expr::registry::FUNCTIONS
                        .iter()
                        .map(|f| f.name)
                        .chain(super::session_fn::SESSION_FUNCTIONS.iter().copied()),
                );
                return Err(SqlError::UnknownFunction {
                    name,
                    pos: p,
                    suggestion,
                });
            }
        };
        let bound = if func == ScalarFunc::Coalesce {
            let call = self.scalar_call(func, bound.clone(), p)?;
            let t = call.data_type();
            let args = bound
                .into_iter()
                .map(|a| coerce(a, t, p))
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(fold(PhysExpr::Func {
                func,
                args,
                data_type: t,
            }));
        } else {
            bound
        };
        self.scalar_call(func, bound, p)
    }
}

/// `e` as a date literal when it is a timestamp literal at midnight and
/// `other` is a date; `e` unchanged otherwise.
fn midnight_as_date(e: PhysExpr, other: &PhysExpr) -> PhysExpr {
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

/// PostgreSQL casts boolean to and from integer but has no cast between
/// boolean and smallint (`true::int2` is an error there), nor does kura; a
/// uuid, bytea or interval casts only to and from text; json and jsonb to and
/// from text and each other, and jsonb to numbers and boolean.
fn no_boolean_smallint_cast(from: DataType, to: DataType, p: Pos) -> SqlResult<()> {
    let name = |t: DataType| match t {
        DataType::Boolean => "boolean",
        _ => "smallint",
    };
    let binary = |t: DataType| {
        matches!(
            t,
            DataType::Uuid
                | DataType::Bytea
                | DataType::Interval
                | DataType::Json
                | DataType::Jsonb
        )
    };
    let json = |t: DataType| matches!(t, DataType::Json | DataType::Jsonb);
    let allowed = (json(from) && json(to))
        || (from == DataType::Jsonb && (to.is_numeric() || to == DataType::Boolean));
    if (binary(from) || binary(to)) && from != to && !from.is_text() && !to.is_text() && !allowed {
        return Err(SqlError::CannotCoerce {
            message: format!(
                "cannot cast type {} to {}",
                from.to_string().to_lowercase(),
                to.to_string().to_lowercase()
            ),
            pos: p,
        });
    }
    match (from, to) {
        (DataType::Boolean, DataType::SmallInt) | (DataType::SmallInt, DataType::Boolean) => {
            Err(SqlError::CannotCoerce {
                message: format!("cannot cast type {} to {}", name(from), name(to)),
                pos: p,
            })
        }
        _ => Ok(()),
    }
}

/// The aggregate call for `name(arg)` with its result type.
pub(super) fn aggregate_call(
    name: &str,
    arg: Option<PhysExpr>,
    distinct: bool,
    p: Pos,
) -> SqlResult<AggCall> {
    // count(DISTINCT jsonb) counts values: it counts their equality keys.
    let arg = match (name, distinct, arg) {
        ("count", true, Some(a)) if a.data_type() == DataType::Jsonb => {
            Some(super::json_fn::equality_key(a))
        }
        (_, _, arg) => arg,
    };
    let at = arg.as_ref().map(|a| a.data_type());
    if let (true, Some(t)) = (distinct, at) {
        super::json_fn::refuse_json_key(t, "an aggregate's DISTINCT", false)?;
    }
    let (func, data_type) = match (name, at) {
        ("count", None) => (AggFunc::CountStar, DataType::BigInt),
        ("count", Some(_)) => (AggFunc::Count, DataType::BigInt),
        ("sum", Some(t)) if t.is_numeric() => (
            AggFunc::Sum,
            match t {
                DataType::SmallInt | DataType::Integer => DataType::BigInt,
                DataType::BigInt => DataType::Decimal {
                    precision: 38,
                    scale: 0,
                },
                DataType::Double => DataType::Double,
                DataType::Decimal { scale, .. } => DataType::Decimal {
                    precision: 38,
                    scale,
                },
                _ => t,
            },
        ),
        ("avg", Some(t)) if t.is_numeric() => (
            AggFunc::Avg,
            match t {
                DataType::Double => DataType::Double,
                DataType::Decimal { scale, .. } => DataType::Decimal {
                    precision: 38,
                    scale: scale.max(DIV_SCALE),
                },
                _ => DataType::Decimal {
                    precision: 38,
                    scale: DIV_SCALE,
                },
            },
        ),
        ("sum" | "avg", Some(DataType::Interval)) => {
            return Err(SqlError::unsupported(format!("{name}(interval)"), p))
        }
        ("min" | "max", Some(DataType::Json)) => {
            return Err(SqlError::UnknownFunction {
                name: format!("{name}(json)"),
                pos: p,
                suggestion: None,
            })
        }
        ("min" | "max", Some(DataType::Jsonb)) => {
            return Err(SqlError::unsupported(
                format!("{name} over jsonb (kura compares jsonb for equality only)"),
                p,
            ))
        }
        ("min" | "max", Some(t)) if t.is_array() => {
            return Err(SqlError::unsupported(
                format!("{name} over an array (kura compares arrays for equality only)"),
                p,
            ))
        }
        ("min", Some(t)) => (AggFunc::Min, t),
        ("max", Some(t)) => (AggFunc::Max, t),
        (n, Some(t)) => {
            return Err(SqlError::mismatch(
                format!("function {n}({t}) does not exist"),
                p,
            ))
        }
        (n, None) => {
            return Err(SqlError::mismatch(
                format!("function {n}(*) does not exist"),
                p,
            ))
        }
    };
    Ok(AggCall {
        distinct,
        ..AggCall::simple(func, arg, data_type)
    })
}

/// Prefix of the placeholder literal standing for `$n` while a statement is described.
pub(super) const PARAM_MARK: &str = "\u{0}$";

/// The parameter number a describe-time placeholder stands for.
pub(super) fn param_marker(e: &PhysExpr) -> Option<usize> {
    match e {
        PhysExpr::Literal {
            value: Value::Text(t),
            ..
        } => t.strip_prefix(PARAM_MARK)?.parse().ok(),
        _ => None,
    }
}

/// A parameter value as a literal of its own type.
fn param_literal(v: Value, _n: usize) -> PhysExpr {
    let t = match &v {
        Value::Null | Value::Text(_) => DataType::Varchar(None),
        Value::Boolean(_) => DataType::Boolean,
        Value::Integer(_) => DataType::Integer,
        Value::BigInt(_) => DataType::BigInt,
        Value::Double(_) => DataType::Double,
        Value::Decimal(x, s) => DataType::Decimal {
            precision: (x.unsigned_abs().to_string().len() as u8)
                .max(*s + 1)
                .min(38),
            scale: *s,
        },
        Value::Date(_) => DataType::Date,
        Value::Timestamp(_) => DataType::Timestamp,
        Value::Interval(_) => DataType::Interval,
    };
    PhysExpr::literal(v, t)
}

/// The `extract` fields `kura_exec::expr::date_field` computes.
fn date_field(field: &ast::DateTimeField) -> Option<kura_exec::expr::date_field::DateField> {
    use kura_exec::expr::date_field::DateField;
    Some(match field {
        ast::DateTimeField::Dow => DateField::Dow,
        ast::DateTimeField::Isodow => DateField::IsoDow,
        ast::DateTimeField::Doy => DateField::Doy,
        ast::DateTimeField::Quarter => DateField::Quarter,
        ast::DateTimeField::Week(None) => DateField::Week,
        ast::DateTimeField::Isoyear => DateField::IsoYear,
        ast::DateTimeField::Decade => DateField::Decade,
        ast::DateTimeField::Century => DateField::Century,
        ast::DateTimeField::Millennium => DateField::Millennium,
        ast::DateTimeField::Epoch => DateField::Epoch,
        _ => return None,
    })
}
