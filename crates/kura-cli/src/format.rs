//! Printing results: an aligned table for people, `|`-separated CSV (header
//! first) or JSON rows for programs.

use std::io::Write;

use clap::ValueEnum;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, Table};

use kura::{QueryResult, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Writes a statement's result; commands print their tag.
pub fn print(out: &mut dyn Write, r: &QueryResult, format: Format) -> std::io::Result<()> {
    if !r.has_rows() {
        if format == Format::Table {
            writeln!(out, "{}", r.tag)?;
        }
        return Ok(());
    }
    match format {
        Format::Table => {
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
            for row in r.rows() {
                t.add_row(row.iter().map(display));
            }
            writeln!(out, "{t}")?;
            let n = r.row_count();
            writeln!(out, "({n} row{})", if n == 1 { "" } else { "s" })
        }
        Format::Csv => {
            let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
            writeln!(out, "{}", names.join("|"))?;
            for row in r.rows() {
                let fields: Vec<String> = row.iter().map(|v| v.to_string()).collect();
                writeln!(out, "{}", fields.join("|"))?;
            }
            Ok(())
        }
        Format::Json => {
            let rows: Vec<serde_json::Value> = r
                .rows()
                .iter()
                .map(|row| {
                    let obj = r
                        .columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| (c.name.clone(), json(v)))
                        .collect();
                    serde_json::Value::Object(obj)
                })
                .collect();
            writeln!(out, "{}", serde_json::Value::Array(rows))
        }
    }
}

fn display(v: &Value) -> String {
    if v.is_null() {
        "NULL".into()
    } else {
        v.to_string()
    }
}

fn json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Boolean(b) => (*b).into(),
        Value::Integer(i) => (*i).into(),
        Value::BigInt(i) => (*i).into(),
        Value::Double(d) => {
            serde_json::Number::from_f64(*d).map_or(serde_json::Value::Null, Into::into)
        }
        // Decimals stay exact: as JSON numbers written from their text.
        Value::Decimal(..) => {
            serde_json::from_str(&v.to_string()).unwrap_or_else(|_| v.to_string().into())
        }
        Value::Date(_) | Value::Text(_) => v.to_string().into(),
    }
}
