//! DATE as days since 1970-01-01 (proleptic Gregorian), with the civil-calendar
//! conversions (H. Hinnant's algorithms) and month arithmetic SQL intervals need.
//! The range is PostgreSQL's, 4713-11-24 BC to 5874897-12-31: every date
//! arithmetic can produce is one the parser reads back, and beyond it
//! arithmetic fails with "date out of range" instead of wrapping.

use crate::{CommonError, CommonResult};

/// Days since 1970-01-01 of a civil date. `month` 1..=12, `day` 1..=31.
pub const fn days_from_civil(year: i32, month: u32, day: u32) -> i32 {
    let y = if month <= 2 { year - 1 } else { year } as i64;
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146097 + doe - 719468) as i32
}

/// The first day a DATE can hold: 4713-11-24 BC (civil year -4712).
pub const MIN_DATE: i32 = days_from_civil(-4712, 11, 24);
/// The last day a DATE can hold: 5874897-12-31.
pub const MAX_DATE: i32 = days_from_civil(5_874_897, 12, 31);

/// A day number if it lies in DATE's range.
pub fn checked_date(days: i64) -> Option<i32> {
    (MIN_DATE as i64..=MAX_DATE as i64)
        .contains(&days)
        .then_some(days as i32)
}

/// Civil date (year, month, day) of a day number.
pub fn civil_from_days(days: i32) -> (i32, u32, u32) {
    let z = days as i64 + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    ((if m <= 2 { y + 1 } else { y }) as i32, m, d)
}

pub fn is_leap_year(y: i32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap_year(y) => 29,
        _ => 28,
    }
}

/// Parses `YYYY-MM-DD` (optionally followed by ` BC`; years may have up to
/// seven digits) from bytes, validating the calendar (no 1995-02-30) and the range.
pub fn parse_date_bytes(s: &[u8]) -> Option<i32> {
    let mut s = trim_ascii(s);
    let bc = s.len() > 3 && s[s.len() - 3..].eq_ignore_ascii_case(b" bc");
    if bc {
        s = trim_ascii(&s[..s.len() - 3]);
    }
    let dash1 = s.iter().position(|&b| b == b'-').filter(|&p| p > 0)?;
    let rest = &s[dash1 + 1..];
    let dash2 = rest.iter().position(|&b| b == b'-')?;
    let ybytes = &s[..dash1];
    let year = parse_digits(ybytes)? as i32;
    let month = parse_digits(&rest[..dash2])? as u32;
    let day = parse_digits(&rest[dash2 + 1..])? as u32;
    if ybytes.len() > 7 || !(1..=12).contains(&month) || (bc && year == 0) {
        return None;
    }
    // 1 BC is civil year 0.
    let year = if bc { 1 - year } else { year };
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    checked_date(days_from_civil(year, month, day) as i64)
}

fn parse_digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 9 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as u64;
    }
    Some(v)
}

fn trim_ascii(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// Parses `YYYY-MM-DD` (or `YYYY-MM-DD BC`).
pub fn parse_date(s: &str) -> CommonResult<i32> {
    parse_date_bytes(s.as_bytes()).ok_or_else(|| CommonError::InvalidDate(s.to_string()))
}

/// Formats a day number as `YYYY-MM-DD`, as PostgreSQL does: years before 1 AD
/// as `YYYY-MM-DD BC`.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    if y <= 0 {
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

/// Adds days; `None` when the result leaves DATE's range.
pub fn add_days(days: i32, n: i64) -> Option<i32> {
    checked_date(days as i64 + n)
}

/// Adds months, clamping the day to the target month's length (PostgreSQL's rule:
/// 1995-01-31 + 1 month = 1995-02-28); `None` when the result leaves DATE's range.
pub fn add_months(days: i32, months: i32) -> Option<i32> {
    let (y, m, d) = civil_from_days(days);
    let total = y as i64 * 12 + (m as i64 - 1) + months as i64;
    let ny = i32::try_from(total.div_euclid(12)).ok()?;
    if !(-4712..=5_874_897).contains(&ny) {
        return None;
    }
    let nm = (total.rem_euclid(12) + 1) as u32;
    let nd = d.min(days_in_month(ny, nm));
    checked_date(days_from_civil(ny, nm, nd) as i64)
}

/// Year of a day number as SQL reports it (`extract(year from d)`): there is
/// no year 0, 1 BC is -1.
pub fn year_of(days: i32) -> i32 {
    let y = civil_from_days(days).0;
    if y <= 0 {
        y - 1
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(parse_date("1998-12-01").unwrap(), 10561);
        assert_eq!(format_date(10561), "1998-12-01");
        assert_eq!(
            parse_date("2000-02-29").unwrap(),
            days_from_civil(2000, 2, 29)
        );
        assert!(parse_date("1999-02-29").is_err());
        assert!(parse_date("1999-13-01").is_err());
        assert!(parse_date("1999-1x-01").is_err());
        assert!(parse_date("").is_err());
        assert_eq!(
            format_date(add_months(parse_date("1995-01-31").unwrap(), 1).unwrap()),
            "1995-02-28"
        );
        assert_eq!(
            format_date(add_months(parse_date("1995-03-15").unwrap(), -12).unwrap()),
            "1994-03-15"
        );
        assert_eq!(format_date(-1), "1969-12-31");
        assert_eq!(format_date(MIN_DATE), "4713-11-24 BC");
        assert_eq!(format_date(MAX_DATE), "5874897-12-31");
        assert_eq!(parse_date("4713-11-24 BC").unwrap(), MIN_DATE);
        assert_eq!(parse_date("5874897-12-31").unwrap(), MAX_DATE);
        assert!(parse_date("4713-11-23 BC").is_err());
        assert!(parse_date("5874898-01-01").is_err());
        assert!(parse_date("0000-01-01 BC").is_err());
        assert_eq!(
            format_date(parse_date("0044-03-15 BC").unwrap()),
            "0044-03-15 BC"
        );
        assert_eq!(year_of(parse_date("0001-12-31 BC").unwrap()), -1);
        assert_eq!(year_of(parse_date("0001-01-01").unwrap()), 1);
        assert_eq!(add_days(MAX_DATE, 1), None);
        assert_eq!(add_days(MIN_DATE, -1), None);
        assert_eq!(add_days(0, 1), Some(1));
        assert_eq!(add_months(MAX_DATE, 1), None);
        assert_eq!(add_months(0, i32::MAX), None);
        assert_eq!(add_months(0, i32::MIN), None);
    }

    proptest! {
        #[test]
        fn round_trip(d in MIN_DATE..=MAX_DATE) {
            let (y, m, dd) = civil_from_days(d);
            prop_assert_eq!(days_from_civil(y, m, dd), d);
            prop_assert_eq!(parse_date(&format_date(d)).unwrap(), d);
        }
    }
}
