//! Splits a simple-protocol query string into statements at top-level
//! semicolons, so each statement gets its own result and an error stops the
//! rest, as in PostgreSQL.

use sqlparser::tokenizer::Token;

/// The statements of `sql` (trimmed, without the separating semicolons, empty
/// ones dropped). Semicolons inside quotes, dollar quotes and comments do not
/// split; a text that does not tokenize is one statement (the parser reports
/// what is wrong with it).
pub fn statements(sql: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let Some(tokens) = crate::sql_tokens::tokens(sql) else {
        push(&mut out, sql);
        return out;
    };
    let mut start = 0;
    for (token, at) in tokens {
        if token == Token::SemiColon {
            push(&mut out, &sql[start..at]);
            start = at + 1;
        }
    }
    push(&mut out, &sql[start..]);
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
        // An escape string's \' does not end it; nested comments nest.
        assert_eq!(
            statements("select E'a\\';b'; /* x /* y; */ ; */ select 2"),
            vec!["select E'a\\';b'", "/* x /* y; */ ; */ select 2"]
        );
        // An unterminated quote: one statement, for the parser to refuse.
        assert_eq!(
            statements("select 'a; select 2"),
            vec!["select 'a; select 2"]
        );
    }

    #[test]
    fn strips_comments() {
        assert_eq!(strip_leading_comments("-- x\n /* y */ BEGIN"), "BEGIN");
        assert_eq!(strip_leading_comments("/* unterminated"), "");
    }
}
