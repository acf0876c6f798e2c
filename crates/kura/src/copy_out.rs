//! `COPY t [(columns)] | (query) TO STDOUT | 'file'`: a query's rows written in
//! PostgreSQL's text or CSV format, one line per row, as the query runs.

use std::io::Write;

use sqlparser::ast::{CopyLegacyOption, CopyOption, CopySource, Statement};

use kura_common::{Batch, DataType, Value};

use crate::copy::Options;
use crate::error::{KuraError, KuraResult};
use crate::file_access::FileAccess;
use crate::result::{ResultColumn, RowSink};

/// Where a `COPY ... TO STDOUT` sends its output (to the client, over the wire).
pub trait CopyOutput {
    /// The query is planned: `columns` fields a line, in the binary format
    /// when `binary`. Called once, first.
    fn start(&mut self, columns: usize, binary: bool);
    /// Lines of output, one row each (with its newline; the header is a line
    /// of its own); false when no more are wanted (the query then stops).
    fn lines(&mut self, lines: Vec<Vec<u8>>) -> bool;
}

/// How rows are written: PostgreSQL's text format (backslash escapes) or CSV.
#[derive(Debug, Clone)]
pub struct OutFormat {
    csv: bool,
    /// PostgreSQL's binary format (see `copy_binary`); the rest is unused.
    pub binary: bool,
    delimiter: u8,
    /// Written before a quote (or itself) inside a quoted CSV field.
    escape: u8,
    null: Vec<u8>,
    header: bool,
}

impl OutFormat {
    pub(crate) fn new(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> KuraResult<Self> {
        let opts = Options::parse(options, legacy)?;
        let fmt = opts.client_format()?;
        Ok(OutFormat {
            binary: opts.binary,
            csv: fmt.quoted,
            delimiter: fmt.delimiter,
            escape: fmt.escape_char(),
            null: fmt.null.unwrap_or_default(),
            header: fmt.header,
        })
    }

    /// The header line (column names), if the format has one.
    pub fn header_line(&self, names: &[&str]) -> Option<Vec<u8>> {
        self.header.then(|| {
            let mut out = Vec::new();
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    out.push(self.delimiter);
                }
                self.field(n.as_bytes(), &mut out);
            }
            out.push(b'\n');
            out
        })
    }

    /// One row as a line.
    pub fn row_line(&self, row: &[Value]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 * row.len());
        let mut text = String::new();
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                out.push(self.delimiter);
            }
            if v.is_null() {
                out.extend_from_slice(&self.null);
                continue;
            }
            text.clear();
            // Value's Display is PostgreSQL's text form (ISO dates, exact decimals).
            use std::fmt::Write as _;
            let _ = write!(text, "{v}");
            self.field(text.as_bytes(), &mut out);
        }
        out.push(b'\n');
        out
    }

    /// One non-NULL field, escaped (text) or quoted where needed (CSV).
    fn field(&self, v: &[u8], out: &mut Vec<u8>) {
        if self.csv {
            // PostgreSQL's rule, which a generic CSV writer does not know: a
            // value equal to the NULL marker is quoted too (so `""` is the empty
            // string and an unquoted empty field is NULL), and so is `\.`,
            // which would read back as the end of the data.
            let quote = v == self.null.as_slice()
                || v == b"\\."
                || v.iter()
                    .any(|&b| b == self.delimiter || b == b'"' || b == b'\n' || b == b'\r');
            if !quote {
                out.extend_from_slice(v);
                return;
            }
            out.push(b'"');
            for &b in v {
                // PostgreSQL's rule: the quote and the escape itself are escaped (with the
                // default escape, the quote, a quote is doubled).
                if b == b'"' || b == self.escape {
                    out.push(self.escape);
                }
                out.push(b);
            }
            out.push(b'"');
            return;
        }
        for &b in v {
            let esc = match b {
                b'\\' => b'\\',
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                8 => b'b',
                12 => b'f',
                11 => b'v',
                d if d == self.delimiter => d,
                _ => {
                    out.push(b);
                    continue;
                }
            };
            out.push(b'\\');
            out.push(esc);
        }
    }
}

/// The query a COPY ... TO runs: its own, or the table's columns.
pub(crate) fn source_query(source: &CopySource) -> KuraResult<Statement> {
    match source {
        CopySource::Query(q) => Ok(Statement::Query(q.clone())),
        CopySource::Table {
            table_name,
            columns,
        } => {
            let list = if columns.is_empty() {
                "*".to_string()
            } else {
                columns
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let sql = format!("SELECT {list} FROM {table_name}");
            let mut stmts = crate::parsing::parse(&sql)?;
            match (stmts.pop(), stmts.is_empty()) {
                (Some(s), true) => Ok(s),
                _ => Err(KuraError::Internal(format!("COPY source query: {sql}"))),
            }
        }
    }
}

/// A query's rows as COPY lines into a [`CopyOutput`], counted.
pub(crate) struct Lines<'a> {
    pub format: OutFormat,
    pub out: &'a mut dyn CopyOutput,
    pub rows: u64,
    /// The columns' types (the binary format writes each in its own form).
    types: Vec<DataType>,
    /// Why the rows stopped, if a row could not be written.
    error: Option<KuraError>,
    /// The binary format's header, sent with the first row (clients read
    /// it as part of the first message, as PostgreSQL sends it).
    header: Option<Vec<u8>>,
}

impl<'a> Lines<'a> {
    pub fn new(format: OutFormat, out: &'a mut dyn CopyOutput) -> Self {
        Lines {
            format,
            out,
            rows: 0,
            types: Vec::new(),
            error: None,
            header: None,
        }
    }

    /// After the query: the binary format's trailer, or the error that
    /// stopped the rows.
    pub fn finish(mut self) -> KuraResult<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.format.binary {
            let mut last = self.header.take().unwrap_or_default();
            last.extend(crate::copy_binary::trailer());
            self.out.lines(vec![last]);
        }
        Ok(self.rows)
    }
}

impl RowSink for Lines<'_> {
    fn columns(&mut self, columns: &[ResultColumn]) {
        self.out.start(columns.len(), self.format.binary);
        self.types = columns.iter().map(|c| c.data_type).collect();
        if self.format.binary {
            self.header = Some(crate::copy_binary::header());
            return;
        }
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        if let Some(h) = self.format.header_line(&names) {
            self.out.lines(vec![h]);
        }
    }

    fn rows(&mut self, batch: Batch) -> bool {
        let lines: KuraResult<Vec<Vec<u8>>> = (0..batch.len())
            .map(|i| {
                if self.format.binary {
                    crate::copy_binary::row(&batch.row(i), &self.types)
                } else {
                    Ok(self.format.row_line(&batch.row(i)))
                }
            })
            .collect();
        match lines {
            Ok(mut lines) => {
                self.rows += lines.len() as u64;
                if let (Some(mut h), Some(first)) = (self.header.take(), lines.first_mut()) {
                    h.append(first);
                    *first = h;
                }
                self.out.lines(lines)
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

/// Output of `COPY ... TO 'file'`: the file, written as rows come.
pub(crate) struct FileOutput {
    file: std::io::BufWriter<std::fs::File>,
    pub error: Option<std::io::Error>,
}

impl FileOutput {
    /// Creates (or truncates) the file named `name`, if this session may write
    /// server files (see [`FileAccess::check_write`]).
    pub fn create(access: &FileAccess, name: &str) -> KuraResult<FileOutput> {
        access.check_write(name)?;
        let file =
            std::fs::File::create(name).map_err(|e| KuraError::Invalid(format!("{name}: {e}")))?;
        Ok(FileOutput {
            file: std::io::BufWriter::new(file),
            error: None,
        })
    }

    /// Flushes the file; the first write error, if any.
    pub fn finish(mut self, name: &str) -> KuraResult<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.file.flush(),
        }
        .map_err(|e| KuraError::Invalid(format!("{name}: {e}")))
    }
}

impl CopyOutput for FileOutput {
    fn start(&mut self, _columns: usize, _binary: bool) {}

    fn lines(&mut self, lines: Vec<Vec<u8>>) -> bool {
        for l in &lines {
            if let Err(e) = self.file.write_all(l) {
                self.error = Some(e);
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::Ident;

    fn text() -> OutFormat {
        OutFormat::new(&[], &[]).unwrap()
    }

    fn csv() -> OutFormat {
        OutFormat::new(&[CopyOption::Format(Ident::new("csv"))], &[]).unwrap()
    }

    #[test]
    fn text_format_escapes_as_postgresql() {
        let row = [
            Value::Integer(1),
            Value::Text("a\tb\\c\nd".into()),
            Value::Null,
            Value::Decimal(-5, 2),
            Value::Date(0),
        ];
        assert_eq!(
            text().row_line(&row),
            b"1\ta\\tb\\\\c\\nd\t\\N\t-0.05\t1970-01-01\n"
        );
    }

    #[test]
    fn csv_quotes_where_needed() {
        let row = [
            Value::Text("plain".into()),
            Value::Text("a,b".into()),
            Value::Text("say \"hi\"".into()),
            Value::Text(String::new()),
            Value::Null,
            Value::Text("two\nlines".into()),
        ];
        assert_eq!(
            csv().row_line(&row),
            b"plain,\"a,b\",\"say \"\"hi\"\"\",\"\",,\"two\nlines\"\n"
        );
    }

    #[test]
    fn csv_with_an_escape_writes_it_before_quotes_and_itself() {
        let escaped = OutFormat::new(
            &[
                CopyOption::Format(Ident::new("csv")),
                CopyOption::Escape('\\'),
            ],
            &[],
        )
        .unwrap();
        let row = [
            Value::Text("say \"hi\" \\o/".into()),
            Value::Text("a\\b".into()),
        ];
        assert_eq!(escaped.row_line(&row), b"\"say \\\"hi\\\" \\\\o/\",a\\b\n");
    }
}
