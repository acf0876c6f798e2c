//! Statements the session runs itself, not the planner: PREPARE, EXECUTE and
//! DEALLOCATE, and cursors (DECLARE, FETCH, MOVE, CLOSE).

use super::*;
use crate::parsing::MOVE_MARK;

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
                let result = crate::query_context::collect(
                    &self.query_context(),
                    q,
                    params.map(|p| p.to_vec()),
                )?;
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
        let r =
            crate::query_context::collect(&self.query_context(), &q, params.map(|p| p.to_vec()))?;
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
