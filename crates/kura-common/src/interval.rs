//! PostgreSQL's INTERVAL: months, days and microseconds kept apart (a month is not
//! a fixed number of days, nor a day of hours across a time change), its input
//! forms, its `postgres` output style, arithmetic, `age` and the 128-bit column form.

use crate::date::{civil_from_days, days_in_month};
use crate::timestamp::{MICROS_PER_DAY, MICROS_PER_SECOND};

const MICROS_PER_HOUR: i64 = 3_600 * MICROS_PER_SECOND;
const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
/// PostgreSQL's month when intervals are compared or turned into seconds.
const DAYS_PER_MONTH: i64 = 30;

/// An interval: PostgreSQL's three fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// Why an interval could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntervalError {
    /// Not an interval's text (22007 in PostgreSQL).
    Syntax,
    /// A field or the whole span past what kura holds (22008).
    OutOfRange,
}

pub type IntervalResult<T> = Result<T, IntervalError>;

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval {
            months,
            days,
            micros,
        }
    }

    /// Microseconds with a month as 30 days and a day as 24 hours: what
    /// PostgreSQL compares, groups and orders intervals by.
    pub fn span(&self) -> i128 {
        (self.months as i128 * DAYS_PER_MONTH as i128 + self.days as i128) * MICROS_PER_DAY as i128
            + self.micros as i128
    }

    /// The column form: the span in the high 64 bits (so the integers order as
    /// the intervals do) and months and days in the low ones; the microseconds
    /// are what the span leaves. Fails past ±292,000 years of span.
    pub fn pack(&self) -> IntervalResult<i128> {
        let span = i64::try_from(self.span()).map_err(|_| IntervalError::OutOfRange)?;
        Ok(
            ((span as i128) << 64)
                | ((self.months as u32 as i128) << 32)
                | self.days as u32 as i128,
        )
    }

    /// The interval of a column value made by [`Interval::pack`].
    pub fn unpack(v: i128) -> Interval {
        let span = (v >> 64) as i64 as i128;
        let months = (v >> 32) as u32 as i32;
        let days = v as u32 as i32;
        let fixed =
            (months as i128 * DAYS_PER_MONTH as i128 + days as i128) * MICROS_PER_DAY as i128;
        Interval {
            months,
            days,
            micros: (span - fixed) as i64,
        }
    }

    /// The span of a packed value, for equality and hashing.
    pub fn packed_span(v: i128) -> i64 {
        (v >> 64) as i64
    }

    pub fn checked_neg(&self) -> IntervalResult<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or(IntervalError::OutOfRange)?,
            days: self.days.checked_neg().ok_or(IntervalError::OutOfRange)?,
            micros: self.micros.checked_neg().ok_or(IntervalError::OutOfRange)?,
        })
    }

    pub fn checked_add(&self, o: &Interval) -> IntervalResult<Interval> {
        let r = Interval {
            months: self
                .months
                .checked_add(o.months)
                .ok_or(IntervalError::OutOfRange)?,
            days: self
                .days
                .checked_add(o.days)
                .ok_or(IntervalError::OutOfRange)?,
            micros: self
                .micros
                .checked_add(o.micros)
                .ok_or(IntervalError::OutOfRange)?,
        };
        r.pack().map(|_| r)
    }

    pub fn checked_sub(&self, o: &Interval) -> IntervalResult<Interval> {
        self.checked_add(&o.checked_neg()?)
    }

    /// `interval * factor` as PostgreSQL computes it: the fractions of months
    /// carry into days (30 a month) and those of days into the clock.
    pub fn mul(&self, factor: f64) -> IntervalResult<Interval> {
        self.scaled(|x| x * factor)
    }

    /// `interval / divisor`; `None` when dividing by zero.
    pub fn div(&self, divisor: f64) -> Option<IntervalResult<Interval>> {
        (divisor != 0.0).then(|| self.scaled(|x| x / divisor))
    }

    fn scaled(&self, f: impl Fn(f64) -> f64) -> IntervalResult<Interval> {
        let fit = |x: f64| {
            if x.is_finite() && x >= i32::MIN as f64 && x <= i32::MAX as f64 {
                Ok(x.trunc() as i32)
            } else {
                Err(IntervalError::OutOfRange)
            }
        };
        let months_f = f(self.months as f64);
        let days_f = f(self.days as f64);
        let months = fit(months_f)?;
        let mut days = fit(days_f)?;
        let month_remainder_days = (months_f - months as f64) * DAYS_PER_MONTH as f64;
        let mut sec_remainder =
            (days_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0;
        // Rounded to the microsecond, as PostgreSQL's TSROUND does.
        sec_remainder = (sec_remainder * 1e6).round_ties_even() / 1e6;
        if sec_remainder.abs() >= 86_400.0 {
            days = days
                .checked_add((sec_remainder / 86_400.0).trunc() as i32)
                .ok_or(IntervalError::OutOfRange)?;
            sec_remainder -= (sec_remainder / 86_400.0).trunc() * 86_400.0;
        }
        days = days
            .checked_add(month_remainder_days.trunc() as i32)
            .ok_or(IntervalError::OutOfRange)?;
        let micros = (f(self.micros as f64) + sec_remainder * 1e6).round_ties_even();
        if !micros.is_finite() || micros.abs() >= i64::MAX as f64 {
            return Err(IntervalError::OutOfRange);
        }
        let r = Interval::new(months, days, micros as i64);
        r.pack().map(|_| r)
    }

    /// `justify_hours`: whole days of the clock part move to days.
    pub fn justify_hours(&self) -> IntervalResult<Interval> {
        let mut days = self
            .days
            .checked_add((self.micros / MICROS_PER_DAY) as i32)
            .ok_or(IntervalError::OutOfRange)?;
        let mut micros = self.micros % MICROS_PER_DAY;
        if days > 0 && micros < 0 {
            micros += MICROS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= MICROS_PER_DAY;
            days += 1;
        }
        Ok(Interval::new(self.months, days, micros))
    }

    /// `justify_days`: whole 30-day months of the days move to months.
    pub fn justify_days(&self) -> IntervalResult<Interval> {
        let mut months = self
            .months
            .checked_add(self.days / DAYS_PER_MONTH as i32)
            .ok_or(IntervalError::OutOfRange)?;
        let mut days = self.days % DAYS_PER_MONTH as i32;
        if months > 0 && days < 0 {
            days += DAYS_PER_MONTH as i32;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= DAYS_PER_MONTH as i32;
            months += 1;
        }
        Ok(Interval::new(months, days, self.micros))
    }

    /// `justify_interval`: both, with one sign throughout.
    pub fn justify_interval(&self) -> IntervalResult<Interval> {
        let mut months = self.months;
        let mut days = self.days;
        let mut micros = self.micros;
        days = days
            .checked_add((micros / MICROS_PER_DAY) as i32)
            .ok_or(IntervalError::OutOfRange)?;
        micros %= MICROS_PER_DAY;
        months = months
            .checked_add(days / DAYS_PER_MONTH as i32)
            .ok_or(IntervalError::OutOfRange)?;
        days %= DAYS_PER_MONTH as i32;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += DAYS_PER_MONTH as i32;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= DAYS_PER_MONTH as i32;
            months += 1;
        }
        if days > 0 && micros < 0 {
            micros += MICROS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= MICROS_PER_DAY;
            days += 1;
        }
        Ok(Interval::new(months, days, micros))
    }

    /// `EXTRACT(field FROM interval)` as a value with microsecond precision
    /// (seconds, epoch) or whole (the rest); `None` for a field intervals lack.
    pub fn field(&self, field: &str) -> Option<f64> {
        let m = self.months as i64;
        let t = self.micros;
        Some(match field {
            "epoch" => {
                // A year is 365.25 days here, a month 30 (PostgreSQL's rule).
                (t as f64 / 1e6)
                    + 365.25 * 86_400.0 * (m / 12) as f64
                    + 30.0 * 86_400.0 * (m % 12) as f64
                    + 86_400.0 * self.days as f64
            }
            "millennium" => (m / 12 / 1000) as f64,
            "century" => (m / 12 / 100) as f64,
            "decade" => (m / 12 / 10) as f64,
            "year" => (m / 12) as f64,
            "quarter" => ((m % 12) / 3 + 1) as f64,
            "month" => (m % 12) as f64,
            "day" => self.days as f64,
            "hour" => (t / MICROS_PER_HOUR) as f64,
            "minute" => ((t / MICROS_PER_MINUTE) % 60) as f64,
            "second" => (t % MICROS_PER_MINUTE) as f64 / 1e6,
            "millisecond" => (t % MICROS_PER_MINUTE) as f64 / 1e3,
            "microsecond" => (t % MICROS_PER_MINUTE) as f64,
            _ => return None,
        })
    }
}

/// `age(a, b)`: the difference of two timestamps in years, months and days
/// as a calendar reads them (PostgreSQL's `timestamp_age`).
pub fn age(a: i64, b: i64) -> IntervalResult<Interval> {
    let fields = |ts: i64| {
        let days = ts.div_euclid(MICROS_PER_DAY);
        let clock = ts.rem_euclid(MICROS_PER_DAY);
        let (y, m, d) = civil_from_days(days as i32);
        (y as i64, m as i64, d as i64, clock)
    };
    let (y1, m1, d1, c1) = fields(a);
    let (y2, m2, d2, c2) = fields(b);
    let flip = a < b;
    let sign = if flip { -1 } else { 1 };
    let mut year = sign * (y1 - y2);
    let mut mon = sign * (m1 - m2);
    let mut mday = sign * (d1 - d2);
    let mut clock = sign * (c1 - c2);
    // Negative fields borrow from the next larger one.
    while clock < 0 {
        clock += MICROS_PER_DAY;
        mday -= 1;
    }
    while mday < 0 {
        // The earlier timestamp's month lends its length (PostgreSQL's rule).
        let (y, m) = if flip { (y1, m1) } else { (y2, m2) };
        mday += days_in_month(y as i32, m as u32) as i64;
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let months = i32::try_from(sign * (year * 12 + mon)).map_err(|_| IntervalError::OutOfRange)?;
    let r = Interval::new(months, (sign * mday) as i32, sign * clock);
    r.pack().map(|_| r)
}

/// `a - b` of two timestamps: days and the clock, no months (PostgreSQL's
/// `timestamp_mi`, hours justified into days).
pub fn timestamp_difference(a: i64, b: i64) -> IntervalResult<Interval> {
    let micros = a.checked_sub(b).ok_or(IntervalError::OutOfRange)?;
    Interval::new(0, 0, micros).justify_hours()
}

/// PostgreSQL's binary form (interval_send): microseconds, days, months, big-endian.
pub fn to_pg_binary(iv: &Interval) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&iv.micros.to_be_bytes());
    b[8..12].copy_from_slice(&iv.days.to_be_bytes());
    b[12..].copy_from_slice(&iv.months.to_be_bytes());
    b
}

/// An interval from PostgreSQL's binary form; `None` unless 16 bytes.
pub fn from_pg_binary(b: &[u8]) -> Option<Interval> {
    let b: &[u8; 16] = b.try_into().ok()?;
    Some(Interval {
        micros: i64::from_be_bytes(b[..8].try_into().ok()?),
        days: i32::from_be_bytes(b[8..12].try_into().ok()?),
        months: i32::from_be_bytes(b[12..].try_into().ok()?),
    })
}

/// PostgreSQL's `postgres` output style: `1 year 2 mons -3 days +04:05:06.5`.
pub fn format_interval(iv: &Interval) -> String {
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let mut part = |out: &mut String, value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        if !is_zero {
            out.push(' ');
        }
        if is_before && value > 0 {
            out.push('+');
        }
        out.push_str(&format!(
            "{value} {unit}{}",
            if value != 1 { "s" } else { "" }
        ));
        is_before = value < 0;
        is_zero = false;
    };
    let months = iv.months as i64;
    part(&mut out, months / 12, "year");
    part(&mut out, months % 12, "mon");
    part(&mut out, iv.days as i64, "day");
    let t = iv.micros;
    if is_zero || t != 0 {
        let minus = t < 0;
        let a = t.unsigned_abs();
        let (hours, rest) = (a / MICROS_PER_HOUR as u64, a % MICROS_PER_HOUR as u64);
        let (mins, rest) = (
            rest / MICROS_PER_MINUTE as u64,
            rest % MICROS_PER_MINUTE as u64,
        );
        let (secs, frac) = (rest / 1_000_000, rest % 1_000_000);
        if !is_zero {
            out.push(' ');
        }
        if minus {
            out.push('-');
        } else if is_before {
            out.push('+');
        }
        out.push_str(&format!("{hours:02}:{mins:02}:{secs:02}"));
        if frac != 0 {
            let f = format!("{frac:06}");
            out.push('.');
            out.push_str(f.trim_end_matches('0'));
        }
    }
    out
}

/// The unit a word of interval input names, with how many of the unit's base
/// (months, days or microseconds) one of it is.
#[derive(Clone, Copy)]
enum Unit {
    Months(i64),
    Days(i64),
    Micros(i64),
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => Unit::Months(12_000),
        "century" | "centuries" | "cent" | "c" => Unit::Months(1_200),
        "decade" | "decades" | "dec" | "decs" => Unit::Months(120),
        "year" | "years" | "y" | "yr" | "yrs" => Unit::Months(12),
        "month" | "months" | "mon" | "mons" => Unit::Months(1),
        "week" | "weeks" | "w" => Unit::Days(7),
        "day" | "days" | "d" => Unit::Days(1),
        "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Micros(MICROS_PER_HOUR),
        "minute" | "minutes" | "min" | "mins" | "m" => Unit::Micros(MICROS_PER_MINUTE),
        "second" | "seconds" | "sec" | "secs" | "s" => Unit::Micros(MICROS_PER_SECOND),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => Unit::Micros(1_000),
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => Unit::Micros(1),
        _ => return None,
    })
}

/// Sums fields into an interval, fractions carried down as PostgreSQL does
/// (a fraction of a month into 30-day days, of a day into the clock).
#[derive(Default)]
struct Acc {
    months: i64,
    days: i64,
    micros: i128,
}

impl Acc {
    fn add(&mut self, value: f64, unit: Unit) -> IntervalResult<()> {
        if !value.is_finite() {
            return Err(IntervalError::OutOfRange);
        }
        match unit {
            Unit::Months(per) => {
                let months = value * per as f64;
                if per >= 12 {
                    // Fractions of years and longer become whole months.
                    self.months += months.round_ties_even() as i64;
                } else {
                    self.months += months.trunc() as i64;
                    self.add(months.fract() * DAYS_PER_MONTH as f64, Unit::Days(1))?;
                }
            }
            Unit::Days(per) => {
                let days = value * per as f64;
                self.days += days.trunc() as i64;
                self.micros += (days.fract() * MICROS_PER_DAY as f64).round_ties_even() as i128;
            }
            Unit::Micros(per) => {
                self.micros += (value * per as f64).round_ties_even() as i128;
            }
        }
        Ok(())
    }

    fn finish(self, negate: bool) -> IntervalResult<Interval> {
        let s = if negate { -1 } else { 1 };
        let r = Interval {
            months: i32::try_from(s * self.months).map_err(|_| IntervalError::OutOfRange)?,
            days: i32::try_from(s * self.days).map_err(|_| IntervalError::OutOfRange)?,
            micros: i64::try_from(s as i128 * self.micros)
                .map_err(|_| IntervalError::OutOfRange)?,
        };
        r.pack().map(|_| r)
    }
}

/// Reads an interval as PostgreSQL does: `1 year 2 mons 3 days 04:05:06.5`,
/// `@ 1 day ago`, `-1 day +02:00`, `1.5 hours`, `3` (seconds), `1-2`
/// (years-months) and ISO 8601 `P1Y2M3DT4H5M6S`.
pub fn parse_interval(text: &str) -> IntervalResult<Interval> {
    let s = text.trim().to_ascii_lowercase();
    if let Some(iso) = s.strip_prefix('p') {
        return parse_iso(iso);
    }
    let mut tokens = split_tokens(&s);
    if tokens.first().is_some_and(|t| t == "@") {
        tokens.remove(0);
    }
    let negate = tokens.last().is_some_and(|t| t == "ago");
    if negate {
        tokens.pop();
    }
    if tokens.is_empty() {
        return Err(IntervalError::Syntax);
    }
    let mut acc = Acc::default();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.contains(':') {
            acc.micros += clock(t)?;
            i += 1;
            continue;
        }
        if let Some((y, m)) = year_month(t) {
            acc.months += y * 12 + m;
            i += 1;
            continue;
        }
        let value: f64 = t.parse().map_err(|_| IntervalError::Syntax)?;
        if !t.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) {
            return Err(IntervalError::Syntax);
        }
        match tokens.get(i + 1).and_then(|u| unit(u)) {
            Some(u) => {
                acc.add(value, u)?;
                i += 2;
            }
            // A number without a unit, last: seconds.
            None if i + 1 == tokens.len() => {
                acc.add(value, Unit::Micros(MICROS_PER_SECOND))?;
                i += 1;
            }
            None => return Err(IntervalError::Syntax),
        }
    }
    acc.finish(negate)
}

/// Words of interval input: a number glued to its unit (`10min`) is split.
fn split_tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in s.split_whitespace() {
        let number_end = word
            .char_indices()
            .find(|&(_, c)| c.is_ascii_alphabetic())
            .map(|(i, _)| i);
        match number_end {
            Some(i) if i > 0 && !word.contains(':') => {
                out.push(word[..i].to_string());
                out.push(word[i..].to_string());
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// `[-]h:m[:s[.f]]` as microseconds.
fn clock(t: &str) -> IntervalResult<i128> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let parts: Vec<&str> = body.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(IntervalError::Syntax);
    }
    let whole = |p: &str| -> IntervalResult<i128> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(IntervalError::Syntax);
        }
        p.parse().map_err(|_| IntervalError::OutOfRange)
    };
    let hours = whole(parts[0])?;
    let minutes = whole(parts[1])?;
    let seconds = match parts.get(2) {
        Some(sec) => {
            let v: f64 = sec.parse().map_err(|_| IntervalError::Syntax)?;
            if !sec.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return Err(IntervalError::Syntax);
            }
            (v * 1e6).round_ties_even() as i128
        }
        None => 0,
    };
    if minutes > 59 || seconds >= 60_000_000 {
        return Err(IntervalError::OutOfRange);
    }
    let micros = hours * MICROS_PER_HOUR as i128 + minutes * MICROS_PER_MINUTE as i128 + seconds;
    Ok(if neg { -micros } else { micros })
}

/// The SQL standard's `years-months` field.
fn year_month(t: &str) -> Option<(i64, i64)> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (y, m) = body.split_once('-')?;
    let y: i64 = y.parse().ok()?;
    let m: i64 = m.parse().ok()?;
    let s = if neg { -1 } else { 1 };
    Some((s * y, s * m))
}

/// ISO 8601's `PnYnMnWnDTnHnMnS` (after the `P`).
fn parse_iso(s: &str) -> IntervalResult<Interval> {
    let mut acc = Acc::default();
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    for c in s.chars() {
        match c {
            't' if !in_time && number.is_empty() => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            _ => {
                let value: f64 = number.parse().map_err(|_| IntervalError::Syntax)?;
                number.clear();
                let u = match (c, in_time) {
                    ('y', false) => Unit::Months(12),
                    ('m', false) => Unit::Months(1),
                    ('w', false) => Unit::Days(7),
                    ('d', false) => Unit::Days(1),
                    ('h', true) => Unit::Micros(MICROS_PER_HOUR),
                    ('m', true) => Unit::Micros(MICROS_PER_MINUTE),
                    ('s', true) => Unit::Micros(MICROS_PER_SECOND),
                    _ => return Err(IntervalError::Syntax),
                };
                acc.add(value, u)?;
                any = true;
            }
        }
    }
    if !number.is_empty() || !any {
        return Err(IntervalError::Syntax);
    }
    acc.finish(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        format_interval(&parse_interval(s).unwrap())
    }

    #[test]
    fn reads_and_prints_as_postgres_does() {
        assert_eq!(
            p("1 year 2 mons 3 days 04:05:06.5"),
            "1 year 2 mons 3 days 04:05:06.5"
        );
        assert_eq!(p("1 day"), "1 day");
        assert_eq!(p("2 days"), "2 days");
        assert_eq!(p("-1 day +02:00"), "-1 days +02:00:00");
        assert_eq!(p("@ 3 days ago"), "-3 days");
        assert_eq!(p("1.5 hours"), "01:30:00");
        assert_eq!(p("1.5 days"), "1 day 12:00:00");
        assert_eq!(p("1.5 months"), "1 mon 15 days");
        assert_eq!(p("1.5 years"), "1 year 6 mons");
        assert_eq!(p("90"), "00:01:30");
        assert_eq!(p("10min"), "00:10:00");
        assert_eq!(p("0"), "00:00:00");
        assert_eq!(p("1-2"), "1 year 2 mons");
        assert_eq!(p("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(p("-1 year -2 mons"), "-1 years -2 mons");
        assert_eq!(p("1 week"), "7 days");
        assert_eq!(p("-00:00:01.25"), "-00:00:01.25");
        assert_eq!(p("100 hours"), "100:00:00");
        assert!(parse_interval("nonsense").is_err());
        assert!(parse_interval("").is_err());
        assert!(parse_interval("1 fortnight").is_err());
    }

    #[test]
    fn packs_in_span_order_and_back() {
        let xs = [
            "-1 year", "-1 day", "0", "1 second", "1 day", "30 days", "1 mon", "1 year",
        ];
        let packed: Vec<i128> = xs
            .iter()
            .map(|s| parse_interval(s).unwrap().pack().unwrap())
            .collect();
        for w in packed.windows(2) {
            assert!(w[0] <= w[1]);
        }
        for s in xs {
            let iv = parse_interval(s).unwrap();
            assert_eq!(Interval::unpack(iv.pack().unwrap()), iv);
        }
        let a = parse_interval("1 mon").unwrap().pack().unwrap();
        let b = parse_interval("30 days").unwrap().pack().unwrap();
        assert_eq!(Interval::packed_span(a), Interval::packed_span(b));
        assert_ne!(a, b);
    }

    #[test]
    fn arithmetic_as_postgres() {
        let iv = parse_interval("1 mon 1 day").unwrap();
        assert_eq!(
            format_interval(&iv.mul(1.5).unwrap()),
            "1 mon 16 days 12:00:00"
        );
        assert_eq!(
            format_interval(&iv.div(2.0).unwrap().unwrap()),
            "15 days 12:00:00"
        );
        assert!(iv.div(0.0).is_none());
        let d = timestamp_difference(10 * MICROS_PER_HOUR + 365 * MICROS_PER_DAY, 0).unwrap();
        assert_eq!(format_interval(&d), "365 days 10:00:00");
        let j = parse_interval("1 mon -1 hour")
            .unwrap()
            .justify_interval()
            .unwrap();
        assert_eq!(format_interval(&j), "29 days 23:00:00");
        assert_eq!(
            parse_interval("1 day 2 hours").unwrap().field("epoch"),
            Some(93_600.0)
        );
    }

    #[test]
    fn age_borrows_like_postgres() {
        let ts = |y, m, d| crate::date::days_from_civil(y, m, d) as i64 * MICROS_PER_DAY;
        let a = age(ts(2020, 1, 1), ts(2019, 3, 2)).unwrap();
        assert_eq!(format_interval(&a), "9 mons 30 days");
        let b = age(ts(2019, 3, 2), ts(2020, 1, 1)).unwrap();
        assert_eq!(format_interval(&b), "-9 mons -30 days");
        let c = age(ts(2001, 4, 10), ts(1957, 6, 13)).unwrap();
        assert_eq!(format_interval(&c), "43 years 9 mons 27 days");
    }
}
