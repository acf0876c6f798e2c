//! Array kernels: building arrays, `ANY`/`ALL`, subscripts and the array
//! functions. An array value is its canonical PostgreSQL text (see
//! `kura_common::array`), so each kernel parses a row's array, works on its
//! elements as values and writes the result back in canonical form.

use std::cmp::Ordering;

use kura_common::array;
use kura_common::{DataType, Value, Vector};

use super::cast::elements_of;
use super::{BinaryOp, ScalarFunc};
use crate::error::{ExecError, ExecResult};

/// The element type of an array-typed argument.
fn elem_of(v: &Vector) -> ExecResult<DataType> {
    v.data_type
        .element()
        .ok_or_else(|| ExecError::Internal(format!("expected an array, got {}", v.data_type)))
}

/// Parses each row's array, reusing the last parse while rows repeat it (a
/// constant array is the same text in every row).
struct Rows<'a> {
    v: &'a Vector,
    elem: DataType,
    last: Option<(String, Vec<Value>)>,
}

impl<'a> Rows<'a> {
    fn new(v: &'a Vector) -> ExecResult<Rows<'a>> {
        Ok(Rows {
            v,
            elem: elem_of(v)?,
            last: None,
        })
    }

    /// Row `i`'s elements, `None` for a NULL array.
    fn get(&mut self, i: usize) -> ExecResult<Option<&[Value]>> {
        if self.v.is_null(i) {
            return Ok(None);
        }
        let Value::Text(t) = self.v.get_value(i) else {
            return Err(ExecError::Internal("array held as non-text".into()));
        };
        if self.last.as_ref().is_none_or(|(s, _)| *s != t) {
            let elems = elements_of(&t, self.v.data_type)?;
            self.last = Some((t, elems));
        }
        Ok(self.last.as_ref().map(|(_, e)| e.as_slice()))
    }
}

/// `a op b` for two non-NULL values of one type. Text compares exactly except
/// for CHAR, whose trailing blanks are padding.
fn compare(op: BinaryOp, a: &Value, b: &Value, padded: bool) -> bool {
    let o = match (a, b) {
        (Value::Text(x), Value::Text(y)) if !padded => x.as_bytes().cmp(y.as_bytes()),
        _ => a.total_cmp(b),
    };
    match op {
        BinaryOp::Eq | BinaryOp::NotDistinct => o == Ordering::Equal,
        BinaryOp::NotEq => o != Ordering::Equal,
        BinaryOp::Lt => o == Ordering::Less,
        BinaryOp::LtEq => o != Ordering::Greater,
        BinaryOp::Gt => o == Ordering::Greater,
        BinaryOp::GtEq => o != Ordering::Less,
        _ => false,
    }
}

/// `x op ANY(elems)` (or ALL): true/false, or NULL when no element decides
/// it and some comparison was NULL, as PostgreSQL's ScalarArrayOpExpr.
fn any_all(op: BinaryOp, all: bool, x: &Value, elems: &[Value], padded: bool) -> Value {
    if elems.is_empty() {
        return Value::Boolean(all);
    }
    if x.is_null() {
        return Value::Null;
    }
    let mut saw_null = false;
    for e in elems {
        if e.is_null() {
            saw_null = true;
        } else if compare(op, x, e, padded) != all {
            return Value::Boolean(!all);
        }
    }
    if saw_null {
        Value::Null
    } else {
        Value::Boolean(all)
    }
}

fn push(out: &mut Vector, v: &Value) -> ExecResult<()> {
    if out.push_value(v) {
        Ok(())
    } else {
        Err(ExecError::Internal(format!(
            "array result {v} is not {}",
            out.data_type
        )))
    }
}

fn text_arg(v: &Vector, i: usize) -> Option<String> {
    match v.get_value(i) {
        Value::Text(t) => Some(t),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn int_arg(v: &Vector, i: usize) -> Option<i64> {
    match v.get_value(i) {
        Value::Integer(x) => Some(x.into()),
        Value::BigInt(x) => Some(x),
        _ => None,
    }
}

/// Applies array function `func` to argument vectors of `n` rows.
pub(super) fn call(
    func: ScalarFunc,
    args: &[Vector],
    out: DataType,
    n: usize,
) -> ExecResult<Vector> {
    let arg = |i: usize| {
        args.get(i)
            .ok_or_else(|| ExecError::Internal(format!("{} needs argument {i}", func.name())))
    };
    let mut res = Vector::new(out, n);
    match func {
        ScalarFunc::MakeArray => {
            let mut row = Vec::with_capacity(args.len());
            for i in 0..n {
                row.clear();
                row.extend(args.iter().map(|a| a.get_value(i)));
                push(&mut res, &Value::Text(array::format_values(&row)))?;
            }
        }
        ScalarFunc::ArrayAny(op) | ScalarFunc::ArrayAll(op) => {
            let x = arg(0)?;
            let mut rows = Rows::new(arg(1)?)?;
            let padded = matches!(rows.elem, DataType::Char(_));
            let all = matches!(func, ScalarFunc::ArrayAll(_));
            for i in 0..n {
                let v = match rows.get(i)? {
                    None => Value::Null,
                    Some(elems) => any_all(op, all, &x.get_value(i), elems, padded),
                };
                push(&mut res, &v)?;
            }
        }
        ScalarFunc::ArraySubscript => {
            let idx = arg(1)?;
            let mut rows = Rows::new(arg(0)?)?;
            for i in 0..n {
                let v = match (rows.get(i)?, int_arg(idx, i)) {
                    (Some(elems), Some(k)) if k >= 1 && k as usize <= elems.len() => {
                        elems[k as usize - 1].clone()
                    }
                    _ => Value::Null,
                };
                push(&mut res, &v)?;
            }
        }
        ScalarFunc::ArrayLength
        | ScalarFunc::ArrayUpper
        | ScalarFunc::ArrayLower
        | ScalarFunc::Cardinality => {
            let dim = args.get(1);
            let mut rows = Rows::new(arg(0)?)?;
            for i in 0..n {
                let len = rows.get(i)?.map(|e| e.len() as i32);
                let first_dim = dim.is_none_or(|d| int_arg(d, i) == Some(1));
                let v = match (func, len) {
                    (_, None) => Value::Null,
                    (ScalarFunc::Cardinality, Some(l)) => Value::Integer(l),
                    // An empty array has no dimensions at all.
                    (_, Some(0)) => Value::Null,
                    _ if !first_dim => Value::Null,
                    (ScalarFunc::ArrayLower, Some(_)) => Value::Integer(1),
                    (_, Some(l)) => Value::Integer(l),
                };
                push(&mut res, &v)?;
            }
        }
        ScalarFunc::ArrayToString => {
            let sep = arg(1)?;
            let null_text = args.get(2);
            let mut rows = Rows::new(arg(0)?)?;
            for i in 0..n {
                let sep = text_arg(sep, i);
                let null_text = null_text.and_then(|v| text_arg(v, i));
                let v = match (rows.get(i)?, sep) {
                    (Some(elems), Some(sep)) => {
                        let parts: Vec<String> = elems
                            .iter()
                            .filter_map(|e| match e {
                                Value::Null => null_text.clone(),
                                v => Some(v.to_string()),
                            })
                            .collect();
                        Value::Text(parts.join(&sep))
                    }
                    _ => Value::Null,
                };
                push(&mut res, &v)?;
            }
        }
        ScalarFunc::StringToArray => {
            let (s, sep) = (arg(0)?, arg(1)?);
            let null_text = args.get(2);
            for i in 0..n {
                let Some(text) = text_arg(s, i) else {
                    res.push_null();
                    continue;
                };
                let null_text = null_text.and_then(|v| text_arg(v, i));
                let parts: Vec<String> = match text_arg(sep, i) {
                    _ if text.is_empty() => Vec::new(),
                    // A NULL separator splits into characters, an empty one not at all.
                    None => text.chars().map(String::from).collect(),
                    Some(d) if d.is_empty() => vec![text],
                    Some(d) => text.split(d.as_str()).map(String::from).collect(),
                };
                let elems = parts
                    .iter()
                    .map(|p| (Some(p) != null_text.as_ref()).then_some(p.as_str()));
                push(&mut res, &Value::Text(array::format(elems)))?;
            }
        }
        ScalarFunc::ArrayAppend | ScalarFunc::ArrayPrepend | ScalarFunc::ArrayCat => {
            let (a, b) = (arg(0)?, arg(1)?);
            // Either side may be the array; a NULL array counts as empty,
            // except that two NULL arrays concatenate to NULL.
            let mut ra = a.data_type.is_array().then(|| Rows::new(a)).transpose()?;
            let mut rb = b.data_type.is_array().then(|| Rows::new(b)).transpose()?;
            for i in 0..n {
                let side = |r: &mut Option<Rows>, v: &Vector| -> ExecResult<Option<Vec<Value>>> {
                    Ok(match r {
                        Some(r) => r.get(i)?.map(<[Value]>::to_vec),
                        None => Some(vec![v.get_value(i)]),
                    })
                };
                let (x, y) = (side(&mut ra, a)?, side(&mut rb, b)?);
                let v = match (x, y) {
                    (None, None) => Value::Null,
                    (x, y) => {
                        let mut all = x.unwrap_or_default();
                        all.extend(y.unwrap_or_default());
                        Value::Text(array::format_values(&all))
                    }
                };
                push(&mut res, &v)?;
            }
        }
        ScalarFunc::ArrayPosition => {
            let x = arg(1)?;
            let mut rows = Rows::new(arg(0)?)?;
            let padded = matches!(rows.elem, DataType::Char(_));
            for i in 0..n {
                let want = x.get_value(i);
                let v = match rows.get(i)? {
                    None => Value::Null,
                    Some(elems) => elems
                        .iter()
                        .position(|e| match (e.is_null(), want.is_null()) {
                            (true, true) => true,
                            (false, false) => compare(BinaryOp::Eq, e, &want, padded),
                            _ => false,
                        })
                        .map_or(Value::Null, |k| Value::Integer(k as i32 + 1)),
                };
                push(&mut res, &v)?;
            }
        }
        other => {
            return Err(ExecError::Internal(format!(
                "{} is not an array function",
                other.name()
            )))
        }
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_all_follow_postgresql_null_rules() {
        let ints = |xs: &[Option<i32>]| -> Vec<Value> {
            xs.iter()
                .map(|x| x.map_or(Value::Null, Value::Integer))
                .collect()
        };
        let one = Value::Integer(1);
        let eq = BinaryOp::Eq;
        assert_eq!(
            any_all(eq, false, &one, &ints(&[Some(1), None]), false),
            Value::Boolean(true)
        );
        assert_eq!(
            any_all(eq, false, &one, &ints(&[Some(2), None]), false),
            Value::Null
        );
        assert_eq!(
            any_all(eq, false, &one, &ints(&[Some(2)]), false),
            Value::Boolean(false)
        );
        assert_eq!(
            any_all(eq, false, &Value::Null, &[], false),
            Value::Boolean(false)
        );
        assert_eq!(
            any_all(BinaryOp::NotEq, true, &one, &ints(&[Some(2), None]), false),
            Value::Null
        );
        assert_eq!(
            any_all(BinaryOp::NotEq, true, &one, &ints(&[Some(1), None]), false),
            Value::Boolean(false)
        );
        assert_eq!(
            any_all(BinaryOp::NotEq, true, &Value::Null, &[], false),
            Value::Boolean(true)
        );
    }
}
