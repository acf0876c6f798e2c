//! `COPY ... TO 'file.parquet'`: every column type kura can write, NULLs, unicode and an
//! empty result, read back with Arrow's Parquet reader and compared value by value; a result
//! larger than one Parquet row group; the refusals (a type Parquet is not written for, STDOUT,
//! COPY FROM a Parquet file, text options) leave no file behind.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType,
};
use arrow_array::{Array, RecordBatch};
use kura::{Database, OpenOptions, Session};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.db"), OpenOptions::default()).unwrap();
    (dir, db)
}

fn read(path: &std::path::Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn setup(s: &mut Session) {
    s.execute_all(
        "CREATE TABLE t (i INTEGER, b BIGINT, d DOUBLE PRECISION, m DECIMAL(12,2), \
           dt DATE, ts TIMESTAMP, v VARCHAR(20), f BOOLEAN);
         INSERT INTO t VALUES
           (1, 10000000000, 1.5, 12.34, DATE '1998-12-01', TIMESTAMP '2026-12-03 10:11:12.5', 'café ☕', true),
           (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           (-7, -1, -0.25, -0.01, DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', '', false);",
    )
    .unwrap();
}

#[test]
fn every_type_nulls_and_unicode_read_back_as_written() {
    let (dir, db) = db();
    let mut s = db.session();
    setup(&mut s);
    let path = dir.path().join("t.parquet");
    let r = s
        .execute(&format!("COPY t TO '{}'", path.display()))
        .unwrap();
    assert_eq!(r.tag, "COPY 3");
    let batches = read(&path);
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 3);
    let b = &batches[0];
    let names: Vec<&str> = b
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["i", "b", "d", "m", "dt", "ts", "v", "f"]);
    let i = b.column(0).as_primitive::<Int32Type>();
    assert_eq!((i.value(0), i.is_null(1), i.value(2)), (1, true, -7));
    let big = b.column(1).as_primitive::<Int64Type>();
    assert_eq!(big.value(0), 10_000_000_000);
    let d = b.column(2).as_primitive::<Float64Type>();
    assert_eq!((d.value(0), d.value(2)), (1.5, -0.25));
    let m = b.column(3).as_primitive::<Decimal128Type>();
    assert_eq!((m.precision(), m.scale()), (12, 2));
    assert_eq!((m.value(0), m.is_null(1), m.value(2)), (1234, true, -1));
    let dt = b.column(4).as_primitive::<Date32Type>();
    assert_eq!((dt.value(0), dt.value(2)), (10561, 0));
    let ts = b.column(5).as_primitive::<TimestampMicrosecondType>();
    assert_eq!(ts.value(0), 1_796_292_672_500_000);
    let v = b.column(6).as_string::<i32>();
    assert_eq!(
        (v.value(0), v.is_null(1), v.value(2)),
        ("café ☕", true, "")
    );
    let f = b.column(7).as_boolean();
    assert_eq!((f.value(0), f.is_null(1), f.value(2)), (true, true, false));
    // Only the file itself: the temporary name it was written under is gone.
    assert_eq!(files_in(dir.path()), ["t.db", "t.parquet"]);
}

#[test]
fn a_query_an_empty_result_and_many_row_groups() {
    let (dir, db) = db();
    let mut s = db.session();
    let empty = dir.path().join("empty.parquet");
    let r = s
        .execute(&format!(
            "COPY (SELECT 1 AS one WHERE false) TO '{}' (FORMAT parquet)",
            empty.display()
        ))
        .unwrap();
    assert_eq!(r.tag, "COPY 0");
    let batches = read(&empty);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);

    // More rows than a row group holds (122,880), written as they come.
    let big = dir.path().join("series.data");
    let r = s
        .execute(&format!(
            "COPY (SELECT x, x * 2 AS y FROM generate_series(1, 1500000) AS g(x)) TO '{}' (FORMAT parquet)",
            big.display()
        ))
        .unwrap();
    assert_eq!(r.tag, "COPY 1500000");
    let meta = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&big).unwrap())
        .unwrap()
        .metadata()
        .clone();
    assert!(
        meta.num_row_groups() >= 2,
        "{} row groups",
        meta.num_row_groups()
    );
    let (mut n, mut sum) = (0usize, 0i64);
    for b in read(&big) {
        n += b.num_rows();
        let y = b.column(1);
        let y = y.as_primitive::<Int32Type>();
        sum += y.values().iter().map(|&v| i64::from(v)).sum::<i64>();
    }
    assert_eq!(n, 1_500_000);
    assert_eq!(sum, 1_500_000 * 1_500_001);
}

#[test]
fn refusals_leave_no_file() {
    let (dir, db) = db();
    let mut s = db.session();
    setup(&mut s);
    let path = dir.path().join("x.parquet");
    let p = path.display();
    for (sql, expect) in [
        // Parquet's INTERVAL has no sign: refused naming the column, not written wrong.
        (
            format!("COPY (SELECT INTERVAL '-1 day' AS i) TO '{p}'"),
            "column \"i\"",
        ),
        (
            format!("COPY t TO '{p}' (FORMAT parquet, HEADER)"),
            "HEADER",
        ),
        // COPY FROM a Parquet file reads it (as INSERT ... SELECT): this one is missing.
        (format!("COPY t FROM '{p}'"), "could not open file"),
        (
            format!("COPY (SELECT 1/0 AS x) TO '{p}'"),
            "division by zero",
        ),
    ] {
        let e = s.execute(&sql).expect_err(&sql).to_string();
        assert!(
            e.to_lowercase().contains(&expect.to_lowercase()),
            "{sql}: {e}"
        );
        assert_eq!(files_in(dir.path()), ["t.db"], "{sql} left a file");
    }
    // To a client: refused before a row is sent.
    let e = s
        .copy_out("COPY t TO STDOUT (FORMAT parquet)", &mut Nowhere(0))
        .expect_err("parquet to STDOUT")
        .to_string();
    assert!(e.contains("files only"), "{e}");
}

/// A client that takes COPY output and counts its lines.
struct Nowhere(usize);

impl kura::CopyOutput for Nowhere {
    fn start(&mut self, _columns: usize, _binary: bool) {}
    fn lines(&mut self, lines: Vec<Vec<u8>>) -> bool {
        self.0 += lines.len();
        true
    }
}
