//! `kura cluster up --local 3` end to end (paper 003 §2): three worker processes on TPC-H
//! SF 0.01 shards and the PostgreSQL-wire front door; answers over the wire match
//! single-node kura (a join of customers with orders on other shards included); a worker
//! killed during the session fails the next query within seconds naming that worker, the
//! front door stays up, and once the worker is back the query works (likewise a worker that
//! hangs: stopped, its socket still accepting connections); a file that is not a
//! shard is refused when its worker starts; Ctrl-C stops the front door and its workers;
//! pgjdbc works through the front door (prepared statements with parameters).
//! Built with the `cluster` feature only.
#![cfg(feature = "cluster")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use tokio_postgres::{NoTls, SimpleQueryMessage};

/// The answers the test compares: a table split by key, a replicated one, and a join whose
/// sides are split by different keys (a customer's orders lie on other shards).
const QUERIES: &[&str] = &[
    "SELECT count(*) AS n, sum(l_quantity) AS q FROM lineitem",
    "SELECT n_name, count(*) AS suppliers FROM supplier JOIN nation ON s_nationkey = n_nationkey GROUP BY n_name ORDER BY n_name",
    "SELECT c_mktsegment, count(*) AS orders, sum(o_totalprice) AS total FROM customer JOIN orders ON c_custkey = o_custkey GROUP BY c_mktsegment ORDER BY c_mktsegment",
];

/// Rows of `sql` from single-node kura, as CSV lines without the header.
fn single_node(db: &Path, sql: &str) -> Vec<String> {
    let out = run_ok(db, &["--format", "csv", "-c", sql]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.replace('"', ""))
        .collect()
}

async fn over_wire(port: u16, sql: &str) -> Result<Vec<String>, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={port} user=kura dbname=kura"),
        NoTls,
    )
    .await?;
    tokio::spawn(conn);
    let mut rows = Vec::new();
    for m in client.simple_query(sql).await? {
        if let SimpleQueryMessage::Row(r) = m {
            rows.push(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("").to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
    }
    Ok(rows)
}

/// Lines `kura cluster up` writes to stderr, as they come.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for(rx: &mpsc::Receiver<String>, what: &str, seen: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => {
                seen.push(line.clone());
                if line.contains(what) {
                    return line;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    panic!("no line with {what:?}; kura said:\n{}", seen.join("\n"));
}

fn alive(pid: u32) -> bool {
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

#[test]
fn a_local_cluster_answers_over_the_wire_and_survives_a_killed_worker() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single.db");
    run_ok(&single, &["tpch", "load", "--sf", "0.01"]);
    let shards = dir.path().join("shards");
    let LocalCluster {
        mut up,
        workers,
        port,
    } = cluster_up(&shards, 3);

    let rt = tokio::runtime::Runtime::new().unwrap();
    for sql in QUERIES {
        let want = single_node(&single, sql);
        let got = rt.block_on(over_wire(port, sql)).unwrap();
        assert_eq!(got, want, "{sql}");
        assert!(!want.is_empty());
    }

    // A worker killed: the next query fails within seconds, naming it.
    let (down_addr, down_pid) = workers[1].clone();
    unsafe {
        libc::kill(down_pid as i32, libc::SIGKILL);
    }
    // (It stays a zombie until `kura cluster up` reaps it; its sockets close at once.)
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&down_addr).is_ok() {
        assert!(Instant::now() < deadline, "worker {down_pid} still listens");
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let err = rt
        .block_on(over_wire(port, QUERIES[0]))
        .expect_err("a query with a worker down");
    let took = started.elapsed();
    let message = err
        .as_db_error()
        .map(|e| e.message().to_string())
        .unwrap_or_else(|| err.to_string());
    assert!(
        message.contains(&down_addr) && message.contains("shard 1"),
        "the error should name worker {down_addr}: {message}"
    );
    assert!(took < Duration::from_secs(15), "failed after {took:?}");

    // The front door is still up, and with the worker back the query works again.
    let mut again = kura()
        .args(["cluster", "worker", "--listen", &down_addr, "--shard-db"])
        .arg(shards.join("shard1.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restart the worker");
    let again_rx = lines_of(&mut again);
    wait_for(
        &again_rx,
        "kura cluster worker: shard 1 of 3",
        &mut Vec::new(),
    );
    let want = single_node(&single, QUERIES[0]);
    let got = rt.block_on(over_wire(port, QUERIES[0])).unwrap();
    assert_eq!(got, want);

    // A worker that hangs (stopped: its socket still accepts connections) fails the query
    // within seconds too, named; once it runs again, so does the query.
    let (hung_addr, hung_pid) = workers[2].clone();
    unsafe {
        libc::kill(hung_pid as i32, libc::SIGSTOP);
    }
    let started = Instant::now();
    let err = rt
        .block_on(over_wire(port, QUERIES[0]))
        .expect_err("a query with a worker hung");
    let took = started.elapsed();
    unsafe {
        libc::kill(hung_pid as i32, libc::SIGCONT);
    }
    let message = err
        .as_db_error()
        .map(|e| e.message().to_string())
        .unwrap_or_else(|| err.to_string());
    assert!(
        message.contains(&hung_addr) && message.contains("shard 2"),
        "the error should name worker {hung_addr}: {message}"
    );
    assert!(took < Duration::from_secs(20), "failed after {took:?}");
    let got = rt.block_on(over_wire(port, QUERIES[0])).unwrap();
    assert_eq!(got, want);

    // Ctrl-C stops the front door and the workers it started.
    unsafe {
        libc::kill(up.id() as i32, libc::SIGINT);
    }
    let status = up.wait().unwrap();
    assert!(status.success(), "kura cluster up ended with {status}");
    for (_, pid) in [&workers[0], &workers[2]] {
        assert!(!alive(*pid), "worker {pid} outlived kura cluster up");
    }
    let _ = again.kill();
    let _ = again.wait();
}

/// A `kura cluster up --local N --sf 0.01` running: the process, its workers' addresses and
/// pids in shard order, and the front door's port.
struct LocalCluster {
    up: Child,
    workers: Vec<(String, u32)>,
    port: u16,
}

fn cluster_up(shards: &Path, n: usize) -> LocalCluster {
    let mut up = kura()
        .args(["cluster", "up", "--local", &n.to_string()])
        .args(["--sf", "0.01", "--buffer", "64MB"])
        .arg("--dir")
        .arg(shards)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kura cluster up");
    let rx = lines_of(&mut up);
    let mut seen = Vec::new();
    let mut workers = Vec::new();
    for k in 0..n {
        let line = wait_for(&rx, &format!("worker of shard {k} on "), &mut seen);
        // "... worker of shard K on HOST:PORT (pid P)"
        let rest = line.split(" on ").nth(1).unwrap();
        let addr = rest.split_whitespace().next().unwrap().to_string();
        let pid: u32 = rest
            .rsplit("pid ")
            .next()
            .unwrap()
            .trim_end_matches(')')
            .parse()
            .unwrap();
        workers.push((addr, pid));
    }
    let ready = wait_for(&rx, "kura cluster serve: cluster", &mut seen);
    let port: u16 = ready
        .split(" -p ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Keep reading its lines so a full pipe never blocks it.
    std::thread::spawn(move || while rx.recv().is_ok() {});
    LocalCluster { up, workers, port }
}

/// TPC-H's answers at `sf` (`../shared/tpch/answers` beside the repository, or under
/// `KURA_TPCH_ANSWERS`).
fn tpch_answers(sf: &str) -> std::path::PathBuf {
    if let Some(root) = std::env::var_os("KURA_TPCH_ANSWERS") {
        return std::path::PathBuf::from(root).join(format!("sf{sf}"));
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/tpch/answers").join(format!("sf{sf}")))
        .find(|d| d.is_dir())
        .expect("shared/tpch/answers beside the repository")
}

/// pgjdbc through the front door: `ClusterJdbcTest` of kura-server's Maven project (every
/// statement through the extended protocol; `?` parameters as `$n` bound to typed values,
/// repeated past pgjdbc's threshold for named statements; result types; SQLSTATEs;
/// autocommit off) on 2 shards of TPC-H SF 0.01, with Q6's answer checked.
#[test]
fn pgjdbc_through_the_front_door() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = cluster_up(&dir.path().join("shards"), 2);
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kura-server/tests/jdbc");
    let answers = tpch_answers("0.01");
    let out = std::process::Command::new("mvn")
        .current_dir(&project)
        .args([
            "-q",
            "-B",
            "test",
            "-Dtest=ClusterJdbcTest",
            "-Dkura.cluster=true",
        ])
        .arg(format!("-Dkura.port={}", cluster.port))
        .arg(format!("-Dkura.answers={}", answers.display()))
        .output()
        .expect("mvn is installed");
    unsafe {
        libc::kill(cluster.up.id() as i32, libc::SIGINT);
    }
    let _ = cluster.up.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mvn test failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_worker_on_a_file_that_is_not_a_shard_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("plain.db");
    run_ok(&db, &["-c", "CREATE TABLE t (a INTEGER)"]);
    let out = kura()
        .args(["cluster", "worker", "--listen", "127.0.0.1:0", "--shard-db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a kura shard database"), "{err}");
}
