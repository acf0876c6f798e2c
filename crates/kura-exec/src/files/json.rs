//! JSON files as a table source (`read_json`): newline-delimited objects (one per line, the
//! `.jsonl` / `.ndjson` form) or one array of objects. Columns are the keys in the order they
//! first appear; types come from a sample (arrow-json's inference: integers, doubles,
//! booleans, text), and a text column whose sampled values are all dates or timestamps reads
//! as DATE or TIMESTAMP. The files are then read as a [`TextTable`], piece by piece through
//! arrow-json and the Arrow converter while the statement runs. Nested values (objects,
//! arrays) are refused, naming the column.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_json::reader::infer_json_schema_from_iterator;
use arrow_json::ReaderBuilder;
use arrow_schema::{ArrowError, DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use kura_common::DataType;
use serde_json::Value as Json;

use super::split::{self, Piece, Syntax};
use super::text::{from_batches, TextTable, GROUP_ROWS};
use super::{bad, io_error};
use crate::arrow::kura_type;
use crate::error::{ExecError, ExecResult};
use crate::source::SourceColumn;

/// Records the types are inferred from.
const SNIFF_RECORDS: usize = 20_000;

/// JSON files read as a table.
pub type JsonTable = TextTable;

/// The first `SNIFF_RECORDS` objects of the file, and their keys in order (the file read only
/// that far).
fn sample(path: &Path) -> ExecResult<(Vec<Json>, Vec<String>)> {
    let Some(piece) = split::head(path, Syntax::Json, SNIFF_RECORDS)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut bytes = vec![0u8; (piece.bytes.end - piece.bytes.start) as usize];
    File::open(path)
        .and_then(|f| f.read_exact_at(&mut bytes, piece.bytes.start))
        .map_err(|e| io_error(path, e))?;
    let not_json = |e: serde_json::Error| bad(path, format!("not JSON ({e})"));
    if piece.in_array {
        let text = array_text(&bytes);
        let rows: Vec<Json> = serde_json::from_slice(&text).map_err(not_json)?;
        let keys: Vec<Keys> = serde_json::from_slice(&text).map_err(not_json)?;
        Ok((rows, key_order(keys)))
    } else {
        let rows = serde_json::Deserializer::from_slice(&bytes)
            .into_iter::<Json>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(not_json)?;
        let keys = serde_json::Deserializer::from_slice(&bytes)
            .into_iter::<Keys>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(not_json)?;
        Ok((rows, key_order(keys)))
    }
}

/// An object's keys in the order written (serde_json's own map sorts them).
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The union of `objects`' keys, each where it first appears.
fn key_order(objects: impl IntoIterator<Item = Keys>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut order = Vec::new();
    for Keys(keys) in objects {
        for k in keys {
            if seen.insert(k.clone()) {
                order.push(k);
            }
        }
    }
    order
}

/// The type a text column's sampled values all have: DATE, TIMESTAMP or text.
fn text_type(rows: &[Json], key: &str) -> ArrowType {
    let texts: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.get(key).and_then(Json::as_str))
        .collect();
    if texts.is_empty() {
        return ArrowType::Utf8;
    }
    let date = |t: &&str| t.len() == 10 && kura_common::date::parse_date(t).is_ok();
    if texts.iter().all(date) {
        return ArrowType::Date32;
    }
    let timestamp = |t: &&str| {
        t.len() >= 16
            && matches!(t.as_bytes()[10], b' ' | b'T')
            && kura_common::timestamp::parse_timestamp(t).is_ok()
    };
    if texts.iter().all(timestamp) {
        return ArrowType::Timestamp(TimeUnit::Microsecond, None);
    }
    ArrowType::Utf8
}

/// The columns of the sampled `rows` (with keys `order`), and the Arrow schema the reader
/// decodes with.
fn infer(
    path: &Path,
    rows: &[Json],
    order: Vec<String>,
) -> ExecResult<(Vec<SourceColumn>, SchemaRef)> {
    if let Some(r) = rows.iter().find(|r| !r.is_object()) {
        let shown: String = r.to_string().chars().take(40).collect();
        return Err(bad(path, format!("a record is not a JSON object: {shown}")));
    }
    let inferred = infer_json_schema_from_iterator(rows.iter().map(Ok::<_, ArrowError>))
        .map_err(|e| bad(path, e))?;
    let mut columns = Vec::new();
    let mut fields = Vec::new();
    for key in order {
        let arrow_t = match inferred.field_with_name(&key).map(|f| f.data_type()) {
            Ok(ArrowType::Null) | Err(_) => ArrowType::Utf8,
            Ok(ArrowType::Utf8) => text_type(rows, &key),
            Ok(t @ (ArrowType::List(_) | ArrowType::Struct(_))) => {
                let what = if matches!(t, ArrowType::List(_)) {
                    "arrays"
                } else {
                    "objects"
                };
                return Err(ExecError::Unsupported(format!(
                    "{}: column {key:?} holds nested JSON ({what}); read_json reads \
                     scalar fields (numbers, text, booleans, null) only",
                    path.display()
                )));
            }
            Ok(t) => t.clone(),
        };
        let t: DataType = kura_type(&arrow_t, &key)?;
        columns.push(SourceColumn {
            name: key.clone(),
            data_type: t,
            nullable: true,
        });
        fields.push(Field::new(key, arrow_t, true));
    }
    if columns.is_empty() {
        return Err(bad(path, "no JSON object with a field in the file"));
    }
    Ok((columns, Arc::new(Schema::new(fields))))
}

/// Opening JSON files.
impl JsonTable {
    /// Reads `paths` (at least one): the first file's sampled keys and types are the table's;
    /// a later file's key the first lacks is an error, a key it lacks reads as NULL.
    pub fn open_json(paths: &[PathBuf]) -> ExecResult<JsonTable> {
        let Some(first) = paths.first() else {
            return Err(ExecError::Internal("read_json of no file".into()));
        };
        let (sample, order) = sample(first)?;
        let (columns, schema) = infer(first, &sample, order)?;
        drop(sample);
        let decoded = columns.clone();
        // arrow-json decodes whole objects: every column, whatever the scans want.
        let decode = move |path: &Path, piece: &Piece, bytes: &[u8], _: &[bool]| {
            let builder = ReaderBuilder::new(schema.clone())
                .with_batch_size(GROUP_ROWS)
                .with_strict_mode(true)
                .with_coerce_primitive(true);
            let batches: Result<Vec<RecordBatch>, ArrowError> = if piece.in_array {
                let rows: Vec<Json> = serde_json::from_slice(&array_text(bytes))
                    .map_err(|e| bad(path, format!("not JSON ({e})")))?;
                let mut decoder = builder.build_decoder().map_err(|e| bad(path, e))?;
                decoder
                    .serialize(&rows)
                    .and_then(|()| decoder.flush())
                    .map(|rb| rb.into_iter().collect())
            } else {
                builder.build(bytes).map_err(|e| bad(path, e))?.collect()
            };
            from_batches(path, &decoded, batches.map_err(|e| bad(path, e))?)
        };
        TextTable::new("read_json", columns, paths, Syntax::Json, Box::new(decode))
    }
}

/// A piece of an array as an array of its own: its bytes with the file's brackets and the
/// commas to the pieces beside it trimmed off, in new brackets.
fn array_text(bytes: &[u8]) -> Vec<u8> {
    let edge = |b: &u8| b.is_ascii_whitespace() || matches!(b, b'[' | b']' | b',');
    let start = bytes.iter().position(|b| !edge(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !edge(b))
        .map_or(start, |i| i + 1);
    let mut text = Vec::with_capacity(end - start + 2);
    text.push(b'[');
    text.extend_from_slice(&bytes[start..end]);
    text.push(b']');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::TableSource;
    use kura_common::Value;

    fn table(text: &str, name: &str) -> ExecResult<(tempfile::TempDir, JsonTable)> {
        // The directory lives as long as the table: its files are read while it is scanned.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Ok((dir, JsonTable::open_json(&[path])?))
    }

    fn described(t: &JsonTable) -> Vec<String> {
        t.columns
            .iter()
            .map(|c| format!("{} {}", c.name, c.data_type))
            .collect()
    }

    #[test]
    fn lines_and_arrays_read_alike() {
        let lines = "{\"id\": 1, \"name\": \"ann\", \"day\": \"2024-01-02\", \"ok\": true}\n\
                     \n\
                     {\"id\": 2, \"score\": 2.5, \"name\": null, \"day\": \"2024-02-03\"}\n";
        let array = "[{\"id\": 1, \"name\": \"ann\", \"day\": \"2024-01-02\", \"ok\": true},\
                      {\"id\": 2, \"score\": 2.5, \"name\": null, \"day\": \"2024-02-03\"}]";
        for (_dir, t) in [
            table(lines, "t.jsonl").unwrap(),
            table(array, "t.json").unwrap(),
        ] {
            assert_eq!(
                described(&t),
                [
                    "id BIGINT",
                    "name VARCHAR",
                    "day DATE",
                    "ok BOOLEAN",
                    "score DOUBLE"
                ]
            );
            assert_eq!(t.row_count(), 2);
            let score = t.read_range(4, 0, 2).unwrap();
            assert_eq!(score.get_value(0), Value::Null);
            assert_eq!(score.get_value(1), Value::Double(2.5));
            let day = t.read_range(2, 0, 2).unwrap();
            assert_eq!(
                day.get_value(1),
                Value::Date(kura_common::date::parse_date("2024-02-03").unwrap())
            );
        }
    }

    #[test]
    fn nested_and_broken_files_are_refused() {
        let e = table("{\"a\": {\"b\": 1}}\n", "n.jsonl").unwrap_err();
        assert!(e.to_string().contains("nested JSON"), "{e}");
        let e = table("{\"a\": 1}\n{\"a\": \n", "b.jsonl").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = table("[1, 2]", "s.json").unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
        let e = table("", "e.jsonl").unwrap_err();
        assert!(e.to_string().contains("no JSON object"), "{e}");
    }

    #[test]
    fn files_of_several_pieces_read_every_object_once() {
        let n = GROUP_ROWS + 321;
        let record = |i: usize| format!("{{\"id\": {i}, \"s\": \"}}{{ {i}\"}}");
        let lines: Vec<String> = (0..n).map(record).collect();
        let array = format!("[\n{}\n]\n", lines.join(",\n"));
        let pretty = lines.join("\n").replace(", ", ",\n  ");
        for (text, name) in [
            (lines.join("\n"), "l.jsonl"),
            (array, "a.json"),
            (pretty, "p.json"),
        ] {
            let (_dir, t) = table(&text, name).unwrap();
            assert_eq!(
                (t.row_count(), t.row_groups().len()),
                (n as u64, 2),
                "{name}"
            );
            let ids = t.read_range(0, 0, n).unwrap();
            assert!(
                (0..n).all(|i| ids.get_value(i) == Value::BigInt(i as i64)),
                "{name}"
            );
            let s = t.read_range(1, n as u64 - 1, 1).unwrap();
            assert_eq!(s.get_value(0), Value::Text(format!("}}{{ {}", n - 1)));
        }
    }
}
