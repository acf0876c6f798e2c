//! Date and timestamp arithmetic with intervals (`d ± interval`) and today's date.

use super::*;

/// `timestamp ± interval`: months first (day clamped as for dates), then days
/// and the clock part.
pub(super) fn add_timestamp_interval(
    ts: PhysExpr,
    (months, days, micros): (i32, i32, i64),
    negate: bool,
) -> PhysExpr {
    let sign = if negate { -1 } else { 1 };
    let shift = (days as i64 * kura_common::timestamp::MICROS_PER_DAY + micros) * sign;
    fold(PhysExpr::Func {
        func: ScalarFunc::AddInterval,
        args: vec![
            ts,
            PhysExpr::literal(Value::Integer(sign as i32 * months), DataType::Integer),
            PhysExpr::literal(Value::BigInt(shift), DataType::BigInt),
        ],
        data_type: DataType::Timestamp,
    })
}

pub(super) fn add_interval(
    date: PhysExpr,
    (months, days, _): (i32, i32, i64),
    negate: bool,
) -> PhysExpr {
    let sign = if negate { -1 } else { 1 };
    let mut e = date;
    if months != 0 {
        e = fold(PhysExpr::Func {
            func: ScalarFunc::AddMonths,
            args: vec![
                e,
                PhysExpr::literal(Value::Integer(sign * months), DataType::Integer),
            ],
            data_type: DataType::Date,
        });
    }
    if days != 0 || months == 0 {
        e = fold(PhysExpr::Func {
            func: ScalarFunc::AddDays,
            args: vec![
                e,
                PhysExpr::literal(Value::Integer(sign * days), DataType::Integer),
            ],
            data_type: DataType::Date,
        });
    }
    e
}

/// Today as days since 1970-01-01, in UTC (kura's time zone).
pub(super) fn today_utc() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (secs / 86_400) as i32
}

impl Binder<'_> {
    /// `d ± interval` for a date (a date again, as kura always gave; with
    /// hours, minutes or seconds a timestamp, as in PostgreSQL) or a timestamp.
    pub(super) fn plus_interval(
        &mut self,
        d: PhysExpr,
        iv: (i32, i32, i64),
        negate: bool,
        op: &ast::BinaryOperator,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        match d.data_type() {
            // A timestamp, as in PostgreSQL; computed on the date (cheaper).
            DataType::Date if iv.2 == 0 => Ok(fold(coerce(
                add_interval(d, iv, negate),
                DataType::Timestamp,
                p,
            )?)),
            DataType::Date => Ok(add_timestamp_interval(
                coerce(d, DataType::Timestamp, p)?,
                iv,
                negate,
            )),
            DataType::Timestamp => Ok(add_timestamp_interval(d, iv, negate)),
            t => Err(SqlError::mismatch(
                format!("operator does not exist: {t} {op} interval"),
                p,
            )),
        }
    }
}
