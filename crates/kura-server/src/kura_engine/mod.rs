//! The engine behind the server: kura's `Database` façade. Each connection gets
//! a `kura::Session`; statement with `$n` parameters are checked when prepared
//! and run with the bound values written into the SQL as literals.

mod placeholders;

use std::sync::Arc;

use kura::{Database, KuraError, QueryResult, Session};
use kura_common::Value;
use sqlparser::ast::Statement;

use crate::engine::{Canceller, Column, Engine, EngineError, EngineSession, Outcome, Shape};

/// A kura database served over the wire.
pub struct KuraEngine {
    db: Database,
}

impl KuraEngine {
    pub fn new(db: Database) -> Self {
        KuraEngine { db }
    }
}

impl Engine for KuraEngine {
    type Session = KuraSession;

    fn session(&self) -> KuraSession {
        KuraSession {
            session: self.db.session(),
        }
    }

    fn version(&self) -> String {
        format!(
            "PostgreSQL {} (kura {}) on {}-linux",
            crate::SERVER_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::ARCH
        )
    }
}

pub struct KuraSession {
    session: Session,
}

/// A statement checked at Parse: its text and how many parameters it takes.
pub struct KuraPrepared {
    sql: String,
    params: usize,
    returns_rows: bool,
}

fn engine_error(e: KuraError) -> EngineError {
    EngineError::new(e.sqlstate(), e.to_string())
}

fn outcome(result: QueryResult) -> Outcome {
    let QueryResult {
        columns,
        batches,
        tag,
    } = result;
    let columns = columns
        .into_iter()
        .map(|c| Column {
            name: c.name,
            data_type: c.data_type,
        })
        .collect();
    let rows = batches.into_iter().flat_map(|b| {
        let n = b.len();
        (0..n).map(move |i| b.row(i))
    });
    Outcome {
        columns,
        rows: Box::new(rows),
        tag,
    }
}

impl EngineSession for KuraSession {
    type Prepared = KuraPrepared;

    fn execute(&mut self, sql: &str) -> Result<Outcome, EngineError> {
        self.session.execute(sql).map(outcome).map_err(engine_error)
    }

    fn prepare(&mut self, sql: &str) -> Result<(KuraPrepared, Shape), EngineError> {
        let statements = kura::session::parse(sql).map_err(engine_error)?;
        let [stmt] = statements.as_slice() else {
            return Err(EngineError::new(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            ));
        };
        let params = placeholders::count(sql);
        let returns_rows = matches!(
            stmt,
            Statement::Query(_) | Statement::ShowVariable { .. } | Statement::Explain { .. }
        );
        let shape = Shape {
            params: vec![None; params],
            columns: if returns_rows { None } else { Some(Vec::new()) },
        };
        Ok((
            KuraPrepared {
                sql: sql.to_string(),
                params,
                returns_rows,
            },
            shape,
        ))
    }

    fn execute_prepared(
        &mut self,
        prepared: &KuraPrepared,
        params: &[Value],
    ) -> Result<Outcome, EngineError> {
        if params.len() != prepared.params {
            return Err(EngineError::new(
                "08P01",
                format!(
                    "bind message supplies {} parameters, but prepared statement requires {}",
                    params.len(),
                    prepared.params
                ),
            ));
        }
        let sql = placeholders::substitute(&prepared.sql, params)?;
        self.execute(&sql)
    }

    fn describe(&mut self, prepared: &KuraPrepared) -> Result<Vec<Column>, EngineError> {
        if !prepared.returns_rows {
            return Ok(Vec::new());
        }
        // Without values, the columns come from running the statement on NULLs
        // and keeping no row; where the engine cannot wrap it, from running it.
        let nulls = vec![Value::Null; prepared.params];
        let sql = placeholders::substitute(&prepared.sql, &nulls)?;
        let wrapped = format!("SELECT * FROM ({sql}) AS described LIMIT 0");
        match self.execute(&wrapped) {
            Ok(o) => Ok(o.columns),
            Err(_) => Ok(self.execute(&sql)?.columns),
        }
    }

    fn canceller(&self) -> Canceller {
        let handle = self.session.cancel_handle();
        Arc::new(move || handle.cancel())
    }
}
