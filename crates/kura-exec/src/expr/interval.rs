//! Functions and operators of INTERVAL values (held in their 128-bit column form,
//! see `kura_common::interval`): interval arithmetic, timestamp ± interval,
//! timestamp − timestamp, `age`, the `justify_*` functions, `EXTRACT` of an
//! interval's fields, and its span, which comparisons and keys use.

use kura_common::interval::{age, timestamp_difference, Interval, IntervalError, IntervalResult};
use kura_common::{ColumnData, DataType, Value, Vector};

use super::cast::interval_out_of_range;
use super::row_kernel::row_by_row;
use crate::error::{ExecError, ExecResult};

/// The functions this module evaluates (`ScalarFunc::Interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntervalFunc {
    /// The span in microseconds (a month 30 days): what `=` and `<` compare.
    Span,
    /// `interval + interval`, `interval - interval`, `-interval`.
    Add,
    Sub,
    Neg,
    /// `interval * number`, `number * interval` (the number second), `interval / number`.
    Mul,
    Div,
    /// `timestamp + interval`, `timestamp - interval`.
    TimestampAdd,
    TimestampSub,
    /// `timestamp - timestamp`.
    TimestampDiff,
    /// `age(timestamp, timestamp)`.
    Age,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    /// `EXTRACT(field FROM interval)`.
    Field(IntervalField),
}

/// The fields `EXTRACT` reads from an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntervalField {
    Epoch,
    Millennium,
    Century,
    Decade,
    Year,
    Quarter,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
    Microsecond,
}

impl IntervalField {
    /// The field by PostgreSQL's name for it.
    pub fn named(name: &str) -> Option<IntervalField> {
        use IntervalField as F;
        Some(match name.to_ascii_lowercase().as_str() {
            "epoch" => F::Epoch,
            "millennium" | "millennia" => F::Millennium,
            "century" | "centuries" => F::Century,
            "decade" | "decades" => F::Decade,
            "year" | "years" => F::Year,
            "quarter" => F::Quarter,
            "month" | "months" => F::Month,
            "day" | "days" => F::Day,
            "hour" | "hours" => F::Hour,
            "minute" | "minutes" => F::Minute,
            "second" | "seconds" => F::Second,
            "millisecond" | "milliseconds" => F::Millisecond,
            "microsecond" | "microseconds" => F::Microsecond,
            _ => return None,
        })
    }

    /// The result type: seconds and the epoch keep microseconds, as
    /// PostgreSQL's numeric result does; the other fields are whole.
    pub fn data_type(self) -> DataType {
        match self {
            IntervalField::Epoch => DataType::Decimal {
                precision: 38,
                scale: 6,
            },
            IntervalField::Second => DataType::Decimal {
                precision: 8,
                scale: 6,
            },
            IntervalField::Millisecond => DataType::Decimal {
                precision: 8,
                scale: 3,
            },
            _ => DataType::BigInt,
        }
    }

    fn of(self, iv: &Interval) -> Value {
        use IntervalField as F;
        const DAY: i128 = 86_400_000_000;
        let m = iv.months as i64;
        let t = iv.micros as i128;
        match self {
            // PostgreSQL's epoch of an interval: a year of 365.25 days, a month of 30.
            F::Epoch => Value::Decimal(
                t + (m / 12) as i128 * 31_557_600_000_000
                    + (m % 12) as i128 * 30 * DAY
                    + iv.days as i128 * DAY,
                6,
            ),
            F::Second => Value::Decimal(t % 60_000_000, 6),
            F::Millisecond => Value::Decimal((t % 60_000_000) / 1_000, 3),
            F::Microsecond => Value::BigInt((t % 60_000_000) as i64),
            F::Millennium => Value::BigInt(m / 12 / 1000),
            F::Century => Value::BigInt(m / 12 / 100),
            F::Decade => Value::BigInt(m / 12 / 10),
            F::Year => Value::BigInt(m / 12),
            F::Quarter => Value::BigInt((m % 12) / 3 + 1),
            F::Month => Value::BigInt(m % 12),
            F::Day => Value::BigInt(iv.days as i64),
            F::Hour => Value::BigInt((t / 3_600_000_000) as i64),
            F::Minute => Value::BigInt(((t / 60_000_000) % 60) as i64),
        }
    }
}

impl IntervalFunc {
    pub fn name(self) -> &'static str {
        match self {
            IntervalFunc::Span => "interval_span",
            IntervalFunc::Add => "interval_pl",
            IntervalFunc::Sub => "interval_mi",
            IntervalFunc::Neg => "interval_um",
            IntervalFunc::Mul => "interval_mul",
            IntervalFunc::Div => "interval_div",
            IntervalFunc::TimestampAdd => "timestamp_pl_interval",
            IntervalFunc::TimestampSub => "timestamp_mi_interval",
            IntervalFunc::TimestampDiff => "timestamp_mi",
            IntervalFunc::Age => "age",
            IntervalFunc::JustifyDays => "justify_days",
            IntervalFunc::JustifyHours => "justify_hours",
            IntervalFunc::JustifyInterval => "justify_interval",
            IntervalFunc::Field(_) => "date_part",
        }
    }
}

fn range(e: IntervalError) -> ExecError {
    match e {
        IntervalError::OutOfRange => interval_out_of_range(),
        IntervalError::Syntax => ExecError::Internal("interval syntax in arithmetic".into()),
    }
}

fn packed(iv: IntervalResult<Interval>) -> ExecResult<Value> {
    let iv = iv.map_err(range)?;
    Ok(Value::Interval(iv.pack().map_err(range)?))
}

fn interval_at(v: &Vector, r: usize) -> ExecResult<Interval> {
    match v.get_value(r) {
        Value::Interval(x) => Ok(Interval::unpack(x)),
        other => Err(ExecError::Internal(format!(
            "expected an interval, got {other}"
        ))),
    }
}

fn timestamp_at(v: &Vector, r: usize) -> ExecResult<i64> {
    match v.get_value(r) {
        Value::Timestamp(t) => Ok(t),
        Value::Date(d) => Ok(kura_common::timestamp::from_date(d)),
        other => Err(ExecError::Internal(format!(
            "expected a timestamp, got {other}"
        ))),
    }
}

fn number_at(v: &Vector, r: usize) -> ExecResult<f64> {
    v.get_value(r)
        .as_f64()
        .ok_or_else(|| ExecError::Internal("expected a number".into()))
}

/// `ts + iv`: months first (the day clamped to the month's end), then days,
/// then the clock; PostgreSQL's order.
pub fn timestamp_plus(ts: i64, iv: &Interval) -> ExecResult<i64> {
    use kura_common::timestamp::{from_date, in_range, time_of_day, to_date, MICROS_PER_DAY};
    let out_of_range = || ExecError::OutOfRange("timestamp out of range".into());
    let day = kura_common::date::add_months(to_date(ts), iv.months).ok_or_else(out_of_range)?;
    let shifted = from_date(day)
        .checked_add(time_of_day(ts))
        .and_then(|t| t.checked_add(iv.days as i64 * MICROS_PER_DAY))
        .and_then(|t| t.checked_add(iv.micros))
        .filter(|t| in_range(*t))
        .ok_or_else(out_of_range)?;
    Ok(shifted)
}

/// Applies `f` to argument vectors of `n` rows (NULL in, NULL out).
pub fn call(f: IntervalFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    if f == IntervalFunc::Span {
        return span(&args[0]);
    }
    row_by_row(f.name(), out, n, |r| {
        if args.iter().any(|a| a.is_null(r)) {
            return Ok(Value::Null);
        }
        match f {
            IntervalFunc::Span => unreachable!("handled above"),
            IntervalFunc::Add => {
                packed(interval_at(&args[0], r)?.checked_add(&interval_at(&args[1], r)?))
            }
            IntervalFunc::Sub => {
                packed(interval_at(&args[0], r)?.checked_sub(&interval_at(&args[1], r)?))
            }
            IntervalFunc::Neg => packed(interval_at(&args[0], r)?.checked_neg()),
            IntervalFunc::Mul => packed(interval_at(&args[0], r)?.mul(number_at(&args[1], r)?)),
            IntervalFunc::Div => match interval_at(&args[0], r)?.div(number_at(&args[1], r)?) {
                Some(iv) => packed(iv),
                None => Err(ExecError::DivisionByZero),
            },
            IntervalFunc::TimestampAdd => Ok(Value::Timestamp(timestamp_plus(
                timestamp_at(&args[0], r)?,
                &interval_at(&args[1], r)?,
            )?)),
            IntervalFunc::TimestampSub => {
                let iv = interval_at(&args[1], r)?.checked_neg().map_err(range)?;
                Ok(Value::Timestamp(timestamp_plus(
                    timestamp_at(&args[0], r)?,
                    &iv,
                )?))
            }
            IntervalFunc::TimestampDiff => packed(timestamp_difference(
                timestamp_at(&args[0], r)?,
                timestamp_at(&args[1], r)?,
            )),
            IntervalFunc::Age => {
                packed(age(timestamp_at(&args[0], r)?, timestamp_at(&args[1], r)?))
            }
            IntervalFunc::JustifyDays => packed(interval_at(&args[0], r)?.justify_days()),
            IntervalFunc::JustifyHours => packed(interval_at(&args[0], r)?.justify_hours()),
            IntervalFunc::JustifyInterval => packed(interval_at(&args[0], r)?.justify_interval()),
            IntervalFunc::Field(field) => Ok(field.of(&interval_at(&args[0], r)?)),
        }
    })
}

/// The spans of a vector of intervals, as 64-bit integers (the high half of
/// the column form), NULLs kept.
fn span(v: &Vector) -> ExecResult<Vector> {
    let ColumnData::I128(x) = &v.data else {
        return Err(ExecError::Internal(
            "interval span of a non-interval".into(),
        ));
    };
    let mut out = Vector::new(DataType::BigInt, x.len());
    out.data = ColumnData::I64(x.iter().map(|&p| Interval::packed_span(p)).collect());
    out.validity = v.validity.clone();
    Ok(out)
}
