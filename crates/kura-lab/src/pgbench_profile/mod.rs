//! Paper 002's own experiment (`kura bench pgbench-profile`): PostgreSQL under
//! pgbench (TPC-B-like, scale 1, 10 clients), its backends' L1 and L2 misses per
//! function — tables 5 and 6 — and the share of the LWLock and spin-lock
//! functions. Where the machine has no PMU the server runs under Valgrind's lackey
//! and every backend is replayed through kura-cache's model of this machine's
//! caches (kura_profile::foreign); only the pgbench run is counted, the server's
//! start warms the caches.

pub mod server;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kura_profile::foreign::{self, ForeignProfile, TraceOptions};

use crate::error::{At, LabError, LabResult};
use server::Cluster;

/// The run's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// pgbench's scale factor (the paper: 1).
    pub scale: u32,
    /// Concurrent clients (the paper: 10).
    pub clients: u32,
    /// Transactions per client (the paper: 1,000; lackey runs a backend ~100x slower).
    pub transactions: u32,
    pub valgrind: PathBuf,
    pub geometry_root: PathBuf,
    /// PostgreSQL's server programs (found when `None`).
    pub bindir: Option<PathBuf>,
    /// Directory for the results (the cluster runs in the temporary directory).
    pub out: PathBuf,
    /// Rows per table.
    pub top: usize,
    /// The port of the cluster's socket.
    pub port: u16,
}

impl Config {
    /// The paper's workload with `transactions` per client.
    pub fn paper(out: PathBuf, transactions: u32) -> Config {
        Config {
            scale: 1,
            clients: 10,
            transactions,
            valgrind: PathBuf::from("valgrind"),
            geometry_root: PathBuf::from(kura_cache::cpu::SYSFS_CACHE_DIR),
            bindir: None,
            out,
            top: 10,
            port: 54329,
        }
    }
}

/// The functions of each group whose share is reported: PostgreSQL's
/// lightweight locks, and its spin locks (`s_lock` is where a contended
/// `SpinLockAcquire` waits; `LockBufHdr` spins on a buffer header's lock bit).
pub fn lock_groups() -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("LWLock functions", vec!["LWLock".to_string()]),
        (
            "spin-lock functions",
            vec![
                "s_lock".into(),
                "SpinLock".into(),
                "spin_delay".into(),
                "LockBufHdr".into(),
            ],
        ),
    ]
}

/// The paper's hot functions (PostgreSQL 7.3 on a Pentium 4), for comparison.
pub const PAPER_FUNCTIONS: [&str; 5] = [
    "LWLockAcquire",
    "LWLockRelease",
    "SearchCatCache",
    "hash_search",
    "heapgettup",
];

/// What a run found.
pub struct Outcome {
    pub profile: ForeignProfile,
    pub report: String,
    /// Transactions pgbench committed under the trace, and its tps there.
    pub transactions: u64,
    pub traced_tps: Option<f64>,
    /// Backends that did work in the counted region.
    pub backends: usize,
}

fn say(progress: &mut dyn std::io::Write, line: &str) {
    let _ = writeln!(progress, "{line}");
    let _ = progress.flush();
}

/// Runs the experiment; progress lines go to `progress`.
pub fn run(cfg: &Config, progress: &mut dyn std::io::Write) -> LabResult<Outcome> {
    if cfg.clients == 0 || cfg.transactions == 0 || cfg.scale == 0 {
        return Err(LabError::Invalid(
            "--clients, --transactions and --scale must be at least 1".into(),
        ));
    }
    let bindir = server::find_bindir(cfg.bindir.as_deref())?;
    kura_profile::simulated::record::check_valgrind(&cfg.valgrind)?;
    let version = server::version(&bindir);
    std::fs::create_dir_all(&cfg.out).at(format_args!("creating {}", cfg.out.display()))?;
    // The cluster lives in the temporary directory: the server's account must
    // reach it, and `out` may be inside a directory only we can enter.
    let cluster_dir =
        std::env::temp_dir().join(format!("kura-pgbench-{}-{}", std::process::id(), cfg.port));
    let cluster = Cluster::init(&bindir, &cluster_dir, cfg.port)?;
    say(
        progress,
        &format!(
            "{version}: initdb done; loading pgbench scale {} untraced",
            cfg.scale
        ),
    );
    cluster.start()?;
    let loaded = cluster
        .pgbench(&["-i".into(), "-q".into(), "-s".into(), cfg.scale.to_string()])
        .and_then(|_| {
            cluster.pgbench(&[
                "-n".into(),
                "-c".into(),
                "2".into(),
                "-t".into(),
                "20".into(),
            ])
        });
    let stopped = cluster.stop();
    loaded?;
    stopped?;

    say(
        progress,
        "starting the server under Valgrind's lackey (its start is traced, not counted)",
    );
    let opts = TraceOptions {
        valgrind: cfg.valgrind.clone(),
        program: bindir.join("postgres").into_os_string(),
        args: cluster.server_args(),
        geometry_root: cfg.geometry_root.clone(),
        scratch: cluster.dir.join("lackey"),
        count_from_start: false,
        run_as: cluster.run_as,
        output: Some(cluster.log.clone()),
    };
    let log_from = cluster.log_len();
    let mut tracing = foreign::start(&opts)?;
    if let Err(e) = cluster.wait_ready(Duration::from_secs(600), log_from, || tracing.has_exited())
    {
        let _ = tracing.kill();
        return Err(e);
    }
    let ready_at = tracing.elapsed();
    say(
        progress,
        &format!(
            "pgbench: {} clients x {} transactions, counted from its first progress report \
             (all clients connected)",
            cfg.clients, cfg.transactions
        ),
    );
    let bench = cluster.pgbench_reporting(
        &[
            "-n".into(),
            "-c".into(),
            cfg.clients.to_string(),
            "-j".into(),
            cfg.clients.min(2).to_string(),
            "-t".into(),
            cfg.transactions.to_string(),
        ],
        || tracing.count_from_now(),
        progress,
    );
    let stop = cluster.stop();
    let trace = tracing.finish()?;
    let bench = bench?;
    stop?;
    let transactions = server::transactions(&bench).unwrap_or(0);
    let traced_tps = server::tps(&bench);
    let backends = trace
        .processes
        .iter()
        .filter(|p| p.accesses > 0 && p.first_seen > ready_at)
        .count();
    let header = vec![format!(
        "{version} under pgbench (TPC-B-like, scale {}, {} clients x {} transactions), \
         {} processes traced in {:.0} s, {} MiB of trace; counted from pgbench's first \
         progress report, so the clients' connection start-up is not",
        cfg.scale,
        cfg.clients,
        cfg.transactions,
        trace.processes.len(),
        trace.elapsed.as_secs_f64(),
        trace.log_bytes >> 20
    )];
    let mut profile = ForeignProfile::from_trace(trace, header);
    for (name, patterns) in lock_groups() {
        profile.add_group(name, &patterns);
    }
    let report = render(cfg, &profile, transactions, traced_tps, backends);
    let json = cfg.out.join("pgbench_profile.json");
    profile.save(&json)?;
    write_csv(&profile, &cfg.out.join("pgbench_profile.csv"))?;
    std::fs::write(cfg.out.join("pgbench_profile.txt"), &report).at("writing the report")?;
    drop(cluster);
    Ok(Outcome {
        profile,
        report,
        transactions,
        traced_tps,
        backends,
    })
}

/// Whether the run measured what the paper did: every client's backend worked,
/// every transaction committed, and the lock functions were reached.
pub fn premise(
    cfg: &Config,
    p: &ForeignProfile,
    transactions: u64,
    backends: usize,
) -> (bool, String) {
    let expected = u64::from(cfg.clients) * u64::from(cfg.transactions);
    let lwlock_accesses = p.groups.first().map(|g| g.values[0]).unwrap_or(0);
    let holds = transactions == expected && backends >= cfg.clients as usize && lwlock_accesses > 0;
    let text = format!(
        "premise {}: {transactions} of {expected} transactions committed by {backends} backends \
         (of {} clients) under the trace; LWLock functions made {lwlock_accesses} accesses",
        if holds { "holds" } else { "does NOT hold" },
        cfg.clients
    );
    (holds, text)
}

fn render(
    cfg: &Config,
    p: &ForeignProfile,
    transactions: u64,
    tps: Option<f64>,
    backends: usize,
) -> String {
    let mut out = String::new();
    let (_, premise) = premise(cfg, p, transactions, backends);
    let _ = writeln!(out, "{premise}");
    for h in &p.header {
        let _ = writeln!(out, "{h}");
    }
    if let Some(t) = tps {
        let _ = writeln!(out, "pgbench under the trace: {t:.1} tps");
    }
    for (table, level) in [("Table 5", "L1d"), ("Table 6", "L2")] {
        let Some(m) = p.metric(level) else { continue };
        let _ = writeln!(
            out,
            "\n{table}: top {} functions by simulated {} (share of all of the backends' {})",
            cfg.top, p.metrics[m], p.metrics[m]
        );
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::NOTHING);
        t.set_header([
            "#",
            "function",
            "misses",
            "share",
            "accesses",
            "miss ratio",
            "module",
        ]);
        for (i, r) in p.top_functions(m, cfg.top).iter().enumerate() {
            let share = r.values[m] as f64 * 100.0 / p.totals[m].max(1) as f64;
            t.add_row([
                (i + 1).to_string(),
                r.name.clone(),
                r.values[m].to_string(),
                format!("{share:.1} %"),
                r.values[0].to_string(),
                format!(
                    "{:.2} %",
                    r.values[m] as f64 * 100.0 / r.values[0].max(1) as f64
                ),
                r.context.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
        let _ = writeln!(
            out,
            "the paper's sites (PostgreSQL 7.3, Pentium 4) here: {}",
            paper_ranks(p, m).join(", ")
        );
    }
    let _ = writeln!(out);
    for g in &p.groups {
        let _ = writeln!(out, "{}: {}", g.name, g.shares_text(&p.metrics));
    }
    out
}

/// Where each of the paper's functions ranks here by metric `m` (a function
/// renamed or split since 7.3 is found by its prefix, e.g. `hash_search_with_hash_value`).
pub fn paper_ranks(p: &ForeignProfile, m: usize) -> Vec<String> {
    let ranked = p.top_functions(m, usize::MAX);
    PAPER_FUNCTIONS
        .iter()
        .map(
            |f| match ranked.iter().position(|r| r.name.starts_with(f)) {
                Some(i) => format!(
                    "{} #{} ({:.1} %)",
                    ranked[i].name,
                    i + 1,
                    ranked[i].values[m] as f64 * 100.0 / p.totals[m].max(1) as f64
                ),
                None => format!("{f} (no misses)"),
            },
        )
        .collect()
}

fn write_csv(p: &ForeignProfile, path: &Path) -> LabResult<()> {
    let mut w = csv::Writer::from_path(path).at(path.display())?;
    let mut head = vec!["function".to_string(), "module".to_string()];
    head.extend(p.metrics.iter().cloned());
    w.write_record(&head)?;
    let mut rows: Vec<_> = p.functions.iter().collect();
    rows.sort_by(|a, b| b.values.get(1).cmp(&a.values.get(1)));
    for r in rows {
        let mut rec = vec![r.name.clone(), r.context.clone()];
        rec.extend(r.values.iter().map(u64::to_string));
        w.write_record(&rec)?;
    }
    Ok(w.flush()?)
}
