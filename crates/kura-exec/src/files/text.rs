//! Text files (CSV, JSON) as a table read while the statement runs: when it is planned, one
//! pass finds where each row group's records are (`split`); each piece is then read with one
//! read (through the worker's io_uring when the out-of-order scan reads it ahead, else one
//! positioned read), decoded by an Arrow reader through the converter, and kept only while
//! the scan works on it — a file larger than memory streams through.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use kura_common::Vector;

use super::cache::{pieces_in_flight, stitch, DecodeCache, ReadAhead};
use super::split::{split, Piece, Syntax};
use super::{bad, io_error};
use crate::arrow::arrow_to_vector;
use crate::error::{ExecError, ExecResult};
use crate::runtime::AlignedBuf;
use crate::source::{ColumnStatistics, FileRead, SourceColumn, TableSource, Zone};

/// Records per piece (the unit of parallel scanning).
pub const GROUP_ROWS: usize = 65_536;

/// kura's page size, the unit the planner's scan cost counts in.
const COST_PAGE_BYTES: u64 = 64 * 1024;

/// Decodes one piece's bytes (of the file named) into the table's columns: those marked
/// wanted at least (others may be left empty).
pub(crate) type PieceDecoder =
    Box<dyn Fn(&Path, &Piece, &[u8], &[bool]) -> ExecResult<Vec<Vector>> + Send + Sync>;

/// A piece's columns; `None` for one not decoded (no scan wanted it then).
type Decoded = Vec<Option<Arc<Vector>>>;

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
    /// The files, open for as long as the table lives.
    files: Vec<File>,
    pieces: Vec<Piece>,
    /// The pieces' row ranges.
    groups: Vec<Range<u64>>,
    rows: u64,
    bytes: u64,
    decode: PieceDecoder,
    /// The columns the statement's scans read (see `TableSource::project`).
    wanted: Mutex<Vec<bool>>,
    cache: DecodeCache<usize, Decoded>,
    /// Pieces read ahead by the scan (io_uring), by index, until decoded.
    supplied: ReadAhead<usize>,
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
        let files = paths
            .iter()
            .map(|p| File::open(p).map_err(|e| io_error(p, e)))
            .collect::<ExecResult<Vec<_>>>()?;
        Ok(TextTable {
            name,
            wanted: Mutex::new(vec![false; columns.len()]),
            columns,
            paths: paths.to_vec(),
            files,
            pieces,
            groups,
            rows,
            bytes,
            decode,
            cache: DecodeCache::new(pieces_in_flight()),
            supplied: ReadAhead::new(),
        })
    }

    /// The columns of piece `p` the scans want, decoded once while they stay in the cache.
    fn piece(&self, p: usize) -> ExecResult<Arc<Decoded>> {
        self.cache.get(p, || {
            let mut wanted = self
                .wanted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if !wanted.contains(&true) {
                // Read without a scan saying what it reads: everything.
                wanted.fill(true);
            }
            self.decode_piece(p, &wanted)
        })
    }

    /// Column `col` of piece `p`: from the cache, or — a column no scan announced when the
    /// piece was decoded — decoded alone.
    fn column(&self, p: usize, col: usize) -> ExecResult<Arc<Vector>> {
        if let Some(v) = &self.piece(p)?[col] {
            return Ok(v.clone());
        }
        let mut only = vec![false; self.columns.len()];
        only[col] = true;
        self.decode_piece(p, &only)?[col]
            .clone()
            .ok_or_else(|| ExecError::Internal(format!("{} column {col} not decoded", self.name)))
    }

    fn decode_piece(&self, p: usize, wanted: &[bool]) -> ExecResult<Decoded> {
        let piece = &self.pieces[p];
        let path = &self.paths[piece.file];
        let read_ahead = self.supplied.take(&p);
        let data = match read_ahead {
            Some(buf) => (self.decode)(path, piece, &buf, wanted)?,
            None => {
                let mut buf = vec![0u8; (piece.bytes.end - piece.bytes.start) as usize];
                self.files[piece.file]
                    .read_exact_at(&mut buf, piece.bytes.start)
                    .map_err(|e| io_error(path, e))?;
                (self.decode)(path, piece, &buf, wanted)?
            }
        };
        let expected = (piece.rows.end - piece.rows.start) as usize;
        let mut out = Vec::with_capacity(data.len());
        for (v, &w) in data.into_iter().zip(wanted) {
            if w && v.len() != expected {
                return Err(bad(
                    path,
                    format!(
                        "{} records decoded from byte {} where {expected} were found \
                         (did the file change while it was read?)",
                        v.len(),
                        piece.bytes.start
                    ),
                ));
            }
            out.push((v.len() == expected).then(|| Arc::new(v)));
        }
        Ok(out)
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
    fn decodes_whole_groups(&self) -> bool {
        true
    }
    fn file_reads(&self, _col: usize, rows: Range<u64>) -> Vec<FileRead> {
        let first = self.groups.partition_point(|g| g.end <= rows.start);
        let mut reads = Vec::new();
        for p in first..self.pieces.len() {
            let piece = &self.pieces[p];
            if piece.rows.start >= rows.end {
                break;
            }
            if self.supplied.holds(&p) || self.cache.contains(&p) {
                continue;
            }
            reads.push(FileRead {
                fd: self.files[piece.file].as_raw_fd(),
                offset: piece.bytes.start,
                len: (piece.bytes.end - piece.bytes.start) as usize,
                key: (p, 0),
            });
        }
        reads
    }
    fn supply(&self, read: &FileRead, data: AlignedBuf) {
        self.supplied.put(read.key.0, data);
    }
    fn discard(&self, read: &FileRead) {
        self.supplied.take(&read.key.0);
    }
    fn project(&self, columns: &[usize]) {
        let mut wanted = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
        for &c in columns {
            if let Some(w) = wanted.get_mut(c) {
                *w = true;
            }
        }
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
            |g, offset, len| Ok(self.column(g, col)?.slice(offset, len)),
        )
    }
}
