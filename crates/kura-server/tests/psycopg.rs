//! psycopg 3 (from PyPI, in a virtual environment this test creates) against
//! the server: connect, types, errors, parameters; all 22 TPC-H queries at
//! SF 0.01 checked against the reference answers; and nested transactions
//! (savepoints) through psycopg and SQLAlchemy 2 (installed there too).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::python::python;
use common::{answers_dir, load_tpch, TestServer};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_psycopg.py")
}

fn run(args: &[&str]) {
    let out = Command::new(python())
        .arg(script())
        .args(args)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "psycopg checks failed:\n{stdout}");
}

#[test]
fn psycopg_connects_types_errors_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tbl");
    let s = TestServer::trust(|db| {
        common::exec(db, "create table t (i integer, b bigint, d decimal(15,2), dt date, v varchar(20), x integer, y integer, ok boolean)");
        std::fs::write(&file, "1|10000000000|12.34|1995-03-15|alpha|0|0|true\n2|-7|-0.05|2000-01-01|beta|0|0|false\n3|0|1|1970-01-01|g|0|0|true\n").unwrap();
        common::exec(db, &format!("copy t from '{}'", file.display()));
    });
    run(&["--port", &s.addr.port().to_string()]);
}

#[test]
fn psycopg_tpch_22_queries_match_reference_answers() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    let queries = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kura/src/tpch/queries");
    run(&[
        "--port",
        &s.addr.port().to_string(),
        "--tpch",
        "--queries",
        queries.to_str().unwrap(),
        "--answers",
        answers_dir("0.01").to_str().unwrap(),
    ]);
}

#[test]
fn psycopg_and_sqlalchemy_nested_transactions_use_savepoints() {
    let s = TestServer::trust(|_| {});
    run(&["--port", &s.addr.port().to_string(), "--savepoints"]);
}
