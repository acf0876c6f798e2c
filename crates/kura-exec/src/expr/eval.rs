//! Evaluation of [`PhysExpr`] over a batch, one vector per node; predicates turn
//! into selection vectors.

use kura_common::{Batch, ColumnData, DataType, Value, Vector};
use std::borrow::Cow;

use super::arith::arithmetic;
use super::arith_narrow;
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
            let mut s = kura_common::StrVec::with_capacity(n, n * b.len());
            for _ in 0..n {
                s.push(b);
            }
            ColumnData::Str(s)
        }
    };
    Ok(v)
}

fn bools(v: &Vector) -> ExecResult<&[bool]> {
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
    let (expr, value, ty, constant_left) = match (left, right) {
        (PhysExpr::Literal { .. }, PhysExpr::Literal { .. }) => return Ok(None),
        (e, PhysExpr::Literal { value, data_type }) => (e, value, *data_type, false),
        (PhysExpr::Literal { value, data_type }, e) => (e, value, *data_type, true),
        _ => return Ok(None),
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
                None => {
                    let c = broadcast(value, ty, v.len())?;
                    let v: &Vector = &v;
                    let (l, r) = if constant_left { (&c, v) } else { (v, &c) };
                    compare(op, l, r).map(Some)
                }
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
    let (expr, value, ty, constant_left) = match (left, right) {
        (PhysExpr::Literal { .. }, PhysExpr::Literal { .. }) => return Ok(None),
        (e, PhysExpr::Literal { value, data_type }) => (e, value, *data_type, false),
        (PhysExpr::Literal { value, data_type }, e) => (e, value, *data_type, true),
        _ => return Ok(None),
    };
    if value.is_null() {
        return Ok(None);
    }
    let v = expr.eval_ref(batch)?;
    if let Some(res) = arith_narrow::with_constant(op, &v, value, ty, constant_left, out) {
        return Ok(Some(res));
    }
    // The general path, on the vector already evaluated.
    let c = broadcast(value, ty, v.len())?;
    let v: &Vector = &v;
    let (l, r) = if constant_left { (&c, v) } else { (v, &c) };
    arithmetic(op, l, r, out).map(Some)
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
                        let mut out = Vector::new(*data_type, n);
                        for i in 0..n {
                            if l.is_null(i) || r.is_null(i) {
                                out.push_null();
                            } else {
                                out.push_value(&Value::Text(format!(
                                    "{}{}",
                                    l.get_value(i),
                                    r.get_value(i)
                                )));
                            }
                        }
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
                cast_vector(&v, *to)
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
                call(*func, &a, *data_type, n)
            }
            PhysExpr::Case {
                whens,
                otherwise,
                data_type,
            } => eval_case(whens, otherwise.as_deref(), *data_type, batch),
        }
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
        PhysExpr::Negate(_) => true,
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
                | ScalarFunc::RegtypeIn,
            ..
        } => true,
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

/// Rows (physical indexes) where a BOOLEAN vector is TRUE (not FALSE, not NULL).
pub fn selection_of(v: &Vector) -> ExecResult<Vec<u32>> {
    let b = bools(v)?;
    Ok(match &v.validity {
        None => (0..b.len() as u32).filter(|&i| b[i as usize]).collect(),
        Some(valid) => (0..b.len() as u32)
            .filter(|&i| b[i as usize] && valid[i as usize])
            .collect(),
    })
}

/// Applies a predicate to a batch: the result keeps only rows where it is TRUE.
/// Conjunctions are applied one conjunct at a time on the surviving rows, so a
/// later conjunct never sees rows an earlier one rejected.
pub fn eval_predicate(pred: &PhysExpr, batch: Batch) -> ExecResult<Batch> {
    if let PhysExpr::Binary {
        op: BinaryOp::And, ..
    } = pred
    {
        let mut parts = Vec::new();
        conjuncts(pred, &mut parts);
        let mut batch = batch;
        let mut i = 0;
        while i < parts.len() {
            if batch.is_empty() {
                return Ok(batch);
            }
            // Two bounds of one column in a row are one range test.
            let range = parts
                .get(i + 1)
                .and_then(|next| super::select::select_column_range(parts[i], next, &batch));
            if let Some(sel) = range {
                let all = batch.selection.is_none() && sel.len() == batch.num_rows;
                batch.selection = (!all).then_some(sel);
                i += 2;
            } else {
                batch = eval_predicate(parts[i], batch)?;
                i += 1;
            }
        }
        return Ok(batch);
    }
    if let PhysExpr::Binary {
        op: BinaryOp::Or,
        left,
        right,
        ..
    } = pred
    {
        return eval_or(left, right, batch);
    }
    let direct = super::select::select_column_constant(pred, &batch)
        .or_else(|| super::select::select_column_column(pred, &batch));
    if let Some(sel) = direct {
        let all = batch.selection.is_none() && sel.len() == batch.num_rows;
        return Ok(Batch {
            selection: (!all).then_some(sel),
            ..batch
        });
    }
    let Some(live) = batch.selection.as_ref() else {
        let v = pred.eval(&batch)?;
        let sel = selection_of(&v)?;
        let n = batch.num_rows;
        return Ok(Batch {
            selection: if sel.len() == n { None } else { Some(sel) },
            ..batch
        });
    };
    // Later conjuncts: gather only the columns this one reads (at the live rows,
    // so no rejected row reaches it) and narrow the selection, instead of
    // compacting every column of the batch once per conjunct.
    let mut used = Vec::new();
    pred.columns(&mut used);
    let cols = batch
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if used.contains(&i) {
                c.take(live)
            } else {
                Vector::new(c.data_type, 0)
            }
        })
        .collect();
    let gathered = Batch {
        columns: cols,
        selection: None,
        num_rows: live.len(),
    };
    let v = pred.eval(&gathered)?;
    let keep = selection_of(&v)?;
    let sel: Vec<u32> = keep.iter().map(|&j| live[j as usize]).collect();
    Ok(Batch {
        selection: Some(sel),
        ..batch
    })
}

/// The conjuncts of `e`, left to right.
fn conjuncts<'a>(e: &'a PhysExpr, out: &mut Vec<&'a PhysExpr>) {
    match e {
        PhysExpr::Binary {
            op: BinaryOp::And,
            left,
            right,
            ..
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        _ => out.push(e),
    }
}

/// `left OR right` as a filter: the rows where the left side is TRUE are kept,
/// and the right side is tested only on the others (a row is kept when either
/// side is TRUE, so NULLs need nothing more). Each side narrows in turn as a
/// conjunction does: TPC-H Q19's three (brand, containers, size) branches each
/// compare containers only at their brand's rows, not at every part.
fn eval_or(left: &PhysExpr, right: &PhysExpr, batch: Batch) -> ExecResult<Batch> {
    let n = batch.num_rows;
    let live: Vec<u32> = match &batch.selection {
        Some(s) => s.clone(),
        None => (0..n as u32).collect(),
    };
    let b = eval_predicate(left, batch)?;
    let Some(by_left) = b.selection else {
        return Ok(b);
    };
    if by_left.len() == live.len() {
        return Ok(Batch {
            selection: Some(by_left),
            ..b
        });
    }
    // The live rows the left side did not keep (both ascending).
    let mut rest = Vec::with_capacity(live.len() - by_left.len());
    let mut kept = by_left.iter().peekable();
    for &r in &live {
        if kept.next_if_eq(&&r).is_none() {
            rest.push(r);
        }
    }
    let b = eval_predicate(
        right,
        Batch {
            selection: Some(rest.clone()),
            ..b
        },
    )?;
    // No selection back means every row given passed.
    let by_right = b.selection.clone().unwrap_or(rest);
    // Both ascending and disjoint: one merge.
    let mut sel = Vec::with_capacity(by_left.len() + by_right.len());
    let (mut i, mut j) = (0, 0);
    while i < by_left.len() || j < by_right.len() {
        if j == by_right.len() || (i < by_left.len() && by_left[i] < by_right[j]) {
            sel.push(by_left[i]);
            i += 1;
        } else {
            sel.push(by_right[j]);
            j += 1;
        }
    }
    let all = sel.len() == n;
    Ok(Batch {
        selection: (!all).then_some(sel),
        ..b
    })
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
        DataType::Integer | DataType::BigInt => false,
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

#[cfg(test)]
mod tests {
    use kura_common::{Batch, DataType, Value, Vector};

    use super::*;

    fn col(index: usize) -> PhysExpr {
        PhysExpr::Column {
            index,
            data_type: DataType::Boolean,
        }
    }

    fn binary(op: BinaryOp, left: PhysExpr, right: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
            data_type: DataType::Boolean,
        }
    }

    #[test]
    fn or_filters_keep_the_rows_either_side_makes_true() {
        // Every combination of TRUE, FALSE and NULL in three columns; the
        // filter must keep exactly the rows whose evaluated predicate is TRUE,
        // with and without a selection coming in.
        let states = [Value::Boolean(true), Value::Boolean(false), Value::Null];
        let mut cols = [Vec::new(), Vec::new(), Vec::new()];
        for a in &states {
            for b in &states {
                for c in &states {
                    cols[0].push(a.clone());
                    cols[1].push(b.clone());
                    cols[2].push(c.clone());
                }
            }
        }
        let n = cols[0].len();
        let preds = [
            binary(BinaryOp::Or, col(0), col(1)),
            binary(BinaryOp::Or, binary(BinaryOp::And, col(0), col(1)), col(2)),
            binary(BinaryOp::And, binary(BinaryOp::Or, col(0), col(1)), col(2)),
            binary(BinaryOp::Or, col(0), binary(BinaryOp::Or, col(1), col(2))),
        ];
        for pred in &preds {
            for every in [1usize, 2, 5] {
                let mut batch = Batch::new(
                    cols.iter()
                        .map(|c| Vector::from_values(DataType::Boolean, c).unwrap())
                        .collect(),
                );
                if every > 1 {
                    batch.selection = Some((0..n as u32).step_by(every).collect());
                }
                let live: Vec<u32> = batch
                    .selection
                    .clone()
                    .unwrap_or_else(|| (0..n as u32).collect());
                let general = pred.eval(&batch).unwrap();
                let expect: Vec<u32> = live
                    .into_iter()
                    .filter(|&r| general.get_value(r as usize) == Value::Boolean(true))
                    .collect();
                let got = eval_predicate(pred, batch).unwrap();
                let got = got.selection.unwrap_or_else(|| (0..n as u32).collect());
                assert_eq!(got, expect, "{pred} every {every}");
            }
        }
    }
}
