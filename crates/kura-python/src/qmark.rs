//! DB-API's `qmark` parameters: a `?` placeholder becomes kura's `$n`, found by sqlparser's
//! tokenizer so that a `?` inside a string, a quoted name or a comment stays as written.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with its `?` placeholders numbered `$1, $2, ...` in order, and how many parameters
/// it takes (the highest `$n`). Mixing `?` with `$n` is refused: which parameter is which
/// would be a guess.
pub fn number_placeholders(sql: &str) -> Result<(String, usize), String> {
    let mut qmarks = Vec::new();
    let mut numbered = false;
    let mut highest = 0usize;
    for (at, token) in tokens_at(sql)? {
        match &token {
            // PostgreSQL's dialect reads a lone `?` as its operator token (jsonb's `?`):
            // with parameters given, it is a placeholder, as in every DB-API driver.
            Token::Question => qmarks.push(at),
            Token::Placeholder(p) if p.starts_with('$') => {
                numbered = true;
                highest = highest.max(p[1..].parse().unwrap_or(0));
            }
            _ => {}
        }
    }
    if qmarks.is_empty() {
        return Ok((sql.to_string(), highest));
    }
    if numbered {
        return Err("a statement uses both ? and $n placeholders; use one style".into());
    }
    let mut out = String::with_capacity(sql.len() + qmarks.len() * 2);
    let mut last = 0;
    for (n, at) in qmarks.iter().enumerate() {
        out.push_str(&sql[last..*at]);
        out.push_str(&format!("${}", n + 1));
        last = at + 1;
    }
    out.push_str(&sql[last..]);
    Ok((out, qmarks.len()))
}

/// Each token of `sql` with the byte offset it starts at.
fn tokens_at(sql: &str) -> Result<Vec<(usize, Token)>, String> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| e.to_string())?;
    // Byte offset of each line's start: the tokenizer gives lines and columns in characters.
    let mut line_starts = vec![0usize];
    line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
    let byte_at = |line: u64, column: u64| -> Option<usize> {
        let start = *line_starts.get(line.checked_sub(1)? as usize)?;
        let rest = &sql[start..];
        let skip = column.checked_sub(1)? as usize;
        Some(start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i))
    };
    tokens
        .into_iter()
        .map(|t| {
            let at = byte_at(t.span.start.line, t.span.start.column)
                .ok_or("a token's position is outside the text")?;
            Ok((at, t.token))
        })
        .collect()
}

/// `sql` with each `$n` placeholder renumbered `$(n + by)`: a query's parameters placed after
/// another's, when the two are combined into one statement.
pub fn shift_placeholders(sql: &str, by: usize) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len());
    let mut last = 0;
    for (at, token) in tokens_at(sql)? {
        if let Token::Placeholder(p) = &token {
            if let Some(Ok(n)) = p.strip_prefix('$').map(str::parse::<usize>) {
                out.push_str(&sql[last..at]);
                out.push_str(&format!("${}", n + by));
                last = at + p.len();
            }
        }
    }
    out.push_str(&sql[last..]);
    Ok(out)
}
