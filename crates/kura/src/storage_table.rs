//! A stored table as the executor scans it: its columns, zones, pages and indexes.

use std::ops::Range;
use std::sync::Arc;

use kura_common::Vector;
use kura_exec::{
    ColumnStatistics, ExecError, ExecResult, IndexSource, SourceColumn, TableSource, Zone,
};
use kura_storage::{BufferManager, Catalog, Table};

/// A stored table as a scan source.
struct StorageTable {
    table: Arc<Table>,
    columns: Vec<SourceColumn>,
    /// Its indexes, each with whether it is stale (listed, not read).
    indexes: Vec<(Arc<IndexSource>, bool)>,
}

impl TableSource for StorageTable {
    fn name(&self) -> &str {
        self.table.name()
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.table.row_count()
    }
    fn column_stats(&self, col: usize) -> Option<ColumnStatistics> {
        let s = self.table.column_stats(col);
        Some(ColumnStatistics {
            min: s.min.clone(),
            max: s.max.clone(),
            null_count: s.null_count,
            distinct: s.distinct,
        })
    }
    fn zones(&self, col: usize) -> Vec<Zone> {
        self.table
            .zones(col)
            .iter()
            .map(|z| Zone {
                first_row: z.first_row,
                row_count: z.row_count as u64,
                min: z.min.clone(),
                max: z.max.clone(),
                null_count: z.null_count as u64,
            })
            .collect()
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        self.table.row_groups()
    }
    fn ascending(&self, col: usize) -> bool {
        self.table.ascending(col)
    }
    fn unique(&self, col: usize) -> bool {
        self.table.unique(col)
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        self.table
            .read_range(col, first_row, len)
            .map_err(ExecError::from)
    }
    fn read_selected(
        &self,
        col: usize,
        first_row: u64,
        len: usize,
        sel: &[u32],
    ) -> ExecResult<Vector> {
        self.table
            .read_selected(col, first_row, len, sel)
            .map_err(ExecError::from)
    }
    fn buffer_manager(&self) -> Option<Arc<BufferManager>> {
        Some(self.table.buffer().clone())
    }
    fn pages(&self, col: usize, rows: Range<u64>) -> Vec<kura_storage::PageId> {
        let end = rows.end.min(self.table.row_count());
        if col >= self.columns.len() || rows.start >= end {
            return Vec::new();
        }
        let zones = self.table.zones(col);
        let first = self.table.zone_of(col, rows.start);
        zones[first..]
            .iter()
            .take_while(|z| z.first_row < end)
            .map(|z| z.page)
            .collect()
    }
    fn row_pages(&self, col: usize, rows: &[u64]) -> Vec<kura_storage::PageId> {
        if col >= self.columns.len() {
            return Vec::new();
        }
        self.table.row_pages(col, rows)
    }
    fn page_count(&self, col: usize) -> usize {
        if col < self.columns.len() {
            self.table.zones(col).len().max(1)
        } else {
            1
        }
    }
    fn indexes(&self) -> Vec<Arc<IndexSource>> {
        self.indexes
            .iter()
            .filter(|(_, stale)| !stale)
            .map(|(ix, _)| ix.clone())
            .collect()
    }
    fn listed_indexes(&self) -> Vec<Arc<IndexSource>> {
        self.indexes.iter().map(|(ix, _)| ix.clone()).collect()
    }
    fn stored_pages(&self) -> (u64, u64) {
        (
            self.table.stored_pages(),
            self.table.buffer().page_size() as u64,
        )
    }
    fn fetch_rows(&self, col: usize, row_ids: &[u64]) -> ExecResult<Vector> {
        self.table.fetch_rows(col, row_ids).map_err(ExecError::from)
    }
}

/// A table's columns as a scan source describes them.
pub(crate) fn source_columns(schema: &kura_storage::Schema) -> Vec<SourceColumn> {
    schema
        .columns
        .iter()
        .map(|c| SourceColumn {
            name: c.name.clone(),
            data_type: c.data_type,
            nullable: c.nullable,
        })
        .collect()
}

/// Table `name` of `catalog` as a scan source, with its indexes.
pub(crate) fn table_source(catalog: &Catalog, name: &str) -> Option<Arc<dyn TableSource>> {
    let table = catalog.table(name)?;
    let columns = source_columns(table.schema());
    let indexes = catalog
        .indexes_on(table.name())
        .into_iter()
        .filter_map(|ix| {
            let cols = ix
                .columns
                .iter()
                .map(|c| table.schema().index_of(c))
                .collect::<Option<Vec<usize>>>()?;
            let include = ix
                .include
                .iter()
                .map(|c| table.schema().index_of(c))
                .collect::<Option<Vec<usize>>>()?;
            let source = IndexSource::new(
                &ix.name,
                cols,
                ix.unique,
                ix.tree.clone(),
                table.buffer().clone(),
            )
            .with_include(include);
            Some((Arc::new(source), ix.stale))
        })
        .collect();
    Some(Arc::new(StorageTable {
        table,
        columns,
        indexes,
    }))
}
