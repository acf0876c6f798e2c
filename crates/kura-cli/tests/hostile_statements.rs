//! Hostile statements against `kura serve` over TPC-H SF 0.01: the ones a
//! review found (values built by `repeat`, chains of 100,000 CTEs or UNIONs,
//! cartesian products, a 1 TB second tier, 70,000 result columns) and a
//! generated batch of 500 more, from two clients at once — one under
//! `memory_limit = 64MB`, one with `memory_limit = 1TB`, so that only the
//! server's `--max-memory` holds it back. The server must not crash or panic,
//! every connection must survive its statements, no statement may answer later
//! than [`GRACE`] after its `statement_timeout`, and the server's peak RSS must
//! stay under `--max-memory` + the buffer pool + [`SLACK_MB`].
//!
//! Measured peaks are 370–512 MB over six seeds (the bound is 528 MB; 424 MB on
//! the default seed, slowest answer 0.87 s at 500 ms): what
//! queries hold is bounded by `--max-memory`, and aggregation, streamed cross
//! products and text functions count what they allocate, doubling growth
//! included.
//! `KURA_HOSTILE_SEED` replays a batch; `KURA_HOSTILE_COUNT` sizes it.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use tokio_postgres::NoTls;

const MAX_MEMORY_MB: u64 = 256;
const BUFFER_MB: u64 = 16;
const SLACK_MB: u64 = 256;
const TIMEOUT_MS: u64 = 500;
/// How late past its time limit a statement may answer.
const GRACE: Duration = Duration::from_millis(1000);

/// [`GRACE`], or `KURA_HOSTILE_GRACE_MS` to study memory on a machine too
/// busy to keep time.
fn grace() -> Duration {
    std::env::var("KURA_HOSTILE_GRACE_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(GRACE, Duration::from_millis)
}

fn serve(db: &Path, port: u16) -> Child {
    kura()
        .args(["--buffer", &format!("{BUFFER_MB}MB"), "--db"])
        .arg(db)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--max-memory",
            &format!("{MAX_MEMORY_MB}MB"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kura serve")
}

/// The server's peak resident memory so far (VmHWM), in MiB.
fn peak_rss_mb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0)
        >> 10
}

/// The statements the review reported, as they were sent.
fn reported() -> Vec<String> {
    let chain = |n: usize| {
        let mut s = String::from("with c0 as (select 1 as x)");
        for i in 1..n {
            s.push_str(&format!(", c{i} as (select x + 1 as x from c{})", i - 1));
        }
        s + &format!(" select * from c{}", n - 1)
    };
    let unions = |n: usize| {
        (0..n)
            .map(|i| format!("select {i}"))
            .collect::<Vec<_>>()
            .join(" union all ")
    };
    vec![
        "select count(*) from (select repeat(l_comment,100000) as s from lineitem) t \
         where length(s) > 0"
            .into(),
        chain(10_000),
        chain(100_000),
        "select * from lineitem a, lineitem b".into(),
        "select count(*) from lineitem a, lineitem b, nation c".into(),
        "set tier2 = '1TB'".into(),
        "set tier2 = '200GB'".into(),
        unions(100_000),
        unions(5_000),
        format!("select {}", vec!["1"; 70_000].join(", ")),
        "select 32767::smallint + 1::smallint".into(),
    ]
}

/// One generated hostile statement.
fn generated(rng: &mut Rng) -> String {
    let k = |rng: &mut Rng, lo: u64, hi: u64| lo + rng.below(hi - lo + 1);
    match rng.below(20) {
        0 => format!(
            "select count(*) from (select repeat(l_comment, {}) s from lineitem) t \
             where length(s) > {}",
            k(rng, 1_000, 400_000),
            k(rng, 0, 100)
        ),
        1 => {
            let terms = k(rng, 2, 12) as usize;
            format!(
                "select max(length(s)) from (select {} s from lineitem, \
                 generate_series(1, {})) t",
                vec!["l_comment"; terms].join(" || "),
                k(rng, 1, 2_000)
            )
        }
        2 => format!(
            "select max(length(replace(l_comment, '{}', repeat('x', {})))) from lineitem",
            ["e", " ", "a", "s"][rng.below(4) as usize],
            k(rng, 1_000, 2_000_000)
        ),
        3 => format!(
            "select max(length(regexp_replace(l_comment, '{}', repeat('y', {}), 'g'))) \
             from lineitem",
            ["", ".", "(.)", "e*"][rng.below(4) as usize],
            k(rng, 10, 500_000)
        ),
        4 => format!(
            "select count(*) from lineitem a, {} b where a.l_quantity > {}",
            ["lineitem", "orders", "partsupp"][rng.below(3) as usize],
            k(rng, 0, 40)
        ),
        5 => "select a.l_comment, b.l_comment from lineitem a, lineitem b \
              order by a.l_comment, b.l_comment desc limit 5"
            .into(),
        6 => format!(
            "select count(*) from (select a.l_comment || b.p_name as k, count(*) \
             from lineitem a, part b where a.l_linenumber <= {} group by 1) t",
            k(rng, 1, 7)
        ),
        7 => [
            "select length(string_agg(a.l_comment, ',')) from lineitem a, orders b",
            "select cardinality(array_agg(a.l_comment)) from lineitem a, lineitem b",
            "select count(distinct a.l_orderkey::bigint * 1000000 + b.l_orderkey) \
             from lineitem a, lineitem b",
        ][rng.below(3) as usize]
            .into(),
        8 => "select sum(x) from (select row_number() over (order by a.l_comment, \
              b.l_comment) x from lineitem a, lineitem b) t"
            .into(),
        9 => {
            let n = k(rng, 500, 20_000) as usize;
            let mut s = String::from("with c0 as (select 1 as x)");
            for i in 1..n {
                s.push_str(&format!(", c{i} as (select x + 1 as x from c{})", i - 1));
            }
            s + &format!(" select * from c{}", n - 1)
        }
        10 => (0..k(rng, 100, 2_000))
            .map(|i| {
                format!(
                    "select {i}, n_name from nation where n_nationkey = {}",
                    i % 25
                )
            })
            .collect::<Vec<_>>()
            .join(" union all "),
        11 => {
            let d = k(rng, 100, 5_000) as usize;
            format!("select {}1{}", "(".repeat(d), ")".repeat(d))
        }
        12 => format!(
            "select count(*) from lineitem where l_orderkey in ({})",
            (0..k(rng, 1_000, 60_000))
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        13 => format!(
            "select {}",
            (0..k(rng, 500, 5_000))
                .map(|i| format!("{i} as c{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        14 => format!(
            "select sum(x::bigint * y) from generate_series(1, {}) x, generate_series(1, {}) y",
            k(rng, 1_000, 1_000_000),
            k(rng, 1_000, 1_000_000)
        ),
        15 => format!(
            "select length('{}')",
            "z".repeat(k(rng, 1_000, 1_000_000) as usize)
        ),
        16 => {
            let d = k(rng, 50, 3_000) as usize;
            format!("select {}1{}", "(select ".repeat(d), ")".repeat(d))
        }
        17 => format!(
            "select count(*) from (select * from lineitem a, lineitem b order by random() \
             limit {}) t",
            k(rng, 1, 1_000_000)
        ),
        18 => format!(
            "select max(length(array_to_string(string_to_array(repeat(l_comment || ',', {}), \
             ','), ';'))) from lineitem",
            k(rng, 10, 100_000)
        ),
        _ => "select * from lineitem a, lineitem b, lineitem c".into(),
    }
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    ok: usize,
    refused: usize,
    timed_out: usize,
    slowest: Duration,
    slowest_sql: String,
}

/// Runs `statements` on one connection with `memory_limit`; panics if the
/// connection dies or a statement answers too late. Result rows are read and
/// dropped as they arrive.
async fn client(port: u16, pid: u32, memory_limit: &str, statements: Vec<String>) -> Tally {
    let conn_str = format!("host=127.0.0.1 port={port} user=kura dbname=kura");
    let (c, conn) = tokio_postgres::connect(&conn_str, NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    c.batch_execute(&format!(
        "set statement_timeout = '{TIMEOUT_MS}ms'; set memory_limit = '{memory_limit}'"
    ))
    .await
    .unwrap();
    let mut tally = Tally::default();
    for sql in statements {
        let peak_before = peak_rss_mb(pid);
        let start = Instant::now();
        let outcome = match c.simple_query_raw(&sql).await {
            Ok(stream) => {
                let mut stream = std::pin::pin!(stream);
                let mut r = Ok(());
                while let Some(item) = stream.next().await {
                    if let Err(e) = item {
                        r = Err(e);
                        break;
                    }
                }
                r
            }
            Err(e) => Err(e),
        };
        let took = start.elapsed();
        let short = || sql.chars().take(120).collect::<String>();
        let peak_after = peak_rss_mb(pid);
        if peak_after > peak_before + 32 {
            // Which statements raise the server's peak (the other client's
            // statement may share the blame).
            eprintln!(
                "peak RSS {peak_before} -> {peak_after} MB with memory_limit {memory_limit}: `{}`",
                short()
            );
        }
        match outcome {
            Ok(()) => tally.ok += 1,
            Err(e) => {
                assert!(!c.is_closed(), "the connection died on `{}`: {e}", short());
                let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
                if code == "57014" {
                    tally.timed_out += 1;
                } else {
                    tally.refused += 1;
                }
            }
        }
        assert!(
            took <= Duration::from_millis(TIMEOUT_MS) + grace(),
            "`{}` answered after {took:?}, past its {TIMEOUT_MS} ms time limit by more than {:?}",
            short(),
            grace()
        );
        if took > tally.slowest {
            tally.slowest = took;
            tally.slowest_sql = short();
        }
    }
    tally
}

#[test]
fn hostile_statements_keep_the_server_up_in_time_and_within_memory() {
    let seed = std::env::var("KURA_HOSTILE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261202u64);
    let count = std::env::var("KURA_HOSTILE_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500usize);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpch.kura");
    run_ok(&db, &["tpch", "load", "--sf", "0.01"]);
    let port = free_port();
    let mut server = serve(&db, port);
    let pid = server.id();
    // Wait for it to listen.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "kura serve did not start");
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut rng = Rng::new(seed);
    let mut batch = reported();
    batch.extend((0..count).map(|_| generated(&mut rng)));
    // Two clients, each taking every other statement.
    let (a, b): (Vec<_>, Vec<_>) = batch.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let strip = |v: Vec<(usize, String)>| v.into_iter().map(|(_, s)| s).collect::<Vec<_>>();
    let (a, b) = (strip(a), strip(b));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let (ta, tb) = rt.block_on(async {
        let a = tokio::spawn(client(port, pid, "64MB", a));
        let b = tokio::spawn(client(port, pid, "1TB", b));
        (a.await, b.await)
    });
    let (ta, tb) = match (ta, tb) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            let _ = server.kill();
            let why = |r: Result<Tally, tokio::task::JoinError>| {
                r.err().map(|e| {
                    let p = e.into_panic();
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                })
            };
            panic!("seed {seed}: a client failed: {:?} / {:?}", why(a), why(b));
        }
    };

    // Still serving, and the right answer.
    let answer = rt.block_on(async {
        let conn_str = format!("host=127.0.0.1 port={port} user=kura dbname=kura");
        let (c, conn) = tokio_postgres::connect(&conn_str, NoTls).await.unwrap();
        tokio::spawn(conn);
        let row = c
            .query_one("select count(*) from nation", &[])
            .await
            .unwrap();
        row.get::<_, i64>(0)
    });
    assert_eq!(answer, 25);
    assert!(
        server.try_wait().unwrap().is_none(),
        "the server exited during the batch"
    );
    let peak = peak_rss_mb(pid);
    let _ = server.kill();
    let out = server.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!log.contains("panicked"), "the server panicked:\n{log}");
    eprintln!(
        "seed {seed}: {} statements in {:.1?}: ok {}, refused {}, timed out {}; slowest {:?} \
         (`{}`); server peak RSS {peak} MB",
        ta.ok + ta.refused + ta.timed_out + tb.ok + tb.refused + tb.timed_out,
        started.elapsed(),
        ta.ok + tb.ok,
        ta.refused + tb.refused,
        ta.timed_out + tb.timed_out,
        ta.slowest.max(tb.slowest),
        if ta.slowest >= tb.slowest {
            &ta.slowest_sql
        } else {
            &tb.slowest_sql
        },
    );
    assert!(
        peak <= MAX_MEMORY_MB + BUFFER_MB + SLACK_MB,
        "seed {seed}: server peak RSS {peak} MB, over --max-memory {MAX_MEMORY_MB} MB + buffer \
         {BUFFER_MB} MB + {SLACK_MB} MB"
    );
}
