//! Crash safety: `kura` processes loading data are killed with SIGKILL at random
//! moments; after every kill the database opens, every page of every table reads
//! without a checksum error, and each table is in exactly one committed state
//! (absent, or a whole number of copies of the input file) — never a mix.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use kura::{Database, OpenOptions};

/// Rows in the input file.
const N: u64 = 50_000;
const KILLS: usize = 24;

fn text_of(i: u64) -> String {
    format!("row {i} {}", "abcdefghij".repeat((i % 7) as usize))
}

fn write_input(path: &Path) {
    let body: String = (0..N)
        .map(|i| format!("{i}|{}|{}.{:02}|\n", text_of(i), i % 1000, i % 100))
        .collect();
    std::fs::write(path, body).unwrap();
}

const DDL_T: &str = "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR, p DECIMAL(12,2))";
const DDL_U: &str = "CREATE TABLE u (id BIGINT NOT NULL, s VARCHAR, p DECIMAL(12,2))";

/// Checks a table: row count a multiple of N, and row r is input row r mod N.
fn check_table(db: &Database, name: &str) -> Option<u64> {
    let table = db.storage().catalog().table(name)?;
    let n = table.row_count();
    assert_eq!(
        n % N,
        0,
        "{name}: {n} rows is not a whole number of loads of {N} rows"
    );
    let ids = read_column(&table, 0).unwrap_or_else(|e| panic!("{name}.id: {e}"));
    let texts = read_column(&table, 1).unwrap_or_else(|e| panic!("{name}.s: {e}"));
    let prices = read_column(&table, 2).unwrap_or_else(|e| panic!("{name}.p: {e}"));
    for r in 0..n as usize {
        let i = r as u64 % N;
        assert_eq!(int_at(&ids, r), i as i128, "{name}: id of row {r}");
        assert_eq!(str_at(&texts, r), text_of(i), "{name}: s of row {r}");
        assert_eq!(
            int_at(&prices, r),
            ((i % 1000) * 100 + i % 100) as i128,
            "{name}: p of row {r}"
        );
    }
    // The SQL path agrees with the storage path.
    let mut session = db.session();
    let count = session
        .execute(&format!("SELECT count(*) FROM {name}"))
        .unwrap();
    assert_eq!(count.rows()[0][0], kura::Value::BigInt(n as i64));
    Some(n)
}

#[test]
fn sigkill_during_loads_leaves_a_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("crash.kura");
    let input = dir.path().join("rows.tbl");
    write_input(&input);
    run_ok(&db_path, &["-c", &format!("{DDL_T}; {DDL_U}")]);
    let copy_t = format!("COPY t FROM '{}'", input.display());
    let copy_u = format!("COPY u FROM '{}'", input.display());
    let mut rng = Rng::new(0x5EED_C0DE);
    let mut killed_running = 0;
    let mut t_rows = 0;
    let start = Instant::now();
    // Round 0 runs to completion and times the script, so later kills can be
    // spread uniformly over a whole run.
    let mut full_run = Duration::ZERO;
    for round in 0..=KILLS {
        // Keep t from growing without end; the drop and create are commits too.
        let mut script = Vec::new();
        if t_rows >= 6 * N {
            script.push("DROP TABLE t".to_string());
            script.push(DDL_T.to_string());
        }
        for _ in 0..4 {
            script.push(copy_t.clone());
            script.push("DROP TABLE IF EXISTS u".into());
            script.push(DDL_U.into());
            script.push(copy_u.clone());
        }
        let began = Instant::now();
        let mut child = kura()
            .args(["--buffer", "16MB", "--db"])
            .arg(&db_path)
            .arg("-c")
            .arg(script.join("; "))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let status = if round == 0 {
            let status = child.wait().unwrap();
            assert!(status.success(), "the uninterrupted run failed: {status}");
            full_run = began.elapsed();
            status
        } else {
            let delay = rng.below(full_run.as_millis() as u64 + 1);
            std::thread::sleep(Duration::from_millis(delay));
            if child.try_wait().unwrap().is_none() {
                killed_running += 1;
            }
            let _ = child.kill(); // SIGKILL
            child.wait().unwrap()
        };
        let db = Database::open(
            &db_path,
            OpenOptions {
                buffer_bytes: Some(2 << 20),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("round {round}: open after kill ({status}): {e}"));
        t_rows = check_table(&db, "t").unwrap_or(0);
        check_table(&db, "u");
        // The loads must be able to continue after the kill.
        if db.storage().catalog().table("t").is_none() {
            db.session().execute(DDL_T).unwrap();
        }
        assert_eq!(db.storage().buffer().pinned_frames(), 0);
    }
    eprintln!(
        "{KILLS} kills ({killed_running} while running; an uninterrupted run takes {:.2} s) in {:.1} s",
        full_run.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        killed_running >= KILLS / 2,
        "only {killed_running} of {KILLS} kills hit a running process"
    );
}

#[test]
fn sigkill_during_tpch_load_leaves_whole_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("tpch.kura");
    let full: [(&str, u64); 8] = [
        ("region", 5),
        ("nation", 25),
        ("supplier", 100),
        ("customer", 1500),
        ("part", 2000),
        ("partsupp", 8000),
        ("orders", 15000),
        ("lineitem", 60175),
    ];
    let mut rng = Rng::new(77);
    let mut full_run = Duration::ZERO;
    let mut killed_running = 0;
    const ROUNDS: usize = 8;
    for round in 0..=ROUNDS {
        let began = Instant::now();
        let mut child = kura()
            .args(["--buffer", "16MB", "--db"])
            .arg(&db_path)
            .args(["tpch", "load", "--sf", "0.01"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if round == 0 {
            // Timed once uninterrupted; the kills then fall anywhere in a run.
            assert!(child.wait().unwrap().success());
            full_run = began.elapsed();
        } else {
            std::thread::sleep(Duration::from_millis(
                rng.below(full_run.as_millis() as u64 + 1),
            ));
            if child.try_wait().unwrap().is_none() {
                killed_running += 1;
            }
            let _ = child.kill();
            child.wait().unwrap();
        }
        let db = Database::open(
            &db_path,
            OpenOptions {
                buffer_bytes: Some(4 << 20),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        for (name, rows) in full {
            let Some(table) = db.storage().catalog().table(name) else {
                continue;
            };
            let n = table.row_count();
            assert!(
                n == 0 || n == rows,
                "round {round}: {name} has {n} rows, neither empty nor complete ({rows})"
            );
            for c in 0..table.schema().len() {
                read_column(&table, c)
                    .unwrap_or_else(|e| panic!("round {round}: {name} column {c}: {e}"));
            }
        }
    }
    assert!(
        killed_running >= ROUNDS / 2,
        "only {killed_running} of {ROUNDS} kills hit a running load ({:.2} s uninterrupted)",
        full_run.as_secs_f64()
    );
}

/// Rows of the table the UPDATE/DELETE crash test rewrites.
const W: i64 = 100_000;

/// Reads one integer answer.
fn int(db: &Database, sql: &str) -> i64 {
    match &db.session().execute(sql).unwrap().rows()[0][0] {
        kura::Value::BigInt(v) => *v,
        kura::Value::Integer(v) => i64::from(*v),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn sigkill_during_index_builds_update_and_delete_leaves_a_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("dml.kura");
    let input = dir.path().join("w.tbl");
    let body: String = (0..W).map(|i| format!("{i}|0|\n")).collect();
    std::fs::write(&input, body).unwrap();
    run_ok(
        &db_path,
        &[
            "-c",
            &format!(
                "CREATE TABLE w (id BIGINT NOT NULL, v BIGINT NOT NULL); COPY w FROM '{}'",
                input.display()
            ),
        ],
    );
    // Each statement commits on its own; between any two of them the table is
    // in one of these committed states: even rows one ahead of odd rows or
    // level with them, and a copy of every row under id + W, or none.
    let round_script = [
        "CREATE INDEX w_v ON w (v, id)".to_string(),
        "UPDATE w SET v = v + 1 WHERE id % 2 = 0".to_string(),
        "UPDATE w SET v = v + 1 WHERE id % 2 = 1".to_string(),
        format!("INSERT INTO w SELECT id + {W}, v FROM w"),
        format!("DELETE FROM w WHERE id >= {W}"),
        "DROP INDEX w_v".to_string(),
    ]
    .join("; ");
    let script = [round_script.as_str(); 3].join("; ");
    let mut rng = Rng::new(0xD31E_7E00);
    let mut killed_running = 0;
    let mut full_run = Duration::ZERO;
    let rounds = 16;
    for round in 0..=rounds {
        let began = Instant::now();
        let mut child = kura()
            .args(["--buffer", "16MB", "--db"])
            .arg(&db_path)
            .arg("-c")
            .arg(&script)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let status = if round == 0 {
            let status = child.wait().unwrap();
            assert!(status.success(), "the uninterrupted run failed: {status}");
            full_run = began.elapsed();
            status
        } else {
            let delay = rng.below(full_run.as_millis() as u64 + 1);
            std::thread::sleep(Duration::from_millis(delay));
            if child.try_wait().unwrap().is_none() {
                killed_running += 1;
            }
            let _ = child.kill(); // SIGKILL
            child.wait().unwrap()
        };
        // The previous round's checks may leave read-ahead in flight that
        // holds the file a moment after its handle is dropped.
        let opened = Instant::now();
        let db = loop {
            match Database::open(
                &db_path,
                OpenOptions {
                    buffer_bytes: Some(4 << 20),
                    ..Default::default()
                },
            ) {
                Ok(db) => break db,
                Err(e) if e.to_string().contains("in use") && opened.elapsed().as_secs() < 5 => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("round {round}: open after kill ({status}): {e}"),
            }
        };
        let rows = int(&db, "SELECT count(*) FROM w");
        assert!(rows == W || rows == 2 * W, "round {round}: {rows} rows");
        assert_eq!(int(&db, "SELECT count(DISTINCT id) FROM w"), rows);
        assert_eq!(int(&db, "SELECT max(id) FROM w"), rows - 1);
        for parity in [0, 1] {
            let distinct = int(
                &db,
                &format!("SELECT count(DISTINCT v) FROM w WHERE id < {W} AND id % 2 = {parity}"),
            );
            assert_eq!(distinct, 1, "round {round}: rows of parity {parity} differ");
        }
        let even = int(&db, "SELECT max(v) FROM w WHERE id % 2 = 0");
        let odd = int(&db, "SELECT max(v) FROM w WHERE id % 2 = 1");
        assert!(
            even == odd || even == odd + 1,
            "round {round}: even rows at {even}, odd rows at {odd}"
        );
        let copies_differ = int(
            &db,
            &format!("SELECT count(*) FROM w a JOIN w b ON a.id + {W} = b.id WHERE a.v <> b.v"),
        );
        assert_eq!(copies_differ, 0, "round {round}");
        // An index left by the kill answers as the table does.
        if db.storage().catalog().index("w_v").is_some() {
            let mut s = db.session();
            s.execute("SET enable_seqscan = off").unwrap();
            let by_index = s
                .execute(&format!(
                    "SELECT count(*) FROM w WHERE v >= 0 AND v < {}",
                    even + 1
                ))
                .unwrap();
            assert_eq!(
                by_index.rows()[0][0],
                kura::Value::BigInt(rows),
                "round {round}"
            );
            s.execute("DROP INDEX w_v").unwrap();
        }
        assert_eq!(db.storage().buffer().pinned_frames(), 0);
        // Level the table again so the next round's script starts as it expects.
        if rows == 2 * W {
            db.session()
                .execute(&format!("DELETE FROM w WHERE id >= {W}"))
                .unwrap();
        }
        if even != odd {
            db.session()
                .execute("UPDATE w SET v = v + 1 WHERE id % 2 = 1")
                .unwrap();
        }
    }
    eprintln!(
        "{rounds} kills during CREATE INDEX/UPDATE/DELETE/INSERT ({killed_running} while running; an uninterrupted run takes {:.2} s)",
        full_run.as_secs_f64()
    );
    assert!(
        killed_running >= rounds / 2,
        "only {killed_running} of {rounds} kills hit a running process"
    );
}

/// The temporary files `pid` holds open in `temp` (they have no name there:
/// each is unlinked as soon as it is created).
fn open_temp_files(pid: u32, temp: &Path) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.starts_with(temp))
        .count()
}

#[test]
fn sigkill_during_a_spilling_query_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("spill.kura");
    let temp = dir.path().join("spill.kura.tmp");
    run_ok(
        &db_path,
        &[
            "-c",
            "CREATE TABLE t AS SELECT i, repeat('x', 40) || i::varchar AS s \
             FROM generate_series(1, 1000000) AS g(i)",
        ],
    );
    // A sort far past its limit writes runs to the temporary directory
    // beside the database; the process is killed while it holds them.
    let mut killed_spilling = false;
    for _ in 0..5 {
        let mut child = kura()
            .arg("--db")
            .arg(&db_path)
            .args([
                "-c",
                "SET memory_limit = '4MB'; \
                 SELECT count(*) FROM (SELECT s FROM t ORDER BY s DESC OFFSET 10) q",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while child.try_wait().unwrap().is_none() && began.elapsed() < Duration::from_secs(120) {
            if open_temp_files(child.id(), &temp) > 0 {
                killed_spilling = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill();
        child.wait().unwrap();
        // Nothing named stays behind: the kernel freed the files with the
        // process.
        let left = std::fs::read_dir(&temp).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0, "files left in the temporary directory");
        if killed_spilling {
            break;
        }
    }
    assert!(killed_spilling, "the query never held a temporary file");
    // The next open finds the database whole and removes the directory.
    let db = Database::open(&db_path, OpenOptions::default()).unwrap();
    assert!(
        !temp.exists(),
        "the temporary directory outlived the next open"
    );
    assert_eq!(int(&db, "SELECT count(*) FROM t"), 1_000_000);
}
