//! `kura bench load | modes | iops | memsweep | fix | llc | paper003 | twotier | pgbench-profile | cluster-model`: the arguments of the
//! benchmark studies, handed to kura-lab, whose reports print to stdout.

use std::path::PathBuf;

use clap::Subcommand;

use crate::error::{CliError, CliResult};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Generate+load and load-from-.tbl throughput (MB/s, rows/s).
    Load(LoadArgs),
    /// The three execution modes on the selective queries, cold (paper 003).
    Modes(ModesArgs),
    /// This disk's random O_DIRECT read IOPS at several queue depths (io_uring).
    Iops(IopsArgs),
    /// Query time against buffer size, with and without prefetch, resident indexes
    /// and several replacement policies (paper 001).
    Memsweep(MemsweepArgs),
    /// Nanoseconds per buffer hit (1 and 2 threads, sequential and random pages),
    /// misses per second through io_uring, and the warm index fetches of (B) and (C).
    Fix(FixArgs),
    /// Paper 000's tables 4-5 and 9-11: a cache-sensitive query interleaved with a
    /// scan larger than the LLC, an index join, TPC-H Q14/Q18 after a sweep; LLC
    /// partitioning off and on (simulated where CAT is absent) and the software policy.
    Llc(LlcArgs),
    /// Paper 003's figures 2-5 in one run: (C) in the three modes over time (CPU %,
    /// IOPS, the disk's ceiling), (A)-(D) and the variants against PostgreSQL and DuckDB
    /// cold and warm, TPC-H Q1-Q10 and Q19 against PostgreSQL; charts, CSV, Markdown.
    Paper003(Paper003Args),
    /// A TPC-H database over a pool alone and over a pool with a compressed second
    /// tier, inclusive and exclusive (paper 004): hit ratio per level, disk reads, time.
    Twotier(TwotierArgs),
    /// Paper 002's tables 5-6: PostgreSQL under pgbench (scale 1, 10 clients), its
    /// backends' L1 and L2 misses per function and the share of LWLock and
    /// spin-lock functions (simulated caches under Valgrind where there is no PMU).
    PgbenchProfile(PgbenchProfileArgs),
    /// The shared-nothing cluster past this machine, on paper (paper 003 §2): from the
    /// cluster's measured per-query profiles (bench/run --systems kura-cluster), each TPC-H
    /// query's predicted time on N servers at SF 100 and 1000; a table, CSV and charts.
    ClusterModel(ClusterModelArgs),
}

/// Options of `kura bench cluster-model`.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterModelArgs {
    /// bench/run JSON reports of kura-cluster runs (one, or two at different scale factors
    /// to fit how each quantity grows) [default: the profiles recorded with this build, SF
    /// 0.1 and 1 on one 2-core machine].
    #[arg(long)]
    pub from: Vec<PathBuf>,
    /// Scale factors to predict.
    #[arg(long, value_delimiter = ',', default_values_t = [100.0, 1000.0])]
    pub sf: Vec<f64>,
    /// Server counts to predict.
    #[arg(long, value_delimiter = ',', default_values_t = [4, 16, 64])]
    pub servers: Vec<usize>,
    /// Cores per server.
    #[arg(long, default_value_t = 8.0)]
    pub cores: f64,
    /// Network bandwidth per server, Gbit/s.
    #[arg(long, default_value_t = 25.0)]
    pub gbit: f64,
    /// Directory for cluster_model.csv and the charts.
    #[arg(long, default_value = "cluster-model")]
    pub out: PathBuf,
}

/// Options of `kura bench twotier` (the pool size is `--buffer`, default 4 MiB).
#[derive(clap::Args, Debug, Clone)]
pub struct TwotierArgs {
    /// Second-tier size (compressed bytes, or bytes of page cache), e.g. 8MiB.
    #[arg(long, default_value = "8MiB", value_parser = crate::parse_size_arg)]
    pub tier2: u64,
    /// compressed (lz4 page images in kura's memory) or page_cache (the OS page
    /// cache of the database file; needs O_DIRECT, so not with --buffered-io).
    #[arg(long, default_value = "compressed", value_parser = kura::buffer::parse_tier_kind)]
    pub kind: kura::buffer::TierKind,
    /// Replacement policy of the tier.
    #[arg(long, default_value = "lru")]
    pub tier2_policy: String,
    /// Queries, e.g. 1,3,6,a,b,c,d.
    #[arg(long, value_delimiter = ',', default_values_t = ["1", "3", "6", "10", "14", "a", "b", "c", "d"].map(String::from))]
    pub queries: Vec<String>,
    /// Runs of the whole query list in each configuration.
    #[arg(long, default_value_t = 2)]
    pub passes: usize,
    /// Read through the OS page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered_io: bool,
    /// Directory for twotier.csv and twotier_reads.png.
    #[arg(long, default_value = "twotier")]
    pub out: PathBuf,
}

/// Options of `kura bench paper003`.
#[derive(clap::Args, Debug, Clone)]
pub struct Paper003Args {
    /// TPC-H scale factor [default: 1, or 0.01 with --quick].
    #[arg(long)]
    pub sf: Option<f64>,
    /// Directory for paper003.md, paper003.csv, the charts and the suite's report.
    #[arg(long, default_value = "paper003")]
    pub out: PathBuf,
    /// Measured runs per query and mode in the peers' suite [default: 3, or 1 with --quick].
    #[arg(long)]
    pub reps: Option<usize>,
    /// A few minutes' run: SF 0.01, one repetition, a short ceiling sweep.
    #[arg(long)]
    pub quick: bool,
    /// Queries of the timeline figures 2-3 (c, a, b, d, va, vc, vd): (C) as the paper
    /// gives it and vC, (C) at the paper's selectivity at this scale factor.
    #[arg(long, value_delimiter = ',', default_values_t = vec!["c".to_string(), "vc".into()])]
    pub timeline_queries: Vec<String>,
    /// Leave PostgreSQL and DuckDB out: figures 2-3 only.
    #[arg(long)]
    pub no_peers: bool,
    /// Also build the covering indexes of (A)-(D) and their variants (CREATE INDEX
    /// ... INCLUDE), in kura's database and in PostgreSQL's, for index-only plans.
    #[arg(long)]
    pub covering: bool,
    /// The benchmark suite's script [default: bench/run of the repository around the
    /// current directory or this binary].
    #[arg(long)]
    pub bench_run: Option<PathBuf>,
    /// Seconds one suite run may take [default: 600, or 120 with --quick].
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Database with the TPC-H tables and paper 003's indexes for figures 2-3
    /// [default: built at --sf in OUT and removed afterwards].
    #[arg(long, help_heading = crate::DB_OPTIONS)]
    pub db: Option<PathBuf>,
    /// kura's buffer in every cold run, and PostgreSQL's cold shared_buffers [default: 64 MiB].
    #[arg(long, value_parser = crate::parse_size_arg, help_heading = crate::DB_OPTIONS)]
    pub buffer: Option<u64>,
}

/// Options of `kura bench llc`.
#[derive(clap::Args, Debug, Clone)]
pub struct LlcArgs {
    /// A few minutes' run: 10 runs per pattern and a big table of 1.5x the LLC.
    #[arg(long)]
    pub quick: bool,
    /// Runs of each query per pattern [default: 100, or 10 with --quick].
    #[arg(long)]
    pub reps: Option<usize>,
    /// Directory for llc.csv, the charts and the scratch database.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Tables 4-5 and 9-11 from a recorded access stream instead: each
    /// sensitive query and B run in a child kura under Valgrind's lackey,
    /// replayed with CAT semantics (llc_recorded.csv).
    #[arg(long)]
    pub recorded: bool,
    /// With --recorded: which of the paper's tables to make (4-5, 9, 10, 11).
    #[arg(long, value_delimiter = ',', default_values_t = kura_lab::llc_recorded::TABLES.map(String::from), requires = "recorded")]
    pub tables: Vec<String>,
    /// The cache geometry (a sysfs `cpu0/cache` directory) the tables are sized
    /// from and the accesses replayed through [default: this machine's].
    #[arg(long, value_name = "DIR")]
    pub geometry: Option<PathBuf>,
    /// With --recorded: the Valgrind executable.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "valgrind",
        requires = "recorded"
    )]
    pub valgrind: PathBuf,
}

/// Options of `kura bench fix`.
#[derive(clap::Args, Debug, Clone)]
pub struct FixArgs {
    /// Directory for the scratch page file (removed afterwards).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Pages (16 KiB) of the scratch file, all resident during the hit runs.
    #[arg(long, default_value_t = 1024)]
    pub pages: u64,
    /// Replacement policies to measure the hit path with.
    #[arg(long, value_delimiter = ',', default_values_t = vec!["clock".to_string(), "lru".into()])]
    pub policies: Vec<String>,
    /// Seconds of each hit measurement.
    #[arg(long, default_value_t = 0.3)]
    pub seconds: f64,
    /// Runs of each hit measurement and of each query; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Seconds of the miss-rate measurement.
    #[arg(long, default_value_t = 1.0)]
    pub miss_seconds: f64,
    /// Asynchronous fixes in flight during the miss-rate measurement.
    #[arg(long, default_value_t = 64)]
    pub depth: usize,
    /// A TPC-H database with indexes (`kura tpch load --indexes`) for the warm
    /// (B) and (C) runs; without it they are left out.
    #[arg(long)]
    pub tpch: Option<PathBuf>,
}

/// Options of `kura bench memsweep`.
#[derive(clap::Args, Debug, Clone)]
pub struct MemsweepArgs {
    /// TPC-H scale factor of the database built when --db does not exist
    /// [default: 1, or 0.1 with --quick].
    #[arg(long)]
    pub sf: Option<f64>,
    /// Buffer sizes, e.g. 16MiB,32MiB,64MiB [default: powers of two from a quarter
    /// of the smallest shape's measured working set up to one holding the largest;
    /// with --quick the smallest, a middle one and the largest].
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_size_arg)]
    pub buffers: Vec<u64>,
    /// A few minutes' run: SF 0.1 and three buffer sizes.
    #[arg(long)]
    pub quick: bool,
    /// Replacement policies to compare; the first is the baseline of the prefetch
    /// on/off and resident-index lines.
    #[arg(long, value_delimiter = ',', default_values_t = kura_lab::memsweep::default_policies())]
    pub policies: Vec<String>,
    /// Shapes to run: scan, join3, join4 [default: all].
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// Execution mode of every run.
    #[arg(long, default_value = "serial", value_parser = ["serial", "static", "ooo"])]
    pub mode: String,
    /// Measured warm runs per point, after one warm-up run; the median is kept.
    #[arg(long)]
    pub reps: Option<usize>,
    /// Leave out the resident-index runs.
    #[arg(long)]
    pub no_resident: bool,
    /// Directory for memsweep.csv and the charts.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Database with the TPC-H tables and paper 003's indexes, built at --sf when
    /// missing [default: OUT/memsweep-sf<SF>.db].
    #[arg(long, help_heading = crate::DB_OPTIONS)]
    pub db: Option<PathBuf>,
}

/// Options of `kura bench load`.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// TPC-H scale factor.
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Directory for the .tbl files and the scratch databases (default: a temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Runs of each kind; the median is reported.
    #[arg(long, default_value_t = 3)]
    reps: usize,
}

/// Options of `kura bench modes`: the database is the global `--db`, the buffer of each
/// cold run the global `--buffer` (default 64 MiB, far smaller than the data).
#[derive(clap::Args, Debug, Clone)]
pub struct ModesArgs {
    /// Queries to run (a to d, or the variants va, vc, vd at the paper's selectivity).
    #[arg(long, value_delimiter = ',', default_values_t = vec!["c".to_string(), "a".into(), "b".into(), "d".into()])]
    pub queries: Vec<String>,
    /// Directory for the timeline CSV and PNG files.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Sequential read-ahead (`SET prefetch`) of the static and out-of-order runs: on
    /// or off. The two serial lines set it themselves: "serial" (the paper's) runs
    /// with it off, one page per read; "serial + read-ahead" with it on.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub prefetch: String,
    /// Seconds of each ceiling measurement (one queue depth, one run).
    #[arg(long, default_value_t = 1.0)]
    pub ceiling_seconds: f64,
    /// Runs of the ceiling's queue-depth sweep (1, 4, 16, 64, 256); median and spread.
    #[arg(long, default_value_t = 5)]
    pub ceiling_reps: usize,
    /// Print performance counters of every run (kura profile's counter group).
    #[arg(long)]
    pub counters: bool,
    #[command(flatten)]
    pub db: ModesDb,
}

/// The database options `bench modes` takes: each run opens the database cold, with
/// O_DIRECT and a buffer of its own, so the other database options do not apply.
#[derive(clap::Args, Debug, Clone)]
pub struct ModesDb {
    /// Database holding the TPC-H tables, with indexes (`kura tpch load --indexes`)
    /// [default: kura.db].
    #[arg(long, help_heading = crate::DB_OPTIONS)]
    pub db: Option<PathBuf>,
    /// Buffer pool of each cold run, e.g. 64MiB [default: 64 MiB, far smaller than the data].
    #[arg(long, value_parser = crate::parse_size_arg, help_heading = crate::DB_OPTIONS)]
    pub buffer: Option<u64>,
}

/// Options of `kura bench iops`.
#[derive(clap::Args, Debug, Clone)]
pub struct IopsArgs {
    /// Size of the temporary test file (e.g. 1GiB, 256MiB, 4000000000).
    #[arg(long, default_value = "1GiB", value_parser = crate::parse_size_arg)]
    pub size: u64,
    /// Directory in which to create the test file (removed afterwards).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Seconds of measurement per queue depth.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Queue depths to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1usize, 64])]
    pub depths: Vec<usize>,
    /// Bytes per read (a multiple of 4096).
    #[arg(long, default_value_t = 4096)]
    pub block: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
}

/// Options of `kura bench pgbench-profile`.
#[derive(clap::Args, Debug, Clone)]
pub struct PgbenchProfileArgs {
    /// pgbench's scale factor.
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// Concurrent clients.
    #[arg(long, default_value_t = 10)]
    pub clients: u32,
    /// Transactions per client [default: 100; --quick: 20; the paper: 1000].
    #[arg(long)]
    pub transactions: Option<u32>,
    /// A short run (20 transactions per client).
    #[arg(long)]
    pub quick: bool,
    /// Rows per table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Directory of PostgreSQL's server programs [default: PostgreSQL 15's, or pg_config --bindir].
    #[arg(long, value_name = "DIR")]
    pub pg_bindir: Option<PathBuf>,
    /// Port of the throw-away cluster's Unix socket.
    #[arg(long, default_value_t = 54329)]
    pub port: u16,
    /// The Valgrind executable.
    #[arg(long, value_name = "PATH", default_value = "valgrind")]
    pub valgrind: PathBuf,
    /// Directory describing the cache geometry (sysfs layout).
    #[arg(long, value_name = "DIR", default_value = kura::profile::SYSFS_CACHE_DIR)]
    pub geometry: PathBuf,
    /// Directory for pgbench_profile.{txt,csv,json} (and the cluster while it runs).
    #[arg(long, default_value = "pgbench-profile")]
    pub out: PathBuf,
}

impl BenchCommand {
    pub fn db_args(&self) -> Option<crate::DbArgs> {
        match self {
            BenchCommand::Modes(a) => Some(crate::DbArgs {
                db: a.db.db.clone(),
                buffer: a.db.buffer,
                ..Default::default()
            }),
            _ => None,
        }
    }
}

/// Buffer pool of each cold `bench modes` run unless `--buffer` says otherwise.
const COLD_BUFFER: u64 = 64 << 20;

/// Runs a benchmark; `db` and `buffer` are the global `--db` and `--buffer`.
pub fn run(cmd: &BenchCommand, db: &std::path::Path, buffer: Option<u64>) -> CliResult<()> {
    let mut out = std::io::stdout();
    match cmd {
        BenchCommand::Load(a) => kura_lab::load::run(
            &kura_lab::load::Config {
                sf: a.sf,
                dir: a.dir.clone(),
                reps: a.reps,
            },
            &mut out,
        )
        .map_err(CliError::from),
        BenchCommand::Iops(a) => kura_lab::iops::run(
            &kura_lab::iops::Config {
                size: a.size,
                dir: a.dir.clone(),
                seconds: a.seconds,
                depths: a.depths.clone(),
                block: a.block,
                workers: a.workers,
            },
            &mut out,
        )
        .map(|_| ())
        .map_err(CliError::from),
        BenchCommand::Memsweep(a) => run_memsweep(a, &mut out),
        BenchCommand::PgbenchProfile(a) => run_pgbench_profile(a, &mut out),
        BenchCommand::ClusterModel(a) => run_cluster_model(a, &mut out),
        BenchCommand::Twotier(a) => kura_lab::twotier::run(
            &kura_lab::twotier::Config {
                db: db.to_path_buf(),
                buffer: buffer.unwrap_or(4 << 20),
                tier2: a.tier2,
                kind: a.kind,
                tier_policy: a.tier2_policy.clone(),
                queries: a.queries.clone(),
                passes: a.passes,
                buffered_io: a.buffered_io,
                out: a.out.clone(),
            },
            &mut out,
        )
        .map(|_| ())
        .map_err(CliError::from),
        BenchCommand::Fix(a) => kura_lab::fix::run(
            &kura_lab::fix::Config {
                dir: a.dir.clone(),
                pages: a.pages,
                policies: a.policies.clone(),
                seconds: a.seconds,
                reps: a.reps,
                miss_seconds: a.miss_seconds,
                depth: a.depth,
                db: a.tpch.clone(),
                query_reps: a.reps,
            },
            &mut out,
        )
        .map(|_| ())
        .map_err(CliError::from),
        BenchCommand::Llc(a) if a.recorded => {
            let cfg = kura_lab::llc_recorded::RecordedConfig {
                out: a.out.clone(),
                program: std::env::current_exe()
                    .map_err(CliError::io_in("finding the kura executable"))?,
                child_command: crate::trace_cmd::CHILD_COMMAND
                    .iter()
                    .map(std::ffi::OsString::from)
                    .collect(),
                valgrind: a.valgrind.clone(),
                geometry_root: a
                    .geometry
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(kura::profile::SYSFS_CACHE_DIR)),
                reps: a.reps.unwrap_or(3),
                tables: a.tables.clone(),
            };
            kura_lab::llc_recorded::run(&cfg, &mut out)
                .map(|_| ())
                .map_err(CliError::from)
        }
        BenchCommand::Llc(a) => {
            let mut cfg = kura_lab::llc::Config::new(a.out.clone(), a.quick);
            if let Some(r) = a.reps {
                cfg.reps = r;
            }
            if let Some(g) = &a.geometry {
                cfg.geometry_root = g.clone();
            }
            kura_lab::llc::run(&cfg, &mut out)
                .map(|_| ())
                .map_err(CliError::from)
        }
        BenchCommand::Paper003(a) => run_paper003(a, &mut out),
        BenchCommand::Modes(a) => kura_lab::modes::run(
            &kura_lab::modes::Config {
                db: db.to_path_buf(),
                buffer: buffer.unwrap_or(COLD_BUFFER),
                queries: a.queries.clone(),
                out: a.out.clone(),
                prefetch: a.prefetch.clone(),
                ceiling_seconds: a.ceiling_seconds,
                ceiling_reps: a.ceiling_reps,
                counters: a.counters,
            },
            &mut out,
            &mut ceiling_progress(),
        )
        .map(|_| ())
        .map_err(CliError::from),
    }
}

/// `bench/run` of the repository holding `start` or one of its ancestors.
fn find_bench_run(start: &std::path::Path) -> Option<PathBuf> {
    start.ancestors().find_map(|dir| {
        let script = dir.join("bench").join("run");
        (script.is_file() && dir.join("bench").join("kurabench").is_dir()).then_some(script)
    })
}

fn run_paper003(a: &Paper003Args, out: &mut dyn std::io::Write) -> CliResult<()> {
    use kura_lab::paper003::{Config, Peers};
    let exe = std::env::current_exe().map_err(CliError::io_in("locating this kura binary"))?;
    let peers = if a.no_peers {
        Peers::Skip("--no-peers".into())
    } else {
        let script = a.bench_run.clone().or_else(|| {
            std::env::current_dir()
                .ok()
                .and_then(|d| find_bench_run(&d))
                .or_else(|| find_bench_run(&exe))
        });
        match script {
            // The suite queries this very binary, so it builds nothing of its own.
            Some(script) => Peers::Suite { script, kura: exe },
            None => Peers::Skip(
                "bench/run not found: run from the repository or give --bench-run".into(),
            ),
        }
    };
    let mut cfg = if a.quick {
        Config::quick(a.out.clone(), peers)
    } else {
        Config::new(1.0, a.out.clone(), peers)
    };
    if let Some(sf) = a.sf {
        cfg.sf = sf;
    }
    if let Some(r) = a.reps {
        cfg.reps = r.max(1);
    }
    if let Some(t) = a.timeout {
        cfg.timeout = t;
    }
    if let Some(b) = a.buffer {
        cfg.buffer = b;
    }
    cfg.db = a.db.clone();
    cfg.covering = a.covering;
    cfg.timeline_queries = a.timeline_queries.clone();
    kura_lab::paper003::run(&cfg, out, &mut ceiling_progress())
        .map(|_| ())
        .map_err(CliError::from)
}

fn run_memsweep(a: &MemsweepArgs, out: &mut dyn std::io::Write) -> CliResult<()> {
    let sf = a.sf.unwrap_or(if a.quick { 0.1 } else { 1.0 });
    let db =
        a.db.clone()
            .unwrap_or_else(|| a.out.join(format!("memsweep-sf{sf}.db")));
    std::fs::create_dir_all(&a.out).map_err(CliError::io_in(a.out.display().to_string()))?;
    let mut cfg = kura_lab::memsweep::Config::quick(db, a.out.clone());
    cfg.sf = sf;
    cfg.policies = a.policies.clone();
    cfg.shapes = a.shapes.clone();
    cfg.mode = a.mode.clone();
    cfg.reps = a.reps.unwrap_or(3);
    cfg.resident = !a.no_resident;
    cfg.buffers = a.buffers.clone();
    cfg.quick = a.quick;
    let mut bar: Option<indicatif::ProgressBar> = None;
    let started = std::time::Instant::now();
    kura_lab::memsweep::run(&cfg, out, &mut |done, total| {
        if !crate::progress::on_terminal() {
            // A long sweep run into a log still says how far it is.
            eprintln!(
                "memsweep: {done}/{total} points, {:.0} s",
                started.elapsed().as_secs_f64()
            );
            return;
        }
        let b = bar
            .get_or_insert_with(|| crate::progress::count_bar("memsweep", total as u64, "points"));
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
        }
    })
    .map(|_| ())
    .map_err(CliError::from)
}

/// A bar over the ceiling's measurements (on a terminal).
fn ceiling_progress() -> impl FnMut(usize, usize) {
    let mut bar: Option<indicatif::ProgressBar> = None;
    move |done, total| {
        let b = bar
            .get_or_insert_with(|| crate::progress::count_bar("I/O ceiling", total as u64, "runs"));
        if !crate::progress::on_terminal() {
            b.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        b.set_position(done as u64);
        if done >= total {
            b.finish_and_clear();
        }
    }
}

fn run_pgbench_profile(a: &PgbenchProfileArgs, out: &mut dyn std::io::Write) -> CliResult<()> {
    use kura_lab::pgbench_profile as pp;
    if a.quick && a.transactions.is_some() {
        return Err(CliError::Usage(
            "give --quick or --transactions, not both".into(),
        ));
    }
    let transactions = a.transactions.unwrap_or(if a.quick { 20 } else { 100 });
    let mut cfg = pp::Config::paper(a.out.clone(), transactions);
    cfg.scale = a.scale;
    cfg.clients = a.clients;
    cfg.top = a.top;
    cfg.bindir = a.pg_bindir.clone();
    cfg.port = a.port;
    cfg.valgrind = a.valgrind.clone();
    cfg.geometry_root = a.geometry.clone();
    let outcome = pp::run(&cfg, &mut std::io::stderr()).map_err(CliError::from)?;
    write!(out, "{}", outcome.report)?;
    writeln!(
        out,
        "wrote {}/pgbench_profile.txt, .csv and .json",
        a.out.display()
    )?;
    Ok(())
}

fn run_cluster_model(a: &ClusterModelArgs, out: &mut dyn std::io::Write) -> CliResult<()> {
    if a.cores <= 0.0 || a.gbit <= 0.0 || a.servers.contains(&0) || a.sf.iter().any(|s| *s <= 0.0) {
        return Err(CliError::Usage(
            "cluster-model: --cores, --gbit, --servers and --sf must be positive".into(),
        ));
    }
    let from = if a.from.is_empty() {
        let recorded = kura_lab::cluster_model::write_recorded(&a.out.join("measured"))?;
        writeln!(
            out,
            "no --from: the profiles recorded with this build (2 shards, SF 0.1 and 1, one 2-core machine)"
        )?;
        recorded
    } else {
        a.from.clone()
    };
    kura_lab::cluster_model::run(
        &kura_lab::cluster_model::Config {
            from,
            sfs: a.sf.clone(),
            servers: a.servers.clone(),
            hardware: kura_lab::cluster_model::Hardware {
                cores: a.cores,
                bandwidth: a.gbit * 1e9 / 8.0,
            },
            out: a.out.clone(),
        },
        out,
    )?;
    Ok(())
}
