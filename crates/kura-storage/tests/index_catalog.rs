//! Indexes in the catalog: created inside a write transaction, persisted across
//! reopening, rebuilt when their table grows, dropped with their pages freed.

use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::index::KeyRange;
use kura_storage::{ColumnDef, Schema, Storage, StorageOptions};

fn batch(from: i64, to: i64) -> Batch {
    let ids: Vec<Value> = (from..to).map(Value::BigInt).collect();
    let grp: Vec<Value> = (from..to)
        .map(|i| Value::Integer((i % 10) as i32))
        .collect();
    Batch::new(vec![
        Vector::from_values(DataType::BigInt, &ids).unwrap(),
        Vector::from_values(DataType::Integer, &grp).unwrap(),
    ])
}

#[test]
fn index_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let opts = || StorageOptions {
        buffer_bytes: 64 * 16384,
        direct_io: false,
        ..StorageOptions::default()
    };
    let schema = Schema::new(vec![
        ColumnDef {
            name: "id".into(),
            data_type: DataType::BigInt,
            nullable: false,
        },
        ColumnDef {
            name: "grp".into(),
            data_type: DataType::Integer,
            nullable: false,
        },
    ]);
    {
        let s = Storage::open(&path, opts()).unwrap();
        let mut t = s.begin().unwrap();
        t.create_table("t", schema).unwrap();
        t.append("t", &batch(0, 1000)).unwrap();
        // Created in the same transaction as the rows: built at commit.
        t.create_index("t_grp", "t", &["grp".into()], false, &mut |_, _| {})
            .unwrap();
        t.commit().unwrap();
        let mut t = s.begin().unwrap();
        let mut last = (0, 0);
        // Names are exact (SQL folds unquoted identifiers before they get here).
        assert!(t
            .create_index("t_pk", "T", &["id".into()], true, &mut |_, _| {})
            .is_err());
        assert!(t
            .create_index("t_pk", "t", &["ID".into()], true, &mut |_, _| {})
            .is_err());
        t.create_index("t_pk", "t", &["id".into()], true, &mut |d, n| last = (d, n))
            .unwrap();
        assert_eq!(last, (1000, 1000));
        let err = t
            .create_index("t_grp_u", "t", &["grp".into()], true, &mut |_, _| {})
            .unwrap_err();
        assert!(err.to_string().contains("(grp)=(0) is duplicated"), "{err}");
        assert!(t
            .create_index("t_pk", "t", &["id".into()], false, &mut |_, _| {})
            .is_err());
        t.commit().unwrap();
    }
    let s = Storage::open(&path, opts()).unwrap();
    let cat = s.catalog();
    assert_eq!(
        cat.index_names(),
        vec!["t_grp".to_string(), "t_pk".to_string()]
    );
    let pk = cat.index("t_pk").unwrap();
    assert!(pk.unique && pk.table == "t");
    assert_eq!(
        pk.tree.lookup(s.buffer(), &[Value::BigInt(777)]).unwrap(),
        vec![777]
    );
    let grp = &cat.index("t_grp").unwrap().tree;
    assert_eq!(
        grp.lookup(s.buffer(), &[Value::Integer(3)]).unwrap().len(),
        100
    );

    // Appending rebuilds the table's indexes at commit.
    let mut t = s.begin().unwrap();
    t.append("t", &batch(1000, 1500)).unwrap();
    t.commit().unwrap();
    let cat = s.catalog();
    let pk = &cat.index("t_pk").unwrap().tree;
    assert_eq!(pk.entries, 1500);
    assert_eq!(
        pk.lookup(s.buffer(), &[Value::BigInt(1499)]).unwrap(),
        vec![1499]
    );
    assert_eq!(
        pk.scan(s.buffer(), &KeyRange::all()).unwrap(),
        (0..1500).collect::<Vec<u64>>()
    );
    // Appending a duplicate to a unique index's table fails the commit.
    let mut t = s.begin().unwrap();
    t.append("t", &batch(5, 6)).unwrap();
    assert!(t.commit().unwrap_err().to_string().contains("(id)=(5)"));
    assert_eq!(s.catalog().table("t").unwrap().row_count(), 1500);

    // Dropping frees the tree's pages.
    let free_before = s.catalog().free_page_count();
    let pages = s
        .catalog()
        .index("t_grp")
        .unwrap()
        .tree
        .pages(s.buffer())
        .unwrap()
        .len();
    let mut t = s.begin().unwrap();
    t.drop_index("t_grp").unwrap();
    assert!(t.drop_index("t_grp").is_err());
    t.commit().unwrap();
    assert!(s.catalog().index("t_grp").is_none());
    assert!(s.catalog().free_page_count() >= free_before + pages);
    let mut t = s.begin().unwrap();
    t.drop_table("t").unwrap();
    t.commit().unwrap();
    assert!(s.catalog().index_names().is_empty());
}
