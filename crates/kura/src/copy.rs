//! `COPY table [(columns)] FROM 'file' | STDIN (DELIMITER '|', HEADER, FORMAT csv,
//! NULL 'x', ESCAPE '\')`: the bulk loader behind SQL. The whole input loads in one
//! transaction — all or nothing. (`COPY ... TO` is in `copy_out`.)

use std::io::Read;

use sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Ident,
};

use kura_common::DataType;
use kura_storage::loader::{self, LineChunker, TextFormat};

use crate::copy_arrow::ArrowFormat;

use crate::enforce::{after_write, Change};
use crate::error::{KuraError, KuraResult};
use crate::file_access::FileAccess;
use crate::names::object_name;
use crate::progress::Progress;
use crate::query_context::QueryContext;
use crate::result::QueryResult;

/// Where a `COPY ... FROM STDIN` reads its data (the client's, over the wire).
pub trait CopyInput: Read + Send {
    /// The statement is checked and its data is wanted now: `columns` fields a
    /// line, in the binary format when `binary`. Called once, before the first
    /// read.
    fn start(&mut self, columns: usize, binary: bool);
}

/// COPY options as written, before a direction and a target give them defaults.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// `FORMAT csv` (true) or `FORMAT text` (false); `None`: not said.
    pub csv: Option<bool>,
    /// `FORMAT binary` (PostgreSQL's binary COPY format, see `copy_binary`).
    pub binary: bool,
    /// `FORMAT parquet` or `FORMAT json`: files only, written by `COPY ... TO` (see
    /// `copy_arrow`).
    pub arrow: Option<ArrowFormat>,
    pub delimiter: Option<u8>,
    /// CSV's `ESCAPE` (the quote itself unless said).
    pub escape: Option<u8>,
    pub header: bool,
    pub null: Option<String>,
}

impl Options {
    /// Reads the options of a COPY statement (both syntaxes).
    pub fn parse(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> KuraResult<Options> {
        let mut o = Options::default();
        let one_byte = |what: &str, c: char| -> KuraResult<u8> {
            u8::try_from(c as u32)
                .ok()
                .filter(|b| b.is_ascii() && *b != b'\n' && *b != b'\r')
                .ok_or_else(|| {
                    KuraError::Invalid(format!(
                        "COPY {what} must be a single one-byte character, got {c:?}"
                    ))
                })
        };
        let byte = |c: char| one_byte("delimiter", c);
        // Only the default quote character is supported; saying it explicitly is
        // harmless.
        let quote = |what: &str, c: char| -> KuraResult<()> {
            if c == '"' {
                Ok(())
            } else {
                Err(KuraError::Unsupported(format!(
                    "COPY {what} other than '\"', got {c:?}"
                )))
            }
        };
        for opt in options {
            match opt {
                CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                    "csv" => o.csv = Some(true),
                    "text" | "tbl" => o.csv = Some(false),
                    "binary" => o.binary = true,
                    other => match ArrowFormat::named(other) {
                        Some(f) => o.arrow = Some(f),
                        None => return Err(KuraError::Unsupported(format!("COPY format {other}"))),
                    },
                },
                CopyOption::Delimiter(c) => o.delimiter = Some(byte(*c)?),
                CopyOption::Header(h) => o.header = *h,
                CopyOption::Null(n) => o.null = Some(n.clone()),
                CopyOption::Quote(c) => quote("QUOTE", *c)?,
                CopyOption::Escape(c) => o.escape = Some(one_byte("escape", *c)?),
                CopyOption::Encoding(e)
                    if matches!(e.to_ascii_lowercase().as_str(), "utf8" | "utf-8") => {}
                other => return Err(KuraError::Unsupported(format!("COPY option {other}"))),
            }
        }
        for opt in legacy {
            match opt {
                CopyLegacyOption::Delimiter(c) => o.delimiter = Some(byte(*c)?),
                CopyLegacyOption::Null(n) => o.null = Some(n.clone()),
                CopyLegacyOption::Csv(opts) => {
                    o.csv = Some(true);
                    for c in opts {
                        match c {
                            CopyLegacyCsvOption::Header => o.header = true,
                            CopyLegacyCsvOption::Quote(c) => quote("QUOTE", *c)?,
                            CopyLegacyCsvOption::Escape(c) => {
                                o.escape = Some(one_byte("escape", *c)?)
                            }
                            other => {
                                return Err(KuraError::Unsupported(format!("COPY option {other}")))
                            }
                        }
                    }
                }
                CopyLegacyOption::Binary => o.binary = true,
                other => return Err(KuraError::Unsupported(format!("COPY option {other}"))),
            }
        }
        if let Some(format) = o.arrow {
            let other = if o.csv.is_some() || o.binary {
                Some("another FORMAT")
            } else {
                o.text_option()
            };
            if let Some(what) = other {
                return Err(KuraError::Invalid(format!(
                    "cannot specify {what} with FORMAT {}",
                    format.name()
                )));
            }
        }
        if o.binary {
            // PostgreSQL's rules: the binary format has no text options.
            let text_option = if o.csv.is_some() {
                Some("FORMAT csv or text")
            } else {
                o.text_option()
            };
            if let Some(what) = text_option {
                return Err(KuraError::Invalid(format!(
                    "cannot specify {what} in BINARY mode"
                )));
            }
        }
        Ok(o)
    }

    /// The first option given that only the text formats have (the binary and
    /// Arrow formats refuse it rather than ignore it).
    fn text_option(&self) -> Option<&'static str> {
        if self.delimiter.is_some() {
            Some("DELIMITER")
        } else if self.null.is_some() {
            Some("NULL")
        } else if self.header {
            Some("HEADER")
        } else if self.escape.is_some() {
            Some("ESCAPE")
        } else {
            None
        }
    }

    /// The Arrow-read format of file `name` (Parquet or JSON), when `FORMAT` says one or, no
    /// format said, the name's extension does; a text option with a format taken from the
    /// extension is refused (it would be ignored).
    pub fn arrow_file(&self, name: &str) -> KuraResult<Option<ArrowFormat>> {
        if self.arrow.is_some() || self.csv.is_some() || self.binary {
            return Ok(self.arrow);
        }
        let Some(format) = ArrowFormat::of_file(&name.to_ascii_lowercase()) else {
            return Ok(None);
        };
        if let Some(what) = self.text_option() {
            return Err(KuraError::Invalid(format!(
                "cannot specify {what} for a {} file (its name says FORMAT {}; say FORMAT csv \
                 or text to read or write it as text)",
                format.name(),
                format.name()
            )));
        }
        Ok(Some(format))
    }

    /// The escape character of a CSV format; PostgreSQL's error for one in the text format.
    fn escape(&self, csv: bool) -> KuraResult<Option<u8>> {
        if self.escape.is_some() && !csv {
            return Err(KuraError::Invalid("COPY ESCAPE requires CSV mode".into()));
        }
        Ok(self.escape)
    }

    /// The delimiter, checked against the NULL marker as PostgreSQL does.
    fn delimiter_and_null(&self, default: u8) -> KuraResult<u8> {
        let delimiter = self.delimiter.unwrap_or(default);
        if let Some(n) = &self.null {
            // As PostgreSQL: the marker must be readable as one whole field.
            if n.contains(['\n', '\r']) {
                return Err(KuraError::Invalid(
                    "COPY null representation cannot use newline or carriage return".into(),
                ));
            }
            if n.as_bytes().contains(&delimiter) {
                return Err(KuraError::Invalid(
                    "COPY delimiter must not appear in the NULL specification".into(),
                ));
            }
        }
        Ok(delimiter)
    }

    /// A file's format: CSV when said or the name ends in `.csv`; dbgen's plain
    /// `|`-delimited text without backslash escapes for a `.tbl` file; otherwise
    /// PostgreSQL's text format, so that what `COPY ... TO 'file'` writes reads
    /// back unchanged.
    pub fn file_format(&self, path: &str) -> KuraResult<TextFormat> {
        if self.binary {
            return Err(KuraError::Unsupported(
                "COPY FROM a file in the binary format (it is read from STDIN)".into(),
            ));
        }
        let lower = path.to_ascii_lowercase();
        if let Some(format) = self.arrow_file(&lower)? {
            // The session runs these as INSERT ... SELECT (see `Session::copy_from_arrow_file`).
            return Err(KuraError::Internal(format!(
                "COPY FROM a {} file through the text loader",
                format.name()
            )));
        }
        let csv = self.csv.unwrap_or_else(|| lower.ends_with(".csv"));
        if !csv && !lower.ends_with(".tbl") {
            return self.client_format();
        }
        let delimiter = self.delimiter_and_null(if csv { b',' } else { b'|' })?;
        Ok(TextFormat {
            delimiter,
            header: self.header,
            quoted: csv,
            escape: self.escape(csv)?,
            null: self.null.clone().map(String::into_bytes),
            ..TextFormat::default()
        })
    }

    /// PostgreSQL's formats, for data exchanged with a client (`STDIN`,
    /// `STDOUT`) and for files kura writes: text (tab, `\N`, backslash
    /// escapes) unless CSV (comma, an unquoted empty field for NULL).
    pub fn client_format(&self) -> KuraResult<TextFormat> {
        if let Some(format) = self.arrow {
            return Err(KuraError::Unsupported(format!(
                "FORMAT {0} with STDIN or STDOUT: kura writes {0} to files only (COPY ... TO 'file')",
                format.name()
            )));
        }
        // Binary rows reach the loader as CSV lines (see `copy_binary`).
        let csv = self.csv.unwrap_or(self.binary);
        let delimiter = self.delimiter_and_null(if csv { b',' } else { b'\t' })?;
        let null = self
            .null
            .clone()
            .unwrap_or_else(|| if csv { "" } else { "\\N" }.to_string());
        Ok(TextFormat {
            delimiter,
            header: self.header,
            quoted: csv,
            quote: b'"',
            escape: self.escape(csv)?,
            date_format: None,
            timestamp_format: None,
            null: Some(null.into_bytes()),
            escapes: !csv,
            columns: None,
            wanted: None,
        })
    }
}

/// Parsed COPY options for `COPY ... FROM 'path'`.
pub fn text_format(
    path: &str,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> KuraResult<TextFormat> {
    Options::parse(options, legacy)?.file_format(path)
}

/// Positions of a COPY's column list in `table`'s columns; `None` for no list.
fn column_positions(
    txn: &kura_storage::WriteTxn,
    table: &str,
    columns: &[Ident],
) -> KuraResult<Option<Vec<usize>>> {
    let schema = txn
        .schema(table)
        .ok_or_else(|| kura_storage::StorageError::NoSuchTable(table.to_string()))?;
    if columns.is_empty() {
        return Ok(None);
    }
    // The loader fills a column left out with NULL; one with a DEFAULT
    // would be filled wrongly, so it is refused rather than ignored.
    if let Some(rules) = txn.rules(table) {
        let named: Vec<String> = columns
            .iter()
            .map(|c| c.value.to_ascii_lowercase())
            .collect();
        if let Some(d) = rules.defaults.iter().find(|d| !named.contains(&d.column)) {
            return Err(KuraError::Unsupported(format!(
                "COPY leaving out column \"{}\", which has a DEFAULT (name every column)",
                d.column
            )));
        }
    }
    let mut out = Vec::with_capacity(columns.len());
    for c in columns {
        let name = kura_sql::binder::norm(c);
        let i = schema.index_of(&name).ok_or_else(|| {
            KuraError::UndefinedColumn(format!(
                "column \"{name}\" of relation \"{table}\" does not exist"
            ))
        })?;
        if out.contains(&i) {
            return Err(KuraError::Invalid(format!(
                "column \"{name}\" specified more than once"
            )));
        }
        out.push(i);
    }
    Ok(Some(out))
}

/// Executes a COPY ... FROM 'file' statement.
pub(crate) fn copy_from(
    ctx: &QueryContext,
    source: &CopySource,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    access: &FileAccess,
    progress: Option<&Progress>,
) -> KuraResult<QueryResult> {
    let (table, columns) = copy_table(source)?;
    let filename = match target {
        CopyTarget::File { filename } => filename,
        CopyTarget::Stdin => {
            return Err(KuraError::Unsupported(
                "COPY FROM STDIN reads the data a client of `kura serve` sends after the \
                 statement, sent as a simple query (psql's \\copy, psycopg's cursor.copy()); \
                 otherwise give a file: COPY t FROM 'file'"
                    .into(),
            ))
        }
        _ => {
            return Err(KuraError::Unsupported(
                "COPY FROM PROGRAM; give a file name".into(),
            ))
        }
    };
    let mut fmt = text_format(filename, options, legacy)?;
    let path = access.resolve(filename)?;
    let total = std::fs::metadata(&path)
        .map_err(|e| KuraError::Invalid(format!("{}: {e}", path.display())))?
        .len();
    let label = format!("{table} ← {}", path.display());
    let report = |done: u64| {
        if let Some(p) = progress {
            p(&label, done, total)
        }
    };
    // A temporary table is loaded through the session's private storage.
    let rows = ctx.tx.for_table(&table).write(|txn| {
        fmt.columns = column_positions(txn, &table, columns)?;
        let rows = loader::load_file(
            txn,
            &table,
            &path,
            &fmt,
            loader::default_threads(),
            Some(&report),
        )?;
        after_write(ctx, txn, &table, Change::Added)?;
        Ok(rows)
    })?;
    Ok(QueryResult::command(format!("COPY {rows}")))
}

/// The table and column list a COPY ... FROM loads into.
fn copy_table(source: &CopySource) -> KuraResult<(String, &[Ident])> {
    match source {
        CopySource::Table {
            table_name,
            columns,
        } => Ok((object_name(table_name), columns)),
        CopySource::Query(_) => Err(KuraError::Unsupported("COPY (query) FROM".into())),
    }
}

/// Executes `COPY t [(columns)] FROM STDIN`, reading the data from `input`: in
/// PostgreSQL's text or CSV format, all or nothing, errors naming `STDIN` and
/// the line. A line `\.` alone ends the data, as in PostgreSQL.
pub(crate) fn copy_from_input(
    ctx: &QueryContext,
    source: &CopySource,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    input: &mut dyn CopyInput,
) -> KuraResult<QueryResult> {
    let (table, columns) = copy_table(source)?;
    let opts = Options::parse(options, legacy)?;
    let mut fmt = opts.client_format()?;
    // A temporary table is loaded through the session's private storage.
    let rows = ctx.tx.for_table(&table).write(|txn| {
        fmt.columns = column_positions(txn, &table, columns)?;
        let schema = txn.schema(&table);
        let types: Vec<DataType> = match (&fmt.columns, &schema) {
            (Some(cols), Some(s)) => cols.iter().map(|&c| s.columns[c].data_type).collect(),
            (None, Some(s)) => s.columns.iter().map(|c| c.data_type).collect(),
            (_, None) => Vec::new(),
        };
        input.start(types.len(), opts.binary);
        let reader: Box<dyn Read + Send + '_> = if opts.binary {
            Box::new(crate::copy_binary::BinaryRows::new(input, types))
        } else {
            Box::new(EndMarker::new(input))
        };
        let mut chunker = LineChunker::new(reader).for_format(&fmt);
        let rows = loader::load_chunks(
            txn,
            &table,
            "STDIN",
            move || {
                chunker
                    .next_chunk()
                    .map_err(|e| kura_storage::StorageError::Invalid(e.to_string()))
            },
            &fmt,
            loader::default_threads(),
            None,
        )?;
        after_write(ctx, txn, &table, Change::Added)?;
        Ok(rows)
    })?;
    Ok(QueryResult::command(format!("COPY {rows}")))
}

/// Checks `COPY ... FROM STDIN` as far as it can be without its data: its
/// options, its table and the columns it names (the extended protocol's Parse
/// reports these errors, as PostgreSQL's does, before any data is sent).
pub(crate) fn check_copy_from(
    ctx: &QueryContext,
    source: &CopySource,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> KuraResult<()> {
    let (table, columns) = copy_table(source)?;
    Options::parse(options, legacy)?.client_format()?;
    let t = ctx
        .tx
        .table(&table)
        .ok_or_else(|| kura_storage::StorageError::NoSuchTable(table.clone()))?;
    for c in columns {
        let name = kura_sql::binder::norm(c);
        if t.schema().index_of(&name).is_none() {
            return Err(KuraError::UndefinedColumn(format!(
                "column \"{name}\" of relation \"{table}\" does not exist"
            )));
        }
    }
    Ok(())
}

/// A reader that ends at a line holding only `\.` (PostgreSQL's end-of-data
/// marker, which psql sends after inline data) and drops what follows it.
struct EndMarker<R> {
    inner: std::io::BufReader<R>,
    /// Whole lines read ahead, handed out from `pos`.
    pending: Vec<u8>,
    pos: usize,
    done: bool,
}

impl<R: Read> EndMarker<R> {
    fn new(inner: R) -> Self {
        EndMarker {
            inner: std::io::BufReader::with_capacity(64 << 10, inner),
            pending: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl<R: Read> Read for EndMarker<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        if self.pos == self.pending.len() && !self.done {
            self.pending.clear();
            self.pos = 0;
            // Whole lines, so the marker is always seen at a line's start.
            while self.pending.len() < 64 << 10 {
                let start = self.pending.len();
                if self.inner.read_until(b'\n', &mut self.pending)? == 0 {
                    self.done = true;
                    break;
                }
                if matches!(&self.pending[start..], b"\\.\n" | b"\\.\r\n" | b"\\.") {
                    self.pending.truncate(start);
                    self.done = true;
                    break;
                }
            }
        }
        let n = (self.pending.len() - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.pending[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through_marker(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        EndMarker::new(input).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn end_marker_ends_the_data_only_alone_on_a_line() {
        assert_eq!(through_marker(b"a\nb\n\\.\nc\n"), b"a\nb\n");
        assert_eq!(through_marker(b"a\r\n\\.\r\n"), b"a\r\n");
        assert_eq!(through_marker(b"a\n\\."), b"a\n");
        assert_eq!(through_marker(b"a\\.\n\\.x\n"), b"a\\.\n\\.x\n");
        assert_eq!(through_marker(b"a\nb"), b"a\nb");
    }
}
