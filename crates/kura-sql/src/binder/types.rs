//! SQL type rules: mapping parser types to kura types, the result types of
//! arithmetic (PostgreSQL-like decimal precision and scale), common types for
//! comparisons, CASE and UNION, and literal parsing.

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::ExecContext;
use sqlparser::ast;

use crate::error::{Pos, SqlError, SqlResult};

/// Scale of results of decimal division and averages (PostgreSQL keeps at least 16
/// significant fractional digits for these).
pub const DIV_SCALE: u8 = 16;

pub fn sql_type(t: &ast::DataType, pos: Pos) -> SqlResult<DataType> {
    use ast::DataType as A;
    let num = |info: &ast::ExactNumberInfo| match info {
        ast::ExactNumberInfo::None => Ok(DataType::Decimal {
            precision: 38,
            scale: 6,
        }),
        ast::ExactNumberInfo::Precision(p) => Ok(DataType::Decimal {
            precision: (*p).min(38) as u8,
            scale: 0,
        }),
        ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
            if *p == 0 || *p > 38 || *s < 0 || *s as u64 > *p {
                Err(SqlError::InvalidValue {
                    message: format!("invalid DECIMAL({p},{s})"),
                    pos,
                })
            } else {
                Ok(DataType::Decimal {
                    precision: *p as u8,
                    scale: *s as u8,
                })
            }
        }
    };
    let len = |l: &Option<ast::CharacterLength>| match l {
        Some(ast::CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
        _ => None,
    };
    Ok(match t {
        A::SmallInt(_) | A::Int2(_) => DataType::SmallInt,
        A::Int(_) | A::Integer(_) | A::Int4(_) | A::TinyInt(_) => DataType::Integer,
        A::BigInt(_) | A::Int8(_) => DataType::BigInt,
        A::Double(_) | A::DoublePrecision | A::Float8 | A::Float(_) | A::Real | A::Float4 => {
            DataType::Double
        }
        A::Decimal(i) | A::Numeric(i) | A::Dec(i) => num(i)?,
        A::Date => DataType::Date,
        // kura keeps no time zones: `timestamptz` is taken as a timestamp in
        // UTC, the zone every session runs in (see README, "SQL").
        A::Timestamp(..) | A::TimestampNtz(_) | A::Datetime(_) => DataType::Timestamp,
        A::Custom(name, mods)
            if mods.is_empty()
                && name.0.len() == 1
                && name.to_string().eq_ignore_ascii_case("timestamptz") =>
        {
            DataType::Timestamp
        }
        // The catalogs' vectors, which clients cast to (`'1 2'::int2vector`).
        A::Custom(name, mods)
            if mods.is_empty()
                && name.0.len() == 1
                && name.to_string().eq_ignore_ascii_case("int2vector") =>
        {
            DataType::INT2VECTOR
        }
        A::Custom(name, mods)
            if mods.is_empty()
                && name.0.len() == 1
                && name.to_string().eq_ignore_ascii_case("oidvector") =>
        {
            DataType::OIDVECTOR
        }
        A::Boolean | A::Bool => DataType::Boolean,
        A::Uuid => DataType::Uuid,
        // BLOB is DuckDB's, SQLite's and MySQL's name for it.
        A::Bytea | A::Blob(None) => DataType::Bytea,
        A::Interval {
            fields: None,
            precision: None,
        } => DataType::Interval,
        A::Interval { .. } => {
            return Err(SqlError::unsupported(
                "INTERVAL with fields or a precision (plain INTERVAL is)",
                pos,
            ))
        }
        A::JSON => DataType::Json,
        A::JSONB => DataType::Jsonb,
        A::Varchar(l) | A::CharacterVarying(l) | A::CharVarying(l) | A::Nvarchar(l) => {
            DataType::Varchar(len(l))
        }
        A::Text | A::String(_) => DataType::Varchar(None),
        A::Char(l) | A::Character(l) => DataType::Char(len(l).unwrap_or(1)),
        A::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::Qualified(inner, _),
        ) => {
            let elem = sql_type(inner, pos)?;
            elem.array_of().ok_or_else(|| {
                // Only the scalar types kura's arrays hold have arrays.
                let what = if elem.is_array() {
                    "multidimensional arrays".to_string()
                } else {
                    format!("arrays of {}", elem.to_string().to_lowercase())
                };
                SqlError::unsupported(what, pos)
            })?
        }
        // PostgreSQL's types kura does not have (yet): refused as such.
        A::Custom(name, _)
            if name.0.len() == 1
                && UNSUPPORTED_PG_TYPES.contains(&name.to_string().to_lowercase().as_str()) =>
        {
            return Err(SqlError::unsupported(
                format!("type {}", name.to_string().to_lowercase()),
                pos,
            ))
        }
        // Names PostgreSQL does not know either.
        t @ A::Custom(..) => {
            return Err(SqlError::UnknownType {
                name: t.to_string().to_lowercase(),
                pos,
            })
        }
        other => return Err(SqlError::unsupported(format!("type {other}"), pos)),
    })
}

/// PostgreSQL's built-in types sqlparser reads as plain names that kura does
/// not have: refused with 0A000 rather than "does not exist".
const UNSUPPORTED_PG_TYPES: &[&str] = &[
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "money",
    "xml",
    "point",
    "line",
    "lseg",
    "box",
    "path",
    "polygon",
    "circle",
    "tsquery",
    "int4range",
    "int8range",
    "numrange",
    "tsrange",
    "tstzrange",
    "daterange",
    "pg_lsn",
    "txid_snapshot",
    "jsonpath",
    "timetz",
];

/// Type of a numeric literal: INTEGER, BIGINT or DECIMAL(p,s) as written.
pub fn number_literal(text: &str, pos: Pos) -> SqlResult<(Value, DataType)> {
    if let Ok(i) = text.parse::<i32>() {
        return Ok((Value::Integer(i), DataType::Integer));
    }
    if let Ok(i) = text.parse::<i64>() {
        return Ok((Value::BigInt(i), DataType::BigInt));
    }
    if text.contains(['e', 'E']) {
        let f = text
            .parse::<f64>()
            .map_err(|_| SqlError::Syntax(format!("{pos}invalid number {text}")))?;
        return Ok((Value::Double(f), DataType::Double));
    }
    let frac = text.split_once('.').map_or(0, |(_, f)| f.len());
    let digits = text.chars().filter(|c| c.is_ascii_digit()).count().max(1);
    if digits > 38 {
        return Err(SqlError::InvalidValue {
            message: format!("numeric literal {text} is too long"),
            pos,
        });
    }
    let scale = frac as u8;
    let precision = (digits as u8).max(scale + 1).min(38);
    let v = kura_common::decimal::parse_decimal_bytes(text.as_bytes(), None, scale)
        .ok_or_else(|| SqlError::Syntax(format!("{pos}invalid number {text}")))?;
    Ok((
        Value::Decimal(v, scale),
        DataType::Decimal { precision, scale },
    ))
}

/// Precision and scale of a numeric type viewed as a decimal.
pub fn as_decimal(t: DataType) -> Option<(u8, u8)> {
    match t {
        DataType::SmallInt => Some((5, 0)),
        DataType::Integer => Some((10, 0)),
        DataType::BigInt => Some((19, 0)),
        DataType::Decimal { precision, scale } => Some((precision, scale)),
        _ => None,
    }
}

fn decimal(p: u32, s: u32) -> DataType {
    let s = s.min(38);
    DataType::Decimal {
        precision: p.clamp(s.max(1), 38) as u8,
        scale: s as u8,
    }
}

/// Result type of `l op r` for arithmetic operators over numbers.
pub fn arith_type(op: BinaryOp, l: DataType, r: DataType, pos: Pos) -> SqlResult<DataType> {
    if !l.is_numeric() || !r.is_numeric() {
        return Err(SqlError::mismatch(
            format!("operator does not exist: {l} {} {r}", op.symbol()),
            pos,
        ));
    }
    if l == DataType::Double || r == DataType::Double {
        return Ok(DataType::Double);
    }
    if l.is_integer() && r.is_integer() {
        return Ok(wider_integer(l, r));
    }
    let (p1, s1) = as_decimal(l).unwrap_or((38, 0));
    let (p2, s2) = as_decimal(r).unwrap_or((38, 0));
    let (p1, s1, p2, s2) = (p1 as u32, s1 as u32, p2 as u32, s2 as u32);
    Ok(match op {
        BinaryOp::Add | BinaryOp::Sub => {
            let s = s1.max(s2);
            decimal((p1 - s1).max(p2 - s2) + s + 1, s)
        }
        BinaryOp::Mul => decimal(p1 + p2, s1 + s2),
        BinaryOp::Div => decimal(38, (DIV_SCALE as u32).max(s1).max(s2)),
        _ => {
            let s = s1.max(s2);
            decimal((p1 - s1).max(p2 - s2) + s, s)
        }
    })
}

/// The wider of two integer types: PostgreSQL's `int2 + int4` is `int4`, any
/// integer with `int8` is `int8`, and only two SMALLINTs stay SMALLINT.
fn wider_integer(a: DataType, b: DataType) -> DataType {
    let width = |t: DataType| t.integer_range().map_or(0, |(_, hi)| hi);
    if width(a) >= width(b) {
        a
    } else {
        b
    }
}

/// A type both sides can be compared or unified in, if any.
pub fn common_type(a: DataType, b: DataType) -> Option<DataType> {
    if a == b {
        return Some(a);
    }
    if a.is_numeric() && b.is_numeric() {
        if a == DataType::Double || b == DataType::Double {
            return Some(DataType::Double);
        }
        let (p1, s1) = as_decimal(a)?;
        let (p2, s2) = as_decimal(b)?;
        if a.is_integer() && b.is_integer() {
            return Some(wider_integer(a, b));
        }
        let s = s1.max(s2) as u32;
        return Some(decimal((p1 - s1).max(p2 - s2) as u32 + s, s));
    }
    if matches!(
        (a, b),
        (DataType::Date, DataType::Timestamp) | (DataType::Timestamp, DataType::Date)
    ) {
        return Some(DataType::Timestamp);
    }
    if a.is_text() && b.is_text() {
        return Some(match (a, b) {
            (DataType::Char(x), DataType::Char(y)) => DataType::Char(x.max(y)),
            _ => DataType::Varchar(None),
        });
    }
    None
}

pub fn is_null_literal(e: &PhysExpr) -> bool {
    matches!(
        e,
        PhysExpr::Literal {
            value: Value::Null,
            ..
        }
    )
}

/// A NULL written without a type (`NULL`, as opposed to `CAST(NULL AS DATE)`), which
/// takes its type from its context as PostgreSQL's `unknown` does.
pub fn is_untyped_null(e: &PhysExpr) -> bool {
    is_null_literal(e) && e.data_type() == DataType::Varchar(None)
}

/// A quoted constant or NULL written without a type (`'5'`, `NULL`): its
/// type is still open, like PostgreSQL's `unknown`, and the context gives it.
pub fn is_untyped_literal(e: &PhysExpr) -> bool {
    matches!(
        e,
        PhysExpr::Literal {
            value: Value::Text(_) | Value::Null,
            data_type: DataType::Varchar(None)
        }
    )
}

/// A NULL of type text that is not an untyped NULL: a cast of one, which [`fold`]
/// leaves as it is.
pub fn text_null() -> PhysExpr {
    PhysExpr::Cast {
        expr: Box::new(PhysExpr::literal(Value::Null, DataType::Varchar(None))),
        to: DataType::Varchar(None),
    }
}

/// `e` converted to type `to` (constants are converted now).
pub fn coerce(e: PhysExpr, to: DataType, pos: Pos) -> SqlResult<PhysExpr> {
    if e.data_type() == to {
        return Ok(e);
    }
    if let PhysExpr::Literal { value, data_type } = &e {
        let v = kura_exec::expr::cast_typed(value, *data_type, to).map_err(|err| match err {
            kura_exec::ExecError::InvalidDate(t) => SqlError::InvalidDate { text: t, pos },
            e @ (kura_exec::ExecError::InvalidText { .. }
            | kura_exec::ExecError::MalformedArray { .. }) => SqlError::InvalidText {
                message: e.to_string(),
                pos,
            },
            kura_exec::ExecError::Unsupported(what) => SqlError::Unsupported { what, pos },
            kura_exec::ExecError::InvalidArgument { code, message } => {
                SqlError::Data { code, message, pos }
            }
            e @ (kura_exec::ExecError::OutOfRange(_)
            | kura_exec::ExecError::IntegerOutOfRange(_)) => SqlError::OutOfRange {
                message: e.to_string(),
                pos,
            },
            other => SqlError::InvalidValue {
                message: other.to_string(),
                pos,
            },
        })?;
        return Ok(PhysExpr::Literal {
            value: v,
            data_type: to,
        });
    }
    Ok(PhysExpr::Cast {
        expr: Box::new(e),
        to,
    })
}

/// A catalog vector (`int2vector`, `oidvector`) as the array of its
/// elements, for the array functions (which number elements from 1); any
/// other expression as it is.
pub fn as_array(e: PhysExpr, pos: Pos) -> SqlResult<PhysExpr> {
    match e.data_type() {
        DataType::Vector(elem) => coerce(e, DataType::Array(elem), pos),
        _ => Ok(e),
    }
}

/// Evaluates an expression without column references now.
pub fn fold(e: PhysExpr) -> PhysExpr {
    if matches!(e, PhysExpr::Literal { .. }) || e == text_null() {
        return e;
    }
    let mut cols = Vec::new();
    e.columns(&mut cols);
    if !cols.is_empty() || e.is_volatile() {
        return e;
    }
    let _ctx = ExecContext::unbounded();
    match e.eval(&kura_common::Batch::with_rows(1)) {
        Ok(v) if v.len() == 1 => {
            let value = v.get_value(0);
            if value.is_null() && e.data_type() == DataType::Varchar(None) {
                // A computed text NULL (`upper(NULL)`) is text, not an untyped NULL.
                return text_null();
            }
            PhysExpr::Literal {
                value,
                data_type: e.data_type(),
            }
        }
        _ => e,
    }
}
