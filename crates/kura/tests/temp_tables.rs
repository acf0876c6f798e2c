//! Temporary tables across sessions: private to the session that made one (a
//! permanent table of the same name stays what others see), gone when that
//! session ends and after the database is reopened, and written without the
//! database's write lock. The single-session behaviour is in
//! `tests/slt/ddl_dml/temp_tables.slt`.

use std::path::{Path, PathBuf};

use kura::{Database, OpenOptions, Session, Value};

/// A directory removed when dropped (the crate has no tempfile dependency).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("kura-temp-{tag}-{}-{n}", std::process::id()));
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

fn int(s: &mut Session, sql: &str) -> i64 {
    match &s.execute(sql).unwrap().rows()[0][0] {
        Value::Integer(v) => *v as i64,
        Value::BigInt(v) => *v,
        other => panic!("{sql}: not an integer: {other:?}"),
    }
}

fn sqlstate(s: &mut Session, sql: &str) -> String {
    s.execute(sql).unwrap_err().sqlstate().to_string()
}

#[test]
fn a_temporary_table_is_private_to_its_session_and_gone_after_it() {
    let dir = TempDir::new("private");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE shared (x INTEGER)").unwrap();
    a.execute("INSERT INTO shared VALUES (1)").unwrap();

    // a's temporary `shared` hides the permanent one for a only.
    a.execute("CREATE TEMP TABLE shared (x INTEGER, y INTEGER)")
        .unwrap();
    a.execute("INSERT INTO shared VALUES (7, 8), (9, 10)")
        .unwrap();
    a.execute("CREATE TEMPORARY TABLE mine AS SELECT 42 AS answer")
        .unwrap();
    assert_eq!(int(&mut a, "SELECT count(*) FROM shared"), 2);
    assert_eq!(int(&mut b, "SELECT count(*) FROM shared"), 1);
    assert_eq!(int(&mut a, "SELECT answer FROM mine"), 42);
    // The private storage's file was unlinked once open: a crash leaves nothing.
    let prefix = format!("kura-temp-{}-", std::process::id());
    let named = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count();
    assert_eq!(named, 0);
    assert_eq!(sqlstate(&mut b, "SELECT * FROM mine"), "42P01");
    assert_eq!(sqlstate(&mut b, "INSERT INTO mine VALUES (1)"), "42P01");
    assert_eq!(sqlstate(&mut b, "DROP TABLE mine"), "42P01");
    assert_eq!(
        int(
            &mut b,
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'mine'"
        ),
        0
    );
    // b may make a temporary table of the same name: its own.
    b.execute("CREATE TEMP TABLE mine (z INTEGER)").unwrap();
    assert_eq!(int(&mut b, "SELECT count(*) FROM mine"), 0);
    assert_eq!(int(&mut a, "SELECT answer FROM mine"), 42);

    // DISCARD TEMP (and ALL, which poolers send between clients) drops them.
    b.execute("DISCARD TEMP").unwrap();
    assert_eq!(sqlstate(&mut b, "SELECT * FROM mine"), "42P01");
    b.execute("CREATE TEMP TABLE mine (z INTEGER)").unwrap();
    b.execute("BEGIN").unwrap();
    assert_eq!(sqlstate(&mut b, "DISCARD ALL"), "25001");
    b.execute("ROLLBACK").unwrap();
    assert_eq!(b.execute("DISCARD ALL").unwrap().tag, "DISCARD ALL");
    assert_eq!(sqlstate(&mut b, "SELECT * FROM mine"), "42P01");

    // The session's end drops its temporary tables.
    drop(a);
    let mut c = db.session();
    assert_eq!(sqlstate(&mut c, "SELECT * FROM mine"), "42P01");
    assert_eq!(int(&mut c, "SELECT count(*) FROM shared"), 1);
    assert_eq!(db.session().catalog().table_names(), vec!["shared"]);
    drop((b, c));
    drop(db);

    // Nothing of them is in the database file either.
    let db = open(&dir.db());
    let mut d = db.session();
    assert_eq!(sqlstate(&mut d, "SELECT * FROM mine"), "42P01");
    assert_eq!(int(&mut d, "SELECT count(*) FROM shared"), 1);
    assert_eq!(d.catalog().table_names(), vec!["shared"]);
}

#[test]
fn temporary_tables_are_written_while_another_session_holds_the_write_lock() {
    let dir = TempDir::new("lock");
    let db = open(&dir.db());
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE p (x INTEGER)").unwrap();
    b.execute("CREATE TEMP TABLE scratch (x INTEGER)").unwrap();
    // a holds the database's write transaction until it commits.
    a.execute("BEGIN").unwrap();
    a.execute("INSERT INTO p VALUES (1)").unwrap();
    b.execute("SET lock_timeout = '200ms'").unwrap();
    b.execute("INSERT INTO scratch VALUES (1), (2)").unwrap();
    b.execute("UPDATE scratch SET x = x + 1").unwrap();
    assert_eq!(int(&mut b, "SELECT sum(x) FROM scratch"), 5);
    // A permanent write still waits for a's (and times out here).
    assert_eq!(sqlstate(&mut b, "INSERT INTO p VALUES (2)"), "55P03");
    a.execute("COMMIT").unwrap();
    assert_eq!(int(&mut b, "SELECT count(*) FROM p"), 1);
}
