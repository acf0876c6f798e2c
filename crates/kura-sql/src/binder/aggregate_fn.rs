//! The core aggregates (`count`, `sum`, `avg`, `min`, `max`): which names they
//! are, and a call's result type. Both plain calls and window calls use them.

use kura_common::DataType;
use kura_exec::expr::registry::{Family, Kind};
use kura_exec::expr::PhysExpr;
use kura_exec::{AggCall, AggFunc};

use super::json_fn::{equality_key, refuse_json_key};
use super::types::DIV_SCALE;
use crate::error::{Pos, SqlError, SqlResult};

/// Whether `name` is one of the core aggregates (`count`, `sum`, `avg`, `min`,
/// `max`).
pub(super) fn is_core_aggregate(name: &str) -> bool {
    kura_exec::expr::registry::find(name)
        .is_some_and(|f| f.family == Family::Core && f.kind == Kind::Aggregate)
}

/// The aggregate call for `name(arg)` with its result type.
pub(super) fn aggregate_call(
    name: &str,
    arg: Option<PhysExpr>,
    distinct: bool,
    p: Pos,
) -> SqlResult<AggCall> {
    // count(DISTINCT jsonb) counts values: it counts their equality keys.
    let arg = match (name, distinct, arg) {
        ("count", true, Some(a)) if a.data_type() == DataType::Jsonb => Some(equality_key(a)),
        (_, _, arg) => arg,
    };
    let at = arg.as_ref().map(|a| a.data_type());
    if let (true, Some(t)) = (distinct, at) {
        refuse_json_key(t, "an aggregate's DISTINCT", false)?;
    }
    let (func, data_type) = match (name, at) {
        ("count", None) => (AggFunc::CountStar, DataType::BigInt),
        ("count", Some(_)) => (AggFunc::Count, DataType::BigInt),
        ("sum", Some(t)) if t.is_numeric() => (
            AggFunc::Sum,
            match t {
                DataType::SmallInt | DataType::Integer => DataType::BigInt,
                DataType::BigInt => DataType::Decimal {
                    precision: 38,
                    scale: 0,
                },
                DataType::Double => DataType::Double,
                DataType::Decimal { scale, .. } => DataType::Decimal {
                    precision: 38,
                    scale,
                },
                _ => t,
            },
        ),
        ("avg", Some(t)) if t.is_numeric() => (
            AggFunc::Avg,
            match t {
                DataType::Double => DataType::Double,
                DataType::Decimal { scale, .. } => DataType::Decimal {
                    precision: 38,
                    scale: scale.max(DIV_SCALE),
                },
                _ => DataType::Decimal {
                    precision: 38,
                    scale: DIV_SCALE,
                },
            },
        ),
        ("sum" | "avg", Some(DataType::Interval)) => {
            return Err(SqlError::unsupported(format!("{name}(interval)"), p))
        }
        ("min" | "max", Some(DataType::Json)) => {
            return Err(SqlError::UnknownFunction {
                name: format!("{name}(json)"),
                pos: p,
                suggestion: None,
            })
        }
        ("min" | "max", Some(DataType::Jsonb)) => {
            return Err(SqlError::unsupported(
                format!("{name} over jsonb (kura compares jsonb for equality only)"),
                p,
            ))
        }
        ("min" | "max", Some(t)) if t.is_array() => {
            return Err(SqlError::unsupported(
                format!("{name} over an array (kura compares arrays for equality only)"),
                p,
            ))
        }
        ("min", Some(t)) => (AggFunc::Min, t),
        ("max", Some(t)) => (AggFunc::Max, t),
        (n, Some(t)) => {
            return Err(SqlError::mismatch(
                format!("function {n}({t}) does not exist"),
                p,
            ))
        }
        (n, None) => {
            return Err(SqlError::mismatch(
                format!("function {n}(*) does not exist"),
                p,
            ))
        }
    };
    Ok(AggCall {
        distinct,
        ..AggCall::simple(func, arg, data_type)
    })
}
