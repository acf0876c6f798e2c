//! `kura cachesim`: the command line of kura-lab's cache-simulator studies, which replay block traces through the replacement policies of
//! kura-cache — the code kura's buffer manager runs — in one- and two-level
//! configurations, analyses reuse distances, and re-makes paper 004's evaluation
//! (figures 12–14) with `kura cachesim paper004`.
//!
//! Traces (`--trace`): synthetic `uniform`, `zipf` (`--alpha`), `loop` (sequential
//! loop), `scan` (a scan mixed with a hot set); `text` — one block id per line,
//! decimal or `0x` hex, blank lines and `# comment` lines ignored, which is also the
//! format of kura's own page-access traces recorded by the buffer manager; `csv` with
//! chosen 1-based columns (an id column, or byte offset + size split into blocks);
//! `msr` — MSR-Cambridge CSV (offset column 5, size column 6, 4 KiB blocks); and
//! `oracle` — libCacheSim's `oracleGeneral` binary records. Bad lines are reported
//! as `file:line`.
//!
//! Sizes accept a block count (`5000`) or bytes with a unit (`64MiB`, `2GB`), divided
//! by the block size.

use std::path::PathBuf;

use crate::error::{CliError, CliResult};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use kura_lab::cachesim::{
    self, bench::BenchConfig, default_threads, reuse::ReuseConfig, sweep::SweepConfig, Mode,
    TraceSpec, DEFAULT_SEED,
};

#[derive(Debug, Clone, Args)]
#[command(
    about = "Cache simulator: replacement policies, two-level caches, reuse distance (paper 004)"
)]
pub struct CachesimArgs {
    #[command(subcommand)]
    pub command: CachesimCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CachesimCommand {
    /// Replay a trace through policies over a sweep of cache sizes (one or two levels).
    Run(RunArgs),
    /// Reuse-distance histogram of a trace, or of what reaches the level below a cache.
    Reuse(ReuseArgs),
    /// Re-make paper 004's figures 12–14 (uniform reads, upper LRU, lower policies).
    Paper004(Paper004Args),
    /// Replay speed in requests/s on a Zipf (or binary) trace.
    Bench(BenchArgs),
    /// Write a trace in kura's binary format (dense ids, read by mmap).
    Convert(ConvertArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceKind {
    /// Synthetic: every block equally likely.
    Uniform,
    /// Synthetic: Zipf-distributed block popularity (`--alpha`).
    Zipf,
    /// Synthetic: the blocks in order, over and over.
    Loop,
    /// Synthetic: a sequential scan mixed with a hot set (`--hot-blocks`, `--hot-fraction`).
    Scan,
    /// One block id per line (decimal or 0x hex), as `--trace-pages` records them.
    Text,
    /// CSV with the id, or byte offset and size, in chosen columns (`--csv-*`).
    Csv,
    /// MSR-Cambridge block I/O CSV (offset column 5, size column 6).
    Msr,
    /// libCacheSim's oracleGeneral binary records.
    Oracle,
    /// kura's binary format (`kura cachesim convert`), mapped into memory.
    Binary,
}

#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Trace source.
    #[arg(long, value_enum, default_value = "zipf")]
    pub trace: TraceKind,
    /// Trace file (text, csv, msr, oracle, binary).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Synthetic traces: distinct blocks (data size); the scan length for `scan`.
    #[arg(long, default_value_t = 100_000)]
    pub blocks: u64,
    /// Synthetic traces: number of requests.
    #[arg(long, default_value_t = 1_000_000)]
    pub requests: usize,
    /// Zipf exponent α.
    #[arg(long, default_value_t = 0.9)]
    pub alpha: f64,
    /// `scan`: hot-set blocks.
    #[arg(long, default_value_t = 1_000)]
    pub hot_blocks: u64,
    /// `scan`: share of requests that go to the hot set.
    #[arg(long, default_value_t = 0.5)]
    pub hot_fraction: f64,
    /// Seed of synthetic traces and of RAND.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Bytes one block id stands for (kura's page traces: its page size).
    #[arg(long, default_value = cachesim::DEFAULT_BLOCK_SIZE)]
    pub block_size: String,
    /// `csv`: 1-based column holding the block/object id.
    #[arg(long)]
    pub csv_id_column: Option<usize>,
    /// `csv`: 1-based byte-offset column (with --csv-size-column).
    #[arg(long)]
    pub csv_offset_column: Option<usize>,
    /// `csv`: 1-based size-in-bytes column (with --csv-offset-column).
    #[arg(long)]
    pub csv_size_column: Option<usize>,
    /// `csv`/`msr`: field delimiter.
    #[arg(long, default_value_t = ',')]
    pub csv_delimiter: char,
    /// `csv`/`msr`: leading lines to skip (a header).
    #[arg(long, default_value_t = 0)]
    pub csv_skip_lines: usize,
    /// `csv`/`msr`: keep only rows where 1-based column COL equals VALUE, as
    /// `COL=VALUE` (e.g. `4=Read` for MSR reads).
    #[arg(long)]
    pub csv_filter: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Policies to compare (a line each); `demote` = MRU below in exclusive mode.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lru,clock,arc,2q,sieve,s3fifo"
    )]
    pub policies: Vec<String>,
    /// Cache sizes to sweep (of the lower cache when --upper is given).
    #[arg(long, value_delimiter = ',', required = true)]
    pub sizes: Vec<String>,
    /// Upper cache as POLICY:SIZE (e.g. `lru:64MiB`); makes every run two-level.
    #[arg(long)]
    pub upper: Option<String>,
    /// Two-level mode.
    #[arg(long, value_enum, default_value = "inclusive")]
    pub mode: ModeArg,
    /// Requests replayed before counting.
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    /// Worker threads (one configuration each at a time).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Directory for results.csv and hit_ratio.png.
    #[arg(long, default_value = "cachesim-out")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// A block may be held by both levels.
    Inclusive,
    /// A block is in one level only: the upper level's evictions move down.
    Exclusive,
}

#[derive(Debug, Clone, Args)]
pub struct ReuseArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Analyse the requests that miss this cache (POLICY:SIZE), i.e. the stream the
    /// lower level sees.
    #[arg(long)]
    pub upper: Option<String>,
    /// Histogram bin width in bytes (e.g. `100MB`); default: 50 bins over the range.
    #[arg(long)]
    pub bin: Option<String>,
    /// Directory for reuse.csv and reuse.png.
    #[arg(long, default_value = "cachesim-out")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct Paper004Args {
    /// Everything 100× smaller (100 MB of data): seconds instead of minutes.
    #[arg(long)]
    pub quick: bool,
    /// Requests counted per block of data.
    #[arg(long)]
    pub measured_per_block: Option<u64>,
    /// Worker threads, one configuration each at a time (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Directory for paper004.csv, paper004.txt and the figures.
    #[arg(long, default_value = "paper004")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Requests in the Zipf trace.
    #[arg(long, default_value_t = 20_000_000)]
    pub requests: usize,
    /// Distinct blocks.
    #[arg(long, default_value_t = 1_000_000)]
    pub blocks: u64,
    /// Zipf exponent α.
    #[arg(long, default_value_t = 0.9)]
    pub alpha: f64,
    /// Cache size in blocks (each level for `demote`).
    #[arg(long, default_value_t = 100_000)]
    pub capacity: usize,
    /// Single-level policies to time; `demote` = LRU over MRU, exclusive.
    #[arg(long, value_delimiter = ',', default_value = "lru,clock,arc,2q,demote")]
    pub policies: Vec<String>,
    /// Replay this binary trace (`kura cachesim convert`) instead of the Zipf trace.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Also time the reference policies (the buffer manager's code) and check that
    /// they count exactly what the fast path counts.
    #[arg(long)]
    pub reference: bool,
    /// Replay all configurations at once on this many threads and report the
    /// aggregate rate (1: one at a time, per-core rates).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Accesses per stream for the set-associative CPU-cache model's timing (0: skip).
    #[arg(long, default_value_t = 20_000_000)]
    pub cpu_accesses: usize,
}

#[derive(Debug, Clone, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Binary trace to write (dense u32 ids; replayed by mmap with `--trace binary`).
    #[arg(long)]
    pub out: PathBuf,
}

impl From<TraceKind> for cachesim::TraceKind {
    fn from(k: TraceKind) -> Self {
        match k {
            TraceKind::Uniform => cachesim::TraceKind::Uniform,
            TraceKind::Zipf => cachesim::TraceKind::Zipf,
            TraceKind::Loop => cachesim::TraceKind::Loop,
            TraceKind::Scan => cachesim::TraceKind::Scan,
            TraceKind::Text => cachesim::TraceKind::Text,
            TraceKind::Csv => cachesim::TraceKind::Csv,
            TraceKind::Msr => cachesim::TraceKind::Msr,
            TraceKind::Oracle => cachesim::TraceKind::Oracle,
            TraceKind::Binary => cachesim::TraceKind::Binary,
        }
    }
}

impl From<&TraceArgs> for TraceSpec {
    fn from(a: &TraceArgs) -> Self {
        TraceSpec {
            trace: a.trace.into(),
            file: a.file.clone(),
            blocks: a.blocks,
            requests: a.requests,
            alpha: a.alpha,
            hot_blocks: a.hot_blocks,
            hot_fraction: a.hot_fraction,
            seed: a.seed,
            block_size: a.block_size.clone(),
            csv_id_column: a.csv_id_column,
            csv_offset_column: a.csv_offset_column,
            csv_size_column: a.csv_size_column,
            csv_delimiter: a.csv_delimiter,
            csv_skip_lines: a.csv_skip_lines,
            csv_filter: a.csv_filter.clone(),
        }
    }
}

pub fn run(args: CachesimArgs) -> CliResult<()> {
    let out = &mut std::io::stdout();
    match args.command {
        CachesimCommand::Run(a) => {
            let config = SweepConfig {
                trace: (&a.trace).into(),
                policies: a.policies,
                sizes: a.sizes,
                upper: a.upper,
                mode: match a.mode {
                    ModeArg::Inclusive => Mode::Inclusive,
                    ModeArg::Exclusive => Mode::Exclusive,
                },
                warmup: a.warmup,
                threads: a.threads,
                out: a.out,
            };
            with_progress("simulating", |p| cachesim::sweep::run(&config, out, p))
                .map_err(CliError::from)
        }
        CachesimCommand::Reuse(a) => {
            let config = ReuseConfig {
                trace: (&a.trace).into(),
                upper: a.upper,
                bin: a.bin,
                out: a.out,
            };
            cachesim::reuse::run(&config, out).map_err(CliError::from)
        }
        CachesimCommand::Paper004(a) => run_paper004(a),
        CachesimCommand::Bench(a) => {
            let config = BenchConfig {
                requests: a.requests,
                blocks: a.blocks,
                alpha: a.alpha,
                capacity: a.capacity,
                policies: a.policies,
                file: a.file,
                reference: a.reference,
                threads: a.threads,
                cpu_accesses: a.cpu_accesses,
            };
            cachesim::bench::run(&config, out).map_err(CliError::from)
        }
        CachesimCommand::Convert(a) => {
            cachesim::convert(&(&a.trace).into(), &a.out, out).map_err(CliError::from)
        }
    }
}

/// Runs `f` with a progress bar that appears at its first report.
fn with_progress<T>(what: &str, f: impl FnOnce(cachesim::Progress) -> T) -> T {
    let bar: std::sync::OnceLock<ProgressBar> = std::sync::OnceLock::new();
    let result = f(&|done, total| {
        bar.get_or_init(|| progress(total, what))
            .set_position(done as u64);
    });
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    result
}

fn run_paper004(args: Paper004Args) -> CliResult<()> {
    let config = kura_lab::paper004::Config {
        quick: args.quick,
        measured_per_block: args.measured_per_block,
        threads: args.threads.unwrap_or_else(default_threads),
        out: args.out,
    };
    with_progress("simulating", |p| {
        kura_lab::paper004::run(&config, &mut std::io::stdout(), p)
    })
    .map_err(CliError::from)
}

fn progress(total: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_parses() {
        use clap::{CommandFactory, Parser};
        #[derive(Parser)]
        struct Wrapper {
            #[command(subcommand)]
            sub: Sub,
        }
        #[derive(clap::Subcommand)]
        enum Sub {
            Cachesim(CachesimArgs),
        }
        Wrapper::command().debug_assert();
        let w = Wrapper::try_parse_from([
            "kura",
            "cachesim",
            "run",
            "--trace",
            "msr",
            "--file",
            "x.csv",
            "--sizes",
            "1GB,2GB",
            "--upper",
            "lru:1GB",
            "--policies",
            "lru,demote",
            "--mode",
            "exclusive",
        ])
        .unwrap();
        let Sub::Cachesim(CachesimArgs {
            command: CachesimCommand::Run(r),
        }) = w.sub
        else {
            panic!("expected run");
        };
        assert_eq!(r.sizes, vec!["1GB", "2GB"]);
        assert_eq!(r.policies, vec!["lru", "demote"]);
        assert_eq!(
            (r.trace.trace, r.mode),
            (TraceKind::Msr, ModeArg::Exclusive)
        );
        assert!(Wrapper::try_parse_from(["kura", "cachesim", "paper004", "--quick"]).is_ok());
        assert!(Wrapper::try_parse_from([
            "kura",
            "cachesim",
            "bench",
            "--threads",
            "2",
            "--reference",
            "--requests",
            "1000"
        ])
        .is_ok());
        assert!(Wrapper::try_parse_from(["kura", "cachesim", "run", "--trace", "bogus"]).is_err());
    }
}
