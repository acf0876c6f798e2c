//! CSV files as a table source (`read_csv`): a sniffer finds the delimiter, whether the
//! first line is a header and each column's type from a sample (arrow-csv's inference:
//! integers, doubles, booleans, dates, timestamps, text; dates and timestamps also in the
//! strftime formats given); the files are then read as a [`TextTable`], piece by piece
//! while the statement runs, by kura's own loader parser (PostgreSQL's CSV rules, every
//! kura type checked as `COPY FROM` checks it).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, StringArray};
use arrow_csv::reader::Format;
use arrow_schema::{DataType as ArrowType, Field, Schema};
use kura_common::DataType;
pub use kura_storage::loader::parse::check_datetime_format;
use kura_storage::loader::parse::{
    date_with_format, parse_chunk, timestamp_with_format, TextFormat,
};

use super::split::{Piece, Syntax};
use super::text::TextTable;
use super::{bad, io_error};
use crate::arrow::kura_type;
use crate::error::{ExecError, ExecResult};
use crate::source::SourceColumn;

/// Lines the sniffer reads for the delimiter, and records for the types.
const SNIFF_LINES: usize = 64;
const SNIFF_RECORDS: usize = 20_000;
/// Delimiters the sniffer tries, most likely first.
const DELIMITERS: [u8; 4] = [b',', b'\t', b';', b'|'];

/// What the user said about the files; the sniffer fills in the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CsvOptions {
    pub header: Option<bool>,
    pub delimiter: Option<u8>,
    pub quote: Option<u8>,
    /// The character before a quote inside a quoted field that makes it data (`None`: the
    /// quote itself, so a doubled quote is one).
    pub escape: Option<u8>,
    /// Lines at the top of each file passed over before the header or the data.
    pub skip: u64,
    /// strftime formats of DATE and TIMESTAMP fields (`%d/%m/%Y`); `None`: ISO 8601.
    pub date_format: Option<String>,
    pub timestamp_format: Option<String>,
    /// Names of the first columns, in order (the rest keep theirs).
    pub names: Option<Vec<String>>,
    /// Types of the first columns, in order, instead of the sniffed ones.
    pub types: Option<Vec<DataType>>,
    /// Every column read as text (DuckDB's `all_varchar`).
    pub all_text: bool,
    /// The text that means NULL (else an empty field does).
    pub null: Option<String>,
}

/// Whether kura's loader reads fields as type `t` (every type a table column may have).
fn loadable(t: DataType) -> bool {
    !matches!(t, DataType::Interval | DataType::Array(_))
}

/// CSV files read as a table.
pub type CsvTable = TextTable;

/// The name of column `i` of `count` in a file without a header, as DuckDB names it
/// (arrow-csv would say `column_1`): `column0` … `column9`, and with more than ten
/// columns zero-padded to the last one's digits, `column00` … `column15`, so that
/// queries written for one engine run on the other.
fn headerless_name(i: usize, count: usize) -> String {
    let width = count.saturating_sub(1).max(1).to_string().len();
    format!("column{i:0width$}")
}

/// `path` opened past its first `skip` lines.
fn open_after(path: &Path, skip: u64) -> ExecResult<BufReader<File>> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for _ in 0..skip {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, e))?
            == 0
        {
            break;
        }
    }
    Ok(reader)
}

/// The first `SNIFF_LINES` lines' bytes of `path` after its first `skip`.
fn head(path: &Path, skip: u64) -> ExecResult<Vec<u8>> {
    let mut buf = Vec::new();
    let mut lines = 0;
    for b in open_after(path, skip)?.bytes() {
        let b = b.map_err(|e| io_error(path, e))?;
        buf.push(b);
        if b == b'\n' {
            lines += 1;
            if lines == SNIFF_LINES {
                break;
            }
        }
    }
    Ok(buf)
}

/// Fields per line of `text` split at `delim` outside quotes.
fn fields_per_line(text: &[u8], delim: u8, quote: u8, escape: u8) -> Vec<usize> {
    let mut counts = Vec::new();
    let (mut n, mut quoted, mut any) = (1, false, false);
    let mut bytes = text.iter();
    while let Some(&b) = bytes.next() {
        if quoted && b == escape && escape != quote {
            // The quote (or escape) it escapes is data, not the quoted field's end.
            if let Some(&next) = bytes.clone().next() {
                if next == quote || next == escape {
                    bytes.next();
                }
            }
        } else if b == quote {
            quoted = !quoted;
        } else if !quoted && b == delim {
            n += 1;
        } else if !quoted && b == b'\n' {
            if any {
                counts.push(n);
            }
            (n, any) = (1, false);
            continue;
        }
        if b != b'\r' {
            any = true;
        }
    }
    if any {
        counts.push(n);
    }
    counts
}

/// The delimiter that splits the sample's lines into the same number (> 1) of fields most
/// often; a comma when none does (a one-column file).
fn sniff_delimiter(sample: &[u8], quote: u8, escape: u8) -> u8 {
    let mut best = (b',', 0usize, 0usize);
    for d in DELIMITERS {
        let counts = fields_per_line(sample, d, quote, escape);
        let Some(&first) = counts.first() else {
            continue;
        };
        let agree = counts.iter().filter(|&&c| c == first).count();
        if first > 1 && (agree, first) > (best.1, best.2) {
            best = (d, agree, first);
        }
    }
    best.0
}

/// The types of the sample's records (after the first `skip` lines), with or without its
/// first line as a header.
fn infer(path: &Path, skip: u64, format: &Format) -> ExecResult<Schema> {
    format
        .infer_schema(open_after(path, skip)?, Some(SNIFF_RECORDS))
        .map(|(schema, _)| schema)
        .map_err(|e| bad(path, e))
}

/// The sample's fields (after the first `skip` lines) as text, column by column; a NULL
/// for an empty field or the NULL text.
fn sample_text(
    path: &Path,
    skip: u64,
    format: &Format,
    width: usize,
) -> ExecResult<Vec<StringArray>> {
    let fields: Vec<Field> = (0..width)
        .map(|i| Field::new(format!("c{i}"), ArrowType::Utf8, true))
        .collect();
    let mut reader = arrow_csv::ReaderBuilder::new(Arc::new(Schema::new(fields)))
        .with_format(format.clone())
        .with_batch_size(SNIFF_RECORDS)
        .build(open_after(path, skip)?)
        .map_err(|e| bad(path, e))?;
    let Some(batch) = reader.next().transpose().map_err(|e| bad(path, e))? else {
        return Ok(vec![StringArray::from(Vec::<&str>::new()); width]);
    };
    batch
        .columns()
        .iter()
        .map(|c| {
            c.as_any()
                .downcast_ref::<StringArray>()
                .cloned()
                .ok_or_else(|| ExecError::Internal("read_csv sample is not text".into()))
        })
        .collect()
}

/// The type of a sampled column given `sniffed` (arrow-csv's), with the user's date and
/// timestamp formats: DATE when every value (one at least) reads with the date format, else
/// TIMESTAMP when every one reads with the timestamp format. A column arrow-csv found ISO
/// dates (timestamps) in is text when a different date (timestamp) format is given, as in
/// DuckDB, whose sniffer then tries that format only.
fn with_formats(sniffed: DataType, values: &StringArray, options: &CsvOptions) -> DataType {
    if !matches!(
        sniffed,
        DataType::Varchar(_) | DataType::Date | DataType::Timestamp
    ) {
        return sniffed;
    }
    let all_read = |read: &dyn Fn(&[u8]) -> bool| {
        let mut present = values.iter().flatten().peekable();
        present.peek().is_some() && present.all(|v| read(v.as_bytes()))
    };
    if let Some(f) = &options.date_format {
        if all_read(&|v| date_with_format(v, f).is_ok()) {
            return DataType::Date;
        }
    }
    if let Some(f) = &options.timestamp_format {
        if all_read(&|v| timestamp_with_format(v, f).is_ok()) {
            return DataType::Timestamp;
        }
    }
    match sniffed {
        DataType::Date if options.date_format.is_some() => DataType::Varchar(None),
        DataType::Timestamp if options.timestamp_format.is_some() => DataType::Varchar(None),
        other => other,
    }
}

/// Whether the first line is a header: some column is typed (not text) in the rest of the
/// sample but its first-line value is not of that type; when every column is text, a first
/// line of distinct, non-empty names is taken for a header.
fn sniff_header(path: &Path, skip: u64, base: &Format) -> ExecResult<bool> {
    let with = infer(path, skip, &base.clone().with_header(true))?;
    let without = infer(path, skip, &base.clone().with_header(false))?;
    let typed_below = with
        .fields()
        .iter()
        .zip(without.fields())
        .any(|(w, wo)| w.data_type() != &ArrowType::Utf8 && wo.data_type() == &ArrowType::Utf8);
    if typed_below {
        return Ok(true);
    }
    if with
        .fields()
        .iter()
        .any(|f| f.data_type() != &ArrowType::Utf8)
    {
        // Typed columns that the first line fits too: it is data.
        return Ok(false);
    }
    let names: Vec<&String> = with.fields().iter().map(|f| f.name()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    Ok(unique.len() == names.len() && names.iter().all(|n| !n.trim().is_empty()))
}

/// Opening CSV files.
impl CsvTable {
    /// Reads `paths` (at least one): the first file's sniffed layout and types are the
    /// table's; every file must have as many fields per line.
    pub fn open_csv(paths: &[PathBuf], options: &CsvOptions) -> ExecResult<CsvTable> {
        let Some(first) = paths.first() else {
            return Err(ExecError::Internal("read_csv of no file".into()));
        };
        for f in [&options.date_format, &options.timestamp_format]
            .into_iter()
            .flatten()
        {
            check_datetime_format(f).map_err(|m| ExecError::File {
                code: "22023",
                message: format!("read_csv: {m}"),
            })?;
        }
        let quote = options.quote.unwrap_or(b'"');
        let escape = options.escape.unwrap_or(quote);
        let skip = options.skip;
        let delim = match options.delimiter {
            Some(d) => d,
            None => sniff_delimiter(&head(first, skip)?, quote, escape),
        };
        let mut base = Format::default().with_delimiter(delim).with_quote(quote);
        if escape != quote {
            // arrow-csv's default already reads a doubled quote as one.
            base = base.with_escape(escape);
        }
        let header = match options.header {
            Some(h) => h,
            None => sniff_header(first, skip, &base)?,
        };
        let mut format = base.with_header(header);
        if let Some(null) = &options.null {
            let exact = regex::Regex::new(&format!("^{}$", regex::escape(null)))
                .map_err(|e| ExecError::Internal(format!("read_csv nullstr: {e}")))?;
            format = format.with_null_regex(exact);
        }
        let inferred = infer(first, skip, &format)?;
        let width = inferred.fields().len();
        for (what, given) in [
            ("names", options.names.as_ref().map(Vec::len)),
            ("types", options.types.as_ref().map(Vec::len)),
        ] {
            if let Some(n) = given.filter(|&n| n > width) {
                return Err(ExecError::File {
                    code: "42601",
                    message: format!(
                        "read_csv: {n} {what} given for the {width} columns of {}",
                        first.display()
                    ),
                });
            }
        }
        let chosen = |i: usize| -> Option<DataType> {
            if options.all_text {
                return Some(DataType::Varchar(None));
            }
            options.types.as_ref().and_then(|t| t.get(i).copied())
        };
        if let Some(t) = (0..width).filter_map(chosen).find(|&t| !loadable(t)) {
            return Err(ExecError::Unsupported(format!(
                "read_csv reading a column as {t} (read it as TEXT and cast)"
            )));
        }
        let formats_given = options.date_format.is_some() || options.timestamp_format.is_some();
        let sample = if formats_given && (0..width).any(|i| chosen(i).is_none()) {
            sample_text(first, skip, &format, width)?
        } else {
            Vec::new()
        };
        let mut columns = Vec::with_capacity(inferred.fields().len());
        let count = inferred.fields().len();
        for (i, f) in inferred.fields().iter().enumerate() {
            let name = match options.names.as_ref().and_then(|n| n.get(i)) {
                Some(n) => n.clone(),
                None if header => f.name().clone(),
                None => headerless_name(i, count),
            };
            // A column empty in every sampled line (arrow-csv's Null type; the trailing
            // delimiter of a dbgen .tbl line makes one) reads as text.
            let t = if let Some(t) = chosen(i) {
                t
            } else if f.data_type() == &ArrowType::Null {
                DataType::Varchar(None)
            } else {
                kura_type(f.data_type(), &name).map_err(|e| match e {
                    ExecError::Unsupported(m) => {
                        ExecError::Unsupported(format!("{}: {m}", first.display()))
                    }
                    other => bad(first, other),
                })?
            };
            let t = match sample.get(i) {
                Some(values) if chosen(i).is_none() => with_formats(t, values, options),
                _ => t,
            };
            columns.push(SourceColumn {
                name,
                data_type: t,
                nullable: true,
            });
        }
        // arrow-csv sniffed; kura's loader decodes, with PostgreSQL's CSV rules (an unquoted
        // empty field is NULL, a quoted one `""` is empty text) and its checks of each type.
        let schema = kura_storage::Schema::new(
            columns
                .iter()
                .map(|c| kura_storage::ColumnDef {
                    name: c.name.clone(),
                    data_type: c.data_type,
                    nullable: true,
                })
                .collect(),
        );
        let text = TextFormat {
            delimiter: delim,
            header: false,
            quoted: true,
            quote,
            escape: Some(escape),
            date_format: options.date_format.clone(),
            timestamp_format: options.timestamp_format.clone(),
            null: options.null.clone().map(String::into_bytes),
            ..TextFormat::default()
        };
        let decode = move |path: &Path, piece: &Piece, bytes: &[u8], wanted: &[bool]| {
            let text = TextFormat {
                wanted: Some(wanted.to_vec()),
                ..text.clone()
            };
            parse_chunk(bytes, &schema, &text, false, Some(false)).map_err(|e| ExecError::File {
                code: e.code,
                message: format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    piece.line + e.line + 1,
                    e.column,
                    e.what
                ),
            })
        };
        TextTable::new(
            "read_csv",
            columns,
            paths,
            Syntax::Csv {
                quote,
                escape,
                header,
                skip,
            },
            Box::new(decode),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::text::GROUP_ROWS;
    use crate::files::BAD_FILE;
    use crate::source::TableSource;
    use kura_common::Value;

    fn table(text: &str, options: &CsvOptions) -> ExecResult<(tempfile::TempDir, CsvTable)> {
        // The directory lives as long as the table: its files are read while it is scanned.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, text).unwrap();
        Ok((dir, CsvTable::open_csv(&[path], options)?))
    }

    fn names(t: &CsvTable) -> Vec<(String, String)> {
        t.columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type.to_string()))
            .collect()
    }

    #[test]
    fn delimiter_header_and_types_are_sniffed() {
        let (_dir, t) = table(
            "id;name;price;day;ok\n1;ann;1.5;2024-01-02;true\n2;\"b;c\";;2024-02-03;false\n",
            &CsvOptions::default(),
        )
        .unwrap();
        assert_eq!(
            names(&t),
            [
                ("id".into(), "BIGINT".into()),
                ("name".into(), "VARCHAR".into()),
                ("price".into(), "DOUBLE".into()),
                ("day".into(), "DATE".into()),
                ("ok".into(), "BOOLEAN".into()),
            ]
        );
        assert_eq!(t.row_count(), 2);
        assert_eq!(
            t.read_range(1, 1, 1).unwrap().get_value(0),
            Value::Text("b;c".into())
        );
        assert_eq!(t.read_range(2, 1, 1).unwrap().get_value(0), Value::Null);
    }

    #[test]
    fn a_headerless_file_is_told_apart_and_options_win() {
        let (_dir, t) = table("1\t2\n3\t4\n", &CsvOptions::default()).unwrap();
        assert_eq!(names(&t)[0], ("column0".into(), "BIGINT".into()));
        assert_eq!(headerless_name(0, 1), "column0");
        assert_eq!(headerless_name(9, 10), "column9");
        assert_eq!(headerless_name(0, 11), "column00");
        assert_eq!(headerless_name(15, 16), "column15");
        assert_eq!(headerless_name(7, 101), "column007");
        assert_eq!(t.row_count(), 2);
        let (_dir, t) = table(
            "a,b\nc,d\n",
            &CsvOptions {
                header: Some(false),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.row_count(), 2);
        let (_dir, t) = table("a,b\nc,d\n", &CsvOptions::default()).unwrap();
        assert_eq!((t.row_count(), t.columns[0].name.as_str()), (1, "a"));
    }

    #[test]
    fn an_empty_column_reads_as_text() {
        // dbgen's .tbl lines end in the delimiter: a last column empty everywhere.
        let (_dir, t) = table("1|a|\n2|b|\n", &CsvOptions::default()).unwrap();
        assert_eq!(
            names(&t),
            [
                ("column0".into(), "BIGINT".into()),
                ("column1".into(), "VARCHAR".into()),
                ("column2".into(), "VARCHAR".into()),
            ]
        );
        assert_eq!(t.read_range(2, 0, 2).unwrap().null_count(), 2);
    }

    #[test]
    fn a_ragged_line_is_an_error_naming_the_file() {
        let e = table("a,b\n1,2\n3\n", &CsvOptions::default()).unwrap_err();
        assert_eq!(e.sqlstate(), BAD_FILE);
        assert!(e.to_string().contains("t.csv"), "{e}");
    }

    #[test]
    fn a_file_of_several_pieces_reads_every_record_once() {
        // Quoted line ends and blank lines near and across the pieces' cuts.
        let mut text = String::from("id,note\n");
        let n = 2 * GROUP_ROWS + 777;
        for i in 0..n {
            if i % 1000 == 999 {
                text.push_str("\r\n");
            }
            if i % 3 == 0 {
                text.push_str(&format!("{i},\"line\nend \"\"{i}\"\"\"\n"));
            } else {
                text.push_str(&format!("{i},plain {i}\n"));
            }
        }
        let (_dir, t) = table(&text, &CsvOptions::default()).unwrap();
        assert_eq!(t.row_count(), n as u64);
        assert_eq!(t.row_groups().len(), 3);
        let ids = t.read_range(0, 0, n).unwrap();
        assert!((0..n).all(|i| ids.get_value(i) == Value::BigInt(i as i64)));
        let at = GROUP_ROWS as u64 - 1;
        let note = |i: u64| match i % 3 {
            0 => Value::Text(format!("line\nend \"{i}\"")),
            _ => Value::Text(format!("plain {i}")),
        };
        let notes = t.read_range(1, at, 2).unwrap();
        assert_eq!(
            (notes.get_value(0), notes.get_value(1)),
            (note(at), note(at + 1))
        );
    }

    #[test]
    fn a_scan_that_announces_its_columns_gets_them_and_others_still_read() {
        let (_dir, t) = table("a,b,c\n1,x,2.5\n2,y,3.5\n", &CsvOptions::default()).unwrap();
        t.project(&[2]);
        let c = t.read_range(2, 0, 2).unwrap();
        assert_eq!(c.get_value(1), Value::Double(3.5));
        // Not announced: decoded on its own, the same values.
        let b = t.read_range(1, 0, 2).unwrap();
        assert_eq!(b.get_value(0), Value::Text("x".into()));
        assert_eq!(
            t.read_range(0, 1, 1).unwrap().get_value(0),
            Value::BigInt(2)
        );
    }

    #[test]
    fn skipped_lines_come_before_the_sniffing_and_count_in_errors() {
        let text = "tool output, 3 lines\nof notes;\nid;day\n1;2024-01-02\n2;x\n";
        let options = CsvOptions {
            skip: 2,
            ..Default::default()
        };
        let (_dir, t) = table(text, &options).unwrap();
        assert_eq!(names(&t)[0], ("id".into(), "BIGINT".into()));
        assert_eq!(t.row_count(), 2);
        let (_dir, t) = table(
            text,
            &CsvOptions {
                types: Some(vec![DataType::Integer, DataType::Date]),
                ..options
            },
        )
        .unwrap();
        let e = t.read_range(1, 0, 2).unwrap_err().to_string();
        assert!(e.contains("t.csv:5:3: column day (DATE)"), "{e}");
    }

    #[test]
    fn an_escaped_quote_stays_in_its_field_through_sniffing_and_splitting() {
        let options = CsvOptions {
            escape: Some(b'\\'),
            ..Default::default()
        };
        let (_dir, t) = table("k;note\n1;\"a \\\";\n\\\\ b\"\n2;plain\n", &options).unwrap();
        assert_eq!(t.row_count(), 2);
        assert_eq!(
            t.read_range(1, 0, 1).unwrap().get_value(0),
            Value::Text("a \";\n\\ b".into())
        );
    }

    #[test]
    fn formats_type_the_columns_they_read() {
        let options = CsvOptions {
            date_format: Some("%d/%m/%Y".into()),
            timestamp_format: Some("%d/%m/%Y %H:%M".into()),
            ..Default::default()
        };
        let (_dir, t) = table(
            "d,ts,iso,n\n02/01/1970,02/01/1970 00:01,1970-01-02,3\n,,,\n",
            &options,
        )
        .unwrap();
        assert_eq!(
            names(&t),
            [
                ("d".into(), "DATE".into()),
                ("ts".into(), "TIMESTAMP".into()),
                ("iso".into(), "VARCHAR".into()),
                ("n".into(), "BIGINT".into()),
            ]
        );
        assert_eq!(t.read_range(0, 0, 1).unwrap().get_value(0), Value::Date(1));
        assert_eq!(
            t.read_range(1, 0, 1).unwrap().get_value(0),
            Value::Timestamp(86_400_000_000 + 60_000_000)
        );
        assert_eq!(t.read_range(0, 1, 1).unwrap().get_value(0), Value::Null);
    }
}
