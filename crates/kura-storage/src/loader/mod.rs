//! The bulk loader: delimited text (CSV, dbgen `.tbl`) parsed in parallel chunks
//! and appended in order inside a write transaction, so a bad row aborts the whole
//! load with `file:line:column: what` and nothing of it is committed.

pub mod parse;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use kura_common::{Batch, Vector};

use crate::error::{StorageError, StorageResult};
use crate::schema::Schema;
use crate::storage::WriteTxn;
pub use parse::TextFormat;

/// Bytes per parse chunk: large enough to amortise hand-offs, small enough that
/// a few in flight stay cheap.
pub const CHUNK_BYTES: usize = 8 << 20;

/// A piece of input: whole lines, and the 1-based number of its first line.
pub struct Chunk {
    pub data: Vec<u8>,
    pub first_line: u64,
}

/// Progress callback: bytes consumed so far.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// How long one CSV record with quoted line breaks may grow while the chunker
/// looks for its end; past it (an unbalanced quote, most likely) chunks are
/// cut at a line end again and the parser reports the unterminated field.
const MAX_RECORD_BYTES: usize = 256 << 20;

/// Cuts a byte stream into chunks of whole lines (whole records: with quotes,
/// a line break inside a quoted field does not end one), numbering lines as
/// it goes.
pub struct LineChunker<R: Read> {
    reader: R,
    carry: Vec<u8>,
    next_line: u64,
    eof: bool,
    chunk_bytes: usize,
    /// The quote and escape characters of quoted fields (CSV); `None`: no field is quoted.
    quotes: Option<(u8, u8)>,
}

impl<R: Read> LineChunker<R> {
    pub fn new(reader: R) -> Self {
        LineChunker {
            reader,
            carry: Vec::new(),
            next_line: 1,
            eof: false,
            chunk_bytes: CHUNK_BYTES,
            quotes: None,
        }
    }

    /// Chunks for text in `fmt`: when its fields may be quoted (CSV), they end only where a
    /// record does.
    pub fn for_format(mut self, fmt: &TextFormat) -> Self {
        self.quotes = fmt.quoted.then(|| (fmt.quote, fmt.escape_char()));
        self
    }

    /// The next chunk, `None` at the end of input.
    pub fn next_chunk(&mut self) -> std::io::Result<Option<Chunk>> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        while !self.eof && buf.len() < self.chunk_bytes {
            let old = buf.len();
            buf.resize(old + self.chunk_bytes.max(1 << 16), 0);
            let n = self.reader.read(&mut buf[old..])?;
            buf.truncate(old + n);
            if n == 0 {
                self.eof = true;
            }
        }
        if !self.eof {
            // Keep the partial last line for the next chunk.
            let cut = match self.quotes {
                Some((quote, escape)) if self.chunk_bytes <= MAX_RECORD_BYTES => {
                    parse::last_record_end(&buf, quote, escape)
                }
                _ => memchr::memrchr(b'\n', &buf),
            };
            match cut {
                Some(p) => self.carry = buf.split_off(p + 1),
                None => {
                    // One line longer than a chunk: keep reading into it.
                    self.carry = buf;
                    self.chunk_bytes *= 2;
                    return self.next_chunk();
                }
            }
        }
        let lines = memchr::memchr_iter(b'\n', &buf).count() as u64;
        let first_line = self.next_line;
        self.next_line += lines + u64::from(!buf.ends_with(b"\n") && !buf.is_empty());
        Ok(Some(Chunk {
            data: buf,
            first_line,
        }))
    }
}

/// Loads chunks produced by `source` into `table`, parsing on `threads` threads.
/// `source_name` names the input in error messages. Returns rows loaded.
pub fn load_chunks(
    txn: &mut WriteTxn,
    table: &str,
    source_name: &str,
    source: impl FnMut() -> StorageResult<Option<Chunk>> + Send,
    fmt: &TextFormat,
    threads: usize,
    progress: Option<Progress<'_>>,
) -> StorageResult<u64> {
    let table_schema: Schema = txn
        .schema(table)
        .cloned()
        .ok_or_else(|| StorageError::NoSuchTable(table.to_string()))?;
    // The fields of a line fill the listed columns; the others are NULL.
    let schema = match &fmt.columns {
        None => table_schema.clone(),
        Some(list) => Schema::new(
            list.iter()
                .map(|&i| {
                    table_schema.columns.get(i).cloned().ok_or_else(|| {
                        StorageError::Invalid(format!("no column {i} in table {table}"))
                    })
                })
                .collect::<StorageResult<_>>()?,
        ),
    };
    let threads = threads.max(1);
    let mut source = source;
    // The first chunk fixes the line convention for the whole input, so that a
    // `.tbl` row missing its last field cannot pass for one with an empty field.
    // PostgreSQL's text format has no such convention: a trailing delimiter
    // there is an extra (empty) field.
    let first = source()?;
    let trailing = if fmt.escapes {
        Some(false)
    } else {
        first
            .as_ref()
            .and_then(|c| parse::trailing_delimiter(&c.data, schema.len(), fmt))
    };
    let mut first = first.map(Some);
    std::thread::scope(|scope| -> StorageResult<u64> {
        let (chunk_tx, chunk_rx) = sync_channel::<(u64, Chunk)>(threads * 2);
        let chunk_rx: Arc<Mutex<Receiver<(u64, Chunk)>>> = Arc::new(Mutex::new(chunk_rx));
        let (res_tx, res_rx) =
            sync_channel::<(u64, u64, usize, Result<Vec<Vector>, StorageError>)>(threads * 2);
        // Reader: cuts the input into numbered chunks.
        let reader = scope.spawn(move || -> StorageResult<()> {
            let mut seq = 0;
            let mut next = || match first.take() {
                Some(chunk) => Ok(chunk),
                None => source(),
            };
            while let Some(chunk) = next()? {
                if chunk_tx.send((seq, chunk)).is_err() {
                    break; // the load was aborted
                }
                seq += 1;
            }
            Ok(())
        });
        for _ in 0..threads {
            let rx = chunk_rx.clone();
            let tx = res_tx.clone();
            let schema = &schema;
            scope.spawn(move || loop {
                let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((seq, chunk)) = next else { break };
                let skip_header = fmt.header && chunk.first_line == 1;
                let parsed = parse::parse_chunk(&chunk.data, schema, fmt, skip_header, trailing)
                    .map_err(|e| StorageError::BadInput {
                        file: source_name.to_string(),
                        line: chunk.first_line + e.line,
                        column: e.column,
                        what: e.what,
                        code: e.code,
                    });
                if tx
                    .send((seq, chunk.first_line, chunk.data.len(), parsed))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(res_tx);
        // Appender: results in input order, so the first bad line is the one reported.
        let mut pending = BTreeMap::new();
        let mut next = 0u64;
        let mut rows = 0u64;
        let mut bytes = 0u64;
        let result = (|| -> StorageResult<u64> {
            for (seq, line, len, parsed) in res_rx.iter() {
                pending.insert(seq, (line, len, parsed));
                while let Some((line, len, parsed)) = pending.remove(&next) {
                    let cols = parsed?;
                    let cols = match &fmt.columns {
                        None => cols,
                        Some(list) => {
                            fill_columns(&table_schema, list, cols, source_name, line, table)?
                        }
                    };
                    let batch = Batch::new(cols);
                    rows += txn.append(table, &batch)?;
                    bytes += len as u64;
                    if let Some(p) = progress {
                        p(bytes);
                    }
                    next += 1;
                }
            }
            Ok(rows)
        })();
        // On error, dropping the receivers stops the reader and the parsers.
        drop(res_rx);
        drop(chunk_rx);
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(StorageError::Invalid("input reader panicked".into())));
        let rows = result?;
        read?;
        if !pending.is_empty() {
            return Err(StorageError::Invalid(
                "load ended with unparsed input (a parser thread failed)".into(),
            ));
        }
        Ok(rows)
    })
}

/// The table's columns from the parsed `listed` ones (`list[i]` is the table
/// position of `parsed[i]`), the others all NULL; a NOT NULL column left out
/// fails at the chunk's first line, since every row of it would be NULL.
fn fill_columns(
    schema: &Schema,
    list: &[usize],
    parsed: Vec<Vector>,
    source_name: &str,
    first_line: u64,
    table: &str,
) -> StorageResult<Vec<Vector>> {
    let rows = parsed.first().map_or(0, Vector::len);
    let mut parsed: Vec<Option<Vector>> = parsed.into_iter().map(Some).collect();
    schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, col)| {
            if let Some(p) = list.iter().position(|&l| l == i) {
                return Ok(parsed[p]
                    .take()
                    .unwrap_or_else(|| Vector::new(col.data_type, 0)));
            }
            if !col.nullable && rows > 0 {
                return Err(StorageError::BadInput {
                    file: source_name.to_string(),
                    line: first_line,
                    column: 1,
                    what: format!(
                        "column {} of table {table} is NOT NULL and not in the column list",
                        col.name
                    ),
                    code: parse::code::NOT_NULL,
                });
            }
            let mut v = Vector::new(col.data_type, rows);
            for _ in 0..rows {
                v.push_null();
            }
            Ok(v)
        })
        .collect()
}

/// Loads a delimited text file into `table`.
pub fn load_file(
    txn: &mut WriteTxn,
    table: &str,
    path: &Path,
    fmt: &TextFormat,
    threads: usize,
    progress: Option<Progress<'_>>,
) -> StorageResult<u64> {
    let file = std::fs::File::open(path).map_err(|e| StorageError::io(path, "open", e))?;
    let mut chunker = LineChunker::new(file).for_format(fmt);
    let name = path.display().to_string();
    load_chunks(
        txn,
        table,
        &name,
        move || {
            chunker
                .next_chunk()
                .map_err(|e| StorageError::io(path, "read", e))
        },
        fmt,
        threads,
        progress,
    )
}

/// Threads to parse with: every core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
