//! `$n` parameters in SQL text: counting them (outside quotes and comments),
//! so a Bind is checked against every placeholder the statement holds.

use sqlparser::tokenizer::Token;

/// The number of parameters: the highest `$n` outside quotes and comments (0
/// when the text does not tokenize: the parser reports it).
pub fn count(sql: &str) -> usize {
    crate::sql_tokens::tokens(sql)
        .unwrap_or_default()
        .iter()
        .filter_map(|(t, _)| match t {
            Token::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_highest_placeholder_outside_quotes() {
        assert_eq!(count("select $1, $2 where a = $1"), 2);
        assert_eq!(count("select '$3', \"$4\" -- $5\n, /* $6 */ $2"), 2);
        assert_eq!(count("select 1"), 0);
        assert_eq!(count("select a$1 from t"), 0);
    }
}
