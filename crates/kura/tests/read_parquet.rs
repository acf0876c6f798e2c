//! `read_parquet` / `FROM "f.parquet"`: files written by Arrow's own writer in layouts kura
//! does not write (dictionary text, 8-bit and unsigned integers, 32-bit floats, nanosecond
//! timestamps, many row groups) read back value for value; a filter skips row groups by their
//! statistics and gives the same rows as without; several files by a glob; the refusals
//! (missing file, no match, not Parquet, a type kura lacks, files of other columns, a server
//! client without a file directory) name what is wrong.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, Float32Array, Int64Array, Int8Array, RecordBatch, StringArray,
    Time64MicrosecondArray, TimestampNanosecondArray, UInt32Array,
};
use kura::{Database, FileAccess, OpenOptions, Session, Value};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.db"), OpenOptions::default()).unwrap();
    (dir, db)
}

/// Writes `batches` to `path` with row groups of at most `group_rows` rows.
fn write(path: &Path, batches: &[RecordBatch], group_rows: usize) {
    let file = std::fs::File::create(path).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let mut w = ArrowWriter::try_new(file, batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

/// `n` rows from `start`: k (BIGINT k), tag (dictionary text of k % 3), small (Int8),
/// u (UInt32), f (Float32), ts (nanoseconds).
fn rows(start: i64, n: i64) -> RecordBatch {
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values(start..start + n));
    let mut tags = StringDictionaryBuilder::<Int32Type>::new();
    for i in start..start + n {
        if i % 7 == 0 {
            tags.append_null();
        } else {
            tags.append_value(["red", "green", "blue"][(i % 3) as usize]);
        }
    }
    let tag: ArrayRef = Arc::new(tags.finish());
    let small: ArrayRef = Arc::new(Int8Array::from_iter_values(
        (start..start + n).map(|i| (i % 100) as i8),
    ));
    let u: ArrayRef = Arc::new(UInt32Array::from_iter_values(
        (start..start + n).map(|i| u32::MAX - i as u32),
    ));
    let f: ArrayRef = Arc::new(Float32Array::from_iter_values(
        (start..start + n).map(|i| i as f32 / 4.0),
    ));
    let ts: ArrayRef = Arc::new(TimestampNanosecondArray::from_iter_values(
        (start..start + n).map(|i| i * 1_000_000_000 + 1_000),
    ));
    RecordBatch::try_from_iter([
        ("k", k),
        ("tag", tag),
        ("small", small),
        ("u", u),
        ("f", f),
        ("ts", ts),
    ])
    .unwrap()
}

fn one(s: &mut Session, sql: &str) -> Vec<Value> {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.rows()[0].clone()
}

#[test]
fn other_layouts_read_back_value_for_value() {
    let (dir, db) = db();
    let mut s = db.session();
    let path = dir.path().join("layouts.parquet");
    write(&path, &[rows(0, 10_000)], 1_000);
    let p = path.display();
    let r = s
        .execute(&format!(
            "SELECT k, tag, small, u, f, ts FROM read_parquet('{p}') WHERE k IN (0, 1, 5, 9999) ORDER BY k"
        ))
        .unwrap();
    let types: Vec<String> = r.columns.iter().map(|c| c.data_type.to_string()).collect();
    assert_eq!(
        types,
        [
            "BIGINT",
            "VARCHAR",
            "SMALLINT",
            "BIGINT",
            "DOUBLE",
            "TIMESTAMP"
        ]
    );
    let rows = r.rows();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0][1], Value::Null, "row 0 has a NULL tag (0 % 7)");
    assert_eq!(rows[1][1], Value::Text("green".into()));
    assert_eq!(rows[2][1], Value::Text("blue".into()));
    assert_eq!(rows[3][2], Value::Integer(99));
    assert_eq!(rows[3][3], Value::BigInt(u32::MAX as i64 - 9999));
    assert_eq!(rows[2][4], Value::Double(1.25));
    // Nanoseconds are cut to kura's microseconds.
    assert_eq!(rows[1][5], Value::Timestamp(1_000_001));
    // The whole file, aggregated, against the values as generated.
    let all = one(
        &mut s,
        &format!(
            "SELECT count(*), count(tag), sum(k), sum(small), min(u), max(f) FROM read_parquet('{p}')"
        ),
    );
    let nulls = (0..10_000).filter(|i| i % 7 == 0).count() as i64;
    let small: i64 = (0..10_000i64).map(|i| i % 100).sum();
    assert_eq!(all[0], Value::BigInt(10_000));
    assert_eq!(all[1], Value::BigInt(10_000 - nulls));
    assert_eq!(all[2].to_string(), (0..10_000i64).sum::<i64>().to_string());
    assert_eq!(all[3].to_string(), small.to_string());
    assert_eq!(all[4], Value::BigInt(u32::MAX as i64 - 9999));
    assert_eq!(all[5], Value::Double(9999.0 / 4.0));
    // Grouped on the dictionary text, joined to a stored table.
    s.execute_all(
        "CREATE TABLE colors (name VARCHAR, warm BOOLEAN);
         INSERT INTO colors VALUES ('red', true), ('green', false), ('blue', false);",
    )
    .unwrap();
    let r = s
        .execute(&format!(
            "SELECT c.warm, count(*) FROM read_parquet('{p}') AS f JOIN colors c ON c.name = f.tag \
             GROUP BY c.warm ORDER BY c.warm"
        ))
        .unwrap();
    let red = (0..10_000).filter(|i| i % 7 != 0 && i % 3 == 0).count() as i64;
    assert_eq!(
        r.rows(),
        vec![
            vec![Value::Boolean(false), Value::BigInt(10_000 - nulls - red)],
            vec![Value::Boolean(true), Value::BigInt(red)],
        ]
    );
}

#[test]
fn a_filter_skips_row_groups_and_keeps_the_same_rows() {
    let (dir, db) = db();
    let mut s = db.session();
    let path = dir.path().join("groups.parquet");
    write(&path, &[rows(0, 100_000)], 10_000);
    let p = path.display();
    let q = format!("SELECT count(*), sum(k) FROM read_parquet('{p}') WHERE k >= 95000");
    let got = one(&mut s, &q);
    assert_eq!(got[0], Value::BigInt(5_000));
    assert_eq!(
        got[1].to_string(),
        (95_000..100_000i64).sum::<i64>().to_string()
    );
    // The plan reads one row group of ten.
    let plan = s.execute(&format!("EXPLAIN ANALYZE {q}")).unwrap();
    let text: String = plan.rows().iter().map(|r| format!("{}\n", r[0])).collect();
    assert!(
        text.contains("rows skipped by zone maps 90000"),
        "the scan should read one row group of ten:\n{text}"
    );
    // A text filter does not skip wrongly (the dictionary column's statistics).
    let blue = one(
        &mut s,
        &format!("SELECT count(*) FROM read_parquet('{p}') WHERE tag = 'blue'"),
    );
    let expected = (0..100_000).filter(|i| i % 7 != 0 && i % 3 == 2).count() as i64;
    assert_eq!(blue[0], Value::BigInt(expected));
}

#[test]
fn a_glob_reads_several_files_and_a_quoted_name_is_a_file() {
    let (dir, db) = db();
    let mut s = db.session();
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    write(&parts.join("p1.parquet"), &[rows(0, 1_000)], 300);
    write(&parts.join("p2.parquet"), &[rows(1_000, 500)], 300);
    std::fs::write(parts.join("notes.txt"), "not parquet").unwrap();
    let glob = format!("{}/p*.parquet", parts.display());
    let got = one(
        &mut s,
        &format!("SELECT count(*), min(k), max(k) FROM read_parquet('{glob}')"),
    );
    assert_eq!(
        got,
        vec![Value::BigInt(1_500), Value::BigInt(0), Value::BigInt(1_499)]
    );
    let quoted = format!("{}/p2.parquet", parts.display());
    let got = one(
        &mut s,
        &format!("SELECT count(*), min(x.k) FROM \"{quoted}\" AS x(k)"),
    );
    assert_eq!(got, vec![Value::BigInt(500), Value::BigInt(1_000)]);
    // CREATE TABLE AS loads a file into the database.
    s.execute(&format!(
        "CREATE TABLE loaded AS SELECT * FROM read_parquet('{glob}')"
    ))
    .unwrap();
    let got = one(&mut s, "SELECT count(*), count(DISTINCT tag) FROM loaded");
    assert_eq!(got, vec![Value::BigInt(1_500), Value::BigInt(3)]);
}

#[test]
fn kura_writes_and_reads_its_own_files() {
    let (dir, db) = db();
    let mut s = db.session();
    s.execute_all(
        "CREATE TABLE t (i INTEGER, b BIGINT, d DOUBLE PRECISION, m DECIMAL(12,2), w DECIMAL(30,4), \
           dt DATE, ts TIMESTAMP, v VARCHAR(20), c CHAR(3), f BOOLEAN, sm SMALLINT);
         INSERT INTO t VALUES
           (1, 10000000000, 1.5, 12.34, 123456789012345678901.5, DATE '1998-12-01',
            TIMESTAMP '2026-12-03 10:11:12.5', 'café ☕', 'ab', true, -3),
           (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           (-7, -1, -0.25, -0.01, 0, DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', '', 'xyz', false, 32767);",
    )
    .unwrap();
    let path = dir.path().join("t.parquet");
    s.execute(&format!("COPY t TO '{}'", path.display()))
        .unwrap();
    let original = s.execute("SELECT * FROM t ORDER BY i").unwrap();
    let back = s
        .execute(&format!(
            "SELECT * FROM read_parquet('{}') ORDER BY i",
            path.display()
        ))
        .unwrap();
    // CHAR(3) comes back as text with its padding, as Parquet keeps it.
    assert_eq!(back.rows().len(), 3);
    for (a, b) in original.rows().iter().zip(back.rows().iter()) {
        for (c, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            assert_eq!(
                x.to_string().trim_end(),
                y.to_string().trim_end(),
                "column {c}"
            );
        }
    }
}

#[test]
fn refusals_name_what_is_wrong() {
    let (dir, db) = db();
    let mut s = db.session();
    let err = |s: &mut Session, sql: &str| {
        let e = s.execute(sql).unwrap_err();
        (e.sqlstate().to_string(), e.to_string())
    };
    let missing = dir.path().join("missing.parquet");
    let (code, msg) = err(
        &mut s,
        &format!("SELECT * FROM read_parquet('{}')", missing.display()),
    );
    assert_eq!(code, "58P01", "{msg}");
    assert!(msg.contains("missing.parquet"), "{msg}");
    let (code, msg) = err(
        &mut s,
        &format!(
            "SELECT * FROM read_parquet('{}/*.parquet')",
            dir.path().join("none").display()
        ),
    );
    assert_eq!(code, "58P01", "{msg}");
    assert!(msg.contains("no file matches"), "{msg}");
    let text = dir.path().join("text.parquet");
    std::fs::write(&text, "a,b\n1,2\n").unwrap();
    let (code, msg) = err(
        &mut s,
        &format!("SELECT * FROM read_parquet('{}')", text.display()),
    );
    assert_eq!(code, "22000", "{msg}");
    assert!(msg.contains("not a Parquet file"), "{msg}");
    // A time-of-day column has no kura type: named, not dropped.
    let times = dir.path().join("times.parquet");
    let t: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![1_000_000]));
    write(
        &times,
        &[RecordBatch::try_from_iter([("at", t)]).unwrap()],
        10,
    );
    let (code, msg) = err(
        &mut s,
        &format!("SELECT * FROM read_parquet('{}')", times.display()),
    );
    assert_eq!(code, "0A000", "{msg}");
    assert!(msg.contains("\"at\""), "{msg}");
    // Files of a glob with other columns.
    let mixed = dir.path().join("mixed");
    std::fs::create_dir(&mixed).unwrap();
    write(&mixed.join("a.parquet"), &[rows(0, 10)], 10);
    let other: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
    write(
        &mixed.join("b.parquet"),
        &[RecordBatch::try_from_iter([("k", other)]).unwrap()],
        10,
    );
    let (code, msg) = err(
        &mut s,
        &format!(
            "SELECT * FROM read_parquet('{}/*.parquet')",
            mixed.display()
        ),
    );
    assert_eq!(code, "22000", "{msg}");
    assert!(msg.contains("b.parquet"), "{msg}");
    let (code, _) = err(&mut s, "SELECT * FROM read_parquet(42)");
    assert_eq!(code, "42804");
    let (code, msg) = err(
        &mut s,
        "SELECT * FROM read_parquet('x.parquet', binary_as_string => true)",
    );
    assert_eq!(code, "0A000", "{msg}");
    // A server's client reads no file unless the server names a directory.
    let ok = dir.path().join("ok.parquet");
    write(&ok, &[rows(0, 10)], 10);
    let mut client = db.session();
    client.set_file_access(FileAccess::Denied);
    let (code, msg) = err(
        &mut client,
        &format!("SELECT * FROM read_parquet('{}')", ok.display()),
    );
    assert_eq!(code, "42501", "{msg}");
    let mut below = db.session();
    below.set_file_access(FileAccess::under(&mixed).unwrap());
    let got = one(&mut below, "SELECT count(*) FROM read_parquet('a.parquet')");
    assert_eq!(got, vec![Value::BigInt(10)]);
    let (code, msg) = err(&mut below, "SELECT * FROM read_parquet('../ok.parquet')");
    assert_eq!(code, "42501", "{msg}");
}

/// Serial, static and out-of-order scans of a file of many row groups give the same rows:
/// the out-of-order scan reads each row group's column chunks ahead (io_uring) and hands
/// them to the decoder, workers take whole row groups, and dictionary text (with NULLs) is
/// expanded from its keys.
#[test]
fn every_execution_mode_reads_many_row_groups_alike() {
    let (dir, db) = db();
    let mut s = db.session();
    let path = dir.path().join("modes.parquet");
    write(&path, &[rows(0, 60_000), rows(60_000, 60_000)], 7_000);
    let p = path.display();
    let q = format!(
        "SELECT tag, count(*), count(tag), sum(k), sum(length(tag)), min(ts), max(u) \
         FROM read_parquet('{p}') WHERE small < 90 GROUP BY tag ORDER BY tag"
    );
    let mut answers = Vec::new();
    for mode in ["serial", "static", "ooo"] {
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        let r = s.execute(&q).unwrap_or_else(|e| panic!("{mode}: {e}"));
        answers.push((mode, r.rows().to_vec()));
    }
    let kept = |t: Option<i64>| {
        (0..120_000i64)
            .filter(|i| i % 100 < 90)
            .filter(|i| match t {
                None => i % 7 == 0,
                Some(t) => i % 7 != 0 && i % 3 == t,
            })
            .collect::<Vec<_>>()
    };
    let blue = kept(Some(2));
    assert_eq!(answers[0].1.len(), 4, "blue, green, red, NULL");
    assert_eq!(answers[0].1[0][0], Value::Text("blue".into()));
    assert_eq!(answers[0].1[0][1], Value::BigInt(blue.len() as i64));
    assert_eq!(
        answers[0].1[0][3].to_string(),
        blue.iter().sum::<i64>().to_string()
    );
    assert_eq!(
        answers[0].1[3][2],
        Value::BigInt(0),
        "count(tag) of NULL tags"
    );
    assert_eq!(answers[0].1[3][1], Value::BigInt(kept(None).len() as i64));
    for (mode, rows) in &answers[1..] {
        assert_eq!(rows, &answers[0].1, "{mode} against serial");
    }
}
