//! Splits a simple-protocol query string into statements at top-level
//! semicolons, so each statement gets its own result and an error stops the
//! rest, as in PostgreSQL.

/// The statements of `sql` (trimmed, without the separating semicolons, empty
/// ones dropped). Semicolons inside quotes, dollar quotes and comments do not split.
pub fn statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        // A doubled quote is an escaped quote, not the end.
                        if b.get(i + 1) == Some(&q) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // $tag$ ... $tag$ (but not a $1 parameter)
                if let Some(len) = dollar_tag(&b[i..]) {
                    let tag = &b[i..i + len];
                    i += len;
                    while i < b.len() && !b[i..].starts_with(tag) {
                        i += 1;
                    }
                    i += len - 1;
                }
            }
            b';' => {
                push(&mut out, &sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < sql.len() {
        push(&mut out, &sql[start..]);
    }
    out
}

fn push<'a>(out: &mut Vec<&'a str>, stmt: &'a str) {
    let t = stmt.trim();
    if !is_blank(t) {
        out.push(t);
    }
}

/// True when `s` holds nothing but whitespace and comments.
fn is_blank(s: &str) -> bool {
    strip_leading_comments(s).is_empty()
}

/// `s` without leading whitespace and comments.
pub fn strip_leading_comments(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix("--") {
            s = rest.find('\n').map_or("", |p| &rest[p + 1..]);
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.find("*/").map_or("", |p| &rest[p + 2..]);
        } else {
            return s;
        }
    }
}

/// Length of a dollar-quote opening tag (`$$` or `$name$`) at the start of `b`.
fn dollar_tag(b: &[u8]) -> Option<usize> {
    let mut j = 1;
    while j < b.len()
        && (b[j].is_ascii_alphabetic() || b[j] == b'_' || (j > 1 && b[j].is_ascii_digit()))
    {
        j += 1;
    }
    (b.get(j) == Some(&b'$')).then_some(j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_top_level_semicolons() {
        assert_eq!(
            statements("select 1; select 2;"),
            vec!["select 1", "select 2"]
        );
        assert_eq!(
            statements("select ';' ; select 'it''s;'"),
            vec!["select ';'", "select 'it''s;'"]
        );
        assert_eq!(
            statements("select 1 -- a;b\n; /* c;d */ select \"x;\""),
            vec!["select 1 -- a;b", "/* c;d */ select \"x;\""]
        );
        assert_eq!(
            statements("select $$a;b$$, $t$;$t$; select $1"),
            vec!["select $$a;b$$, $t$;$t$", "select $1"]
        );
        assert!(statements(" ; ;\n-- only a comment\n").is_empty());
    }

    #[test]
    fn strips_comments() {
        assert_eq!(strip_leading_comments("-- x\n /* y */ BEGIN"), "BEGIN");
        assert_eq!(strip_leading_comments("/* unterminated"), "");
    }
}
