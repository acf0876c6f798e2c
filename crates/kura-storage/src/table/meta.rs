//! Persistent metadata of a table's data: row groups, and per column the run of
//! pages with their zone maps (min/max/NULLs per page) and the column statistics.

use serde::{Deserialize, Serialize};

use super::stats::{ColumnStats, Hll};
use crate::file::PageId;
use kura_common::Value;

/// One column page and what it holds: rows `first_row..first_row+row_count`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageZone {
    pub page: PageId,
    pub first_row: u64,
    pub row_count: u32,
    pub null_count: u32,
    /// Smallest non-NULL value on the page (`Value::Null` if all are NULL).
    pub min: Value,
    pub max: Value,
}

/// A column's pages (ascending `first_row`, contiguous) and statistics.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ColumnMeta {
    pub zones: Vec<PageZone>,
    pub stats: ColumnStats,
    pub hll: Hll,
}

/// Everything about a table's stored rows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TableMeta {
    pub row_count: u64,
    /// `(first_row, row_count)` of each row group.
    pub row_groups: Vec<(u64, u64)>,
    pub columns: Vec<ColumnMeta>,
}

impl TableMeta {
    pub fn empty(columns: usize) -> Self {
        TableMeta {
            row_count: 0,
            row_groups: Vec::new(),
            columns: vec![ColumnMeta::default(); columns],
        }
    }

    /// Every page the table's data occupies.
    pub fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.columns
            .iter()
            .flat_map(|c| c.zones.iter().map(|z| z.page))
    }
}
