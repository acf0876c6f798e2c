//! Columnar tables: row groups of ~64K rows, each column a run of checksummed
//! pages with zone maps. The interface is layout-neutral — "read this row range of
//! a column" and "fetch these row ids of a column" — so a second layout (PAX/row)
//! can sit behind it later (DESIGN.md "Data").

mod dict;
pub mod encode;
pub mod meta;
pub mod packed;
pub mod stats;
pub mod writer;

use std::ops::Range;
use std::sync::Arc;

use kura_common::{ColumnData, DataType, Vector};

use crate::buffer::{BufferManager, PageGuard};
use crate::error::{StorageError, StorageResult};
use crate::file::page::PageKind;
use crate::file::PageId;
use crate::schema::Schema;
pub use meta::{PageZone, TableMeta};
pub use stats::ColumnStats;

/// Rows per row group (the unit of parallel scans).
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// A committed table: schema, data metadata, and the buffer manager to read through.
pub struct Table {
    name: String,
    schema: Schema,
    meta: Arc<TableMeta>,
    meta_root: PageId,
    bm: Arc<BufferManager>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({}, {} rows)", self.name, self.meta.row_count)
    }
}

impl Table {
    pub(crate) fn new(
        name: String,
        schema: Schema,
        meta: Arc<TableMeta>,
        meta_root: PageId,
        bm: Arc<BufferManager>,
    ) -> Self {
        Table {
            name,
            schema,
            meta,
            meta_root,
            bm,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn row_count(&self) -> u64 {
        self.meta.row_count
    }

    pub fn meta(&self) -> &Arc<TableMeta> {
        &self.meta
    }

    pub(crate) fn meta_root(&self) -> PageId {
        self.meta_root
    }

    pub fn buffer(&self) -> &Arc<BufferManager> {
        &self.bm
    }

    pub fn column_stats(&self, col: usize) -> &ColumnStats {
        &self.meta.columns[col].stats
    }

    /// Pages the table occupies in the file: every column's data pages and the
    /// overflow pages of its long values.
    pub fn stored_pages(&self) -> u64 {
        self.meta
            .columns
            .iter()
            .map(|c| (c.zones.len() + c.overflow.len()) as u64)
            .sum()
    }

    /// Pages of a column with their zone maps, in row order.
    pub fn zones(&self, col: usize) -> &[PageZone] {
        &self.meta.columns[col].zones
    }

    /// Whether column `col` is stored in ascending order without NULLs (see
    /// [`TableMeta::ascending`]).
    pub fn ascending(&self, col: usize) -> bool {
        self.meta.ascending(col)
    }

    /// Whether no two rows of column `col` hold the same value and none is
    /// NULL, as stored in increasing order (see [`TableMeta::unique`]).
    pub fn unique(&self, col: usize) -> bool {
        self.meta.unique(col)
    }

    /// Row ranges of the row groups.
    pub fn row_groups(&self) -> Vec<Range<u64>> {
        self.meta
            .row_groups
            .iter()
            .map(|&(s, n)| s..s + n)
            .collect()
    }

    /// Index of the zone holding `row` (which must be < row_count).
    pub fn zone_of(&self, col: usize, row: u64) -> usize {
        let zones = &self.meta.columns[col].zones;
        zones.partition_point(|z| z.first_row + z.row_count as u64 <= row)
    }

    fn check_col(&self, col: usize) -> StorageResult<DataType> {
        self.schema
            .columns
            .get(col)
            .map(|c| c.data_type)
            .ok_or_else(|| {
                StorageError::Invalid(format!("table {} has no column #{col}", self.name))
            })
    }

    /// Appends rows `from..to` (page-relative) of a fixed column page to `out`.
    pub fn decode_page(
        &self,
        col: usize,
        page: &PageGuard,
        from: usize,
        to: usize,
        out: &mut Vector,
    ) -> StorageResult<()> {
        // One test per page: ordinary pages take the vectorized path below.
        if encode::is_long(page) {
            return self.decode_long(page, from, to, out);
        }
        let dt = self.schema.columns[col].data_type;
        encode::decode_into(page, dt, from, to, out).map_err(|what| self.corrupt(page.page(), what))
    }

    fn corrupt(&self, page: PageId, what: String) -> StorageError {
        StorageError::Corrupt {
            path: self.bm.file().path().to_path_buf(),
            page,
            what,
        }
    }

    /// Appends the value of a long-value page (rows `from..to` of its one row)
    /// to `out`, following its overflow chain.
    fn decode_long(
        &self,
        page: &PageGuard,
        from: usize,
        to: usize,
        out: &mut Vector,
    ) -> StorageResult<()> {
        if from > to || to > 1 {
            return Err(self.corrupt(
                page.page(),
                format!("long-value page holds 1 row, asked for {from}..{to}"),
            ));
        }
        if from == to {
            return Ok(());
        }
        let (len, mut next, inline) =
            encode::decode_long(page).map_err(|what| self.corrupt(page.page(), what))?;
        let ColumnData::Str(s) = &mut out.data else {
            return Err(self.corrupt(
                page.page(),
                format!("a long text value in a column of type {}", out.data_type),
            ));
        };
        if s.data.len() + len > u32::MAX as usize {
            return Err(StorageError::TooLarge(dict::TOO_MUCH_TEXT.into()));
        }
        let mut value = Vec::with_capacity(len);
        value.extend_from_slice(&inline[..inline.len().min(len)]);
        let payload = self.bm.file().page_size() - crate::file::page::PAGE_HEADER;
        // A chain longer than the length needs is damage (or a loop).
        let mut hops_left = encode::overflow_pages_for(payload, len);
        while value.len() < len {
            if next == 0 || hops_left == 0 {
                return Err(self.corrupt(
                    page.page(),
                    format!(
                        "the overflow chain of a {len}-byte value ends after {} bytes",
                        value.len()
                    ),
                ));
            }
            let p = self.bm.fix(next)?;
            if p.kind() != Some(PageKind::Overflow) {
                return Err(self.corrupt(next, "expected an overflow page".into()));
            }
            let (after, bytes) =
                encode::decode_overflow(&p).map_err(|what| self.corrupt(next, what))?;
            if value.len() + bytes.len() > len {
                return Err(self.corrupt(
                    next,
                    format!("overflow pages hold more than the value's {len} bytes"),
                ));
            }
            value.extend_from_slice(bytes);
            next = after;
            hops_left -= 1;
        }
        s.push(&value);
        if let Some(v) = &mut out.validity {
            v.push(true);
        }
        Ok(())
    }

    /// Reads rows `first_row..first_row+len` of column `col` (synchronous fixes).
    pub fn read_range(&self, col: usize, first_row: u64, len: usize) -> StorageResult<Vector> {
        let dt = self.check_col(col)?;
        let end = first_row
            .saturating_add(len as u64)
            .min(self.meta.row_count);
        let mut out = Vector::new(dt, end.saturating_sub(first_row) as usize);
        if first_row >= end {
            return Ok(out);
        }
        let zones = self.zones(col);
        let mut z = self.zone_of(col, first_row);
        let mut row = first_row;
        while row < end {
            let zone = &zones[z];
            let page = self.bm.fix(zone.page)?;
            let from = (row - zone.first_row) as usize;
            let to = ((end - zone.first_row) as usize).min(zone.row_count as usize);
            self.decode_page(col, &page, from, to, &mut out)?;
            row = zone.first_row + to as u64;
            z += 1;
        }
        Ok(out)
    }

    /// Rows `first_row + sel[i]` of column `col` (`sel` ascending, each below
    /// `len`): what [`Self::read_range`] followed by a take of `sel` returns, but
    /// fixed-width pages decode only the selected rows (a join filter's
    /// survivors: the other columns of a filtered scan).
    pub fn read_selected(
        &self,
        col: usize,
        first_row: u64,
        len: usize,
        sel: &[u32],
    ) -> StorageResult<Vector> {
        let dt = self.check_col(col)?;
        let end = first_row
            .saturating_add(len as u64)
            .min(self.meta.row_count);
        if sel.last().is_some_and(|&r| first_row + r as u64 >= end) {
            return Err(StorageError::Invalid(format!(
                "row {} of a {len}-row range from {first_row} is past table {}'s {} rows",
                sel[sel.len() - 1],
                self.name,
                self.meta.row_count
            )));
        }
        let mut out = Vector::new(dt, sel.len());
        let zones = self.zones(col);
        let mut rest = sel;
        let mut rows = Vec::new();
        while let Some(&first) = rest.first() {
            let z = self.zone_of(col, first_row + first as u64);
            let zone = &zones[z];
            let zone_end = zone.first_row + zone.row_count as u64;
            let count = rest.partition_point(|&r| first_row + (r as u64) < zone_end);
            let (here, after) = rest.split_at(count);
            rows.clear();
            rows.extend(
                here.iter()
                    .map(|&r| (first_row + r as u64 - zone.first_row) as u32),
            );
            let page = self.bm.fix(zone.page)?;
            let done = !encode::is_long(&page)
                && encode::decode_rows_into(&page, dt, &rows, &mut out)
                    .map_err(|what| self.corrupt(page.page(), what))?;
            if !done {
                // Text and the like: the page's span of rows, then the selected.
                let (lo, hi) = (rows[0] as usize, rows[rows.len() - 1] as usize + 1);
                let mut span = Vector::new(dt, hi - lo);
                self.decode_page(col, &page, lo, hi, &mut span)?;
                let picked: Vec<u32> = rows.iter().map(|&r| r - lo as u32).collect();
                out.append(&span.take(&picked));
            }
            rest = after;
        }
        Ok(out)
    }

    /// The pages of column `col` holding rows `rows` (ascending), each once: what
    /// [`Self::fetch_rows`] of those rows fixes. Rows past the end are ignored.
    pub fn row_pages(&self, col: usize, rows: &[u64]) -> Vec<PageId> {
        let zones = self.zones(col);
        let mut out = Vec::new();
        let mut current: Option<usize> = None;
        for &r in rows.iter().filter(|&&r| r < self.meta.row_count) {
            let inside = current.is_some_and(|z| {
                let zone = &zones[z];
                r >= zone.first_row && r < zone.first_row + zone.row_count as u64
            });
            if !inside {
                let z = self.zone_of(col, r);
                out.push(zones[z].page);
                current = Some(z);
            }
        }
        out
    }

    /// Fetches the given rows of column `col` in the order given; each row costs at
    /// most one page (consecutive rows on one page share it).
    pub fn fetch_rows(&self, col: usize, row_ids: &[u64]) -> StorageResult<Vector> {
        let dt = self.check_col(col)?;
        let mut out = Vector::new(dt, row_ids.len());
        let zones = self.zones(col);
        let mut current: Option<(usize, PageGuard)> = None;
        for &rid in row_ids {
            if rid >= self.meta.row_count {
                return Err(StorageError::Invalid(format!(
                    "row id {rid} out of range for table {} ({} rows)",
                    self.name, self.meta.row_count
                )));
            }
            let z = match &current {
                Some((z, _))
                    if {
                        let zone = &zones[*z];
                        rid >= zone.first_row && rid < zone.first_row + zone.row_count as u64
                    } =>
                {
                    *z
                }
                _ => {
                    let z = self.zone_of(col, rid);
                    current = Some((z, self.bm.fix(zones[z].page)?));
                    z
                }
            };
            let from = (rid - zones[z].first_row) as usize;
            let page = &current.as_ref().unwrap().1;
            self.decode_page(col, page, from, from + 1, &mut out)?;
        }
        Ok(out)
    }
}
