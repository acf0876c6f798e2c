//! Parsing delimited text (CSV, dbgen `.tbl`) into column vectors: one chunk of
//! whole lines at a time, typed values written straight into the vectors.

use kura_common::date::parse_date_bytes;
use kura_common::decimal::parse_decimal_bytes;
use kura_common::{ColumnData, DataType, Vector};

use crate::catalog::Schema;

/// How the text is laid out.
#[derive(Debug, Clone)]
pub struct TextFormat {
    pub delimiter: u8,
    /// Whether the first line of the input is a header to skip.
    pub header: bool,
    /// Fields may be enclosed in quotes (CSV); a doubled quote inside is one quote.
    pub quoted: bool,
    /// The quote character of `quoted` fields (`"` unless a reader says otherwise; the
    /// loader's `LineChunker` cuts chunks at `"`-quoted line ends only).
    pub quote: u8,
    /// The text that stands for NULL (PostgreSQL's `NULL 'x'`): an unquoted
    /// field equal to it is NULL and no other field is. `None`: kura's default,
    /// `\N` or an unquoted empty field (in plain text, for non-text columns).
    pub null: Option<Vec<u8>>,
    /// PostgreSQL's text format: a backslash escapes the next character (`\t`,
    /// `\n`, `\\`, octal `\123`, hex `\x41`, or the delimiter itself), and
    /// the NULL marker is compared with the field before escapes are decoded.
    pub escapes: bool,
    /// Which table columns the fields of a line fill, in order (`COPY t (b, a)`);
    /// `None`: every column, in table order. Columns left out are NULL.
    pub columns: Option<Vec<usize>>,
    /// The columns to parse (`None`: all): a reader that needs a few columns of a wide file
    /// leaves the other vectors empty and skips their fields' conversion.
    pub wanted: Option<Vec<bool>>,
}

impl Default for TextFormat {
    fn default() -> Self {
        TextFormat {
            delimiter: b'|',
            header: false,
            quoted: false,
            quote: b'"',
            null: None,
            escapes: false,
            columns: None,
            wanted: None,
        }
    }
}

/// A parse failure inside a chunk: chunk-relative line (0-based), 1-based byte
/// column, and what was wrong.
#[derive(Debug)]
pub struct ParseError {
    pub line: u64,
    pub column: u64,
    pub what: String,
    /// PostgreSQL's SQLSTATE for it: 22P04 for a malformed line (field count,
    /// quoting), 23502 for a NULL in a NOT NULL column, 22P02 for a bad value.
    pub code: &'static str,
}

/// SQLSTATEs of load errors (PostgreSQL's).
pub mod code {
    pub const BAD_COPY_FORMAT: &str = "22P04";
    pub const INVALID_TEXT: &str = "22P02";
    pub const NOT_NULL: &str = "23502";
    pub const OUT_OF_RANGE: &str = "22003";
    pub const TOO_LONG: &str = "22001";
    pub const BAD_ENCODING: &str = "22021";
}

/// Whether the lines of an input end with the delimiter (dbgen's `.tbl` rows do),
/// judged from its first data line: `Some(true)` if that line has one field more
/// than the table's columns and the extra one is empty.
pub fn trailing_delimiter(chunk: &[u8], ncols: usize, fmt: &TextFormat) -> Option<bool> {
    let mut lines = chunk.split(|&b| b == b'\n').skip(usize::from(fmt.header));
    let line = lines.find(|l| !l.is_empty() && *l != b"\r")?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut fields = Vec::new();
    split_fields(line, fmt, &mut fields).ok()?;
    Some(fields.len() == ncols + 1 && fields[ncols].0 == fields[ncols].1 && !fields[ncols].2)
}

/// Parses every line of `chunk` (whole lines only). `skip_first` drops a header.
/// `trailing`: every line ends with the delimiter (`Some(true)`), none does
/// (`Some(false)`), or either is accepted (`None`).
pub fn parse_chunk(
    chunk: &[u8],
    schema: &Schema,
    fmt: &TextFormat,
    skip_first: bool,
    trailing: Option<bool>,
) -> Result<Vec<Vector>, ParseError> {
    let estimate = memchr::memchr_iter(b'\n', chunk).count() + 1;
    let mut cols: Vec<Vector> = schema
        .columns
        .iter()
        .map(|c| Vector::new(c.data_type, estimate))
        .collect();
    let ncols = schema.columns.len();
    let mut line_no: u64 = 0;
    let mut fields: Vec<(usize, usize, bool)> = Vec::with_capacity(ncols + 1);
    let mut unquoted: Vec<u8> = Vec::new();
    let mut start = 0;
    while start < chunk.len() {
        // A record: a line, or in CSV lines joined by breaks inside quotes.
        let (end, breaks) = if fmt.quoted {
            record_end(chunk, start, fmt.quote)
        } else {
            let end = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |p| start + p);
            (end, 0)
        };
        let mut line = &chunk[start..end];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let this_line = line_no;
        start = end + 1;
        line_no += 1 + breaks;
        if (skip_first && this_line == 0) || line.is_empty() {
            continue;
        }
        split_fields(line, fmt, &mut fields).map_err(|(col, what)| ParseError {
            line: this_line,
            column: col as u64 + 1,
            what,
            code: code::BAD_COPY_FORMAT,
        })?;
        // dbgen ends every row with the delimiter: one empty trailing field is not data.
        let ends_with_delimiter =
            fields.last().is_some_and(|f| f.0 == f.1 && !f.2) && fields.len() > 1;
        if ends_with_delimiter
            && trailing != Some(false)
            && (trailing == Some(true) || fields.len() == ncols + 1)
        {
            fields.pop();
        } else if trailing == Some(true) && fields.len() == ncols {
            return Err(ParseError {
                line: this_line,
                column: line.len() as u64 + 1,
                what: format!(
                    "expected {ncols} fields ending with the delimiter, as the first line does"
                ),
                code: code::BAD_COPY_FORMAT,
            });
        }
        if fields.len() != ncols {
            return Err(ParseError {
                line: this_line,
                column: 1,
                what: format!("expected {ncols} fields, found {}", fields.len()),
                code: code::BAD_COPY_FORMAT,
            });
        }
        for (c, &(a, b, was_quoted)) in fields.iter().enumerate() {
            if fmt.wanted.as_ref().is_some_and(|w| !w[c]) {
                continue;
            }
            let raw = &line[a..b];
            // `literal`: the field's text is data, never the NULL marker.
            let (text, literal): (&[u8], bool) = if was_quoted && fmt.quoted {
                unquoted.clear();
                let inner = &raw[1..raw.len() - 1];
                let mut i = 0;
                while i < inner.len() {
                    unquoted.push(inner[i]);
                    i += if inner[i] == fmt.quote { 2 } else { 1 };
                }
                (&unquoted, true)
            } else if fmt.escapes && raw.contains(&b'\\') && fmt.null.as_deref() != Some(raw) {
                unescape(raw, &mut unquoted);
                (&unquoted, true)
            } else {
                (raw, false)
            };
            let col = &schema.columns[c];
            push_field(&mut cols[c], col.data_type, text, literal, fmt).map_err(|what| {
                ParseError {
                    line: this_line,
                    column: a as u64 + 1,
                    code: value_code(&what),
                    what: format!("column {} ({}): {what}", col.name, col.data_type),
                }
            })?;
            if !col.nullable && cols[c].is_null(cols[c].len() - 1) {
                return Err(ParseError {
                    line: this_line,
                    column: a as u64 + 1,
                    what: format!("column {}: NULL in a NOT NULL column", col.name),
                    code: code::NOT_NULL,
                });
            }
        }
    }
    Ok(cols)
}

/// Where the CSV record starting at `start` ends (its `\n` outside quotes, or
/// the chunk's end) and how many line breaks inside quotes it holds.
fn record_end(chunk: &[u8], start: usize, quote: u8) -> (usize, u64) {
    let mut in_quotes = false;
    let mut breaks = 0;
    for p in memchr::memchr2_iter(quote, b'\n', &chunk[start..]) {
        let p = start + p;
        if chunk[p] == quote {
            // `""` inside quotes toggles twice: the state stays right.
            in_quotes = !in_quotes;
        } else if in_quotes {
            breaks += 1;
        } else {
            return (p, breaks);
        }
    }
    (chunk.len(), breaks)
}

/// The position of the last `\n` of `buf` that ends a CSV record (outside
/// quotes), `buf` starting at a record's start.
pub(crate) fn last_record_end(buf: &[u8]) -> Option<usize> {
    let mut in_quotes = false;
    let mut last = None;
    for p in memchr::memchr2_iter(b'"', b'\n', buf) {
        if buf[p] == b'"' {
            in_quotes = !in_quotes;
        } else if !in_quotes {
            last = Some(p);
        }
    }
    last
}

/// The SQLSTATE of a value that did not load, from `push_field`'s message.
fn value_code(what: &str) -> &'static str {
    if what.contains("out of range") {
        code::OUT_OF_RANGE
    } else if what.contains("too long") {
        code::TOO_LONG
    } else if what.contains("invalid byte sequence") {
        code::BAD_ENCODING
    } else {
        code::INVALID_TEXT
    }
}

/// Decodes PostgreSQL's text-format backslash escapes of one field into `out`.
fn unescape(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != b'\\' || i == raw.len() {
            out.push(c);
            continue;
        }
        let e = raw[i];
        i += 1;
        match e {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                // Up to three octal digits.
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                // Up to two hex digits.
                let mut v = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(v as u8);
            }
            // Any other character stands for itself (`\\`, an escaped delimiter).
            other => out.push(other),
        }
    }
}

/// Splits a line into (start, end, quoted) field ranges.
pub(crate) fn split_fields(
    line: &[u8],
    fmt: &TextFormat,
    out: &mut Vec<(usize, usize, bool)>,
) -> Result<(), (usize, String)> {
    out.clear();
    let d = fmt.delimiter;
    let mut i = 0;
    loop {
        let q = fmt.quote;
        if fmt.quoted && line.get(i) == Some(&q) {
            let begin = i;
            i += 1;
            loop {
                match line.get(i) {
                    None => return Err((begin, "unterminated quoted field".into())),
                    Some(&c) if c == q && line.get(i + 1) == Some(&q) => i += 2,
                    Some(&c) if c == q => {
                        i += 1;
                        break;
                    }
                    _ => i += 1,
                }
            }
            out.push((begin, i, true));
            match line.get(i) {
                None => return Ok(()),
                Some(&c) if c == d => i += 1,
                _ => return Err((i, "unexpected character after closing quote".into())),
            }
        } else {
            let end = if fmt.escapes {
                escaped_field_end(line, i, d)
            } else {
                memchr::memchr(d, &line[i..]).map_or(line.len(), |p| i + p)
            };
            out.push((i, end, false));
            if end == line.len() {
                return Ok(());
            }
            i = end + 1;
            if i == line.len() {
                out.push((i, i, false));
                return Ok(());
            }
        }
    }
}

/// Where a field with backslash escapes that starts at `i` ends: the first
/// delimiter not preceded by an escaping backslash, or the line's end.
fn escaped_field_end(line: &[u8], mut i: usize, d: u8) -> usize {
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            c if c == d => return i,
            _ => i += 1,
        }
    }
    line.len()
}

/// The form kura holds a value of `dt` in, for the types held as text that
/// is not the text given: json (checked), jsonb, uuid and bytea (canonical).
fn canonical(dt: DataType, s: &str) -> Option<Result<String, String>> {
    use kura_common::{binary, json};
    Some(match dt {
        DataType::Json => json::json_input(s).map_err(|e| e.message),
        DataType::Jsonb => json::jsonb_input(s).map_err(|e| e.message),
        DataType::Uuid => {
            binary::uuid_from_text(s).ok_or_else(|| "invalid input syntax for type uuid".into())
        }
        DataType::Bytea => binary::bytea_input(s)
            .map(|b| binary::bytea_from_bytes(&b))
            .map_err(|e| e.to_string()),
        _ => return None,
    })
}

fn push_null(v: &mut Vector) {
    v.push_null();
}

/// Appends one field's value or NULL. With a NULL marker, an unquoted field
/// equal to it is NULL and nothing else is. Without one: `\N`, or an unquoted
/// empty field — in CSV for every type (PostgreSQL's rule; `""` is the empty
/// string), in plain text for every type but text (where it is the empty string).
fn push_field(
    v: &mut Vector,
    dt: DataType,
    text: &[u8],
    quoted: bool,
    fmt: &TextFormat,
) -> Result<(), String> {
    let is_null = !quoted
        && match &fmt.null {
            Some(marker) => text == marker.as_slice(),
            None => text == b"\\N" || (text.is_empty() && (fmt.quoted || !dt.is_text())),
        };
    if is_null {
        push_null(v);
        return Ok(());
    }
    if text.is_empty() && !dt.is_text() {
        return Err(match &fmt.null {
            Some(marker) => format!(
                "empty value (not NULL: NULL is written {:?})",
                String::from_utf8_lossy(marker)
            ),
            None => "empty value".into(),
        });
    }
    let shown = || String::from_utf8_lossy(text).into_owned();
    let valid_before = v.validity.is_some();
    match (&mut v.data, dt) {
        (ColumnData::I32(out), DataType::Integer | DataType::SmallInt) => {
            let (lo, hi) = dt.integer_range().unwrap_or_default();
            let x = parse_int(text)
                .filter(|x| (lo..=hi).contains(x))
                .ok_or_else(|| {
                    if parse_int(text).is_some() {
                        format!("value {:?} out of range", shown())
                    } else {
                        format!("invalid integer {:?}", shown())
                    }
                })?;
            out.push(x as i32);
        }
        (ColumnData::I64(out), DataType::Timestamp) => {
            out.push(
                kura_common::timestamp::parse_timestamp_bytes(text)
                    .ok_or_else(|| format!("invalid timestamp {:?}", shown()))?,
            );
        }
        (ColumnData::I64(out), DataType::BigInt) => {
            out.push(parse_int(text).ok_or_else(|| format!("invalid integer {:?}", shown()))?);
        }
        (ColumnData::I64(out), DataType::Decimal { precision, scale }) => {
            let x = parse_decimal_bytes(text, Some(precision), scale).ok_or_else(|| {
                if parse_decimal_bytes(text, None, scale).is_some() {
                    format!("value {:?} out of range", shown())
                } else {
                    format!("invalid number {:?}", shown())
                }
            })?;
            out.push(x as i64);
        }
        (ColumnData::I128(out), DataType::Interval) => {
            let s = std::str::from_utf8(text).map_err(|_| "invalid UTF-8".to_string())?;
            let span = kura_common::interval::parse_interval(s)
                .and_then(|i| i.pack())
                .map_err(|e| match e {
                    kura_common::interval::IntervalError::Syntax => {
                        format!("invalid interval {:?}", shown())
                    }
                    kura_common::interval::IntervalError::OutOfRange => {
                        format!("interval {:?} out of range", shown())
                    }
                })?;
            out.push(span);
        }
        (ColumnData::I128(out), DataType::Decimal { precision, scale }) => {
            out.push(
                parse_decimal_bytes(text, Some(precision), scale)
                    .ok_or_else(|| format!("invalid number {:?}", shown()))?,
            );
        }
        (ColumnData::F64(out), DataType::Double) => {
            let s = std::str::from_utf8(text).map_err(|_| "invalid UTF-8".to_string())?;
            out.push(
                s.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("invalid number {:?}", shown()))?,
            );
        }
        (ColumnData::I32(out), DataType::Date) => {
            out.push(
                parse_date_bytes(text)
                    .ok_or_else(|| format!("invalid date {:?} (expected YYYY-MM-DD)", shown()))?,
            );
        }
        (ColumnData::Bool(out), DataType::Boolean) => {
            let b = match text.to_ascii_lowercase().as_slice() {
                b"t" | b"true" | b"1" | b"yes" | b"y" | b"on" => true,
                b"f" | b"false" | b"0" | b"no" | b"n" | b"off" => false,
                _ => return Err(format!("invalid boolean {:?}", shown())),
            };
            out.push(b);
        }
        (ColumnData::Str(out), _) => {
            let s = std::str::from_utf8(text).map_err(|_| "invalid UTF-8".to_string())?;
            // PostgreSQL's text cannot hold a NUL (a literal byte or `\0`):
            // clients and tools that read it as a C string would cut it there.
            if s.contains('\0') {
                return Err("invalid byte sequence for encoding \"UTF8\": 0x00".into());
            }
            // CHAR(n) semantics: trailing blanks are insignificant, so they are not stored.
            let s = if matches!(dt, DataType::Char(_)) {
                s.trim_end_matches(' ')
            } else {
                s
            };
            if let Some(c) = canonical(dt, s) {
                let c = c.map_err(|e| format!("{e} {:?}", shown()))?;
                out.push(c.as_bytes());
                if valid_before {
                    v.validity.as_mut().unwrap().push(true);
                }
                return Ok(());
            }
            if let Some(max) = dt.max_len() {
                let len = if s.len() <= max as usize {
                    s.len()
                } else {
                    s.chars().count()
                };
                if len > max as usize {
                    return Err(format!("value too long ({len} characters)"));
                }
            }
            out.push(s.as_bytes());
        }
        _ => return Err(format!("cannot load type {dt}")),
    }
    if valid_before {
        v.validity.as_mut().unwrap().push(true);
    }
    Ok(())
}

fn parse_int(t: &[u8]) -> Option<i64> {
    let t = t.trim_ascii();
    let (neg, digits) = match t.first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        return None;
    }
    // Leading zeros do not count towards the 19 digits an i64 holds (`0000000042`).
    let significant = digits
        .iter()
        .position(|&c| c != b'0')
        .unwrap_or(digits.len() - 1);
    let digits = &digits[significant..];
    if digits.len() > 19 {
        return None;
    }
    // Accumulate towards the sign so i64::MIN parses too.
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = (c - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::parse_int;

    #[test]
    fn integers_take_leading_zeros_and_both_extremes() {
        assert_eq!(parse_int(b"0000000000000000000000000042"), Some(42));
        assert_eq!(parse_int(b"-0009223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int(b"00000"), Some(0));
        assert_eq!(parse_int(b"9223372036854775808"), None);
        assert_eq!(parse_int(b"12345678901234567890"), None);
        assert_eq!(parse_int(b"-"), None);
        assert_eq!(parse_int(b"1a"), None);
    }
}
