//! TIMESTAMP (without time zone) values: microseconds since 1970-01-01 00:00:00,
//! held in 64 bits; the calendar part is the date code's (`crate::date`).

use crate::date::{format_date, parse_date_bytes, MAX_DATE, MIN_DATE};
use crate::error::{CommonError, CommonResult};

pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// Midnight of a day (days since 1970-01-01).
pub fn from_date(days: i32) -> i64 {
    days as i64 * MICROS_PER_DAY
}

/// The day a timestamp falls on.
pub fn to_date(micros: i64) -> i32 {
    micros.div_euclid(MICROS_PER_DAY) as i32
}

/// Microseconds since midnight.
pub fn time_of_day(micros: i64) -> i64 {
    micros.rem_euclid(MICROS_PER_DAY)
}

/// Parses `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][ BC]`, as PostgreSQL's input
/// for timestamp without time zone (a trailing `Z` or `+00` is ignored as
/// PostgreSQL does for this type). Fractions beyond microseconds are rounded.
pub fn parse_timestamp(s: &str) -> CommonResult<i64> {
    parse_timestamp_bytes(s.as_bytes()).ok_or_else(|| CommonError::InvalidDate(s.to_string()))
}

pub fn parse_timestamp_bytes(s: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(s).ok()?.trim();
    let (body, bc) = match text.len().checked_sub(3) {
        Some(n) if text.is_char_boundary(n) && text[n..].eq_ignore_ascii_case(" bc") => {
            (text[..n].trim_end(), true)
        }
        _ => (text, false),
    };
    let split = body.find([' ', 'T', 't']);
    let (date_part, time_part) = match split {
        Some(i) => (&body[..i], body[i + 1..].trim()),
        None => (body, ""),
    };
    let date_text = if bc {
        format!("{date_part} BC")
    } else {
        date_part.to_string()
    };
    let days = parse_date_bytes(date_text.as_bytes())?;
    let time = if time_part.is_empty() {
        0
    } else {
        parse_time(time_part)?
    };
    Some(from_date(days) + time)
}

/// `HH:MM[:SS[.f...]]` with an optional zone suffix (`Z`, `+hh[:mm]`, `-hh`)
/// that a timestamp without time zone ignores.
fn parse_time(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['Z', 'z']);
    let t = match t.rfind(['+', '-']) {
        Some(i) if i > 0 => &t[..i],
        _ => t,
    };
    let mut parts = t.trim().split(':');
    let h: i64 = parts.next()?.trim().parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let (sec, frac) = match parts.next() {
        Some(s) => match s.split_once('.') {
            Some((a, b)) => (a.parse::<i64>().ok()?, b),
            None => (s.parse::<i64>().ok()?, ""),
        },
        None => (0, ""),
    };
    if parts.next().is_some() || !(0..=24).contains(&h) || !(0..60).contains(&m) {
        return None;
    }
    if !(0..=60).contains(&sec) || (h == 24 && (m != 0 || sec != 0)) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Microseconds, the seventh digit rounding half up as PostgreSQL does.
    let mut micros: i64 = 0;
    for (i, b) in frac.bytes().take(6).enumerate() {
        micros += (b - b'0') as i64 * 10i64.pow(5 - i as u32);
    }
    if frac.as_bytes().get(6).is_some_and(|b| *b >= b'5') {
        micros += 1;
    }
    Some(((h * 60 + m) * 60 + sec) * MICROS_PER_SECOND + micros)
}

/// Formats as PostgreSQL prints a timestamp: `YYYY-MM-DD HH:MM:SS[.ffffff]`
/// with trailing zeros of the fraction dropped.
pub fn format_timestamp(micros: i64) -> String {
    let days = to_date(micros);
    let tod = time_of_day(micros);
    let secs = tod / MICROS_PER_SECOND;
    let frac = tod % MICROS_PER_SECOND;
    let date = format_date(days);
    let (date, bc) = match date.strip_suffix(" BC") {
        Some(d) => (d.to_string(), " BC"),
        None => (date, ""),
    };
    let mut out = format!(
        "{date} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if frac != 0 {
        let f = format!("{frac:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push_str(bc);
    out
}

/// Whether a timestamp lies within the dates kura accepts.
pub fn in_range(micros: i64) -> bool {
    (MIN_DATE..=MAX_DATE).contains(&to_date(micros))
}

/// `date_trunc(unit, ts)` for the units that are plain calendar or clock steps.
pub fn trunc(unit: &str, micros: i64) -> Option<i64> {
    let days = to_date(micros);
    let (y, m, _) = crate::date::civil_from_days(days);
    let step = |u: i64| Some(micros.div_euclid(u) * u);
    match unit.to_ascii_lowercase().as_str() {
        "microseconds" => Some(micros),
        "milliseconds" => step(1_000),
        "second" => step(MICROS_PER_SECOND),
        "minute" => step(60 * MICROS_PER_SECOND),
        "hour" => step(3600 * MICROS_PER_SECOND),
        "day" => step(MICROS_PER_DAY),
        "week" => {
            // ISO weeks start on Monday; 1970-01-01 was a Thursday.
            let monday = days - (days + 3).rem_euclid(7);
            Some(from_date(monday))
        }
        "month" => Some(from_date(crate::date::days_from_civil(y, m, 1))),
        "quarter" => Some(from_date(crate::date::days_from_civil(
            y,
            (m - 1) / 3 * 3 + 1,
            1,
        ))),
        "year" => Some(from_date(crate::date::days_from_civil(y, 1, 1))),
        "decade" => Some(from_date(crate::date::days_from_civil(
            y.div_euclid(10) * 10,
            1,
            1,
        ))),
        _ => None,
    }
}

/// `extract(field FROM ts)` for the clock fields (the calendar fields come
/// from the date).
pub fn clock_field(field: &str, micros: i64) -> Option<f64> {
    let tod = time_of_day(micros);
    Some(match field {
        "hour" => (tod / (3600 * MICROS_PER_SECOND)) as f64,
        "minute" => (tod / (60 * MICROS_PER_SECOND) % 60) as f64,
        "second" => (tod % (60 * MICROS_PER_SECOND)) as f64 / MICROS_PER_SECOND as f64,
        "epoch" => micros as f64 / MICROS_PER_SECOND as f64,
        _ => return None,
    })
}

/// Now, in microseconds since 1970-01-01 UTC (kura keeps no time zone).
pub fn now_utc() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_as_postgresql() {
        for (input, out) in [
            ("2024-01-02 03:04:05.123", "2024-01-02 03:04:05.123"),
            ("2024-01-02T03:04:05", "2024-01-02 03:04:05"),
            ("2024-01-02", "2024-01-02 00:00:00"),
            ("1969-12-31 23:59:59.5", "1969-12-31 23:59:59.5"),
            ("2024-02-29 24:00:00", "2024-03-01 00:00:00"),
            ("0001-01-01 00:00:00 BC", "0001-01-01 00:00:00 BC"),
            ("2024-01-02 03:04:05.1234567", "2024-01-02 03:04:05.123457"),
            ("2024-01-02 03:04:05+02", "2024-01-02 03:04:05"),
        ] {
            assert_eq!(format_timestamp(parse_timestamp(input).unwrap()), out);
        }
        for bad in [
            "2024-02-30 00:00",
            "2024-01-02 25:00",
            "x",
            "2024-01-02 03:61",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn truncates_and_extracts() {
        let t = parse_timestamp("2024-05-15 13:45:12.5").unwrap();
        let f = |u| format_timestamp(trunc(u, t).unwrap());
        assert_eq!(f("hour"), "2024-05-15 13:00:00");
        assert_eq!(f("month"), "2024-05-01 00:00:00");
        assert_eq!(f("quarter"), "2024-04-01 00:00:00");
        assert_eq!(f("week"), "2024-05-13 00:00:00");
        assert_eq!(clock_field("second", t), Some(12.5));
        assert_eq!(to_date(parse_timestamp("1969-12-31 23:00").unwrap()), -1);
    }
}
