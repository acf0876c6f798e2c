//! Persistent metadata of a table's data: row groups, and per column the run of
//! pages with their zone maps (min/max/NULLs per page) and the column statistics.
//!
//! Encoded with postcard: [`TableMeta`] as in format 2, then (format 3) a
//! [`MetaExtension`] naming each column's overflow pages. A format-2 blob ends
//! after the first part and reads as a table without overflow pages.

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
    /// Overflow pages of the column's long values (in the [`MetaExtension`]).
    #[serde(skip)]
    pub overflow: Vec<PageId>,
}

/// What format 3 adds after a table's metadata.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct MetaExtension {
    /// Per column, the overflow pages of its long values.
    overflow: Vec<Vec<PageId>>,
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

    /// Every page the table's data occupies, overflow pages included.
    pub fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.columns.iter().flat_map(|c| {
            c.zones
                .iter()
                .map(|z| z.page)
                .chain(c.overflow.iter().copied())
        })
    }

    /// The stored form (see the module documentation).
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let bytes = postcard::to_stdvec(self).map_err(|e| e.to_string())?;
        if self.columns.iter().all(|c| c.overflow.is_empty()) {
            // Nothing to add: the blob reads the same in format 2.
            return Ok(bytes);
        }
        let ext = MetaExtension {
            overflow: self.columns.iter().map(|c| c.overflow.clone()).collect(),
        };
        postcard::to_extend(&ext, bytes).map_err(|e| e.to_string())
    }

    /// Decodes [`Self::to_bytes`] (or a format-2 blob).
    pub fn from_bytes(bytes: &[u8]) -> Result<TableMeta, String> {
        let (mut meta, rest) =
            postcard::take_from_bytes::<TableMeta>(bytes).map_err(|e| e.to_string())?;
        if rest.is_empty() {
            return Ok(meta);
        }
        let ext: MetaExtension = postcard::from_bytes(rest).map_err(|e| e.to_string())?;
        if ext.overflow.len() != meta.columns.len() {
            return Err(format!(
                "overflow pages named for {} columns of {}",
                ext.overflow.len(),
                meta.columns.len()
            ));
        }
        for (c, pages) in meta.columns.iter_mut().zip(ext.overflow) {
            c.overflow = pages;
        }
        Ok(meta)
    }
}
