//! `COPY t | (query) TO 'file' (FORMAT parquet | json)`: a query's rows written as a Parquet
//! file (Arrow's `parquet` crate, zstd-compressed pages) or as newline-delimited JSON objects
//! (`arrow-json`, NULLs written as null), through kura's one converter from vectors to Arrow
//! (`kura_exec::arrow`, DESIGN.md "Files and Arrow"), batch by batch as the query runs. The
//! file appears whole or not at all: it is written under a temporary name beside the target
//! and renamed when complete.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_json::writer::{LineDelimited, WriterBuilder};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use kura_common::Batch;

use crate::copy::FileAccess;
use crate::error::{KuraError, KuraResult};
use crate::result::{ResultColumn, RowSink};

/// The file formats COPY TO writes through Arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrowFormat {
    Parquet,
    /// Newline-delimited JSON objects, keys in column order.
    Json,
}

impl ArrowFormat {
    /// The format `FORMAT name` says, if it is one of these.
    pub fn named(name: &str) -> Option<ArrowFormat> {
        match name.to_ascii_lowercase().as_str() {
            "parquet" => Some(ArrowFormat::Parquet),
            "json" | "ndjson" | "jsonl" => Some(ArrowFormat::Json),
            _ => None,
        }
    }

    /// The format a file name's extension says (`.parquet`, `.json`, `.jsonl`, `.ndjson`).
    pub fn of_file(name: &str) -> Option<ArrowFormat> {
        let ext = Path::new(name).extension()?.to_str()?;
        ArrowFormat::named(ext)
    }

    pub fn name(self) -> &'static str {
        match self {
            ArrowFormat::Parquet => "parquet",
            ArrowFormat::Json => "json",
        }
    }
}

enum Writer {
    Parquet(ArrowWriter<File>),
    Json(arrow_json::Writer<BufWriter<File>, LineDelimited>),
}

/// Rows per row group kura writes.
const ROW_GROUP_ROWS: usize = 122_880;

/// A file being written from a query's batches.
pub(crate) struct ArrowFileOutput {
    format: ArrowFormat,
    target: PathBuf,
    temp: PathBuf,
    writer: Option<Writer>,
    schema: Option<SchemaRef>,
    rows: u64,
    /// Why the rows stopped, if a batch could not be converted or written.
    error: Option<KuraError>,
}

impl ArrowFileOutput {
    /// Prepares to write `name` in `format` (created when the query's columns are known), if
    /// this session may write server files (as `COPY ... TO 'file'` in text or CSV).
    pub fn create(
        access: &FileAccess,
        name: &str,
        format: ArrowFormat,
    ) -> KuraResult<ArrowFileOutput> {
        access.check_write(name)?;
        let target = PathBuf::from(name);
        let file_name = target
            .file_name()
            .ok_or_else(|| KuraError::Invalid(format!("{name}: not a file name")))?
            .to_string_lossy()
            .into_owned();
        let temp = target.with_file_name(format!(".{file_name}.kura-partial"));
        Ok(ArrowFileOutput {
            format,
            target,
            temp,
            writer: None,
            schema: None,
            rows: 0,
            error: None,
        })
    }

    fn open(&mut self, columns: &[ResultColumn]) -> KuraResult<()> {
        let described: Vec<(String, kura_common::DataType, bool)> = columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type, true))
            .collect();
        if self.format == ArrowFormat::Parquet {
            // Arrow's Parquet writer has no INTERVAL yet; say so before creating the file.
            if let Some(c) = columns
                .iter()
                .find(|c| c.data_type == kura_common::DataType::Interval)
            {
                return Err(KuraError::Unsupported(format!(
                    "writing column \"{}\" of type interval to Parquet (cast it to text)",
                    c.name
                )));
            }
        }
        let schema = Arc::new(kura_exec::arrow::arrow_schema(&described)?);
        let file = File::create(&self.temp)
            .map_err(|e| KuraError::Invalid(format!("{}: {e}", self.target.display())))?;
        let writer = match self.format {
            ArrowFormat::Parquet => {
                // Row groups of DuckDB's size: each is a morsel for a reader's workers and a
                // zone for its filters, so the file should hold many (Arrow's default is
                // 1,048,576 rows).
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .build();
                Writer::Parquet(
                    ArrowWriter::try_new(file, schema.clone(), Some(props))
                        .map_err(|e| self.failed(e))?,
                )
            }
            // Every key in every object, a NULL as null (as DuckDB writes them).
            ArrowFormat::Json => Writer::Json(
                WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build(BufWriter::new(file)),
            ),
        };
        self.schema = Some(schema);
        self.writer = Some(writer);
        Ok(())
    }

    fn write(&mut self, batch: Batch) -> KuraResult<()> {
        let (Some(schema), Some(writer)) = (&self.schema, self.writer.as_mut()) else {
            return Err(KuraError::Internal(
                "COPY TO a file: rows before columns".into(),
            ));
        };
        let n = batch.len() as u64;
        let rb = kura_exec::arrow::batch_to_arrow(batch, schema)?;
        let written = match writer {
            Writer::Parquet(w) => w.write(&rb).map_err(|e| e.to_string()),
            Writer::Json(w) => w.write(&rb).map_err(|e| e.to_string()),
        };
        let format = self.format;
        written.map_err(|e| failed(&self.target, format, e))?;
        self.rows += n;
        Ok(())
    }

    /// After the query: the file completed and put in place, and the rows written; or the
    /// error that stopped it, with nothing left behind.
    pub fn finish(mut self, query: KuraResult<()>) -> KuraResult<u64> {
        let r = query.and_then(|()| match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        });
        let r = r.and_then(|()| {
            if self.writer.is_none() {
                // A query that described no columns: nothing was created.
                return Err(KuraError::Invalid(format!(
                    "{}: the query has no columns to write",
                    self.target.display()
                )));
            }
            let closed = match self.writer.take().expect("checked above") {
                Writer::Parquet(w) => w.close().map(drop).map_err(|e| e.to_string()),
                Writer::Json(mut w) => w
                    .finish()
                    .map_err(|e| e.to_string())
                    .and_then(|()| w.into_inner().into_inner().map_err(|e| e.to_string()))
                    .and_then(|f| f.sync_all().map_err(|e| e.to_string())),
            };
            closed.map_err(|e| self.failed(e))?;
            std::fs::rename(&self.temp, &self.target)
                .map_err(|e| KuraError::Invalid(format!("{}: {e}", self.target.display())))
        });
        if r.is_err() {
            drop(self.writer.take());
            let _ = std::fs::remove_file(&self.temp);
        }
        r.map(|()| self.rows)
    }

    fn failed(&self, e: impl std::fmt::Display) -> KuraError {
        failed(&self.target, self.format, e)
    }
}

fn failed(target: &Path, format: ArrowFormat, e: impl std::fmt::Display) -> KuraError {
    KuraError::Invalid(format!(
        "{}: writing {}: {e}",
        target.display(),
        format.name()
    ))
}

impl RowSink for ArrowFileOutput {
    fn columns(&mut self, columns: &[ResultColumn]) {
        if let Err(e) = self.open(columns) {
            self.error = Some(e);
        }
    }

    fn rows(&mut self, batch: Batch) -> bool {
        if self.error.is_some() {
            return false;
        }
        match self.write(batch) {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}
