//! CAST between types: a fast path for numeric vectors and a value-at-a-time path
//! (text parsing, formatting) for the rest.

use kura_common::decimal::{parse_decimal_bytes, rescale};
use kura_common::json::{self, Json};
use kura_common::{array, date, DataType, Value, Vector};

use super::arith::{from_i128, rescale_all, to_f64, to_i128};
use super::compare::trim_blanks;
use crate::error::{ExecError, ExecResult};

fn invalid(ty: DataType, text: &str) -> ExecError {
    // Integer types by PostgreSQL's names, as its message says them.
    let ty = match ty {
        t if t.is_integer() => crate::error::integer_name(t).to_string(),
        t => t.to_string(),
    };
    ExecError::InvalidText {
        ty,
        text: text.to_string(),
    }
}

/// A double rounded to an integer as PostgreSQL's float-to-integer casts do:
/// half to even (`rint`: 2.5 is 2, 3.5 is 4); beyond i128, NaN or infinite it is
/// out of `to`'s range.
fn double_to_integer(f: f64, to: DataType) -> ExecResult<i128> {
    let r = f.round_ties_even();
    if !r.is_finite() || r.abs() >= 1e38 {
        return Err(ExecError::integer_out_of_range(to));
    }
    Ok(r as i128)
}

/// Integer text (blanks around it and a sign allowed, as PostgreSQL allows);
/// digits too many for any integer are out of range, not invalid.
fn integer_from_text(s: &str, to: DataType) -> ExecResult<i128> {
    s.trim().parse::<i128>().map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
            ExecError::integer_text_out_of_range(to, s)
        }
        _ => invalid(to, s),
    })
}

/// An interval's column form from its text, with PostgreSQL's errors.
pub fn interval_from_text(s: &str) -> ExecResult<i128> {
    use kura_common::interval::{parse_interval, IntervalError};
    parse_interval(s)
        .and_then(|iv| iv.pack())
        .map_err(|e| match e {
            IntervalError::Syntax => ExecError::InvalidArgument {
                code: "22007",
                message: format!("invalid input syntax for type interval: \"{s}\""),
            },
            IntervalError::OutOfRange => interval_out_of_range(),
        })
}

/// PostgreSQL's error for an interval past the range kura holds.
pub fn interval_out_of_range() -> ExecError {
    ExecError::InvalidArgument {
        code: "22008",
        message: "interval out of range".into(),
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
        DataType::SmallInt | DataType::Integer | DataType::BigInt => {
            let x: i128 = match v {
                V::Integer(i) => *i as i128,
                V::BigInt(i) => *i as i128,
                V::Decimal(x, s) => {
                    rescale(*x, *s, 0).ok_or_else(|| ExecError::integer_out_of_range(to))?
                }
                V::Double(f) => double_to_integer(*f, to)?,
                V::Boolean(b) => *b as i128,
                V::Text(s) => integer_from_text(s, to)?,
                V::Date(_) | V::Timestamp(_) | V::Interval(_) => {
                    return Err(invalid(to, &v.to_string()))
                }
                V::Null => unreachable!(),
            };
            let (lo, hi) = to.integer_range().unwrap_or_default();
            if !(lo as i128..=hi as i128).contains(&x) {
                return Err(match v {
                    V::Text(s) => ExecError::integer_text_out_of_range(to, s),
                    _ => ExecError::integer_out_of_range(to),
                });
            }
            if to == DataType::BigInt {
                V::BigInt(x as i64)
            } else {
                V::Integer(x as i32)
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
                V::Double(f) => double_to_scaled(*f, scale),
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
            if matches!(to, DataType::Char(_)) {
                // CHAR's trailing blanks are padding, held without them as a
                // column holds them: `'a  '::char(3) || 'b'` is 'ab'.
                s.truncate(s.trim_end_matches(' ').len());
            }
            V::Text(s)
        }
        DataType::Interval => match v {
            V::Interval(x) => V::Interval(*x),
            V::Text(s) => V::Interval(interval_from_text(s)?),
            _ => return Err(invalid(to, &v.to_string())),
        },
        // Held as their canonical text: text reads as PostgreSQL's input does.
        DataType::Uuid => match v {
            V::Text(s) => V::Text(kura_common::binary::uuid_from_text(s).ok_or_else(|| {
                ExecError::InvalidText {
                    ty: "uuid".into(),
                    text: s.clone(),
                }
            })?),
            _ => return Err(invalid(to, &v.to_string())),
        },
        DataType::Bytea => match v {
            V::Text(s) => {
                let bytes = kura_common::binary::bytea_input(s).map_err(|e| {
                    ExecError::InvalidArgument {
                        code: "22P02",
                        message: e.to_string(),
                    }
                })?;
                V::Text(kura_common::binary::bytea_from_bytes(&bytes))
            }
            _ => return Err(invalid(to, &v.to_string())),
        },
        // json keeps its text once it is read as JSON; jsonb its canonical text.
        DataType::Json => match v {
            V::Text(s) => V::Text(kura_common::json::json_input(s).map_err(ExecError::from)?),
            _ => return Err(invalid(to, &v.to_string())),
        },
        DataType::Jsonb => match v {
            V::Text(s) => V::Text(kura_common::json::jsonb_input(s).map_err(ExecError::from)?),
            _ => return Err(invalid(to, &v.to_string())),
        },
        // Arrays are text: any array or array literal re-reads as `to`'s elements.
        DataType::Array(e) => match v {
            V::Text(s) => V::Text(array_from_text(s, e.data_type())?),
            _ => return Err(invalid(to, &v.to_string())),
        },
        // A catalog vector from its text (`1 3`) or an array's (`{1,3}`):
        // each element checked as `e`, written back in the vector's form.
        DataType::Vector(_) => match v {
            V::Text(s) => {
                let elems = elements_of(s, to)?;
                if elems.iter().any(Value::is_null) {
                    return Err(invalid(to, s));
                }
                let texts: Vec<String> = elems.iter().map(|x| x.to_string()).collect();
                V::Text(kura_common::array::format_vector(
                    texts.iter().map(String::as_str),
                ))
            }
            _ => return Err(invalid(to, &v.to_string())),
        },
    })
}

/// Converts one value of type `from` to type `to`: [`cast_value`], but a
/// catalog vector's text (`1 3`) is first read as the array it is.
pub fn cast_typed(v: &Value, from: DataType, to: DataType) -> ExecResult<Value> {
    match (v, from) {
        (Value::Text(held), DataType::Vector(_)) if to.is_array() => {
            let elems = elements_of(held, from)?;
            cast_value(&Value::Text(kura_common::array::format_values(&elems)), to)
        }
        // A jsonb scalar to a number or boolean, by its kind.
        (Value::Text(held), DataType::Jsonb) if to.is_numeric() || to == DataType::Boolean => {
            cast_from_jsonb(held, to)
        }
        // jsonb's text is valid json as it is.
        (Value::Text(held), DataType::Jsonb) if to == DataType::Json => {
            Ok(Value::Text(held.clone()))
        }
        _ => cast_value(v, to),
    }
}

/// Casts every value of a vector to `to`.
pub fn cast_vector(v: &Vector, to: DataType) -> ExecResult<Vector> {
    if v.data_type == to {
        return Ok(v.clone());
    }
    let from = v.data_type;
    if (matches!(from, DataType::Vector(_)) && to.is_array()) || from == DataType::Jsonb {
        let mut out = Vector::new(to, v.len());
        for i in 0..v.len() {
            if !out.push_value(&cast_typed(&v.get_value(i), from, to)?) {
                return Err(ExecError::Internal(format!("a vector's array is not {to}")));
            }
        }
        return Ok(out);
    }
    let int_like = |d: DataType| d.is_integer() || matches!(d, DataType::Decimal { .. });
    if int_like(from) && int_like(to) {
        let mut x = to_i128(v);
        rescale_all(&mut x, from.decimal_scale(), to.decimal_scale())?;
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

/// A double as a numeric at `scale`: its 15 significant digits (what
/// PostgreSQL's float8-to-numeric conversion keeps, so `1e20::numeric` is
/// exactly 10^20 and not the binary value's 100000000000000004764.73),
/// rounded half away from zero. `None` for NaN, infinity or beyond i128.
fn double_to_scaled(f: f64, scale: u8) -> Option<i128> {
    if !f.is_finite() {
        return None;
    }
    if f == 0.0 {
        return Some(0);
    }
    // `d.dddddddddddddde±x`: 15 digits and a power of ten.
    let text = format!("{f:.14e}");
    let (mantissa, exp) = text.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let negative = mantissa.starts_with('-');
    let digits: i128 = mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    // value = digits * 10^(exp - 14); at `scale`, times 10^scale.
    let shift = exp - 14 + i32::from(scale);
    let x = if shift >= 0 {
        digits.checked_mul(10i128.checked_pow(shift as u32)?)?
    } else if -shift > 38 {
        0
    } else {
        let d = 10i128.pow((-shift) as u32);
        (digits + d / 2) / d
    };
    Some(if negative { -x } else { x })
}

// Array text and jsonb scalars: the casts into and out of compound types, which
// cast their elements again (so they live beside `cast_value`).

/// The elements of array text `text` as values of `elem`.
pub fn array_elements(text: &str, elem: DataType) -> ExecResult<Vec<Value>> {
    array::parse(text)
        .map_err(|e| ExecError::malformed_array(text, e))?
        .into_iter()
        .map(|e| match e {
            None => Ok(Value::Null),
            Some(t) => cast_value(&Value::Text(t), elem),
        })
        .collect()
}

/// The elements of a value of array or vector type `t` held as `text`.
pub fn elements_of(text: &str, t: DataType) -> ExecResult<Vec<Value>> {
    match t {
        DataType::Vector(e) => array::parse_vector(text)
            .map_err(|err| ExecError::malformed_array(text, err))?
            .into_iter()
            .map(|x| match x {
                None => Ok(Value::Null),
                Some(x) => cast_value(&Value::Text(x), e.data_type()),
            })
            .collect(),
        _ => array_elements(text, t.element().unwrap_or(DataType::Varchar(None))),
    }
}

/// Array text in any form (`'{1, 2}'`) as the canonical text of an array of
/// `elem`: what a cast to `elem[]` gives.
pub fn array_from_text(text: &str, elem: DataType) -> ExecResult<String> {
    Ok(array::format_values(&array_elements(text, elem)?))
}

/// A jsonb scalar cast to a number or boolean (`'1.5'::jsonb::int`):
/// PostgreSQL's error when it is another kind (`cannot cast jsonb object to
/// type integer`).
pub fn cast_from_jsonb(s: &str, to: DataType) -> ExecResult<Value> {
    let j = json::jsonb_value(s).map_err(ExecError::from)?;
    let target = match to {
        DataType::Boolean => "boolean",
        DataType::SmallInt => "smallint",
        DataType::Integer => "integer",
        DataType::BigInt => "bigint",
        DataType::Double => "double precision",
        _ => "numeric",
    };
    let wrong = || ExecError::InvalidArgument {
        code: "22023",
        message: format!("cannot cast jsonb {} to type {target}", cast_kind(&j)),
    };
    match (&j, to) {
        (Json::Bool(b), DataType::Boolean) => Ok(Value::Boolean(*b)),
        (Json::Number(n), t) if t.is_integer() => {
            // numeric to integer rounds half away from zero.
            let (int, frac) = n.split_once('.').unwrap_or((n, ""));
            let up = frac.as_bytes().first().is_some_and(|d| *d >= b'5');
            let x: i128 = int
                .parse()
                .map_err(|_| ExecError::integer_out_of_range(t))?;
            let x = match (up, n.starts_with('-')) {
                (false, _) => x,
                (true, false) => x + 1,
                (true, true) => x - 1,
            };
            cast_value(&Value::Text(x.to_string()), t)
        }
        (Json::Number(n), t) if t.is_numeric() => cast_value(&Value::Text(n.clone()), t),
        _ => Err(wrong()),
    }
}

/// PostgreSQL's name of a jsonb value's kind in cast errors.
fn cast_kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "numeric",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_round_half_to_even_into_integers() {
        let to = |f: f64, t: DataType| cast_value(&Value::Double(f), t);
        assert_eq!(to(2.5, DataType::Integer), Ok(Value::Integer(2)));
        assert_eq!(to(3.5, DataType::SmallInt), Ok(Value::Integer(4)));
        assert_eq!(to(-2.5, DataType::BigInt), Ok(Value::BigInt(-2)));
        assert_eq!(to(-32768.5, DataType::SmallInt), Ok(Value::Integer(-32768)));
        assert_eq!(
            to(32767.5, DataType::SmallInt).unwrap_err().to_string(),
            "smallint out of range"
        );
        assert!(to(f64::NAN, DataType::Integer).is_err());
    }

    #[test]
    fn smallint_casts_are_range_checked() {
        let small = |v: Value| cast_value(&v, DataType::SmallInt);
        assert_eq!(small(Value::BigInt(-32768)), Ok(Value::Integer(-32768)));
        assert_eq!(small(Value::Decimal(25, 1)), Ok(Value::Integer(3)));
        let err = small(Value::Integer(32768)).unwrap_err();
        assert_eq!(
            (err.to_string().as_str(), err.sqlstate()),
            ("smallint out of range", "22003")
        );
        let err = small(Value::Text(
            "99999999999999999999999999999999999999999".into(),
        ))
        .unwrap_err();
        assert_eq!(err.sqlstate(), "22003");
        let err = small(Value::Text("1e3".into())).unwrap_err();
        assert_eq!(
            (err.to_string().as_str(), err.sqlstate()),
            ("invalid input syntax for type smallint: \"1e3\"", "22P02")
        );
        let ints =
            Vector::from_values(DataType::Integer, &[Value::Integer(7), Value::Null]).unwrap();
        let v = cast_vector(&ints, DataType::SmallInt).unwrap();
        assert_eq!(v.get_value(0), Value::Integer(7));
        assert!(v.is_null(1));
        let big = Vector::from_values(DataType::Integer, &[Value::Integer(1 << 20)]).unwrap();
        assert!(cast_vector(&big, DataType::SmallInt).is_err());
    }

    #[test]
    fn casts_normalise_array_text() {
        assert_eq!(
            array_from_text(" { 1 , 2,NULL}", DataType::Integer).unwrap(),
            "{1,2,NULL}"
        );
        assert!(matches!(
            array_from_text("{a}", DataType::Integer),
            Err(ExecError::InvalidText { .. })
        ));
        assert!(matches!(
            array_from_text("1", DataType::Integer),
            Err(ExecError::MalformedArray { .. })
        ));
    }
}
