//! COPY over the wire: psql's `\copy` both ways and `COPY ... FROM STDIN` with
//! inline data in a `psql -f` script; psycopg 3's `cursor.copy()` (write_row,
//! raw write, rows back, errors, CopyFail, transactions, a round trip), and a
//! load of 300,000 rows with the server's memory watched.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::python::python;
use common::TestServer;

/// Runs psql with `args` against the server; returns stdout, stderr and success.
fn psql(s: &TestServer, dir: &Path, args: &[&str]) -> (String, String, bool) {
    let out = Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &s.addr.port().to_string(),
            "-U",
            "tester",
            "-d",
            "kura",
        ])
        .args(args)
        .current_dir(dir)
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("psql is installed (apt-get install postgresql-client)");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn query(s: &TestServer, dir: &Path, sql: &str) -> String {
    let (out, err, ok) = psql(s, dir, &["-A", "-t", "-c", sql]);
    assert!(ok, "{sql}: {err}");
    out.trim().to_string()
}

#[test]
fn psql_copy_from_and_to_local_files_and_inline_data() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table t (i integer, v varchar(30), d decimal(10,2), dt date)",
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(
        dir.join("local.csv"),
        "1,alpha,1.50,1995-03-15\n2,\"b,eta\",-0.05,\n3,\"\",0,2000-02-29\n",
    )
    .unwrap();
    let (out, err, ok) = psql(&s, dir, &["-c", "\\copy t FROM 'local.csv' csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "COPY 3");
    assert_eq!(
        query(&s, dir, "select i, v, d, dt from t order by i"),
        "1|alpha|1.50|1995-03-15\n2|b,eta|-0.05|\n3||0.00|2000-02-29"
    );
    let (out, err, ok) = psql(
        &s,
        dir,
        &[
            "-c",
            "\\copy (select i, v, d, dt from t where i >= 2 order by i) TO 'out.csv' csv header",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "COPY 2");
    assert_eq!(
        std::fs::read_to_string(dir.join("out.csv")).unwrap(),
        "i,v,d,dt\n2,\"b,eta\",-0.05,\n3,\"\",0.00,2000-02-29\n"
    );
    // Inline data after COPY ... FROM STDIN in a script, ended by `\.`, then
    // a column list; the session goes on after it.
    std::fs::write(
        dir.join("load.sql"),
        "COPY t FROM STDIN;\n10\tten\t10.10\t2010-10-10\n11\t\\N\t\\N\t\\N\n\\.\n\
         COPY t (v, i) FROM STDIN WITH (FORMAT csv);\ntwelve,12\n\\.\n\
         select count(*) from t;\n",
    )
    .unwrap();
    let (out, err, ok) = psql(&s, dir, &["-v", "ON_ERROR_STOP=1", "-f", "load.sql"]);
    assert!(ok, "{err}");
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["COPY", "2", "COPY", "1", "count", "-------", "6", "(1", "row)"]
    );
    assert_eq!(
        query(
            &s,
            dir,
            "select i, v, d, dt from t where i >= 10 order by i"
        ),
        "10|ten|10.10|2010-10-10\n11|||\n12|twelve||"
    );
}

#[test]
fn psql_copy_errors_name_the_line_and_load_nothing() {
    let s = TestServer::trust(|db| common::exec(db, "create table t (i integer, v varchar)"));
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("bad.csv"), "1,a\n2,b\nthree,c\n4,d\n").unwrap();
    let (_, err, ok) = psql(
        &s,
        dir,
        &[
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "\\copy t FROM 'bad.csv' csv",
        ],
    );
    assert!(!ok);
    assert!(err.contains("22P02") && err.contains("STDIN:3:1"), "{err}");
    assert_eq!(query(&s, dir, "select count(*) from t"), "0");
    // Errors found before any data: the table, the columns.
    let (_, err, ok) = psql(&s, dir, &["-c", "\\copy nope FROM 'bad.csv' csv"]);
    assert!(!ok && err.contains("nope"), "{err}");
    let (_, err, ok) = psql(&s, dir, &["-c", "\\copy t (i, w) FROM 'bad.csv' csv"]);
    assert!(!ok && err.contains("\"w\""), "{err}");
    // An error after rows went out reaches the client, and the session goes on.
    let rows: String = (0..30_000).map(|i| format!("{i},r\n")).collect();
    std::fs::write(dir.join("many.csv"), rows).unwrap();
    let script = "\\copy t FROM 'many.csv' csv\n\
                  \\copy (select 10 / (i - 25000) from t) TO 'div.txt'\n\
                  select count(*) from t;\n";
    std::fs::write(dir.join("div.sql"), script).unwrap();
    let (out, err, _) = psql(&s, dir, &["-A", "-t", "-f", "div.sql"]);
    assert!(err.contains("division by zero"), "{err}");
    assert!(
        out.contains("COPY 30000") && out.trim_end().ends_with("30000"),
        "{out}"
    );
    let written = std::fs::read_to_string(dir.join("div.txt")).unwrap();
    assert!(
        written.lines().count() < 30_000,
        "the COPY stopped at the error"
    );
    // Not a client COPY: the server reads no file for its clients.
    let (_, err, ok) = psql(&s, dir, &["-c", "copy t to 'x.txt'"]);
    assert!(!ok && err.contains("TO STDOUT"), "{err}");
    let (_, err, ok) = psql(&s, dir, &["-c", "select 1; copy t to stdout"]);
    assert!(!ok && err.contains("of their own"), "{err}");
}

fn run_python(s: &TestServer, rows: u64) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_copy.py");
    let out = Command::new(python())
        .arg(script)
        .args(["--port", &s.addr.port().to_string()])
        .args(["--rows", &rows.to_string()])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "psycopg COPY checks failed:\n{stdout}"
    );
    stdout
}

/// This process's resident memory in bytes (the server runs in it).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[test]
fn psycopg_copy_both_ways_errors_copyfail_transactions_and_a_big_load() {
    const ROWS: u64 = 300_000;
    let s = TestServer::trust(|_| {});
    let before = rss();
    let peak = Arc::new(AtomicU64::new(before));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let out = run_python(&s, ROWS);
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    // The load's input is about 55 bytes a row as sent (16 MB); the loader
    // holds a few 8 MiB chunks and the write transaction its pages. A server
    // that kept the client's data, or read it faster than it loads, grows
    // with the input instead; this bound is far above what it needs.
    let grew = peak.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "server process memory: {} MiB before, grew by at most {} MiB during the checks",
        before >> 20,
        grew >> 20
    );
    assert!(out.contains(&format!("big load: {ROWS} rows")), "{out}");
    assert!(grew < 400 << 20, "memory grew by {} MiB", grew >> 20);
}

/// A raw protocol connection, for what drivers never do.
struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(s: &TestServer) -> Raw {
        let sock = std::net::TcpStream::connect(s.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut raw = Raw(sock);
        let mut body = 196608i32.to_be_bytes().to_vec();
        for p in ["user", "tester", "database", "kura"] {
            body.extend_from_slice(p.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        raw.send(&msg);
        raw.until_ready();
        raw
    }

    fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.0.write_all(bytes).unwrap();
    }

    fn message(&mut self, kind: u8, body: &[u8]) {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        self.send(&m);
    }

    fn query(&mut self, sql: &str) {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.message(b'Q', &body);
    }

    /// The next message: its type and body.
    fn read(&mut self) -> (u8, Vec<u8>) {
        use std::io::Read;
        let mut head = [0u8; 5];
        self.0.read_exact(&mut head).expect("a message (no hang)");
        let len = i32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0; len - 4];
        self.0.read_exact(&mut body).unwrap();
        (head[0], body)
    }

    /// Message types up to and including `kind`.
    fn until(&mut self, kind: u8) -> Vec<(u8, Vec<u8>)> {
        let mut seen = Vec::new();
        loop {
            let m = self.read();
            let done = m.0 == kind;
            seen.push(m);
            if done {
                return seen;
            }
        }
    }

    fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        self.until(b'Z')
    }
}

#[test]
fn a_copy_the_client_leaves_or_drops_loads_nothing_and_frees_the_session() {
    let s = TestServer::trust(|db| common::exec(db, "create table t (i integer)"));
    let dir = tempfile::tempdir().unwrap();
    // A query in the middle of the data ends the COPY with an error; the
    // session then answers the next query (it is not held by the COPY).
    let mut c = Raw::connect(&s);
    c.query("COPY t FROM STDIN");
    assert_eq!(c.until(b'G').last().unwrap().0, b'G');
    c.message(b'd', b"1\n2\n");
    c.query("select count(*) from t");
    let answer = c.until_ready();
    assert!(
        answer.iter().any(|m| m.0 == b'E'),
        "an error answers the stray query"
    );
    // The extended protocol, which does not pass where the simple one ends
    // an unfinished COPY before running anything.
    c.message(b'P', b"\0select count(*) from t\0\0\0");
    c.message(b'B', b"\0\0\0\0\0\0\0\0");
    c.message(b'E', b"\0\0\0\0\0");
    c.message(b'S', b"");
    let answer = c.until_ready();
    assert!(answer.iter().all(|m| m.0 != b'E'), "{answer:?}");
    let row = answer.iter().find(|m| m.0 == b'D').expect("a row");
    assert!(row.1.ends_with(b"0"), "nothing was loaded: {:?}", row.1);
    // A client that goes away mid-COPY: nothing is committed, and the write
    // transaction it held is given back (another COPY completes).
    let mut c = Raw::connect(&s);
    c.query("COPY t FROM STDIN");
    c.until(b'G');
    c.message(b'd', b"7\n8\n");
    drop(c);
    std::fs::write(dir.path().join("one.csv"), "5\n").unwrap();
    let (out, err, ok) = psql(&s, dir.path(), &["-c", "\\copy t FROM 'one.csv' csv"]);
    assert!(ok && out.trim() == "COPY 1", "{out}{err}");
    assert_eq!(query(&s, dir.path(), "select i from t"), "5");
}
