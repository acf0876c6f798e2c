//! MOVE, FETCH without a direction, EXPORT/IMPORT DATABASE: rewritten into what sqlparser reads.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;

use super::bounded::parse_sql;
use crate::error::KuraResult;

/// Marks a `FETCH` that stands for `MOVE` (which sqlparser does not know):
/// `FETCH ... INTO` is not PostgreSQL, so its target is free to carry the mark.
pub(crate) const MOVE_MARK: &str = "\u{0}move";

/// Marks a COPY that stands for `EXPORT DATABASE 'dir' [(options)]` (which sqlparser does
/// not know; read as `COPY <mark> TO 'dir' [(options)]`): no table can have this name.
const EXPORT_MARK: &str = "\u{0}export database";

/// Marks a COPY that stands for `IMPORT DATABASE 'dir'` (read as `COPY <mark> FROM 'dir'`).
const IMPORT_MARK: &str = "\u{0}import database";

/// Whether a COPY's table is the mark of `EXPORT DATABASE` / `IMPORT DATABASE`.
pub(crate) fn is_database_mark(name: &sqlparser::ast::ObjectName) -> bool {
    matches!(name.0.as_slice(), [part] if part.as_ident().is_some_and(|i| i.value == EXPORT_MARK || i.value == IMPORT_MARK))
}

/// What `EXPORT DATABASE` / `IMPORT DATABASE` are written as for the parser, before the
/// mark replaces it.
const DATABASE_PLACEHOLDER: &str = "kura_database_placeholder";

/// `parse`, reading `MOVE ...` as the `FETCH` it moves like: statements
/// that start with the word MOVE are parsed as FETCH and marked; and
/// `EXPORT DATABASE` / `IMPORT DATABASE` as COPY of a marked name.
pub(super) fn parse_moves(sql: &str) -> KuraResult<Vec<Statement>> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let lower = sql.to_ascii_lowercase();
    if !["move", "fetch", "export", "import"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return parse_sql(sql);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return parse_sql(sql);
    };
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut moves = Vec::new();
    // Statements that were `EXPORT DATABASE` / `IMPORT DATABASE`, read as COPY.
    let mut database_copies: Vec<(usize, &str)> = Vec::new();
    // Just after a statement's EXPORT or IMPORT: DATABASE makes it one.
    let mut after_database_word: Option<&str> = None;
    let mut rewritten = false;
    let mut statement = 0;
    let mut at_start = true;
    // Just after a statement's FETCH or MOVE, before its next token.
    let mut after_fetch = false;
    let mut after_forward = false;
    let mut text = String::with_capacity(sql.len() + 16);
    for t in &tokens {
        if matches!(t, Token::Whitespace(_)) {
            text.push_str(&t.to_string());
            continue;
        }
        if after_fetch {
            after_fetch = false;
            // PostgreSQL's `FETCH [FROM|IN] name` means NEXT; sqlparser wants
            // the direction written.
            const DIRECTIONS: &[&str] = &[
                "next", "prior", "first", "last", "absolute", "relative", "all", "forward",
                "backward",
            ];
            if word(t, "from") || word(t, "in") {
                text.push_str("NEXT ");
                rewritten = true;
            } else if matches!(t, Token::Word(_)) && !DIRECTIONS.iter().any(|d| word(t, d)) {
                text.push_str("NEXT FROM ");
                rewritten = true;
            }
            after_forward = word(t, "forward") || word(t, "backward");
        } else if after_forward {
            after_forward = false;
            // `FORWARD FROM name` is FORWARD 1.
            if word(t, "from") || word(t, "in") {
                text.push_str("1 ");
                rewritten = true;
            }
        }
        if let Some(mark) = after_database_word.take() {
            if word(t, "database") {
                let direction = if mark == EXPORT_MARK { "TO" } else { "FROM" };
                text.push_str(&format!("COPY {DATABASE_PLACEHOLDER} {direction}"));
                database_copies.push((statement, mark));
                rewritten = true;
                continue;
            }
            // Not ours: the word stays, for the parser to refuse.
            text.push_str(if mark == EXPORT_MARK {
                "EXPORT"
            } else {
                "IMPORT"
            });
            text.push(' ');
        }
        match t {
            _ if at_start && (word(t, "export") || word(t, "import")) => {
                at_start = false;
                after_database_word = Some(if word(t, "export") {
                    EXPORT_MARK
                } else {
                    IMPORT_MARK
                });
                continue;
            }
            Token::SemiColon => {
                if !at_start {
                    statement += 1;
                }
                at_start = true;
            }
            _ if at_start && word(t, "move") => {
                moves.push(statement);
                at_start = false;
                after_fetch = true;
                text.push_str("FETCH");
                continue;
            }
            _ if at_start && word(t, "fetch") => {
                at_start = false;
                after_fetch = true;
            }
            _ => at_start = false,
        }
        text.push_str(&t.to_string());
    }
    if let Some(mark) = after_database_word {
        text.push_str(if mark == EXPORT_MARK {
            "EXPORT"
        } else {
            "IMPORT"
        });
    }
    if moves.is_empty() && !rewritten {
        return parse_sql(sql);
    }
    let mut statements = parse_sql(&text)?;
    for (i, mark) in database_copies {
        if let Some(Statement::Copy {
            source: sqlparser::ast::CopySource::Table { table_name, .. },
            ..
        }) = statements.get_mut(i)
        {
            *table_name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(mark)]);
        }
    }
    for i in moves {
        if let Some(Statement::Fetch { into, .. }) = statements.get_mut(i) {
            *into = Some(sqlparser::ast::ObjectName::from(vec![
                sqlparser::ast::Ident::new(MOVE_MARK),
            ]));
        }
    }
    Ok(statements)
}
