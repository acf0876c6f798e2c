//! Printing results: an aligned table (or one record per block, `\x`) for people;
//! RFC 4180 CSV, TSV, JSON, JSON lines, markdown and Arrow IPC for programs and documents.

mod arrow_stream;

use std::io::{self, Write};

use clap::ValueEnum;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};

use kura::{QueryResult, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned table with borders.
    Table,
    /// RFC 4180 CSV: header first, quoted where needed, NULL as an empty field, '' as "".
    Csv,
    /// Tab-separated values (CSV quoting rules with a tab delimiter).
    Tsv,
    /// One JSON array of objects, keys in column order (duplicate names kept).
    Json,
    /// One JSON array of arrays, the column names first.
    JsonArrays,
    /// One JSON object per line.
    Jsonl,
    /// A GitHub-flavoured markdown table.
    Markdown,
    /// An Arrow IPC stream (binary: for a file or a pipe, `pyarrow.ipc.open_stream`).
    Arrow,
}

impl Format {
    /// Parses a name as `\pset format` or `.mode` give it (`line` and `box` map to
    /// the nearest kura format so sqlite and DuckDB habits work).
    pub fn parse(name: &str) -> Option<Format> {
        match name.to_ascii_lowercase().as_str() {
            "table" | "aligned" | "box" | "duckbox" => Some(Format::Table),
            "csv" => Some(Format::Csv),
            "tsv" | "tabs" => Some(Format::Tsv),
            "json" => Some(Format::Json),
            "json-arrays" | "jsonarrays" => Some(Format::JsonArrays),
            "jsonl" | "jsonlines" | "ndjson" => Some(Format::Jsonl),
            "markdown" | "md" => Some(Format::Markdown),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Json => "json",
            Format::JsonArrays => "json-arrays",
            Format::Jsonl => "jsonl",
            Format::Markdown => "markdown",
            Format::Arrow => "arrow",
        }
    }
}

/// Expanded display (`\x`): one block per record instead of one line per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expanded {
    Off,
    On,
    /// Expanded only when the table would be wider than the terminal.
    Auto,
}

/// How results are printed.
#[derive(Debug, Clone)]
pub struct Options {
    pub format: Format,
    /// CSV field delimiter (TSV always uses a tab).
    pub delimiter: u8,
    /// Text shown for NULL in table, markdown, CSV and TSV output (`None`: the
    /// format's own — empty in CSV/TSV, `table_null` in tables, `NULL` in markdown).
    /// JSON always writes its own `null`: a text there would be a string value.
    pub null: Option<String>,
    /// NULL in the table format when `null` is unset: `NULL`, or `∅` in the shell,
    /// where it must not look like the text 'NULL'. A display default only, so it
    /// never leaks into CSV or JSON after a `\pset format`.
    pub table_null: &'static str,
    pub expanded: Expanded,
    /// Print at most this many rows and say how many were left out (`None`: all).
    pub max_rows: Option<usize>,
    /// Width the table must fit for `\x auto` (`None`: no terminal, never expand).
    pub width: Option<usize>,
}

impl Options {
    pub fn new(format: Format) -> Self {
        Options {
            format,
            delimiter: b',',
            null: None,
            table_null: "NULL",
            expanded: Expanded::Off,
            max_rows: None,
            width: None,
        }
    }

    /// The text NULL is shown as in this format (JSON aside).
    pub fn null_text(&self) -> &str {
        match (&self.null, self.format) {
            (Some(n), _) => n,
            (None, Format::Csv | Format::Tsv) => "",
            (None, Format::Table) => self.table_null,
            (None, _) => "NULL",
        }
    }
}

/// Writes a statement's result; commands print their tag in table format.
pub fn print(out: &mut dyn Write, r: &QueryResult, opts: &Options) -> io::Result<()> {
    if !r.has_rows() {
        if opts.format == Format::Table || opts.format == Format::Markdown {
            writeln!(out, "{}", r.tag)?;
        }
        return Ok(());
    }
    let total = r.row_count();
    let shown = opts.max_rows.map_or(total, |m| m.min(total));
    let rows = rows(r).take(shown);
    match opts.format {
        Format::Table => table(out, r, rows, opts)?,
        Format::Csv => delimited(out, r, rows, opts.delimiter, opts)?,
        Format::Tsv => delimited(out, r, rows, b'\t', opts)?,
        Format::Json | Format::JsonArrays => json_array(out, r, rows, opts)?,
        Format::Jsonl => {
            for row in rows {
                json_object(out, r, &row)?;
                writeln!(out)?;
            }
        }
        Format::Markdown => markdown(out, r, rows, opts)?,
        Format::Arrow => arrow_stream::write(out, r, shown)?,
    }
    if shown < total {
        // On stderr for machine formats, so the data stays parseable.
        let note = format!(
            "({} more row{} not shown; \\pset maxrows 0 shows all)",
            total - shown,
            if total - shown == 1 { "" } else { "s" }
        );
        match opts.format {
            Format::Table | Format::Markdown => writeln!(out, "{note}")?,
            _ => eprintln!("{note}"),
        }
    }
    Ok(())
}

/// The result's rows one at a time, without materialising them all.
fn rows(r: &QueryResult) -> impl Iterator<Item = Vec<Value>> + '_ {
    r.batches
        .iter()
        .flat_map(|b| (0..b.len()).map(move |i| b.row(i)))
}

fn text(v: &Value, opts: &Options) -> String {
    if v.is_null() {
        opts.null_text().to_string()
    } else {
        v.to_string()
    }
}

fn table(
    out: &mut dyn Write,
    r: &QueryResult,
    rows: impl Iterator<Item = Vec<Value>>,
    opts: &Options,
) -> io::Result<()> {
    let cells: Vec<Vec<String>> = rows
        .map(|row| row.iter().map(|v| text(v, opts)).collect())
        .collect();
    let n = r.row_count();
    let footer = format!("({n} row{})", if n == 1 { "" } else { "s" });
    let expand = match opts.expanded {
        Expanded::On => true,
        Expanded::Off => false,
        Expanded::Auto => opts
            .width
            .is_some_and(|w| table_width(r, &cells) > w && !cells.is_empty()),
    };
    if expand {
        let label_width = r
            .columns
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        for (i, row) in cells.iter().enumerate() {
            writeln!(
                out,
                "-[ RECORD {} ]{}",
                i + 1,
                "-".repeat(label_width.max(8))
            )?;
            for (c, v) in r.columns.iter().zip(row) {
                // Continuation lines of a multi-line value line up under its first line.
                let value = v.replace('\n', &format!("\n{:label_width$} | ", ""));
                writeln!(out, "{:<label_width$} | {value}", c.name)?;
            }
        }
        return writeln!(out, "{footer}");
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(r.columns.iter().map(|c| c.name.clone()));
    for (i, c) in r.columns.iter().enumerate() {
        if c.data_type.is_numeric() {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    for row in cells {
        t.add_row(row);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{footer}")
}

/// Width of the aligned table: the widest line of every column plus borders.
fn table_width(r: &QueryResult, cells: &[Vec<String>]) -> usize {
    let widest = |s: &str| s.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let content: usize = r
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|row| widest(&row[i]))
                .max()
                .unwrap_or(0)
                .max(widest(&c.name))
        })
        .sum();
    content + 3 * r.columns.len() + 1
}

/// One field encoded by the csv crate (quoted only where needed); a lone field
/// that is empty comes out as `""`, which keeps '' apart from NULL.
struct FieldEncoder {
    writer: csv::Writer<SharedBuf>,
    bytes: SharedBuf,
}

/// A byte buffer the csv writer fills and the encoder drains after each field.
#[derive(Clone, Default)]
struct SharedBuf(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl FieldEncoder {
    fn new(delimiter: u8) -> Self {
        let bytes = SharedBuf::default();
        FieldEncoder {
            writer: csv::WriterBuilder::new()
                .delimiter(delimiter)
                .terminator(csv::Terminator::Any(b'\n'))
                .from_writer(bytes.clone()),
            bytes,
        }
    }

    /// Appends `field`, encoded, to `line`.
    fn encode(&mut self, field: &str, line: &mut Vec<u8>) -> io::Result<()> {
        self.writer.write_record([field])?;
        self.writer.flush()?;
        let mut bytes = self.bytes.0.borrow_mut();
        bytes.pop(); // the record terminator
        line.extend_from_slice(&bytes);
        bytes.clear();
        Ok(())
    }
}

fn delimited(
    out: &mut dyn Write,
    r: &QueryResult,
    rows: impl Iterator<Item = Vec<Value>>,
    delimiter: u8,
    opts: &Options,
) -> io::Result<()> {
    let mut enc = FieldEncoder::new(delimiter);
    let mut line = Vec::new();
    let mut emit =
        |fields: &mut dyn Iterator<Item = Option<String>>, out: &mut dyn Write| -> io::Result<()> {
            line.clear();
            for (i, f) in fields.enumerate() {
                if i > 0 {
                    line.push(delimiter);
                }
                match f {
                    // NULL: the null text as is (empty by default), never quoted.
                    None => line.extend_from_slice(opts.null_text().as_bytes()),
                    Some(s) => enc.encode(&s, &mut line)?,
                }
            }
            line.push(b'\n');
            out.write_all(&line)
        };
    emit(&mut r.columns.iter().map(|c| Some(c.name.clone())), out)?;
    for row in rows {
        emit(
            &mut row.iter().map(|v| (!v.is_null()).then(|| v.to_string())),
            out,
        )?;
    }
    Ok(())
}

/// A value as JSON text: numbers as numbers (decimals exactly as stored, from their
/// digits), booleans as booleans, dates and text as strings.
fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::Double(d) => {
            serde_json::Number::from_f64(*d).map_or_else(|| "null".to_string(), |n| n.to_string())
        }
        // A decimal's text is a valid JSON number; writing it directly keeps every
        // digit (no trip through f64).
        Value::Decimal(..) => v.to_string(),
        Value::Date(_) | Value::Timestamp(_) | Value::Interval(_) | Value::Text(_) => {
            serde_json::Value::from(v.to_string()).to_string()
        }
    }
}

fn json_object(out: &mut dyn Write, r: &QueryResult, row: &[Value]) -> io::Result<()> {
    // Written by hand, not through a JSON map: a map would reorder keys or merge
    // duplicate column names.
    out.write_all(b"{")?;
    for (i, (c, v)) in r.columns.iter().zip(row).enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        let key = serde_json::Value::from(c.name.as_str()).to_string();
        write!(out, "{key}:{}", json_value(v))?;
    }
    out.write_all(b"}")
}

fn json_array(
    out: &mut dyn Write,
    r: &QueryResult,
    rows: impl Iterator<Item = Vec<Value>>,
    opts: &Options,
) -> io::Result<()> {
    out.write_all(b"[")?;
    let mut first = true;
    if opts.format == Format::JsonArrays {
        let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
        write!(out, "\n{}", serde_json::Value::from(names))?;
        first = false;
    }
    for row in rows {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        if opts.format == Format::JsonArrays {
            let values: Vec<String> = row.iter().map(json_value).collect();
            write!(out, "[{}]", values.join(","))?;
        } else {
            json_object(out, r, &row)?;
        }
    }
    out.write_all(if first { b"]\n" } else { b"\n]\n" })
}

fn markdown(
    out: &mut dyn Write,
    r: &QueryResult,
    rows: impl Iterator<Item = Vec<Value>>,
    opts: &Options,
) -> io::Result<()> {
    let cell = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('|', "\\|")
            .replace('\n', "<br>")
    };
    let names: Vec<String> = r.columns.iter().map(|c| cell(&c.name)).collect();
    writeln!(out, "| {} |", names.join(" | "))?;
    let rule: Vec<&str> = r
        .columns
        .iter()
        .map(|c| {
            if c.data_type.is_numeric() {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for row in rows {
        let cells: Vec<String> = row.iter().map(|v| cell(&text(v, opts))).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
