//! Persistent metadata of a table's data: row groups, and per column the run of
//! pages with their zone maps (min/max/NULLs per page) and the column statistics.
//!
//! Encoded with postcard: [`TableMeta`] as in format 2, then (format 3) a
//! [`MetaExtension`] naming each column's overflow pages, then (format 9) a
//! [`SortedPages`] marking the pages whose values are in ascending order. A
//! format-2 blob ends after the first part and reads as a table without
//! overflow pages; a blob without the last part, as one whose pages are not
//! known to be sorted.

use std::cmp::Ordering;

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
    /// Every value on the page is non-NULL and no smaller than the one before
    /// (computed for integer, date and decimal columns as the page is
    /// written; stored in [`SortedPages`]).
    #[serde(skip)]
    pub sorted: bool,
    /// Sorted, and every value greater than the one before (no two equal).
    #[serde(skip)]
    pub strict: bool,
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

/// What format 9 adds after the [`MetaExtension`]: per column, bitmaps of
/// its pages (in zone order) whose values are sorted, and strictly so.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SortedPages {
    sorted: Vec<Vec<u64>>,
    strict: Vec<Vec<u64>>,
}

/// One bit per zone where `mark` holds.
fn bitmap(zones: &[PageZone], mark: impl Fn(&PageZone) -> bool) -> Vec<u64> {
    let mut bits = vec![0u64; zones.len().div_ceil(64)];
    for (i, z) in zones.iter().enumerate() {
        if mark(z) {
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    bits
}

fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
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
        let any_sorted = self
            .columns
            .iter()
            .any(|c| c.zones.iter().any(|z| z.sorted));
        if !any_sorted && self.columns.iter().all(|c| c.overflow.is_empty()) {
            // Nothing to add: the blob reads the same in format 2.
            return Ok(bytes);
        }
        let ext = MetaExtension {
            overflow: self.columns.iter().map(|c| c.overflow.clone()).collect(),
        };
        let bytes = postcard::to_extend(&ext, bytes).map_err(|e| e.to_string())?;
        if !any_sorted {
            return Ok(bytes);
        }
        let sorted = SortedPages {
            sorted: self
                .columns
                .iter()
                .map(|c| bitmap(&c.zones, |z| z.sorted))
                .collect(),
            strict: self
                .columns
                .iter()
                .map(|c| bitmap(&c.zones, |z| z.strict))
                .collect(),
        };
        postcard::to_extend(&sorted, bytes).map_err(|e| e.to_string())
    }

    /// Decodes [`Self::to_bytes`] (or a blob of format 2 to 8).
    pub fn from_bytes(bytes: &[u8]) -> Result<TableMeta, String> {
        let (mut meta, rest) =
            postcard::take_from_bytes::<TableMeta>(bytes).map_err(|e| e.to_string())?;
        if rest.is_empty() {
            return Ok(meta);
        }
        let (ext, rest) =
            postcard::take_from_bytes::<MetaExtension>(rest).map_err(|e| e.to_string())?;
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
        if rest.is_empty() {
            return Ok(meta);
        }
        let sorted: SortedPages = postcard::from_bytes(rest).map_err(|e| e.to_string())?;
        let n = meta.columns.len();
        if sorted.sorted.len() != n || sorted.strict.len() != n {
            return Err(format!(
                "sorted pages named for {} and {} columns of {n}",
                sorted.sorted.len(),
                sorted.strict.len(),
            ));
        }
        for ((c, s), t) in meta
            .columns
            .iter_mut()
            .zip(sorted.sorted)
            .zip(sorted.strict)
        {
            for (i, z) in c.zones.iter_mut().enumerate() {
                z.sorted = bit(&s, i);
                z.strict = bit(&t, i);
            }
        }
        Ok(meta)
    }

    /// Whether column `col`'s values, in row order, never decrease and are
    /// never NULL: every page sorted, each page's smallest value no smaller
    /// than the page before's largest. Equal values are then adjacent — a
    /// scan's batches hold every row of a key except at their first and last
    /// runs (what an ordered aggregation needs). False for an empty column.
    pub fn ascending(&self, col: usize) -> bool {
        self.in_order(col, |z| z.sorted, Ordering::is_le)
    }

    /// Whether column `col`'s values, in row order, always increase and are
    /// never NULL: no two rows hold the same value (a key loaded in order:
    /// `c_custkey`, `o_orderkey`). An aggregation whose input keeps this
    /// table's rows apart by it has one row per group.
    pub fn unique(&self, col: usize) -> bool {
        self.in_order(col, |z| z.strict, Ordering::is_lt)
    }

    /// Every page of column `col` without NULLs and in order by `page`, and
    /// each page's largest value and the next page's smallest in order by
    /// `across`.
    fn in_order(
        &self,
        col: usize,
        page: impl Fn(&PageZone) -> bool,
        across: impl Fn(Ordering) -> bool,
    ) -> bool {
        let Some(c) = self.columns.get(col) else {
            return false;
        };
        !c.zones.is_empty()
            && c.zones.iter().all(|z| page(z) && z.null_count == 0)
            && c.zones
                .windows(2)
                .all(|w| across(w[0].max.total_cmp(&w[1].min)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(page: PageId, first_row: u64, min: i64, max: i64, sorted: bool) -> PageZone {
        PageZone {
            page,
            first_row,
            row_count: 10,
            null_count: 0,
            min: Value::BigInt(min),
            max: Value::BigInt(max),
            sorted,
            strict: sorted,
        }
    }

    fn meta(overflow: bool, sorted: [bool; 3]) -> TableMeta {
        let mut m = TableMeta::empty(2);
        m.columns[0].zones = (0..3)
            .map(|i| {
                zone(
                    i + 1,
                    i * 10,
                    i as i64 * 10,
                    i as i64 * 10 + 9,
                    sorted[i as usize],
                )
            })
            .collect();
        m.columns[1].zones = vec![zone(9, 0, 0, 5, false)];
        if overflow {
            m.columns[1].overflow = vec![20, 21];
        }
        m
    }

    fn marks(m: &TableMeta) -> Vec<bool> {
        m.columns[0].zones.iter().map(|z| z.sorted).collect()
    }

    #[test]
    fn sorted_marks_round_trip_with_and_without_overflow_pages() {
        for overflow in [false, true] {
            for sorted in [[true, true, true], [true, false, true], [false; 3]] {
                let m = meta(overflow, sorted);
                let back = TableMeta::from_bytes(&m.to_bytes().unwrap()).unwrap();
                assert_eq!(marks(&back), sorted.to_vec());
                assert_eq!(back.columns[1].overflow.len(), if overflow { 2 } else { 0 });
                assert_eq!(back.ascending(0), sorted.iter().all(|s| *s));
                assert_eq!(back.unique(0), sorted.iter().all(|s| *s));
                assert!(!back.ascending(1));
                assert!(!back.unique(1));
            }
        }
    }

    #[test]
    fn a_blob_of_an_older_format_reads_as_unsorted() {
        // Format 8 wrote the first two parts only.
        let m = meta(true, [true; 3]);
        let mut old = postcard::to_stdvec(&m).unwrap();
        let ext = MetaExtension {
            overflow: m.columns.iter().map(|c| c.overflow.clone()).collect(),
        };
        old = postcard::to_extend(&ext, old).unwrap();
        let back = TableMeta::from_bytes(&old).unwrap();
        assert_eq!(marks(&back), vec![false; 3]);
        assert_eq!(back.columns[1].overflow, vec![20, 21]);
        assert!(!back.ascending(0));
    }

    #[test]
    fn pages_out_of_order_with_each_other_are_not_ascending() {
        let mut m = meta(false, [true; 3]);
        assert!(m.ascending(0));
        // The second page's values start below the first's largest.
        m.columns[0].zones[1].min = Value::BigInt(5);
        assert!(!m.ascending(0));
        m.columns[0].zones[1].min = Value::BigInt(9);
        assert!(
            m.ascending(0),
            "equal values across a page boundary stay adjacent"
        );
        assert!(!m.unique(0), "but are not unique");
        m.columns[0].zones[1].min = Value::BigInt(10);
        assert!(m.unique(0));
        m.columns[0].zones[1].strict = false;
        assert!(m.ascending(0) && !m.unique(0));
        m.columns[0].zones[2].null_count = 1;
        assert!(!m.ascending(0));
    }
}
