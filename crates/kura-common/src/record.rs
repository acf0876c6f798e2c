//! PostgreSQL's text form of an anonymous record, `(3,"a b",)`: how kura
//! holds the records a catalog function returns (`_pg_expandarray`) and reads
//! their fields back. A field is quoted when it is empty or holds a quote, a
//! backslash, a parenthesis, a comma or white space; NULL is nothing at all.

/// The text form of a record with these fields (text forms, `None` for NULL).
pub fn format_record(fields: &[Option<&str>]) -> String {
    let mut out = String::from("(");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let Some(f) = f else { continue };
        let quote = f.is_empty()
            || f.chars()
                .any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_whitespace());
        if !quote {
            out.push_str(f);
            continue;
        }
        out.push('"');
        for c in f.chars() {
            if matches!(c, '"' | '\\') {
                out.push(c);
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push(')');
    out
}

/// The fields of a record's text form (`None` for NULL); `None` when `text`
/// is not one.
pub fn parse_record(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut fields = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        while let Some(&c) = chars.peek() {
            match c {
                ',' => break,
                '"' => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next()? {
                            '\\' => field.push(chars.next()?),
                            '"' if chars.peek() == Some(&'"') => {
                                chars.next();
                                field.push('"');
                            }
                            '"' => break,
                            c => field.push(c),
                        }
                    }
                }
                '\\' => {
                    chars.next();
                    field.push(chars.next()?);
                    quoted = true;
                }
                c => {
                    chars.next();
                    field.push(c);
                }
            }
        }
        fields.push((quoted || !field.is_empty()).then_some(field));
        if chars.next().is_none() {
            return Some(fields);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_quoting_and_nulls() {
        let fields = [Some("3"), None, Some(""), Some("a \"b\", (c)\\")];
        let text = format_record(&fields);
        assert_eq!(text, r#"(3,,"","a ""b"", (c)\\")"#);
        let back = parse_record(&text).unwrap();
        let want: Vec<Option<String>> = fields.iter().map(|f| f.map(str::to_string)).collect();
        assert_eq!(back, want);
    }

    #[test]
    fn plain_fields_and_malformed_text() {
        assert_eq!(
            parse_record("(1,2)").unwrap(),
            vec![Some("1".to_string()), Some("2".to_string())]
        );
        assert_eq!(parse_record("()").unwrap(), vec![None]);
        assert!(parse_record("1,2").is_none());
        assert!(parse_record("(\"open)").is_none());
    }
}
