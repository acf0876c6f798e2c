//! `COPY t | (query) TO 'file' (FORMAT parquet | json)`: a query's rows written as a Parquet
//! file (Arrow's `parquet` crate, zstd-compressed pages, INTERVAL as Parquet's twelve-byte
//! INTERVAL) or as newline-delimited JSON objects (`arrow-json`, NULLs written as null, JSON
//! values and arrays nested as they are), through kura's one converter from vectors to Arrow
//! (`kura_exec::arrow`, DESIGN.md "Files and Arrow"), batch by batch as the query runs. The
//! file appears whole or not at all: it is written under a temporary name beside the target
//! and renamed when complete.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, RecordBatch, StringArray};
use arrow_json::writer::{Encoder, EncoderFactory, EncoderOptions, LineDelimited, NullableEncoder};
use arrow_json::WriterBuilder;
use arrow_schema::{ArrowError, FieldRef, SchemaRef};
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use kura_common::{Batch, DataType};
use kura_exec::arrow::parquet_interval;

use crate::error::{KuraError, KuraResult};
use crate::file_access::FileAccess;
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
    /// Parquet with INTERVAL columns: the schema the writer takes, those columns as bytes.
    parquet_schema: Option<SchemaRef>,
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
            parquet_schema: None,
            rows: 0,
            error: None,
        })
    }

    fn open(&mut self, columns: &[ResultColumn]) -> KuraResult<()> {
        let described: Vec<(String, kura_common::DataType, bool)> = columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type, true))
            .collect();
        let mut schema = Arc::new(kura_exec::arrow::arrow_schema(&described)?);
        if self.format == ArrowFormat::Json {
            schema = Arc::new(mark_json(&schema, columns));
        }
        let file = File::create(&self.temp)
            .map_err(|e| KuraError::Invalid(format!("{}: {e}", self.target.display())))?;
        let writer = match self.format {
            ArrowFormat::Parquet => {
                // Row groups of DuckDB's size: each is a morsel for a reader's workers and a
                // zone for its filters, so the file should hold many (Arrow's default is
                // 1,048,576 rows).
                let mut props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
                let mut options = ArrowWriterOptions::new();
                let mut file_schema = schema.clone();
                if let Some((bytes, parquet)) = parquet_interval::parquet_writer_schema(&schema)? {
                    // INTERVAL has no order in Parquet: no statistics for it. The embedded
                    // Arrow schema would name the bytes, not intervals: left out.
                    for c in columns.iter().filter(|c| c.data_type == DataType::Interval) {
                        props = props.set_column_statistics_enabled(
                            ColumnPath::from(c.name.as_str()),
                            EnabledStatistics::None,
                        );
                    }
                    options = options
                        .with_parquet_schema(parquet)
                        .with_skip_arrow_metadata(true);
                    self.parquet_schema = Some(bytes.clone());
                    file_schema = bytes;
                }
                let options = options.with_properties(props.build());
                Writer::Parquet(
                    ArrowWriter::try_new_with_options(file, file_schema, options)
                        .map_err(|e| self.failed(e))?,
                )
            }
            // Every key in every object, a NULL as null (as DuckDB writes them); JSON and
            // JSONB values as JSON, not strings of it.
            ArrowFormat::Json => Writer::Json(
                WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .with_encoder_factory(Arc::new(NestedJson))
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
        let mut rb = kura_exec::arrow::batch_to_arrow(batch, schema)?;
        if let Some(bytes) = &self.parquet_schema {
            rb = interval_bytes(rb, bytes)?;
        }
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

/// `rb` with its interval columns as Parquet INTERVAL bytes, in the writer's `schema`.
fn interval_bytes(rb: RecordBatch, schema: &SchemaRef) -> KuraResult<RecordBatch> {
    let columns = rb
        .columns()
        .iter()
        .zip(rb.schema().fields())
        .map(|(a, f)| match f.data_type() {
            arrow_schema::DataType::Interval(_) => parquet_interval::to_parquet(a, f.name()),
            _ => Ok(a.clone()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| KuraError::Internal(format!("an interval batch for Parquet: {e}")))
}

/// Arrow's name of the extension type of JSON held as text (a field's metadata says it).
const JSON_EXTENSION: (&str, &str) = ("ARROW:extension:name", "arrow.json");

/// `schema` with the fields of kura's JSON and JSONB columns marked as Arrow's JSON.
fn mark_json(schema: &arrow_schema::Schema, columns: &[ResultColumn]) -> arrow_schema::Schema {
    let fields: Vec<arrow_schema::Field> = schema
        .fields()
        .iter()
        .zip(columns)
        .map(|(f, c)| match c.data_type {
            DataType::Json | DataType::Jsonb => f.as_ref().clone().with_metadata(
                [(JSON_EXTENSION.0.to_string(), JSON_EXTENSION.1.to_string())].into(),
            ),
            _ => f.as_ref().clone(),
        })
        .collect();
    arrow_schema::Schema::new(fields)
}

/// arrow-json's encoders with the fields marked JSON written as the JSON they hold —
/// objects, arrays, numbers — instead of strings of it, so read_json reads back what was
/// written.
#[derive(Debug)]
struct NestedJson;

impl EncoderFactory for NestedJson {
    fn make_default_encoder<'a>(
        &self,
        field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, ArrowError> {
        let marked = field.metadata().get(JSON_EXTENSION.0).map(String::as_str);
        match array.as_any().downcast_ref::<StringArray>() {
            Some(text) if marked == Some(JSON_EXTENSION.1) => Ok(Some(NullableEncoder::new(
                Box::new(RawJson(text)),
                text.nulls().cloned(),
            ))),
            _ => Ok(None),
        }
    }
}

/// The JSON text of each value, on one line (a line-delimited file's record is one line).
struct RawJson<'a>(&'a StringArray);

impl Encoder for RawJson<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(kura_common::json::compact(self.0.value(idx)).as_bytes());
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
