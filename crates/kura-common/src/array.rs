//! One-dimensional SQL arrays in PostgreSQL's text form (`{1,2,NULL}`, `{a,"b c"}`):
//! parsing that form into element texts and writing elements back in it.
//!
//! kura holds an array value as this text, written canonically (every element in
//! its type's own text form, quoted only where PostgreSQL quotes), so that arrays
//! move through vectors, hashing, grouping and spilling as text does, and two equal
//! arrays of one type are equal strings.

use std::fmt::Write;

/// Why an array text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayTextError {
    /// Not an array literal (SQLSTATE 22P02); the detail says what is wrong,
    /// as PostgreSQL's does.
    Malformed(&'static str),
    /// A form kura does not hold: nested braces (more dimensions) or explicit
    /// bounds (`[0:2]={...}`). SQLSTATE 0A000.
    Unsupported(&'static str),
}

/// Whitespace as PostgreSQL's array parser sees it (C `isspace`).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// The elements of a one-dimensional array literal, `None` for an unquoted NULL.
pub fn parse(text: &str) -> Result<Vec<Option<String>>, ArrayTextError> {
    use ArrayTextError::{Malformed, Unsupported};
    let s = text.trim_start_matches(is_space);
    if s.starts_with('[') {
        return Err(Unsupported("arrays with explicit bounds"));
    }
    let Some(body) = s.strip_prefix('{') else {
        return Err(Malformed(
            "Array value must start with \"{\" or dimension information.",
        ));
    };
    let mut chars = body.chars().peekable();
    let mut out = Vec::new();
    let skip_space = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        while chars.peek().is_some_and(|c| is_space(*c)) {
            chars.next();
        }
    };
    skip_space(&mut chars);
    if chars.peek() == Some(&'}') {
        chars.next();
    } else {
        loop {
            skip_space(&mut chars);
            let mut elem = String::new();
            let mut quoted = false;
            let mut escaped = false;
            match chars.peek() {
                Some('{') => return Err(Unsupported("multidimensional arrays")),
                Some('"') => {
                    chars.next();
                    quoted = true;
                    loop {
                        match chars.next() {
                            None => return Err(Malformed("Unexpected end of input.")),
                            Some('\\') => match chars.next() {
                                Some(c) => elem.push(c),
                                None => return Err(Malformed("Unexpected end of input.")),
                            },
                            Some('"') => break,
                            Some(c) => elem.push(c),
                        }
                    }
                    skip_space(&mut chars);
                }
                _ => {
                    // Unquoted: up to the next delimiter; trailing blanks are not
                    // part of it unless escaped.
                    let mut keep = 0;
                    loop {
                        match chars.peek() {
                            None => return Err(Malformed("Unexpected end of input.")),
                            Some(',' | '}') => break,
                            Some('{') => return Err(Unsupported("multidimensional arrays")),
                            Some('"') => return Err(Malformed("Unexpected \"\"\" character.")),
                            Some('\\') => {
                                chars.next();
                                match chars.next() {
                                    Some(c) => elem.push(c),
                                    None => return Err(Malformed("Unexpected end of input.")),
                                }
                                escaped = true;
                                keep = elem.len();
                            }
                            Some(&c) => {
                                chars.next();
                                elem.push(c);
                                if !is_space(c) {
                                    keep = elem.len();
                                }
                            }
                        }
                    }
                    elem.truncate(keep);
                    if elem.is_empty() && !escaped {
                        return Err(Malformed("Unexpected \",\" character."));
                    }
                }
            }
            let null = !quoted && !escaped && elem.eq_ignore_ascii_case("NULL");
            out.push((!null).then_some(elem));
            match chars.next() {
                Some(',') => continue,
                Some('}') => break,
                _ => return Err(Malformed("Unexpected array element.")),
            }
        }
    }
    if chars.any(|c| !is_space(c)) {
        return Err(Malformed("Junk after closing right brace."));
    }
    Ok(out)
}

/// Appends one element as PostgreSQL's array output writes it: quoted when
/// empty, `NULL`-like, or holding a delimiter, brace, quote, backslash or blank.
pub fn push_element(out: &mut String, elem: Option<&str>) {
    let Some(e) = elem else {
        out.push_str("NULL");
        return;
    };
    let quote = e.is_empty()
        || e.eq_ignore_ascii_case("NULL")
        || e.chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || is_space(c));
    if !quote {
        out.push_str(e);
        return;
    }
    out.push('"');
    for c in e.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The array text of elements already in their types' text forms.
pub fn format<'a>(elems: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, e) in elems.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_element(&mut out, e);
    }
    out.push('}');
    out
}

/// The array text of values, each written as [`crate::Value`]'s text form.
pub fn format_values(values: &[crate::Value]) -> String {
    let mut out = String::from("{");
    let mut buf = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if v.is_null() {
            push_element(&mut out, None);
        } else {
            buf.clear();
            let _ = write!(buf, "{v}");
            push_element(&mut out, Some(&buf));
        }
    }
    out.push('}');
    out
}

/// The elements of an `int2vector` / `oidvector` value, held in PostgreSQL's
/// text form for them: numbers separated by blanks (`1 3`). Each is checked
/// as a number by the caller.
pub fn parse_vector(text: &str) -> Result<Vec<Option<String>>, ArrayTextError> {
    Ok(text
        .split_ascii_whitespace()
        .map(|e| Some(e.to_string()))
        .collect())
}

/// A vector's text (`1 3`) of elements in their text forms.
pub fn format_vector<'a>(elems: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, e) in elems.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<Option<String>> {
        parse(s).unwrap()
    }

    #[test]
    fn parses_postgresql_forms() {
        assert_eq!(p("{}"), Vec::<Option<String>>::new());
        assert_eq!(p(" { } "), Vec::<Option<String>>::new());
        assert_eq!(
            p("{1, 2 ,3}"),
            vec![Some("1".into()), Some("2".into()), Some("3".into())]
        );
        assert_eq!(
            p(r#"{a,"b c",NULL,"NULL",null,"",\ x}"#),
            vec![
                Some("a".into()),
                Some("b c".into()),
                None,
                Some("NULL".into()),
                None,
                Some("".into()),
                Some(" x".into())
            ]
        );
        assert_eq!(
            p(r#"{"a\"b","c\\d"}"#),
            vec![Some("a\"b".into()), Some("c\\d".into())]
        );
        assert!(matches!(parse("1,2"), Err(ArrayTextError::Malformed(_))));
        assert!(matches!(parse("{1,2"), Err(ArrayTextError::Malformed(_))));
        assert!(matches!(parse("{1,}"), Err(ArrayTextError::Malformed(_))));
        assert!(matches!(parse("{1} x"), Err(ArrayTextError::Malformed(_))));
        assert!(matches!(
            parse("{{1},{2}}"),
            Err(ArrayTextError::Unsupported(_))
        ));
        assert!(matches!(
            parse("[1:2]={1,2}"),
            Err(ArrayTextError::Unsupported(_))
        ));
    }

    #[test]
    fn vectors_are_numbers_between_blanks() {
        let some = |v: &[&str]| v.iter().map(|e| Some(e.to_string())).collect::<Vec<_>>();
        assert_eq!(parse_vector(" 1  3 ").unwrap(), some(&["1", "3"]));
        assert_eq!(parse_vector("").unwrap(), some(&[]));
        assert_eq!(format_vector(["1", "3"]), "1 3");
        assert_eq!(format_vector([]), "");
    }

    #[test]
    fn formats_like_array_out() {
        assert_eq!(format([Some("1"), None, Some("3")]), "{1,NULL,3}");
        assert_eq!(
            format([Some("b c"), Some(""), Some("null"), Some("a\"b\\")]),
            r#"{"b c","","null","a\"b\\"}"#
        );
        assert_eq!(format(std::iter::empty()), "{}");
        let t = format([Some("x,y"), Some("{")]);
        assert_eq!(p(&t), vec![Some("x,y".into()), Some("{".into())]);
    }
}
