//! The scalar functions over PostgreSQL's catalog types that clients' catalog
//! queries call: `format_type`, `regtype` input and output, `quote_ident`,
//! `pg_size_pretty`, `pg_get_function_*` and the `~` / `~*` regular-expression matches.

use std::collections::HashMap;

use kura_common::{DataType, Value, Vector};

use super::pg_types::{format_type, regtype_in};
use super::ScalarFunc;
use crate::error::{ExecError, ExecResult};

/// A name written so that it reads back as itself: bare when it is lower case and no
/// reserved word, else double-quoted (PostgreSQL's `quote_ident`).
pub fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED.contains(&name);
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Words PostgreSQL reserves in every position, which cannot name a relation unquoted
/// (and which SQL kura writes quotes).
pub const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_date",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// `pg_size_pretty`: bytes below 10 kB, then the largest unit that keeps the
/// number below 10240, rounded half away from zero (PostgreSQL's rule).
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    if bytes.abs() < LIMIT {
        return format!("{bytes} bytes");
    }
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    // One extra bit is kept for the rounding.
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

/// A function's argument `i` at row `r` as a value.
fn value(args: &[Vector], i: usize, r: usize, func: ScalarFunc) -> ExecResult<Value> {
    let v = args
        .get(i)
        .ok_or_else(|| ExecError::Internal(format!("{} needs argument {i}", func.name())))?;
    Ok(if v.is_null(r) {
        Value::Null
    } else {
        v.get_value(r)
    })
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(x) => Some(*x as i64),
        Value::BigInt(x) => Some(*x),
        _ => None,
    }
}

/// Applies one of this module's functions to argument vectors of `n` rows.
pub fn call(func: ScalarFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let mut regexes: HashMap<String, regex::Regex> = HashMap::new();
    let mut values = Vec::with_capacity(n);
    // Text built so far in this batch, for the memory limit (see `budget`).
    let mut built = 0usize;
    for r in 0..n {
        let v = match func {
            ScalarFunc::RegexMatch | ScalarFunc::RegexIMatch => {
                match (value(args, 0, r, func)?, value(args, 1, r, func)?) {
                    (Value::Text(s), Value::Text(p)) => {
                        if !regexes.contains_key(&p) {
                            let re = regex::RegexBuilder::new(&p)
                                .case_insensitive(func == ScalarFunc::RegexIMatch)
                                .build()
                                .map_err(|e| ExecError::InvalidRegex(e.to_string()))?;
                            regexes.insert(p.clone(), re);
                        }
                        Value::Boolean(regexes[&p].is_match(&s))
                    }
                    _ => Value::Null,
                }
            }
            ScalarFunc::FormatType => {
                let oid = int_of(&value(args, 0, r, func)?);
                let typmod = match args.len() {
                    1 => None,
                    _ => int_of(&value(args, 1, r, func)?),
                };
                match oid {
                    // PostgreSQL prints "???" for an OID it does not know.
                    Some(oid) => Value::Text(format_type(oid, typmod).unwrap_or("???".into())),
                    None => Value::Null,
                }
            }
            ScalarFunc::RegtypeIn => match value(args, 0, r, func)? {
                Value::Text(s) => match regtype_in(&s) {
                    Some(oid) => Value::Integer(oid),
                    None => {
                        return Err(ExecError::UndefinedObject(format!(
                            "type \"{s}\" does not exist"
                        )))
                    }
                },
                _ => Value::Null,
            },
            ScalarFunc::ToRegtype => match value(args, 0, r, func)? {
                Value::Text(s) => regtype_in(&s).map_or(Value::Null, Value::Integer),
                _ => Value::Null,
            },
            ScalarFunc::FunctionArguments | ScalarFunc::FunctionResult => {
                match int_of(&value(args, 0, r, func)?).and_then(super::registry::by_oid) {
                    Some((f, sig)) if func == ScalarFunc::FunctionResult => {
                        Value::Text(super::registry::result_text(f, sig))
                    }
                    Some((_, sig)) => Value::Text(super::registry::arguments_text(sig)),
                    // PostgreSQL's answer for an OID it does not know.
                    None => Value::Null,
                }
            }
            ScalarFunc::SizePretty => match int_of(&value(args, 0, r, func)?) {
                Some(n) => Value::Text(size_pretty(n)),
                None => Value::Null,
            },
            ScalarFunc::Replace => match (
                value(args, 0, r, func)?,
                value(args, 1, r, func)?,
                value(args, 2, r, func)?,
            ) {
                (Value::Text(s), Value::Text(from), Value::Text(to)) => {
                    // PostgreSQL leaves the string as it is for an empty `from`.
                    Value::Text(if from.is_empty() {
                        s
                    } else {
                        if to.len() > from.len() {
                            // A short `from` and a long `to` multiply the text:
                            // its size is known, and refused, before it is built.
                            let grows = s.matches(from.as_str()).count() * (to.len() - from.len());
                            super::budget::check_value("replace", s.len() + grows, built)?;
                        }
                        s.replace(&from, &to)
                    })
                }
                _ => Value::Null,
            },
            ScalarFunc::QuoteIdent => match value(args, 0, r, func)? {
                Value::Text(s) => Value::Text(quote_ident(&s)),
                _ => Value::Null,
            },
            other => {
                return Err(ExecError::Internal(format!(
                    "{} is not a catalog function",
                    other.name()
                )))
            }
        };
        if let Value::Text(t) = &v {
            built += t.len();
        }
        values.push(v);
    }
    // The values and the vector made of them live together for a moment.
    super::budget::check_room(built)?;
    Vector::from_values(out, &values)
        .ok_or_else(|| ExecError::Internal(format!("{} result", func.name())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_pretty_rounds_as_postgresql() {
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(1_572_864), "1536 kB");
        assert_eq!(size_pretty(10_485_760 * 2), "20 MB");
    }
}
