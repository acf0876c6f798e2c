//! Shared test setup: a kura database in a temporary directory, served
//! in-process on an ephemeral loopback port.

#![allow(dead_code)]

pub mod python;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use kura::{Database, FileAccess, OpenOptions};
use kura_server::{Auth, KuraEngine, Server, ServerConfig, ServerSummary};

pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub live_sessions: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<ServerSummary>>,
}

impl TestServer {
    /// A server over a fresh database; `setup` runs on a session first.
    pub fn start(auth: Auth, setup: impl FnOnce(&Database)) -> TestServer {
        Self::start_with(auth, |_, _| FileAccess::Denied, setup)
    }

    /// A server whose configuration `configure` adjusts, given the temporary
    /// directory; it returns which files clients may COPY from.
    pub fn start_with(
        auth: Auth,
        configure: impl FnOnce(&mut ServerConfig, &std::path::Path) -> FileAccess,
        setup: impl FnOnce(&Database),
    ) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let opts = OpenOptions {
            buffer_bytes: Some(256 << 20),
            buffered_io: true,
            ..Default::default()
        };
        let db = Database::open(&dir.path().join("test.db"), opts).expect("open database");
        setup(&db);
        let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        config.auth = auth;
        config.shutdown_grace = Duration::from_secs(20);
        let access = configure(&mut config, dir.path());
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let engine = KuraEngine::new(db).with_file_access(access);
                let server = Server::bind(Arc::new(engine), config).await.expect("bind");
                addr_tx
                    .send((server.local_addr(), server.live_sessions()))
                    .unwrap();
                server
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
            })
        });
        let (addr, live_sessions) = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server started");
        TestServer {
            addr,
            dir,
            live_sessions,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn trust(setup: impl FnOnce(&Database)) -> TestServer {
        Self::start(Auth::Trust, setup)
    }

    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=tester dbname=kura",
            self.addr.port()
        )
    }

    /// Stops the server gracefully and returns its summary.
    pub fn shutdown(mut self) -> ServerSummary {
        self.stop.take().unwrap().send(()).ok();
        self.thread.take().unwrap().join().expect("server thread")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs SQL on a direct session (setup, not through the server).
pub fn exec(db: &Database, sql: &str) {
    db.session()
        .execute_all(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Loads TPC-H at `sf` into the database.
pub fn load_tpch(db: &Database, sf: f64) {
    let mut s = db.session();
    kura::tpch::load(&mut s, kura::tpch::load::Source::Generate(sf), &|_, _| {})
        .expect("tpch load");
}

/// The repository's TPC-H query file for `id` (`q01` ...).
pub fn tpch_query(id: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../kura/src/tpch/queries")
        .join(format!("{id}.sql"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The reference answers directory for a scale factor (`shared/tpch/answers/sfX`
/// beside the repository, or `$KURA_TPCH_ANSWERS`).
pub fn answers_dir(sf: &str) -> PathBuf {
    if let Some(root) = std::env::var_os("KURA_TPCH_ANSWERS") {
        return PathBuf::from(root).join(format!("sf{sf}"));
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared/tpch/answers").join(format!("sf{sf}")))
        .find(|d| d.is_dir())
        .expect("shared/tpch/answers beside the repository")
}

/// True when the engine runs full SQL (joins, aggregates): the client tests of
/// TPC-H queries need it.
pub fn engine_runs_tpch(db: &Database) -> bool {
    db.session()
        .execute("select sum(l_quantity) from lineitem where l_quantity < 24")
        .is_ok()
}

/// Compares result rows (text fields) with a reference answer file: numbers as
/// numbers (absolute 0.01 or relative 1e-9), text after trimming blanks.
pub fn compare_answer(answer: &str, rows: &[Vec<String>]) -> Result<(), String> {
    let mut lines = answer.lines().filter(|l| !l.is_empty());
    let _header = lines.next();
    let expected: Vec<Vec<&str>> = lines.map(|l| l.split('|').collect()).collect();
    if expected.len() != rows.len() {
        return Err(format!(
            "expected {} rows, got {}",
            expected.len(),
            rows.len()
        ));
    }
    for (r, (e, a)) in expected.iter().zip(rows).enumerate() {
        if e.len() != a.len() {
            return Err(format!(
                "row {r}: expected {} columns, got {}",
                e.len(),
                a.len()
            ));
        }
        for (c, (ev, av)) in e.iter().zip(a).enumerate() {
            let (ev, av) = (ev.trim(), av.trim());
            let same = match (ev.parse::<f64>(), av.parse::<f64>()) {
                (Ok(x), Ok(y)) => {
                    (x - y).abs() <= 0.01 || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
                }
                _ => ev == av,
            };
            if !same {
                return Err(format!("row {r} column {c}: expected {ev:?}, got {av:?}"));
            }
        }
    }
    Ok(())
}
