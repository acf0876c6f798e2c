//! Table sources the scan reads from: a small trait over "scan this row range of a
//! column" and "zone maps per page", implemented by the storage layer's tables and by
//! in-memory tables (tests, VALUES, materialised CTEs).

use std::ops::Range;
use std::sync::Arc;

use kura_common::{DataType, Value, Vector};
use kura_storage::{BufferManager, PageId};

use crate::error::ExecResult;
use crate::index_source::IndexSource;

/// Statistics of one column, for cardinality estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStatistics {
    pub min: Value,
    pub max: Value,
    pub null_count: u64,
    /// Estimated number of distinct non-NULL values.
    pub distinct: u64,
}

/// Min/max of a run of rows of one column (one page).
#[derive(Debug, Clone, PartialEq)]
pub struct Zone {
    pub first_row: u64,
    pub row_count: u64,
    pub min: Value,
    pub max: Value,
    pub null_count: u64,
}

/// A column of a table source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceColumn {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
}

/// A byte range of a file a table source reads (see [`TableSource::file_reads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The open file, kept open by the table for as long as it lives.
    pub fd: std::os::unix::io::RawFd,
    pub offset: u64,
    pub len: usize,
    /// What the table calls the range (a Parquet table: row group and column).
    pub key: (usize, usize),
}

/// Something a scan can read by column and row range.
pub trait TableSource: Send + Sync {
    fn name(&self) -> &str;
    fn columns(&self) -> &[SourceColumn];
    fn row_count(&self) -> u64;
    fn column_stats(&self, col: usize) -> Option<ColumnStatistics>;
    /// Min/max per page of a column, in row order; empty when unknown.
    fn zones(&self, col: usize) -> Vec<Zone>;
    /// Row ranges that are the natural unit of parallel scanning.
    fn row_groups(&self) -> Vec<Range<u64>>;
    /// Whether column `col`'s values never decrease in row order and are never
    /// NULL (a table loaded in key order): a scan's batches then hold every
    /// row of a value but those of their first and last runs, and an
    /// aggregation on it groups by runs instead of hashing.
    fn ascending(&self, col: usize) -> bool {
        let _ = col;
        false
    }
    /// Whether no two rows hold the same value of column `col`, and none is
    /// NULL (a key stored in increasing order): the optimizer then knows
    /// rows apart by it.
    fn unique(&self, col: usize) -> bool {
        let _ = col;
        false
    }
    /// `Some(rows)` when every row group but the last holds `rows` rows, in row
    /// order from 0 — a table computed as it is read (`generate_series`), whose
    /// groups a scan then numbers instead of listing: a series of a trillion
    /// rows has 15 million of them.
    fn uniform_row_groups(&self) -> Option<u64> {
        None
    }
    /// Whether a row group is decoded as a whole the first time any of its rows is read
    /// (a Parquet column chunk, a piece of a CSV file): then a scan hands each worker whole
    /// groups, since two workers in one group would wait on each other's decode.
    fn decodes_whole_groups(&self) -> bool {
        false
    }
    /// The columns a scan of this table will read, told as each scan is built (before it
    /// reads): a table that decodes whole records (a CSV file) converts only those.
    fn project(&self, columns: &[usize]) {
        let _ = columns;
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector>;
    /// The buffer manager this table's pages live in, for asynchronous fixes
    /// (`None` for tables not stored in pages).
    fn buffer_manager(&self) -> Option<Arc<BufferManager>> {
        None
    }
    /// Byte ranges of files that reading rows `rows` of column `col` needs and that are
    /// not yet in memory (a Parquet column chunk): an out-of-order scan reads them through
    /// its worker's io_uring and hands them back with [`TableSource::supply`] before it
    /// decodes the rows. Empty for tables in pages or read otherwise.
    fn file_reads(&self, col: usize, rows: Range<u64>) -> Vec<FileRead> {
        let _ = (col, rows);
        Vec::new()
    }
    /// The bytes of a range [`TableSource::file_reads`] named, read.
    fn supply(&self, read: &FileRead, data: crate::runtime::AlignedBuf) {
        let _ = (read, data);
    }
    /// Drops a supplied range that was not decoded (its rows were all filtered out first).
    fn discard(&self, read: &FileRead) {
        let _ = read;
    }
    /// Pages holding rows `rows` of column `col`, in row order (empty when the
    /// table is not stored in pages). An out-of-order scan fixes these
    /// concurrently before decoding the rows.
    fn pages(&self, col: usize, rows: Range<u64>) -> Vec<PageId> {
        let _ = (col, rows);
        Vec::new()
    }
    /// Pages holding rows `rows` (ascending) of column `col`, each once: what a
    /// fetch of those rows fixes (empty when the table is not stored in pages).
    fn row_pages(&self, col: usize, rows: &[u64]) -> Vec<PageId> {
        let mut out: Vec<PageId> = Vec::new();
        for &r in rows {
            for p in self.pages(col, r..r + 1) {
                if out.last() != Some(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
    /// Pages (or zones) a full read of column `col` touches: the unit of the
    /// planner's scan cost.
    fn page_count(&self, col: usize) -> usize {
        self.zones(col).len().max(1)
    }
    /// Pages the table occupies in its file, and their size in bytes (none for
    /// tables not stored in pages).
    fn stored_pages(&self) -> (u64, u64) {
        (0, 0)
    }
    /// The B+tree indexes on this table a plan may read (none for tables not
    /// stored in pages).
    fn indexes(&self) -> Vec<Arc<IndexSource>> {
        Vec::new()
    }
    /// Every index on this table, for the system catalogs: also those an open
    /// transaction has not rebuilt yet for the rows it added.
    fn listed_indexes(&self) -> Vec<Arc<IndexSource>> {
        self.indexes()
    }
    /// The `TABLESAMPLE` the scan takes of this table, if any.
    fn sample(&self) -> Option<&crate::sample::spec::TableSample> {
        None
    }
    /// Rows `first_row + sel[i]` of column `col` (`sel` ascending, each below
    /// `len`): `read_range` then a take of `sel`, unless the table can decode
    /// only the selected rows (a join-filtered scan's other columns).
    fn read_selected(
        &self,
        col: usize,
        first_row: u64,
        len: usize,
        sel: &[u32],
    ) -> ExecResult<Vector> {
        Ok(self.read_range(col, first_row, len)?.take(sel))
    }
    /// Rows `row_ids` of column `col`, in the order given (index plans fetch the
    /// rows an index found). Sorted row ids share pages.
    fn fetch_rows(&self, col: usize, row_ids: &[u64]) -> ExecResult<Vector> {
        let dt = self
            .columns()
            .get(col)
            .map(|c| c.data_type)
            .ok_or_else(|| crate::error::ExecError::Internal(format!("no column #{col}")))?;
        let mut out = Vector::new(dt, row_ids.len());
        for &r in row_ids {
            out.append(&self.read_range(col, r, 1)?);
        }
        Ok(out)
    }
}

/// A table held in memory as one vector per column.
#[derive(Debug, Clone)]
pub struct MemTable {
    name: String,
    columns: Vec<SourceColumn>,
    data: Vec<Vector>,
    stats: Vec<ColumnStatistics>,
    /// Rows per zone (stands in for a page).
    zone_rows: usize,
    group_rows: usize,
}

impl MemTable {
    /// Builds a table from column vectors of equal length, computing exact statistics.
    pub fn new(name: &str, columns: Vec<SourceColumn>, data: Vec<Vector>) -> MemTable {
        let stats = data.iter().map(|v| compute_stats(v, 0, v.len())).collect();
        MemTable {
            name: name.to_string(),
            columns,
            data,
            stats,
            zone_rows: 1024,
            group_rows: 65536,
        }
    }

    /// Changes the zone and row-group granularity (tests of page skipping).
    pub fn with_layout(mut self, zone_rows: usize, group_rows: usize) -> MemTable {
        self.zone_rows = zone_rows.max(1);
        self.group_rows = group_rows.max(1);
        self
    }

    pub fn into_arc(self) -> Arc<dyn TableSource> {
        Arc::new(self)
    }
}

fn compute_stats(v: &Vector, start: usize, len: usize) -> ColumnStatistics {
    let mut min = Value::Null;
    let mut max = Value::Null;
    let mut nulls = 0;
    let mut distinct = std::collections::HashSet::new();
    for i in start..start + len {
        let x = v.get_value(i);
        if x.is_null() {
            nulls += 1;
            continue;
        }
        if min.is_null() || x.total_cmp(&min).is_lt() {
            min = x.clone();
        }
        if max.is_null() || x.total_cmp(&max).is_gt() {
            max = x.clone();
        }
        if len == v.len() {
            distinct.insert(x.to_string());
        }
    }
    ColumnStatistics {
        min,
        max,
        null_count: nulls,
        distinct: distinct.len() as u64,
    }
}

impl TableSource for MemTable {
    fn name(&self) -> &str {
        &self.name
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.data.first().map_or(0, |v| v.len() as u64)
    }
    fn column_stats(&self, col: usize) -> Option<ColumnStatistics> {
        self.stats.get(col).cloned()
    }
    fn zones(&self, col: usize) -> Vec<Zone> {
        let Some(v) = self.data.get(col) else {
            return Vec::new();
        };
        (0..v.len())
            .step_by(self.zone_rows)
            .map(|s| {
                let len = self.zone_rows.min(v.len() - s);
                let st = compute_stats(v, s, len);
                Zone {
                    first_row: s as u64,
                    row_count: len as u64,
                    min: st.min,
                    max: st.max,
                    null_count: st.null_count,
                }
            })
            .collect()
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        let n = self.row_count();
        (0..n)
            .step_by(self.group_rows)
            .map(|s| s..(s + self.group_rows as u64).min(n))
            .collect()
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        let v = self.data.get(col).ok_or_else(|| {
            crate::error::ExecError::Internal(format!("column {col} out of range"))
        })?;
        let start = (first_row as usize).min(v.len());
        let len = len.min(v.len() - start);
        Ok(v.slice(start, len))
    }
    fn fetch_rows(&self, col: usize, row_ids: &[u64]) -> ExecResult<Vector> {
        let v = self.data.get(col).ok_or_else(|| {
            crate::error::ExecError::Internal(format!("column {col} out of range"))
        })?;
        let idx = row_ids
            .iter()
            .map(|&r| {
                u32::try_from(r)
                    .ok()
                    .filter(|&i| (i as usize) < v.len())
                    .ok_or_else(|| {
                        crate::error::ExecError::Internal(format!("row id {r} out of range"))
                    })
            })
            .collect::<ExecResult<Vec<u32>>>()?;
        Ok(v.take(&idx))
    }
}
