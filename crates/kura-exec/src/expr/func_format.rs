//! `to_char` of timestamps and numbers, `to_date` and `to_timestamp`: the
//! common patterns of PostgreSQL's templates. A pattern PostgreSQL knows but
//! kura does not implement is refused (0A000), never printed as text.

use kura_common::date::{civil_from_days, days_from_civil, days_in_month};
use kura_common::timestamp::{from_date, time_of_day, to_date, MICROS_PER_SECOND};
use kura_common::{DataType, Value, Vector};

use super::ScalarFunc;
use crate::error::{ExecError, ExecResult};

/// How a name is capitalized: `MONTH`, `Month` or `month`.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Case {
    Upper,
    Capital,
    Lower,
}

/// One template pattern.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Pat {
    YearComma,
    Year4,
    Year3,
    Year2,
    Year1,
    Century,
    Month,
    Day,
    DayOfYear,
    /// Day of the week, Sunday 1.
    Dow,
    /// ISO day of the week, Monday 1.
    IsoDow,
    Hour24,
    Hour12,
    Minute,
    Second,
    Millis,
    Micros,
    /// `FF1`–`FF6`: that many digits of the fraction of a second.
    Fraction(u8),
    SecondsOfDay,
    Meridiem {
        dots: bool,
        case: Case,
    },
    Era {
        dots: bool,
        case: Case,
    },
    MonthName(Case),
    MonthAbbr(Case),
    DayName(Case),
    DayAbbr(Case),
    Quarter,
    WeekOfYear,
    WeekOfMonth,
    Julian,
    /// ISO 8601 week-numbering year (`IYYY` … `I`: its last 4 … 1 digits),
    /// week (`IW`) and day of that year (`IDDD`).
    IsoYear(u8),
    IsoWeek,
    IsoDayOfYear,
    /// A pattern PostgreSQL has and kura does not implement.
    Unsupported(&'static str),
}

/// A parsed template: patterns (with FM) and literal text.
#[derive(Debug, PartialEq)]
enum Item {
    Pat { pat: Pat, fill: bool },
    Text(String),
}

/// PostgreSQL's patterns, the longer of two with a common start first.
const PATTERNS: &[&str] = &[
    "Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "IDDD", "ID", "IW", "I", "HH24",
    "HH12", "HH", "MI", "MS", "MONTH", "MON", "MM", "SSSSS", "SSSS", "SS", "US", "FF1", "FF2",
    "FF3", "FF4", "FF5", "FF6", "A.M.", "AM", "P.M.", "PM", "A.D.", "AD", "B.C.", "BC", "DAY",
    "DDD", "DD", "DY", "D", "WW", "W", "Q", "CC", "J", "RM", "TZH", "TZM", "TZ", "OF",
];

fn case_of(s: &str) -> Case {
    let mut cs = s.chars().filter(|c| c.is_ascii_alphabetic());
    match (cs.next(), cs.next()) {
        (Some(a), Some(b)) if a.is_ascii_uppercase() && b.is_ascii_uppercase() => Case::Upper,
        (Some(a), _) if a.is_ascii_uppercase() => Case::Capital,
        _ => Case::Lower,
    }
}

fn pattern(key: &str, written: &str) -> Pat {
    let case = case_of(written);
    match key {
        "Y,YYY" => Pat::YearComma,
        "YYYY" => Pat::Year4,
        "YYY" => Pat::Year3,
        "YY" => Pat::Year2,
        "Y" => Pat::Year1,
        "CC" => Pat::Century,
        "MM" => Pat::Month,
        "DD" => Pat::Day,
        "DDD" => Pat::DayOfYear,
        "D" => Pat::Dow,
        "ID" => Pat::IsoDow,
        "HH24" => Pat::Hour24,
        "HH" | "HH12" => Pat::Hour12,
        "MI" => Pat::Minute,
        "SS" => Pat::Second,
        "MS" => Pat::Millis,
        "US" => Pat::Micros,
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => Pat::Fraction(key.as_bytes()[2] - b'0'),
        "SSSS" | "SSSSS" => Pat::SecondsOfDay,
        "AM" | "PM" => Pat::Meridiem { dots: false, case },
        "A.M." | "P.M." => Pat::Meridiem { dots: true, case },
        "AD" | "BC" => Pat::Era { dots: false, case },
        "A.D." | "B.C." => Pat::Era { dots: true, case },
        "MONTH" => Pat::MonthName(case),
        "MON" => Pat::MonthAbbr(case),
        "DAY" => Pat::DayName(case),
        "DY" => Pat::DayAbbr(case),
        "Q" => Pat::Quarter,
        "WW" => Pat::WeekOfYear,
        "W" => Pat::WeekOfMonth,
        "J" => Pat::Julian,
        "IYYY" => Pat::IsoYear(4),
        "IYY" => Pat::IsoYear(3),
        "IY" => Pat::IsoYear(2),
        "I" => Pat::IsoYear(1),
        "IDDD" => Pat::IsoDayOfYear,
        "IW" => Pat::IsoWeek,
        "RM" => Pat::Unsupported("RM"),
        "TZH" => Pat::Unsupported("TZH"),
        "TZM" => Pat::Unsupported("TZM"),
        "TZ" => Pat::Unsupported("TZ"),
        _ => Pat::Unsupported("OF"),
    }
}

fn unsupported(what: &str) -> ExecError {
    ExecError::Unsupported(format!("the template pattern {what}"))
}

/// Splits a date/time template into patterns and literal text.
fn parse_template(fmt: &str) -> ExecResult<Vec<Item>> {
    let mut items = Vec::new();
    let mut fill = false;
    let mut rest = fmt;
    let push_text = |items: &mut Vec<Item>, s: &str| match items.last_mut() {
        Some(Item::Text(t)) => t.push_str(s),
        _ => items.push(Item::Text(s.to_string())),
    };
    while let Some(c) = rest.chars().next() {
        let upper = rest.to_ascii_uppercase();
        if upper.starts_with("FM") {
            fill = true;
            rest = &rest[2..];
            continue;
        }
        // TM (month and day names in the locale's language) changes nothing in
        // kura's English; FX (exact input format) is a to_date option.
        if upper.starts_with("TM") || upper.starts_with("FX") {
            rest = &rest[2..];
            continue;
        }
        if let Some(key) = PATTERNS.iter().find(|p| upper.starts_with(**p)) {
            let written = &rest[..key.len()];
            rest = &rest[key.len()..];
            let suffix = rest.to_ascii_uppercase();
            if suffix.starts_with("TH") || suffix.starts_with("SP") {
                return Err(unsupported(&format!("suffix {}", &rest[..2])));
            }
            items.push(Item::Pat {
                pat: pattern(key, written),
                fill,
            });
            fill = false;
            continue;
        }
        match c {
            '"' => {
                // Quoted text is literal; `\"` is a quote within it.
                let mut text = String::new();
                let mut chars = rest[1..].char_indices();
                let mut end = rest.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, q)) = chars.next() {
                                text.push(q);
                            }
                        }
                        '"' => {
                            end = i + 2;
                            break;
                        }
                        ch => text.push(ch),
                    }
                }
                push_text(&mut items, &text);
                rest = &rest[end.min(rest.len())..];
            }
            '\\' if rest[1..].starts_with('"') => {
                push_text(&mut items, "\"");
                rest = &rest[2..];
            }
            c => {
                push_text(&mut items, &rest[..c.len_utf8()]);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    Ok(items)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn cased(s: &str, case: Case) -> String {
    match case {
        Case::Upper => s.to_uppercase(),
        Case::Capital => s.to_string(),
        Case::Lower => s.to_lowercase(),
    }
}

/// The ISO 8601 year and week of a day: weeks start on Monday, and week 1
/// is the one holding the year's first Thursday.
fn iso_week(days: i32) -> (i32, i32) {
    let monday_based = (days + 3).rem_euclid(7); // 1970-01-01 was a Thursday.
    let thursday = days - monday_based + 3;
    let (year, _, _) = civil_from_days(thursday);
    let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
    (year, week)
}

/// A timestamp formatted by a template.
fn format_timestamp(ts: i64, items: &[Item]) -> ExecResult<String> {
    let days = to_date(ts);
    let (y, m, d) = civil_from_days(days);
    let tod = time_of_day(ts);
    let (hour, minute) = (
        tod / (3600 * MICROS_PER_SECOND),
        tod / (60 * MICROS_PER_SECOND) % 60,
    );
    let second = tod / MICROS_PER_SECOND % 60;
    let micros = tod % MICROS_PER_SECOND;
    // PostgreSQL prints years before 1 AD as BC years (0 is 1 BC).
    let bc = y <= 0;
    let year = if bc { 1 - y } else { y } as i64;
    let doy = days - days_from_civil(y, 1, 1) + 1;
    let dow = (days + 4).rem_euclid(7) as usize; // 1970-01-01 was a Thursday.
    let mut out = String::new();
    for item in items {
        let (pat, fill) = match item {
            Item::Text(t) => {
                out.push_str(t);
                continue;
            }
            Item::Pat { pat, fill } => (*pat, *fill),
        };
        let num = |v: i64, width: usize| {
            if fill {
                v.to_string()
            } else {
                format!("{v:0width$}")
            }
        };
        let name = |s: &str, case: Case| {
            let s = cased(s, case);
            if fill {
                s
            } else {
                format!("{s:<9}")
            }
        };
        let piece = match pat {
            Pat::YearComma => format!("{},{:03}", year / 1000, year % 1000),
            Pat::Year4 => num(year, 4),
            Pat::Year3 => num(year % 1000, 3),
            Pat::Year2 => num(year % 100, 2),
            Pat::Year1 => num(year % 10, 1),
            Pat::Century => {
                let cc = (year - 1) / 100 + 1;
                num(if bc { -cc } else { cc }, 2)
            }
            Pat::Month => num(m as i64, 2),
            Pat::Day => num(d as i64, 2),
            Pat::DayOfYear => num(doy as i64, 3),
            Pat::Dow => num(dow as i64 + 1, 1),
            Pat::IsoDow => num(if dow == 0 { 7 } else { dow as i64 }, 1),
            Pat::Hour24 => num(hour, 2),
            Pat::Hour12 => num(if hour % 12 == 0 { 12 } else { hour % 12 }, 2),
            Pat::Minute => num(minute, 2),
            Pat::Second => num(second, 2),
            Pat::Millis => num(micros / 1000, 3),
            Pat::Micros => num(micros, 6),
            Pat::Fraction(n) => format!("{:06}", micros)[..n as usize].to_string(),
            Pat::SecondsOfDay => (tod / MICROS_PER_SECOND).to_string(),
            Pat::Meridiem { dots, case } => {
                let s = match (hour >= 12, dots) {
                    (false, false) => "AM",
                    (true, false) => "PM",
                    (false, true) => "A.M.",
                    (true, true) => "P.M.",
                };
                if case == Case::Upper {
                    s.into()
                } else {
                    s.to_lowercase()
                }
            }
            Pat::Era { dots, case } => {
                let s = match (bc, dots) {
                    (false, false) => "AD",
                    (true, false) => "BC",
                    (false, true) => "A.D.",
                    (true, true) => "B.C.",
                };
                if case == Case::Upper {
                    s.into()
                } else {
                    s.to_lowercase()
                }
            }
            Pat::MonthName(case) => name(MONTHS[m as usize - 1], case),
            Pat::MonthAbbr(case) => cased(&MONTHS[m as usize - 1][..3], case),
            Pat::DayName(case) => name(DAYS[dow], case),
            Pat::DayAbbr(case) => cased(&DAYS[dow][..3], case),
            Pat::Quarter => ((m - 1) / 3 + 1).to_string(),
            Pat::WeekOfYear => num((doy as i64 - 1) / 7 + 1, 2),
            Pat::WeekOfMonth => ((d as i64 - 1) / 7 + 1).to_string(),
            // Julian day 2440588 is 1970-01-01.
            Pat::Julian => (days as i64 + 2_440_588).to_string(),
            Pat::IsoYear(n) => {
                let (iy, _) = iso_week(days);
                let digits = 10i64.pow(n as u32);
                num(
                    if n == 4 {
                        iy as i64
                    } else {
                        iy as i64 % digits
                    },
                    n as usize,
                )
            }
            Pat::IsoWeek => num(iso_week(days).1 as i64, 2),
            Pat::IsoDayOfYear => {
                let isodow = if dow == 0 { 7 } else { dow as i64 };
                num((iso_week(days).1 as i64 - 1) * 7 + isodow, 3)
            }
            Pat::Unsupported(p) => return Err(unsupported(p)),
        };
        out.push_str(&piece);
    }
    Ok(out)
}

/// The date and time read from `text` by a template (`to_date`, `to_timestamp`).
fn parse_timestamp(text: &str, fmt: &str, items: &[Item]) -> ExecResult<i64> {
    let bad = |p: &str, at: &str| {
        ExecError::InvalidDatetimeFormat(format!(
            "invalid value \"{}\" for \"{p}\"",
            at.chars().take(p.len().max(1)).collect::<String>()
        ))
    };
    let (mut year, mut month, mut day) = (1i64, 1i64, 1i64);
    let (mut hour, mut minute, mut second, mut micros) = (0i64, 0i64, 0i64, 0i64);
    let (mut pm, mut hour12, mut bc) = (None, false, false);
    let mut rest = text;
    for (k, item) in items.iter().enumerate() {
        let pat = match item {
            Item::Text(t) => {
                // A separator or space in the template skips one separator (or
                // the spaces) of the input; any other character skips one.
                for c in t.chars() {
                    if c == ' ' {
                        rest = rest.trim_start_matches(' ');
                    } else if let Some(i) = rest.chars().next() {
                        if c.is_alphanumeric() || !i.is_alphanumeric() {
                            rest = &rest[i.len_utf8()..];
                        }
                    }
                }
                continue;
            }
            Item::Pat { pat, .. } => *pat,
        };
        rest = rest.trim_start_matches(' ');
        // A field followed directly by another pattern reads its own width;
        // otherwise as many digits as there are.
        let next_is_pattern = matches!(items.get(k + 1), Some(Item::Pat { .. }));
        let mut number = |p: &'static str, width: usize| -> ExecResult<i64> {
            let limit = if next_is_pattern { width } else { usize::MAX };
            let negative = rest.starts_with('-') && p.starts_with('Y');
            let body = if negative { &rest[1..] } else { rest };
            let len = body
                .bytes()
                .take(limit)
                .take_while(|b| b.is_ascii_digit())
                .count();
            if len == 0 {
                return Err(bad(p, rest));
            }
            let v: i64 = body[..len].parse().map_err(|_| bad(p, rest))?;
            rest = &body[len..];
            Ok(if negative { -v } else { v })
        };
        match pat {
            Pat::Year4 => year = number("YYYY", 4)?,
            Pat::Year2 => {
                // PostgreSQL: two digits mean the year nearest 2020.
                let y = number("YY", 2)?;
                year = if y < 70 { 2000 + y } else { 1900 + y };
            }
            Pat::Month => month = number("MM", 2)?,
            Pat::Day => day = number("DD", 2)?,
            Pat::Hour24 => hour = number("HH24", 2)?,
            Pat::Hour12 => {
                hour = number("HH12", 2)?;
                hour12 = true;
                if !(1..=12).contains(&hour) {
                    return Err(ExecError::InvalidDatetimeFormat(format!(
                        "hour \"{hour}\" is invalid for the 12-hour clock"
                    )));
                }
            }
            Pat::Minute => minute = number("MI", 2)?,
            Pat::Second => second = number("SS", 2)?,
            Pat::Millis => micros = number("MS", 3)? * 1000,
            Pat::Micros => micros = number("US", 6)?,
            Pat::Meridiem { dots, .. } => {
                let n = if dots { 4 } else { 2 };
                let word = rest.get(..n).unwrap_or("").to_ascii_uppercase();
                pm = Some(match word.replace('.', "").as_str() {
                    "AM" => false,
                    "PM" => true,
                    _ => return Err(bad("AM", rest)),
                });
                rest = &rest[n..];
            }
            Pat::Era { dots, .. } => {
                let n = if dots { 4 } else { 2 };
                let word = rest.get(..n).unwrap_or("").to_ascii_uppercase();
                bc = match word.replace('.', "").as_str() {
                    "AD" => false,
                    "BC" => true,
                    _ => return Err(bad("AD", rest)),
                };
                rest = &rest[n..];
            }
            Pat::MonthName(_) | Pat::MonthAbbr(_) | Pat::DayName(_) | Pat::DayAbbr(_) => {
                let names = if matches!(pat, Pat::MonthName(_) | Pat::MonthAbbr(_)) {
                    &MONTHS[..]
                } else {
                    &DAYS[..]
                };
                let full = matches!(pat, Pat::MonthName(_) | Pat::DayName(_));
                let lower = rest.to_ascii_lowercase();
                let found = names.iter().enumerate().find_map(|(i, n)| {
                    let n = n.to_ascii_lowercase();
                    let n = if full { n } else { n[..3].to_string() };
                    lower.starts_with(&n).then_some((i, n.len()))
                });
                let (i, len) = found.ok_or_else(|| {
                    let p = if full { "Month" } else { "Mon" };
                    bad(p, rest)
                })?;
                rest = &rest[len..];
                if names.len() == 12 {
                    month = i as i64 + 1;
                }
            }
            other => {
                return Err(ExecError::Unsupported(format!(
                    "the template pattern {other:?} in to_date/to_timestamp"
                )))
            }
        }
    }
    let _ = fmt;
    if let Some(pm) = pm {
        if hour12 || (1..=12).contains(&hour) {
            hour = hour % 12 + if pm { 12 } else { 0 };
        }
    }
    if bc {
        year = 1 - year;
    }
    let out_of_range =
        || ExecError::InvalidDate(format!("date/time field value out of range: \"{text}\""));
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year as i32, month as u32) as i64
        || hour > 24
        || minute > 59
        || second > 60
    {
        return Err(out_of_range());
    }
    let days = days_from_civil(
        i32::try_from(year).map_err(|_| out_of_range())?,
        month as u32,
        day as u32,
    );
    Ok(from_date(days) + ((hour * 60 + minute) * 60 + second) * MICROS_PER_SECOND + micros)
}

/// A number formatted by a numeric template of `9`, `0`, `.`/`D`, `,`/`G`
/// and `FM`.
fn format_number(v: &Value, fmt: &str) -> ExecResult<String> {
    let mut fill = false;
    let (mut int, mut frac, mut point) = (Vec::new(), Vec::new(), false);
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        if rest.to_ascii_uppercase().starts_with("FM") {
            fill = true;
            rest = &rest[2..];
            continue;
        }
        match c.to_ascii_uppercase() {
            '9' | '0' if point => frac.push(c),
            '9' | '0' | ',' | 'G' if !point => int.push(if c == 'G' || c == 'g' { ',' } else { c }),
            '.' | 'D' if !point => point = true,
            '.' | 'D' => {
                return Err(ExecError::InvalidParameter(
                    "multiple decimal points".into(),
                ))
            }
            _ => {
                return Err(ExecError::Unsupported(format!(
                    "the number template pattern \"{}\" (9, 0, ., D, comma, G and FM are)",
                    &rest[..c.len_utf8()]
                )))
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    let nf = frac.len();
    // The value rounded to the template's fraction digits, as digit strings:
    // numerics half away from zero, doubles as printf rounds them.
    let (negative, digits) = match v {
        Value::Double(x) => (*x < 0.0, format!("{:.nf$}", x.abs())),
        other => {
            let (x, s) = match other {
                Value::Integer(x) => (*x as i128, 0u8),
                Value::BigInt(x) => (*x as i128, 0),
                Value::Decimal(x, s) => (*x, *s),
                _ => return Err(ExecError::Internal(format!("to_char of {other}"))),
            };
            let mut m = x.unsigned_abs();
            let s = s as usize;
            if s > nf {
                let unit = 10u128.pow((s - nf) as u32);
                m = (m + unit / 2) / unit;
            } else {
                m *= 10u128.pow((nf - s) as u32);
            }
            let t = format!("{m:0>width$}", width = nf + 1);
            let (i, f) = t.split_at(t.len() - nf);
            let text = if nf > 0 {
                format!("{i}.{f}")
            } else {
                i.to_string()
            };
            (x < 0, text)
        }
    };
    let (int_digits, frac_digits) = digits.split_once('.').unwrap_or((digits.as_str(), ""));
    let int_digits = int_digits.trim_start_matches('0');
    let zero = int_digits.is_empty() && frac_digits.bytes().all(|b| b == b'0');
    let sign = if negative && !zero {
        "-"
    } else if fill {
        ""
    } else {
        " "
    };
    let slots = int.iter().filter(|c| **c != ',').count();
    let overflow = int_digits.len() > slots;
    // The fraction: FM drops trailing zeros printed by `9`s.
    let mut frac_out: Vec<char> = frac_digits.chars().collect();
    if overflow {
        frac_out.iter_mut().for_each(|c| *c = '#');
    } else if fill {
        while frac_out.len() > frac.iter().rposition(|c| *c == '0').map_or(0, |p| p + 1)
            && frac_out.last() == Some(&'0')
        {
            frac_out.pop();
        }
    }
    // The integer part: digits right-aligned, `0`s fill from the first `0`
    // of the template, a comma only after a printed digit. A zero prints as
    // one `0` where nothing else would show it.
    let mut int_digits = int_digits.to_string();
    if int_digits.is_empty() && slots > 0 && (!point || (fill && frac_out.is_empty())) {
        int_digits.push('0');
    }
    let first = slots - int_digits.len().min(slots);
    let zero_from = int
        .iter()
        .filter(|c| **c != ',')
        .position(|c| *c == '0')
        .unwrap_or(slots);
    let (mut lead, mut body) = (String::new(), String::new());
    let mut slot = 0;
    let mut digits_in = int_digits.chars();
    for c in &int {
        let printed = !body.is_empty();
        if *c == ',' {
            if printed {
                body.push(',');
            } else if !fill {
                lead.push(' ');
            }
            continue;
        }
        if overflow {
            body.push('#');
        } else if slot >= first {
            body.push(digits_in.next().unwrap_or('0'));
        } else if slot >= zero_from {
            body.push('0');
        } else if !fill {
            lead.push(' ');
        }
        slot += 1;
    }
    let mut out = lead;
    out.push_str(sign);
    out.push_str(&body);
    if point {
        out.push('.');
        out.extend(frac_out);
    }
    Ok(out)
}

/// Applies one of this module's functions to argument vectors of `n` rows.
pub fn call(func: ScalarFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let mut res = Vector::new(out, n);
    let mut templates: Option<(String, Vec<Item>)> = None;
    let value = |i: usize, r: usize| args.get(i).map_or(Value::Null, |v| v.get_value(r));
    for r in 0..n {
        let (x, fmt) = (value(0, r), value(1, r));
        let Value::Text(fmt) = fmt else {
            res.push_null();
            continue;
        };
        if x.is_null() {
            res.push_null();
            continue;
        }
        // Templates are constant in practice: parsed once per batch.
        let number_format = func == ScalarFunc::ToChar && !matches!(x, Value::Timestamp(_));
        if !number_format && templates.as_ref().is_none_or(|t| t.0 != fmt) {
            templates = Some((fmt.clone(), parse_template(&fmt)?));
        }
        let items = templates.as_ref().map_or(&[][..], |t| &t.1[..]);
        let v = match (func, &x) {
            (ScalarFunc::ToChar, Value::Timestamp(ts)) => {
                Value::Text(format_timestamp(*ts, items)?)
            }
            (ScalarFunc::ToChar, _) => Value::Text(format_number(&x, &fmt)?),
            (ScalarFunc::ToDate, Value::Text(t)) => {
                Value::Date(to_date(parse_timestamp(t, &fmt, items)?))
            }
            (ScalarFunc::ToTimestamp, Value::Text(t)) => {
                Value::Timestamp(parse_timestamp(t, &fmt, items)?)
            }
            _ => return Err(ExecError::Internal(format!("{} of {x}", func.name()))),
        };
        if !res.push_value(&v) {
            return Err(ExecError::Internal(format!("{} gave {v}", func.name())));
        }
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> i64 {
        kura_common::timestamp::parse_timestamp(s).unwrap()
    }

    fn fmt_ts(s: &str, f: &str) -> String {
        format_timestamp(ts(s), &parse_template(f).unwrap()).unwrap()
    }

    #[test]
    fn timestamps_format_by_template() {
        assert_eq!(
            fmt_ts("2024-03-05 14:07:09", "YYYY-MM-DD HH24:MI:SS"),
            "2024-03-05 14:07:09"
        );
        assert_eq!(
            fmt_ts("2024-03-05 14:07:09", "FMMonth DD, YYYY"),
            "March 05, 2024"
        );
        assert_eq!(
            fmt_ts("2024-03-05 14:07:09", "Dy Mon HH12 PM Q"),
            "Tue Mar 02 PM 1"
        );
        assert_eq!(fmt_ts("2024-03-05", "\"Q\"Q"), "Q1");
        // 2021-01-03 is a Sunday of 2020's week 53; 2024-12-30 is in 2025's week 1.
        assert_eq!(fmt_ts("2021-01-03", "IYYY-IW-ID IDDD"), "2020-53-7 371");
        assert_eq!(fmt_ts("2024-12-30", "IYYY-IW IY"), "2025-01 25");
        assert!(format_timestamp(ts("2024-03-05"), &parse_template("RM").unwrap()).is_err());
        assert!(parse_template("DDth").is_err());
    }

    #[test]
    fn numbers_format_like_postgresql() {
        let f = |v: Value, t: &str| format_number(&v, t).unwrap();
        assert_eq!(f(Value::Integer(0), "999"), "   0");
        assert_eq!(f(Value::Decimal(5, 1), "9.99"), "  .50");
        assert_eq!(f(Value::Integer(-5), "999"), "  -5");
        assert_eq!(f(Value::Integer(5), "FM9.99"), "5.");
        assert_eq!(f(Value::Decimal(-12345, 1), "FM9,999.00"), "-1,234.50");
        assert_eq!(f(Value::Integer(12345), "999"), " ###");
        assert_eq!(f(Value::Integer(-12345), "999"), "-###");
        assert_eq!(f(Value::Integer(5), "9,999"), "     5");
        assert_eq!(f(Value::Integer(5), "0999"), " 0005");
        assert_eq!(f(Value::Double(2.5), "9"), " 2");
        assert_eq!(f(Value::Decimal(25, 1), "9"), " 3");
        assert_eq!(f(Value::Integer(0), "FM9.9"), "0.");
        assert!(format_number(&Value::Integer(1), "9EEEE").is_err());
    }

    #[test]
    fn dates_parse_by_template() {
        let p = |t: &str, f: &str| parse_timestamp(t, f, &parse_template(f).unwrap());
        assert_eq!(p("2024-03-05", "YYYY-MM-DD").unwrap(), ts("2024-03-05"));
        assert_eq!(p("20240305", "YYYYMMDD").unwrap(), ts("2024-03-05"));
        assert_eq!(p("05 Mar 2024", "DD Mon YYYY").unwrap(), ts("2024-03-05"));
        assert_eq!(
            p("2024-03-05 02:30:00 PM", "YYYY-MM-DD HH12:MI:SS AM").unwrap(),
            ts("2024-03-05 14:30:00")
        );
        assert!(p("2024-02-30", "YYYY-MM-DD").is_err());
        assert!(p("abcd", "YYYY").is_err());
    }
}
