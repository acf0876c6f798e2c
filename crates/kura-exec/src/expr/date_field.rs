//! `extract` / `date_part` fields of dates and timestamps beyond year, month,
//! day, hour, minute and second, as PostgreSQL computes them: day of week
//! (`dow`, `isodow`), day of year, quarter, ISO week and year, decade,
//! century, millennium, and `epoch` (seconds since 1970-01-01).

use kura_common::date::{civil_from_days, days_from_civil};
use kura_common::timestamp::to_date;
use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};

/// The fields this module extracts (`ScalarFunc::DateField`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateField {
    /// Sunday 0 … Saturday 6.
    Dow,
    /// Monday 1 … Sunday 7.
    IsoDow,
    Doy,
    Quarter,
    /// The ISO 8601 week (weeks start on Monday; week 1 holds January 4).
    Week,
    /// The ISO 8601 year the ISO week belongs to.
    IsoYear,
    Decade,
    Century,
    Millennium,
    /// Seconds since 1970-01-01 00:00: a bigint of a date, a decimal with
    /// microseconds of a timestamp.
    Epoch,
}

impl DateField {
    pub fn name(self) -> &'static str {
        match self {
            DateField::Dow => "extract_dow",
            DateField::IsoDow => "extract_isodow",
            DateField::Doy => "extract_doy",
            DateField::Quarter => "extract_quarter",
            DateField::Week => "extract_week",
            DateField::IsoYear => "extract_isoyear",
            DateField::Decade => "extract_decade",
            DateField::Century => "extract_century",
            DateField::Millennium => "extract_millennium",
            DateField::Epoch => "extract_epoch",
        }
    }

    /// The field's type when extracted from a value of `input` type.
    pub fn result_type(self, input: DataType) -> DataType {
        match (self, input) {
            (DateField::Epoch, DataType::Timestamp) => DataType::Decimal {
                precision: 26,
                scale: 6,
            },
            (DateField::Epoch, _) => DataType::BigInt,
            _ => DataType::Integer,
        }
    }
}

/// `f` of every row of a date or timestamp vector.
pub fn call(f: DateField, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let a = args
        .first()
        .ok_or_else(|| ExecError::Internal(format!("{} needs an argument", f.name())))?;
    super::row_kernel::row_by_row(f.name(), out, n, |r| {
        Ok(match a.get_value(r) {
            Value::Date(d) => of_day(f, d, None),
            Value::Timestamp(t) => of_day(f, to_date(t), Some(t)),
            _ => Value::Null,
        })
    })
}

/// Field `f` of day number `d` (days since 1970-01-01), of timestamp
/// `micros` on that day when the value is a timestamp.
fn of_day(f: DateField, d: i32, micros: Option<i64>) -> Value {
    // 1970-01-01 was a Thursday.
    let dow = (d as i64 + 4).rem_euclid(7) as i32;
    let isodow = if dow == 0 { 7 } else { dow };
    // Astronomical year: 0 is 1 BC, as PostgreSQL's formulas below use it.
    let (y, m, _) = civil_from_days(d);
    Value::Integer(match f {
        DateField::Dow => dow,
        DateField::IsoDow => isodow,
        DateField::Doy => d - days_from_civil(y, 1, 1) + 1,
        DateField::Quarter => (m as i32 - 1) / 3 + 1,
        DateField::Week | DateField::IsoYear => {
            // The week's Thursday decides its ISO year.
            let thursday = d + 4 - isodow;
            let iso_year = civil_from_days(thursday).0;
            if f == DateField::IsoYear {
                if iso_year <= 0 {
                    iso_year - 1
                } else {
                    iso_year
                }
            } else {
                (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1
            }
        }
        DateField::Decade if y >= 0 => y / 10,
        DateField::Decade => -((8 - (y - 1)) / 10),
        DateField::Century if y > 0 => (y + 99) / 100,
        DateField::Century => -((99 - (y - 1)) / 100),
        DateField::Millennium if y > 0 => (y + 999) / 1000,
        DateField::Millennium => -((999 - (y - 1)) / 1000),
        DateField::Epoch => {
            return match micros {
                Some(t) => Value::Decimal(t as i128, 6),
                None => Value::BigInt(d as i64 * 86_400),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> i32 {
        days_from_civil(y, m, d)
    }

    fn int(f: DateField, d: i32) -> i32 {
        match of_day(f, d, None) {
            Value::Integer(x) => x,
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn days_of_week_and_year() {
        // 2020-01-01 was a Wednesday.
        assert_eq!(int(DateField::Dow, day(2020, 1, 1)), 3);
        assert_eq!(int(DateField::Dow, day(2020, 1, 5)), 0);
        assert_eq!(int(DateField::IsoDow, day(2020, 1, 5)), 7);
        assert_eq!(int(DateField::Doy, day(2020, 12, 31)), 366);
        assert_eq!(int(DateField::Quarter, day(2020, 4, 1)), 2);
    }

    #[test]
    fn iso_weeks_cross_years() {
        // 2021-01-03 (a Sunday) is in week 53 of ISO year 2020; 2019-12-30 in
        // week 1 of 2020.
        assert_eq!(int(DateField::Week, day(2021, 1, 3)), 53);
        assert_eq!(int(DateField::IsoYear, day(2021, 1, 3)), 2020);
        assert_eq!(int(DateField::Week, day(2019, 12, 30)), 1);
        assert_eq!(int(DateField::IsoYear, day(2019, 12, 30)), 2020);
        assert_eq!(int(DateField::Week, day(2020, 6, 15)), 25);
    }

    #[test]
    fn decades_centuries_millennia() {
        assert_eq!(int(DateField::Decade, day(2020, 1, 1)), 202);
        assert_eq!(int(DateField::Century, day(2000, 12, 31)), 20);
        assert_eq!(int(DateField::Century, day(2001, 1, 1)), 21);
        assert_eq!(int(DateField::Millennium, day(2000, 1, 1)), 2);
        assert_eq!(int(DateField::Millennium, day(2001, 1, 1)), 3);
        // 1 BC (astronomical year 0): PostgreSQL says century -1, decade 0;
        // 11 BC is in decade -1.
        assert_eq!(int(DateField::Century, day(0, 6, 1)), -1);
        assert_eq!(int(DateField::Millennium, day(0, 6, 1)), -1);
        assert_eq!(int(DateField::Decade, day(0, 6, 1)), 0);
        assert_eq!(int(DateField::Decade, day(-10, 6, 1)), -1);
    }

    #[test]
    fn epoch() {
        assert_eq!(
            of_day(DateField::Epoch, day(1970, 1, 2), None),
            Value::BigInt(86_400)
        );
        let t = 1_500_000;
        assert_eq!(
            of_day(DateField::Epoch, 0, Some(t)),
            Value::Decimal(t as i128, 6)
        );
    }
}
