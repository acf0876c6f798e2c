//! Parsing SQL text into statements (sqlparser's PostgreSQL dialect), with kura's limits.

use super::*;

/// Parses SQL text into statements (PostgreSQL dialect); a `MOVE` is read as
/// the `FETCH` it moves like, marked so (sqlparser does not know MOVE), and a
/// `FETCH`/`MOVE` without a direction as `NEXT`.
///
/// A statement may parse into a very deep tree; run the parse and everything
/// that holds the statements (including dropping them) inside
/// [`on_statement_stack`].
pub fn parse(sql: &str) -> KuraResult<Vec<Statement>> {
    parse_moves(sql)
}

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
    crate::table_rules::refuse_dropped_column_words(sql, &stmts)?;
    Ok(stmts)
}

/// How deeply parentheses, subqueries and calls may nest in the SQL text
/// (sqlparser's default is 50; PostgreSQL accepts more, and the statement stack
/// has room for this many).
pub(super) const PARSER_RECURSION_LIMIT: usize = 500;

impl Session {
    /// Parses `sql` with what its syntax tree may take reserved from the budget
    /// all running queries share (see `limits`); the reservation is kept as long
    /// as the statements.
    pub(super) fn parse_counted(
        &self,
        sql: &str,
    ) -> (
        KuraResult<Vec<Statement>>,
        Option<crate::limits::ParseMemory>,
    ) {
        let memory = match crate::limits::reserve_parse(sql, &self.shared_memory) {
            Ok(memory) => memory,
            Err(e) => return (Err(e), None),
        };
        if !crate::limits::parses_long(sql) {
            return (parse(sql), memory);
        }
        // A long text parses for seconds: its time limit and a cancel request
        // count from here, not only once it runs — and its first statement's
        // limit counts from here too (one limit for the text, not two).
        self.cancel.start_parse(self.settings.statement_timeout());
        let cancel = self.cancel.clone();
        let parsed = crate::limits::parse_interruptibly(sql, memory, || cancel.is_canceled());
        match parsed {
            Ok(Some((statements, memory))) => (Ok(statements), memory),
            Ok(None) => {
                let r = self.cancel.check().map(|()| Vec::new());
                self.cancel.start(None);
                (r, None)
            }
            Err(e) => {
                self.cancel.start(None);
                (Err(e), None)
            }
        }
    }
}
