//! Text files decoded whole into kura's column vectors (CSV, JSON): the files are read once,
//! when the statement is planned, through an Arrow reader and the converter, and the columns
//! are served by row group while the statement runs.

use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use kura_common::Vector;

use super::bad;
use crate::arrow::arrow_to_vector;
use crate::error::{ExecError, ExecResult};
use crate::source::{ColumnStatistics, SourceColumn, TableSource, Zone};

/// Rows per row group (the unit of parallel scanning).
pub const GROUP_ROWS: usize = 65_536;

/// Files decoded into columns.
#[derive(Debug)]
pub struct DecodedTable {
    /// The function that read them (`read_csv`), the scan's name.
    name: &'static str,
    pub(crate) columns: Vec<SourceColumn>,
    pub(crate) data: Vec<Vector>,
    rows: u64,
}

impl DecodedTable {
    /// Decodes every file of `paths` with the Arrow batches `read(path)` gives, into
    /// `columns` (the batches' columns in that order, converted to the columns' types).
    pub fn decode<I>(
        name: &'static str,
        columns: Vec<SourceColumn>,
        paths: &[PathBuf],
        mut read: impl FnMut(&Path) -> ExecResult<I>,
    ) -> ExecResult<DecodedTable>
    where
        I: Iterator<Item = Result<RecordBatch, ArrowError>>,
    {
        let mut data: Vec<Vector> = columns
            .iter()
            .map(|c| Vector::new(c.data_type, 0))
            .collect();
        let mut rows = 0u64;
        for path in paths {
            for rb in read(path)? {
                let rb = rb.map_err(|e| bad(path, e))?;
                for (i, c) in columns.iter().enumerate() {
                    let v = arrow_to_vector(rb.column(i).as_ref(), c.data_type, &c.name)
                        .map_err(|e| bad(path, e))?;
                    data[i].append(&v);
                }
                rows += rb.num_rows() as u64;
            }
        }
        Ok(DecodedTable {
            name,
            columns,
            data,
            rows,
        })
    }
}

impl TableSource for DecodedTable {
    fn name(&self) -> &str {
        self.name
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.rows
    }
    fn column_stats(&self, _col: usize) -> Option<ColumnStatistics> {
        None
    }
    fn zones(&self, _col: usize) -> Vec<Zone> {
        Vec::new()
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        (0..self.rows)
            .step_by(GROUP_ROWS)
            .map(|s| s..(s + GROUP_ROWS as u64).min(self.rows))
            .collect()
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        let v = self
            .data
            .get(col)
            .ok_or_else(|| ExecError::Internal(format!("{} column {col}", self.name)))?;
        let start = (first_row as usize).min(v.len());
        let len = len.min(v.len() - start);
        Ok(v.slice(start, len))
    }
}
