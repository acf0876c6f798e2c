//! Index operators (paper 003's selective plans), both written as sources whose
//! morsels are independent pieces that fix their pages in rounds, so that in the
//! out-of-order mode each piece is a task that suspends on its reads:
//! - the index range scan: a piece is a run of leaves; round 0 fixes the leaves,
//!   round 1 the column pages of the rows they name;
//! - the index nested-loop join: its (materialised) probe input is cut into
//!   batches of keys; round 0 fixes the leaves where the keys' searches start,
//!   round 1 the pages of the columns the inner predicates read, round 2 the
//!   other columns of the rows that pass them.
//!
//! In the serial and static modes the same pieces run with synchronous fixes.
//!
//! A morsel is sized by the table pages its rows need, not by leaves or probe
//! rows: an index scan cuts a piece into slices of its rows, and an index join
//! its probe input into short runs of keys, so that each morsel's reads fit the
//! pins its task may hold and many tasks keep the disk's queue full.
//!
//! Columns the index entries store exactly (key columns of fixed width,
//! included columns) are decoded from the leaves fixed in round 0 and never
//! fetched from the table. When that is every column needed the read is
//! index-only: no further rounds, no table page.

use std::sync::{Arc, Mutex};

use kura_common::{Batch, Vector};
use kura_storage::{BufferManager, PageId};

use crate::error::{ExecError, ExecResult};
use crate::index_source::IndexSource;
use crate::source::TableSource;

mod join;
mod scan;

pub use join::{IndexJoinSource, IndexJoinSpec};
pub use scan::IndexScanSource;

/// Fetches columns `columns` of the rows `row_ids` (ascending, so neighbouring
/// rows share their page: at most one page per column per row).
pub(super) fn fetch(
    table: &dyn TableSource,
    columns: &[usize],
    row_ids: &[u64],
) -> ExecResult<Vec<Vector>> {
    columns
        .iter()
        .map(|&c| table.fetch_rows(c, row_ids))
        .collect()
}

pub(super) fn batch_of(cols: Vec<Vector>, rows: usize) -> Batch {
    if cols.is_empty() {
        Batch::with_rows(rows)
    } else {
        Batch::new(cols)
    }
}

/// The pages of `columns` holding rows `rows` (ascending), with their buffer.
pub(super) fn data_pages(
    table: &dyn TableSource,
    columns: &[usize],
    rows: &[u64],
) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
    let bm = table.buffer_manager()?;
    let mut pages = Vec::new();
    for &c in columns {
        pages.extend(table.row_pages(c, rows));
    }
    Some((bm, pages))
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Which of an index operator's columns come from the index entries (key
/// columns that decode exactly, included columns) and which from the table: a
/// column the entries hold costs no table page, even when others must be
/// fetched. When all come from the entries the read is index-only.
pub(super) struct ColumnSources {
    /// Where a read of the entries puts each stored column; `None` when no
    /// column comes from the entries.
    pub(super) decode: Option<Vec<Option<usize>>>,
    /// Whether output column `i` comes from the entries.
    pub(super) stored: Vec<bool>,
}

impl ColumnSources {
    /// The sources of `columns`, or an error when the plan asked for an
    /// index-only read the index cannot serve.
    pub(super) fn of(
        index: &IndexSource,
        columns: &[usize],
        index_only: bool,
    ) -> ExecResult<ColumnSources> {
        let (wanted, stored) = index.stored_layout(columns);
        if index_only && !stored.iter().all(|&s| s) {
            return Err(ExecError::Internal(format!(
                "index {} does not store every column the plan reads from it",
                index.name
            )));
        }
        let decode = stored.iter().any(|&s| s).then_some(wanted);
        Ok(ColumnSources { decode, stored })
    }

    /// Positions among `at` of the columns the table must give.
    pub(super) fn table_positions(&self, at: std::ops::Range<usize>) -> Vec<usize> {
        at.filter(|&i| !self.stored[i]).collect()
    }

    pub(super) fn index_only(&self) -> bool {
        self.stored.iter().all(|&s| s)
    }
}

/// Table columns at positions `at` of `columns`.
pub(super) fn table_columns(columns: &[usize], at: &[usize]) -> Vec<usize> {
    at.iter().map(|&i| columns[i]).collect()
}

/// Empty vectors of the table columns `columns`.
pub(super) fn empty_columns(
    table: &dyn TableSource,
    columns: &[usize],
    rows: usize,
) -> Vec<Vector> {
    columns
        .iter()
        .map(|&c| Vector::new(table.columns()[c].data_type, rows))
        .collect()
}
