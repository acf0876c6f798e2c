//! `kura load` and `kura -c` over the storage layer: loads report their row count,
//! a bad row fails the command with `file:line:column` on stderr and a non-zero exit,
//! the table keeps its rows, and a file that is no database is refused clearly; a .csv or
//! .parquet file creates a table that does not exist and says the types it chose.

mod common;

use common::*;

#[test]
fn load_reports_rows_and_bad_rows_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.kura");
    run_ok(
        &db,
        &[
            "-c",
            "CREATE TABLE t (id INTEGER NOT NULL, name VARCHAR(10), price DECIMAL(8,2))",
        ],
    );
    let good = dir.path().join("good.csv");
    std::fs::write(
        &good,
        "id,name,price\n1,\"a, b\",1.50\n2,,2\n3,\"ü\",-0.25\n",
    )
    .unwrap();
    let out = run_ok(
        &db,
        &["load", "t", good.to_str().unwrap(), "--header", "--csv"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("COPY 3"), "{err}");

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "id,name,price\n4,x,1\n5,y,1\n6,z,1234567.5\n").unwrap();
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["load", "t", bad.to_str().unwrap(), "--header", "--csv"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!("ERROR: {}:4:5: ", bad.display());
    assert!(err.contains(&expected), "expected {expected:?} in:\n{err}");
    assert!(err.contains("1234567.5"), "{err}");

    let out = run_ok(
        &db,
        &[
            "--format",
            "csv",
            "-c",
            "SELECT count(*) FROM t; SELECT * FROM t LIMIT 3",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"3"),
        "the failed load added nothing:\n{text}"
    );
    // `--format csv` prints RFC 4180 CSV, header first: the comma inside a value
    // quoted, NULL an empty field.
    for row in ["id,name,price", "1,\"a, b\",1.50", "2,,2.00", "3,ü,-0.25"] {
        assert!(lines.contains(&row), "missing {row:?} in:\n{text}");
    }
}

#[test]
fn a_file_that_is_no_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let not_db = dir.path().join("notes.txt");
    let content = "these are notes, not a database\n".repeat(500);
    std::fs::write(&not_db, &content).unwrap();
    let out = kura()
        .arg("--db")
        .arg(&not_db)
        .args(["-c", "SELECT count(*) FROM t"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a kura database"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&not_db).unwrap(),
        content,
        "the file was left alone"
    );
}

#[test]
fn a_missing_database_is_announced_and_tpch_run_asks_for_a_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.kura");
    // `tpch run` does not create an empty database just to fail every query.
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["tpch", "run", "--queries", "6"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no database at") && err.contains("tpch load --sf 0.1"),
        "{err}"
    );
    assert!(!db.exists(), "tpch run created {}", db.display());
    // The shell and -c create it, and say so once.
    let out = run_ok(&db, &["-c", "SELECT 1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not exist; creating a new, empty database"),
        "{err}"
    );
    let out = run_ok(&db, &["-c", "SELECT 1"]);
    assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    // An existing database without the TPC-H tables gets the same hint.
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["tpch", "run", "--queries", "6"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds no TPC-H tables") && err.contains("--load"),
        "{err}"
    );
}

#[test]
fn load_null_sets_the_null_marker() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("null.kura");
    run_ok(
        &db,
        &["-c", "CREATE TABLE t (id INTEGER, n INTEGER, s VARCHAR)"],
    );
    let file = dir.path().join("t.tbl");
    std::fs::write(&file, "1|-|-\n2|5|\n3|6|\\N\n").unwrap();
    let out = run_ok(&db, &["load", "t", file.to_str().unwrap(), "--null", "-"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("COPY 3"));
    let out = run_ok(
        &db,
        &[
            "--format",
            "csv",
            "-c",
            "SELECT id, n IS NULL, s IS NULL, s FROM t ORDER BY id",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for row in ["1,t,t,", "2,f,f,\"\"", "3,f,f,\\N"] {
        assert!(
            text.lines().any(|l| l == row),
            "missing {row:?} in:\n{text}"
        );
    }
    // An empty number field is an error when NULL is written otherwise.
    let bad = dir.path().join("bad.tbl");
    std::fs::write(&bad, "4|7|a\n5||b\n").unwrap();
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["load", "t", bad.to_str().unwrap(), "--null", "-"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!("{}:2:3: column n (INTEGER): empty value", bad.display());
    assert!(err.contains(&expected), "expected {expected:?} in:\n{err}");
}

#[test]
fn load_creates_a_missing_table_from_the_files_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.kura");
    let csv = dir.path().join("people.csv");
    std::fs::write(&csv, "id;name;score\n1;ann;2.5\n2;bo;\n").unwrap();
    let out = run_ok(&db, &["load", "people", csv.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("created table people (id bigint, name varchar, score double)"),
        "{err}"
    );
    assert!(err.contains("COPY 2"), "{err}");
    let pq = dir.path().join("people.parquet");
    run_ok(&db, &["-c", &format!("COPY people TO '{}'", pq.display())]);
    let out = run_ok(&db, &["load", "copied", pq.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("created table copied"));
    let out = run_ok(
        &db,
        &[
            "--format",
            "csv",
            "-c",
            "SELECT count(*), sum(score) FROM copied",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "2,2.5"), "{text}");
    // A file that does not say its columns still needs the table.
    let tbl = dir.path().join("x.tbl");
    std::fs::write(&tbl, "1|a|\n").unwrap();
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args(["load", "nope", tbl.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}
