//! PostgreSQL's `json` and `jsonb` values: parsing, jsonb's canonical text,
//! equality by value, containment and lookups by key, index and path.
//!
//! kura holds a `json` value as the text it was given (validated) and a
//! `jsonb` value as PostgreSQL's output form of it (keys sorted, duplicates
//! dropped, numbers as `numeric` prints them), so either prints as
//! PostgreSQL's would; operations re-read that text into a [`Json`] tree.

use std::fmt::Write;

/// A parsed JSON value. A number keeps its text: jsonb's are canonical
/// `numeric` text, json's as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Pairs in input order (json), or sorted and unique (jsonb).
    Object(Vec<(String, Json)>),
}

/// Why text is no JSON value, with PostgreSQL's SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn syntax() -> JsonError {
    JsonError {
        code: "22P02",
        message: "invalid input syntax for type json".into(),
    }
}

/// The most a container nests: PostgreSQL stops at its stack depth limit.
const MAX_DEPTH: usize = 6400;

/// A top-level child of a json text: its key (objects) and its text as written.
pub type RawChild<'a> = (Option<String>, &'a str);

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Whether escapes must decode: `\u0000` and a lone surrogate are
    /// refused, as PostgreSQL refuses them wherever it decodes a string
    /// (jsonb input, json operators); checking json input only, it takes them.
    strict: bool,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<(), JsonError> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(syntax())
        }
    }

    fn literal(&mut self, word: &[u8], v: Json) -> Result<Json, JsonError> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            // A literal is a whole token: `truex` is none.
            if self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
            {
                return Err(syntax());
            }
            Ok(v)
        } else {
            Err(syntax())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(JsonError {
                code: "54001",
                message: "stack depth limit exceeded".into(),
            });
        }
        self.ws();
        match self.peek().ok_or_else(syntax)? {
            b'{' => {
                self.i += 1;
                let mut pairs = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Object(pairs));
                }
                loop {
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return Err(syntax());
                    }
                    let k = self.string()?;
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    pairs.push((k, v));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Object(pairs));
                        }
                        _ => return Err(syntax()),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(syntax()),
                    }
                }
            }
            b'"' => Ok(Json::String(self.string()?)),
            b't' => self.literal(b"true", Json::Bool(true)),
            b'f' => self.literal(b"false", Json::Bool(false)),
            b'n' => self.literal(b"null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(syntax()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let first = self.peek();
        let n = self.digits();
        if n == 0 || (first == Some(b'0') && n > 1) {
            return Err(syntax());
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(syntax());
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(syntax());
            }
        }
        if self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        {
            return Err(syntax());
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| syntax())?;
        Ok(Json::Number(text.to_string()))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(syntax)?;
        let h = std::str::from_utf8(h).map_err(|_| syntax())?;
        let v = u32::from_str_radix(h, 16).map_err(|_| syntax())?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(syntax());
        }
        self.i += 4;
        Ok(v)
    }

    /// A string at `"`, its escapes decoded.
    fn string(&mut self) -> Result<String, JsonError> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or_else(syntax)?;
            self.i += 1;
            match c {
                b'"' => break,
                0..=0x1f => return Err(syntax()),
                b'\\' => {
                    let e = self.peek().ok_or_else(syntax)?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return Err(syntax()),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| syntax())
    }

    /// The character of a `\uXXXX` escape (a surrogate pair is one).
    fn unicode(&mut self) -> Result<char, JsonError> {
        let hi = self.hex4()?;
        let code = if (0xd800..0xdc00).contains(&hi) && self.s[self.i..].starts_with(b"\\u") {
            let at = self.i;
            self.i += 2;
            let lo = self.hex4()?;
            if (0xdc00..0xe000).contains(&lo) {
                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
            } else if self.strict {
                return Err(syntax());
            } else {
                // Read again on its own.
                self.i = at;
                0xfffd
            }
        } else if (0xd800..0xe000).contains(&hi) {
            if self.strict {
                return Err(syntax());
            }
            0xfffd
        } else {
            hi
        };
        if code == 0 && self.strict {
            return Err(JsonError {
                code: "22P05",
                message: "unsupported Unicode escape sequence".into(),
            });
        }
        char::from_u32(code).ok_or_else(syntax)
    }

    fn end(&mut self) -> Result<(), JsonError> {
        self.ws();
        if self.i == self.s.len() {
            Ok(())
        } else {
            Err(syntax())
        }
    }
}

/// `text` read as JSON, as written (pairs in order, numbers as written).
pub fn parse(text: &str) -> Result<Json, JsonError> {
    parse_as(text, true)
}

/// `text` read as JSON without decoding its escapes strictly (what reads
/// json's structure only: `json_typeof`, `json_array_elements`).
pub fn parse_lenient(text: &str) -> Result<Json, JsonError> {
    parse_as(text, false)
}

fn parse_as(text: &str, strict: bool) -> Result<Json, JsonError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        strict,
    };
    let v = p.value(0)?;
    p.end()?;
    Ok(v)
}

/// `text` as a `json` value: checked, kept as written.
pub fn json_input(text: &str) -> Result<String, JsonError> {
    parse_as(text, false)?;
    Ok(text.to_string())
}

/// `text` as a `jsonb` value: its canonical text.
pub fn jsonb_input(text: &str) -> Result<String, JsonError> {
    Ok(to_jsonb(parse_as(text, true)?)?.to_string())
}

/// A jsonb value's tree (its text is canonical, so it parses as it is).
pub fn jsonb_value(text: &str) -> Result<Json, JsonError> {
    parse_as(text, true)
}

/// `v` as jsonb holds it: numbers canonical, each object's keys sorted
/// (shorter first, then bytewise) with the last of duplicates kept.
pub fn to_jsonb(v: Json) -> Result<Json, JsonError> {
    Ok(match v {
        Json::Number(n) => Json::Number(numeric_text(&n)?),
        Json::Array(items) => {
            Json::Array(items.into_iter().map(to_jsonb).collect::<Result<_, _>>()?)
        }
        Json::Object(pairs) => {
            let mut pairs = pairs
                .into_iter()
                .map(|(k, v)| Ok((k, to_jsonb(v)?)))
                .collect::<Result<Vec<_>, JsonError>>()?;
            // Stable: among equal keys the last written stays last.
            pairs.sort_by(|a, b| key_order(&a.0, &b.0));
            let mut unique: Vec<(String, Json)> = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                match unique.last_mut() {
                    Some(last) if last.0 == k => last.1 = v,
                    _ => unique.push((k, v)),
                }
            }
            Json::Object(unique)
        }
        other => other,
    })
}

/// jsonb's order of object keys: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A JSON number as PostgreSQL's `numeric` prints it: no exponent, as many
/// fractional digits as written less the exponent (`1.0` stays `1.0`, `1e2`
/// is `100`, `1.5e-1` is `0.15`).
pub fn numeric_text(n: &str) -> Result<String, JsonError> {
    let (neg, rest) = match n.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, n),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (
            &rest[..i],
            rest[i + 1..].parse::<i64>().map_err(|_| syntax())?,
        ),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    let shift = exp - frac.len() as i64;
    // PostgreSQL's numeric holds up to 131072 digits before the point and
    // 16383 after it.
    if !(-16_383..=131_072).contains(&shift) {
        return Err(JsonError {
            code: "22003",
            message: "value overflows numeric format".into(),
        });
    }
    let (int_digits, frac_digits) = if shift >= 0 {
        (
            format!("{digits}{}", "0".repeat(shift as usize)),
            String::new(),
        )
    } else {
        let scale = (-shift) as usize;
        let padded = if digits.len() <= scale {
            format!("{}{digits}", "0".repeat(scale - digits.len() + 1))
        } else {
            digits
        };
        let cut = padded.len() - scale;
        (padded[..cut].to_string(), padded[cut..].to_string())
    };
    let int_digits = int_digits.trim_start_matches('0');
    let int_digits = if int_digits.is_empty() {
        "0"
    } else {
        int_digits
    };
    let zero = int_digits == "0" && frac_digits.bytes().all(|c| c == b'0');
    let mut out = String::new();
    if neg && !zero {
        out.push('-');
    }
    out.push_str(int_digits);
    if !frac_digits.is_empty() {
        out.push('.');
        out.push_str(&frac_digits);
    }
    Ok(out)
}

/// A canonical number without trailing fractional zeros: equal numbers
/// have equal such forms.
fn trimmed_number(n: &str) -> &str {
    if n.contains('.') {
        n.trim_end_matches('0').trim_end_matches('.')
    } else {
        n
    }
}

/// `s` as a JSON string literal, escaped as PostgreSQL's `escape_json` does.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Json {
    /// jsonb's output form (`{"a": 1, "b": [1, 2]}`).
    fn write(&self, out: &mut String, trim_numbers: bool) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) if trim_numbers => out.push_str(trimmed_number(n)),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write(out, trim_numbers);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(k, out);
                    out.push_str(": ");
                    v.write(out, trim_numbers);
                }
                out.push('}');
            }
        }
    }

    /// A text equal for exactly the jsonb values equal to this one (numbers
    /// compared by value): what jsonb `=` compares.
    pub fn equality_key(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, true);
        s
    }

    /// `jsonb_typeof`'s name of this value's kind.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// The value under `key` of an object (the last, if written twice).
    pub fn field(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Element `i` of an array, counted from its end when negative.
    pub fn element(&self, i: i64) -> Option<&Json> {
        match self {
            Json::Array(items) => {
                let i = if i < 0 { items.len() as i64 + i } else { i };
                usize::try_from(i).ok().and_then(|i| items.get(i))
            }
            _ => None,
        }
    }

    /// The value at `path`: object keys, or array indexes written as integers.
    pub fn at_path(&self, path: &[String]) -> Option<&Json> {
        let mut v = self;
        for step in path {
            v = match v {
                Json::Object(_) => v.field(step)?,
                Json::Array(_) => v.element(step.trim().parse().ok()?)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// `->>`'s text of this value: a string unquoted, null as SQL NULL.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// jsonb `@>`: whether this value contains `other` (PostgreSQL's
    /// `JsonbDeepContains`: an array contains the elements it is given in any
    /// order, an object the pairs, a top-level array a lone scalar).
    pub fn contains(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Array(_), s) if is_scalar(s) => self.contains(&Json::Array(vec![s.clone()])),
            _ => contains_nested(self, other),
        }
    }

    /// jsonb `?`: whether `key` is a key of this object, a string element of
    /// this array or this string.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(pairs) => pairs.iter().any(|(k, _)| k == key),
            Json::Array(items) => items
                .iter()
                .any(|v| matches!(v, Json::String(s) if s == key)),
            Json::String(s) => s == key,
            _ => false,
        }
    }

    /// `jsonb_strip_nulls`: object fields whose value is null removed, at
    /// every depth (array elements stay).
    pub fn strip_nulls(self) -> Json {
        match self {
            Json::Object(pairs) => Json::Object(
                pairs
                    .into_iter()
                    .filter(|(_, v)| *v != Json::Null)
                    .map(|(k, v)| (k, v.strip_nulls()))
                    .collect(),
            ),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::strip_nulls).collect()),
            other => other,
        }
    }

    /// `jsonb_pretty`'s form: one element per line, four spaces a level
    /// (an empty container too opens and closes on lines of its own).
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, level: usize) {
        let indent = |out: &mut String, n: usize| out.push_str(&"    ".repeat(n));
        match self {
            Json::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    indent(out, level + 1);
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    out.push_str(if i > 0 { ",\n" } else { "\n" });
                    indent(out, level + 1);
                    write_string(k, out);
                    out.push_str(": ");
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push('}');
            }
            other => other.write(out, false),
        }
    }

    /// jsonb `||`: two objects merged (the right's value wins), otherwise
    /// both as arrays (a non-array as an array of itself) joined.
    pub fn concat(self, other: Json) -> Json {
        match (self, other) {
            (Json::Object(mut a), Json::Object(b)) => {
                for (k, v) in b {
                    match a.iter_mut().find(|(x, _)| *x == k) {
                        Some(slot) => slot.1 = v,
                        None => a.push((k, v)),
                    }
                }
                a.sort_by(|x, y| key_order(&x.0, &y.0));
                Json::Object(a)
            }
            (a, b) => {
                let as_items = |v: Json| match v {
                    Json::Array(items) => items,
                    other => vec![other],
                };
                let mut items = as_items(a);
                items.extend(as_items(b));
                Json::Array(items)
            }
        }
    }
}

fn is_scalar(v: &Json) -> bool {
    !matches!(v, Json::Array(_) | Json::Object(_))
}

/// Scalars equal by value (numbers as numbers).
fn scalar_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => trimmed_number(x) == trimmed_number(y),
        _ => a == b,
    }
}

fn contains_nested(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(_), Json::Object(bp)) => bp.iter().all(|(k, bv)| match a.field(k) {
            Some(av) if is_scalar(av) && is_scalar(bv) => scalar_eq(av, bv),
            Some(av) if !is_scalar(av) && !is_scalar(bv) => contains_nested(av, bv),
            _ => false,
        }),
        (Json::Array(ai), Json::Array(bi)) => bi.iter().all(|bv| {
            if is_scalar(bv) {
                ai.iter().any(|av| is_scalar(av) && scalar_eq(av, bv))
            } else {
                ai.iter()
                    .any(|av| !is_scalar(av) && contains_nested(av, bv))
            }
        }),
        (x, y) if is_scalar(x) && is_scalar(y) => scalar_eq(x, y),
        _ => false,
    }
}

impl std::fmt::Display for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        self.write(&mut s, false);
        f.write_str(&s)
    }
}

/// The top-level children of a json text as written: an object's pairs (in
/// order, duplicates kept) or an array's elements, each with its exact
/// text; `None` for a scalar. Escapes are not checked to decode (callers
/// that decode check the text with [`parse`] first, as PostgreSQL does).
pub fn raw_children(text: &str) -> Result<Option<Vec<RawChild<'_>>>, JsonError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        strict: false,
    };
    p.ws();
    let object = match p.peek() {
        Some(b'{') => true,
        Some(b'[') => false,
        _ => return Ok(None),
    };
    p.i += 1;
    let close = if object { b'}' } else { b']' };
    let mut out = Vec::new();
    p.ws();
    if p.peek() == Some(close) {
        return Ok(Some(out));
    }
    loop {
        p.ws();
        let key = if object {
            if p.peek() != Some(b'"') {
                return Err(syntax());
            }
            let k = p.string()?;
            p.eat(b':')?;
            p.ws();
            Some(k)
        } else {
            None
        };
        let start = p.i;
        p.value(1)?;
        out.push((key, &text[start..p.i]));
        p.ws();
        match p.peek() {
            Some(b',') => p.i += 1,
            Some(c) if c == close => return Ok(Some(out)),
            _ => return Err(syntax()),
        }
    }
}

/// The text of a json value with surrounding white space removed.
pub fn raw_trim(text: &str) -> &str {
    text.trim_matches([' ', '\t', '\n', '\r'])
}

/// A json text (valid JSON) without the white space between its tokens, keys, numbers and
/// escapes as written: the one-line form files hold a value in (a line-delimited JSON
/// file's record is one line). Borrowed when there is nothing to remove.
pub fn compact(text: &str) -> std::borrow::Cow<'_, str> {
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let bytes = text.as_bytes();
    // Blanks inside strings are kept, so only a blank outside one means work.
    let mut in_string = false;
    let mut escaped = false;
    let mut needed = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if ws(b) {
            needed = true;
            break;
        }
    }
    if !needed {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if ws(b) {
            continue;
        }
        out.push(b);
    }
    // Only ASCII blanks were removed: the rest is the input's UTF-8 unchanged.
    std::borrow::Cow::Owned(String::from_utf8(out).expect("UTF-8 in, UTF-8 out"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jb(s: &str) -> String {
        jsonb_input(s).unwrap()
    }

    #[test]
    fn jsonb_canonical_forms() {
        assert_eq!(jb(r#"{"b":[1,2],"a":1}"#), r#"{"a": 1, "b": [1, 2]}"#);
        assert_eq!(
            jb(r#"{"aa":1,"b":2,"a":3,"a":4}"#),
            r#"{"a": 4, "b": 2, "aa": 1}"#
        );
        assert_eq!(jb(" [ ] "), "[]");
        assert_eq!(jb("{}"), "{}");
        assert_eq!(jb(r#""a\"\\\u00e9\n\u0001""#), "\"a\\\"\\\\é\\n\\u0001\"");
        assert_eq!(jb(r#""\ud83d\ude00""#), "\"😀\"");
        assert_eq!(jb("true"), "true");
    }

    #[test]
    fn numbers_print_as_numeric() {
        let n = |s: &str| numeric_text(s).unwrap();
        assert_eq!(n("1.0"), "1.0");
        assert_eq!(n("1e2"), "100");
        assert_eq!(n("1.5e-1"), "0.15");
        assert_eq!(n("1.50E+1"), "15.0");
        assert_eq!(n("-0"), "0");
        assert_eq!(n("-0.0"), "0.0");
        assert_eq!(n("1e-3"), "0.001");
        assert_eq!(n("0.00e5"), "0");
        assert_eq!(n("-12.5"), "-12.5");
        assert_eq!(n("1e1001").len(), 1002);
        assert!(numeric_text("1e200000").is_err());
    }

    #[test]
    fn invalid_input_is_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            ".1",
            "tru",
            "\"a",
            "{\"a\" 1}",
            "[1] x",
            "'a'",
            "+1",
            "\"\\x\"",
            "\"\\ud800\"",
            "nulls",
            "{1:2}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(jsonb_input("\"\\u0000\"").unwrap_err().code, "22P05");
        assert!(json_input("\"\\u0000\"").is_ok());
        // json input takes a lone surrogate; decoding it (jsonb, operators) does not.
        assert!(json_input("\"\\ud800x\"").is_ok());
        assert!(jsonb_input("\"\\ud800x\"").is_err());
        assert!(parse("\"\\ud800\"").is_err());
        assert_eq!(json_input(" {\"a\" :1} ").unwrap(), " {\"a\" :1} ");
    }

    #[test]
    fn equality_is_by_value() {
        let key = |s: &str| jsonb_value(&jb(s)).unwrap().equality_key();
        assert_eq!(key("1.0"), key("1"));
        assert_eq!(key(r#"{"a":[1.50]}"#), key(r#"{"a":[1.5]}"#));
        assert_eq!(key("100"), key("1e2"));
        assert_ne!(key("10"), key("1"));
        assert_ne!(key("\"1\""), key("1"));
    }

    #[test]
    fn lookups() {
        let v = jsonb_value(&jb(r#"{"a":{"b":[10,20,30]},"c":null}"#)).unwrap();
        assert_eq!(v.field("a").unwrap().to_string(), r#"{"b": [10, 20, 30]}"#);
        assert!(v.field("x").is_none());
        let path = |p: &[&str]| {
            v.at_path(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map(|j| j.to_string())
        };
        assert_eq!(path(&["a", "b", "-1"]).as_deref(), Some("30"));
        assert_eq!(path(&["a", "b", "x"]), None);
        assert_eq!(v.field("c").unwrap().as_text(), None);
        assert!(v.has_key("c"));
    }

    #[test]
    fn containment() {
        let c = |a: &str, b: &str| {
            jsonb_value(&jb(a))
                .unwrap()
                .contains(&jsonb_value(&jb(b)).unwrap())
        };
        assert!(c(r#"{"a":1,"b":[1,2,3]}"#, r#"{"b":[3,1]}"#));
        assert!(c("[1,2,[3]]", "[[3]]"));
        assert!(c(r#"["foo","bar"]"#, r#""foo""#));
        assert!(!c(r#""foo""#, r#"["foo"]"#));
        assert!(!c(r#"{"a":[1,2]}"#, r#"{"a":1}"#));
        assert!(c("[1.0]", "[1]"));
        assert!(!c("[1,2]", r#"{"a":1}"#));
    }

    #[test]
    fn concat_and_pretty() {
        let v = |s: &str| jsonb_value(&jb(s)).unwrap();
        assert_eq!(
            v(r#"{"a":1}"#).concat(v(r#"{"a":2,"b":3}"#)).to_string(),
            r#"{"a": 2, "b": 3}"#
        );
        assert_eq!(v("[1]").concat(v("2")).to_string(), "[1, 2]");
        assert_eq!(
            v(r#"{"a":1}"#).concat(v("[2]")).to_string(),
            r#"[{"a": 1}, 2]"#
        );
        assert_eq!(
            v(r#"{"a":[1,{}]}"#).pretty(),
            "{\n    \"a\": [\n        1,\n        {\n        }\n    ]\n}"
        );
        assert_eq!(v("[]").pretty(), "[\n]");
    }

    #[test]
    fn raw_children_keep_text() {
        let kids = raw_children(r#" {"a" :  [1, 2] , "a": "x"} "#)
            .unwrap()
            .unwrap();
        assert_eq!(kids[0], (Some("a".into()), "[1, 2]"));
        assert_eq!(kids[1], (Some("a".into()), "\"x\""));
        assert!(raw_children("3").unwrap().is_none());
    }

    #[test]
    fn compact_drops_blanks_between_tokens_only() {
        assert_eq!(
            compact("{\"a\": [1, 2],\n \"b c\": \"x \\\" y\"}"),
            "{\"a\":[1,2],\"b c\":\"x \\\" y\"}"
        );
        assert!(matches!(
            compact("[1,\"a b\"]"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
