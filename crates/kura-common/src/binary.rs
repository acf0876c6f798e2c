//! The text forms of PostgreSQL's `uuid` and `bytea`, which kura holds values
//! of: a UUID as `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`, binary data as
//! `\x01ff` — lower-case hex, so both order as their bytes do. Input takes
//! every form PostgreSQL's does (a UUID in upper case, without hyphens or in
//! braces; bytea in hex or escape format).

use std::fmt::Write;

/// Why text is no `bytea` (PostgreSQL's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByteaError {
    /// A character that is no hex digit (`invalid hexadecimal digit: "g"`).
    HexDigit(char),
    /// `\x` followed by an odd number of digits.
    OddDigits,
    /// A backslash that starts no escape.
    Syntax,
}

impl std::fmt::Display for ByteaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ByteaError::HexDigit(c) => write!(f, "invalid hexadecimal digit: \"{c}\""),
            ByteaError::OddDigits => write!(f, "invalid hexadecimal data: odd number of digits"),
            ByteaError::Syntax => write!(f, "invalid input syntax for type bytea"),
        }
    }
}

/// The canonical form of a UUID written `text`, `None` when it is none.
pub fn uuid_from_text(text: &str) -> Option<String> {
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => text,
    };
    let mut digits = String::with_capacity(32);
    let mut chars = inner.chars().peekable();
    while digits.len() < 32 {
        let c = chars.next()?;
        if !c.is_ascii_hexdigit() {
            return None;
        }
        digits.push(c.to_ascii_lowercase());
        // A hyphen may follow any group of four digits but the last.
        if digits.len().is_multiple_of(4) && digits.len() < 32 && chars.peek() == Some(&'-') {
            chars.next();
        }
    }
    if chars.next().is_some() {
        return None;
    }
    Some(format!(
        "{}-{}-{}-{}-{}",
        &digits[..8],
        &digits[8..12],
        &digits[12..16],
        &digits[16..20],
        &digits[20..]
    ))
}

/// A canonical UUID's 16 bytes.
pub fn uuid_bytes(canonical: &str) -> Option<[u8; 16]> {
    let hex: String = canonical.chars().filter(|c| *c != '-').collect();
    let bytes = hex_bytes(&hex)?;
    bytes.try_into().ok()
}

/// The canonical form of a UUID of these 16 bytes.
pub fn uuid_from_bytes(b: &[u8; 16]) -> String {
    let hex = to_hex(b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Lower-case hex of `b`.
pub fn to_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The canonical text of binary data `b`: `\x` and lower-case hex.
pub fn bytea_from_bytes(b: &[u8]) -> String {
    format!("\\x{}", to_hex(b))
}

/// The bytes of canonical `bytea` text (`\x…`); `None` when it is not that.
pub fn bytea_bytes(canonical: &str) -> Option<Vec<u8>> {
    hex_bytes(canonical.strip_prefix("\\x")?)
}

/// The bytes `text` stands for as `bytea` input: `\x` and hex digits (blanks
/// between pairs allowed), or the escape format (`\\`, `\ooo` octal, every
/// other character its UTF-8 bytes).
pub fn bytea_input(text: &str) -> Result<Vec<u8>, ByteaError> {
    if let Some(hex) = text.strip_prefix("\\x") {
        let mut out = Vec::with_capacity(hex.len() / 2);
        let mut chars = hex.chars().filter(|c| !c.is_ascii_whitespace());
        while let Some(hi) = chars.next() {
            let h = hi.to_digit(16).ok_or(ByteaError::HexDigit(hi))?;
            let lo = chars.next().ok_or(ByteaError::OddDigits)?;
            let l = lo.to_digit(16).ok_or(ByteaError::HexDigit(lo))?;
            out.push((h * 16 + l) as u8);
        }
        return Ok(out);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1..i + 4) {
            Some([b'\\', ..]) => {
                out.push(b'\\');
                i += 2;
            }
            Some([a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7']) => {
                out.push((a - b'0') * 64 + (b - b'0') * 8 + (c - b'0'));
                i += 4;
            }
            _ if bytes.get(i + 1) == Some(&b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            _ => return Err(ByteaError::Syntax),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_forms_postgresql_accepts() {
        let want = Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".to_string());
        for text in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
        ] {
            assert_eq!(uuid_from_text(text), want, "{text}");
        }
        for bad in [
            "a0eebc99",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11-",
            "-a0eebc999c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert_eq!(uuid_from_text(bad), None, "{bad}");
        }
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        let b = uuid_bytes(canonical).unwrap();
        assert_eq!(uuid_from_bytes(&b), canonical);
    }

    #[test]
    fn bytea_hex_and_escape_input() {
        assert_eq!(bytea_input("\\x01FF 0a").unwrap(), vec![1, 255, 10]);
        assert_eq!(bytea_input("\\x").unwrap(), Vec::<u8>::new());
        assert_eq!(bytea_input("\\x1"), Err(ByteaError::OddDigits));
        assert_eq!(bytea_input("\\x1g"), Err(ByteaError::HexDigit('g')));
        assert_eq!(
            bytea_input("a\\\\b\\001\\377é").unwrap(),
            b"a\\b\x01\xff\xc3\xa9".to_vec()
        );
        assert_eq!(bytea_input("a\\q"), Err(ByteaError::Syntax));
        let text = bytea_from_bytes(&[0, 16, 255]);
        assert_eq!(text, "\\x0010ff");
        assert_eq!(bytea_bytes(&text).unwrap(), vec![0, 16, 255]);
    }
}
