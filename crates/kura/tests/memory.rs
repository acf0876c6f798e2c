//! Memory bounds across sessions: every query's hash tables, sorts and collected
//! results also count against the budget all running queries share
//! (`OpenOptions::max_memory`, `kura --max-memory`); a query that does not fit
//! fails with 53200 and gives its memory back, and the database goes on serving.

use kura::tpch::load::Source;
use kura::{Database, OpenOptions, Value};

fn tpch(max_memory: u64) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(
        &dir.path().join("t.db"),
        OpenOptions {
            buffer_bytes: Some(16 << 20),
            max_memory: Some(max_memory),
            ..Default::default()
        },
    )
    .unwrap();
    kura::tpch::load(&mut db.session(), Source::Generate(0.01), &|_, _| {}).unwrap();
    (dir, db)
}

#[test]
fn a_query_beyond_the_shared_budget_fails_and_gives_its_memory_back() {
    let (_dir, db) = tpch(2 << 20);
    let mut s = db.session();
    // The session's own limit (4 GB by default) would allow it; the shared one not.
    let e = s.execute("SELECT * FROM lineitem").unwrap_err();
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.to_string().contains("all running queries share"), "{e}");
    assert_eq!(db.shared_memory(), (0, 2 << 20));
    // Small answers still run, from this session and another.
    let r = s.execute("SELECT count(*) FROM lineitem").unwrap();
    assert_eq!(r.rows()[0][0], Value::BigInt(60_175));
    let r = db
        .session()
        .execute("SELECT l_orderkey FROM lineitem ORDER BY l_extendedprice DESC LIMIT 1")
        .unwrap();
    assert_eq!(r.rows().len(), 1);
    assert_eq!(db.shared_memory().0, 0);
}

#[test]
fn the_session_limit_applies_below_the_shared_one() {
    let (_dir, db) = tpch(1 << 30);
    let mut s = db.session();
    s.execute("SET memory_limit = '1MB'").unwrap();
    let e = s
        .execute("SELECT l_comment, count(*) FROM lineitem GROUP BY l_comment")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "53200");
    assert!(e.to_string().contains("SET memory_limit"), "{e}");
    assert_eq!(db.shared_memory().0, 0);
}
