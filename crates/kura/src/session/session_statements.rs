//! Statements the session runs itself, not the planner: PREPARE, EXECUTE and
//! DEALLOCATE, and cursors (DECLARE, FETCH, MOVE, CLOSE).

use super::*;

/// `PREPARE`, `EXECUTE`, `DEALLOCATE` and the cursor statements: run by the
/// session on its own state (see `prepared` and `cursor`).
pub(super) fn is_session_statement(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::Prepare { .. }
            | Statement::Execute {
                name: Some(_),
                immediate: false,
                ..
            }
            | Statement::Deallocate { .. }
            | Statement::Declare { .. }
            | Statement::Fetch { .. }
            | Statement::Close { .. }
    )
}

/// The statement name `EXECUTE` names, folded as PostgreSQL folds it.
pub(super) fn execute_name(n: &sqlparser::ast::ObjectName) -> String {
    match n.0.as_slice() {
        [part] => part
            .as_ident()
            .map(kura_sql::binder::norm)
            .unwrap_or_else(|| part.to_string()),
        _ => n.to_string(),
    }
}

/// Marks a `FETCH` that stands for `MOVE` (which sqlparser does not know):
/// `FETCH ... INTO` is not PostgreSQL, so its target is free to carry the mark.
pub(super) const MOVE_MARK: &str = "\u{0}move";

/// Marks a COPY that stands for `EXPORT DATABASE 'dir' [(options)]` (which sqlparser does
/// not know; read as `COPY <mark> TO 'dir' [(options)]`): no table can have this name.
pub(crate) const EXPORT_MARK: &str = "\u{0}export database";

/// Marks a COPY that stands for `IMPORT DATABASE 'dir'` (read as `COPY <mark> FROM 'dir'`).
pub(crate) const IMPORT_MARK: &str = "\u{0}import database";

/// Whether a COPY's table is the mark of `EXPORT DATABASE` / `IMPORT DATABASE`.
pub(super) fn is_database_mark(name: &sqlparser::ast::ObjectName) -> bool {
    matches!(name.0.as_slice(), [part] if part.as_ident().is_some_and(|i| i.value == EXPORT_MARK || i.value == IMPORT_MARK))
}

/// What `EXPORT DATABASE` / `IMPORT DATABASE` are written as for the parser, before the
/// mark replaces it.
const DATABASE_PLACEHOLDER: &str = "kura_database_placeholder";

/// [`parse`], reading `MOVE ...` as the `FETCH` it moves like: statements
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

impl Session {
    /// A session statement with parameter values (extended protocol).
    pub(super) fn run_session_statement(
        &mut self,
        stmt: &Statement,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r = guard(|| self.session_statement(stmt, Some(params)));
        self.finish(r)
    }

    /// Parameter types and result columns of a session statement.
    pub(super) fn describe_session_statement(
        &mut self,
        stmt: &Statement,
    ) -> KuraResult<(Vec<DataType>, Vec<ResultColumn>)> {
        Ok(match stmt {
            Statement::Execute { name: Some(n), .. } => {
                let p = self.prepared.get(&execute_name(n))?;
                (Vec::new(), p.prepared.columns.clone())
            }
            Statement::Fetch { name, into, .. } if into.is_none() => {
                let c = self.cursors.get(&kura_sql::binder::norm(name))?;
                (Vec::new(), c.columns.clone())
            }
            Statement::Declare { stmts } => {
                match stmts.first().and_then(|d| d.for_query.as_ref()) {
                    Some(q) => {
                        let query = Statement::Query(q.clone());
                        let (types, _) =
                            guard(|| crate::query::describe(&self.query_context(), &query))?;
                        (types, Vec::new())
                    }
                    None => (Vec::new(), Vec::new()),
                }
            }
            _ => (Vec::new(), Vec::new()),
        })
    }

    /// Runs `PREPARE`, `EXECUTE`, `DEALLOCATE`, `DECLARE`, `FETCH`/`MOVE`, `CLOSE`.
    pub(super) fn session_statement(
        &mut self,
        stmt: &Statement,
        params: Option<&[Value]>,
    ) -> KuraResult<QueryResult> {
        use crate::prepared::SqlPrepared;
        match stmt {
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => {
                let name = kura_sql::binder::norm(name);
                // Checked first: a duplicate is refused before any work.
                if self.prepared.get(&name).is_ok() {
                    return Err(KuraError::State {
                        sqlstate: "42P05",
                        message: format!("prepared statement \"{name}\" already exists"),
                    });
                }
                let declared = data_types
                    .iter()
                    .map(|t| kura_sql::binder::types::sql_type(t, Default::default()))
                    .collect::<Result<Vec<_>, _>>()?;
                let inner = (**statement).clone();
                let count = crate::prepared::placeholder_count(&inner);
                let prepared = self.prepare_parsed(inner.to_string(), inner)?;
                let types =
                    crate::prepared::parameter_types(&declared, &prepared.param_types, count);
                self.prepared.add(name, SqlPrepared { prepared, types })?;
                Ok(QueryResult::command("PREPARE"))
            }
            Statement::Execute {
                name: Some(n),
                parameters,
                ..
            } => {
                let name = execute_name(n);
                let p = self.prepared.get(&name)?.clone();
                let args = self.evaluate_arguments(parameters, params)?;
                let values = crate::prepared::bind_arguments(&name, &p, args)?;
                let stmt = &p.prepared.statement;
                if is_session_statement(stmt) {
                    return self.session_statement(stmt, Some(&values));
                }
                if values.is_empty() || is_local(stmt) {
                    return self.dispatch(stmt);
                }
                crate::query::run_statement_with_params(&self.query_context(), stmt, &values)
            }
            Statement::Deallocate { name, .. } => {
                if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
                    self.prepared.remove(None)?;
                    return Ok(QueryResult::command("DEALLOCATE ALL"));
                }
                self.prepared.remove(Some(&kura_sql::binder::norm(name)))?;
                Ok(QueryResult::command("DEALLOCATE"))
            }
            Statement::Declare { stmts } => {
                let [d] = stmts.as_slice() else {
                    return Err(KuraError::Unsupported("DECLARE of several names".into()));
                };
                let (Some(q), [cursor]) = (&d.for_query, d.names.as_slice()) else {
                    return Err(KuraError::Unsupported(format!("DECLARE {d}")));
                };
                if d.scroll == Some(true) {
                    return Err(KuraError::Unsupported(
                        "SCROLL cursors (kura's cursors scan forward only)".into(),
                    ));
                }
                let hold = d.hold == Some(true);
                let in_txn = self.in_transaction();
                if !hold && !in_txn {
                    return Err(KuraError::State {
                        sqlstate: "25P01",
                        message: "DECLARE CURSOR can only be used in transaction blocks".into(),
                    });
                }
                let name = kura_sql::binder::norm(cursor);
                if self.cursors.get(&name).is_ok() {
                    return Err(KuraError::State {
                        sqlstate: "42P03",
                        message: format!("cursor \"{name}\" already exists"),
                    });
                }
                let result =
                    crate::query::collect(&self.query_context(), q, params.map(|p| p.to_vec()))?;
                let shared = self.shared_memory.clone();
                self.cursors.declare(
                    &name,
                    result.columns,
                    result.batches,
                    hold,
                    in_txn,
                    &shared,
                )?;
                Ok(QueryResult::command("DECLARE CURSOR"))
            }
            Statement::Fetch {
                name,
                direction,
                into,
                ..
            } => {
                let move_only = into
                    .as_ref()
                    .is_some_and(|i| i.to_string().contains(MOVE_MARK));
                if into.is_some() && !move_only {
                    return Err(KuraError::Unsupported("FETCH ... INTO".into()));
                }
                self.cursors
                    .fetch(&kura_sql::binder::norm(name), direction, move_only)
            }
            Statement::Close { cursor } => {
                let shared = self.shared_memory.clone();
                match cursor {
                    sqlparser::ast::CloseCursor::All => {
                        self.cursors.close(None, &shared)?;
                        Ok(QueryResult::command("CLOSE CURSOR ALL"))
                    }
                    sqlparser::ast::CloseCursor::Specific { name } => {
                        self.cursors
                            .close(Some(&kura_sql::binder::norm(name)), &shared)?;
                        Ok(QueryResult::command("CLOSE CURSOR"))
                    }
                }
            }
            other => Err(KuraError::Unsupported(format!("statement: {other}"))),
        }
    }

    /// `EXECUTE`'s argument expressions as values (constant expressions,
    /// evaluated as a one-row query; `$n` inside them take `params`).
    pub(super) fn evaluate_arguments(
        &mut self,
        args: &[sqlparser::ast::Expr],
        params: Option<&[Value]>,
    ) -> KuraResult<Vec<Value>> {
        if args.is_empty() {
            return Ok(Vec::new());
        }
        let list = args
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mut parsed = parse(&format!("SELECT {list}"))?;
        let Some(Statement::Query(q)) = parsed.pop() else {
            return Err(KuraError::Internal("EXECUTE arguments".into()));
        };
        let r = crate::query::collect(&self.query_context(), &q, params.map(|p| p.to_vec()))?;
        r.rows()
            .pop()
            .ok_or_else(|| KuraError::Internal("EXECUTE arguments gave no row".into()))
    }
}

impl Session {
    /// Columns of open cursor `name` (the wire protocol describes a cursor
    /// as a portal of that name).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<ResultColumn>> {
        self.cursors.get(name).ok().map(|c| c.columns.clone())
    }
}
