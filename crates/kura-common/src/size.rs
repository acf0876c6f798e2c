//! Human byte sizes: `256MB`, `4GiB`, `16KiB`, `16384` (binary units either way,
//! as memory and buffer sizes are always meant in powers of two, and as
//! PostgreSQL reads `'64MB'`). Every size kura reads — options, settings, the
//! cache simulator's and benchmarks' arguments — is read here.

use crate::{CommonError, CommonResult};

/// Parses a byte size such as `256MB`, `1.5GiB`, `64k` or `16384`.
pub fn parse_size(text: &str) -> CommonResult<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| CommonError::InvalidSize(text.to_string()))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(CommonError::InvalidSize(text.to_string())),
    };
    let bytes = n * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(CommonError::InvalidSize(text.to_string()));
    }
    Ok(bytes as u64)
}

/// Formats a byte count as a setting's value, as PostgreSQL shows one: in the
/// largest unit that holds it whole (`8MB`, `4GB`, `16kB`, `1000B`), read
/// back by [`parse_size`] as the same count.
pub fn format_setting(bytes: u64) -> String {
    const UNITS: [(&str, u32); 4] = [("TB", 40), ("GB", 30), ("MB", 20), ("kB", 10)];
    for (unit, shift) in UNITS {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// Formats a byte count for people: `1.5 GiB`, `256 MiB`, `512 B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MB").unwrap(), 256 << 20);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("16384").unwrap(), 16384);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("99999999999TB").is_err());
        assert_eq!(parse_size("1.5 MiB").unwrap(), 3 << 19);
        assert_eq!(format_size(256 << 20), "256 MiB");
        assert_eq!(format_size(100), "100 B");
        // GB is 1024³ bytes, as in PostgreSQL, both ways.
        assert_eq!(parse_size("1GB").unwrap(), 1 << 30);
        assert_eq!(format_setting(8 << 20), "8MB");
        assert_eq!(format_setting(3 << 30), "3GB");
        assert_eq!(format_setting(16 << 10), "16kB");
        assert_eq!(format_setting(1000), "1000B");
        assert_eq!(format_setting(0), "0B");
        for b in [
            0,
            1000,
            16 << 10,
            8 << 20,
            3 << 30,
            5 << 40,
            (1 << 20) + 1024,
        ] {
            assert_eq!(parse_size(&format_setting(b)).unwrap(), b);
        }
    }
}
