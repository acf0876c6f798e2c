//! Statement parameters given as text: the one decoder by type that the PostgreSQL wire
//! server and the Python binding share.

use kura_common::date::parse_date;
use kura_common::decimal::parse_decimal_bytes;
use kura_common::{DataType, Value};

/// The date in a date input: like PostgreSQL, a time of day or zone after it
/// is accepted and ignored (pgjdbc's `setDate` sends `1994-01-01 +00`).
fn date_part(t: &str) -> &str {
    match t.split_once(char::is_whitespace) {
        Some((date, rest))
            if rest
                .chars()
                .all(|c| c.is_ascii_digit() || " :+-.".contains(c)) =>
        {
            date
        }
        _ => t,
    }
}

/// A parameter given as text (a PostgreSQL client's text format, a Python value's text form)
/// as a value of `dt`; `None` (a parameter whose type the statement leaves open) keeps the text.
/// The error is PostgreSQL's message (`invalid input syntax for type integer: "x"`).
pub fn value_from_text(s: &str, dt: Option<&DataType>) -> Result<Value, String> {
    let bad = |ty: &str| format!("invalid input syntax for type {ty}: \"{s}\"");
    let t = s.trim();
    Ok(match dt {
        None | Some(DataType::Varchar(_)) | Some(DataType::Char(_)) => Value::Text(s.to_string()),
        // Kept as written (checked by the statement's cast to its array type).
        Some(DataType::Array(_) | DataType::Vector(_)) => Value::Text(s.to_string()),
        Some(DataType::Uuid) => {
            Value::Text(kura_common::binary::uuid_from_text(s).ok_or_else(|| bad("uuid"))?)
        }
        Some(DataType::Bytea) => Value::Text(kura_common::binary::bytea_from_bytes(
            &kura_common::binary::bytea_input(s).map_err(|e| e.to_string())?,
        )),
        Some(DataType::Interval) => Value::Interval(
            kura_common::interval::parse_interval(t)
                .and_then(|iv| iv.pack())
                .map_err(|_| bad("interval"))?,
        ),
        Some(DataType::Json) => {
            Value::Text(kura_common::json::json_input(s).map_err(|e| e.message)?)
        }
        Some(DataType::Jsonb) => {
            Value::Text(kura_common::json::jsonb_input(s).map_err(|e| e.message)?)
        }
        Some(DataType::Boolean) => match t.to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "y" | "on" | "1" => Value::Boolean(true),
            "f" | "false" | "no" | "n" | "off" | "0" => Value::Boolean(false),
            _ => return Err(bad("boolean")),
        },
        Some(DataType::SmallInt) => {
            Value::Integer(i32::from(t.parse::<i16>().map_err(|e| match e.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                    format!("value \"{s}\" is out of range for type smallint")
                }
                _ => bad("smallint"),
            })?))
        }
        Some(DataType::Integer) => Value::Integer(t.parse().map_err(|_| bad("integer"))?),
        Some(DataType::BigInt) => Value::BigInt(t.parse().map_err(|_| bad("bigint"))?),
        Some(DataType::Double) => Value::Double(match t.to_ascii_lowercase().as_str() {
            "infinity" | "inf" | "+infinity" => f64::INFINITY,
            "-infinity" | "-inf" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            _ => t.parse().map_err(|_| bad("double precision"))?,
        }),
        Some(DataType::Decimal { .. }) => {
            // Keep the scale the client wrote: the engine rescales to the column.
            let scale = t.split_once('.').map_or(0, |(_, f)| f.len());
            let scale = u8::try_from(scale)
                .ok()
                .filter(|s| *s <= 38)
                .ok_or_else(|| bad("numeric"))?;
            let v = parse_decimal_bytes(t.as_bytes(), None, scale).ok_or_else(|| bad("numeric"))?;
            Value::Decimal(v, scale)
        }
        Some(DataType::Date) => Value::Date(parse_date(date_part(t)).map_err(|_| bad("date"))?),
        Some(DataType::Timestamp) => Value::Timestamp(
            kura_common::timestamp::parse_timestamp(t)
                .ok()
                .filter(|v| kura_common::timestamp::in_range(*v))
                .ok_or_else(|| bad("timestamp"))?,
        ),
    })
}
