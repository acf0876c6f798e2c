//! Text files (CSV, JSON) as a table read while the statement runs: when it is planned, one
//! pass finds where each row group's records are (`split`); each piece is then read with one
//! positioned read, decoded by an Arrow reader through the converter, and kept only while
//! the scan works on it — a file larger than memory streams through.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use kura_common::Vector;

use super::cache::{pieces_in_flight, stitch, DecodeCache};
use super::split::{split, Piece, Syntax};
use super::{bad, io_error};
use crate::arrow::arrow_to_vector;
use crate::error::{ExecError, ExecResult};
use crate::source::{ColumnStatistics, SourceColumn, TableSource, Zone};

/// Records per piece (the unit of parallel scanning).
pub const GROUP_ROWS: usize = 65_536;

/// kura's page size, the unit the planner's scan cost counts in.
const COST_PAGE_BYTES: u64 = 64 * 1024;

/// Decodes one piece's bytes (of the file named) into the table's columns.
pub(crate) type PieceDecoder =
    Box<dyn Fn(&Path, &Piece, &[u8]) -> ExecResult<Vec<Vector>> + Send + Sync>;

/// Arrow batches (an Arrow reader's) as `columns`, through the converter.
pub(crate) fn from_batches(
    path: &Path,
    columns: &[SourceColumn],
    batches: Vec<RecordBatch>,
) -> ExecResult<Vec<Vector>> {
    let mut data: Vec<Vector> = columns
        .iter()
        .map(|c| Vector::new(c.data_type, 0))
        .collect();
    for rb in batches {
        for (i, c) in columns.iter().enumerate() {
            let v = arrow_to_vector(rb.column(i).as_ref(), c.data_type, &c.name)
                .map_err(|e| bad(path, e))?;
            data[i].append(&v);
        }
    }
    Ok(data)
}

/// Text files read as one table, piece by piece.
pub struct TextTable {
    /// The function that reads them (`read_csv`), the scan's name.
    name: &'static str,
    pub(crate) columns: Vec<SourceColumn>,
    paths: Vec<PathBuf>,
    pieces: Vec<Piece>,
    /// The pieces' row ranges.
    groups: Vec<Range<u64>>,
    rows: u64,
    bytes: u64,
    decode: PieceDecoder,
    cache: DecodeCache<usize, Vec<Arc<Vector>>>,
}

impl std::fmt::Debug for TextTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTable")
            .field("name", &self.name)
            .field("paths", &self.paths)
            .field("rows", &self.rows)
            .finish()
    }
}

impl TextTable {
    /// The table of `paths` written in `syntax`, with `columns` that `decode` gives.
    pub(crate) fn new(
        name: &'static str,
        columns: Vec<SourceColumn>,
        paths: &[PathBuf],
        syntax: Syntax,
        decode: PieceDecoder,
    ) -> ExecResult<TextTable> {
        let pieces = split(paths, syntax, GROUP_ROWS)?;
        let groups: Vec<Range<u64>> = pieces.iter().map(|p| p.rows.clone()).collect();
        let rows = groups.last().map_or(0, |r| r.end);
        let bytes = pieces.iter().map(|p| p.bytes.end - p.bytes.start).sum();
        Ok(TextTable {
            name,
            columns,
            paths: paths.to_vec(),
            pieces,
            groups,
            rows,
            bytes,
            decode,
            cache: DecodeCache::new(pieces_in_flight()),
        })
    }

    /// The columns of piece `p`, decoded once while they stay in the cache.
    fn piece(&self, p: usize) -> ExecResult<Arc<Vec<Arc<Vector>>>> {
        self.cache.get(p, || self.decode_piece(&self.pieces[p]))
    }

    fn decode_piece(&self, piece: &Piece) -> ExecResult<Vec<Arc<Vector>>> {
        let path = &self.paths[piece.file];
        let mut buf = vec![0u8; (piece.bytes.end - piece.bytes.start) as usize];
        File::open(path)
            .and_then(|f| f.read_exact_at(&mut buf, piece.bytes.start))
            .map_err(|e| io_error(path, e))?;
        let data = (self.decode)(path, piece, &buf)?;
        let expected = piece.rows.end - piece.rows.start;
        let decoded = data.first().map_or(0, |v| v.len() as u64);
        if decoded != expected {
            return Err(bad(
                path,
                format!(
                    "{decoded} records decoded from byte {} where {expected} were found \
                     (did the file change while it was read?)",
                    piece.bytes.start
                ),
            ));
        }
        Ok(data.into_iter().map(Arc::new).collect())
    }
}

impl TableSource for TextTable {
    fn name(&self) -> &str {
        self.name
    }
    fn columns(&self) -> &[SourceColumn] {
        &self.columns
    }
    fn row_count(&self) -> u64 {
        self.rows
    }
    fn column_stats(&self, _col: usize) -> Option<ColumnStatistics> {
        None
    }
    fn zones(&self, _col: usize) -> Vec<Zone> {
        Vec::new()
    }
    fn row_groups(&self) -> Vec<Range<u64>> {
        self.groups.clone()
    }
    /// Every column costs the whole text: a record is parsed to reach any of its fields.
    fn page_count(&self, _col: usize) -> usize {
        self.bytes.div_ceil(COST_PAGE_BYTES).max(1) as usize
    }
    fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
        let column = self
            .columns
            .get(col)
            .ok_or_else(|| ExecError::Internal(format!("{} column {col}", self.name)))?;
        stitch(
            &self.groups,
            first_row,
            len,
            || Vector::new(column.data_type, 0),
            |g| Ok(self.piece(g)?[col].clone()),
        )
    }
}
