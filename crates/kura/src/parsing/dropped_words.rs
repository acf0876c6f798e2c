//! Other dialects' column options that sqlparser drops without a trace, refused, not ignored.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{KuraError, KuraResult};

/// Words sqlparser (0.63) takes at the end of a column definition and then
/// drops when they are another dialect's column option (`a int AUTO_INCREMENT`,
/// `a int IDENTITY`, `a int ASC`, `a int ON UPDATE`): it consumes the keyword
/// before it checks the dialect, so the statement parses without a trace of
/// the option, which would be ignored. PostgreSQL reads none of them there.
const DROPPED_COLUMN_WORDS: &[Keyword] = &[
    Keyword::AUTO_INCREMENT,
    Keyword::AUTOINCREMENT,
    Keyword::ASC,
    Keyword::DESC,
    Keyword::AS,
    Keyword::UPDATE,
    Keyword::SRID,
    Keyword::IDENTITY,
];

/// Refuses (42601, as PostgreSQL does) a CREATE TABLE whose text holds more
/// of the [`DROPPED_COLUMN_WORDS`] than the parsed statement does written out
/// again: sqlparser dropped one of them. Everything else a statement holds is
/// written out as it was read, so only a dropped word makes the counts
/// differ. Each statement is compared with its own text (the tokens between
/// semicolons), or, should those not pair up, all with all.
pub(super) fn refuse_dropped_column_words(sql: &str, stmts: &[Statement]) -> KuraResult<()> {
    let creates_table =
        |s: &Statement| matches!(s, Statement::CreateTable(ct) if !ct.columns.is_empty());
    if !stmts.iter().any(creates_table) {
        return Ok(());
    }
    let tokenize = |text: &str| Tokenizer::new(&PostgreSqlDialect {}, text).tokenize().ok();
    let counts = |tokens: &[Token]| -> Vec<usize> {
        DROPPED_COLUMN_WORDS
            .iter()
            .map(|k| {
                tokens
                    .iter()
                    .filter(|t| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.keyword == *k))
                    .count()
            })
            .collect()
    };
    let Some(tokens) = tokenize(sql) else {
        return Ok(());
    };
    let texts: Vec<&[Token]> = tokens
        .split(|t| matches!(t, Token::SemiColon))
        .filter(|c| c.iter().any(|t| !matches!(t, Token::Whitespace(_))))
        .collect();
    let pairs: Vec<(Vec<&Statement>, &[Token])> = if texts.len() == stmts.len() {
        stmts
            .iter()
            .zip(texts)
            .filter(|(s, _)| creates_table(s))
            .map(|(s, t)| (vec![s], t))
            .collect()
    } else {
        vec![(stmts.iter().collect(), tokens.as_slice())]
    };
    for (stmts, text) in pairs {
        let again: Vec<String> = stmts.iter().map(|s| s.to_string()).collect();
        let Some(read) = tokenize(&again.join(";\n")) else {
            continue;
        };
        let (written, read) = (counts(text), counts(&read));
        if let Some(i) = (0..written.len()).find(|&i| written[i] > read[i]) {
            return Err(KuraError::Syntax(format!(
                "syntax error at or near \"{:?}\": not a PostgreSQL column option",
                DROPPED_COLUMN_WORDS[i]
            )));
        }
    }
    Ok(())
}
