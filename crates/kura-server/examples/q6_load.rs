//! Load generator: TPC-H Q6 over the wire from 1, 8 and 32 concurrent clients
//! against an in-process server on loopback; prints queries/s and p50/p99
//! latency per client count. Build with `--release`:
//! `cargo run --release -p kura-server --example q6_load -- [--sf 0.1] [--seconds 10] [--clients 1,8,32]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kura::{Database, OpenOptions};
use kura_server::{KuraEngine, Server, ServerConfig};
use tokio_postgres::NoTls;

struct Options {
    sf: f64,
    seconds: u64,
    clients: Vec<usize>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        sf: 0.1,
        seconds: 10,
        clients: vec![1, 8, 32],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--sf" => o.sf = v.parse().map_err(|e| format!("--sf: {e}"))?,
            "--seconds" => o.seconds = v.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--clients" => {
                o.clients = v
                    .split(',')
                    .map(|n| n.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--clients: {e}"))?
            }
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

/// Q6 with its validation parameters, prepared once per client (Parse) and
/// run by Bind/Execute: the server's prepared-statement path. The parameters are
/// literals because tokio-postgres has no client-side date or numeric type here.
const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from lineitem \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
    and l_discount between 0.05 and 0.07 and l_quantity < 24";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `n` clients each running Q6 back to back for `dur`; every latency observed.
async fn run_level(conn: &str, n: usize, dur: Duration) -> Result<Vec<Duration>, String> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let conn = conn.to_string();
        tasks.push(tokio::spawn(async move {
            let (client, connection) = tokio_postgres::connect(&conn, NoTls)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(connection);
            let stmt = client.prepare(Q6).await.map_err(|e| e.to_string())?;
            let mut lat = Vec::new();
            let end = Instant::now() + dur;
            while Instant::now() < end {
                let t = Instant::now();
                let got = client
                    .query(&stmt, &[])
                    .await
                    .map_err(|e| e.to_string())?
                    .len();
                if got != 1 {
                    return Err(format!("Q6 returned {got} rows"));
                }
                lat.push(t.elapsed());
            }
            Ok::<_, String>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|e| e.to_string())??);
    }
    Ok(all)
}

fn main() -> Result<(), String> {
    let o = options()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = Database::open(&dir.path().join("bench.db"), OpenOptions::default())
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    kura::tpch::load(
        &mut db.session(),
        kura::tpch::load::Source::Generate(o.sf),
        &|_, _| {},
    )
    .map_err(|e| e.to_string())?;
    eprintln!("loaded TPC-H SF {} in {:.1?}", o.sf, t.elapsed());

    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        let server = Server::bind(Arc::new(KuraEngine::new(db)), config)
            .await
            .map_err(|e| e.to_string())?;
        let conn = format!(
            "host=127.0.0.1 port={} user=bench dbname=kura",
            server.local_addr().port()
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.run(async move {
            let _ = stop_rx.await;
        }));
        println!("clients  queries  queries/s  p50_ms  p99_ms");
        for &n in &o.clients {
            let dur = Duration::from_secs(o.seconds);
            let mut lat = run_level(&conn, n, dur).await?;
            lat.sort();
            if lat.is_empty() {
                return Err(format!("no query finished with {n} clients"));
            }
            println!(
                "{n:>7}  {:>7}  {:>9.1}  {:>6.2}  {:>6.2}",
                lat.len(),
                lat.len() as f64 / dur.as_secs_f64(),
                percentile(&lat, 0.50).as_secs_f64() * 1e3,
                percentile(&lat, 0.99).as_secs_f64() * 1e3,
            );
        }
        stop_tx.send(()).ok();
        serving.await.map_err(|e| e.to_string())?;
        Ok(())
    })
}
