//! A session: settings, a cancel flag, and `execute` — parse the SQL, run each
//! statement, turn a panic inside a query into an error so the database stays open.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use kura_common::settings::{Settings, SETTINGS};
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::Storage;

use crate::error::{KuraError, KuraResult};
use crate::result::{QueryResult, ResultColumn};

/// Progress of long work: label, units done, units total.
pub type Progress = dyn Fn(&str, u64, u64) + Send + Sync;

/// Requests cancellation of the query a session is running.
#[derive(Clone, Default)]
pub struct CancelHandle(Arc<AtomicBool>);

impl CancelHandle {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
    pub fn is_canceled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
    /// Fails with [`KuraError::Canceled`] once cancellation was requested.
    pub fn check(&self) -> KuraResult<()> {
        if self.is_canceled() {
            Err(KuraError::Canceled)
        } else {
            Ok(())
        }
    }
    fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A statement parsed and described once, to run many times with parameters
/// (`$1`, `$2`, ... — the PostgreSQL extended protocol).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    statement: Statement,
    /// Types of `$1..$n`, as far as the statement determines them.
    pub param_types: Vec<DataType>,
    /// Result columns; empty for statements that return none.
    pub columns: Vec<ResultColumn>,
}

/// One connection's state.
pub struct Session {
    storage: Arc<Storage>,
    settings: Settings,
    cancel: CancelHandle,
    progress: Option<Arc<Progress>>,
}

impl Session {
    pub(crate) fn new(storage: Arc<Storage>) -> Self {
        Session {
            storage,
            settings: Settings::default(),
            cancel: CancelHandle::default(),
            progress: None,
        }
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Reports progress of loads (COPY) to `f`.
    pub fn set_progress(&mut self, f: Option<Arc<Progress>>) {
        self.progress = f;
    }

    /// Runs every statement in `sql`; returns the last result.
    pub fn execute(&mut self, sql: &str) -> KuraResult<QueryResult> {
        self.execute_all(sql)?
            .pop()
            .ok_or_else(|| KuraError::Syntax("empty query".into()))
    }

    /// Runs every statement in `sql`; returns each result.
    pub fn execute_all(&mut self, sql: &str) -> KuraResult<Vec<QueryResult>> {
        let statements = parse(sql)?;
        let mut out = Vec::with_capacity(statements.len());
        for stmt in &statements {
            out.push(self.execute_statement(stmt)?);
        }
        Ok(out)
    }

    /// Parses and describes one statement without running it.
    pub fn prepare(&mut self, sql: &str) -> KuraResult<Prepared> {
        let mut statements = parse(sql)?;
        if statements.len() != 1 {
            return Err(KuraError::Invalid(format!(
                "a prepared statement must hold exactly one statement, found {}",
                statements.len()
            )));
        }
        let statement = statements.pop().unwrap();
        let (param_types, columns) = if is_local(&statement) {
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
            let ctx = crate::query::QueryContext {
                storage: &self.storage,
                settings: &self.settings,
                cancel: &self.cancel,
            };
            guard(|| crate::query::describe(&ctx, &statement))?
        };
        Ok(Prepared {
            sql: sql.to_string(),
            statement,
            param_types,
            columns,
        })
    }

    /// Runs a prepared statement with values for its parameters.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> KuraResult<QueryResult> {
        if params.is_empty() || is_local(&prepared.statement) {
            return self.execute_statement(&prepared.statement);
        }
        self.cancel.reset();
        let ctx = crate::query::QueryContext {
            storage: &self.storage,
            settings: &self.settings,
            cancel: &self.cancel,
        };
        guard(|| crate::query::run_statement_with_params(&ctx, &prepared.statement, params))
    }

    /// Runs one parsed statement.
    pub fn execute_statement(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        self.cancel.reset();
        guard(|| self.dispatch(stmt))
    }

    fn dispatch(&mut self, stmt: &Statement) -> KuraResult<QueryResult> {
        match stmt {
            Statement::CreateTable(ct) if ct.query.is_none() => {
                crate::ddl::create_table(&self.storage, ct)
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } if matches!(
                object_type,
                sqlparser::ast::ObjectType::Table | sqlparser::ast::ObjectType::View
            ) =>
            {
                crate::ddl::drop_tables(&self.storage, *object_type, *if_exists, names)
            }
            Statement::CreateIndex(ci) => {
                crate::ddl::create_index(&self.storage, ci, self.progress.as_deref())
            }
            Statement::Drop {
                object_type: sqlparser::ast::ObjectType::Index,
                if_exists,
                names,
                ..
            } => crate::ddl::drop_indexes(&self.storage, *if_exists, names),
            Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                ..
            } => crate::copy::copy_from(
                &self.storage,
                source,
                *to,
                target,
                options,
                legacy_options,
                self.progress.as_deref(),
            ),
            Statement::Set(set) => self.set(set),
            Statement::ShowVariable { variable } => self.show(variable),
            Statement::ExplainTable { table_name, .. } => {
                crate::describe::describe(self, table_name.to_string().trim_matches('"'))
            }
            Statement::ShowTables { .. } => Ok(crate::describe::show_tables(self)),
            other => {
                let ctx = crate::query::QueryContext {
                    storage: &self.storage,
                    settings: &self.settings,
                    cancel: &self.cancel,
                };
                crate::query::run_statement(&ctx, other)
            }
        }
    }

    /// `SET name = value` / `SET name TO value`.
    fn set(&mut self, set: &sqlparser::ast::Set) -> KuraResult<QueryResult> {
        use sqlparser::ast::{Expr, Set};
        let Set::SingleAssignment {
            variable, values, ..
        } = set
        else {
            return Err(KuraError::Unsupported(format!("{set}")));
        };
        let name = variable.to_string().to_ascii_lowercase();
        let value = match values.as_slice() {
            [Expr::Value(v)] => match &v.value {
                sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            [Expr::Identifier(id)] => id.value.clone(),
            [other] => other.to_string(),
            _ => return Err(KuraError::Invalid(format!("SET {name} takes one value"))),
        };
        self.set_setting(&name, &value)?;
        Ok(QueryResult::command("SET"))
    }

    /// Changes a setting, applying those that act on shared state at once.
    pub fn set_setting(&mut self, name: &str, value: &str) -> KuraResult<()> {
        if Settings::spec(name).is_none() && is_client_setting(name) {
            // Settings PostgreSQL drivers send at connect time; accepted, no effect.
            return Ok(());
        }
        self.settings.set(name, value).map_err(KuraError::Invalid)?;
        if name.eq_ignore_ascii_case("buffer_policy") {
            self.storage.buffer().set_policy(value)?;
        }
        Ok(())
    }

    /// `SHOW name` / `SHOW ALL`.
    fn show(&self, variable: &[sqlparser::ast::Ident]) -> KuraResult<QueryResult> {
        let name = variable
            .iter()
            .map(|i| i.value.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(" ");
        let text = DataType::Varchar(None);
        if name == "all" {
            let mut names = Vector::new(text, SETTINGS.len());
            let mut values = Vector::new(text, SETTINGS.len());
            let mut descr = Vector::new(text, SETTINGS.len());
            for s in SETTINGS {
                names.push_value(&Value::Text(s.name.into()));
                values.push_value(&Value::Text(self.settings.value(s.name)));
                descr.push_value(&Value::Text(s.description.into()));
            }
            let cols = ["name", "setting", "description"]
                .iter()
                .map(|n| ResultColumn {
                    name: n.to_string(),
                    data_type: text,
                })
                .collect();
            return Ok(QueryResult::rows_of(
                cols,
                vec![Batch::new(vec![names, values, descr])],
            ));
        }
        let value = match self.settings.get(&name) {
            Some(v) => v,
            None => client_setting_value(&name)
                .ok_or_else(|| {
                    KuraError::Invalid(format!("unrecognized configuration parameter \"{name}\""))
                })?
                .to_string(),
        };
        let v = Vector::from_values(text, &[Value::Text(value)]).expect("text vector");
        Ok(QueryResult::rows_of(
            vec![ResultColumn {
                name,
                data_type: text,
            }],
            vec![Batch::new(vec![v])],
        ))
    }
}

/// Runs `f`, turning a panic into an internal error so the session stays usable.
fn guard<T>(f: impl FnOnce() -> KuraResult<T>) -> KuraResult<T> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!("internal error: {what}");
            Err(KuraError::Internal(what))
        }
    }
}

/// Statements the session runs itself (not through the SQL engine).
fn is_local(stmt: &Statement) -> bool {
    match stmt {
        Statement::CreateTable(ct) => ct.query.is_none(),
        Statement::Drop { object_type, .. } => matches!(
            object_type,
            sqlparser::ast::ObjectType::Table
                | sqlparser::ast::ObjectType::View
                | sqlparser::ast::ObjectType::Index
        ),
        Statement::CreateIndex(_) => true,
        Statement::Copy { .. }
        | Statement::Set(_)
        | Statement::ShowVariable { .. }
        | Statement::ExplainTable { .. }
        | Statement::ShowTables { .. } => true,
        _ => false,
    }
}

/// Parses SQL text into statements (PostgreSQL dialect).
pub fn parse(sql: &str) -> KuraResult<Vec<Statement>> {
    Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| {
        let msg = e.to_string();
        KuraError::Syntax(
            msg.strip_prefix("sql parser error: ")
                .unwrap_or(&msg)
                .to_string(),
        )
    })
}

/// Parameters PostgreSQL clients set or ask for that have no meaning in kura.
fn client_setting_value(name: &str) -> Option<&'static str> {
    Some(match name {
        "server_version" => "16.6",
        "server_encoding" | "client_encoding" => "UTF8",
        "datestyle" => "ISO, MDY",
        "timezone" | "time zone" => "UTC",
        "standard_conforming_strings" => "on",
        "integer_datetimes" => "on",
        "intervalstyle" => "postgres",
        "search_path" => "public",
        "transaction isolation level" | "transaction_isolation" => "read committed",
        "application_name" | "extra_float_digits" | "statement_timeout" => "",
        _ => return None,
    })
}

fn is_client_setting(name: &str) -> bool {
    client_setting_value(name).is_some()
}
