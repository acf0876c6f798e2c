//! DECIMAL(p,s) as a scaled integer: parsing text into the scaled value (rounding
//! half away from zero, as PostgreSQL does), formatting, and rescaling.

use crate::{CommonError, CommonResult};

/// Largest precision whose values fit a scaled i64 (the storage form); wider
/// decimals (aggregate results) are held in i128.
pub const MAX_I64_PRECISION: u8 = 18;
/// Largest precision kura accepts.
pub const MAX_PRECISION: u8 = 38;

/// 10^n as i128 (n ≤ 38).
pub fn pow10(n: u32) -> i128 {
    10i128.pow(n)
}

/// Parses decimal text (`-12.345`, `+7`, `.5`, `1e3` not accepted) into an integer
/// scaled by `10^scale`. Extra fractional digits are rounded half away from zero.
/// `precision` bounds the total digits; `None` means "as wide as i128 allows".
pub fn parse_decimal_bytes(s: &[u8], precision: Option<u8>, scale: u8) -> Option<i128> {
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut end = s.len();
    while end > i && s[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let s = &s[i..end];
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let mut int_part: i128 = 0;
    let mut int_digits = 0u32;
    let mut frac: i128 = 0;
    let mut frac_digits = 0u32;
    let mut round_up = false;
    let mut seen_dot = false;
    let mut any_digit = false;
    for &c in body {
        match c {
            b'0'..=b'9' => {
                any_digit = true;
                let d = (c - b'0') as i128;
                if !seen_dot {
                    if int_part != 0 || d != 0 {
                        int_digits += 1;
                    }
                    if int_digits > 38 {
                        return None;
                    }
                    int_part = int_part * 10 + d;
                } else if frac_digits < scale as u32 {
                    frac = frac * 10 + d;
                    frac_digits += 1;
                } else if frac_digits == scale as u32 {
                    round_up = d >= 5;
                    frac_digits += 1; // later digits cannot change half-away rounding
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => return None,
        }
    }
    if !any_digit {
        return None;
    }
    let used = frac_digits.min(scale as u32);
    let mut v = int_part
        .checked_mul(pow10(scale as u32))?
        .checked_add(frac * pow10(scale as u32 - used))?;
    if round_up {
        v += 1;
    }
    if let Some(p) = precision {
        if v.unsigned_abs() >= pow10(p as u32) as u128 {
            return None;
        }
    }
    Some(if neg { -v } else { v })
}

/// Parses decimal text, with an error naming the type on failure.
pub fn parse_decimal(s: &str, precision: u8, scale: u8) -> CommonResult<i128> {
    parse_decimal_bytes(s.as_bytes(), Some(precision), scale).ok_or_else(|| {
        if parse_decimal_bytes(s.as_bytes(), None, scale).is_some() {
            CommonError::OutOfRange {
                ty: format!("DECIMAL({precision},{scale})"),
                text: s.to_string(),
            }
        } else {
            CommonError::InvalidNumber {
                ty: "decimal",
                text: s.to_string(),
            }
        }
    })
}

/// Formats a scaled integer: `format_decimal(12345, 2)` is `123.45`.
pub fn format_decimal(v: i128, scale: u8) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let p = pow10(scale as u32);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    let p = p as u128;
    format!("{sign}{}.{:0width$}", a / p, a % p, width = scale as usize)
}

/// Changes the scale of a scaled integer, rounding half away from zero when the
/// scale shrinks. `None` on overflow.
pub fn rescale(v: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        v.checked_mul(pow10((to - from) as u32))
    } else {
        let d = pow10((from - to) as u32);
        let q = v / d;
        let r = v % d;
        Some(if r.abs() * 2 >= d { q + v.signum() } else { q })
    }
}

/// Divides `a` by `b` (both scaled integers) and rounds half away from zero.
pub fn div_round(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    let q = a / b;
    let r = a % b;
    Some(if r.abs() * 2 >= b.abs() {
        q + (a.signum() * b.signum())
    } else {
        q
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format() {
        assert_eq!(parse_decimal("123.45", 15, 2).unwrap(), 12345);
        assert_eq!(parse_decimal("-0.5", 15, 2).unwrap(), -50);
        assert_eq!(parse_decimal(".5", 15, 2).unwrap(), 50);
        assert_eq!(parse_decimal("7", 15, 2).unwrap(), 700);
        assert_eq!(parse_decimal("1.005", 15, 2).unwrap(), 101);
        assert_eq!(parse_decimal("-1.005", 15, 2).unwrap(), -101);
        assert_eq!(parse_decimal("1.0049", 15, 2).unwrap(), 100);
        assert!(parse_decimal("1.2.3", 15, 2).is_err());
        assert!(parse_decimal("abc", 15, 2).is_err());
        assert!(parse_decimal("-", 15, 2).is_err());
        assert!(matches!(
            parse_decimal("1000", 4, 2),
            Err(CommonError::OutOfRange { .. })
        ));
        assert_eq!(format_decimal(12345, 2), "123.45");
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(format_decimal(7, 0), "7");
        assert_eq!(rescale(12345, 2, 1), Some(1235));
        assert_eq!(rescale(-12345, 2, 1), Some(-1235));
        assert_eq!(rescale(12, 0, 2), Some(1200));
        assert_eq!(div_round(10, 4), Some(3));
        assert_eq!(div_round(-10, 4), Some(-3));
        assert_eq!(div_round(1, 0), None);
    }
}
