//! `COPY t | (query) TO 'file.parquet' [(FORMAT parquet)]`: a query's rows written as a
//! Parquet file (Arrow's `parquet` crate, zstd-compressed pages) through kura's one converter
//! from vectors to Arrow (`kura_exec::arrow`, DESIGN.md "Files and Arrow"), batch by batch as
//! the query runs. The file appears whole or not at all: it is written under a temporary name
//! beside the target and renamed when complete.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use kura_common::Batch;

use crate::copy::FileAccess;
use crate::error::{KuraError, KuraResult};
use crate::result::{ResultColumn, RowSink};

/// Whether a COPY TO file writes Parquet: `FORMAT parquet`, or no format said and a name
/// ending in `.parquet`.
pub(crate) fn is_parquet_name(name: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Rows per row group kura writes.
const ROW_GROUP_ROWS: usize = 122_880;

/// A Parquet file being written from a query's batches.
pub(crate) struct ParquetOutput {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<ArrowWriter<File>>,
    schema: Option<SchemaRef>,
    rows: u64,
    /// Why the rows stopped, if a batch could not be converted or written.
    error: Option<KuraError>,
}

impl ParquetOutput {
    /// Prepares to write `name` (created when the query's columns are known), if this
    /// session may write server files (as `COPY ... TO 'file'` in text or CSV).
    pub fn create(access: &FileAccess, name: &str) -> KuraResult<ParquetOutput> {
        access.check_write(name)?;
        let target = PathBuf::from(name);
        let file_name = target
            .file_name()
            .ok_or_else(|| KuraError::Invalid(format!("{name}: not a file name")))?
            .to_string_lossy()
            .into_owned();
        let temp = target.with_file_name(format!(".{file_name}.kura-partial"));
        Ok(ParquetOutput {
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
        let schema = Arc::new(kura_exec::arrow::arrow_schema(&described)?);
        let file = File::create(&self.temp)
            .map_err(|e| KuraError::Invalid(format!("{}: {e}", self.target.display())))?;
        // Row groups of DuckDB's size: each is a morsel for a reader's workers and a zone
        // for its filters, so the file should hold many (Arrow's default is 1,048,576 rows).
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|e| parquet_error(&self.target, e))?;
        self.schema = Some(schema);
        self.writer = Some(writer);
        Ok(())
    }

    fn write(&mut self, batch: Batch) -> KuraResult<()> {
        let (Some(schema), Some(writer)) = (&self.schema, self.writer.as_mut()) else {
            return Err(KuraError::Internal(
                "COPY TO parquet: rows before columns".into(),
            ));
        };
        let n = batch.len() as u64;
        let rb = kura_exec::arrow::batch_to_arrow(batch, schema)?;
        writer
            .write(&rb)
            .map_err(|e| parquet_error(&self.target, e))?;
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
            let writer = self.writer.take().expect("checked above");
            writer.close().map_err(|e| parquet_error(&self.target, e))?;
            std::fs::rename(&self.temp, &self.target)
                .map_err(|e| KuraError::Invalid(format!("{}: {e}", self.target.display())))
        });
        if r.is_err() {
            drop(self.writer.take());
            let _ = std::fs::remove_file(&self.temp);
        }
        r.map(|()| self.rows)
    }
}

fn parquet_error(target: &Path, e: parquet::errors::ParquetError) -> KuraError {
    KuraError::Invalid(format!("{}: writing Parquet: {e}", target.display()))
}

impl RowSink for ParquetOutput {
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
