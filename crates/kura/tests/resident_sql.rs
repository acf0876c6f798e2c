//! `SET resident_indexes` through SQL (paper 001): a set the pool cannot hold is
//! refused with SQLSTATE 53200 and leaves the setting as it was; a set that fits
//! is held, and index plans give the same rows with it as without.

use kura::tpch::load::{create_indexes, Source};
use kura::{Database, OpenOptions};

const QUERY: &str = "SELECT o.o_orderpriority, count(*) FROM customer c \
    JOIN orders o ON c.c_custkey = o.o_custkey \
    WHERE c.c_name LIKE 'Customer#00000010%' GROUP BY o.o_orderpriority ORDER BY 1";

#[test]
fn resident_indexes_are_refused_when_too_large_and_kept_when_they_fit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resident.kura");
    {
        let db = Database::open(&path, OpenOptions::default()).unwrap();
        let mut s = db.session();
        kura::tpch::load(&mut s, Source::Generate(0.01), &|_, _| {}).unwrap();
        create_indexes(&mut s, &|_| {}).unwrap();
    }
    let open = |bytes: u64| {
        Database::open(
            &path,
            OpenOptions {
                buffer_bytes: Some(bytes),
                ..OpenOptions::default()
            },
        )
        .unwrap()
    };
    // 1 MiB = 64 frames, all of which must stay free for queries.
    let small = open(1 << 20);
    let mut s = small.session();
    let err = s.execute("SET resident_indexes = 'all'").unwrap_err();
    assert_eq!(err.sqlstate(), "53200", "{err}");
    assert!(err.to_string().contains("resident indexes need"), "{err}");
    let shown = s.execute("SHOW resident_indexes").unwrap().rows();
    assert_eq!(
        format!("{:?}", shown[0][0]),
        format!("{:?}", kura_common::Value::Text("none".into()))
    );
    drop(s);
    drop(small);

    let db = open(32 << 20);
    let mut s = db.session();
    s.execute("SET enable_seqscan = off").unwrap();
    let without = s.execute(QUERY).unwrap().rows();
    s.execute("SET resident_indexes = 'customer_name, orders_custkey'")
        .unwrap();
    let held = db.storage().buffer().resident_frames();
    assert!(held > 0);
    let with = s.execute(QUERY).unwrap().rows();
    assert_eq!(format!("{with:?}"), format!("{without:?}"));
    assert!(!with.is_empty());
    // Nothing but the resident pages stays pinned after the query.
    assert_eq!(db.storage().buffer().pinned_frames(), held);
    s.execute("SET resident_indexes = none").unwrap();
    assert_eq!(db.storage().buffer().pinned_frames(), 0);
}
