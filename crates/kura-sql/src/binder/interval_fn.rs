//! Binding of INTERVAL values (`kura_exec::expr::interval`): interval literals,
//! the operators between intervals, timestamps and numbers, comparisons by
//! span, `age`, the `justify_*` functions and `EXTRACT` of an interval.

use kura_common::interval::{parse_interval, Interval, IntervalError};
use kura_common::{DataType, Value};
use kura_exec::expr::interval::{IntervalField, IntervalFunc};
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use sqlparser::ast;

use super::types::{coerce, fold, is_null_literal, is_untyped_literal, is_untyped_null};
use super::vocab::{no_such, pos};
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

/// The value of an `INTERVAL '…' [unit]` literal, with PostgreSQL's errors.
pub(super) fn interval_literal(iv: &ast::Interval, p: Pos) -> SqlResult<Interval> {
    let text = match &*iv.value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::Number(s, _) => s.clone(),
            _ => return Err(SqlError::unsupported("this interval form", p)),
        },
        _ => return Err(SqlError::unsupported("a non-constant INTERVAL literal", p)),
    };
    if iv.last_field.is_some() || iv.fractional_seconds_precision.is_some() {
        return Err(SqlError::unsupported(
            "an INTERVAL literal with a field range (… TO …) or precision",
            p,
        ));
    }
    let text = match &iv.leading_field {
        // `INTERVAL '90' DAY`: a number of that unit.
        Some(f) if text.trim().parse::<f64>().is_ok() => format!("{text} {f}"),
        Some(f) => {
            return Err(SqlError::unsupported(
                format!("INTERVAL '{text}' {f} (a field after a text that is not a number)"),
                p,
            ))
        }
        None => text,
    };
    parse_interval(&text).map_err(|e| match e {
        IntervalError::Syntax => SqlError::Data {
            code: "22007",
            message: format!("invalid input syntax for type interval: \"{text}\""),
            pos: p,
        },
        IntervalError::OutOfRange => out_of_range(p),
    })
}

fn out_of_range(p: Pos) -> SqlError {
    SqlError::Data {
        code: "22008",
        message: "interval out of range".into(),
        pos: p,
    }
}

/// An interval literal: months, days and microseconds (the clock units).
pub(super) fn interval(iv: &ast::Interval) -> SqlResult<(i32, i32, i64)> {
    let v = interval_literal(iv, pos(&iv.value))?;
    Ok((v.months, v.days, v.micros))
}

/// An interval constant.
pub(super) fn interval_value(iv: Interval, p: Pos) -> SqlResult<PhysExpr> {
    let packed = iv.pack().map_err(|_| out_of_range(p))?;
    Ok(PhysExpr::literal(
        Value::Interval(packed),
        DataType::Interval,
    ))
}

/// The constant interval `e` holds, if it is one.
pub(super) fn constant_interval(e: &PhysExpr) -> Option<Interval> {
    match e {
        PhysExpr::Literal {
            value: Value::Interval(x),
            ..
        } => Some(Interval::unpack(*x)),
        _ => None,
    }
}

/// A call of `f` (folded when constant; NULL when an argument is the NULL literal).
fn call(f: IntervalFunc, args: Vec<PhysExpr>, data_type: DataType) -> PhysExpr {
    if args.iter().any(is_null_literal) {
        return PhysExpr::literal(Value::Null, data_type);
    }
    fold(PhysExpr::Func {
        func: ScalarFunc::Interval(f),
        args,
        data_type,
    })
}

/// The span of an interval expression (what comparisons compare).
pub(super) fn span(e: PhysExpr) -> PhysExpr {
    call(IntervalFunc::Span, vec![e], DataType::BigInt)
}

fn is_time(t: DataType) -> bool {
    matches!(t, DataType::Date | DataType::Timestamp)
}

/// `e` as a timestamp (a date at its midnight, an untyped literal read as one).
fn timestamp(e: PhysExpr, p: Pos) -> SqlResult<PhysExpr> {
    if e.data_type() == DataType::Timestamp {
        Ok(e)
    } else {
        coerce(e, DataType::Timestamp, p)
    }
}

/// `e` as an interval when it is one or an untyped literal; `None` otherwise.
fn as_interval(e: &PhysExpr, p: Pos) -> SqlResult<Option<PhysExpr>> {
    if e.data_type() == DataType::Interval {
        return Ok(Some(e.clone()));
    }
    if is_untyped_literal(e) || is_untyped_null(e) {
        return coerce(e.clone(), DataType::Interval, p).map(Some);
    }
    Ok(None)
}

impl Binder<'_> {
    /// `a op b` when an interval is involved, or `timestamp - timestamp`;
    /// `None` when neither (the caller binds it as usual).
    pub(super) fn interval_operator(
        &mut self,
        op: BinaryOp,
        a: &PhysExpr,
        b: &PhysExpr,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        let (ta, tb) = (a.data_type(), b.data_type());
        let interval = DataType::Interval;
        if ta != interval && tb != interval {
            // Only timestamp - timestamp makes an interval from none.
            let timestamps = (ta == DataType::Timestamp && (is_time(tb) || is_untyped_literal(b)))
                || (tb == DataType::Timestamp && (is_time(ta) || is_untyped_literal(a)));
            if op == BinaryOp::Sub && timestamps {
                let args = vec![timestamp(a.clone(), p)?, timestamp(b.clone(), p)?];
                return Ok(Some(call(IntervalFunc::TimestampDiff, args, interval)));
            }
            return Ok(None);
        }
        let no_operator = || {
            SqlError::mismatch(
                format!("operator does not exist: {ta} {} {tb}", op.symbol()),
                p,
            )
        };
        if op.is_comparison() {
            // `comparison` compares intervals by span.
            return Ok(None);
        }
        let expr = match op {
            BinaryOp::Add | BinaryOp::Sub if is_time(ta) => {
                let f = if op == BinaryOp::Add {
                    IntervalFunc::TimestampAdd
                } else {
                    IntervalFunc::TimestampSub
                };
                let iv = as_interval(b, p)?.ok_or_else(no_operator)?;
                self.timestamp_plus(f, a.clone(), iv, p)?
            }
            BinaryOp::Add if is_time(tb) => {
                let iv = as_interval(a, p)?.ok_or_else(no_operator)?;
                self.timestamp_plus(IntervalFunc::TimestampAdd, b.clone(), iv, p)?
            }
            BinaryOp::Add | BinaryOp::Sub => {
                let (Some(x), Some(y)) = (as_interval(a, p)?, as_interval(b, p)?) else {
                    return Err(no_operator());
                };
                let f = if op == BinaryOp::Add {
                    IntervalFunc::Add
                } else {
                    IntervalFunc::Sub
                };
                call(f, vec![x, y], interval)
            }
            BinaryOp::Mul | BinaryOp::Div => {
                let (iv, n) = match (ta == interval, tb == interval) {
                    (true, false) => (a, b),
                    (false, true) if op == BinaryOp::Mul => (b, a),
                    _ => return Err(no_operator()),
                };
                let n_type = n.data_type();
                if !(n_type.is_numeric() || is_untyped_literal(n) || is_untyped_null(n)) {
                    return Err(no_operator());
                }
                let n = coerce(n.clone(), DataType::Double, p)?;
                let f = if op == BinaryOp::Mul {
                    IntervalFunc::Mul
                } else {
                    IntervalFunc::Div
                };
                call(f, vec![iv.clone(), n], interval)
            }
            _ => return Err(no_operator()),
        };
        Ok(Some(expr))
    }

    /// `t ± iv` for a date or timestamp `t`: a timestamp.
    fn timestamp_plus(
        &mut self,
        f: IntervalFunc,
        t: PhysExpr,
        iv: PhysExpr,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        Ok(call(f, vec![timestamp(t, p)?, iv], DataType::Timestamp))
    }

    /// `- iv`.
    pub(super) fn interval_negate(&mut self, x: PhysExpr) -> PhysExpr {
        call(IntervalFunc::Neg, vec![x], DataType::Interval)
    }

    /// `EXTRACT(field FROM iv)` / `date_part('field', iv)`.
    pub(super) fn interval_field(
        &mut self,
        field: &str,
        x: PhysExpr,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let f = IntervalField::named(field)
            .ok_or_else(|| SqlError::unsupported(format!("interval units \"{field}\""), p))?;
        Ok(call(IntervalFunc::Field(f), vec![x], f.data_type()))
    }

    /// `name(args)` for one of [`NAMES`].
    pub(super) fn bind_interval_fn(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let all = args.clone();
        match (name, args.len()) {
            ("age", 1 | 2) => {
                let mut ts = Vec::with_capacity(2);
                if args.len() == 1 {
                    // age(t) is from today's midnight.
                    let today = kura_common::timestamp::from_date(kura_common::timestamp::to_date(
                        kura_common::timestamp::now_utc(),
                    ));
                    ts.push(PhysExpr::literal(
                        Value::Timestamp(today),
                        DataType::Timestamp,
                    ));
                }
                for a in args {
                    if !(is_time(a.data_type()) || is_untyped_literal(&a) || is_untyped_null(&a)) {
                        return Err(no_such(name, &all, p));
                    }
                    ts.push(timestamp(a, p)?);
                }
                Ok(call(IntervalFunc::Age, ts, DataType::Interval))
            }
            ("justify_days" | "justify_hours" | "justify_interval", 1) => {
                let x = as_interval(&args[0], p)?.ok_or_else(|| no_such(name, &all, p))?;
                let f = match name {
                    "justify_days" => IntervalFunc::JustifyDays,
                    "justify_hours" => IntervalFunc::JustifyHours,
                    _ => IntervalFunc::JustifyInterval,
                };
                Ok(call(f, vec![x], DataType::Interval))
            }
            _ => Err(no_such(name, &all, p)),
        }
    }
}
