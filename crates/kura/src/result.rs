//! What a statement returns: typed columns, batches of rows, and the PostgreSQL
//! command tag (`SELECT 4`, `CREATE TABLE`, `COPY 150000`).

use kura_common::{Batch, DataType, Value};

/// A result column's name and type.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultColumn {
    pub name: String,
    pub data_type: DataType,
}

/// The result of one statement.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    pub columns: Vec<ResultColumn>,
    pub batches: Vec<Batch>,
    pub tag: String,
}

impl QueryResult {
    /// A result without rows (DDL, SET, COPY).
    pub fn command(tag: impl Into<String>) -> Self {
        QueryResult {
            columns: Vec::new(),
            batches: Vec::new(),
            tag: tag.into(),
        }
    }

    /// A row-returning result; the tag is `SELECT n`.
    pub fn rows_of(columns: Vec<ResultColumn>, batches: Vec<Batch>) -> Self {
        let n: usize = batches.iter().map(|b| b.len()).sum();
        QueryResult {
            columns,
            batches,
            tag: format!("SELECT {n}"),
        }
    }

    /// Live rows over all batches.
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(|b| b.len()).sum()
    }

    /// Every row as values (convenient for tests and small results).
    pub fn rows(&self) -> Vec<Vec<Value>> {
        let mut out = Vec::with_capacity(self.row_count());
        for b in &self.batches {
            for i in 0..b.len() {
                out.push(b.row(i));
            }
        }
        out
    }

    /// Whether the statement returns rows (a SELECT, SHOW, EXPLAIN) as opposed to a command.
    pub fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// Receives the rows of a query as it runs (see `Session::execute_streaming`).
pub trait RowSink {
    /// The result's columns, once, before any rows.
    fn columns(&mut self, columns: &[ResultColumn]);
    /// One batch of rows, in result order; false when no more are wanted (the
    /// query then stops).
    fn rows(&mut self, batch: Batch) -> bool;
}
