//! A statement's result as Python sees it: its columns, its rows fetched as tuples from any
//! position (a cursor's `fetchmany`), or all remaining rows as a pyarrow Table without a
//! per-row path.

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::Schema;
use kura::{QueryResult, ResultColumn};
use kura_common::{Batch, DataType};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::db_error;
use crate::values::row_to_python;

/// Rows per Arrow chunk handed to Python (DuckDB's row-group size).
pub const ARROW_CHUNK_ROWS: usize = 122_880;

/// What one statement returned.
#[pyclass(module = "kura._kura", name = "Result", frozen)]
pub struct PyQueryResult {
    columns: Vec<ResultColumn>,
    types: Vec<DataType>,
    tag: String,
    rows: usize,
    /// The batches, with the first row of each; emptied by `arrow` (it moves them out).
    batches: Mutex<Vec<(usize, Batch)>>,
}

impl PyQueryResult {
    pub fn new(r: QueryResult) -> PyQueryResult {
        let mut start = 0;
        let batches = r
            .batches
            .into_iter()
            .filter(|b| !b.is_empty())
            .map(|b| {
                let s = start;
                start += b.len();
                (s, b)
            })
            .collect();
        PyQueryResult {
            types: r.columns.iter().map(|c| c.data_type).collect(),
            columns: r.columns,
            tag: r.tag,
            rows: start,
            batches: Mutex::new(batches),
        }
    }
}

impl PyQueryResult {
    /// The rows a command changed, from its tag (`INSERT 0 n`, `UPDATE n`, `DELETE n`,
    /// `COPY n`); -1 for other commands.
    pub fn changed(&self) -> i64 {
        match self.tag.split_whitespace().next() {
            Some("INSERT" | "UPDATE" | "DELETE" | "COPY" | "MERGE") => self
                .tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(-1),
            _ => -1,
        }
    }
}

#[pymethods]
impl PyQueryResult {
    /// The command tag (`SELECT 3`, `INSERT 0 2`, `CREATE TABLE`).
    #[getter]
    fn tag(&self) -> &str {
        &self.tag
    }

    /// Whether the statement returns rows (as opposed to a command).
    #[getter]
    fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Rows in the result.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows
    }

    /// Each column's name and type (`integer`, `decimal(15,2)`, `varchar`, ...).
    #[getter]
    fn columns(&self) -> Vec<(String, String)> {
        self.columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type.to_string().to_lowercase()))
            .collect()
    }

    /// Rows the statement returned or changed (PEP 249's `rowcount`): a query's rows, the
    /// count in `INSERT 0 n` / `UPDATE n` / `DELETE n` / `COPY n`, else -1.
    #[getter]
    fn rowcount(&self) -> i64 {
        if self.has_rows() {
            self.rows as i64
        } else {
            self.changed()
        }
    }

    /// Up to `count` rows from row `start`, as a list of tuples.
    fn rows<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        count: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let batches = self.batches.lock().unwrap_or_else(|p| p.into_inner());
        let end = (start.saturating_add(count)).min(self.rows);
        if start >= end {
            return Ok(out);
        }
        let first = batches.partition_point(|(s, b)| s + b.len() <= start);
        for (s, b) in &batches[first..] {
            if *s >= end {
                break;
            }
            let from = start.max(*s) - s;
            let to = (end - s).min(b.len());
            for i in from..to {
                out.append(row_to_python(py, &b.row(i), &self.types)?)?;
            }
        }
        Ok(out)
    }

    /// The rows from `start` on as a pyarrow Table. The batches move into Arrow unless `keep`
    /// (then they are copied): rows can be read either way, but after a move no longer by
    /// `rows`.
    #[pyo3(signature = (start, keep=false))]
    fn arrow<'py>(&self, py: Python<'py>, start: usize, keep: bool) -> PyResult<Bound<'py, PyAny>> {
        let mut held = self.batches.lock().unwrap_or_else(|p| p.into_inner());
        let taken = match keep {
            true => held.clone(),
            false => std::mem::take(&mut *held),
        };
        drop(held);
        let columns: Vec<(String, DataType, bool)> = self
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type, true))
            .collect();
        let converted: Result<(Vec<RecordBatch>, Arc<Schema>), kura::KuraError> =
            py.detach(move || {
                let schema = Arc::new(kura_exec::arrow::arrow_schema(&columns)?);
                let batches = taken.into_iter().map(|(_, b)| b);
                let out = kura_exec::arrow::batches_to_arrow(
                    batches,
                    &schema,
                    start,
                    usize::MAX,
                    ARROW_CHUNK_ROWS,
                )?;
                Ok((out, schema))
            });
        let (batches, schema) = converted.map_err(db_error)?;
        let table = Table::try_new(batches, schema)
            .map_err(|e| crate::errors::InternalError::new_err(e.to_string()))?;
        table.into_pyarrow(py)
    }
}
