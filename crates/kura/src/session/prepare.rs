//! Prepared statements in a session: PREPARE, parameters bound and typed, EXECUTE.

use super::*;

impl Session {
    /// [`Session::execute_prepared`] with a query's rows going to `sink`.
    pub fn execute_prepared_streaming(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
        sink: &mut dyn RowSink,
    ) -> KuraResult<QueryResult> {
        let params = (!params.is_empty()).then_some(params);
        self.stream_statement(&prepared.statement, params, sink)
    }

    /// Parses and describes one statement without running it.
    pub fn prepare(&mut self, sql: &str) -> KuraResult<Prepared> {
        on_statement_stack(|| self.prepare_on_stack(sql))
    }

    pub(super) fn prepare_on_stack(&mut self, sql: &str) -> KuraResult<Prepared> {
        let (statements, memory) = self.parse_counted(sql);
        // A prepared statement runs later, on a time limit of its own.
        self.cancel.end_text();
        let mut statements = statements?;
        if statements.len() != 1 {
            return Err(KuraError::Invalid(format!(
                "a prepared statement must hold exactly one statement, found {}",
                statements.len()
            )));
        }
        let statement = statements.pop().unwrap();
        let mut prepared = self.prepare_parsed(sql.to_string(), statement)?;
        prepared.parse_memory = memory.map(Arc::new);
        Ok(prepared)
    }

    /// Describes one parsed statement without running it.
    pub(super) fn prepare_parsed(
        &mut self,
        sql: String,
        statement: Statement,
    ) -> KuraResult<Prepared> {
        let (param_types, columns) = if is_session_statement(&statement) {
            self.describe_session_statement(&statement)?
        } else if is_local(&statement) {
            let columns = match &statement {
                Statement::ExplainTable { .. } => {
                    crate::describe::columns_of(&crate::describe::DESCRIBE_COLUMNS)
                }
                Statement::ShowTables { .. } => {
                    crate::describe::columns_of(&crate::describe::SHOW_TABLES_COLUMNS)
                }
                Statement::ShowVariable { variable } => vec![ResultColumn {
                    name: variable
                        .iter()
                        .map(|i| i.value.to_ascii_lowercase())
                        .collect::<Vec<_>>()
                        .join(" "),
                    data_type: DataType::Varchar(None),
                }],
                _ => Vec::new(),
            };
            (Vec::new(), columns)
        } else {
            guard(|| crate::query::describe(&self.query_context(), &statement))?
        };
        Ok(Prepared {
            sql,
            statement: DropOnStack::new(statement),
            param_types,
            columns,
            parse_memory: None,
        })
    }

    /// Runs a prepared statement with values for its parameters.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        if is_session_statement(&prepared.statement) && !params.is_empty() {
            return self.run_session_statement(&prepared.statement, params);
        }
        if params.is_empty() || is_local(&prepared.statement) {
            return self.execute_statement(&prepared.statement);
        }
        self.run_with_params(&prepared.statement, params)
    }

    pub(super) fn run_with_params(
        &mut self,
        stmt: &Statement,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        self.check_transaction(stmt)?;
        self.cancel.start(self.settings.statement_timeout());
        let r =
            guard(|| crate::query::run_statement_with_params(&self.query_context(), stmt, params));
        self.finish(r)
    }
}
