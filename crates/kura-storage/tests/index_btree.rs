//! B+tree index behaviour beyond random conditions: tall trees (height ≥ 3) with
//! every key looked up, unique-violation detection, empty indexes, building from
//! column vectors, page accounting, metadata serialisation, oversized keys and
//! damaged pages.

#[path = "index_harness.rs"]
mod harness;

use std::ops::Bound;

use harness::{brute_force, rechecked, Db};
use kura_common::{DataType, Value, Vector};
use kura_storage::index::{max_entry_bytes, BTreeIndex, IndexBuilder, KeyRange};
use kura_storage::StorageError;

/// Rows of (INTEGER, VARCHAR) whose texts share a long prefix: long separators
/// make inner nodes narrow, so modest row counts give tall trees.
fn tall_rows(n: usize, pad: usize) -> Vec<Vec<Value>> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = if x.is_multiple_of(23) {
                Value::Null
            } else {
                Value::Integer((x % 7) as i32)
            };
            let tail: String = (0..(x >> 8) % 40)
                .map(|i| (b'a' + ((x >> (i % 50)) % 3) as u8) as char)
                .collect();
            vec![a, Value::Text(format!("{}{tail}", "k".repeat(pad)))]
        })
        .collect()
}

#[test]
fn tall_trees_answer_every_key() {
    for (ps, pad) in [(8192usize, 2200usize), (16384, 4800)] {
        let rows = tall_rows(6000, pad);
        let mut db = Db::new(ps, 24);
        let types = [DataType::Integer, DataType::Varchar(None)];
        let index = db.build(&types, &rows, false).unwrap();
        assert!(
            index.height >= 3,
            "page size {ps}: height {} (leaves {})",
            index.height,
            index.leaf_count
        );
        assert_eq!(index.entries, rows.len() as u64);
        // Every distinct key, including the first and last keys of each leaf.
        let key_cmp = |a: &Vec<Value>, b: &Vec<Value>| {
            harness::cmp_nulls_first(&a[0], &b[0]).then(harness::cmp_nulls_first(&a[1], &b[1]))
        };
        let mut keys: Vec<Vec<Value>> = rows.clone();
        keys.sort_by(key_cmp);
        keys.dedup_by(|a, b| key_cmp(a, b).is_eq());
        for k in &keys {
            let range = KeyRange::eq(k.clone());
            assert_eq!(
                rechecked(&rows, &range, index.scan(&db.bm, &range).unwrap()),
                brute_force(&rows, &range),
                "key {k:?}"
            );
        }
        for a in [
            Value::Null,
            Value::Integer(0),
            Value::Integer(3),
            Value::Integer(9),
        ] {
            let range = KeyRange::eq(vec![a]);
            assert_eq!(
                rechecked(&rows, &range, index.scan(&db.bm, &range).unwrap()),
                brute_force(&rows, &range)
            );
        }
        let mid = Value::Text(format!("{}ab", "k".repeat(pad)));
        let range = KeyRange::range(
            vec![Value::Integer(2)],
            Bound::Excluded(mid.clone()),
            Bound::Unbounded,
        );
        assert_eq!(
            rechecked(&rows, &range, index.scan(&db.bm, &range).unwrap()),
            brute_force(&rows, &range)
        );
        let range = KeyRange::prefix(vec![Value::Integer(5)], &format!("{}ba", "k".repeat(pad)));
        assert_eq!(
            rechecked(&rows, &range, index.scan(&db.bm, &range).unwrap()),
            brute_force(&rows, &range)
        );
        // The full index in key order.
        assert_eq!(
            index.scan(&db.bm, &KeyRange::all()).unwrap(),
            brute_force(&rows, &KeyRange::all())
        );
        assert_eq!(db.bm.pinned_frames(), 0);
    }
}

#[test]
fn pages_are_the_written_nodes() {
    let rows = tall_rows(3000, 2200);
    let mut db = Db::new(8192, 16);
    let first_free = db.file.len_pages().unwrap();
    let index = db
        .build(&[DataType::Integer, DataType::Varchar(None)], &rows, false)
        .unwrap();
    let written = db.file.len_pages().unwrap() - first_free;
    let mut pages = index.pages(&db.bm).unwrap();
    assert_eq!(pages.len() as u64, written);
    assert!(
        pages.len() as u64 > index.leaf_count,
        "inner nodes are counted too"
    );
    pages.sort_unstable();
    pages.dedup();
    assert_eq!(pages.len() as u64, written, "no page is listed twice");
    assert!(pages.contains(&index.root) && pages.contains(&index.first_leaf));
}

#[test]
fn unique_index_rejects_duplicates_by_name() {
    let mut db = Db::new(8192, 16);
    let rows: Vec<Vec<Value>> = [1, 2, 3, 42, 5, 42]
        .iter()
        .map(|&x| vec![Value::Integer(x)])
        .collect();
    let mut b = IndexBuilder::new(vec![DataType::Integer], true)
        .unwrap()
        .named("orders_pk", &["o_orderkey".into()]);
    for (i, r) in rows.iter().enumerate() {
        b.push(r, i as u64).unwrap();
    }
    let err = b.finish(&mut db.sink()).unwrap_err().to_string();
    assert!(
        err.contains("orders_pk") && err.contains("(o_orderkey)=(42)"),
        "{err}"
    );

    // Composite: only the full key must be distinct; NULLs never collide.
    let types = [DataType::Integer, DataType::Char(4)];
    let t = |s: &str| Value::Text(s.into());
    let ok_rows = vec![
        vec![Value::Integer(1), t("a")],
        vec![Value::Integer(1), t("b")],
        vec![Value::Integer(2), t("a")],
        vec![Value::Null, t("a")],
        vec![Value::Null, t("a")],
        vec![Value::Integer(3), Value::Null],
        vec![Value::Integer(3), Value::Null],
    ];
    let index = db.build(&types, &ok_rows, true).unwrap();
    assert!(index.unique);
    assert_eq!(index.entries, 7);
    let mut dup = ok_rows.clone();
    dup.push(vec![Value::Integer(1), t("b  ")]); // CHAR: trailing blanks do not count
    let err = db.build(&types, &dup, true).unwrap_err().to_string();
    assert!(
        err.contains("=(1, 'b')") && err.contains("duplicated"),
        "{err}"
    );
}

#[test]
fn empty_index() {
    let mut db = Db::new(8192, 8);
    let index = db.build(&[DataType::BigInt], &[], false).unwrap();
    assert_eq!((index.entries, index.height, index.leaf_count), (0, 1, 1));
    assert!(index.scan(&db.bm, &KeyRange::all()).unwrap().is_empty());
    assert!(index
        .range_pieces(&db.bm, &KeyRange::all(), 4)
        .unwrap()
        .is_empty());
    assert!(index
        .lookup_many(&db.bm, &[vec![Value::BigInt(1)]])
        .unwrap()
        .is_empty());
}

#[test]
fn building_from_vectors_equals_building_from_values() {
    let types = [
        DataType::Date,
        DataType::Decimal {
            precision: 15,
            scale: 2,
        },
        DataType::Double,
    ];
    let rows: Vec<Vec<Value>> = (0..5000i64)
        .map(|i| {
            vec![
                if i % 17 == 0 {
                    Value::Null
                } else {
                    Value::Date((i % 40) as i32 - 20)
                },
                Value::Decimal(((i * 7919) % 1000 - 500) as i128, 2),
                Value::Double(((i % 13) as f64 - 6.0) * 0.5),
            ]
        })
        .collect();
    let mut db = Db::new(16384, 16);
    let from_values = db.build(&types, &rows, false).unwrap();
    let mut b = IndexBuilder::new(types.to_vec(), false).unwrap();
    for chunk in (0..rows.len()).collect::<Vec<_>>().chunks(2048) {
        let cols: Vec<Vector> = (0..3)
            .map(|c| {
                let vals: Vec<Value> = chunk.iter().map(|&r| rows[r][c].clone()).collect();
                Vector::from_values(types[c], &vals).unwrap()
            })
            .collect();
        b.push_columns(&cols.iter().collect::<Vec<_>>(), chunk[0] as u64)
            .unwrap();
    }
    let from_vectors = b.finish(&mut db.sink()).unwrap();
    let conditions = [
        KeyRange::all(),
        KeyRange::eq(vec![Value::Date(3)]),
        KeyRange::eq(vec![Value::Null]),
        KeyRange::range(
            vec![Value::Date(-4)],
            Bound::Included(Value::Decimal(-1, 0)),
            Bound::Excluded(Value::Integer(2)),
        ),
        KeyRange::range(
            vec![Value::Date(5), Value::Decimal(123, 2)],
            Bound::Excluded(Value::Double(-1.0)),
            Bound::Unbounded,
        ),
        KeyRange::range(
            vec![],
            Bound::Included(Value::Date(-3)),
            Bound::Included(Value::Date(3)),
        ),
    ];
    for c in &conditions {
        let expected = brute_force(&rows, c);
        assert_eq!(from_values.scan(&db.bm, c).unwrap(), expected, "{c:?}");
        assert_eq!(from_vectors.scan(&db.bm, c).unwrap(), expected, "{c:?}");
    }
}

#[test]
fn metadata_round_trips_through_serde() {
    let mut db = Db::new(8192, 8);
    let rows: Vec<Vec<Value>> = (0..1000)
        .map(|i| vec![Value::Text(format!("name#{i:05}"))])
        .collect();
    let index = db
        .build(&[DataType::Varchar(Some(25))], &rows, true)
        .unwrap();
    let bytes = postcard::to_stdvec(&index).unwrap();
    let back: BTreeIndex = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, index);
    let range = KeyRange::prefix(vec![], "name#004");
    assert_eq!(
        back.scan(&db.bm, &range).unwrap(),
        (400..500).collect::<Vec<u64>>()
    );
}

#[test]
fn oversized_keys_and_bad_conditions_are_errors() {
    let mut db = Db::new(8192, 8);
    let long = "x".repeat(max_entry_bytes(8192));
    let err = db
        .build(
            &[DataType::Varchar(None)],
            &[vec![Value::Text(long)]],
            false,
        )
        .unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
    let index = db
        .build(&[DataType::Integer], &[vec![Value::Integer(1)]], false)
        .unwrap();
    for bad in [
        KeyRange::eq(vec![Value::Text("1".into())]),
        KeyRange::eq(vec![Value::Integer(1), Value::Integer(2)]),
        KeyRange::range(vec![], Bound::Included(Value::Null), Bound::Unbounded),
        KeyRange::prefix(vec![], "1"),
    ] {
        assert!(
            index.scan(&db.bm, &bad).is_err(),
            "{bad:?} should be rejected"
        );
    }
    // Values the column cannot hold exactly match nothing rather than failing.
    assert!(index
        .lookup(&db.bm, &[Value::Decimal(15, 1)])
        .unwrap()
        .is_empty());
    assert_eq!(
        index.lookup(&db.bm, &[Value::Decimal(10, 1)]).unwrap(),
        vec![0]
    );
}

#[test]
fn damaged_node_pages_are_reported() {
    let rows: Vec<Vec<Value>> = (0..20000).map(|i| vec![Value::BigInt(i * 3)]).collect();
    let mut db = Db::new(8192, 8);
    let index = db.build(&[DataType::BigInt], &rows, false).unwrap();
    assert!(index.height >= 2);
    // A fresh pool, so the damaged leaf is read from disk.
    let pieces = index
        .range_pieces(&db.bm, &KeyRange::eq(vec![Value::BigInt(30000)]), 8)
        .unwrap();
    let leaf = pieces[0].leaves[0];
    // Flip one byte of that leaf on disk.
    let mut page = vec![0u8; 8192];
    db.file.read_page(leaf, &mut page).unwrap();
    page[200] ^= 0x40;
    db.file.write_pages(leaf, &page).unwrap();
    let bm = kura_storage::BufferManager::new(db.file.clone(), 8, "clock").unwrap();
    match index.lookup(&bm, &[Value::BigInt(30000)]) {
        Err(StorageError::Checksum { page, .. }) => assert_eq!(page, leaf),
        other => panic!("expected a checksum error, got {other:?}"),
    }
    // Other leaves still answer.
    assert_eq!(index.lookup(&bm, &[Value::BigInt(3)]).unwrap(), vec![1]);
}
