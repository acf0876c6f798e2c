//! Transactions across sessions and reopenings: one writer at a time (a second
//! waits, bounded by its statement_timeout), a transaction that only reads holds
//! nobody up, a rollback leaves the file and the buffer pool as they were, and a
//! commit survives reopening. The single-session semantics are in
//! `tests/slt/transactions/transactions.slt`.

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

/// A table of two accounts with 1,000 each.
fn accounts(s: &mut Session) {
    s.execute("CREATE TABLE acct (id INTEGER NOT NULL, bal BIGINT)")
        .unwrap();
    s.execute("INSERT INTO acct VALUES (1, 1000), (2, 1000)")
        .unwrap();
}

/// Runs `sql` in a new session of `db` on another thread.
fn in_thread(db: &Database, sql: &'static str) -> std::thread::JoinHandle<Result<(), String>> {
    let db = db.clone();
    std::thread::spawn(move || {
        let mut s = db.session();
        s.execute("SET statement_timeout = '20s'").unwrap();
        s.execute(sql).map(|_| ()).map_err(|e| e.to_string())
    })
}

/// Waits until `h` is blocked for a while (it must wait for the writer).
fn assert_waits<T>(h: &std::thread::JoinHandle<T>) {
    std::thread::sleep(Duration::from_millis(300));
    assert!(!h.is_finished(), "the second writer did not wait");
}

#[test]
fn an_update_that_waited_keeps_the_committed_update_of_another_row() {
    // The lost update of issue 43: B's UPDATE of row 2 waited for A's
    // transaction and then wrote the table back as it was before A's commit.
    let dir = TempDir::new("lost-update");
    let db = open(&dir.db());
    let mut a = db.session();
    accounts(&mut a);
    a.execute("BEGIN").unwrap();
    a.execute("UPDATE acct SET bal = bal + 100 WHERE id = 1")
        .unwrap();
    let b = in_thread(&db, "UPDATE acct SET bal = bal + 1 WHERE id = 2");
    assert_waits(&b);
    a.execute("COMMIT").unwrap();
    b.join().unwrap().unwrap();
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 1"), 1100);
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 2"), 1001);
}

#[test]
fn an_update_that_waited_rereads_the_row_it_changes() {
    // Both change row 1: the second adds to what the first committed.
    let dir = TempDir::new("same-row");
    let db = open(&dir.db());
    let mut a = db.session();
    accounts(&mut a);
    a.execute("BEGIN; UPDATE acct SET bal = bal - 300 WHERE id = 1")
        .unwrap();
    // Its WHERE is re-checked on the committed row: 700 is not above 800.
    let b = in_thread(&db, "UPDATE acct SET bal = bal + 5 WHERE bal > 800");
    assert_waits(&b);
    a.execute("COMMIT").unwrap();
    b.join().unwrap().unwrap();
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 1"), 700);
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 2"), 1005);
}

#[test]
fn an_insert_racing_an_update_is_kept_and_updated() {
    let dir = TempDir::new("insert-update");
    let db = open(&dir.db());
    let mut a = db.session();
    accounts(&mut a);
    a.execute("BEGIN; INSERT INTO acct VALUES (3, 1000)")
        .unwrap();
    let b = in_thread(&db, "UPDATE acct SET bal = bal + 1");
    assert_waits(&b);
    a.execute("COMMIT").unwrap();
    b.join().unwrap().unwrap();
    assert_eq!(int(&mut a, "SELECT count(*) FROM acct"), 3);
    assert_eq!(int(&mut a, "SELECT sum(bal) FROM acct"), 3003);
}

#[test]
fn a_delete_racing_an_update_stays_deleted() {
    let dir = TempDir::new("delete-update");
    let db = open(&dir.db());
    let mut a = db.session();
    accounts(&mut a);
    a.execute("BEGIN; DELETE FROM acct WHERE id = 1").unwrap();
    let b = in_thread(&db, "UPDATE acct SET bal = bal + 1 WHERE id = 1");
    assert_waits(&b);
    a.execute("COMMIT").unwrap();
    b.join().unwrap().unwrap();
    assert_eq!(int(&mut a, "SELECT count(*) FROM acct"), 1);
    assert_eq!(int(&mut a, "SELECT count(*) FROM acct WHERE id = 1"), 0);
}

#[test]
fn an_update_racing_a_delete_of_every_row_changes_nothing() {
    let dir = TempDir::new("update-delete");
    let db = open(&dir.db());
    let mut a = db.session();
    accounts(&mut a);
    a.execute("BEGIN; UPDATE acct SET bal = 0 WHERE id = 2")
        .unwrap();
    let b = in_thread(&db, "DELETE FROM acct WHERE bal = 1000");
    assert_waits(&b);
    a.execute("COMMIT").unwrap();
    b.join().unwrap().unwrap();
    // The DELETE re-checked bal = 1000 on the committed rows: row 2 is 0 now.
    assert_eq!(int(&mut a, "SELECT count(*) FROM acct"), 1);
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 2"), 0);
}

#[test]
fn repeatable_read_keeps_its_snapshot_and_refuses_to_write_over_a_newer_commit() {
    let dir = TempDir::new("repeatable");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    accounts(&mut a);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
    assert_eq!(
        scalar(&mut a, "SHOW transaction_isolation"),
        Value::Text("repeatable read".into())
    );
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 1"), 1000);
    b.execute("UPDATE acct SET bal = 0 WHERE id = 1").unwrap();
    // Its snapshot: the same answer as before B's commit.
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 1"), 1000);
    let err = a
        .execute("UPDATE acct SET bal = bal + 1 WHERE id = 2")
        .unwrap_err();
    assert_eq!(err.sqlstate(), "40001", "{err}");
    // The transaction is aborted; ROLLBACK ends it, and B's commit stands.
    assert_eq!(
        a.execute("SELECT 1").unwrap_err().sqlstate(),
        "25P02",
        "aborted"
    );
    a.execute("ROLLBACK").unwrap();
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 1"), 0);
    assert_eq!(int(&mut a, "SELECT bal FROM acct WHERE id = 2"), 1000);

    // Without a concurrent commit it writes and commits as usual.
    a.execute("START TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .unwrap();
    assert_eq!(int(&mut a, "SELECT sum(bal) FROM acct"), 1000);
    a.execute("UPDATE acct SET bal = bal + 1").unwrap();
    a.execute("COMMIT").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(bal) FROM acct"), 1002);
}

#[test]
fn serializable_refuses_write_skew() {
    // Each transaction reads both rows and changes the other one's: run one
    // after the other, the second sees the first's change; interleaved, one
    // must fail.
    let dir = TempDir::new("skew");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    accounts(&mut a);
    a.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        .unwrap();
    b.execute("SET default_transaction_isolation = 'serializable'")
        .unwrap();
    a.execute("BEGIN").unwrap();
    b.execute("BEGIN").unwrap();
    assert_eq!(int(&mut a, "SELECT sum(bal) FROM acct"), 2000);
    assert_eq!(int(&mut b, "SELECT sum(bal) FROM acct"), 2000);
    a.execute("UPDATE acct SET bal = bal - 2000 WHERE id = 1")
        .unwrap();
    a.execute("COMMIT").unwrap();
    let err = b
        .execute("UPDATE acct SET bal = bal - 2000 WHERE id = 2")
        .unwrap_err();
    assert_eq!(err.sqlstate(), "40001", "{err}");
    b.execute("ROLLBACK").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(bal) FROM acct"), 0);
}

#[test]
fn transaction_modes_follow_postgresql() {
    let dir = TempDir::new("modes");
    let db = open(&dir.db());
    let mut s = db.session();
    accounts(&mut s);
    let show = |s: &mut Session| match scalar(s, "SHOW transaction_isolation") {
        Value::Text(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(show(&mut s), "read committed");
    // SET TRANSACTION before the first query sets this transaction only.
    s.execute("BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        .unwrap();
    assert_eq!(show(&mut s), "serializable");
    s.execute("SELECT 1").unwrap();
    let err = s
        .execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .unwrap_err();
    assert_eq!(err.sqlstate(), "25001", "{err}");
    s.execute("ROLLBACK").unwrap();
    assert_eq!(show(&mut s), "read committed");
    // A read-only transaction refuses writes.
    s.execute("BEGIN READ ONLY").unwrap();
    assert_eq!(int(&mut s, "SELECT count(*) FROM acct"), 2);
    let err = s.execute("DELETE FROM acct").unwrap_err();
    assert_eq!(err.sqlstate(), "25006", "{err}");
    s.execute("ROLLBACK").unwrap();
    s.execute("SET default_transaction_read_only = on").unwrap();
    let err = s.execute("INSERT INTO acct VALUES (3, 0)").unwrap_err();
    assert_eq!(err.sqlstate(), "25006", "{err}");
    s.execute("SET default_transaction_read_only = off")
        .unwrap();
    assert_eq!(int(&mut s, "SELECT count(*) FROM acct"), 2);
    // An unknown level is refused, not ignored.
    assert!(s
        .execute("SET default_transaction_isolation = 'chaos'")
        .is_err());
}

#[test]
fn lock_timeout_bounds_the_wait_for_the_write_lock() {
    let dir = TempDir::new("lock-timeout");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    accounts(&mut a);
    a.execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1")
        .unwrap();
    b.execute("SET lock_timeout = '200ms'").unwrap();
    let t0 = Instant::now();
    let err = b
        .execute("UPDATE acct SET bal = 2 WHERE id = 2")
        .unwrap_err();
    assert_eq!(err.sqlstate(), "55P03", "{err}");
    assert!(t0.elapsed() >= Duration::from_millis(190));
    assert!(t0.elapsed() < Duration::from_secs(5));
    a.execute("COMMIT").unwrap();
    b.execute("UPDATE acct SET bal = 2 WHERE id = 2").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(bal) FROM acct"), 3);
}

/// Bank transfers from many sessions at once, some rolled back on purpose:
/// every acknowledged transfer is in the balances, no other is, and the sum
/// never changes.
#[test]
fn concurrent_transfers_lose_no_acknowledged_commit() {
    let dir = TempDir::new("bank");
    let db = open(&dir.db());
    let accounts_n = 8i64;
    let mut s = db.session();
    s.execute("CREATE TABLE acct (id INTEGER NOT NULL, bal BIGINT)")
        .unwrap();
    let values: Vec<String> = (0..accounts_n).map(|i| format!("({i}, 1000)")).collect();
    s.execute(&format!("INSERT INTO acct VALUES {}", values.join(",")))
        .unwrap();
    let secs: u64 = std::env::var("KURA_TXN_STRESS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let clients: Vec<_> = (0..8u64)
        .map(|c| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = db.session();
                s.execute("SET statement_timeout = '30s'").unwrap();
                // Net effect of this client's acknowledged transfers, by account.
                let mut net = vec![0i64; accounts_n as usize];
                let mut seed = c * 7919 + 1;
                let mut next = || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                let (mut committed, mut aborted) = (0u64, 0u64);
                while Instant::now() < deadline {
                    let from = (next() % accounts_n as u64) as i64;
                    let to = (from + 1 + (next() % (accounts_n as u64 - 1)) as i64) % accounts_n;
                    let amount = (next() % 50 + 1) as i64;
                    let level = if next() % 3 == 0 {
                        "REPEATABLE READ"
                    } else {
                        "READ COMMITTED"
                    };
                    s.execute(&format!("BEGIN ISOLATION LEVEL {level}"))
                        .unwrap();
                    let steps = [
                        format!("UPDATE acct SET bal = bal - {amount} WHERE id = {from}"),
                        format!("UPDATE acct SET bal = bal + {amount} WHERE id = {to}"),
                    ];
                    let ok = steps.iter().all(|q| s.execute(q).is_ok());
                    if !ok || next() % 5 == 0 {
                        s.execute("ROLLBACK").unwrap();
                        aborted += 1;
                        continue;
                    }
                    match s.execute("COMMIT") {
                        Ok(r) if r.tag == "COMMIT" => {
                            net[from as usize] -= amount;
                            net[to as usize] += amount;
                            committed += 1;
                        }
                        _ => aborted += 1,
                    }
                }
                (net, committed, aborted)
            })
        })
        .collect();
    let mut expected = vec![1000i64; accounts_n as usize];
    let mut committed = 0;
    for c in clients {
        let (net, n, _) = c.join().unwrap();
        committed += n;
        for (e, d) in expected.iter_mut().zip(net) {
            *e += d;
        }
    }
    assert!(committed > 0, "no transfer committed");
    for (id, want) in expected.iter().enumerate() {
        assert_eq!(
            int(&mut s, &format!("SELECT bal FROM acct WHERE id = {id}")),
            *want,
            "account {id} after {committed} transfers"
        );
    }
    assert_eq!(int(&mut s, "SELECT sum(bal) FROM acct"), 1000 * accounts_n);
}

#[test]
fn a_tpch_load_that_fails_leaves_the_database_as_it_was() {
    // Files for some tables only: the load fails at the first one missing.
    let dir = TempDir::new("tpch-fail");
    let db = open(&dir.db());
    let mut s = db.session();
    s.execute("CREATE TABLE keep (x INTEGER); INSERT INTO keep VALUES (1)")
        .unwrap();
    let files = dir.0.join("tbl");
    std::fs::create_dir_all(&files).unwrap();
    kura::tpch::generate_files(0.01, &files, &|_, _| {}).unwrap();
    std::fs::remove_file(files.join("orders.tbl")).unwrap();
    let err =
        kura::tpch::load(&mut s, kura::tpch::load::Source::Files(&files), &|_, _| {}).unwrap_err();
    assert!(err.to_string().contains("orders.tbl"), "{err}");
    // No TPC-H table was left behind, empty or partly loaded, and the
    // session is out of the load's transaction.
    assert!(!s.in_transaction());
    for t in kura::tpch::TABLES {
        assert!(
            s.execute(&format!("SELECT count(*) FROM {t}")).is_err(),
            "{t} exists after the failed load"
        );
    }
    assert_eq!(int(&mut s, "SELECT sum(x) FROM keep"), 1);
    // A complete load then commits every table.
    kura::tpch::generate_files(0.01, &files, &|_, _| {}).unwrap();
    kura::tpch::load(&mut s, kura::tpch::load::Source::Files(&files), &|_, _| {}).unwrap();
    assert_eq!(int(&mut s, "SELECT count(*) FROM nation"), 25);
    assert_eq!(int(&mut s, "SELECT count(*) FROM orders"), 15_000);
}

#[test]
fn constraints_and_defaults_survive_reopening_and_hold_for_every_session() {
    let dir = TempDir::new("rules");
    {
        let db = open(&dir.db());
        let mut a = db.session();
        a.execute("CREATE TABLE p (id INTEGER PRIMARY KEY, v TEXT DEFAULT 'new')")
            .unwrap();
        a.execute("CREATE TABLE c (p_id INTEGER REFERENCES p, n INTEGER CHECK (n > 0))")
            .unwrap();
        a.execute("INSERT INTO p (id) VALUES (1)").unwrap();
    }
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    let err = a.execute("INSERT INTO p VALUES (1, 'x')").unwrap_err();
    assert_eq!(err.sqlstate(), "23505", "{err}");
    let err = b.execute("INSERT INTO c VALUES (2, 1)").unwrap_err();
    assert_eq!(err.sqlstate(), "23503", "{err}");
    let err = b.execute("INSERT INTO c VALUES (1, 0)").unwrap_err();
    assert_eq!(err.sqlstate(), "23514", "{err}");
    b.execute("INSERT INTO c VALUES (1, 5)").unwrap();
    let err = a.execute("DELETE FROM p").unwrap_err();
    assert_eq!(err.sqlstate(), "23503", "{err}");
    a.execute("INSERT INTO p (id) VALUES (2)").unwrap();
    assert_eq!(
        scalar(&mut a, "SELECT v FROM p WHERE id = 2"),
        Value::Text("new".into())
    );
    // Two sessions inserting the same key: the second to commit fails.
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO p VALUES (3, 'a')").unwrap();
    let waiter = std::thread::spawn({
        let db = db.clone();
        move || {
            db.session()
                .execute("INSERT INTO p VALUES (3, 'b')")
                .map(|_| ())
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    a.execute("COMMIT").unwrap();
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(err.sqlstate(), "23505", "{err}");
    assert_eq!(int(&mut b, "SELECT count(*) FROM p WHERE id = 3"), 1);
}

/// Every page of the committed file is used once or free (none leaked by a
/// savepoint's rolled-back writes, none both used and free).
fn assert_pages_accounted(db: &Database) {
    let problems = db.storage().check_pages().unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn commits_that_went_back_to_savepoints_survive_reopening_with_every_page_accounted_for() {
    let dir = TempDir::new("savepoint");
    {
        let db = open(&dir.db());
        let mut s = db.session();
        s.execute("CREATE TABLE t (x BIGINT, y VARCHAR)").unwrap();
        s.execute("CREATE INDEX t_x ON t (x)").unwrap();
        s.execute("INSERT INTO t VALUES (1, 'committed')").unwrap();
        assert_pages_accounted(&db);

        s.execute("BEGIN").unwrap();
        s.execute("INSERT INTO t VALUES (2, 'before')").unwrap();
        s.execute("SAVEPOINT a").unwrap();
        // Many pages after the savepoint, read back so the pool caches them,
        // plus DDL: all of it goes.
        s.execute("INSERT INTO t VALUES (100, 'after')").unwrap();
        for _ in 0..14 {
            s.execute("INSERT INTO t SELECT x + 1, y FROM t WHERE y = 'after'")
                .unwrap();
        }
        s.execute("CREATE TABLE u AS SELECT x FROM t").unwrap();
        s.execute("CREATE INDEX u_x ON u (x)").unwrap();
        s.execute("DROP INDEX t_x").unwrap();
        assert!(int(&mut s, "SELECT count(*) FROM t WHERE y = 'after'") >= 16_384);
        s.execute("ROLLBACK TO SAVEPOINT a").unwrap();
        assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 2);

        // The same page ids are written anew: what is read back must be the
        // new rows, never the rolled-back ones still cached under those ids.
        s.execute("INSERT INTO t VALUES (7, 'anew')").unwrap();
        for _ in 0..12 {
            s.execute("INSERT INTO t SELECT x, y FROM t WHERE y = 'anew'")
                .unwrap();
        }
        assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE y = 'anew'"), 4096);
        assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE y = 'after'"), 0);
        assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE x = 7"), 4096);

        // An error after a second savepoint; going back recovers the rest.
        s.execute("SAVEPOINT b").unwrap();
        s.execute("DELETE FROM t WHERE y = 'anew'").unwrap();
        assert!(s.execute("SELECT 1 / (x - x) FROM t").is_err());
        assert_eq!(
            s.execute("SELECT 1").unwrap_err().sqlstate(),
            "25P02",
            "a failed transaction refuses statements"
        );
        s.execute("ROLLBACK TO b").unwrap();
        s.execute("UPDATE t SET y = 'kept' WHERE y = 'anew' AND x = 7")
            .unwrap();
        s.execute("COMMIT").unwrap();
        assert_pages_accounted(&db);

        // A table dropped after a savepoint and brought back: its pages are
        // neither freed by the commit nor lost.
        s.execute("BEGIN").unwrap();
        s.execute("SAVEPOINT c").unwrap();
        s.execute("DROP TABLE t").unwrap();
        s.execute("CREATE TABLE t (z INTEGER)").unwrap();
        s.execute("ROLLBACK TO c").unwrap();
        s.execute("INSERT INTO t VALUES (3, 'last')").unwrap();
        s.execute("COMMIT").unwrap();
        assert_pages_accounted(&db);
    }
    let db = open(&dir.db());
    assert_pages_accounted(&db);
    let mut s = db.session();
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 4096 + 3);
    assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE y = 'kept'"), 4096);
    assert_eq!(int(&mut s, "SELECT sum(x) FROM t WHERE y <> 'kept'"), 6);
    // The index is the committed one, and answers.
    assert_eq!(int(&mut s, "SELECT count(*) FROM t WHERE x = 2"), 1);
    assert!(s.execute("SELECT * FROM u").is_err());
    // And the writer is free and writes on the reopened file.
    s.execute("INSERT INTO t VALUES (4, 'reopened')").unwrap();
    assert_eq!(int(&mut s, "SELECT count(*) FROM t"), 4096 + 4);
    assert_pages_accounted(&db);
}

#[test]
fn a_failed_statement_after_a_savepoint_keeps_the_write_lock_until_the_transaction_recovers() {
    let dir = TempDir::new("savepoint-lock");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)").unwrap();
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO t VALUES (1)").unwrap();
    a.execute("SAVEPOINT s").unwrap();
    assert!(a.execute("INSERT INTO t VALUES (2), (1)").is_err());
    // The failed transaction still holds what it wrote before the savepoint.
    b.execute("SET lock_timeout = 200").unwrap();
    assert_eq!(
        b.execute("INSERT INTO t VALUES (5)")
            .unwrap_err()
            .sqlstate(),
        "55P03"
    );
    a.execute("ROLLBACK TO s").unwrap();
    a.execute("INSERT INTO t VALUES (2)").unwrap();
    a.execute("COMMIT").unwrap();
    b.execute("INSERT INTO t VALUES (5)").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(x) FROM t"), 8);
    assert_pages_accounted(&db);
}
