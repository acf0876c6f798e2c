//! A hostile-client test: while one well-behaved client keeps getting right
//! answers, the server receives random bytes on fresh connections, truncated,
//! oversized and lying startup packets, messages whose lengths lie, silent and
//! trickling clients (closed after the authentication timeout), and clients
//! that start a large cross join over TPC-H SF 0.01 and vanish without
//! reading. Afterwards the server still answers, no panic happened, its
//! sessions are gone and its memory is back under a stated bound.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestServer;
use kura::FileAccess;
use kura_server::Auth;
use rand::{Rng, SeedableRng};
use tokio_postgres::NoTls;

/// The authentication timeout the server runs with here.
const AUTH_TIMEOUT: Duration = Duration::from_secs(2);
/// How much the process may have grown once every abandoned query is gone.
const RSS_GROWTH_BOUND_KIB: u64 = 128 * 1024;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// A startup packet (protocol 3.0) with these parameters.
fn startup(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec();
    for (k, v) in params {
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

fn tester() -> Vec<u8> {
    startup(&[("user", "tester"), ("database", "kura")])
}

/// A simple Query message.
fn query(sql: &str) -> Vec<u8> {
    let mut m = vec![b'Q'];
    m.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    m.extend_from_slice(sql.as_bytes());
    m.push(0);
    m
}

/// Sends `bytes`, half-closes, and reads until the server closes (or 3 s).
/// Returns what came back.
fn poke(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let Ok(mut sock) = TcpStream::connect(addr) else {
        return Vec::new();
    };
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let _ = sock.write_all(bytes);
    let _ = sock.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = sock.read_to_end(&mut out);
    out
}

/// The hostile payloads sent on fresh connections (besides pure noise).
fn crafted() -> Vec<(&'static str, Vec<u8>)> {
    let good = tester();
    let mut v: Vec<(&'static str, Vec<u8>)> = Vec::new();
    // Every truncation of a valid startup packet.
    for cut in 1..good.len() {
        v.push(("truncated startup", good[..cut].to_vec()));
    }
    let with_len = |len: i32, rest: &[u8]| {
        let mut m = len.to_be_bytes().to_vec();
        m.extend_from_slice(rest);
        m
    };
    v.push(("startup length 0", with_len(0, b"")));
    v.push(("startup length 4", with_len(4, b"")));
    v.push(("startup length -1", with_len(-1, &[0; 8])));
    v.push(("startup claims 1 GB", with_len(1 << 30, &good[4..])));
    v.push(("startup claims 2 GB", with_len(i32::MAX, &good[4..])));
    v.push((
        "startup of 1 MB of parameters",
        startup(&[("user", "tester"), ("options", &"x".repeat(1 << 20))]),
    ));
    v.push((
        "10,000 parameters",
        startup(
            &(0..10_000)
                .map(|_| ("application_name", "y"))
                .collect::<Vec<_>>(),
        ),
    ));
    v.push(("protocol 9.9", {
        let mut m = good.clone();
        m[4..8].copy_from_slice(&0x0009_0009i32.to_be_bytes());
        m
    }));
    v.push(("parameters without terminators", {
        let mut m = with_len(20, &196608i32.to_be_bytes());
        m.extend_from_slice(b"useruser\x01\x02\x03\x04");
        m
    }));
    v.push(("SSLRequest then noise", {
        let mut m = with_len(8, &80877103i32.to_be_bytes());
        m.extend_from_slice(b"\x16\x03\x01garbage that is not TLS");
        m
    }));
    v.push(("SSLRequest twice", {
        let mut m = with_len(8, &80877103i32.to_be_bytes());
        m.extend_from_slice(&m.clone());
        m
    }));
    v.push(("CancelRequest for nobody", {
        let mut m = with_len(16, &80877102i32.to_be_bytes());
        m.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 1, 2, 3, 4]);
        m
    }));
    v.push((
        "direct TLS hello without TLS",
        b"\x16\x03\x01\x00\x05hello".to_vec(),
    ));
    // After a good startup: messages whose lengths lie.
    let after = |what: &'static str, msg: &[u8]| {
        let mut m = good.clone();
        m.extend_from_slice(msg);
        (what, m)
    };
    v.push(after(
        "query longer than sent",
        b"Q\x00\x00\x01\x00select 1",
    ));
    v.push(after("query length 3", b"Q\x00\x00\x00\x03"));
    v.push(after("query length -5", b"Q\xff\xff\xff\xfbselect 1\x00"));
    v.push(after("query claims 1 GB", b"Q\x40\x00\x00\x00select"));
    v.push(after("query without its NUL", b"Q\x00\x00\x00\x0cselect 1"));
    v.push(after(
        "parse with a lying parameter count",
        b"P\x00\x00\x00\x16\x00select $1\x00\x7f\xff\x00\x00\x00\x17",
    ));
    v.push(after(
        "bind with lying value lengths",
        b"B\x00\x00\x00\x12\x00\x00\x00\x00\x00\x01\x7f\xff\xff\xff\x00\x00",
    ));
    v.push(after(
        "describe of nothing",
        b"D\x00\x00\x00\x04S\x00\x00\x00\x04",
    ));
    v.push(after("copy data out of nowhere", b"d\x00\x00\x00\x08abcd"));
    v.push(after(
        "password message after login",
        b"p\x00\x00\x00\x08pw\x00\x00",
    ));
    v.push(after(
        "backend message types",
        b"Z\x00\x00\x00\x05IT\x00\x00\x00\x04",
    ));
    v
}

#[test]
fn hostile_clients_leave_the_server_serving_with_bounded_memory() {
    let started = Instant::now();
    let panics = Arc::new(AtomicUsize::new(0));
    {
        let panics = panics.clone();
        // One line per panic, as the server's own hook logs them: a backtrace
        // would load the binary's debug information, hundreds of MB that the
        // memory bound below would then see.
        std::panic::set_hook(Box::new(move |info| {
            panics.fetch_add(1, Ordering::SeqCst);
            eprintln!("panic: {info}");
        }));
    }
    let s = TestServer::start_with(
        Auth::Trust,
        |config, _| {
            config.auth_timeout = AUTH_TIMEOUT;
            config.max_connections = 400;
            FileAccess::Denied
        },
        |db| common::load_tpch(db, 0.01),
    );
    let addr = s.addr;
    eprintln!(
        "loaded TPC-H SF 0.01 in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The well-behaved client: the same two queries, checked every time.
    let stop = Arc::new(AtomicBool::new(false));
    let good_queries = Arc::new(AtomicUsize::new(0));
    let normal = {
        let (stop, done, conn_str) = (stop.clone(), good_queries.clone(), s.conn_str());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let (c, conn) = tokio_postgres::connect(&conn_str, NoTls).await.unwrap();
                tokio::spawn(conn);
                let count = "select count(*) from lineitem where l_quantity < 24";
                let expected: i64 = c.query_one(count, &[]).await.unwrap().get(0);
                assert!(expected > 0);
                let mut slowest = Duration::ZERO;
                while !stop.load(Ordering::SeqCst) {
                    let t = Instant::now();
                    let n: i64 = c.query_one(count, &[]).await.unwrap().get(0);
                    assert_eq!(n, expected);
                    let names: Vec<String> = c
                        .query(
                            "select n_name from nation where n_nationkey < 3 order by 1",
                            &[],
                        )
                        .await
                        .unwrap()
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    assert_eq!(names, ["ALGERIA", "ARGENTINA", "BRAZIL"]);
                    slowest = slowest.max(t.elapsed());
                    done.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                slowest
            })
        })
    };
    wait_until("the normal client", Duration::from_secs(30), || {
        good_queries.load(Ordering::SeqCst) > 2
    });
    let rss_before = rss_kib();

    // 1. Pure noise on fresh connections. `KURA_HOSTILE_CASES=N` (and
    // `KURA_HOSTILE_SEED`) run more of this and of 2b for longer fuzzing.
    let cases_wanted: usize = std::env::var("KURA_HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed: u64 = std::env::var("KURA_HOSTILE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(13);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut garbage = 0;
    for _ in 0..cases_wanted {
        let len = rng.gen_range(1..4096);
        let noise: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        poke(addr, &noise);
        garbage += 1;
    }
    // 2. Startup packets and messages that are truncated, oversized or lie.
    let cases = crafted();
    for (_, bytes) in &cases {
        poke(addr, bytes);
        garbage += 1;
    }
    // A good startup followed by noise.
    for _ in 0..100 {
        let mut bytes = tester();
        let len = rng.gen_range(1..1024);
        bytes.extend((0..len).map(|_| rng.gen::<u8>()));
        poke(addr, &bytes);
        garbage += 1;
    }
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "panics on noise and crafted packets"
    );
    // 2b. A good startup, then well-framed messages of every frontend type
    // (honest lengths) with random bodies: the decoders see plausible input.
    // pgwire 0.42's decoders panic on bodies whose counts run past their end;
    // the server checks each frame's layout before they see it, and answers
    // one that does not hold its fields with FATAL 08P01.
    const FRONTEND: &[u8] = b"QPBEDCSHXdcfFp";
    let mut told_08p01 = 0;
    for _ in 0..cases_wanted {
        let mut bytes = tester();
        for _ in 0..rng.gen_range(1..6) {
            let kind = FRONTEND[rng.gen_range(0..FRONTEND.len())];
            let body_len = rng.gen_range(0..64);
            let mut body: Vec<u8> = (0..body_len).map(|_| rng.gen()).collect();
            if rng.gen_bool(0.5) {
                // Often NUL-terminated, as strings in these messages are.
                body.push(0);
            }
            bytes.push(kind);
            bytes.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
            bytes.extend_from_slice(&body);
        }
        let reply = poke(addr, &bytes);
        told_08p01 += usize::from(reply.windows(6).any(|w| w == b"C08P01"));
        garbage += 1;
    }
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "panics on well-framed random messages"
    );
    eprintln!(
        "{garbage} garbage connections ({} crafted, {cases_wanted} with well-framed random messages: {told_08p01} answered 08P01)",
        cases.len()
    );

    // 3. Slow clients: silent ones, and ones trickling a startup packet a byte
    // every 300 ms, all closed at the authentication timeout.
    let slow_started = Instant::now();
    let mut slow: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let trickle = tester();
    let tricklers: Vec<_> = (0..20)
        .map(|_| {
            let bytes = trickle.clone();
            std::thread::spawn(move || {
                let mut sock = TcpStream::connect(addr).unwrap();
                for b in bytes {
                    if sock.write_all(&[b]).is_err() {
                        return true; // closed by the server
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
                false
            })
        })
        .collect();
    for sock in &mut slow {
        sock.set_read_timeout(Some(AUTH_TIMEOUT * 5)).unwrap();
        let mut buf = Vec::new();
        let _ = sock.read_to_end(&mut buf);
        assert!(buf.is_empty(), "a silent client got {buf:?}");
    }
    let silent_closed = slow_started.elapsed();
    assert!(
        silent_closed < AUTH_TIMEOUT * 3,
        "silent clients held for {silent_closed:?}"
    );
    for t in tricklers {
        assert!(
            t.join().unwrap(),
            "a trickling client completed its startup"
        );
    }
    eprintln!(
        "60 slow clients closed after {:.1} s (auth timeout {:?})",
        silent_closed.as_secs_f64(),
        AUTH_TIMEOUT
    );

    // 4. Large cross joins, abandoned before a byte of the answer is read.
    let abandoned = 8;
    let mut peak = rss_kib();
    for i in 0..abandoned {
        let mut sock = TcpStream::connect(addr).unwrap();
        let mut bytes = tester();
        let sql = if i % 2 == 0 {
            "select a.l_comment, b.l_comment from lineitem a, lineitem b"
        } else {
            "select a.l_comment, b.o_comment from lineitem a, orders b order by 1, 2 limit 10"
        };
        bytes.extend_from_slice(&query(sql));
        sock.write_all(&bytes).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        peak = peak.max(rss_kib());
        drop(sock);
    }
    let sessions_gone = wait_until("abandoned queries to stop", Duration::from_secs(30), || {
        peak = peak.max(rss_kib());
        s.live_sessions.load(Ordering::SeqCst) == 1
    });
    // The server gives freed memory back within a second.
    std::thread::sleep(Duration::from_millis(1500));
    let rss_after = rss_kib();

    stop.store(true, Ordering::SeqCst);
    let slowest = normal
        .join()
        .expect("the normal client saw only right answers");
    let good = good_queries.load(Ordering::SeqCst);
    eprintln!(
        "{abandoned} abandoned cross joins stopped {:.1} s after the last left; \
         RSS {rss_before} KiB before, peak {peak} KiB, {rss_after} KiB after; \
         normal client: {good} checked rounds, slowest {:.0} ms; total {:.1} s",
        sessions_gone.as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64()
    );

    // Still serving, from a new connection.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&s.conn_str(), NoTls)
            .await
            .expect("connect after the attack");
        tokio::spawn(conn);
        let n: i64 = c
            .query_one("select count(*) from nation", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 25);
    });
    assert!(good > 10, "the normal client was starved: {good} rounds");
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "panics while under attack"
    );
    assert!(
        rss_after <= rss_before + RSS_GROWTH_BOUND_KIB,
        "memory stayed up: {rss_before} KiB -> {rss_after} KiB"
    );
}
