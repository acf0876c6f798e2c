//! A single SQL value (constants, result rows, min/max statistics).

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

use crate::date::format_date;
use crate::decimal::{format_decimal, rescale};

/// One value of any type, or NULL. Decimals carry their scale.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Value {
    Null,
    Boolean(bool),
    Integer(i32),
    BigInt(i64),
    Double(f64),
    /// Scaled integer and its scale.
    Decimal(i128, u8),
    /// Days since 1970-01-01.
    Date(i32),
    Text(String),
    /// Microseconds since 1970-01-01 00:00:00 (TIMESTAMP).
    Timestamp(i64),
    /// An INTERVAL in its column form ([`crate::interval::Interval::pack`]).
    Interval(i128),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as f64 if numeric (for tolerant comparisons and statistics).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Integer(v) => Some(*v as f64),
            Value::BigInt(v) => Some(*v as f64),
            Value::Double(v) => Some(*v),
            Value::Decimal(v, s) => Some(*v as f64 / 10f64.powi(*s as i32)),
            Value::Date(d) => Some(*d as f64),
            Value::Timestamp(t) => Some(*t as f64),
            _ => None,
        }
    }

    /// SQL ordering between two non-NULL values of comparable types; NULL sorts
    /// last here (callers handle NULLS FIRST/LAST). Text compares bytewise with
    /// trailing blanks ignored (CHAR semantics).
    /// Orders values of a type whose trailing blanks count (VARCHAR, TEXT):
    /// texts byte by byte, so `'a'` sorts before `'a '`; other values as
    /// [`Value::total_cmp`], which compares texts as CHAR(n) does (blanks at
    /// the end insignificant).
    pub fn total_cmp_exact(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            _ => self.total_cmp(other),
        }
    }

    /// [`Value::total_cmp_exact`], or for values of a CHAR(n) type
    /// ([`crate::DataType::Char`]) [`Value::total_cmp`].
    pub fn total_cmp_of(&self, other: &Value, data_type: crate::DataType) -> Ordering {
        if matches!(data_type, crate::DataType::Char(_)) {
            self.total_cmp(other)
        } else {
            self.total_cmp_exact(other)
        }
    }

    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Greater,
            (_, Null) => Ordering::Less,
            (Boolean(a), Boolean(b)) => a.cmp(b),
            (Integer(a), Integer(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Timestamp(b)) => crate::timestamp::from_date(*a).cmp(b),
            (Timestamp(a), Date(b)) => a.cmp(&crate::timestamp::from_date(*b)),
            (Text(a), Text(b)) => a.trim_end_matches(' ').cmp(b.trim_end_matches(' ')),
            // Intervals compare by span: `1 mon` equals `30 days`.
            (Interval(a), Interval(b)) => crate::interval::Interval::packed_span(*a)
                .cmp(&crate::interval::Interval::packed_span(*b)),
            (Decimal(a, sa), Decimal(b, sb)) => {
                let s = (*sa).max(*sb);
                match (rescale(*a, *sa, s), rescale(*b, *sb, s)) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    _ => self.as_f64().unwrap().total_cmp(&other.as_f64().unwrap()),
                }
            }
            (Integer(_) | BigInt(_), Integer(_) | BigInt(_)) => {
                self.as_i64().unwrap().cmp(&other.as_i64().unwrap())
            }
            (Integer(_) | BigInt(_), Decimal(..)) | (Decimal(..), Integer(_) | BigInt(_)) => {
                let a = self.to_decimal_scaled();
                let b = other.to_decimal_scaled();
                Value::Decimal(a.0, a.1).total_cmp(&Value::Decimal(b.0, b.1))
            }
            _ => match (self.as_f64(), other.as_f64()) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                _ => self.to_string().cmp(&other.to_string()),
            },
        }
    }

    /// An integer value (INTEGER or BIGINT) as i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Integer(v) => Some(*v as i64),
            Value::BigInt(v) => Some(*v),
            _ => None,
        }
    }

    fn to_decimal_scaled(&self) -> (i128, u8) {
        match self {
            Value::Decimal(v, s) => (*v, *s),
            other => (other.as_i64().unwrap_or(0) as i128, 0),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.total_cmp(other) == Ordering::Equal
    }
}

impl fmt::Display for Value {
    /// Text form as PostgreSQL prints it (NULL prints as the empty string).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => Ok(()),
            Value::Boolean(b) => write!(f, "{}", if *b { "t" } else { "f" }),
            Value::Integer(v) => write!(f, "{v}"),
            Value::BigInt(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{}", format_double(*v)),
            Value::Decimal(v, s) => write!(f, "{}", format_decimal(*v, *s)),
            Value::Date(d) => write!(f, "{}", format_date(*d)),
            Value::Timestamp(t) => write!(f, "{}", crate::timestamp::format_timestamp(*t)),
            Value::Text(s) => write!(f, "{s}"),
            Value::Interval(v) => write!(
                f,
                "{}",
                crate::interval::format_interval(&crate::interval::Interval::unpack(*v))
            ),
        }
    }
}

/// A double as PostgreSQL prints it: shortest round-trip digits, exponent form
/// below 1e-4 and from 1e15 on (`1e+15`, `1e-05`), `Infinity`, `NaN`.
pub fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e15).contains(&a) {
        let s = format!("{v:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match e.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', e),
        };
        format!("{m}e{sign}{digits:0>2}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_postgres() {
        assert_eq!(format_double(1e15), "1e+15");
        assert_eq!(format_double(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(format_double(0.00001), "1e-05");
        assert_eq!(format_double(123.5), "123.5");
        assert_eq!(format_double(-0.0001), "-0.0001");
        assert_eq!(format_double(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(Value::Double(2.0).to_string(), "2");
    }
}
