//! What a prepared statement announces (parameter and column types, sent in
//! ParameterDescription and RowDescription before any row) must be what
//! running it produces, or a client decoding binary results misreads them:
//! checked on the 22 TPC-H queries; and `SHOW server_version` agrees between
//! the server's startup parameters and the database session.

mod common;

use common::{load_tpch, tpch_query};
use kura_server::types::pg_type;
use kura_server::{Engine, EngineSession, KuraEngine};

/// The statements of a query file, comments dropped (the files hold no `;`
/// inside literals).
fn statements(sql: &str) -> Vec<String> {
    let body: Vec<&str> = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    body.join("\n")
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn described_columns_match_executed_columns_on_tpch() {
    let dir = tempfile::tempdir().unwrap();
    let db = kura::Database::open(&dir.path().join("t.db"), Default::default()).unwrap();
    load_tpch(&db, 0.01);
    let engine = KuraEngine::new(db);
    let mut s = engine.session();
    let mut checked = 0;
    for n in 1..=22 {
        let id = format!("q{n:02}");
        for sql in statements(&tpch_query(&id)) {
            let (prepared, shape) = s
                .prepare(&sql)
                .unwrap_or_else(|e| panic!("{id}: prepare: {e}"));
            let described = match shape.columns {
                Some(c) => c,
                None => s.describe(&prepared).unwrap(),
            };
            let outcome = s
                .execute_prepared(&prepared, &[])
                .unwrap_or_else(|e| panic!("{id}: execute: {e}"));
            let wire = |cols: &[kura_server::Column]| {
                cols.iter()
                    .map(|c| (c.name.clone(), pg_type(&c.data_type)))
                    .collect::<Vec<_>>()
            };
            assert_eq!(wire(&described), wire(&outcome.columns), "{id}: {sql}");
            if outcome.returns_rows() {
                let rows = futures::executor::block_on(futures::StreamExt::count(outcome.rows));
                assert!(rows > 0, "{id} returned no rows");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 22, "one row-returning statement per query");
}

#[test]
fn parameter_types_come_from_the_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = kura::Database::open(&dir.path().join("t.db"), Default::default()).unwrap();
    common::exec(
        &db,
        "create table p (d date, x decimal(15,2), q integer, s varchar(10))",
    );
    let mut s = KuraEngine::new(db).session();
    let (_, shape) = s
        .prepare("select s from p where d >= $1 and x < $2 and q = $3 and s = $4")
        .unwrap();
    let types: Vec<_> = shape
        .params
        .iter()
        .map(|t| t.as_ref().map(pg_type))
        .collect();
    use pgwire::api::Type;
    assert_eq!(
        types,
        vec![
            Some(Type::DATE),
            Some(Type::NUMERIC),
            Some(Type::INT4),
            Some(Type::VARCHAR)
        ]
    );
}

#[test]
fn server_version_agrees_between_server_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = kura::Database::open(&dir.path().join("t.db"), Default::default()).unwrap();
    let rows = db.session().execute("show server_version").unwrap().rows();
    assert_eq!(
        rows,
        vec![vec![kura::Value::Text(kura_server::SERVER_VERSION.into())]]
    );
}
