//! One sqlparser parse (PostgreSQL dialect) within kura's bounds, its errors reported as kura's.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{KuraError, KuraResult};
use crate::stack::{on_statement_stack, MAX_STATEMENT_BYTES};

/// Parses `sql` as written (`parse` reads some statements as others first).
pub(super) fn parse_sql(sql: &str) -> KuraResult<Vec<Statement>> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(KuraError::TooLong(format!(
            "the statement text is {} bytes; at most {MAX_STATEMENT_BYTES} are accepted",
            sql.len()
        )));
    }
    crate::limits::check_statement_shape(sql)?;
    let parse_with = |limit: usize| {
        on_statement_stack(|| {
            Parser::new(&PostgreSqlDialect {})
                .with_recursion_limit(limit)
                .try_with_sql(sql)
                .and_then(|mut p| p.parse_statements())
        })
    };
    let stmts = parse_with(PARSER_RECURSION_LIMIT)
        .map_err(|e| match e {
            // sqlparser sometimes swallows its recursion limit (a keyword
            // such as NOT is retried as a column name) and reports a syntax
            // error instead. A real syntax error does not move when the limit
            // is raised; one caused by the limit does.
            sqlparser::parser::ParserError::ParserError(_) | sqlparser::parser::ParserError::TokenizerError(_)
                if parse_with(2 * PARSER_RECURSION_LIMIT)
                    .err()
                    .is_none_or(|again| again.to_string() != e.to_string()) =>
            {
                sqlparser::parser::ParserError::RecursionLimitExceeded
            }
            e => e,
        })
    .map_err(|e| match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => KuraError::TooDeep(format!(
            "the statement nests more than {PARSER_RECURSION_LIMIT} levels of parentheses, subqueries or function calls"
        )),
        e => {
            let msg = e.to_string();
            KuraError::Syntax(
                msg.strip_prefix("sql parser error: ")
                    .unwrap_or(&msg)
                    .to_string(),
            )
        }
    })?;
    super::dropped_words::refuse_dropped_column_words(sql, &stmts)?;
    Ok(stmts)
}

/// How deeply parentheses, subqueries and calls may nest in the SQL text
/// (sqlparser's default is 50; PostgreSQL accepts more, and the statement stack
/// has room for this many).
const PARSER_RECURSION_LIMIT: usize = 500;
