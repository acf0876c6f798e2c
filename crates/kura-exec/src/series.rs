//! `generate_series(start, stop, step)` over integers as a table whose rows are
//! computed as a scan reads them: a series of a million rows (or a billion) takes
//! no memory beyond the batch being read, and its scan stops at a cancel or the
//! statement's time limit like any other. Short series stay VALUES lists.

use std::ops::Range;

use kura_common::{ColumnData, DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};
use crate::source::{ColumnStatistics, SourceColumn, TableSource, Zone};

/// Rows per row group (the unit of parallel scanning).
const GROUP_ROWS: u64 = 65_536;

/// The rows `start + k * step` for `k` in `0..count`, of `INTEGER` or `BIGINT`,
/// with a `BIGINT` row number (from 1) as a second column `WITH ORDINALITY`.
#[derive(Debug)]
pub struct SeriesTable {
    columns: Vec<SourceColumn>,
    start: i64,
    step: i64,
    count: u64,
}

impl SeriesTable {
    /// `data_type` is `INTEGER` or `BIGINT`; every value of the series must fit
    /// it (the binder has checked the last one).
    pub fn new(
        name: &str,
        data_type: DataType,
        start: i64,
        step: i64,
        count: u64,
        ordinality: bool,
    ) -> SeriesTable {
        let mut columns = vec![SourceColumn {
            name: name.to_string(),
            data_type,
            nullable: false,
        }];
        if ordinality {
            columns.push(SourceColumn {
                name: "ordinality".into(),
                data_type: DataType::BigInt,
                nullable: false,
            });
        }
        SeriesTable {
            columns,
            start,
            step,
            count,
        }
    }

    fn value(&self, col: usize, row: u64) -> i64 {
        if col == 0 {
            self.start + row as i64 * self.step
        } else {
            row as i64 + 1
        }
    }

    fn typed(&self, col: usize, v: i64) -> Value {
        match self.columns[col].data_type {
            DataType::Integer => Value::Integer(v as i32),
            _ => Value::BigInt(v),
        }
    }
}

impl TableSource for SeriesTable {
    fn name(&self) -> &str {
        "generate_series"
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.count
    }
    fn column_stats(&self, col: usize) -> Option<ColumnStatistics> {
        if col >= self.columns.len() || self.count == 0 {
            return None;
        }
        let (a, b) = (self.value(col, 0), self.value(col, self.count - 1));
        Some(ColumnStatistics {
            min: self.typed(col, a.min(b)),
            max: self.typed(col, a.max(b)),
            null_count: 0,
            distinct: self.count,
        })
    }
    fn zones(&self, _col: usize) -> Vec<Zone> {
        Vec::new()
    }
    fn uniform_row_groups(&self) -> Option<u64> {
        Some(GROUP_ROWS)
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        (0..self.count)
            .step_by(GROUP_ROWS as usize)
            .map(|s| s..(s + GROUP_ROWS).min(self.count))
            .collect()
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        let column = self
            .columns
            .get(col)
            .ok_or_else(|| ExecError::Internal(format!("series column {col}")))?;
        let rows = first_row..(first_row + len as u64).min(self.count);
        let data = match column.data_type {
            DataType::Integer => ColumnData::I32(rows.map(|r| self.value(col, r) as i32).collect()),
            _ => ColumnData::I64(rows.map(|r| self.value(col, r)).collect()),
        };
        Ok(Vector {
            data_type: column.data_type,
            data,
            validity: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_computed_per_range() {
        let s = SeriesTable::new("g", DataType::Integer, 10, -3, 5, true);
        let v = s.read_range(0, 1, 3).unwrap();
        assert_eq!(v.data, ColumnData::I32(vec![7, 4, 1]));
        let o = s.read_range(1, 3, 10).unwrap();
        assert_eq!(o.data, ColumnData::I64(vec![4, 5]));
        let st = s.column_stats(0).unwrap();
        assert_eq!((st.min, st.max), (Value::Integer(-2), Value::Integer(10)));
        let big = SeriesTable::new("g", DataType::BigInt, 1, 1, 200_000, false);
        assert_eq!(big.row_groups().len(), 4);
        assert_eq!(big.row_groups()[3], 196_608..200_000);
    }
}
