//! `--format arrow`: a result as an Arrow IPC stream (schema, then record batches), through
//! the façade's Arrow converter (`kura::arrow`) — what pyarrow, polars and DuckDB read without parsing text.

use std::io::{self, Write};
use std::sync::Arc;

use arrow_ipc::writer::StreamWriter;
use kura::QueryResult;

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes the first `rows` rows of `r` as one Arrow IPC stream.
pub fn write(out: &mut dyn Write, r: &QueryResult, rows: usize) -> io::Result<()> {
    let columns: Vec<_> = r
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.data_type, true))
        .collect();
    let schema = Arc::new(kura::arrow::arrow_schema(&columns).map_err(other)?);
    let mut writer = StreamWriter::try_new(out, &schema).map_err(other)?;
    // One IPC message per kura batch would be thousands of small ones.
    let batches = r.batches.iter().cloned();
    for rb in kura::arrow::batches_to_arrow(batches, &schema, 0, rows, 122_880).map_err(other)? {
        writer.write(&rb).map_err(other)?;
    }
    writer.finish().map_err(other)
}
