//! Parquet files as a table source (`read_parquet`): one or several files of the same
//! columns read row group by row group, each column chunk decoded once (only the columns a
//! query reads) through the Arrow converter, and each row group's statistics a zone map, so
//! a filter's constant skips the row groups that cannot match.

use std::fs::File;
use std::ops::Range;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use kura_common::{DataType, Vector};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Encoding, Type as PhysicalType};

use super::cache::{pieces_in_flight, stitch, DecodeCache, ReadAhead};
use super::prefetched::Prefetched;
use super::{bad, io_error};
use crate::arrow::{arrow_to_vector, kura_type, parquet_interval};
use crate::error::{ExecError, ExecResult};
use crate::runtime::AlignedBuf;
use crate::source::{ColumnStatistics, FileRead, SourceColumn, TableSource, Zone};

/// kura's page size, the unit the planner's scan cost counts in.
const COST_PAGE_BYTES: u64 = 64 * 1024;

/// One file's footer, and where each of the table's columns is in it.
struct ParquetFile {
    path: PathBuf,
    /// Open for as long as the table lives: column chunks are read from it.
    file: Arc<File>,
    meta: ArrowReaderMetadata,
    /// With INTERVAL columns: the footer with them read as months alone (`meta` reads
    /// their days and milliseconds; Arrow has no type of all three from Parquet).
    months: Option<ArrowReaderMetadata>,
    /// Root field index in this file of the table's column `i`.
    field: Vec<usize>,
}

/// One row group: its file, its index there, and the table's rows it holds.
struct Group {
    file: usize,
    index: usize,
    rows: Range<u64>,
}

/// Parquet files read as one table.
pub struct ParquetTable {
    columns: Vec<SourceColumn>,
    files: Vec<ParquetFile>,
    groups: Vec<Group>,
    rows: u64,
    /// Per column, a zone per row group (empty when some row group lacks statistics).
    zones: Vec<Vec<Zone>>,
    /// Per column, its compressed bytes over all files.
    bytes: Vec<u64>,
    /// Decoded column chunks by (row group, column).
    cache: DecodeCache<(usize, usize), ArrayRef>,
    /// The row groups' row ranges.
    ranges: Vec<Range<u64>>,
    /// Column chunks read ahead by the scan (io_uring), by (row group, column), until decoded.
    supplied: ReadAhead<(usize, usize)>,
}

impl std::fmt::Debug for ParquetTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetTable")
            .field(
                "files",
                &self.files.iter().map(|x| &x.path).collect::<Vec<_>>(),
            )
            .field("rows", &self.rows)
            .finish()
    }
}

/// `e` with the file named, keeping its SQLSTATE (a type kura lacks stays 0A000).
fn in_file(path: &Path, e: ExecError) -> ExecError {
    match e {
        ExecError::Unsupported(m) => ExecError::Unsupported(format!("{}: {m}", path.display())),
        other => bad(path, other),
    }
}

impl ParquetTable {
    /// Opens `paths` (at least one): their footers are read now; the first file's columns
    /// are the table's, and every other file must have columns of those names and types.
    pub fn open(paths: &[PathBuf]) -> ExecResult<ParquetTable> {
        let Some(first) = paths.first() else {
            return Err(ExecError::Internal("read_parquet of no file".into()));
        };
        let mut columns: Vec<SourceColumn> = Vec::new();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let file = File::open(path).map_err(|e| io_error(path, e))?;
            // Plain Arrow types (no dictionary or view types from an embedded Arrow schema):
            // the converter takes every layout, and statistics match the field types.
            let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
            let meta = ArrowReaderMetadata::load(&file, options.clone())
                .map_err(|e| bad(path, format!("not a Parquet file ({e})")))?;
            let meta = reader_schema(meta, options.clone()).map_err(|e| bad(path, e))?;
            let months = interval_months(&meta, options).map_err(|e| bad(path, e))?;
            let schema = meta.schema().clone();
            if path == first {
                for f in schema.fields() {
                    columns.push(SourceColumn {
                        name: f.name().clone(),
                        data_type: kura_type(f.data_type(), f.name())
                            .map_err(|e| in_file(path, e))?,
                        nullable: f.is_nullable(),
                    });
                }
            }
            let mut field = Vec::with_capacity(columns.len());
            for c in &columns {
                let (i, f) = schema.column_with_name(&c.name).ok_or_else(|| {
                    bad(
                        path,
                        format!(
                            "has no column {:?} (the first file, {}, has)",
                            c.name,
                            first.display()
                        ),
                    )
                })?;
                let t = kura_type(f.data_type(), f.name()).map_err(|e| in_file(path, e))?;
                if t != c.data_type {
                    return Err(bad(
                        path,
                        format!(
                            "column {:?} is {t} here but {} in {}",
                            c.name,
                            c.data_type,
                            first.display()
                        ),
                    ));
                }
                field.push(i);
            }
            files.push(ParquetFile {
                path: path.clone(),
                file: Arc::new(file),
                meta,
                months,
                field,
            });
        }
        let mut groups = Vec::new();
        let mut rows = 0u64;
        for (fi, f) in files.iter().enumerate() {
            for (gi, g) in f.meta.metadata().row_groups().iter().enumerate() {
                let n = g.num_rows().max(0) as u64;
                if n > 0 {
                    groups.push(Group {
                        file: fi,
                        index: gi,
                        rows: rows..rows + n,
                    });
                    rows += n;
                }
            }
        }
        let bytes = (0..columns.len())
            .map(|c| {
                files
                    .iter()
                    .flat_map(|f| {
                        let leaf = leaf_of(f, c);
                        f.meta.metadata().row_groups().iter().map(move |g| {
                            leaf.map_or(0, |l| g.column(l).compressed_size().max(0) as u64)
                        })
                    })
                    .sum()
            })
            .collect();
        let zones = (0..columns.len())
            .map(|c| zones_of(&files, &groups, &columns[c]).unwrap_or_default())
            .collect();
        Ok(ParquetTable {
            cache: DecodeCache::new(columns.len().max(1) * pieces_in_flight()),
            ranges: groups.iter().map(|g| g.rows.clone()).collect(),
            supplied: ReadAhead::new(),
            columns,
            files,
            groups,
            rows,
            zones,
            bytes,
        })
    }

    /// The files read, in order.
    pub fn paths(&self) -> Vec<&Path> {
        self.files.iter().map(|f| f.path.as_path()).collect()
    }

    /// Column `col` of row group `g` as Arrow decoded it, once while it stays in the cache:
    /// the scan's morsels convert their slices of it (one copy, into kura's vectors).
    fn chunk(&self, g: usize, col: usize) -> ExecResult<Arc<ArrayRef>> {
        self.cache.get((g, col), || self.decode(g, col))
    }

    fn decode(&self, g: usize, col: usize) -> ExecResult<ArrayRef> {
        let f = &self.files[self.groups[g].file];
        let rest = self.read(g, col, &f.meta)?;
        match (&f.months, self.columns[col].data_type) {
            (Some(months), DataType::Interval) => {
                let months = self.read(g, col, months)?;
                parquet_interval::from_parquet(&months, &rest, &self.columns[col].name)
                    .map_err(|e| in_file(&f.path, e))
            }
            _ => Ok(rest),
        }
    }

    /// Column `col` of row group `g` read through `meta` (one of its file's footers).
    fn read(&self, g: usize, col: usize, meta: &ArrowReaderMetadata) -> ExecResult<ArrayRef> {
        let group = &self.groups[g];
        let f = &self.files[group.file];
        let rows = (group.rows.end - group.rows.start) as usize;
        let mask = ProjectionMask::roots(f.meta.parquet_schema(), [f.field[col]]);
        let read_ahead = self.supplied.take(&(g, col));
        let chunk = match (read_ahead, leaf_of(f, col)) {
            (Some(data), Some(leaf)) => {
                let (start, _) = f
                    .meta
                    .metadata()
                    .row_group(group.index)
                    .column(leaf)
                    .byte_range();
                Prefetched::new(f.file.clone(), start, data)
            }
            _ => Prefetched::unread(f.file.clone()),
        };
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![group.index])
            .with_batch_size(rows.clamp(1, 1 << 20))
            .build()
            .map_err(|e| bad(&f.path, e))?;
        let mut arrays = Vec::new();
        for rb in reader {
            arrays.push(rb.map_err(|e| bad(&f.path, e))?.column(0).clone());
        }
        let array = match arrays.len() {
            1 => arrays.pop().expect("one array"),
            _ => {
                let parts: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&parts).map_err(|e| bad(&f.path, e))?
            }
        };
        if array.len() != rows {
            return Err(bad(
                &f.path,
                format!(
                    "row group {} gave {} rows of {rows}",
                    group.index,
                    array.len()
                ),
            ));
        }
        Ok(array)
    }
}

/// The reader's schema, asking Arrow for kura's layouts where the file allows: decimals
/// stored as 64-bit integers read as Decimal64 (kura's own layout for precision ≤ 18)
/// instead of widened to Decimal128 and narrowed back, and text that every row group stores
/// dictionary-encoded read as a dictionary array (keys into the distinct values, expanded
/// once into kura's vectors) instead of expanded by the reader and copied again.
fn reader_schema(
    meta: ArrowReaderMetadata,
    options: ArrowReaderOptions,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    let parquet = meta.parquet_schema();
    let row_groups = meta.metadata().row_groups();
    let mut changed = false;
    let fields: Vec<arrow_schema::FieldRef> = meta
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(root, f)| {
            let leaves: Vec<usize> = (0..parquet.num_columns())
                .filter(|&l| parquet.get_column_root_idx(l) == root)
                .collect();
            let flat = leaves.len() == 1;
            let int64 = flat && parquet.column(leaves[0]).physical_type() == PhysicalType::INT64;
            let narrowed = match f.data_type() {
                arrow_schema::DataType::Decimal128(p, s) if int64 && *p <= 18 => {
                    Some(arrow_schema::DataType::Decimal64(*p, *s))
                }
                arrow_schema::DataType::Utf8
                    if flat
                        && !row_groups.is_empty()
                        && row_groups
                            .iter()
                            .all(|g| all_dictionary_encoded(g.column(leaves[0]))) =>
                {
                    Some(arrow_schema::DataType::Dictionary(
                        Box::new(arrow_schema::DataType::Int32),
                        Box::new(arrow_schema::DataType::Utf8),
                    ))
                }
                _ => None,
            };
            match narrowed {
                Some(t) => {
                    changed = true;
                    Arc::new(f.as_ref().clone().with_data_type(t))
                }
                None => f.clone(),
            }
        })
        .collect();
    if !changed {
        return Ok(meta);
    }
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        meta.schema().metadata().clone(),
    ));
    ArrowReaderMetadata::try_new(meta.metadata().clone(), options.with_schema(schema))
}

/// Whether every data page of a column chunk is dictionary-encoded (a chunk whose
/// dictionary overflowed falls back to plain pages; read as a dictionary, those would be
/// hashed into one again).
fn all_dictionary_encoded(c: &parquet::file::metadata::ColumnChunkMetaData) -> bool {
    let dictionary =
        |e: &Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    if c.dictionary_page_offset().is_none() {
        return false;
    }
    if let Some(mask) = c.page_encoding_stats_mask() {
        return mask.is_only(Encoding::PLAIN_DICTIONARY) || mask.is_only(Encoding::RLE_DICTIONARY);
    }
    if let Some(stats) = c.page_encoding_stats() {
        return stats
            .iter()
            .filter(|s| s.page_type != parquet::basic::PageType::DICTIONARY_PAGE)
            .all(|s| dictionary(&s.encoding));
    }
    // No page statistics (DuckDB writes none): the chunk's encodings must all be
    // dictionary ones or the level encodings.
    c.encodings().all(|e| dictionary(&e) || e == Encoding::RLE)
}

/// With INTERVAL columns in `meta`'s schema (a day-time interval each, as Arrow reads
/// them): the footer that reads them as year-month intervals, their months.
fn interval_months(
    meta: &ArrowReaderMetadata,
    options: ArrowReaderOptions,
) -> parquet::errors::Result<Option<ArrowReaderMetadata>> {
    let months = arrow_schema::DataType::Interval(arrow_schema::IntervalUnit::YearMonth);
    if !meta
        .schema()
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), arrow_schema::DataType::Interval(_)))
    {
        return Ok(None);
    }
    let fields: Vec<arrow_schema::FieldRef> = meta
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            arrow_schema::DataType::Interval(_) => {
                Arc::new(f.as_ref().clone().with_data_type(months.clone()))
            }
            _ => f.clone(),
        })
        .collect();
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        meta.schema().metadata().clone(),
    ));
    ArrowReaderMetadata::try_new(meta.metadata().clone(), options.with_schema(schema)).map(Some)
}

/// The leaf (parquet column) index of the table's column `c` in file `f`, when the column
/// is a flat leaf (all kura reads).
fn leaf_of(f: &ParquetFile, c: usize) -> Option<usize> {
    let schema = f.meta.parquet_schema();
    let root = f.field[c];
    (0..schema.num_columns()).find(|&l| schema.get_column_root_idx(l) == root)
}

/// A zone per row group of `column` from the files' statistics, or `None` when some row
/// group has none to give (then no row group is skipped by this column).
fn zones_of(files: &[ParquetFile], groups: &[Group], column: &SourceColumn) -> Option<Vec<Zone>> {
    // NaN is left out of Parquet's float statistics but compares above every number in
    // kura (as in PostgreSQL): a double's min/max would wrongly skip it. INTERVAL has no
    // order in Parquet, and statistics read through Arrow would lack the months.
    if matches!(column.data_type, DataType::Double | DataType::Interval) {
        return None;
    }
    let mut zones = Vec::with_capacity(groups.len());
    for f in files {
        let meta = f.meta.metadata();
        let conv =
            StatisticsConverter::try_new(&column.name, f.meta.schema(), f.meta.parquet_schema())
                .ok()?;
        let mins = conv.row_group_mins(meta.row_groups()).ok()?;
        let maxes = conv.row_group_maxes(meta.row_groups()).ok()?;
        let nulls = conv.row_group_null_counts(meta.row_groups()).ok()?;
        let mins = arrow_to_vector(mins.as_ref(), column.data_type, &column.name).ok()?;
        let maxes = arrow_to_vector(maxes.as_ref(), column.data_type, &column.name).ok()?;
        for (gi, g) in meta.row_groups().iter().enumerate() {
            let n = g.num_rows().max(0) as u64;
            if n == 0 {
                continue;
            }
            let (min, max) = (mins.get_value(gi), maxes.get_value(gi));
            let null_count = if nulls.is_null(gi) {
                0
            } else {
                nulls.value(gi)
            };
            if (min.is_null() || max.is_null()) && null_count < n {
                // No statistics for a row group with values: nothing is known.
                return None;
            }
            zones.push(Zone {
                first_row: 0,
                row_count: n,
                min,
                max,
                null_count,
            });
        }
    }
    if zones.len() != groups.len() {
        return None;
    }
    for (z, g) in zones.iter_mut().zip(groups) {
        z.first_row = g.rows.start;
    }
    Some(zones)
}

impl TableSource for ParquetTable {
    fn name(&self) -> &str {
        "read_parquet"
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.rows
    }
    fn column_stats(&self, _col: usize) -> Option<ColumnStatistics> {
        // Parquet keeps no distinct count, and a guess would mislead the join and grouping
        // estimates more than none; the zones still give filters their selectivity.
        None
    }
    fn zones(&self, col: usize) -> Vec<Zone> {
        self.zones.get(col).cloned().unwrap_or_default()
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        self.groups.iter().map(|g| g.rows.clone()).collect()
    }
    fn decodes_whole_groups(&self) -> bool {
        true
    }
    fn file_reads(&self, col: usize, rows: Range<u64>) -> Vec<FileRead> {
        let first = self.groups.partition_point(|g| g.rows.end <= rows.start);
        let mut reads = Vec::new();
        for (g, group) in self.groups.iter().enumerate().skip(first) {
            if group.rows.start >= rows.end {
                break;
            }
            let f = &self.files[group.file];
            let Some(leaf) = leaf_of(f, col) else {
                continue;
            };
            if self.supplied.holds(&(g, col)) || self.cache.contains(&(g, col)) {
                continue;
            }
            let (offset, len) = f
                .meta
                .metadata()
                .row_group(group.index)
                .column(leaf)
                .byte_range();
            reads.push(FileRead {
                fd: f.file.as_raw_fd(),
                offset,
                len: len as usize,
                key: (g, col),
            });
        }
        reads
    }
    fn supply(&self, read: &FileRead, data: AlignedBuf) {
        self.supplied.put(read.key, data);
    }
    fn discard(&self, read: &FileRead) {
        self.supplied.take(&read.key);
    }
    fn page_count(&self, col: usize) -> usize {
        let bytes = self.bytes.get(col).copied().unwrap_or(0);
        bytes.div_ceil(COST_PAGE_BYTES).max(1) as usize
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        let column = self
            .columns
            .get(col)
            .ok_or_else(|| ExecError::Internal(format!("read_parquet column {col}")))?;
        stitch(
            &self.ranges,
            first_row,
            len,
            || Vector::new(column.data_type, 0),
            |g, offset, len| {
                let slice = self.chunk(g, col)?.slice(offset, len);
                arrow_to_vector(slice.as_ref(), column.data_type, &column.name)
            },
        )
    }
}
