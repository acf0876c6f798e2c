//! Parsing delimited text (CSV, dbgen `.tbl`) into column vectors: one chunk of
//! whole lines at a time, typed values written straight into the vectors.

use kura_common::date::parse_date_bytes;
use kura_common::decimal::parse_decimal_bytes;
use kura_common::{ColumnData, DataType, Vector};

use crate::schema::Schema;

/// How the text is laid out.
#[derive(Debug, Clone)]
pub struct TextFormat {
    pub delimiter: u8,
    /// Whether the first line of the input is a header to skip.
    pub header: bool,
    /// Fields may be enclosed in quotes (CSV); a doubled quote inside is one quote.
    pub quoted: bool,
    /// The quote character of `quoted` fields (`"` unless a reader says otherwise).
    pub quote: u8,
    /// The character that, inside a quoted field, makes the quote (or itself) that follows
    /// it data (PostgreSQL's and DuckDB's `ESCAPE`); `None`: the quote itself, so a doubled
    /// quote is one. Before any other character, and outside quotes, it is data.
    pub escape: Option<u8>,
    /// chrono `strftime` formats DATE and TIMESTAMP fields are read with (DuckDB's
    /// `dateformat`, `timestampformat`); `None`: ISO 8601, as PostgreSQL reads them.
    pub date_format: Option<String>,
    pub timestamp_format: Option<String>,
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

impl TextFormat {
    /// The escape character of quoted fields (the quote itself unless one is given).
    pub fn escape_char(&self) -> u8 {
        self.escape.unwrap_or(self.quote)
    }
}

impl Default for TextFormat {
    fn default() -> Self {
        TextFormat {
            delimiter: b'|',
            header: false,
            quoted: false,
            quote: b'"',
            escape: None,
            date_format: None,
            timestamp_format: None,
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
            record_end(chunk, start, fmt)
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
                let escape = fmt.escape_char();
                let mut i = 0;
                while i < inner.len() {
                    // `split_fields` checked that an escape before a quote or itself is
                    // always followed by one; any other escape is data.
                    if inner[i] == escape && escaped(inner.get(i + 1), fmt) {
                        i += 1;
                    }
                    unquoted.push(inner[i]);
                    i += 1;
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
fn record_end(chunk: &[u8], start: usize, fmt: &TextFormat) -> (usize, u64) {
    let mut quotes = QuoteState::new(fmt.quote, fmt.escape_char());
    let mut breaks = 0;
    let mut from = start;
    while let Some(p) = quotes.next_line_end(chunk, from) {
        if !quotes.in_quotes() {
            return (p, breaks);
        }
        breaks += 1;
        from = p + 1;
    }
    (chunk.len(), breaks)
}

/// The position of the last `\n` of `buf` that ends a CSV record (outside
/// quotes), `buf` starting at a record's start.
pub(crate) fn last_record_end(buf: &[u8], quote: u8, escape: u8) -> Option<usize> {
    let mut quotes = QuoteState::new(quote, escape);
    let mut last = None;
    let mut from = 0;
    while let Some(p) = quotes.next_line_end(buf, from) {
        if !quotes.in_quotes() {
            last = Some(p);
        }
        from = p + 1;
    }
    last
}

/// Whether CSV text is inside a quoted field, followed through a byte stream that may come
/// in several buffers: the one state machine that finds where records end, so that every
/// reader of CSV (the loader, `read_csv`'s splitter) cuts records at the same line ends.
#[derive(Debug, Clone, Copy)]
pub struct QuoteState {
    quote: u8,
    escape: u8,
    in_quotes: bool,
    /// The previous buffer ended with an escape character inside quotes.
    escape_pending: bool,
}

impl QuoteState {
    /// Outside quotes, before any byte.
    pub fn new(quote: u8, escape: u8) -> QuoteState {
        QuoteState {
            quote,
            escape,
            in_quotes: false,
            escape_pending: false,
        }
    }

    /// Whether the bytes followed so far end inside a quoted field.
    pub fn in_quotes(&self) -> bool {
        self.in_quotes
    }

    /// The position of the next `\n` in `buf` at or after `from` (inside quotes or not: ask
    /// `in_quotes`), the state followed up to it; `None` when there is none, the state then
    /// followed to the end of `buf` (the next buffer continues from there).
    pub fn next_line_end(&mut self, buf: &[u8], mut from: usize) -> Option<usize> {
        let distinct_escape = self.escape != self.quote;
        if std::mem::take(&mut self.escape_pending) {
            // The escape ended the previous buffer: the quote or escape opening this one is
            // data; anything else is read as usual.
            if buf
                .get(from)
                .is_some_and(|&b| b == self.quote || b == self.escape)
            {
                from += 1;
            }
        }
        loop {
            let rest = buf.get(from..)?;
            let found = if distinct_escape && self.in_quotes {
                memchr::memchr3(self.quote, self.escape, b'\n', rest)
            } else {
                // A doubled quote inside quotes toggles twice: the state stays right.
                memchr::memchr2(self.quote, b'\n', rest)
            };
            let at = from + found?;
            let b = buf[at];
            if b == b'\n' {
                return Some(at);
            }
            from = at + 1;
            if b == self.quote {
                self.in_quotes = !self.in_quotes;
                continue;
            }
            // An escape inside quotes: the quote or escape after it is data.
            match buf.get(at + 1) {
                Some(&n) if n == self.quote || n == self.escape => from = at + 2,
                Some(_) => {}
                None => self.escape_pending = true,
            }
        }
    }
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
    let escape = fmt.escape_char();
    loop {
        let q = fmt.quote;
        if fmt.quoted && line.get(i) == Some(&q) {
            let begin = i;
            i += 1;
            loop {
                match line.get(i) {
                    None => return Err((begin, "unterminated quoted field".into())),
                    Some(&c) if c == escape && escaped(line.get(i + 1), fmt) => i += 2,
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

/// Whether the byte after an escape character inside quotes is one it escapes: the quote,
/// or the escape itself.
fn escaped(next: Option<&u8>, fmt: &TextFormat) -> bool {
    next.is_some_and(|&n| n == fmt.quote || n == fmt.escape_char())
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
            out.push(match &fmt.timestamp_format {
                Some(format) => timestamp_with_format(text, format)?,
                None => kura_common::timestamp::parse_timestamp_bytes(text)
                    .ok_or_else(|| format!("invalid timestamp {:?}", shown()))?,
            });
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
            out.push(match &fmt.date_format {
                Some(format) => date_with_format(text, format)?,
                None => parse_date_bytes(text)
                    .ok_or_else(|| format!("invalid date {:?} (expected YYYY-MM-DD)", shown()))?,
            });
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

/// Whether `format` is a chrono `strftime` format (`%d/%m/%Y`), else what is wrong.
pub fn check_datetime_format(format: &str) -> Result<(), String> {
    use chrono::format::{Item, StrftimeItems};
    if StrftimeItems::new(format).any(|item| item == Item::Error) {
        return Err(format!(
            "{format:?} is not a valid strftime format (such as '%d/%m/%Y %H:%M:%S')"
        ));
    }
    Ok(())
}

/// A DATE (days since 1970-01-01) read from `text` with the strftime `format`.
pub fn date_with_format(text: &[u8], format: &str) -> Result<i32, String> {
    use chrono::Datelike;
    let shown = || String::from_utf8_lossy(text).into_owned();
    let date = std::str::from_utf8(text)
        .ok()
        .and_then(|s| chrono::NaiveDate::parse_from_str(s.trim(), format).ok())
        .ok_or_else(|| format!("invalid date {:?} (expected format {format})", shown()))?;
    kura_common::date::checked_date(i64::from(kura_common::date::days_from_civil(
        date.year(),
        date.month(),
        date.day(),
    )))
    .ok_or_else(|| format!("date {:?} out of range", shown()))
}

/// A TIMESTAMP (microseconds since 1970-01-01 00:00:00) read from `text` with the strftime
/// `format`.
pub fn timestamp_with_format(text: &[u8], format: &str) -> Result<i64, String> {
    use chrono::{Datelike, Timelike};
    use kura_common::timestamp::{from_date, MICROS_PER_SECOND};
    let shown = || String::from_utf8_lossy(text).into_owned();
    let at = std::str::from_utf8(text)
        .ok()
        .and_then(|s| chrono::NaiveDateTime::parse_from_str(s.trim(), format).ok())
        .ok_or_else(|| format!("invalid timestamp {:?} (expected format {format})", shown()))?;
    let days = kura_common::date::days_from_civil(at.year(), at.month(), at.day());
    let micros = from_date(days)
        + i64::from(at.num_seconds_from_midnight()) * MICROS_PER_SECOND
        + i64::from(at.nanosecond() / 1000);
    Some(micros)
        .filter(|&m| kura_common::timestamp::in_range(m))
        .ok_or_else(|| format!("timestamp {:?} out of range", shown()))
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
    use super::*;
    use crate::schema::ColumnDef;

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

    fn csv(escape: Option<u8>) -> TextFormat {
        TextFormat {
            delimiter: b',',
            quoted: true,
            escape,
            ..TextFormat::default()
        }
    }

    fn text_column(chunk: &[u8], fmt: &TextFormat) -> Result<Vec<String>, String> {
        let schema = Schema::new(vec![
            ColumnDef {
                name: "a".into(),
                data_type: DataType::Varchar(None),
                nullable: true,
            },
            ColumnDef {
                name: "b".into(),
                data_type: DataType::Varchar(None),
                nullable: true,
            },
        ]);
        let cols = parse_chunk(chunk, &schema, fmt, false, Some(false))
            .map_err(|e| format!("{}:{}: {}", e.line, e.column, e.what))?;
        Ok((0..cols[1].len())
            .map(|i| cols[1].get_value(i).to_string())
            .collect())
    }

    #[test]
    fn an_escape_other_than_the_quote_escapes_quotes_and_itself_inside_quotes() {
        let fmt = csv(Some(b'\\'));
        let chunk = b"1,\"a\\\"b\"\n2,\"c\\\\\"\n3,\"x\\dy\"\n4,p\\q\n5,\"two\\\"\nlines\"\n";
        assert_eq!(
            text_column(chunk, &fmt).unwrap(),
            ["a\"b", "c\\", "x\\dy", "p\\q", "two\"\nlines"]
        );
        // A doubled quote is then the field's end followed by a stray quote.
        let e = text_column(b"1,\"a\"\"b\"\n", &fmt).unwrap_err();
        assert!(e.contains("after closing quote"), "{e}");
        // The default escape is the quote: doubled, as before.
        assert_eq!(
            text_column(b"1,\"a\"\"b\\\"\n", &csv(None)).unwrap(),
            ["a\"b\\"]
        );
    }

    #[test]
    fn record_ends_follow_escapes_across_buffers() {
        // `\"` inside quotes does not close them, even when the buffer ends between the two.
        let text = b"1,\"a\\\"\nb\"\n2,c\n";
        for cut in 0..text.len() {
            let mut quotes = QuoteState::new(b'"', b'\\');
            let mut ends = Vec::new();
            for (offset, buf) in [(0, &text[..cut]), (cut, &text[cut..])] {
                let mut from = 0;
                while let Some(at) = quotes.next_line_end(buf, from) {
                    if !quotes.in_quotes() {
                        ends.push(offset + at);
                    }
                    from = at + 1;
                }
            }
            assert_eq!(ends, [9, 13], "cut at {cut}");
        }
        assert_eq!(last_record_end(text, b'"', b'\\'), Some(13));
        assert_eq!(last_record_end(&text[..9], b'"', b'\\'), None);
    }

    #[test]
    fn dates_and_timestamps_read_with_a_strftime_format() {
        assert_eq!(date_with_format(b"02/01/1970", "%d/%m/%Y"), Ok(1));
        assert_eq!(
            timestamp_with_format(b"01/01/1970 00:00:01.5", "%d/%m/%Y %H:%M:%S%.f"),
            Ok(1_500_000)
        );
        let e = date_with_format(b"1970-01-02", "%d/%m/%Y").unwrap_err();
        assert_eq!(e, "invalid date \"1970-01-02\" (expected format %d/%m/%Y)");
        assert!(timestamp_with_format(b"02/01/1970", "%d/%m/%Y").is_err());
        assert!(check_datetime_format("%d/%m/%Y %H:%M").is_ok());
        assert!(check_datetime_format("%d/%Q").is_err());
    }
}
