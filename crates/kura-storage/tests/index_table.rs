//! Indexes built over stored tables: rows appended through a write transaction
//! (several row groups, NULLs), the index built from the committed table, and
//! index answers checked against the table's own rows.

#[path = "index_harness.rs"]
mod harness;

use std::ops::Bound;

use harness::{brute_force, rechecked, FileSink};
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::index::{build_for_table, KeyRange};
use kura_storage::{ColumnDef, Schema, Storage, StorageOptions};

fn col(name: &str, data_type: DataType) -> ColumnDef {
    ColumnDef {
        name: name.to_string(),
        data_type,
        nullable: true,
    }
}

#[test]
fn index_over_a_stored_table() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StorageOptions {
        buffer_bytes: 64 * 16384,
        direct_io: false,
        ..StorageOptions::default()
    };
    let storage = Storage::open(&dir.path().join("t.db"), opts).unwrap();
    let schema = Schema::new(vec![
        col("id", DataType::BigInt),
        col("name", DataType::Char(12)),
        col("day", DataType::Date),
    ]);
    let n = 150_000usize; // three row groups
    let rows: Vec<Vec<Value>> = (0..n)
        .map(|i| {
            let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            vec![
                Value::BigInt(i as i64),
                if x.is_multiple_of(11) {
                    Value::Null
                } else {
                    Value::Text(format!("c{:04}", x % 5000))
                },
                Value::Date((x % 2500) as i32 + 8000),
            ]
        })
        .collect();
    let mut txn = storage.begin().unwrap();
    txn.create_table("t", schema.clone()).unwrap();
    for chunk in rows.chunks(4096) {
        let columns = (0..3)
            .map(|c| {
                let vals: Vec<Value> = chunk.iter().map(|r| r[c].clone()).collect();
                Vector::from_values(schema.columns[c].data_type, &vals).unwrap()
            })
            .collect();
        txn.append("t", &Batch::new(columns)).unwrap();
    }
    txn.commit().unwrap();
    let table = storage.catalog().table("t").unwrap();
    assert!(table.row_groups().len() >= 2);

    let file = storage.buffer().file().clone();
    let mut sink = FileSink::at_end(file);
    let mut calls = Vec::new();
    let index = build_for_table(
        &table,
        "t_name_day",
        &["name".into(), "day".into()],
        false,
        &mut sink,
        &mut |d, t| calls.push((d, t)),
    )
    .unwrap();
    assert_eq!(index.entries, n as u64);
    assert_eq!(calls.last(), Some(&(n as u64, n as u64)));
    assert!(
        calls.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress never goes back: {calls:?}"
    );

    let keys: Vec<Vec<Value>> = rows
        .iter()
        .map(|r| vec![r[1].clone(), r[2].clone()])
        .collect();
    let bm = storage.buffer();
    for range in [
        KeyRange::eq(vec![Value::Text("c0042".into())]),
        KeyRange::eq(vec![Value::Null]),
        KeyRange::prefix(vec![], "c012"),
        KeyRange::range(
            vec![Value::Text("c0100".into())],
            Bound::Included(Value::Date(8100)),
            Bound::Unbounded,
        ),
        KeyRange::range(
            vec![],
            Bound::Excluded(Value::Text("c4990".into())),
            Bound::Unbounded,
        ),
    ] {
        assert_eq!(
            rechecked(&keys, &range, index.scan(bm, &range).unwrap()),
            brute_force(&keys, &range),
            "{range:?}"
        );
    }
    // Unique over the row id column succeeds, over names it fails naming a key.
    let id = build_for_table(
        &table,
        "t_pk",
        &["id".into()],
        true,
        &mut sink,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(
        id.lookup(bm, &[Value::BigInt(123_456)]).unwrap(),
        vec![123_456]
    );
    let err = build_for_table(
        &table,
        "t_name",
        &["name".into()],
        true,
        &mut sink,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("(name)=('c"), "{err}");
    let err = build_for_table(
        &table,
        "bad",
        &["nope".into()],
        false,
        &mut sink,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"nope\""), "{err}");
}
