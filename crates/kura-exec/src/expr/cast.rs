//! CAST between types: a fast path for numeric vectors and a value-at-a-time path
//! (text parsing, formatting) for the rest.

use kura_common::decimal::{parse_decimal_bytes, rescale};
use kura_common::{date, DataType, Value, Vector};

use super::arith::{from_i128, rescale_all, scale_of, to_f64, to_i128};
use super::compare::trim_blanks;
use crate::error::{ExecError, ExecResult};

fn invalid(ty: DataType, text: &str) -> ExecError {
    ExecError::InvalidText {
        ty: ty.to_string(),
        text: text.to_string(),
    }
}

/// Converts one value to type `to`, as PostgreSQL's CAST would.
pub fn cast_value(v: &Value, to: DataType) -> ExecResult<Value> {
    use Value as V;
    if v.is_null() {
        return Ok(V::Null);
    }
    let out_of_range = || ExecError::OutOfRange(format!("{v} does not fit {to}"));
    Ok(match to {
        DataType::Boolean => match v {
            V::Boolean(b) => V::Boolean(*b),
            V::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
                "t" | "true" | "yes" | "on" | "1" => V::Boolean(true),
                "f" | "false" | "no" | "off" | "0" => V::Boolean(false),
                _ => return Err(invalid(to, s)),
            },
            V::Integer(i) => V::Boolean(*i != 0),
            _ => return Err(invalid(to, &v.to_string())),
        },
        DataType::Integer | DataType::BigInt => {
            let x: i128 = match v {
                V::Integer(i) => *i as i128,
                V::BigInt(i) => *i as i128,
                V::Decimal(x, s) => rescale(*x, *s, 0).ok_or_else(out_of_range)?,
                V::Double(f) => {
                    if !f.is_finite() {
                        return Err(out_of_range());
                    }
                    f.round() as i128
                }
                V::Boolean(b) => *b as i128,
                V::Text(s) => s.trim().parse::<i128>().map_err(|_| invalid(to, s))?,
                V::Date(_) | V::Timestamp(_) => return Err(invalid(to, &v.to_string())),
                V::Null => unreachable!(),
            };
            if to == DataType::Integer {
                V::Integer(i32::try_from(x).map_err(|_| out_of_range())?)
            } else {
                V::BigInt(i64::try_from(x).map_err(|_| out_of_range())?)
            }
        }
        DataType::Double => match v {
            V::Text(s) => V::Double(s.trim().parse::<f64>().map_err(|_| invalid(to, s))?),
            other => V::Double(
                other
                    .as_f64()
                    .ok_or_else(|| invalid(to, &other.to_string()))?,
            ),
        },
        DataType::Decimal { precision, scale } => {
            let x = match v {
                V::Integer(i) => rescale(*i as i128, 0, scale),
                V::BigInt(i) => rescale(*i as i128, 0, scale),
                V::Decimal(x, s) => rescale(*x, *s, scale),
                V::Double(f) => Some((f * 10f64.powi(scale as i32)).round() as i128),
                V::Text(s) => Some(
                    parse_decimal_bytes(s.as_bytes(), None, scale).ok_or_else(|| invalid(to, s))?,
                ),
                _ => return Err(invalid(to, &v.to_string())),
            }
            .ok_or_else(out_of_range)?;
            if x.unsigned_abs() >= 10u128.pow(precision as u32) {
                return Err(out_of_range());
            }
            V::Decimal(x, scale)
        }
        DataType::Date => match v {
            V::Date(d) => V::Date(*d),
            V::Timestamp(t) => V::Date(kura_common::timestamp::to_date(*t)),
            V::Text(s) => V::Date(
                date::parse_date_bytes(s.as_bytes())
                    .ok_or_else(|| ExecError::InvalidDate(s.clone()))?,
            ),
            _ => return Err(invalid(to, &v.to_string())),
        },
        DataType::Timestamp => match v {
            V::Timestamp(t) => V::Timestamp(*t),
            V::Date(d) => V::Timestamp(kura_common::timestamp::from_date(*d)),
            V::Text(s) => V::Timestamp(
                kura_common::timestamp::parse_timestamp_bytes(s.as_bytes())
                    .filter(|t| kura_common::timestamp::in_range(*t))
                    .ok_or_else(|| invalid(to, s))?,
            ),
            _ => return Err(invalid(to, &v.to_string())),
        },
        DataType::Varchar(_) | DataType::Char(_) => {
            let mut s = v.to_string();
            if let Some(m) = to.max_len() {
                if s.chars().count() > m as usize {
                    s = s.chars().take(m as usize).collect();
                }
            }
            V::Text(s)
        }
        // Arrays are text: any array or array literal re-reads as `to`'s elements.
        DataType::Array(e) => match v {
            V::Text(s) => V::Text(super::array::array_from_text(s, e.data_type())?),
            _ => return Err(invalid(to, &v.to_string())),
        },
    })
}

/// Casts every value of a vector to `to`.
pub fn cast_vector(v: &Vector, to: DataType) -> ExecResult<Vector> {
    if v.data_type == to {
        return Ok(v.clone());
    }
    let from = v.data_type;
    let int_like = |d: DataType| {
        matches!(
            d,
            DataType::Integer | DataType::BigInt | DataType::Decimal { .. }
        )
    };
    if int_like(from) && int_like(to) {
        let mut x = to_i128(v);
        rescale_all(&mut x, scale_of(from), scale_of(to))?;
        if let DataType::Decimal { precision, .. } = to {
            let lim = 10u128.pow(precision as u32);
            if x.iter()
                .enumerate()
                .any(|(i, a)| !v.is_null(i) && a.unsigned_abs() >= lim)
            {
                return Err(ExecError::OutOfRange(format!("value does not fit {to}")));
            }
        }
        return from_i128(x, v.validity.clone(), to);
    }
    if to == DataType::Double && from.is_numeric() {
        return Ok(Vector {
            data_type: to,
            data: kura_common::ColumnData::F64(to_f64(v)),
            validity: v.validity.clone(),
        });
    }
    // CHAR's trailing blanks are padding: PostgreSQL drops them when a CHAR
    // value becomes another text type (`'a '::char(3)::varchar` is 'a', and so
    // is the CHAR operand of `||`).
    let unpad = matches!(from, DataType::Char(_)) && matches!(to, DataType::Varchar(_));
    if from.is_text() && to.is_text() && to.max_len().is_none() {
        let data = match &v.data {
            kura_common::ColumnData::Str(s) if unpad => kura_common::ColumnData::Str(unpadded(s)),
            other => other.clone(),
        };
        return Ok(Vector {
            data_type: to,
            data,
            validity: v.validity.clone(),
        });
    }
    let mut out = Vector::new(to, v.len());
    for i in 0..v.len() {
        let mut x = v.get_value(i);
        if let (true, Value::Text(t)) = (unpad, &mut x) {
            t.truncate(trim_blanks(t.as_bytes()).len());
        }
        let c = cast_value(&x, to)?;
        if !out.push_value(&c) {
            return Err(ExecError::Internal(format!(
                "cast produced a value not of type {to}"
            )));
        }
    }
    Ok(out)
}

/// The strings of `s` without their trailing blanks.
fn unpadded(s: &kura_common::StrVec) -> kura_common::StrVec {
    let n = s.offsets.len().saturating_sub(1);
    let mut out = kura_common::StrVec {
        offsets: Vec::with_capacity(n + 1),
        data: Vec::with_capacity(s.data.len()),
    };
    out.offsets.push(0);
    for i in 0..n {
        out.data.extend_from_slice(trim_blanks(s.get_bytes(i)));
        out.offsets.push(out.data.len() as u32);
    }
    out
}

/// Casts a vector for storing into a column of type `to` (PostgreSQL's assignment
/// cast): like [`cast_vector`], except that text longer than a VARCHAR(n)/CHAR(n)
/// column is an error instead of being cut, unless only blanks would be cut.
pub fn assign_vector(v: &Vector, to: DataType) -> ExecResult<Vector> {
    if let Some(max) = to.max_len() {
        if let kura_common::ColumnData::Str(s) = &v.data {
            for i in 0..v.len() {
                if v.is_null(i) {
                    continue;
                }
                let text = String::from_utf8_lossy(s.get_bytes(i));
                if text.chars().count() > max as usize
                    && text.chars().skip(max as usize).any(|c| c != ' ')
                {
                    return Err(ExecError::StringTooLong(sql_type_name(to)));
                }
            }
        }
    }
    cast_vector(v, to)
}

/// PostgreSQL's name of a text type, as its errors print it.
fn sql_type_name(t: DataType) -> String {
    match t {
        DataType::Varchar(Some(n)) => format!("character varying({n})"),
        DataType::Char(n) => format!("character({n})"),
        other => other.to_string(),
    }
}
