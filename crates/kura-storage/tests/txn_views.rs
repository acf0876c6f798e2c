//! A write transaction's view of its own appends (`WriteTxn::snapshot` after
//! each statement): rows appended a few at a time are read back exactly after
//! every step, an earlier view still reads what it saw after later appends
//! rewrote the open row group's last pages, and the commit stores one row
//! group, not one per append.

mod common;

use std::sync::Arc;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{Schema, Table};

fn schema() -> Schema {
    Schema::new(vec![
        col("id", DataType::BigInt, false),
        col("x", DataType::Double, true),
        col("s", DataType::Varchar(None), true),
    ])
}

/// Row `i`: NULLs begin only at row 700, so a page first written without a
/// NULL bitmap must later hold fewer rows.
fn row(i: usize) -> Vec<Value> {
    let x = if i >= 700 && i.is_multiple_of(5) {
        Value::Null
    } else {
        Value::Double(i as f64 * 0.25)
    };
    let s = if i % 11 == 3 {
        Value::Null
    } else {
        Value::Text(format!("row {i} {}", "w".repeat(i % 40)))
    };
    vec![Value::BigInt(i as i64 * 7 - 300), x, s]
}

fn columns(rows: std::ops::Range<usize>) -> Vec<Vector> {
    let types = [DataType::BigInt, DataType::Double, DataType::Varchar(None)];
    (0..3)
        .map(|c| {
            let values: Vec<Value> = rows.clone().map(|i| row(i)[c].clone()).collect();
            Vector::from_values(types[c], &values).unwrap()
        })
        .collect()
}

fn assert_rows(table: &Table, n: usize, what: &str) {
    assert_eq!(table.row_count(), n as u64, "{what}: row count");
    let expected = columns(0..n);
    let mut rng = Rng::new(5);
    for (c, e) in expected.iter().enumerate() {
        let got = read_column(table, c, &mut rng);
        assert_same(&got, e, &format!("{what}: column {c}"));
    }
}

#[test]
fn appends_read_back_after_every_snapshot_and_commit_as_one_row_group() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("views.kura"));
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    let mut n = 0;
    let mut early: Option<(Arc<Table>, usize)> = None;
    let steps = [1, 1, 2, 1, 5, 1, 300, 1, 390, 1, 1, 4000, 1, 3];
    for (k, step) in steps.into_iter().enumerate() {
        txn.append("t", &Batch::new(columns(n..n + step))).unwrap();
        n += step;
        let view = txn.snapshot().unwrap();
        let table = view.table("t").unwrap();
        assert_rows(&table, n, &format!("after step {k}"));
        if n == 10 {
            early = Some((table, n));
        }
    }
    // A view taken early still reads its rows, though the pages it read
    // were written again since.
    let (table, rows) = early.unwrap();
    assert_rows(&table, rows, "an early view");
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    assert_rows(&table, n, "committed");
    assert_eq!(table.row_groups().len(), 1, "one row group");
}

#[test]
fn a_savepoint_keeps_rows_appended_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage = open(&dir.path().join("savepoint.kura"));
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema()).unwrap();
    txn.append("t", &Batch::new(columns(0..3))).unwrap();
    txn.snapshot().unwrap();
    txn.append("t", &Batch::new(columns(3..5))).unwrap();
    let saved = txn.savepoint().unwrap();
    txn.append("t", &Batch::new(columns(5..9))).unwrap();
    assert_rows(&txn.snapshot().unwrap().table("t").unwrap(), 9, "before");
    txn.rollback_to(&saved);
    assert_rows(
        &txn.snapshot().unwrap().table("t").unwrap(),
        5,
        "rolled back",
    );
    txn.append("t", &Batch::new(columns(5..8))).unwrap();
    txn.commit().unwrap();
    assert_rows(&storage.catalog().table("t").unwrap(), 8, "committed");
}
