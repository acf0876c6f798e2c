//! A column stored in ascending order without NULLs is known as such after a
//! commit and a reopen (format 9 marks each sorted page), whether appended in
//! batches or bulk-loaded in parallel chunks; a value out of order, a NULL, a
//! descending column, a text column or a later append below the last value
//! make it not ascending.

mod common;

use std::io::Write;

use common::*;
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::loader::{self, TextFormat};
use kura_storage::Schema;

const ROWS: i64 = 200_000;

fn schema() -> Schema {
    Schema::new(vec![
        col("up", DataType::BigInt, false),
        col("runs", DataType::Integer, false),
        col("down", DataType::BigInt, false),
        col("nulls", DataType::BigInt, true),
        col("bump", DataType::BigInt, false),
        col("text", DataType::Varchar(None), false),
    ])
}

/// Row `i`'s values: `up` and `runs` (runs of 7) ascend, `nulls` ascends
/// with one NULL, `bump` ascends but for one row late in the table.
fn row(i: i64) -> Vec<Value> {
    vec![
        Value::BigInt(i),
        Value::Integer((i / 7) as i32),
        Value::BigInt(ROWS - i),
        if i == 150_001 {
            Value::Null
        } else {
            Value::BigInt(i)
        },
        Value::BigInt(if i == 170_000 { 3 } else { i }),
        Value::Text(format!("{i:024}")),
    ]
}

fn batch(rows: std::ops::Range<i64>) -> Batch {
    let types = [
        DataType::BigInt,
        DataType::Integer,
        DataType::BigInt,
        DataType::BigInt,
        DataType::BigInt,
        DataType::Varchar(None),
    ];
    let values: Vec<Vec<Value>> = rows.map(row).collect();
    Batch::new(
        types
            .iter()
            .enumerate()
            .map(|(c, t)| {
                let col: Vec<Value> = values.iter().map(|r| r[c].clone()).collect();
                Vector::from_values(*t, &col).unwrap()
            })
            .collect(),
    )
}

fn assert_marks(table: &kura_storage::Table) {
    assert!(table.ascending(0), "ascending BIGINT");
    assert!(table.ascending(1), "ascending INTEGER with runs");
    assert!(!table.ascending(2), "descending");
    assert!(!table.ascending(3), "one NULL");
    assert!(!table.ascending(4), "one value out of order");
    assert!(!table.ascending(5), "text is not marked");
    assert!(table.unique(0), "increasing");
    assert!(!table.unique(1), "runs of equal values");
    assert!(!table.unique(5));
}

#[test]
fn appended_in_order_is_ascending_after_reopen_and_an_append_below_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("asc.kura");
    {
        let storage = open(&path);
        let mut txn = storage.begin().unwrap();
        txn.create_table("t", schema()).unwrap();
        let mut rng = Rng::new(11);
        let mut at = 0;
        while at < ROWS {
            let len = (1 + rng.below(9000) as i64).min(ROWS - at);
            txn.append("t", &batch(at..at + len)).unwrap();
            at += len;
        }
        txn.commit().unwrap();
        assert_marks(&storage.catalog().table("t").unwrap());
    }
    let storage = open(&path);
    let table = storage.catalog().table("t").unwrap();
    assert!(table.row_groups().len() > 1, "several row groups");
    assert_marks(&table);
    drop(table);

    // Rows appended at or above the last value keep the order.
    let mut txn = storage.begin().unwrap();
    txn.append("t", &batch(ROWS..ROWS + 10)).unwrap();
    txn.commit().unwrap();
    assert!(storage.catalog().table("t").unwrap().ascending(0));
    // One below it ends it.
    let mut txn = storage.begin().unwrap();
    txn.append("t", &batch(5..6)).unwrap();
    txn.commit().unwrap();
    drop(storage);
    let storage = open(&path);
    assert!(!storage.catalog().table("t").unwrap().ascending(0));
    assert!(!storage.catalog().table("t").unwrap().ascending(1));
}

#[test]
fn loaded_in_parallel_chunks_in_order_is_ascending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("load.kura");
    let csv = dir.path().join("rows.csv");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
        for i in 0..ROWS {
            let r = row(i);
            let cells: Vec<String> = r
                .iter()
                .map(|v| match v {
                    Value::Null => String::new(),
                    Value::Text(s) => s.clone(),
                    v => v.to_string(),
                })
                .collect();
            writeln!(f, "{}", cells.join(",")).unwrap();
        }
    }
    assert!(
        std::fs::metadata(&csv).unwrap().len() > loader::CHUNK_BYTES as u64,
        "the file spans several parse chunks"
    );
    {
        let storage = open(&path);
        let mut txn = storage.begin().unwrap();
        txn.create_table("t", schema()).unwrap();
        let fmt = TextFormat {
            delimiter: b',',
            header: false,
            quoted: true,
            null: None,
            ..TextFormat::default()
        };
        loader::load_file(&mut txn, "t", &csv, &fmt, 2, None).unwrap();
        txn.commit().unwrap();
    }
    let storage = open(&path);
    assert_marks(&storage.catalog().table("t").unwrap());
}
