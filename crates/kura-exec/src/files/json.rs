//! JSON files as a table source (`read_json`): newline-delimited objects (one per line, the
//! `.jsonl` / `.ndjson` form) or one array of objects. Columns are the keys in the order they
//! first appear; types come from a sample (arrow-json's inference: integers, doubles,
//! booleans, text), and a text column whose sampled values are all dates or timestamps reads
//! as DATE or TIMESTAMP. Nested values: a key whose sampled values are all arrays of one
//! scalar kind reads as an array (`bigint[]`, `double precision[]`, `text[]`,
//! `boolean[]`); any other key with nested values (objects, arrays of objects or arrays,
//! mixed arrays, nested and scalar values mixed) reads as JSON, each value its compact
//! text. The files are then read as a [`TextTable`], piece by piece through arrow-json and
//! the Arrow converter while the statement runs; a value the sampled type does not fit is
//! an error naming the file, its line and the column.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_json::reader::infer_json_schema_from_iterator;
use arrow_json::ReaderBuilder;
use arrow_schema::{ArrowError, DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use kura_common::json::{compact, raw_children, raw_trim, write_string};
use kura_common::{DataType, ElemType};
use serde_json::Value as Json;

use super::split::{self, Piece, Syntax};
use super::text::{from_batches, TextTable, GROUP_ROWS};
use super::{bad, io_error};
use crate::arrow::{arrow_type, kura_type};
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
        let (_, text) = array_text(&bytes);
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

/// The type of a key whose sampled values are nested (`None` when none is): an array of
/// the elements' one scalar kind when every value is an array and the elements are all
/// integers, numbers, text or booleans (NULLs among them); JSON otherwise (objects, arrays
/// of objects or arrays, elements of mixed kinds or none but NULL, nested values beside
/// scalars). kura has no structs, so an object stays JSON, read with `->`, `->>`.
fn nested_type(rows: &[Json], key: &str) -> Option<DataType> {
    let values = rows
        .iter()
        .filter_map(|r| r.get(key))
        .filter(|v| !v.is_null());
    let (mut arrays, mut others) = (Vec::new(), false);
    for v in values {
        match v {
            Json::Array(a) => arrays.push(a),
            Json::Object(_) => return Some(DataType::Json),
            _ => others = true,
        }
    }
    if arrays.is_empty() {
        return None;
    }
    if others {
        return Some(DataType::Json);
    }
    // The element kinds seen: integer, other number, text, boolean.
    let mut kinds = [false; 4];
    for e in arrays.into_iter().flatten() {
        match e {
            Json::Null => {}
            Json::Number(n) if n.is_i64() => kinds[0] = true,
            Json::Number(_) => kinds[1] = true,
            Json::String(_) => kinds[2] = true,
            Json::Bool(_) => kinds[3] = true,
            Json::Array(_) | Json::Object(_) => return Some(DataType::Json),
        }
    }
    let elem = match kinds {
        [true, false, false, false] => ElemType::BigInt,
        [_, true, false, false] => ElemType::Double,
        [false, false, true, false] => ElemType::Varchar(None),
        [false, false, false, true] => ElemType::Boolean,
        // No element but NULL in the sample says nothing of the type; kinds mixed.
        _ => return Some(DataType::Json),
    };
    Some(DataType::Array(elem))
}

/// The Arrow type arrow-json decodes a column of Arrow type `t` as: integers (alone or in
/// arrays) as their text, which the converter parses, so that a fraction past the sample is
/// an error (arrow-json's own integers would cut it).
fn decoded_as(t: ArrowType) -> ArrowType {
    match t {
        ArrowType::Int64 => ArrowType::Utf8,
        ArrowType::List(f) if f.data_type() == &ArrowType::Int64 => {
            ArrowType::List(Arc::new(f.as_ref().clone().with_data_type(ArrowType::Utf8)))
        }
        t => t,
    }
}

/// The columns of the sampled `rows` (with keys `order`), and the Arrow schema the reader
/// decodes with (a JSON column as text: [`rewrite`] makes its values strings).
fn infer(
    path: &Path,
    rows: &[Json],
    order: Vec<String>,
) -> ExecResult<(Vec<SourceColumn>, SchemaRef)> {
    if let Some(r) = rows.iter().find(|r| !r.is_object()) {
        let shown: String = r.to_string().chars().take(40).collect();
        return Err(bad(path, format!("a record is not a JSON object: {shown}")));
    }
    let nested: Vec<Option<DataType>> = order.iter().map(|k| nested_type(rows, k)).collect();
    let nested_keys: Vec<&String> = order
        .iter()
        .zip(&nested)
        .filter_map(|(k, t)| t.map(|_| k))
        .collect();
    // arrow-json infers the scalar keys; the nested ones (which it would make structs of,
    // or refuse when mixed with scalars) are left out of what it sees.
    let scalars = rows.iter().map(|r| {
        let mut r = r.clone();
        if let Some(o) = r.as_object_mut() {
            for k in &nested_keys {
                o.remove(k.as_str());
            }
        }
        Ok::<_, ArrowError>(r)
    });
    let inferred = infer_json_schema_from_iterator(scalars).map_err(|e| bad(path, e))?;
    let mut columns = Vec::new();
    let mut fields = Vec::new();
    for (key, nested) in order.into_iter().zip(nested) {
        let (t, arrow_t) = match nested {
            Some(t) => (t, arrow_type(t)),
            None => {
                let arrow_t = match inferred.field_with_name(&key).map(|f| f.data_type()) {
                    Ok(ArrowType::Null) | Err(_) => ArrowType::Utf8,
                    Ok(ArrowType::Utf8) => text_type(rows, &key),
                    Ok(t) => t.clone(),
                };
                (kura_type(&arrow_t, &key)?, arrow_t)
            }
        };
        columns.push(SourceColumn {
            name: key.clone(),
            data_type: t,
            nullable: true,
        });
        fields.push(Field::new(key, decoded_as(arrow_t), true));
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
        let pieces = Pieces {
            json_keys: columns
                .iter()
                .filter(|c| c.data_type == DataType::Json)
                .map(|c| c.name.clone())
                .collect(),
            schema,
            columns: columns.clone(),
        };
        // arrow-json decodes whole objects: every column, whatever the scans want.
        let decode = move |path: &Path, piece: &Piece, bytes: &[u8], _: &[bool]| {
            let text = pieces.text(path, piece.in_array, bytes)?;
            pieces
                .decode(path, &text)
                .map_err(|e| pieces.locate(path, piece, bytes).unwrap_or(e))
        };
        TextTable::new("read_json", columns, paths, Syntax::Json, Box::new(decode))
    }
}

/// How a table's pieces are decoded.
struct Pieces {
    schema: SchemaRef,
    columns: Vec<SourceColumn>,
    /// The JSON columns, whose values are made strings of their text before decoding.
    json_keys: HashSet<String>,
}

impl Pieces {
    /// A piece's records as arrow-json reads them: the bytes themselves for
    /// newline-delimited objects without JSON columns, otherwise each record on a line of
    /// its own with every JSON column's value [`rewrite`]n.
    fn text<'a>(
        &self,
        path: &Path,
        in_array: bool,
        bytes: &'a [u8],
    ) -> ExecResult<std::borrow::Cow<'a, [u8]>> {
        if !in_array && self.json_keys.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(bytes));
        }
        let mut out = String::with_capacity(bytes.len() + bytes.len() / 8);
        each_record(path, in_array, bytes, |_, record| {
            rewrite(path, record, &self.json_keys, &mut out)
        })?;
        Ok(std::borrow::Cow::Owned(out.into_bytes()))
    }

    /// Newline-delimited objects decoded into the table's columns.
    fn decode(&self, path: &Path, text: &[u8]) -> ExecResult<Vec<kura_common::Vector>> {
        let batches = ReaderBuilder::new(self.schema.clone())
            .with_batch_size(GROUP_ROWS)
            .with_strict_mode(true)
            .with_coerce_primitive(true)
            .build(text)
            .map_err(|e| bad(path, e))?
            .collect::<Result<Vec<RecordBatch>, ArrowError>>()
            .map_err(|e| bad(path, e))?;
        from_batches(path, &self.columns, batches)
    }

    /// After a piece failed to decode: the error of its first record that fails alone (or
    /// does not parse), naming the file's line it starts on.
    fn locate(&self, path: &Path, piece: &Piece, bytes: &[u8]) -> Option<ExecError> {
        each_record(path, piece.in_array, bytes, |at, record| {
            let mut one = String::new();
            rewrite(path, record, &self.json_keys, &mut one)?;
            self.decode(path, one.as_bytes()).map(drop).map_err(|e| {
                let newlines = bytes[..at].iter().filter(|&&b| b == b'\n').count() as u64;
                let what = e.to_string();
                let what = what
                    .strip_prefix(&format!("{}: ", path.display()))
                    .unwrap_or(&what);
                ExecError::File {
                    code: e.sqlstate(),
                    message: format!(
                        "{}: line {}: {}",
                        path.display(),
                        piece.line + 1 + newlines,
                        what.strip_prefix("Json error: ").unwrap_or(what)
                    ),
                }
            })
        })
        .err()
    }
}

/// Calls `f` with each record of a piece (an object of newline-delimited JSON, or an element
/// of the array the piece is part of) and the byte of the piece it starts at.
fn each_record(
    path: &Path,
    in_array: bool,
    bytes: &[u8],
    mut f: impl FnMut(usize, &str) -> ExecResult<()>,
) -> ExecResult<()> {
    let not_json = |e: &dyn std::fmt::Display| bad(path, format!("not JSON ({e})"));
    let text = std::str::from_utf8(bytes).map_err(|e| not_json(&e))?;
    if in_array {
        let (start, array) = array_text(bytes);
        let array = std::str::from_utf8(&array).map_err(|e| not_json(&e))?;
        let elements = raw_children(array)
            .map_err(|e| not_json(&e))?
            .unwrap_or_default();
        for (_, element) in elements {
            // The element's place in `array`, less its opening bracket, is past `start`.
            let at = element.as_ptr() as usize - array.as_ptr() as usize - 1 + start;
            f(at, element)?;
        }
        return Ok(());
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut end = 0;
    while let Some(value) = stream.next() {
        value.map_err(|e| not_json(&e))?;
        let next = stream.byte_offset();
        let record = raw_trim(&text[end..next]);
        let at = record.as_ptr() as usize - text.as_ptr() as usize;
        f(at, record)?;
        end = next;
    }
    Ok(())
}

/// Appends `record` (an object's text) to `out` as one line, each value of a key in
/// `json_keys` (but null) replaced by a JSON string of its compact text, the JSON column's
/// value; the other values as written.
fn rewrite(
    path: &Path,
    record: &str,
    json_keys: &HashSet<String>,
    out: &mut String,
) -> ExecResult<()> {
    let pairs = match raw_children(record) {
        Ok(Some(pairs)) if raw_trim(record).starts_with('{') => pairs,
        Ok(_) => {
            let shown: String = record.chars().take(40).collect();
            return Err(bad(path, format!("a record is not a JSON object: {shown}")));
        }
        Err(e) => return Err(bad(path, format!("not JSON ({e})"))),
    };
    out.push('{');
    for (i, (key, value)) in pairs.iter().enumerate() {
        let key = key.as_deref().unwrap_or_default();
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        let value = raw_trim(value);
        if value != "null" && json_keys.contains(key) {
            write_string(&compact(value), out);
        } else {
            out.push_str(value);
        }
    }
    out.push_str("}\n");
    Ok(())
}

/// A piece of an array as an array of its own: its bytes with the file's brackets and the
/// commas to the pieces beside it trimmed off, in new brackets; and the byte of the piece
/// the kept bytes start at.
fn array_text(bytes: &[u8]) -> (usize, Vec<u8>) {
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
    (start, text)
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
    fn nested_values_read_as_json_or_arrays() {
        let lines = "{\"o\": {\"y\": 1,  \"x\": [1, 2]}, \"i\": [1, null, 3], \"t\": [\"a b\", null], \
                     \"f\": [1, 2.5], \"b\": [true], \"ao\": [{\"k\": 1}], \"m\": [1, \"x\"], \"e\": []}\n\
                     {\"o\": 7, \"i\": null, \"t\": [], \"f\": [3], \"b\": [false, null], \
                     \"ao\": null, \"m\": [[1]], \"e\": []}\n";
        let array = format!("[{}]", lines.trim_end().replace('\n', ",\n"));
        for (_dir, t) in [
            table(lines, "n.jsonl").unwrap(),
            table(&array, "n.json").unwrap(),
        ] {
            assert_eq!(
                described(&t),
                [
                    "o JSON",
                    "i BIGINT[]",
                    "t VARCHAR[]",
                    "f DOUBLE[]",
                    "b BOOLEAN[]",
                    "ao JSON",
                    "m JSON",
                    "e JSON"
                ]
            );
            let row = |r: u64| -> Vec<Value> {
                (0..8)
                    .map(|c| t.read_range(c, r, 1).unwrap().get_value(0))
                    .collect()
            };
            let text = |s: &str| Value::Text(s.into());
            assert_eq!(
                row(0),
                [
                    text("{\"y\":1,\"x\":[1,2]}"),
                    text("{1,NULL,3}"),
                    text("{\"a b\",NULL}"),
                    text("{1,2.5}"),
                    text("{t}"),
                    text("[{\"k\":1}]"),
                    text("[1,\"x\"]"),
                    text("[]")
                ]
            );
            assert_eq!(
                row(1),
                [
                    text("7"),
                    Value::Null,
                    text("{}"),
                    text("{3}"),
                    text("{f,NULL}"),
                    Value::Null,
                    text("[[1]]"),
                    text("[]")
                ]
            );
        }
    }

    #[test]
    fn broken_files_and_values_the_sample_did_not_see_are_refused() {
        let e = table("{\"a\": 1}\n{\"a\": \n", "b.jsonl").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = table("[1, 2]", "s.json").unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
        let e = table("", "e.jsonl").unwrap_err();
        assert!(e.to_string().contains("no JSON object"), "{e}");
        // Past the sample: a scalar where arrays were, text in an integer array, an object
        // in a text column, fractions among integers; each names its line and column.
        let many = |last: &str| {
            let mut text = "{\"a\": [1], \"s\": \"x\", \"n\": 1}\n".repeat(SNIFF_RECORDS + 1);
            text.push_str(last);
            text
        };
        for (last, what) in [
            ("{\"a\": 5}", "expected [ got 5"),
            ("{\"a\": [\"x\"]}", "'x'"),
            ("{\"s\": {\"k\": 1}}", "expected string"),
            ("{\"a\": [1.5]}", "'1.5'"),
            ("{\"n\": 2.5}", "'2.5'"),
        ] {
            let (_dir, t) = table(&many(last), "late.jsonl").unwrap();
            let n = t.row_count();
            let e = t.read_range(0, n - 1, 1).unwrap_err();
            let line = format!("line {}: ", SNIFF_RECORDS + 2);
            assert_eq!(e.sqlstate(), "22000", "{e}");
            assert!(e.to_string().contains(&line), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
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
