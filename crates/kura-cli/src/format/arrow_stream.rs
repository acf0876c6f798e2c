//! `--format arrow`: a result as an Arrow IPC stream (schema, then record batches), through
//! kura-exec's Arrow converter — what pyarrow, polars and DuckDB read without parsing text.

use std::io::{self, Write};
use std::sync::Arc;

use arrow_ipc::writer::StreamWriter;
use kura::QueryResult;
use kura_common::Batch;

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
    let schema = Arc::new(kura_exec::arrow::arrow_schema(&columns).map_err(other)?);
    let mut writer = StreamWriter::try_new(out, &schema).map_err(other)?;
    let mut left = rows;
    for b in &r.batches {
        if left == 0 {
            break;
        }
        let b = b.clone().compact();
        let b = if b.len() > left {
            let mut cut = Batch::new(b.columns.iter().map(|v| v.slice(0, left)).collect());
            cut.num_rows = left;
            cut
        } else {
            b
        };
        left -= b.len();
        let rb = kura_exec::arrow::batch_to_arrow(b, &schema).map_err(other)?;
        writer.write(&rb).map_err(other)?;
    }
    writer.finish().map_err(other)
}
