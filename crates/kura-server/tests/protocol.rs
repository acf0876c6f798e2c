//! The wire protocol against a real PostgreSQL client library (tokio-postgres,
//! which uses the extended protocol and binary result format): types and OIDs,
//! parameters, portals with row limits, errors with SQLSTATEs, session
//! statements, authentication, cancel and shutdown.

mod common;

use std::time::{Duration, Instant};

use common::{exec, TestServer};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

const ROWS: &str = "1|10000000000|12.34|1995-03-15|alpha|ab|0.5|true\n\
                    2|-7|-0.05|2000-01-01|beta|xyz|-2.25|false\n\
                    3|0|100.00|1970-01-01|gamma|q|1e10|true\n";

fn setup(db: &kura::Database, dir: &std::path::Path) {
    let file = dir.join("t.tbl");
    std::fs::write(&file, ROWS).unwrap();
    exec(
        db,
        "create table t (i integer, b bigint, d decimal(15,2), dt date, v varchar(20), c char(3), f double, ok boolean)",
    );
    exec(
        db,
        &format!("copy t from '{}' (delimiter '|')", file.display()),
    );
}

fn server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let s = TestServer::trust(|db| setup(db, &path));
    drop(dir);
    s
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(conn_str: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(conn_str, NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
}

#[test]
fn binary_results_carry_postgresql_types() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let stmt = c.prepare("select * from t limit 3").await.unwrap();
        let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(
            types,
            vec![
                Type::INT4,
                Type::INT8,
                Type::NUMERIC,
                Type::DATE,
                Type::VARCHAR,
                Type::BPCHAR,
                Type::FLOAT8,
                Type::BOOL
            ]
        );
        let rows = c.query(&stmt, &[]).await.unwrap();
        assert_eq!(rows.len(), 3);
        // tokio-postgres asks for binary results: every value round-trips binary encoding.
        assert_eq!(rows[0].get::<_, i32>(0), 1);
        assert_eq!(rows[0].get::<_, i64>(1), 10_000_000_000);
        assert_eq!(rows[1].get::<_, i64>(1), -7);
        assert_eq!(rows[1].get::<_, f64>(6), -2.25);
        assert_eq!(rows[2].get::<_, f64>(6), 1e10);
        assert_eq!(rows[0].get::<_, &str>(4), "alpha");
        assert!(rows[0].get::<_, bool>(7));
        assert!(!rows[1].get::<_, bool>(7));
    });
}

#[test]
fn text_results_match_postgresql_forms() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let msgs = c.simple_query("select * from t limit 3").await.unwrap();
        let rows: Vec<Vec<String>> = msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(
                    (0..r.len())
                        .map(|i| r.get(i).unwrap_or("NULL").to_string())
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(
            rows[0][..6],
            ["1", "10000000000", "12.34", "1995-03-15", "alpha", "ab"].map(String::from)
        );
        assert_eq!(rows[1][2], "-0.05");
        assert_eq!(rows[2][3], "1970-01-01");
        assert_eq!(rows[1][7], "f");
        assert!(matches!(
            msgs.last(),
            Some(SimpleQueryMessage::CommandComplete(3))
        ));
    });
}

#[test]
fn errors_carry_sqlstate_and_the_session_survives() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let e = c
            .simple_query("select * from no_such_table")
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE), "{e:?}");
        let e = c.simple_query("selec 1 frm").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR), "{e:?}");
        // Extended protocol: a syntax error at Parse.
        let e = c.prepare("selec 1 frm t").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR), "{e:?}");
        let e = c
            .simple_query("set execution_mode = 'warp'")
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::INVALID_PARAMETER_VALUE), "{e:?}");
        // Still usable on both protocols.
        let n: i64 = c
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 3);
        let msgs = c.simple_query("select count(*) from t").await.unwrap();
        assert!(msgs
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::Row(r) if r.get(0) == Some("3"))));
    });
}

#[test]
fn multi_statement_query_stops_at_the_first_error() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let e = c
            .batch_execute(
                "create table a1 (x integer); select * from missing; create table a2 (x integer)",
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
        // The statement before the error ran, the one after did not.
        assert!(c.simple_query("select count(*) from a1").await.is_ok());
        let e = c.simple_query("select count(*) from a2").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
    });
}

#[test]
fn session_statements_answer_like_postgresql() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let v: String = c.query_one("select version()", &[]).await.unwrap().get(0);
        assert!(v.starts_with("PostgreSQL ") && v.contains("kura"), "{v}");
        c.batch_execute("SET extra_float_digits = 3; SET application_name = 'tests'")
            .await
            .unwrap();
        let msgs = c.simple_query("SHOW application_name").await.unwrap();
        assert!(msgs
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::Row(r) if r.get(0) == Some("tests"))));
        // kura's own settings go to the engine.
        c.batch_execute("SET execution_mode = 'serial'")
            .await
            .unwrap();
        let msgs = c.simple_query("SHOW execution_mode").await.unwrap();
        assert!(msgs
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::Row(r) if r.get(0) == Some("serial"))));
        // Transaction control is accepted; a failed block rejects statements until ROLLBACK.
        c.batch_execute("BEGIN").await.unwrap();
        assert!(c.simple_query("select * from missing").await.is_err());
        let e = c.simple_query("select count(*) from t").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
        c.batch_execute("ROLLBACK").await.unwrap();
        assert!(c.simple_query("select count(*) from t").await.is_ok());
    });
}

#[test]
fn portals_with_row_limits() {
    let s = server();
    rt().block_on(async {
        let mut c = connect(&s.conn_str()).await;
        // Portal fetched in pieces of 2 rows (Execute with a row limit).
        let tx = c.transaction().await.unwrap();
        let stmt = tx.prepare("select * from t").await.unwrap();
        let portal = tx.bind(&stmt, &[]).await.unwrap();
        let first = tx.query_portal(&portal, 2).await.unwrap();
        let rest = tx.query_portal(&portal, 2).await.unwrap();
        let none = tx.query_portal(&portal, 2).await.unwrap();
        assert_eq!((first.len(), rest.len(), none.len()), (2, 1, 0));
        assert_eq!(rest[0].get::<_, i32>(0), 3);
        tx.commit().await.unwrap();
    });
}

#[test]
fn parameters_bind_typed_values() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        // The statement types $1 from the column it is compared with (int4),
        // which is what tokio-postgres checks the Rust value against.
        let stmt = c.prepare("select i from t where i <= $1").await.unwrap();
        assert_eq!(stmt.params(), &[Type::INT4]);
        let rows = c.query(&stmt, &[&2i32]).await.unwrap();
        let mut got: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        got.sort();
        assert_eq!(got, vec![1, 2]);
        let e = c
            .query("select * from t where i <= $1", &[])
            .await
            .unwrap_err();
        assert!(e.to_string().contains("parameters"), "{e}");
    });
}

#[test]
fn smallint_is_int2_in_text_and_binary() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute(
            "create table st (k smallint, n int); \
             insert into st values (-32768, 1), (32767, 2), (null, 3)",
        )
        .await
        .unwrap();
        // RowDescription: OID 21 and width 2; binary values are 2 bytes.
        let stmt = c
            .prepare("select k, k + 1::int2, k + 1 from st where n < 3 order by n")
            .await
            .unwrap();
        let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(types, vec![Type::INT2, Type::INT2, Type::INT4]);
        let err = c.query(&stmt, &[]).await.unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::NUMERIC_VALUE_OUT_OF_RANGE));
        let rows = c
            .query("select k, n from st order by n", &[])
            .await
            .unwrap();
        assert_eq!(rows[0].get::<_, i16>(0), i16::MIN);
        assert_eq!(rows[1].get::<_, i16>(0), i16::MAX);
        assert_eq!(rows[2].get::<_, Option<i16>>(0), None);
        // A parameter typed int2 is bound from its 2 binary bytes.
        let stmt = c.prepare("select $1::int2 + 1::int2").await.unwrap();
        assert_eq!(stmt.params(), &[Type::INT2]);
        assert_eq!(stmt.columns()[0].type_(), &Type::INT2);
        let row = c.query_one(&stmt, &[&41i16]).await.unwrap();
        assert_eq!(row.get::<_, i16>(0), 42);
        let err = c.query_one(&stmt, &[&i16::MAX]).await.unwrap_err();
        assert_eq!(err.code(), Some(&SqlState::NUMERIC_VALUE_OUT_OF_RANGE));
        let n = c
            .query_one("select n from st where k = $1", &[&i16::MIN])
            .await
            .unwrap();
        assert_eq!(n.get::<_, i32>(0), 1);
        // Text results (the simple protocol).
        let msgs = c.simple_query("select k from st order by n").await.unwrap();
        let texts: Vec<Option<String>> = msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.get(0).map(String::from)),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            vec![Some("-32768".into()), Some("32767".into()), None]
        );
    });
}

#[test]
fn scram_password_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let auth = kura_server::Auth::Scram(std::sync::Arc::new(kura_server::Credentials::single(
        Some("tester"),
        "s3cret",
    )));
    let s = TestServer::start(auth, |db| setup(db, &path));
    rt().block_on(async {
        let ok = tokio_postgres::connect(&format!("{} password=s3cret", s.conn_str()), NoTls).await;
        assert!(ok.is_ok(), "{:?}", ok.err());
        let bad = tokio_postgres::connect(&format!("{} password=wrong", s.conn_str()), NoTls).await;
        assert_eq!(
            bad.err().and_then(|e| e.code().cloned()),
            Some(SqlState::INVALID_PASSWORD)
        );
        let none = tokio_postgres::connect(&s.conn_str(), NoTls).await;
        assert!(none.is_err());
        let other_user = format!(
            "host=127.0.0.1 port={} user=mallory password=s3cret",
            s.addr.port()
        );
        assert!(tokio_postgres::connect(&other_user, NoTls).await.is_err());
    });
}

#[test]
fn graceful_shutdown_closes_every_session() {
    let s = server();
    let live = s.live_sessions.clone();
    let conn_str = s.conn_str();
    let runtime = rt();
    let clients: Vec<Client> = runtime.block_on(async {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(connect(&conn_str).await);
        }
        v
    });
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 4);
    let started = Instant::now();
    let summary = s.shutdown();
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(summary.sessions_left, 0);
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0);
    runtime.block_on(async {
        assert!(
            clients[0].simple_query("select 1").await.is_err(),
            "connection closed by shutdown"
        );
    });
}

#[test]
fn casts_type_parameters_the_client_leaves_open() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        // tokio-postgres sends no parameter types: the casts fix them.
        let stmt = c
            .prepare("select $1::int + 1, $2::date, cast($3 as numeric(10,2)), $4::timestamp")
            .await
            .unwrap();
        assert_eq!(
            stmt.params(),
            &[Type::INT4, Type::DATE, Type::NUMERIC, Type::TIMESTAMP]
        );
        assert_eq!(stmt.columns()[3].type_(), &Type::TIMESTAMP);
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_704_164_645_123_456);
        let row = c
            .query_one(
                "select $1::int + 1, $2::timestamp, $2::timestamp::date = '2024-01-02'",
                &[&41i32, &when],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, i32>(0), 42);
        assert_eq!(row.get::<_, std::time::SystemTime>(1), when);
        assert!(row.get::<_, bool>(2));
        let stmt = c
            .prepare("select i from t where b = $1::bigint")
            .await
            .unwrap();
        assert_eq!(stmt.params(), &[Type::INT8]);
        let row = c.query_one(&stmt, &[&-7i64]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 2);
    });
}

#[test]
fn sql_prepared_statements_and_cursors() {
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute("PREPARE q (int) AS SELECT v FROM t WHERE i = $1")
            .await
            .unwrap();
        let row = c.query_one("EXECUTE q (3)", &[]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), "gamma");
        let e = c.batch_execute("PREPARE q AS SELECT 1").await.unwrap_err();
        assert_eq!(e.code().unwrap().code(), "42P05");
        let e = c.batch_execute("EXECUTE q (1, 2)").await.unwrap_err();
        assert_eq!(e.code().unwrap().code(), "42601");
        c.batch_execute("DEALLOCATE q").await.unwrap();
        let e = c.batch_execute("EXECUTE q (1)").await.unwrap_err();
        assert_eq!(e.code().unwrap().code(), "26000");
        // Session functions inside expressions, answered by the engine.
        let row = c
            .query_one(
                "select current_database() || 'x', version() like 'PostgreSQL%', current_user = session_user",
                &[],
            )
            .await
            .unwrap();
        assert!(row.get::<_, String>(0).ends_with('x'));
        assert!(row.get::<_, bool>(1) && row.get::<_, bool>(2));
        // Cursors live in a transaction block.
        let e = c
            .batch_execute("DECLARE k CURSOR FOR SELECT i FROM t")
            .await
            .unwrap_err();
        assert_eq!(e.code().unwrap().code(), "25P01");
        c.batch_execute("BEGIN; DECLARE k CURSOR FOR SELECT i FROM t ORDER BY i")
            .await
            .unwrap();
        let rows = c.query("FETCH FORWARD 2 FROM k", &[]).await.unwrap();
        assert_eq!(rows.len(), 2);
        let rows = c.query("FETCH ALL FROM k", &[]).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>(), [3]);
        c.batch_execute("COMMIT").await.unwrap();
        let e = c.query("FETCH NEXT FROM k", &[]).await.unwrap_err();
        assert_eq!(e.code().unwrap().code(), "34000");
    });
}

/// COPY through the extended protocol (rust-postgres's `copy_in` /
/// `copy_out`: Parse, Bind, Execute, then the data), in text and binary.
#[test]
fn copy_in_and_out_through_the_extended_protocol() {
    use futures::{SinkExt, TryStreamExt};
    let s = server();
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute("create table cp (i integer, v varchar(10))")
            .await
            .unwrap();
        let sink = c.copy_in("copy cp from stdin").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"1\tone\n2\t\\N\n"))
            .await
            .unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let out: Vec<bytes::Bytes> = c
            .copy_out("copy (select * from cp order by i) to stdout")
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(out.concat(), b"1\tone\n2\t\\N\n");
        // Binary out and back in.
        let binary: Vec<bytes::Bytes> = c
            .copy_out("copy cp to stdout (format binary)")
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let binary = binary.concat();
        assert!(binary.starts_with(b"PGCOPY\n\xff\r\n\0"));
        let sink = c
            .copy_in("copy cp from stdin (format binary)")
            .await
            .unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from(binary)).await.unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let n: i64 = c
            .query_one("select count(*) from cp", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 4);
        // A bad COPY is an error and the session goes on.
        let Err(e) = c.copy_in::<_, bytes::Bytes>("copy nope from stdin").await else {
            panic!("COPY into a missing table started");
        };
        assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE));
        let one: i32 = c.query_one("select 1", &[]).await.unwrap().get(0);
        assert_eq!(one, 1);
        let sink = c.copy_in("copy cp from stdin").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"x\ty\n"))
            .await
            .unwrap();
        let e = sink.finish().await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION));
        let n: i64 = c
            .query_one("select count(*) from cp", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 4, "a failed COPY loads nothing");
    });
}

/// A server named after its file (`kura serve --db sales.kura`) shows that
/// name everywhere: current_database(), pg_database, pg_database_size.
#[test]
fn the_database_name_is_one_name() {
    let s = TestServer::start_with(
        kura_server::Auth::Trust,
        |config, _| {
            config.database_name = "sales".into();
            kura::FileAccess::Denied
        },
        |_| {},
    );
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let row = c
            .query_one(
                "select current_database()::text, (select datname from pg_database)::text, \
                 pg_database_size(current_database()) > 0, \
                 (select count(*) from information_schema.schemata where catalog_name = 'sales')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "sales");
        assert_eq!(row.get::<_, String>(1), "sales");
        assert!(row.get::<_, bool>(2));
        assert_eq!(row.get::<_, i64>(3), 3);
    });
}
