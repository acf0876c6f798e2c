//! The SQL text as sqlparser's tokenizer reads it (PostgreSQL dialect): the one
//! scanner the server uses to find statement boundaries and `$n` placeholders, so
//! quotes, dollar quotes, escapes and comments are read as the parser reads them.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

/// The tokens of `sql` with the byte offset each starts at; `None` when the text
/// does not tokenize (an unterminated quote or comment: the parser reports it).
pub fn tokens(sql: &str) -> Option<Vec<(Token, usize)>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let lines = LineStarts::new(sql);
    Some(
        tokens
            .into_iter()
            .map(|t| {
                let at = lines.offset(sql, t.span.start);
                (t.token, at)
            })
            .collect(),
    )
}

/// Byte offsets where each line starts, to turn (line, column) into an offset.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(sql: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(starts)
    }

    /// The byte offset of a 1-based line and character column.
    fn offset(&self, sql: &str, at: Location) -> usize {
        let Some(&line) = self.0.get((at.line as usize).saturating_sub(1)) else {
            return sql.len();
        };
        let chars = (at.column as usize).saturating_sub(1);
        sql[line..]
            .char_indices()
            .nth(chars)
            .map_or(sql.len(), |(i, _)| line + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_bytes_across_lines_and_wide_characters() {
        let sql = "select 'é';\n  select 2";
        let t = tokens(sql).unwrap();
        let semi = t.iter().find(|(t, _)| *t == Token::SemiColon).unwrap().1;
        assert_eq!(&sql[semi..semi + 1], ";");
        let last = t
            .iter()
            .rev()
            .find(|(t, _)| matches!(t, Token::Number(..)))
            .unwrap()
            .1;
        assert_eq!(&sql[last..], "2");
        assert!(tokens("select 'unterminated").is_none());
    }
}
