//! Crash safety of concurrent transactions: `kura serve` runs bank transfers
//! from four clients and is killed with SIGKILL at random moments, then
//! restarted. After every restart each transfer whose COMMIT was acknowledged
//! is in the history table and the balances, no transfer appears that was not
//! at least sent up to its COMMIT, and the balances equal the start plus the
//! transfers present (nothing partial).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use tokio_postgres::NoTls;

const ACCOUNTS: i64 = 8;
const START: i64 = 1000;
const CLIENTS: i64 = 4;

fn kills() -> usize {
    std::env::var("KURA_TXN_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

fn serve(db: &Path, port: u16) -> Child {
    kura()
        .args(["--buffer", "16MB", "--db"])
        .arg(db)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kura serve")
}

fn conn_str(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=kura dbname=kura connect_timeout=5")
}

async fn connect(port: u16) -> tokio_postgres::Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match tokio_postgres::connect(&conn_str(port), NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(conn);
                return client;
            }
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("cannot connect to the restarted server: {e}"),
        }
    }
}

/// What the clients know of a transfer.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fate {
    /// COMMIT acknowledged: must be there.
    Committed,
    /// COMMIT sent, no answer (the server died): may be there or not.
    InDoubt,
}

type Transfer = (i64, i64, i64); // src, dst, amount

/// One client's transfers until its connection dies; ids from `next_id`.
async fn client(port: u16, seed: u64, first_id: i64) -> BTreeMap<i64, (Transfer, Fate)> {
    let mut out = BTreeMap::new();
    let Ok((c, conn)) = tokio_postgres::connect(&conn_str(port), NoTls).await else {
        return out;
    };
    tokio::spawn(conn);
    let mut rng = Rng::new(seed);
    for n in 0.. {
        let id = first_id + n;
        let src = rng.below(ACCOUNTS as u64) as i64;
        let dst = (src + 1 + rng.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
        let amount = 1 + rng.below(50) as i64;
        let body = format!(
            "BEGIN; UPDATE acct SET bal = bal - {amount} WHERE id = {src}; \
             UPDATE acct SET bal = bal + {amount} WHERE id = {dst}; \
             INSERT INTO xfer VALUES ({id}, {src}, {dst}, {amount})"
        );
        if c.batch_execute(&body).await.is_err() {
            return out;
        }
        out.insert(id, ((src, dst, amount), Fate::InDoubt));
        match c.batch_execute("COMMIT").await {
            Ok(()) => {
                out.insert(id, ((src, dst, amount), Fate::Committed));
            }
            Err(_) => return out,
        }
    }
    out
}

#[test]
fn sigkill_during_concurrent_transfers_keeps_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bank.kura");
    let values: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {START})")).collect();
    run_ok(
        &db,
        &[
            "-c",
            &format!(
                "CREATE TABLE acct (id INTEGER NOT NULL, bal BIGINT); \
                 INSERT INTO acct VALUES {}; \
                 CREATE TABLE xfer (id BIGINT NOT NULL, src INTEGER, dst INTEGER, amount BIGINT)",
                values.join(",")
            ),
        ],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rng = Rng::new(0xBA_4C);
    let mut all: BTreeMap<i64, (Transfer, Fate)> = BTreeMap::new();
    let (mut acked, mut in_doubt_kept, mut in_doubt_lost) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for round in 0..=kills() as i64 {
        // The last round only checks what the last kill left.
        let last = round == kills() as i64;
        let port = free_port();
        let mut server = serve(&db, port);
        // Check the state the last kill left, then write until this kill.
        let (seen, history) = rt.block_on(async {
            let c = connect(port).await;
            let rows = c.query("SELECT id FROM xfer", &[]).await.unwrap();
            let seen: BTreeSet<i64> = rows.iter().map(|r| r.get(0)).collect();
            assert_eq!(seen.len(), rows.len(), "a transfer recorded twice");
            let mut bal = BTreeMap::new();
            for r in c.query("SELECT id, bal FROM acct", &[]).await.unwrap() {
                bal.insert(r.get::<_, i32>(0) as i64, r.get::<_, i64>(1));
            }
            if last {
                return (seen, (bal, Vec::new()));
            }
            let kill_after = Duration::from_millis(200 + rng.below(900));
            let tasks: Vec<_> = (0..CLIENTS)
                .map(|k| {
                    let first = (round * CLIENTS + k) * 1_000_000;
                    tokio::spawn(client(port, rng.next_u64(), first))
                })
                .collect();
            tokio::time::sleep(kill_after).await;
            (seen, (bal, tasks))
        });
        // SIGKILL while the clients are mid-transfer.
        server.kill().unwrap();
        server.wait().unwrap();
        let (balances, tasks) = history;
        // Everything up to the previous round must be decided by what is stored.
        let mut want = vec![START; ACCOUNTS as usize];
        for (id, ((src, dst, amount), fate)) in all.iter_mut() {
            let stored = seen.contains(id);
            match (*fate, stored) {
                (Fate::Committed, false) => panic!("acknowledged transfer {id} lost"),
                (Fate::InDoubt, true) => {
                    *fate = Fate::Committed;
                    in_doubt_kept += 1;
                }
                (Fate::InDoubt, false) => {
                    in_doubt_lost += 1;
                    continue;
                }
                (Fate::Committed, true) => {}
            }
            want[*src as usize] -= *amount;
            want[*dst as usize] += *amount;
        }
        all.retain(|_, (_, fate)| *fate == Fate::Committed);
        let unknown: Vec<_> = seen.iter().filter(|id| !all.contains_key(id)).collect();
        assert!(
            unknown.is_empty(),
            "transfers never sent to COMMIT are stored: {unknown:?}"
        );
        for (id, w) in want.iter().enumerate() {
            assert_eq!(
                balances.get(&(id as i64)),
                Some(w),
                "account {id} in round {round}"
            );
        }
        let new: Vec<_> = rt.block_on(async {
            let mut v = Vec::new();
            for t in tasks {
                v.push(t.await.unwrap());
            }
            v
        });
        for m in new {
            acked += m.values().filter(|(_, f)| *f == Fate::Committed).count();
            all.extend(m);
        }
    }
    eprintln!(
        "{} kills in {:.1} s: {acked} acknowledged transfers kept; of those in doubt at a kill, {in_doubt_kept} committed and {in_doubt_lost} not",
        kills(),
        started.elapsed().as_secs_f64()
    );
    assert!(acked > 0, "no transfer was acknowledged");
}
