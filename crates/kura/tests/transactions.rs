//! Transactions across sessions and reopenings: one writer at a time (a second
//! waits, bounded by its statement_timeout), a transaction that only reads holds
//! nobody up, a rollback leaves the file and the buffer pool as they were, and a
//! commit survives reopening. The single-session semantics are in
//! `tests/slt/transactions.slt`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kura::{Database, OpenOptions, Session, Value};

/// A directory removed when dropped (the crate has no tempfile dependency).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("kura-txn-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn db(&self) -> PathBuf {
        self.0.join("t.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> Database {
    Database::open(
        path,
        OpenOptions {
            buffer_bytes: Some(4 << 20),
            ..Default::default()
        },
    )
    .unwrap()
}

fn scalar(s: &mut Session, sql: &str) -> Value {
    s.execute(sql).unwrap().rows()[0][0].clone()
}

fn int(s: &mut Session, sql: &str) -> i64 {
    match scalar(s, sql) {
        Value::Integer(v) => v as i64,
        Value::BigInt(v) => v,
        Value::Decimal(v, 0) => v as i64,
        other => panic!("{sql}: not an integer: {other:?}"),
    }
}

#[test]
fn a_second_writer_waits_until_its_time_limit_then_goes_through_after_commit() {
    let dir = TempDir::new("wait");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE t (x INTEGER)").unwrap();
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO t VALUES (1)").unwrap();

    b.execute("SET statement_timeout = 300").unwrap();
    let t0 = Instant::now();
    let err = b.execute("INSERT INTO t VALUES (2)").unwrap_err();
    assert_eq!(err.sqlstate(), "57014", "{err}");
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // The waiting writer changed nothing, and readers are not held up.
    assert_eq!(int(&mut b, "SELECT count(*) FROM t"), 0);

    // A writer that waits without a limit goes through once the first commits.
    let waiter = std::thread::spawn({
        let db = db.clone();
        move || {
            let mut c = db.session();
            c.execute("INSERT INTO t VALUES (3)").unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(!waiter.is_finished(), "the second writer did not wait");
    a.execute("COMMIT").unwrap();
    waiter.join().unwrap();
    assert_eq!(int(&mut b, "SELECT sum(x) FROM t"), 4);
}

#[test]
fn a_transaction_that_only_reads_does_not_hold_writers_up() {
    let dir = TempDir::new("read");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE t (x INTEGER)").unwrap();
    a.execute("BEGIN").unwrap();
    assert_eq!(int(&mut a, "SELECT count(*) FROM t"), 0);
    b.execute("SET statement_timeout = 2000").unwrap();
    b.execute("INSERT INTO t VALUES (1)").unwrap();
    // Read committed, as PostgreSQL's default: the next statement sees it.
    assert_eq!(int(&mut a, "SELECT count(*) FROM t"), 1);
    a.execute("COMMIT").unwrap();
}

#[test]
fn rollback_leaves_the_file_and_the_buffer_pool_as_they_were() {
    let dir = TempDir::new("rollback");
    let db = open(&dir.db());
    let mut s = db.session();
    s.execute("CREATE TABLE t (x BIGINT, y VARCHAR)").unwrap();
    let pages = db.storage().page_count();
    s.execute("BEGIN").unwrap();
    s.execute("INSERT INTO t VALUES (1, 'rolled back')")
        .unwrap();
    for _ in 0..17 {
        s.execute("INSERT INTO t SELECT x + 1, y FROM t").unwrap();
    }
    // Read back inside the transaction: its pages are now in the buffer pool.
    let inside = int(&mut s, "SELECT count(*) FROM t WHERE y = 'rolled back'");
    assert!(inside >= 100_000, "{inside}");
    s.execute("ROLLBACK").unwrap();
    assert_eq!(db.storage().page_count(), pages);
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 0);

    // The next writer reuses the same page ids; what it wrote must be read,
    // not the rolled-back pages still cached under those ids.
    s.execute("INSERT INTO t VALUES (7, 'kept')").unwrap();
    for _ in 0..10 {
        s.execute("INSERT INTO t SELECT x, y FROM t").unwrap();
    }
    assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE y = 'kept'"), 1024);
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 1024);
    assert_eq!(int(&mut s, "SELECT sum(x) FROM t"), 7 * 1024);
}

#[test]
fn committed_work_survives_reopening_and_rolled_back_work_does_not() {
    let dir = TempDir::new("reopen");
    {
        let db = open(&dir.db());
        let mut s = db.session();
        s.execute("CREATE TABLE t (x INTEGER)").unwrap();
        s.execute("BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); COMMIT")
            .unwrap();
        s.execute("BEGIN; INSERT INTO t VALUES (100); CREATE TABLE u (y INTEGER)")
            .unwrap();
        // The session ends with its transaction open: it is rolled back.
    }
    let db = open(&dir.db());
    let mut s = db.session();
    assert_eq!(int(&mut s, "SELECT sum(x) FROM t"), 3);
    assert!(s.execute("SELECT * FROM u").is_err());
    // And the writer is free again.
    s.execute("INSERT INTO t VALUES (4)").unwrap();
    assert_eq!(int(&mut s, "SELECT sum(x) FROM t"), 7);
}

#[test]
fn a_dropped_session_releases_its_transaction() {
    let dir = TempDir::new("drop");
    let db = open(&dir.db());
    let mut a = db.session();
    a.execute("CREATE TABLE t (x INTEGER)").unwrap();
    a.execute("BEGIN; INSERT INTO t VALUES (1)").unwrap();
    drop(a);
    let mut b = db.session();
    b.execute("SET statement_timeout = 2000").unwrap();
    b.execute("INSERT INTO t VALUES (2)").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(x) FROM t"), 2);
}
