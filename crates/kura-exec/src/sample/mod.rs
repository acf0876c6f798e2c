//! `TABLESAMPLE`: a table source wrapped with the sample to take of it, and the
//! keep-or-skip decision the scan makes per row (BERNOULLI) or per page (SYSTEM).

use std::ops::Range;
use std::sync::Arc;

use kura_common::Vector;
use kura_storage::{BufferManager, PageId};

use crate::error::ExecResult;
use crate::index_source::IndexSource;
use crate::source::{ColumnStatistics, SourceColumn, TableSource, Zone};

pub(crate) mod spec;

pub use spec::{check_percent, SampleMethod, TableSample};

/// A table read through a sample. It offers no indexes, so every plan over it
/// is a scan, which applies the sample.
pub struct SampledTable {
    inner: Arc<dyn TableSource>,
    sample: TableSample,
}

impl SampledTable {
    pub fn new(inner: Arc<dyn TableSource>, sample: TableSample) -> SampledTable {
        SampledTable { inner, sample }
    }
}

impl TableSource for SampledTable {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn columns(&self) -> &[SourceColumn] {
        self.inner.columns()
    }
    fn row_count(&self) -> u64 {
        self.inner.row_count()
    }
    fn column_stats(&self, col: usize) -> Option<ColumnStatistics> {
        self.inner.column_stats(col)
    }
    fn zones(&self, col: usize) -> Vec<Zone> {
        self.inner.zones(col)
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        self.inner.row_groups()
    }
    fn uniform_row_groups(&self) -> Option<u64> {
        self.inner.uniform_row_groups()
    }
    fn decodes_whole_groups(&self) -> bool {
        self.inner.decodes_whole_groups()
    }
    fn project(&self, columns: &[usize]) {
        self.inner.project(columns)
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        self.inner.read_range(col, first_row, len)
    }
    fn buffer_manager(&self) -> Option<Arc<BufferManager>> {
        self.inner.buffer_manager()
    }
    fn file_reads(&self, col: usize, rows: Range<u64>) -> Vec<crate::source::FileRead> {
        self.inner.file_reads(col, rows)
    }
    fn supply(&self, read: &crate::source::FileRead, data: crate::runtime::AlignedBuf) {
        self.inner.supply(read, data)
    }
    fn discard(&self, read: &crate::source::FileRead) {
        self.inner.discard(read)
    }
    fn pages(&self, col: usize, rows: Range<u64>) -> Vec<PageId> {
        self.inner.pages(col, rows)
    }
    fn row_pages(&self, col: usize, rows: &[u64]) -> Vec<PageId> {
        self.inner.row_pages(col, rows)
    }
    fn page_count(&self, col: usize) -> usize {
        self.inner.page_count(col)
    }
    fn stored_pages(&self) -> (u64, u64) {
        self.inner.stored_pages()
    }
    fn indexes(&self) -> Vec<Arc<IndexSource>> {
        Vec::new()
    }
    fn read_selected(
        &self,
        col: usize,
        first_row: u64,
        len: usize,
        sel: &[u32],
    ) -> ExecResult<Vector> {
        self.inner.read_selected(col, first_row, len, sel)
    }
    fn fetch_rows(&self, col: usize, row_ids: &[u64]) -> ExecResult<Vector> {
        self.inner.fetch_rows(col, row_ids)
    }
    fn sample(&self) -> Option<&TableSample> {
        Some(&self.sample)
    }
}

/// The blocks SYSTEM keeps or skips: the pages of the table's first column (the
/// same for every query of the table, whatever columns it reads), or its row
/// groups when it has no pages.
pub fn system_blocks(table: &dyn TableSource) -> Vec<Range<u64>> {
    let zones = if table.columns().is_empty() {
        Vec::new()
    } else {
        table.zones(0)
    };
    if zones.is_empty() {
        return table.row_groups();
    }
    zones
        .iter()
        .map(|z| z.first_row..z.first_row + z.row_count)
        .collect()
}
