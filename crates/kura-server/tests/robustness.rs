//! Robustness: 32 concurrent clients × 200 queries; malformed, truncated and
//! random bytes sent to the port; clients that vanish mid-query. The server
//! answers with an error or closes that connection, keeps serving the others,
//! and ends with no more threads, sessions or memory than the load needed.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::TestServer;
use rand::{Rng, SeedableRng};
use tokio_postgres::NoTls;

fn server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tbl");
    let rows: String = (0..5000).map(|i| format!("{i}|row {i}\n")).collect();
    std::fs::write(&file, rows).unwrap();
    TestServer::trust(|db| {
        common::exec(db, "create table t (i integer, s varchar(20))");
        common::exec(db, &format!("copy t from '{}'", file.display()));
    })
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `clients` connections each running `queries` queries; returns successes.
fn storm(conn_str: &str, clients: usize, queries: usize) -> usize {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for c in 0..clients {
            let conn_str = conn_str.to_string();
            tasks.push(tokio::spawn(async move {
                let (client, conn) = tokio_postgres::connect(&conn_str, NoTls)
                    .await
                    .expect("connect");
                tokio::spawn(conn);
                let mut ok = 0;
                for q in 0..queries {
                    // Every 10th query fails on purpose: errors must not disturb the rest.
                    if (c + q) % 10 == 0 {
                        assert!(client.simple_query("select * from missing").await.is_err());
                        ok += 1;
                    } else if q % 2 == 0 {
                        let n: i64 = client
                            .query_one("select count(*) from t", &[])
                            .await
                            .unwrap()
                            .get(0);
                        assert_eq!(n, 5000);
                        ok += 1;
                    } else {
                        let rows = client
                            .simple_query("select * from t limit 5")
                            .await
                            .unwrap();
                        assert_eq!(
                            rows.iter()
                                .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
                                .count(),
                            5
                        );
                        ok += 1;
                    }
                }
                ok
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    })
}

fn still_serves(s: &TestServer) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&s.conn_str(), NoTls)
            .await
            .expect("connect after abuse");
        tokio::spawn(conn);
        let n: i64 = client
            .query_one("select count(*) from t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 5000);
    });
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn thirty_two_clients_two_hundred_queries_each_without_growth() {
    let s = server();
    let warm = storm(&s.conn_str(), 32, 20);
    assert_eq!(warm, 32 * 20);
    wait_until("sessions to close", Duration::from_secs(20), || {
        s.live_sessions.load(Ordering::SeqCst) == 0
    });
    // Idle blocking-pool threads retire after 10 s; measure from a settled state.
    std::thread::sleep(Duration::from_secs(11));
    let (threads_before, rss_before) = (threads(), rss_kib());
    let started = Instant::now();
    let done = storm(&s.conn_str(), 32, 200);
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(done, 32 * 200);
    eprintln!(
        "32 × 200 queries in {secs:.2} s = {:.0} queries/s",
        done as f64 / secs
    );
    wait_until("sessions to close", Duration::from_secs(20), || {
        s.live_sessions.load(Ordering::SeqCst) == 0
    });
    std::thread::sleep(Duration::from_secs(11));
    let (threads_after, rss_after) = (threads(), rss_kib());
    eprintln!(
        "threads {threads_before} -> {threads_after}, RSS {rss_before} KiB -> {rss_after} KiB"
    );
    assert!(
        threads_after <= threads_before + 2,
        "threads grew: {threads_before} -> {threads_after}"
    );
    assert!(
        rss_after <= rss_before + 64 * 1024,
        "memory grew: {rss_before} KiB -> {rss_after} KiB"
    );
    still_serves(&s);
}

/// A startup message for user `tester`.
fn startup() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196608i32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", "tester"), ("database", "kura")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    msg
}

/// Sends `bytes`, then reads whatever comes back until close or timeout.
fn poke(addr: std::net::SocketAddr, bytes: &[u8], hold: bool) -> Vec<u8> {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let _ = sock.write_all(bytes);
    if !hold {
        let _ = sock.shutdown(std::net::Shutdown::Write);
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    out
}

#[test]
fn malformed_truncated_and_random_bytes_leave_others_served() {
    let s = server();
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    // Pure noise, before any startup.
    for _ in 0..40 {
        let len = rng.gen_range(1..512);
        let noise: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        poke(s.addr, &noise, false);
    }
    // A proper startup, then noise, truncated or nonsensical messages.
    let cases: Vec<Vec<u8>> = vec![
        b"Q\x00\x00\x00\x10select".to_vec(), // Query cut short
        b"Q\x00\x00\x00\x02".to_vec(),       // length smaller than itself
        b"P\x00\x00\x00\x09\x00\x00\x00\x00\x00".to_vec(), // Parse without its fields
        b"B\x00\x00\x00\x0c\x00\x00\xff\xff\x00\x00\x00\x00".to_vec(), // Bind with -1 formats
        b"E\x00\x00\x00\x09nope\x00\x00\x00\x00\x00".to_vec(), // Execute of an unknown portal
        b"Z\x00\x00\x00\x04".to_vec(),       // a backend-only message type
        b"Q\x7f\xff\xff\xff".to_vec(),       // absurd length
    ];
    for case in &cases {
        let mut bytes = startup();
        bytes.extend_from_slice(case);
        let reply = poke(s.addr, &bytes, false);
        // Authentication went through (R ... Z) before the bad message.
        assert_eq!(reply.first(), Some(&b'R'), "{case:?}");
    }
    for _ in 0..40 {
        let mut bytes = startup();
        let len = rng.gen_range(1..256);
        bytes.extend((0..len).map(|_| rng.gen::<u8>()));
        poke(s.addr, &bytes, false);
    }
    // An unknown portal is an ordinary error: the connection answers with 'E'.
    let mut bytes = startup();
    bytes.extend_from_slice(b"E\x00\x00\x00\x0bnope\x00\x00\x00\x00\x00S\x00\x00\x00\x04");
    let reply = poke(s.addr, &bytes, true);
    assert!(
        reply.windows(6).any(|w| w[0] == b'E' && w[5] == b'S'),
        "ErrorResponse expected"
    );
    still_serves(&s);
    wait_until("sessions to close", Duration::from_secs(70), || {
        s.live_sessions.load(Ordering::SeqCst) == 0
    });
}

#[test]
fn clients_killed_mid_query_free_their_sessions() {
    let s = server();
    for _ in 0..20 {
        let mut bytes = startup();
        let q = b"select * from t\0";
        bytes.push(b'Q');
        bytes.extend_from_slice(&((q.len() + 4) as i32).to_be_bytes());
        bytes.extend_from_slice(q);
        let mut sock = TcpStream::connect(s.addr).unwrap();
        sock.write_all(&bytes).unwrap();
        // Gone before reading a byte of the answer; RST because of unread data.
        drop(sock);
    }
    // A process killed mid-query.
    let mut child = std::process::Command::new("psql")
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
            "-c",
            "select * from t",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("psql");
    std::thread::sleep(Duration::from_millis(30));
    let _ = child.kill();
    let _ = child.wait();
    wait_until(
        "sessions of killed clients to close",
        Duration::from_secs(20),
        || s.live_sessions.load(Ordering::SeqCst) == 0,
    );
    still_serves(&s);
}
