//! `TABLESAMPLE`: a table source wrapped with the sample to take of it, and the
//! keep-or-skip decision the scan makes per row (BERNOULLI) or per page (SYSTEM).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use kura_common::{Value, Vector};
use kura_storage::{BufferManager, PageId};

use crate::error::ExecResult;
use crate::index_source::IndexSource;
use crate::source::{ColumnStatistics, SourceColumn, TableSource, Zone};

/// PostgreSQL's two built-in sampling methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleMethod {
    /// Each row kept independently.
    Bernoulli,
    /// Each storage page kept or skipped whole; skipped pages are never read.
    System,
}

/// What to take of a table: a method, a percentage and the seed that makes the
/// choice (from `REPEATABLE`, or drawn once per statement).
#[derive(Debug, Clone, PartialEq)]
pub struct TableSample {
    pub method: SampleMethod,
    /// In `[0, 100]`.
    pub percent: f64,
    pub seed: u64,
    /// Whether the seed came from `REPEATABLE` (shown by EXPLAIN).
    pub repeatable: bool,
}

impl TableSample {
    /// Whether the unit (row or page) starting at row `position` is kept: a hash
    /// of (seed, position), so a scan split over threads, or run again with the
    /// same seed, keeps the same units.
    pub fn keeps(&self, position: u64) -> bool {
        if self.percent >= 100.0 {
            return true;
        }
        let h = mix(self.seed ^ mix(position.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        // The top 53 bits as a uniform number in [0, 1).
        let u = (h >> 11) as f64 / (1u64 << 53) as f64;
        u * 100.0 < self.percent
    }

    /// The fraction of rows the sample is expected to keep (for estimates).
    pub fn fraction(&self) -> f64 {
        self.percent / 100.0
    }

    /// Rows `first..first + len` the sample keeps, as offsets from `first`.
    pub fn kept_rows(&self, first: u64, len: usize) -> Vec<u32> {
        (0..len as u32)
            .filter(|&i| self.keeps(first + i as u64))
            .collect()
    }
}

impl fmt::Display for TableSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = match self.method {
            SampleMethod::Bernoulli => "bernoulli",
            SampleMethod::System => "system",
        };
        write!(f, "{m}({})", self.percent)?;
        if self.repeatable {
            write!(f, " repeatable")?;
        }
        Ok(())
    }
}

/// SplitMix64's finalizer: a cheap, well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

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

/// The sample percentage as PostgreSQL checks it.
pub fn check_percent(v: &Value) -> Result<f64, &'static str> {
    match v.as_f64() {
        None => Err("TABLESAMPLE parameter cannot be null"),
        Some(p) if !(0.0..=100.0).contains(&p) => {
            Err("sample percentage must be between 0 and 100")
        }
        Some(p) => Ok(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(percent: f64, seed: u64) -> TableSample {
        TableSample {
            method: SampleMethod::Bernoulli,
            percent,
            seed,
            repeatable: true,
        }
    }

    #[test]
    fn keeps_about_the_percentage_and_the_same_rows_per_seed() {
        let s = sample(10.0, 7);
        let kept = s.kept_rows(0, 100_000);
        assert!((9_000..11_000).contains(&kept.len()), "{}", kept.len());
        assert_eq!(kept, s.kept_rows(0, 100_000));
        assert_ne!(kept, sample(10.0, 8).kept_rows(0, 100_000));
        assert!(sample(0.0, 1).kept_rows(0, 1000).is_empty());
        assert_eq!(sample(100.0, 1).kept_rows(0, 1000).len(), 1000);
    }
}
