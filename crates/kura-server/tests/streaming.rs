//! Results stream to the client while the query runs, in the simple query
//! protocol (psql's) and in the extended one (drivers') when an Execute asks
//! for all rows: a result larger than the session's memory limit is sent
//! whole, an error after rows were sent still reaches the client (and aborts
//! its transaction), and a client that goes away mid-result stops its query.
//! An Execute with a row limit (a cursor-like fetch) gathers its rows first.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{load_tpch, TestServer};
use futures::{pin_mut, StreamExt};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

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

fn data_rows(messages: &[SimpleQueryMessage]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
        .count()
}

#[test]
fn a_result_larger_than_the_memory_limit_streams_in_both_protocols() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    rt().block_on(async {
        let mut c = connect(&s.conn_str()).await;
        c.batch_execute("SET memory_limit = '1MB'").await.unwrap();
        let sql = "SELECT l_orderkey, l_comment FROM lineitem";
        // One value larger than the limit cannot be streamed nor spilled (a
        // sort of the same rows would spill to disk and succeed).
        let e = c
            .simple_query("SELECT length(string_agg(l_comment, ',')) FROM lineitem")
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::OUT_OF_MEMORY), "{e}");
        let rows = c.simple_query(sql).await.unwrap();
        assert_eq!(data_rows(&rows), 60_175);
        let rows = c.query(sql, &[]).await.unwrap();
        assert_eq!(rows.len(), 60_175);
        let first: i32 = rows[0].get(0);
        assert_eq!(first, 1);
        // With a parameter, through a named statement, twice.
        let stmt = c
            .prepare("SELECT l_orderkey, l_comment FROM lineitem WHERE l_orderkey > $1")
            .await
            .unwrap();
        for _ in 0..2 {
            assert_eq!(c.query(&stmt, &[&0i32]).await.unwrap().len(), 60_175);
        }
        // A portal read 1000 rows at a time gathers each part (in memory).
        c.batch_execute("SET memory_limit = '64MB'").await.unwrap();
        let tx = c.transaction().await.unwrap();
        let portal = tx.bind(&stmt, &[&59_000i32]).await.unwrap();
        let mut fetched = 0;
        loop {
            let part = tx.query_portal(&portal, 1000).await.unwrap();
            if part.is_empty() {
                break;
            }
            fetched += part.len();
        }
        tx.commit().await.unwrap();
        assert_eq!(fetched, 1_022);
        // Several statements in one string: the earlier ones answer whole.
        let rows = c
            .simple_query("SELECT 1; SELECT l_orderkey FROM lineitem")
            .await
            .unwrap();
        assert_eq!(data_rows(&rows), 60_176);
    });
}

#[test]
fn a_cross_product_larger_than_the_memory_limit_streams() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute("SET memory_limit = '16MB'").await.unwrap();
        // 3.6 billion rows; a morsel of the probe side alone makes far more
        // than 16 MB of them, so they must reach the client as they are made.
        let stream = c
            .simple_query_raw("SELECT a.l_orderkey, b.l_comment FROM lineitem a, lineitem b")
            .await
            .unwrap();
        pin_mut!(stream);
        let mut rows = 0;
        while rows < 1_000_000 {
            match stream.next().await.unwrap().unwrap() {
                SimpleQueryMessage::Row(_) => rows += 1,
                _ => continue,
            }
        }
    });
    // Streamed a morsel at a time, a cross product's rows are the same as
    // when it runs whole (under an aggregate) and come in the same order.
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let sql = "SELECT a.n_name, b.r_name, c.r_regionkey FROM nation a, region b, region c";
        let streamed: Vec<String> = c
            .simple_query(sql)
            .await
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(format!(
                    "{}|{}|{}",
                    r.get(0).unwrap(),
                    r.get(1).unwrap(),
                    r.get(2).unwrap()
                )),
                _ => None,
            })
            .collect();
        let whole: String = c
            .query_one(
                &format!(
                    "SELECT string_agg(n_name || '|' || r_name || '|' || r_regionkey, ',') FROM ({sql}) t(n_name, r_name, r_regionkey)"
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(streamed.len(), 625);
        assert_eq!(streamed.join(","), whole);
    });
}

/// Counts the rows a stream yields before its division-by-zero error.
async fn rows_then_error<T>(
    stream: impl futures::Stream<Item = Result<T, tokio_postgres::Error>>,
    is_row: impl Fn(&T) -> bool,
) -> usize {
    pin_mut!(stream);
    let mut rows = 0;
    while let Some(r) = stream.next().await {
        match r {
            Ok(m) => rows += usize::from(is_row(&m)),
            Err(e) => {
                assert_eq!(e.code(), Some(&SqlState::DIVISION_BY_ZERO), "{e}");
                return rows;
            }
        }
    }
    panic!("no error after {rows} rows");
}

#[test]
fn an_error_after_rows_were_sent_reaches_the_client() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        // Only the last orders divide by zero: many rows go out before the error.
        let bad = "SELECT l_orderkey, 1 / (l_orderkey - 60000) FROM lineitem";
        let simple = c.simple_query_raw(bad).await.unwrap();
        let rows = rows_then_error(simple, |m| matches!(m, SimpleQueryMessage::Row(_))).await;
        assert!(rows > 40_000, "{rows} rows before the error");
        // The same through the extended protocol.
        let extended = c.query_raw(bad, Vec::<i32>::new()).await.unwrap();
        let rows = rows_then_error(extended, |_| true).await;
        assert!(rows > 40_000, "{rows} rows before the error (extended)");
        // The session goes on; in a transaction the error aborts it.
        let n: i64 = c
            .query_one("SELECT count(*) FROM nation", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 25);
        c.batch_execute("BEGIN").await.unwrap();
        let e = c.simple_query(bad).await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::DIVISION_BY_ZERO));
        let e = c.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
        c.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(data_rows(&c.simple_query("SELECT 1").await.unwrap()), 1);
    });
}

#[test]
fn a_client_gone_mid_result_stops_its_query() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        // 37.6 million rows, far more than the test waits for.
        let stream = c
            .simple_query_raw("SELECT a.l_orderkey FROM lineitem a, nation b, nation c")
            .await
            .unwrap();
        pin_mut!(stream);
        for _ in 0..1000 {
            stream.next().await.unwrap().unwrap();
        }
    });
    // The runtime and with it the connection are gone.
    let t0 = Instant::now();
    while s.live_sessions.load(Ordering::SeqCst) > 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the abandoned query still holds its session"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The server serves on.
    rt().block_on(async {
        let c = connect(&s.conn_str()).await;
        let n: i64 = c
            .query_one("SELECT count(*) FROM region", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 5);
    });
}
