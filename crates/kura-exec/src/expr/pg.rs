//! PostgreSQL's built-in types as its catalogs name them (OIDs, `format_type`
//! spellings, type modifiers) and the scalar functions over them that clients'
//! catalog queries call: `format_type`, `regtype` input and output, and the
//! `~` / `~*` regular-expression matches.

use std::collections::HashMap;

use kura_common::{DataType, Value, Vector};

use super::ScalarFunc;
use crate::error::{ExecError, ExecResult};

/// One row of `pg_type`: a built-in type kura reports.
#[derive(Debug, Clone)]
pub struct PgType {
    pub oid: i32,
    /// `typname`.
    pub name: String,
    /// What `format_type` prints (without a modifier).
    pub display: String,
    /// `typlen` (-1: variable length).
    pub len: i32,
    /// `typcategory`.
    pub category: &'static str,
    /// `typarray`: the array type over this one (0 for array types themselves).
    pub array: i32,
    /// `typelem`: the element type of an array type (0 otherwise).
    pub elem: i32,
}

/// The base types with PostgreSQL's OIDs: (oid, typname, format_type spelling,
/// typlen, typcategory, array type OID).
const BASE_TYPES: &[(i32, &str, &str, i32, &str, i32)] = &[
    (16, "bool", "boolean", 1, "B", 1000),
    (17, "bytea", "bytea", -1, "U", 1001),
    (18, "char", "\"char\"", 1, "Z", 1002),
    (19, "name", "name", 64, "S", 1003),
    (20, "int8", "bigint", 8, "N", 1016),
    (21, "int2", "smallint", 2, "N", 1005),
    (23, "int4", "integer", 4, "N", 1007),
    (22, "int2vector", "int2vector", -1, "A", 1006),
    (24, "regproc", "regproc", 4, "N", 1008),
    (25, "text", "text", -1, "S", 1009),
    (26, "oid", "oid", 4, "N", 1028),
    (30, "oidvector", "oidvector", -1, "A", 1013),
    (114, "json", "json", -1, "U", 199),
    (700, "float4", "real", 4, "N", 1021),
    (701, "float8", "double precision", 8, "N", 1022),
    (1042, "bpchar", "character", -1, "S", 1014),
    (1043, "varchar", "character varying", -1, "S", 1015),
    (1082, "date", "date", 4, "D", 1182),
    (1083, "time", "time without time zone", 8, "D", 1183),
    (
        1114,
        "timestamp",
        "timestamp without time zone",
        8,
        "D",
        1115,
    ),
    (
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        "D",
        1185,
    ),
    (1700, "numeric", "numeric", -1, "N", 1231),
    (2205, "regclass", "regclass", 4, "N", 2210),
    (2206, "regtype", "regtype", 4, "N", 2211),
    (2950, "uuid", "uuid", 16, "U", 2951),
    (1186, "interval", "interval", 16, "T", 1187),
    (3802, "jsonb", "jsonb", -1, "U", 3807),
];

/// PostgreSQL's pseudo-types that function signatures name (`pg_proc`):
/// (oid, typname, typlen). No array types over them.
const PSEUDO_TYPES: &[(i32, &str, i32)] = &[
    (2276, "any", 4),
    (2249, "record", -1),
    (2277, "anyarray", -1),
    (2283, "anyelement", 4),
];

/// The OID of the type named `typname` (`int4`, `_text`, `anyelement`).
pub fn type_oid(typname: &str) -> Option<i32> {
    all_types()
        .iter()
        .find(|t| t.name == typname)
        .map(|t| t.oid)
}

/// How `format_type` spells the type named `typname` (`float8` → `double precision`).
pub fn type_display(typname: &str) -> Option<String> {
    all_types()
        .iter()
        .find(|t| t.name == typname)
        .map(|t| t.display.clone())
}

fn all_types() -> &'static [PgType] {
    static TYPES: std::sync::OnceLock<Vec<PgType>> = std::sync::OnceLock::new();
    TYPES.get_or_init(pg_types)
}

/// Every type kura reports: the base types, an array type over each
/// (`_int4`, printed `integer[]`), and the pseudo-types of signatures.
pub fn pg_types() -> Vec<PgType> {
    let base = BASE_TYPES
        .iter()
        .map(|&(oid, name, display, len, category, array)| PgType {
            oid,
            name: name.into(),
            display: display.into(),
            len,
            category,
            array,
            elem: 0,
        });
    let arrays = BASE_TYPES
        .iter()
        .map(|&(oid, name, display, _, _, array)| PgType {
            oid: array,
            name: format!("_{name}"),
            display: format!("{display}[]"),
            len: -1,
            category: "A",
            array: 0,
            elem: oid,
        });
    let pseudo = PSEUDO_TYPES.iter().map(|&(oid, name, len)| PgType {
        oid,
        name: name.into(),
        display: name.into(),
        len,
        category: "P",
        array: 0,
        elem: 0,
    });
    base.chain(arrays).chain(pseudo).collect()
}

/// A kura column type as PostgreSQL's type OID and type modifier (`atttypmod`).
pub fn pg_type_of(t: DataType) -> (i32, i32) {
    match t {
        DataType::Boolean => (16, -1),
        DataType::SmallInt => (21, -1),
        DataType::Integer => (23, -1),
        DataType::BigInt => (20, -1),
        DataType::Double => (701, -1),
        DataType::Decimal { precision, scale } => {
            (1700, (((precision as i32) << 16) | scale as i32) + 4)
        }
        DataType::Date => (1082, -1),
        DataType::Timestamp => (1114, -1),
        DataType::Varchar(n) => (
            1043,
            n.map_or(-1, |n| n.min(i32::MAX as u32 - 4) as i32 + 4),
        ),
        DataType::Char(n) => (1042, n.min(i32::MAX as u32 - 4) as i32 + 4),
        // Unbounded text arrays are text[], as the server announces them.
        DataType::Array(kura_common::ElemType::Varchar(None)) => (1009, -1),
        DataType::Array(e) => {
            let (elem, typmod) = pg_type_of(e.data_type());
            let array = BASE_TYPES.iter().find(|t| t.0 == elem).map_or(0, |t| t.5);
            (array, typmod)
        }
        DataType::Vector(kura_common::ElemType::SmallInt) => (22, -1),
        DataType::Vector(_) => (30, -1),
        DataType::Uuid => (2950, -1),
        DataType::Bytea => (17, -1),
        DataType::Interval => (1186, -1),
        DataType::Json => (114, -1),
        DataType::Jsonb => (3802, -1),
    }
}

/// `format_type(oid, typmod)`: the type's SQL spelling with its modifier.
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let all = pg_types();
    let ty = all.iter().find(|t| t.oid as i64 == oid)?;
    let m = typmod.filter(|m| *m >= 4);
    Some(match (ty.oid, m) {
        (1043 | 1042, Some(m)) => format!("{}({})", ty.display, m - 4),
        (1700, Some(m)) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
        _ => ty.display.to_string(),
    })
}

/// `'name'::regtype`: a type's OID from any of the names PostgreSQL accepts
/// (`int4`, `integer`, `pg_catalog.int4`, `character varying`, `int4[]`).
pub fn regtype_in(name: &str) -> Option<i32> {
    let n = name.trim().to_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    let n = n.trim_matches('"');
    let alias = match n {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "decimal" => "numeric",
        "character varying" => "varchar",
        "character" => "bpchar",
        other => other,
    };
    pg_types()
        .iter()
        .find(|t| t.name == alias || t.display == n)
        .map(|t| t.oid)
}

/// An identifier as PostgreSQL's `quote_ident` writes it: quoted unless it is
/// lower case letters, digits and underscores not starting with a digit.
pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

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
    fn format_type_follows_postgresql() {
        let (oid, m) = pg_type_of(DataType::Decimal {
            precision: 12,
            scale: 2,
        });
        assert_eq!(
            format_type(oid as i64, Some(m as i64)).unwrap(),
            "numeric(12,2)"
        );
        let (oid, m) = pg_type_of(DataType::Varchar(Some(44)));
        assert_eq!((oid, m), (1043, 48));
        assert_eq!(
            format_type(oid as i64, Some(m as i64)).unwrap(),
            "character varying(44)"
        );
        assert_eq!(format_type(23, None).unwrap(), "integer");
        assert_eq!(format_type(1007, None).unwrap(), "integer[]");
        assert!(format_type(99999, None).is_none());
    }

    #[test]
    fn size_pretty_rounds_as_postgresql() {
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(1_572_864), "1536 kB");
        assert_eq!(size_pretty(10_485_760 * 2), "20 MB");
    }

    #[test]
    fn regtype_accepts_postgresql_spellings() {
        assert_eq!(regtype_in("int4"), Some(23));
        assert_eq!(regtype_in("integer"), Some(23));
        assert_eq!(regtype_in("pg_catalog.int8"), Some(20));
        assert_eq!(regtype_in("character varying"), Some(1043));
        assert_eq!(regtype_in("_int4"), Some(1007));
        assert_eq!(regtype_in("nope"), None);
    }
}
