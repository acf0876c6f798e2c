//! Evaluation of [`PhysExpr`] over a batch, one vector per node (filters that
//! narrow a selection instead are in `predicate`).

use kura_common::{Batch, ColumnData, DataType, Value, Vector};
use std::borrow::Cow;

use super::arith::arithmetic;
use super::arith_narrow;
use super::budget;
use super::cast::cast_vector;
use super::compare::{compare, compare_constant, compare_text_constant, trim_blanks};
use super::func::call;
use super::{BinaryOp, PhysExpr, ScalarFunc};
use crate::error::{ExecError, ExecResult};

/// `n` copies of a constant.
pub fn broadcast(value: &Value, dt: DataType, n: usize) -> ExecResult<Vector> {
    let mut v = Vector::new(dt, n);
    if value.is_null() {
        v.data = match dt.physical() {
            kura_common::types::PhysicalType::Bool => ColumnData::Bool(vec![false; n]),
            kura_common::types::PhysicalType::I32 => ColumnData::I32(vec![0; n]),
            kura_common::types::PhysicalType::I64 => ColumnData::I64(vec![0; n]),
            kura_common::types::PhysicalType::I128 => ColumnData::I128(vec![0; n]),
            kura_common::types::PhysicalType::F64 => ColumnData::F64(vec![0.0; n]),
            kura_common::types::PhysicalType::Str => {
                let mut s = kura_common::StrVec::with_capacity(n, 0);
                for _ in 0..n {
                    s.push(b"");
                }
                ColumnData::Str(s)
            }
        };
        v.validity = Some(vec![false; n]);
        return Ok(v);
    }
    let mut one = Vector::new(dt, 1);
    if !one.push_value(value) {
        return Err(ExecError::Internal(format!(
            "constant {value} is not of type {dt}"
        )));
    }
    v.data = match &one.data {
        ColumnData::Bool(x) => ColumnData::Bool(vec![x[0]; n]),
        ColumnData::I32(x) => ColumnData::I32(vec![x[0]; n]),
        ColumnData::I64(x) => ColumnData::I64(vec![x[0]; n]),
        ColumnData::I128(x) => ColumnData::I128(vec![x[0]; n]),
        ColumnData::F64(x) => ColumnData::F64(vec![x[0]; n]),
        ColumnData::Str(x) => {
            let b = x.get_bytes(0);
            // A long constant copied into every row of a batch adds up: a
            // 1 MB text is a gigabyte over 1,024 rows.
            let bytes = n.saturating_mul(b.len());
            if bytes > u32::MAX as usize {
                return Err(ExecError::TooLarge(format!(
                    "a constant of {} bytes repeated over {n} rows",
                    b.len()
                )));
            }
            budget::check_room(bytes)?;
            budget::charge(bytes)?;
            let mut s = kura_common::StrVec::with_capacity(n, bytes);
            for _ in 0..n {
                s.push(b);
            }
            ColumnData::Str(s)
        }
    };
    Ok(v)
}

pub(super) fn bools(v: &Vector) -> ExecResult<&[bool]> {
    match &v.data {
        ColumnData::Bool(b) => Ok(b),
        _ => Err(ExecError::Internal(format!(
            "expected BOOLEAN, got {}",
            v.data_type
        ))),
    }
}

fn bool_vector(vals: Vec<bool>, validity: Option<Vec<bool>>) -> Vector {
    let validity = validity.filter(|v| v.iter().any(|b| !*b));
    Vector {
        data_type: DataType::Boolean,
        data: ColumnData::Bool(vals),
        validity,
    }
}

/// Three-valued AND/OR (Kleene logic).
fn logic(op: BinaryOp, l: &Vector, r: &Vector) -> ExecResult<Vector> {
    let (a, b) = (bools(l)?, bools(r)?);
    let n = a.len();
    let mut vals = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for i in 0..n {
        let x = if l.is_null(i) { None } else { Some(a[i]) };
        let y = if r.is_null(i) { None } else { Some(b[i]) };
        let res = match op {
            BinaryOp::And => match (x, y) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            _ => match (x, y) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        };
        vals.push(res.unwrap_or(false));
        valid.push(res.is_some());
    }
    Ok(bool_vector(vals, Some(valid)))
}

/// A comparison of an expression with a non-NULL literal, evaluated against the
/// literal once (see [`compare_text_constant`] and [`compare_constant`]).
fn compare_with_literal(
    op: BinaryOp,
    left: &PhysExpr,
    right: &PhysExpr,
    batch: &Batch,
) -> ExecResult<Option<Vector>> {
    let Some((expr, value, ty, constant_left)) = split_literal(left, right) else {
        return Ok(None);
    };
    use kura_common::types::PhysicalType;
    match (value, expr.data_type().physical()) {
        (Value::Text(text), PhysicalType::Str) => {
            let v = expr.eval_ref(batch)?;
            Ok(compare_text_constant(
                op,
                &v,
                text.as_bytes(),
                ty,
                constant_left,
            ))
        }
        (Value::Null | Value::Text(_), _) => Ok(None),
        (_, PhysicalType::I32 | PhysicalType::I64) => {
            let v = expr.eval_ref(batch)?;
            match compare_constant(op, &v, value, ty, constant_left) {
                Some(out) => Ok(Some(out)),
                // The general path, on the vector already evaluated.
                None => with_broadcast(value, ty, &v, constant_left, |l, r| compare(op, l, r)),
            }
        }
        _ => Ok(None),
    }
}

/// `+`, `-` or `*` of an integer or decimal expression and a non-NULL literal,
/// without broadcasting the literal (see [`arith_narrow::with_constant`]);
/// `None` when the general path must answer.
fn arithmetic_with_literal(
    op: BinaryOp,
    left: &PhysExpr,
    right: &PhysExpr,
    out: DataType,
    batch: &Batch,
) -> ExecResult<Option<Vector>> {
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) || out == DataType::Double {
        return Ok(None);
    }
    let Some((expr, value, ty, constant_left)) = split_literal(left, right) else {
        return Ok(None);
    };
    if value.is_null() {
        return Ok(None);
    }
    let v = expr.eval_ref(batch)?;
    if let Some(res) = arith_narrow::with_constant(op, &v, value, ty, constant_left, out) {
        return Ok(Some(res));
    }
    // The general path, on the vector already evaluated.
    with_broadcast(value, ty, &v, constant_left, |l, r| {
        arithmetic(op, l, r, out)
    })
}

/// A binary operation's operands as (the expression, the literal, its type,
/// whether the literal is on the left); `None` unless exactly one is a literal.
fn split_literal<'a>(
    left: &'a PhysExpr,
    right: &'a PhysExpr,
) -> Option<(&'a PhysExpr, &'a Value, DataType, bool)> {
    match (left, right) {
        (PhysExpr::Literal { .. }, PhysExpr::Literal { .. }) => None,
        (e, PhysExpr::Literal { value, data_type }) => Some((e, value, *data_type, false)),
        (PhysExpr::Literal { value, data_type }, e) => Some((e, value, *data_type, true)),
        _ => None,
    }
}

/// `f(literal, v)` or `f(v, literal)` on the literal made a vector of `v`'s
/// length: the general path after a literal-specialised one declined, on the
/// vector it already evaluated.
fn with_broadcast(
    value: &Value,
    ty: DataType,
    v: &Vector,
    constant_left: bool,
    f: impl FnOnce(&Vector, &Vector) -> ExecResult<Vector>,
) -> ExecResult<Option<Vector>> {
    let c = broadcast(value, ty, v.len())?;
    let (l, r) = if constant_left { (&c, v) } else { (v, &c) };
    f(l, r).map(Some)
}

impl PhysExpr {
    /// [`PhysExpr::eval`], borrowing a plain column from `batch` instead of
    /// copying it: operators read their inputs, so `#1 * (1 - #2)` copies
    /// neither `#1` nor `#2`.
    pub fn eval_ref<'a>(&self, batch: &'a Batch) -> ExecResult<Cow<'a, Vector>> {
        match self {
            PhysExpr::Column { index, .. } => batch
                .columns
                .get(*index)
                .map(Cow::Borrowed)
                .ok_or_else(|| ExecError::Internal(format!("column #{index} out of range"))),
            _ => self.eval(batch).map(Cow::Owned),
        }
    }

    /// Evaluates over every physical row of `batch` (callers compact first when a
    /// selection must shield rows from errors such as division by zero).
    pub fn eval(&self, batch: &Batch) -> ExecResult<Vector> {
        let n = batch.num_rows;
        match self {
            PhysExpr::Column { index, .. } => batch
                .columns
                .get(*index)
                .cloned()
                .ok_or_else(|| ExecError::Internal(format!("column #{index} out of range"))),
            PhysExpr::Literal { value, data_type } => broadcast(value, *data_type, n),
            PhysExpr::Binary {
                op,
                left,
                right,
                data_type,
            } => {
                if op.is_comparison() {
                    if let Some(v) = compare_with_literal(*op, left, right, batch)? {
                        return Ok(v);
                    }
                }
                if matches!(op, BinaryOp::And | BinaryOp::Or) && may_fail(right) {
                    return eval_logic_short_circuit(*op, left, right, batch);
                }
                if let Some(v) = arithmetic_with_literal(*op, left, right, *data_type, batch)? {
                    return Ok(v);
                }
                let l = left.eval_ref(batch)?;
                let r = right.eval_ref(batch)?;
                match op {
                    BinaryOp::And | BinaryOp::Or => logic(*op, &l, &r),
                    BinaryOp::NotDistinct => {
                        let eq = compare(BinaryOp::Eq, &l, &r)?;
                        let eq = bools(&eq)?;
                        let vals = (0..n)
                            .map(|i| match (l.is_null(i), r.is_null(i)) {
                                (true, true) => true,
                                (false, false) => eq[i],
                                _ => false,
                            })
                            .collect();
                        Ok(bool_vector(vals, None))
                    }
                    o if o.is_comparison() => compare(*o, &l, &r),
                    BinaryOp::Concat => {
                        if let Some(v) = concat_text(&l, &r, *data_type, n)? {
                            // A chain `a || b || c` counts each link's result,
                            // not every intermediate one: computed operands
                            // (charged when built) are dropped here.
                            for side in [l, r] {
                                if let Cow::Owned(Vector {
                                    data: ColumnData::Str(s),
                                    ..
                                }) = side
                                {
                                    budget::release(s.data.capacity());
                                }
                            }
                            return Ok(v);
                        }
                        let mut out = Vector::new(*data_type, n);
                        let mut built = 0usize;
                        for i in 0..n {
                            if l.is_null(i) || r.is_null(i) {
                                out.push_null();
                            } else {
                                let text = format!("{}{}", l.get_value(i), r.get_value(i));
                                built += text.len();
                                if built > u32::MAX as usize {
                                    return Err(ExecError::TooLarge(format!(
                                        "|| would build more than {} bytes in one batch",
                                        u32::MAX
                                    )));
                                }
                                budget::check_room(built)?;
                                out.push_value(&Value::Text(text));
                            }
                        }
                        charge_text(&out)?;
                        Ok(out)
                    }
                    _ => arithmetic(*op, &l, &r, *data_type),
                }
            }
            PhysExpr::Not(e) => {
                let v = e.eval_ref(batch)?;
                let vals = bools(&v)?.iter().map(|b| !b).collect();
                Ok(bool_vector(vals, v.validity.clone()))
            }
            PhysExpr::Negate(e) => {
                let v = e.eval_ref(batch)?;
                let zero = broadcast(&Value::Integer(0), DataType::Integer, n)?;
                arithmetic(BinaryOp::Sub, &zero, &v, v.data_type)
            }
            PhysExpr::IsNull { expr, negated } => {
                let v = expr.eval_ref(batch)?;
                let vals = (0..n).map(|i| v.is_null(i) != *negated).collect();
                Ok(bool_vector(vals, None))
            }
            PhysExpr::Cast { expr, to } => {
                let v = expr.eval_ref(batch)?;
                let v = cast_vector(&v, *to)?;
                charge_text(&v)?;
                Ok(v)
            }
            PhysExpr::InList {
                expr,
                list,
                negated,
            } => {
                let v = expr.eval_ref(batch)?;
                let mut vals = vec![false; n];
                let mut valid = v.validity.clone().unwrap_or_else(|| vec![true; n]);
                let has_null = list.iter().any(|x| x.is_null());
                if let ColumnData::Str(s) = &v.data {
                    // The list takes the tested value's type: trailing blanks are
                    // insignificant for CHAR(n) only (bpchar), part of a VARCHAR.
                    let padded = matches!(v.data_type, DataType::Char(_));
                    fn form(b: &[u8], padded: bool) -> &[u8] {
                        if padded {
                            trim_blanks(b)
                        } else {
                            b
                        }
                    }
                    let items: Vec<&[u8]> = list
                        .iter()
                        .filter_map(|x| match x {
                            Value::Text(t) => Some(form(t.as_bytes(), padded)),
                            _ => None,
                        })
                        .collect();
                    for (i, out) in vals.iter_mut().enumerate() {
                        *out = items.contains(&form(s.get_bytes(i), padded));
                    }
                } else if let Some(items) = int_items(v.data_type, list) {
                    // Integers (or dates) against a list of the same kind: compared
                    // as i64, without a Value per row (TPC-H Q16's p_size IN (...)).
                    match &v.data {
                        ColumnData::I32(x) => {
                            for (out, &x) in vals.iter_mut().zip(x) {
                                *out = items.contains(&(x as i64));
                            }
                        }
                        ColumnData::I64(x) => {
                            for (out, x) in vals.iter_mut().zip(x) {
                                *out = items.contains(x);
                            }
                        }
                        _ => unreachable!("int_items checked the column type"),
                    }
                } else {
                    for (i, out) in vals.iter_mut().enumerate() {
                        let x = v.get_value(i);
                        *out = list.iter().any(|y| !y.is_null() && x == *y);
                    }
                }
                for i in 0..n {
                    if !vals[i] && has_null {
                        valid[i] = false;
                    }
                    if *negated {
                        vals[i] = !vals[i];
                    }
                }
                Ok(bool_vector(vals, Some(valid)))
            }
            PhysExpr::Sequence { seq, op, args } => super::sequence::eval(seq, *op, args, batch),
            PhysExpr::Like {
                expr,
                pattern,
                negated,
            } => {
                let v = expr.eval_ref(batch)?;
                let s = match &v.data {
                    ColumnData::Str(s) => s,
                    _ => return Err(ExecError::Internal("LIKE over non-text".into())),
                };
                let vals = (0..n)
                    .map(|i| pattern.matches(s.get_bytes(i)) != *negated)
                    .collect();
                Ok(bool_vector(vals, v.validity.clone()))
            }
            PhysExpr::Func {
                func,
                args,
                data_type,
            } => {
                let a: Vec<Vector> = args
                    .iter()
                    .map(|x| x.eval(batch))
                    .collect::<ExecResult<_>>()?;
                // A function's text result is mostly about as large as its text
                // arguments: that much must still fit before it is built.
                let inputs: usize = a
                    .iter()
                    .map(|v| match &v.data {
                        ColumnData::Str(s) => s.data.len(),
                        _ => 0,
                    })
                    .sum();
                budget::check_room(inputs)?;
                let v = call(*func, &a, *data_type, n)?;
                charge_text(&v)?;
                Ok(v)
            }
            PhysExpr::Case {
                whens,
                otherwise,
                data_type,
            } => {
                let v = eval_case(whens, otherwise.as_deref(), *data_type, batch)?;
                charge_text(&v)?;
                Ok(v)
            }
        }
    }
}

/// `l || r` when both are text (not blank-padded CHAR, whose trailing blanks
/// `||` drops): the bytes copied side by side into a result allocated once, at
/// most both sides' size, which is counted before it is built.
fn concat_text(l: &Vector, r: &Vector, out: DataType, n: usize) -> ExecResult<Option<Vector>> {
    let (ColumnData::Str(a), ColumnData::Str(b)) = (&l.data, &r.data) else {
        return Ok(None);
    };
    let padded = |t: DataType| matches!(t, DataType::Char(_));
    if padded(l.data_type) || padded(r.data_type) || !matches!(out, DataType::Varchar(_)) {
        return Ok(None);
    }
    let most = a.data.len() + b.data.len();
    if most > u32::MAX as usize {
        return Err(ExecError::TooLarge(format!(
            "|| would build more than {} bytes in one batch",
            u32::MAX
        )));
    }
    budget::check_room(most)?;
    let mut o = kura_common::StrVec::with_capacity(n, most);
    let mut validity: Option<Vec<bool>> = None;
    for i in 0..n {
        if l.is_null(i) || r.is_null(i) {
            validity.get_or_insert_with(|| vec![true; n])[i] = false;
            o.push(b"");
        } else {
            o.data.extend_from_slice(a.get_bytes(i));
            o.data.extend_from_slice(b.get_bytes(i));
            o.offsets.push(o.data.len() as u32);
        }
    }
    let v = Vector {
        data_type: out,
        data: ColumnData::Str(o),
        validity,
    };
    charge_text(&v)?;
    Ok(Some(v))
}

/// Counts a text result against the query's memory limit (see [`budget`]).
fn charge_text(v: &Vector) -> ExecResult<()> {
    match &v.data {
        ColumnData::Str(s) => budget::charge(s.data.capacity()),
        _ => Ok(()),
    }
}

/// Whether evaluating `e` on rows its CASE branch (or the left side of its
/// AND/OR) does not select could fail: division by zero, a failing cast, an
/// integer or decimal overflow.
fn may_fail(e: &PhysExpr) -> bool {
    match e {
        PhysExpr::Binary {
            op: BinaryOp::Div | BinaryOp::Mod,
            ..
        }
        | PhysExpr::Cast { .. } => true,
        PhysExpr::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul,
            data_type,
            ..
        } if *data_type != DataType::Double => true,
        PhysExpr::Negate(_) | PhysExpr::Sequence { .. } => true,
        PhysExpr::Binary { left, right, .. } => may_fail(left) || may_fail(right),
        PhysExpr::Not(x) => may_fail(x),
        PhysExpr::IsNull { expr, .. }
        | PhysExpr::InList { expr, .. }
        | PhysExpr::Like { expr, .. } => may_fail(expr),
        // repeat() fails when its result would be too long, a regular
        // expression when its pattern does not parse, regtype on an unknown name.
        PhysExpr::Func {
            func:
                ScalarFunc::Repeat
                | ScalarFunc::RegexMatch
                | ScalarFunc::RegexIMatch
                | ScalarFunc::RegtypeIn
                | ScalarFunc::SplitPart
                | ScalarFunc::RegexpReplace
                | ScalarFunc::RegexpMatch
                | ScalarFunc::RecordField
                | ScalarFunc::ToChar
                | ScalarFunc::ToDate
                | ScalarFunc::ToTimestamp,
            ..
        } => true,
        PhysExpr::Func {
            func: ScalarFunc::Math(f),
            args,
            ..
        } => f.may_fail() || args.iter().any(may_fail),
        PhysExpr::Func {
            func: ScalarFunc::Binary(_) | ScalarFunc::Json(_),
            ..
        } => true,
        PhysExpr::Func {
            func: ScalarFunc::Text(f),
            args,
            ..
        } => f.may_fail() || args.iter().any(may_fail),
        PhysExpr::Func {
            func: ScalarFunc::Interval(f),
            args,
            ..
        } => *f != super::interval::IntervalFunc::Span || args.iter().any(may_fail),
        PhysExpr::Func { args, .. } => args.iter().any(may_fail),
        PhysExpr::Case { .. } => true,
        PhysExpr::Column { .. } | PhysExpr::Literal { .. } => false,
    }
}

/// `left AND right` / `left OR right` where `right` could fail: `right` is
/// evaluated only on the rows `left` leaves open (not FALSE for AND, not TRUE
/// for OR), so `x <> 0 AND 10 / x > 1` raises nothing, as in PostgreSQL.
fn eval_logic_short_circuit(
    op: BinaryOp,
    left: &PhysExpr,
    right: &PhysExpr,
    batch: &Batch,
) -> ExecResult<Vector> {
    let n = batch.num_rows;
    let l = left.eval_ref(batch)?;
    let lb = bools(&l)?;
    let decided = op == BinaryOp::Or;
    let open: Vec<u32> = (0..n as u32)
        .filter(|&i| l.is_null(i as usize) || lb[i as usize] != decided)
        .collect();
    let r = if open.len() == n {
        right.eval(batch)?
    } else {
        // Decided rows keep the left side's answer whatever stands here.
        let mut r = broadcast(&Value::Boolean(decided), DataType::Boolean, n)?;
        if !open.is_empty() {
            let values = right.eval(&take_rows(batch, &open))?;
            scatter(&mut r, &values, &open, false);
        }
        r
    };
    logic(op, &l, &r)
}

/// The rows `rows` of `batch` as a batch of their own. A scan evaluates its
/// filter before it reads the columns only the output needs: those stand
/// empty in the batch and stay empty here (the expression does not read them).
fn take_rows(batch: &Batch, rows: &[u32]) -> Batch {
    let columns = batch
        .columns
        .iter()
        .map(|c| {
            if c.len() == batch.num_rows {
                c.take(rows)
            } else {
                Vector::new(c.data_type, 0)
            }
        })
        .collect();
    let mut out = Batch::with_rows(rows.len());
    out.columns = columns;
    out
}

fn eval_case(
    whens: &[(PhysExpr, PhysExpr)],
    otherwise: Option<&PhysExpr>,
    dt: DataType,
    batch: &Batch,
) -> ExecResult<Vector> {
    let n = batch.num_rows;
    // Branch chosen per row: index into `whens`, or whens.len() for ELSE.
    let mut chosen = vec![whens.len() as u32; n];
    let mut open: Vec<u32> = (0..n as u32).collect();
    for (k, (cond, _)) in whens.iter().enumerate() {
        if open.is_empty() {
            break;
        }
        let c = cond.eval(batch)?;
        let b = bools(&c)?;
        open.retain(|&i| {
            let hit = b[i as usize] && !c.is_null(i as usize);
            if hit {
                chosen[i as usize] = k as u32;
            }
            !hit
        });
    }
    let mut result = broadcast(&Value::Null, dt, n)?;
    let branches: Vec<Option<&PhysExpr>> = whens
        .iter()
        .map(|(_, t)| Some(t))
        .chain(std::iter::once(otherwise))
        .collect();
    for (k, branch) in branches.iter().enumerate() {
        let rows: Vec<u32> = (0..n as u32)
            .filter(|&i| chosen[i as usize] == k as u32)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let Some(expr) = branch else { continue };
        let values = if may_fail(expr) && rows.len() < n {
            let v = cast_vector(&expr.eval(&take_rows(batch, &rows))?, dt)?;
            (v, false)
        } else {
            (cast_vector(&expr.eval(batch)?, dt)?, true)
        };
        scatter(&mut result, &values.0, &rows, values.1);
    }
    Ok(result)
}

/// Copies values into `dst` at `rows`; `src` is either full-length (`aligned`) or
/// holds exactly the values for `rows` in order.
fn scatter(dst: &mut Vector, src: &Vector, rows: &[u32], aligned: bool) {
    let from = |j: usize, i: u32| if aligned { i as usize } else { j };
    let len = dst.len();
    let validity = dst.validity.get_or_insert_with(|| vec![true; len]);
    for (j, &i) in rows.iter().enumerate() {
        validity[i as usize] = !src.is_null(from(j, i));
    }
    match (&mut dst.data, &src.data) {
        (ColumnData::Bool(d), ColumnData::Bool(s)) => rows
            .iter()
            .enumerate()
            .for_each(|(j, &i)| d[i as usize] = s[from(j, i)]),
        (ColumnData::I32(d), ColumnData::I32(s)) => rows
            .iter()
            .enumerate()
            .for_each(|(j, &i)| d[i as usize] = s[from(j, i)]),
        (ColumnData::I64(d), ColumnData::I64(s)) => rows
            .iter()
            .enumerate()
            .for_each(|(j, &i)| d[i as usize] = s[from(j, i)]),
        (ColumnData::I128(d), ColumnData::I128(s)) => rows
            .iter()
            .enumerate()
            .for_each(|(j, &i)| d[i as usize] = s[from(j, i)]),
        (ColumnData::F64(d), ColumnData::F64(s)) => rows
            .iter()
            .enumerate()
            .for_each(|(j, &i)| d[i as usize] = s[from(j, i)]),
        (ColumnData::Str(d), ColumnData::Str(s)) => {
            // Strings are variable-length: rebuild.
            let mut pick: Vec<Option<usize>> = vec![None; d.len()];
            for (j, &i) in rows.iter().enumerate() {
                pick[i as usize] = Some(from(j, i));
            }
            let mut out = kura_common::StrVec::with_capacity(d.len(), d.data.len());
            for (i, p) in pick.iter().enumerate() {
                match p {
                    Some(k) => out.push(s.get_bytes(*k)),
                    None => out.push(d.get_bytes(i)),
                }
            }
            *d = out;
        }
        _ => {}
    }
    if dst.validity.as_ref().is_some_and(|v| v.iter().all(|b| *b)) {
        dst.validity = None;
    }
}

/// Materialises the selection (also for column-less batches).
pub fn compact(batch: Batch) -> Batch {
    match &batch.selection {
        None => batch,
        Some(sel) if batch.columns.is_empty() => Batch::with_rows(sel.len()),
        Some(_) => batch.compact(),
    }
}

/// The non-NULL items of an IN list as i64, when the tested column is an
/// INTEGER or BIGINT column and every item an integer, or a DATE column and
/// every item a date (for these, `Value` equality is equality of the numbers);
/// `None` otherwise.
fn int_items(column: DataType, list: &[Value]) -> Option<Vec<i64>> {
    let dates = match column {
        DataType::SmallInt | DataType::Integer | DataType::BigInt => false,
        DataType::Date => true,
        _ => return None,
    };
    list.iter()
        .filter(|x| !x.is_null())
        .map(|x| match (x, dates) {
            (Value::Integer(i), false) | (Value::Date(i), true) => Some(*i as i64),
            (Value::BigInt(i), false) => Some(*i),
            _ => None,
        })
        .collect()
}
