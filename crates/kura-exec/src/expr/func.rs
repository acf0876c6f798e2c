//! Scalar function kernels: date parts and date arithmetic, text functions, abs,
//! round and coalesce.

use kura_common::{date, ColumnData, DataType, StrVec, Value, Vector};

use super::arith::{from_i128, to_i128};
use super::cast::cast_vector;
use super::ScalarFunc;
use crate::error::{ExecError, ExecResult};

/// Longest result `repeat()` builds: the longest value a table stores.
pub const MAX_REPEAT_BYTES: usize = kura_common::MAX_VALUE_BYTES;

fn ints(v: &Vector) -> ExecResult<&[i32]> {
    match &v.data {
        ColumnData::I32(x) => Ok(x),
        _ => Err(ExecError::Internal(format!(
            "expected a 32-bit vector, got {}",
            v.data_type
        ))),
    }
}

fn strs(v: &Vector) -> ExecResult<&StrVec> {
    match &v.data {
        ColumnData::Str(x) => Ok(x),
        _ => Err(ExecError::Internal(format!(
            "expected a text vector, got {}",
            v.data_type
        ))),
    }
}

fn int_arg(v: &Vector, i: usize) -> Option<i64> {
    if v.is_null(i) {
        return None;
    }
    match v.get_value(i) {
        Value::Integer(x) => Some(x as i64),
        Value::BigInt(x) => Some(x),
        Value::Decimal(x, s) => kura_common::decimal::rescale(x, s, 0).map(|x| x as i64),
        _ => None,
    }
}

/// Argument `i`, a constant, read from its first row (none on an empty batch).
fn constant_int_arg(args: &[Vector], i: usize) -> Option<i64> {
    args.get(i)
        .filter(|v| !v.is_empty())
        .and_then(|v| int_arg(v, 0))
}

/// Applies `func` to argument vectors of `n` rows.
pub fn call(func: ScalarFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let arg = |i: usize| {
        args.get(i)
            .ok_or_else(|| ExecError::Internal(format!("{} needs argument {i}", func.name())))
    };
    match func {
        ScalarFunc::ExtractYear | ScalarFunc::ExtractMonth | ScalarFunc::ExtractDay => {
            let a = arg(0)?;
            let d = ints(a)?;
            let part = |x: i32| {
                let (_, m, dd) = date::civil_from_days(x);
                match func {
                    ScalarFunc::ExtractYear => date::year_of(x),
                    ScalarFunc::ExtractMonth => m as i32,
                    _ => dd as i32,
                }
            };
            let vals: Vec<i128> = d.iter().map(|&x| part(x) as i128).collect();
            from_i128(vals, a.validity.clone(), out)
        }
        ScalarFunc::ExtractHour | ScalarFunc::ExtractMinute | ScalarFunc::ExtractSecond => {
            use kura_common::timestamp::{time_of_day, MICROS_PER_SECOND};
            let a = arg(0)?;
            let ColumnData::I64(t) = &a.data else {
                return Err(ExecError::Internal(format!(
                    "{} needs a timestamp, got {}",
                    func.name(),
                    a.data_type
                )));
            };
            let vals: Vec<i128> = t
                .iter()
                .map(|&x| {
                    let tod = time_of_day(x);
                    (match func {
                        ScalarFunc::ExtractHour => tod / (3600 * MICROS_PER_SECOND),
                        ScalarFunc::ExtractMinute => tod / (60 * MICROS_PER_SECOND) % 60,
                        // Seconds with six decimals: microseconds within the minute.
                        _ => tod % (60 * MICROS_PER_SECOND),
                    }) as i128
                })
                .collect();
            from_i128(vals, a.validity.clone(), out)
        }
        ScalarFunc::AddInterval => {
            use kura_common::timestamp::{from_date, in_range, time_of_day, to_date};
            let a = arg(0)?;
            let ColumnData::I64(t) = &a.data else {
                return Err(ExecError::Internal(format!(
                    "add_interval needs a timestamp, got {}",
                    a.data_type
                )));
            };
            let months = constant_int_arg(args, 1).unwrap_or(0) as i32;
            let micros = constant_int_arg(args, 2).unwrap_or(0);
            let out_of_range = || ExecError::OutOfRange("timestamp out of range".into());
            let vals = t
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    if a.is_null(i) {
                        return Ok(0);
                    }
                    let day = if months == 0 {
                        to_date(x)
                    } else {
                        date::add_months(to_date(x), months).ok_or_else(out_of_range)?
                    };
                    (from_date(day) + time_of_day(x))
                        .checked_add(micros)
                        .filter(|v| in_range(*v))
                        .ok_or_else(out_of_range)
                })
                .collect::<ExecResult<Vec<i64>>>()?;
            Ok(Vector {
                data_type: out,
                data: ColumnData::I64(vals),
                validity: a.validity.clone(),
            })
        }
        ScalarFunc::DateTrunc => {
            let unit = arg(0)?;
            let a = arg(1)?;
            let ColumnData::I64(t) = &a.data else {
                return Err(ExecError::Internal(format!(
                    "date_trunc needs a timestamp, got {}",
                    a.data_type
                )));
            };
            if unit.is_empty() || unit.is_null(0) {
                let mut v = Vector::new(out, n);
                (0..n).for_each(|_| v.push_null());
                return Ok(v);
            }
            let u = strs(unit)?.get(0).to_string();
            let vals = t
                .iter()
                .map(|&x| {
                    kura_common::timestamp::trunc(&u, x).ok_or_else(|| ExecError::InvalidText {
                        ty: "date_trunc unit".into(),
                        text: u.clone(),
                    })
                })
                .collect::<ExecResult<Vec<i64>>>()?;
            Ok(Vector {
                data_type: out,
                data: ColumnData::I64(vals),
                validity: a.validity.clone(),
            })
        }
        ScalarFunc::AddDays | ScalarFunc::AddMonths => {
            let a = arg(0)?;
            let b = arg(1)?;
            let d = ints(a)?;
            let mut res = Vec::with_capacity(n);
            let mut validity = vec![true; n];
            for i in 0..n {
                match int_arg(b, i) {
                    Some(k) if !a.is_null(i) => {
                        let k = i32::try_from(k)
                            .map_err(|_| ExecError::OutOfRange("interval".into()))?;
                        let moved = if func == ScalarFunc::AddDays {
                            date::add_days(d[i], k as i64)
                        } else {
                            date::add_months(d[i], k)
                        };
                        res.push(moved.ok_or(ExecError::DateOutOfRange)?);
                    }
                    _ => {
                        res.push(0);
                        validity[i] = false;
                    }
                }
            }
            let validity = if validity.iter().all(|v| *v) {
                None
            } else {
                Some(validity)
            };
            Ok(Vector {
                data_type: DataType::Date,
                data: ColumnData::I32(res),
                validity,
            })
        }
        ScalarFunc::Substring => {
            let s = arg(0)?;
            let sv = strs(s)?;
            let from = arg(1)?;
            let len = args.get(2);
            let mut out_v = StrVec::with_capacity(n, n * 8);
            let mut validity = s.validity.clone().unwrap_or_else(|| vec![true; n]);
            // ASCII text (all of TPC-H's): characters are bytes, so a piece is
            // a byte range, found without walking characters.
            let ascii = sv.data.is_ascii();
            for (i, valid) in validity.iter_mut().enumerate() {
                let start = int_arg(from, i);
                let count = len.map(|l| int_arg(l, i));
                if !*valid || start.is_none() || count == Some(None) {
                    *valid = false;
                    out_v.push(b"");
                    continue;
                }
                // SQL: characters at positions [start, start+count), positions start at 1.
                let start = start.unwrap_or(1);
                let text = sv.get(i);
                let begin = start.max(1);
                let end = match count.flatten() {
                    Some(c) if c < 0 => {
                        return Err(ExecError::InvalidText {
                            ty: "substring length".into(),
                            text: c.to_string(),
                        })
                    }
                    Some(c) => start.saturating_add(c),
                    None => i64::MAX,
                };
                let piece: &str = if end <= begin {
                    ""
                } else {
                    let (skip, take) = ((begin - 1) as usize, (end - begin) as usize);
                    if ascii {
                        let from = skip.min(text.len());
                        &text[from..from.saturating_add(take).min(text.len())]
                    } else {
                        let from = text.char_indices().nth(skip).map_or(text.len(), |c| c.0);
                        let rest = &text[from..];
                        &rest[..rest.char_indices().nth(take).map_or(rest.len(), |c| c.0)]
                    }
                };
                out_v.push(piece.as_bytes());
            }
            let validity = if validity.iter().all(|v| *v) {
                None
            } else {
                Some(validity)
            };
            Ok(Vector {
                data_type: out,
                data: ColumnData::Str(out_v),
                validity,
            })
        }
        ScalarFunc::Upper | ScalarFunc::Lower | ScalarFunc::Trim => {
            let s = arg(0)?;
            let sv = strs(s)?;
            let mut o = StrVec::with_capacity(n, sv.data.len());
            for t in sv.iter() {
                let r = match func {
                    ScalarFunc::Upper => t.to_uppercase(),
                    ScalarFunc::Lower => t.to_lowercase(),
                    _ => t.trim_matches(' ').to_string(),
                };
                o.push(r.as_bytes());
            }
            Ok(Vector {
                data_type: out,
                data: ColumnData::Str(o),
                validity: s.validity.clone(),
            })
        }
        ScalarFunc::Repeat => {
            let s = arg(0)?;
            let sv = strs(s)?;
            let times = arg(1)?;
            let count_at = |i: usize| match (s.is_null(i), int_arg(times, i)) {
                (false, Some(count)) => Some(count.max(0) as u128),
                _ => None,
            };
            // The batch's size is worked out, and refused, before anything is
            // built; then the result is written once, at its exact size (a
            // growing buffer would double past what was counted).
            let mut total = 0u128;
            for i in 0..n {
                let Some(count) = count_at(i) else { continue };
                let bytes = sv.get_bytes(i).len() as u128 * count;
                if bytes > MAX_REPEAT_BYTES as u128 {
                    return Err(ExecError::TooLarge(format!(
                        "repeat() would build {bytes} bytes, more than the \
                         {MAX_REPEAT_BYTES} a value may hold"
                    )));
                }
                total += bytes;
            }
            if total > u32::MAX as u128 {
                return Err(ExecError::TooLarge(format!(
                    "repeat() would build {total} bytes in one batch, more than a text \
                     vector holds ({} bytes)",
                    u32::MAX
                )));
            }
            super::budget::check_room(total as usize)?;
            let mut o = StrVec::with_capacity(n, total as usize);
            let mut validity = vec![true; n];
            for (i, valid) in validity.iter_mut().enumerate() {
                match count_at(i) {
                    Some(count) => {
                        let text = sv.get_bytes(i);
                        for _ in 0..count {
                            o.data.extend_from_slice(text);
                        }
                        o.offsets.push(o.data.len() as u32);
                    }
                    None => {
                        *valid = false;
                        o.push(b"");
                    }
                }
            }
            let validity = (!validity.iter().all(|v| *v)).then_some(validity);
            Ok(Vector {
                data_type: out,
                data: ColumnData::Str(o),
                validity,
            })
        }
        ScalarFunc::RegexMatch
        | ScalarFunc::RegexIMatch
        | ScalarFunc::FormatType
        | ScalarFunc::RegtypeIn
        | ScalarFunc::ToRegtype
        | ScalarFunc::SizePretty
        | ScalarFunc::FunctionArguments
        | ScalarFunc::FunctionResult
        | ScalarFunc::Replace
        | ScalarFunc::QuoteIdent => super::pg::call(func, args, out, n),
        ScalarFunc::Greatest
        | ScalarFunc::Least
        | ScalarFunc::SplitPart
        | ScalarFunc::RegexpReplace
        | ScalarFunc::RegexpMatch
        | ScalarFunc::RecordText
        | ScalarFunc::RecordField
        | ScalarFunc::LTrim
        | ScalarFunc::RTrim
        | ScalarFunc::BTrim => super::func_text::call(func, args, out, n),
        ScalarFunc::BitAnd
        | ScalarFunc::BitOr
        | ScalarFunc::BitXor
        | ScalarFunc::BitNot
        | ScalarFunc::ShiftLeft
        | ScalarFunc::ShiftRight => super::bitwise::call(func, args, out, n),
        ScalarFunc::Math(f) => super::math::call(f, args, out, n),
        ScalarFunc::Binary(f) => super::binary::call(f, args, out, n),
        ScalarFunc::Text(f) => super::text::call(f, args, out, n),
        ScalarFunc::DateField(f) => super::date_field::call(f, args, out, n),
        ScalarFunc::Interval(f) => super::interval::call(f, args, out, n),
        ScalarFunc::Json(f) => super::json::call(f, args, out, n),
        ScalarFunc::ToChar | ScalarFunc::ToDate | ScalarFunc::ToTimestamp => {
            super::func_format::call(func, args, out, n)
        }
        ScalarFunc::Random => {
            use rand::Rng;
            let mut rng = rand::thread_rng();
            Ok(Vector {
                data_type: DataType::Double,
                data: ColumnData::F64((0..n).map(|_| rng.gen::<f64>()).collect()),
                validity: None,
            })
        }
        ScalarFunc::Length => {
            let s = arg(0)?;
            let sv = strs(s)?;
            let char_type = matches!(s.data_type, DataType::Char(_));
            let vals: Vec<i128> = sv
                .iter()
                .map(|t| {
                    if char_type {
                        t.trim_end_matches(' ')
                    } else {
                        t
                    }
                    .chars()
                    .count() as i128
                })
                .collect();
            from_i128(vals, s.validity.clone(), out)
        }
        ScalarFunc::Abs => {
            let a = arg(0)?;
            if let ColumnData::F64(x) = &a.data {
                return Ok(Vector {
                    data_type: out,
                    data: ColumnData::F64(x.iter().map(|v| v.abs()).collect()),
                    validity: a.validity.clone(),
                });
            }
            let vals: Vec<i128> = to_i128(a).into_iter().map(|v| v.abs()).collect();
            from_i128(vals, a.validity.clone(), out)
        }
        ScalarFunc::Round => {
            let a = arg(0)?;
            if let ColumnData::F64(x) = &a.data {
                let digits = constant_int_arg(args, 1).unwrap_or(0) as i32;
                let m = 10f64.powi(digits);
                let vals = x.iter().map(|v| (v * m).round() / m).collect();
                return Ok(Vector {
                    data_type: out,
                    data: ColumnData::F64(vals),
                    validity: a.validity.clone(),
                });
            }
            // Decimal: the planner fixed the output scale to the requested digits
            // (0 for negative digits, which round to tens, hundreds, ... — in one step
            // from the input scale, as rounding twice could carry twice).
            let digits = constant_int_arg(args, 1).unwrap_or(0);
            if digits >= 0 {
                return cast_vector(a, out).or_else(|_| {
                    let mut x = to_i128(a);
                    super::arith::rescale_all(
                        &mut x,
                        a.data_type.decimal_scale(),
                        out.decimal_scale(),
                    )?;
                    from_i128(x, a.validity.clone(), out)
                });
            }
            let in_scale = a.data_type.decimal_scale() as u32;
            let shift = 10i128.pow(in_scale);
            // A unit beyond i128 exceeds every value: all round to 0.
            let unit = 10i128.checked_pow(in_scale + (-digits).min(40) as u32);
            let vals: Vec<i128> = to_i128(a)
                .into_iter()
                .map(|v| match unit {
                    // Half away from zero, like PostgreSQL's numeric round.
                    Some(u) => (v.abs() + u / 2) / u * u / shift * v.signum(),
                    None => 0,
                })
                .collect();
            from_i128(vals, a.validity.clone(), out)
        }
        ScalarFunc::MakeArray
        | ScalarFunc::ArrayAny(_)
        | ScalarFunc::ArrayAll(_)
        | ScalarFunc::ArraySubscript
        | ScalarFunc::ArrayLength
        | ScalarFunc::ArrayUpper
        | ScalarFunc::ArrayLower
        | ScalarFunc::Cardinality
        | ScalarFunc::ArrayToString
        | ScalarFunc::StringToArray
        | ScalarFunc::ArrayAppend
        | ScalarFunc::ArrayPrepend
        | ScalarFunc::ArrayCat
        | ScalarFunc::ArrayPosition => super::array::call(func, args, out, n),
        ScalarFunc::Coalesce => {
            let cast: Vec<Vector> = args
                .iter()
                .map(|a| cast_vector(a, out))
                .collect::<ExecResult<_>>()?;
            let mut res = Vector::new(out, n);
            for i in 0..n {
                let v = cast
                    .iter()
                    .find(|a| !a.is_null(i))
                    .map_or(Value::Null, |a| a.get_value(i));
                res.push_value(&v);
            }
            Ok(res)
        }
    }
}
