//! `kura cachesim`: replays block traces through the replacement policies of
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

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand, ValueEnum};
use comfy_table::{presets::UTF8_FULL, Table};
use indicatif::{ProgressBar, ProgressStyle};
use kura_cache::fast::DenseTrace;
use kura_cache::paper004::DEMOTE;
use kura_cache::reuse::{histogram, ReuseHistogram};
use kura_cache::sim::{
    default_threads, misses_of, simulate_all, simulate_all_dense, simulate_dense,
    simulate_reference,
};
use kura_cache::trace::csv::{Columns, CsvSpec};
use kura_cache::trace::{binary, csv, oracle, synthetic, text};
use kura_cache::{Level, Mode, SimConfig, SimResult, Trace, DEFAULT_SEED, POLICY_NAMES};
use kura_lab::paper004::{human_bytes, percent};

use kura_lab::plot::{grouped_bar_chart, line_chart, BarGroup, Labels, Series};

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

/// `--block-size` default; a binary trace's own block size wins over it.
const DEFAULT_BLOCK_SIZE_ARG: &str = "4KiB";

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
    #[arg(long, default_value = DEFAULT_BLOCK_SIZE_ARG)]
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

pub fn run(args: CachesimArgs) -> Result<(), String> {
    match args.command {
        CachesimCommand::Run(a) => run_sweep(a),
        CachesimCommand::Reuse(a) => run_reuse(a),
        CachesimCommand::Paper004(a) => run_paper004(a),
        CachesimCommand::Bench(a) => run_bench(a),
        CachesimCommand::Convert(a) => run_convert(a),
    }
}

// ---------------------------------------------------------------- sizes and traces

/// Bytes in `text` (`4096`, `64KiB`, `2GB` = 2 GiB: kura's one size reader).
fn parse_bytes(text: &str) -> Result<u64, String> {
    kura_common::size::parse_size(text).map_err(|e| e.to_string())
}

/// A size in blocks: a bare integer is a block count, anything with a unit is bytes.
fn parse_blocks(text: &str, block_size: u64) -> Result<usize, String> {
    let blocks = if let Ok(n) = text.trim().parse::<u64>() {
        n
    } else {
        parse_bytes(text)? / block_size
    };
    if blocks == 0 {
        return Err(format!("cache size '{text}' is less than one block"));
    }
    Ok(blocks as usize)
}

/// `POLICY:SIZE`.
fn parse_level(text: &str, block_size: u64) -> Result<Level, String> {
    let (policy, size) = text
        .split_once(':')
        .ok_or_else(|| format!("expected POLICY:SIZE (e.g. lru:64MiB), got '{text}'"))?;
    Ok(Level::new(policy.trim(), parse_blocks(size, block_size)?))
}

fn block_size(args: &TraceArgs) -> Result<u64, String> {
    match parse_bytes(&args.block_size)? {
        0 => Err("block size must be positive".into()),
        b => Ok(b),
    }
}

/// Loads the trace and renumbers its blocks densely (hit ratios and distances do not
/// change; the policies' block index becomes a plain table).
fn load_trace(args: &TraceArgs) -> Result<Trace, String> {
    let mut trace = read_trace(args)?;
    trace.densify();
    Ok(trace)
}

fn read_trace(args: &TraceArgs) -> Result<Trace, String> {
    let bs = block_size(args)?;
    let file = || {
        args.file
            .clone()
            .ok_or_else(|| format!("--trace {:?} needs --file", args.trace).to_lowercase())
    };
    let e = |e: kura_cache::CacheError| e.to_string();
    let mut trace = match args.trace {
        TraceKind::Uniform => {
            synthetic::uniform(args.blocks, args.requests, args.seed).map_err(e)?
        }
        TraceKind::Zipf => {
            synthetic::zipf(args.blocks, args.alpha, args.requests, args.seed).map_err(e)?
        }
        TraceKind::Loop => synthetic::sequential_loop(args.blocks, args.requests).map_err(e)?,
        TraceKind::Scan => synthetic::scan_with_hot_set(
            args.hot_blocks,
            args.blocks,
            args.hot_fraction,
            args.requests,
            args.seed,
        )
        .map_err(e)?,
        TraceKind::Text => return text::read(&file()?, bs).map_err(e),
        TraceKind::Oracle => return oracle::read(&file()?, bs).map_err(e),
        TraceKind::Binary => {
            let path = file()?;
            let mapped = binary::open(&path).map_err(e)?;
            let ids = mapped.dense().map_err(e)?.to_block_ids();
            let mut trace = Trace::new(path.display().to_string(), ids, mapped.block_size);
            if args.block_size != DEFAULT_BLOCK_SIZE_ARG {
                trace.block_size = bs;
            }
            return Ok(trace);
        }
        TraceKind::Csv | TraceKind::Msr => {
            return csv::read(&file()?, &csv_spec(args, bs)?).map_err(e);
        }
    };
    trace.block_size = bs;
    Ok(trace)
}

fn csv_spec(args: &TraceArgs, block_size: u64) -> Result<CsvSpec, String> {
    let col = |c: usize, what: &str| {
        c.checked_sub(1)
            .ok_or_else(|| format!("{what} columns are numbered from 1"))
    };
    let columns = match (
        args.csv_id_column,
        args.csv_offset_column,
        args.csv_size_column,
    ) {
        (Some(id), None, None) => Columns::Id(col(id, "--csv-id-column")?),
        (None, Some(o), Some(s)) => Columns::OffsetSize {
            offset: col(o, "--csv-offset-column")?,
            size: col(s, "--csv-size-column")?,
        },
        (None, None, None) if args.trace == TraceKind::Msr => CsvSpec::msr().columns,
        _ => return Err(
            "csv traces need --csv-id-column, or both --csv-offset-column and --csv-size-column"
                .into(),
        ),
    };
    let filter = match &args.csv_filter {
        None => None,
        Some(f) => {
            let (c, v) = f
                .split_once('=')
                .ok_or_else(|| format!("--csv-filter expects COL=VALUE, got '{f}'"))?;
            let c: usize = c
                .trim()
                .parse()
                .map_err(|_| format!("--csv-filter column must be a number, got '{c}'"))?;
            Some((col(c, "--csv-filter")?, v.trim().to_string()))
        }
    };
    Ok(CsvSpec {
        columns,
        delimiter: args.csv_delimiter,
        skip_lines: args.csv_skip_lines,
        filter,
        block_size,
    })
}

// ---------------------------------------------------------------- output helpers

fn create_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn write_file(path: &Path, contents: &str) -> Result<(), String> {
    fs::write(path, contents).map_err(|e| format!("{}: {e}", path.display()))
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

const CSV_HEADER: &str = "trace,upper_policy,upper_blocks,lower_policy,lower_blocks,mode,requests,upper_hits,upper_hit_ratio,lower_requests,lower_hits,lower_hit_ratio,overall_hit_ratio";

fn csv_row(trace: &str, label: &str, r: &SimResult) -> String {
    let c = &r.config;
    let s = &r.stats;
    let (lower_policy, lower_blocks, mode) = match &c.lower {
        Some((l, m)) => (label.to_string(), l.capacity.to_string(), m.name()),
        None => (String::new(), String::new(), "single"),
    };
    let upper_policy = if c.lower.is_none() {
        label
    } else {
        &c.upper.policy
    };
    format!(
        "{},{},{},{},{},{},{},{},{:.6},{},{},{:.6},{:.6}",
        trace.replace(',', ";"),
        upper_policy,
        c.upper.capacity,
        lower_policy,
        lower_blocks,
        mode,
        s.requests,
        s.upper_hits,
        s.upper_hit_ratio(),
        s.lower_requests,
        s.lower_hits,
        s.lower_hit_ratio(),
        s.overall_hit_ratio()
    )
}

// ---------------------------------------------------------------- run

fn run_sweep(args: RunArgs) -> Result<(), String> {
    // A binary trace is replayed from its mapping; other traces are loaded.
    let mapped = match (args.trace.trace, &args.trace.file) {
        (TraceKind::Binary, Some(path)) => Some(binary::open(path).map_err(|e| e.to_string())?),
        _ => None,
    };
    let trace = match &mapped {
        Some(m) => Trace::new(
            args.trace
                .file
                .as_ref()
                .map_or(String::new(), |f| f.display().to_string()),
            Vec::new(),
            m.block_size,
        ),
        None => load_trace(&args.trace)?,
    };
    let requests = mapped.as_ref().map_or(trace.len(), |m| m.len());
    if requests == 0 {
        return Err(format!("trace {} has no requests", trace.name));
    }
    let bs = trace.block_size;
    let sizes = args
        .sizes
        .iter()
        .map(|s| parse_blocks(s, bs))
        .collect::<Result<Vec<_>, _>>()?;
    let upper = args
        .upper
        .as_deref()
        .map(|u| parse_level(u, bs))
        .transpose()?;
    let mode = match args.mode {
        ModeArg::Inclusive => Mode::Inclusive,
        ModeArg::Exclusive => Mode::Exclusive,
    };
    // (policy label, size) per configuration, in sweep order.
    let mut points = Vec::new();
    let mut configs = Vec::new();
    for policy in &args.policies {
        let policy = policy.trim().to_ascii_lowercase();
        for &size in &sizes {
            let mut config = match (&upper, policy.as_str()) {
                (None, DEMOTE) => {
                    return Err("'demote' is a two-level method: give --upper POLICY:SIZE".into())
                }
                (None, p) => SimConfig::single(p, size),
                (Some(u), DEMOTE) => {
                    SimConfig::two_level(u.clone(), Level::new("mru", size), Mode::Exclusive)
                }
                (Some(u), p) => SimConfig::two_level(u.clone(), Level::new(p, size), mode),
            };
            config.seed = args.trace.seed;
            points.push((policy.clone(), size));
            configs.push(config);
        }
    }
    let threads = args.threads.unwrap_or_else(default_threads);
    let bar = progress(configs.len(), "simulating");
    let on_done = |n: usize| bar.set_position(n as u64);
    let results = match &mapped {
        Some(m) => {
            let dense = m.dense().map_err(|e| e.to_string())?;
            simulate_all_dense(&configs, &dense, args.warmup, threads, &on_done)
        }
        None => simulate_all(&configs, &trace.requests, args.warmup, threads, &on_done),
    }
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();

    let two_level = upper.is_some();
    let ratio = |r: &SimResult| {
        if two_level {
            r.stats.lower_hit_ratio()
        } else {
            r.stats.upper_hit_ratio()
        }
    };
    create_dir(&args.out)?;
    let mut csv_text = format!("{CSV_HEADER}\n");
    for ((label, _), r) in points.iter().zip(&results) {
        csv_text.push_str(&csv_row(&trace.name, label, r));
        csv_text.push('\n');
    }
    write_file(&args.out.join("results.csv"), &csv_text)?;

    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    let mut header = vec![if two_level {
        "lower size"
    } else {
        "cache size"
    }
    .to_string()];
    header.extend(args.policies.iter().cloned());
    table.set_header(header);
    let mut series: Vec<Series> = args
        .policies
        .iter()
        .map(|p| Series::line(p.clone(), Vec::new()))
        .collect();
    for (si, &size) in sizes.iter().enumerate() {
        let mut row = vec![format!("{size} ({})", human_bytes(size as u64 * bs))];
        for (pi, s) in series.iter_mut().enumerate() {
            let r = &results[pi * sizes.len() + si];
            row.push(percent(ratio(r)));
            s.points.push(((size as u64 * bs) as f64 / 1e6, ratio(r)));
        }
        table.add_row(row);
    }
    let what = if two_level {
        "lower-level hit ratio %"
    } else {
        "hit ratio %"
    };
    println!(
        "{} — {} requests ({} warm-up), {what}",
        trace.name, requests, args.warmup
    );
    if let Some(u) = &upper {
        println!(
            "upper cache: {}({} blocks), mode {}",
            u.policy,
            u.capacity,
            mode.name()
        );
    }
    println!("{table}");
    // The title names the workload: which trace, how many requests.
    let title = match &upper {
        Some(u) => format!(
            "{}: lower hit ratio under {}({}), {}",
            trace.name,
            u.policy,
            u.capacity,
            mode.name()
        ),
        None => format!("{}: hit ratio, {} requests", trace.name, trace.len()),
    };
    let png = args.out.join("hit_ratio.png");
    line_chart(
        &png,
        &Labels {
            title: &title,
            x: if two_level {
                "lower cache size (MB)"
            } else {
                "cache size (MB)"
            },
            y: "hit ratio",
        },
        &series,
        Some(0.0..1.0),
    )?;
    println!(
        "wrote {} and {}",
        args.out.join("results.csv").display(),
        png.display()
    );
    Ok(())
}

// ---------------------------------------------------------------- reuse

fn run_reuse(args: ReuseArgs) -> Result<(), String> {
    let mut trace = load_trace(&args.trace)?;
    if let Some(u) = &args.upper {
        let level = parse_level(u, trace.block_size)?;
        let misses =
            misses_of(&level.policy, level.capacity, &trace.requests).map_err(|e| e.to_string())?;
        trace = Trace::new(
            format!("{} below {}({})", trace.name, level.policy, level.capacity),
            misses,
            trace.block_size,
        );
    }
    let bin = match &args.bin {
        Some(b) => parse_bytes(b)?.max(1),
        // About 50 bins over the largest possible distance (distinct blocks), of a
        // round width so the axis reads 0, 100 MB, 200 MB rather than 7.48 MB steps.
        None => round_up_1_2_5((trace.distinct_blocks() as u64 * trace.block_size).div_ceil(50)),
    };
    let h = histogram(&trace, bin);
    create_dir(&args.out)?;
    write_file(&args.out.join("reuse.csv"), &reuse_csv(&h))?;
    let groups: Vec<BarGroup> = h
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| BarGroup {
            label: human_bytes(i as u64 * h.bin_bytes),
            values: vec![c as f64],
        })
        .collect();
    let png = args.out.join("reuse.png");
    grouped_bar_chart(
        &png,
        &Labels {
            title: &format!("re-access distance: {}", trace.name),
            x: &format!("re-access distance (bins of {})", human_bytes(h.bin_bytes)),
            y: "re-accesses",
        },
        &["re-accesses".to_string()],
        &groups,
    )?;
    println!("{}: {} requests", trace.name, trace.len());
    println!(
        "first requests {}, re-accesses {}, bin {}",
        h.first_requests,
        h.reaccesses(),
        human_bytes(h.bin_bytes)
    );
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    table.set_header(vec!["distance below", "share of re-accesses %"]);
    let total = h.reaccesses().max(1) as f64;
    let mut cumulative = 0u64;
    let step = h.counts.len().div_ceil(10).max(1);
    for (i, &c) in h.counts.iter().enumerate() {
        cumulative += c;
        if (i + 1) % step == 0 || i + 1 == h.counts.len() {
            table.add_row(vec![
                human_bytes((i as u64 + 1) * h.bin_bytes),
                format!("{:.2}", 100.0 * cumulative as f64 / total),
            ]);
        }
    }
    println!("{table}");
    println!(
        "wrote {} and {}",
        args.out.join("reuse.csv").display(),
        png.display()
    );
    Ok(())
}

/// The smallest 1, 2 or 5 × 10^k that is at least `n` (and at least 1).
fn round_up_1_2_5(n: u64) -> u64 {
    let mut decade = 1u64;
    loop {
        for step in [1, 2, 5] {
            if let Some(v) = decade.checked_mul(step) {
                if v >= n {
                    return v;
                }
            }
        }
        match decade.checked_mul(10) {
            Some(d) => decade = d,
            None => return n,
        }
    }
}

fn reuse_csv(h: &ReuseHistogram) -> String {
    let mut out = String::from("distance_from_bytes,distance_to_bytes,reaccesses\n");
    for (i, c) in h.counts.iter().enumerate() {
        let from = i as u64 * h.bin_bytes;
        let _ = writeln!(out, "{from},{},{c}", from + h.bin_bytes);
    }
    let _ = writeln!(out, "# first requests: {}", h.first_requests);
    out
}

// ---------------------------------------------------------------- paper004

fn run_paper004(args: Paper004Args) -> Result<(), String> {
    let config = kura_lab::paper004::Config {
        quick: args.quick,
        measured_per_block: args.measured_per_block,
        threads: args.threads.unwrap_or_else(default_threads),
        out: args.out,
    };
    let bar: std::sync::OnceLock<ProgressBar> = std::sync::OnceLock::new();
    let result = kura_lab::paper004::run(&config, &mut std::io::stdout(), &|done, total| {
        bar.get_or_init(|| progress(total, "simulating"))
            .set_position(done as u64);
    });
    if let Some(b) = bar.get() {
        b.finish_and_clear();
    }
    result
}

// ---------------------------------------------------------------- bench

fn bench_config(policy: &str, capacity: usize) -> Result<SimConfig, String> {
    if policy.eq_ignore_ascii_case(DEMOTE) {
        Ok(SimConfig::two_level(
            Level::new("lru", capacity),
            Level::new("mru", capacity),
            Mode::Exclusive,
        ))
    } else if POLICY_NAMES.contains(&policy.to_ascii_lowercase().as_str()) {
        Ok(SimConfig::single(policy, capacity))
    } else {
        Err(format!(
            "unknown policy '{policy}'; valid: {}, {DEMOTE}",
            POLICY_NAMES.join(", ")
        ))
    }
}

/// Wall and thread-CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, Option<f64>) {
    let cpu_before = thread_cpu_seconds();
    let started = Instant::now();
    let out = f();
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_before
        .zip(thread_cpu_seconds())
        .map(|(a, b)| b - a)
        .filter(|&c| c > 0.0);
    (out, wall, cpu)
}

fn run_bench(args: BenchArgs) -> Result<(), String> {
    let configs = args
        .policies
        .iter()
        .map(|p| bench_config(p.trim(), args.capacity))
        .collect::<Result<Vec<_>, _>>()?;
    let mapped;
    let generated;
    let (trace, prepare) = match &args.file {
        Some(path) => {
            println!("mapping binary trace {}", path.display());
            mapped = binary::open(path).map_err(|e| e.to_string())?;
            let (trace, wall, _) = timed(|| mapped.dense());
            (trace.map_err(|e| e.to_string())?, wall)
        }
        None => {
            println!(
                "generating zipf(α={}) trace: {} requests over {} blocks",
                args.alpha, args.requests, args.blocks
            );
            generated = synthetic::zipf(args.blocks, args.alpha, args.requests, DEFAULT_SEED)
                .map_err(|e| e.to_string())?;
            let (trace, wall, _) = timed(|| DenseTrace::from_ids(&generated.requests));
            (trace, wall)
        }
    };
    if trace.is_empty() {
        return Err("the trace has no requests".into());
    }
    println!(
        "{} requests, {} distinct ids; dense ids ready in {prepare:.2} s (once per trace, shared by all configurations)",
        trace.len(),
        trace.universe()
    );
    let rate = |s: f64| format!("{:.1}", trace.len() as f64 / s / 1e6);
    if args.threads > 1 {
        return bench_parallel(&args, &configs, &trace);
    }
    let wide = args.reference.then(|| trace.to_block_ids());
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    let mut header = vec![
        "configuration",
        "M requests/s (CPU)",
        "M requests/s (wall)",
        "hit ratio %",
    ];
    if wide.is_some() {
        header.extend(["reference M req/s (CPU)", "speed-up", "same counts"]);
    }
    table.set_header(header);
    for config in &configs {
        let (stats, secs, cpu) = timed(|| simulate_dense(config, &trace, 0));
        let stats = stats.map_err(|e| e.to_string())?;
        let mut row = vec![
            config.describe(),
            cpu.map_or("n/a".into(), rate),
            rate(secs),
            percent(stats.overall_hit_ratio()),
        ];
        if let Some(wide) = &wide {
            let (reference, ref_secs, ref_cpu) = timed(|| simulate_reference(config, wide, 0));
            let reference = reference.map_err(|e| e.to_string())?;
            let (fast_s, ref_s) = (cpu.unwrap_or(secs), ref_cpu.unwrap_or(ref_secs));
            row.extend([
                rate(ref_s),
                format!("{:.1}×", ref_s / fast_s),
                if reference == stats { "yes" } else { "NO" }.to_string(),
            ]);
            if reference != stats {
                println!("{table}");
                return Err(format!(
                    "{}: the fast path counted {stats:?}, the reference {reference:?}",
                    config.describe()
                ));
            }
        }
        table.add_row(row);
    }
    println!("{table}");
    println!("(CPU: this thread's run time, so other load on the machine does not count)");
    if args.cpu_accesses > 0 {
        bench_cpu_model(args.cpu_accesses)?;
    }
    Ok(())
}

/// Accesses per stream timed with 3C classification on (it runs at tens of
/// millions of accesses per second at best, not hundreds).
const CLASSIFIED_ACCESSES: usize = 2_000_000;

/// Replay speed of the set-associative CPU-cache model (this machine's geometry):
/// L1d alone and the whole data hierarchy, on three address streams.
fn bench_cpu_model(n: usize) -> Result<(), String> {
    use kura_cache::cpu::{CacheKind, Geometry, Hierarchy, LevelConfig, Replacement, SetAssoc};
    let root = Path::new(kura_cache::cpu::SYSFS_CACHE_DIR);
    let levels: Vec<LevelConfig> = match kura_cache::cpu::read_sysfs(root) {
        Ok(caches) if caches.iter().any(|g| g.kind != CacheKind::Instruction) => caches
            .into_iter()
            .filter(|g| g.kind != CacheKind::Instruction)
            .map(LevelConfig::lru)
            .collect(),
        other => {
            let why = other
                .err()
                .map_or("no data caches".to_string(), |e| e.to_string());
            println!("no cache geometry from sysfs ({why}); using 32 KiB/8-way L1d, 512 KiB/8-way L2, 32 MiB/16-way L3");
            let level = |l, size, ways| Geometry::new(l, size, ways, 64).map(LevelConfig::lru);
            vec![
                level(1, 32 << 10, 8).map_err(|e| e.to_string())?,
                level(2, 512 << 10, 8).map_err(|e| e.to_string())?,
                level(3, 32 << 20, 16).map_err(|e| e.to_string())?,
            ]
        }
    };
    let hierarchy = || Hierarchy::new(levels.clone());
    let describe = hierarchy().map_err(|e| e.to_string())?;
    let names: Vec<String> = (0..describe.levels())
        .map(|i| describe.level(i).geometry().describe())
        .collect();
    println!("CPU-cache model: {}", names.join("; "));
    let mut rng = kura_cache::SplitMix64::new(DEFAULT_SEED);
    let streams: [(&str, Vec<u64>); 3] = [
        (
            "sequential 8 B reads, 16 MiB",
            (0..n as u64).map(|i| (i * 8) % (16 << 20)).collect(),
        ),
        (
            "one read per line, 64 MiB",
            (0..n as u64).map(|i| (i * 64) % (64 << 20)).collect(),
        ),
        (
            "random 8 B reads within 1 MiB",
            (0..n).map(|_| rng.below(1 << 17) * 8).collect(),
        ),
    ];
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    table.set_header(vec![
        "stream",
        "model",
        "M accesses/s (CPU)",
        "M accesses/s (wall)",
        "miss ratio %",
    ]);
    let rate = |s: f64| format!("{:.1}", n as f64 / s / 1e6);
    for (name, addrs) in &streams {
        let l1 = describe.level(0).geometry().clone();
        let mut single = SetAssoc::new(l1, Replacement::Lru).map_err(|e| e.to_string())?;
        let (misses, wall, cpu) = timed(|| single.replay(addrs, 0));
        table.add_row(vec![
            name.to_string(),
            "L1d alone".into(),
            cpu.map_or("n/a".into(), rate),
            rate(wall),
            percent(misses as f64 / n as f64),
        ]);
        let mut h = hierarchy().map_err(|e| e.to_string())?;
        let ((), wall, cpu) = timed(|| h.replay(addrs, 0));
        let last = h.counters(0)[h.levels() - 1];
        table.add_row(vec![
            String::new(),
            format!("{} levels (LLC misses)", h.levels()),
            cpu.map_or("n/a".into(), rate),
            rate(wall),
            percent(last.misses as f64 / n as f64),
        ]);
        // With 3C classification at every level (a table of every line seen and a
        // fully-associative LRU shadow per level): much slower, so timed on the
        // first accesses only.
        let first = &addrs[..addrs.len().min(CLASSIFIED_ACCESSES)];
        let mut classified = Hierarchy::new(
            levels
                .iter()
                .cloned()
                .map(|l| LevelConfig {
                    classify: true,
                    ..l
                })
                .collect(),
        )
        .map_err(|e| e.to_string())?;
        let ((), wall, cpu) = timed(|| classified.replay(first, 0));
        let last = classified.counters(0)[classified.levels() - 1];
        let m = first.len();
        let rate_m = |s: f64| format!("{:.1}", m as f64 / s / 1e6);
        table.add_row(vec![
            String::new(),
            format!(
                "{} levels + 3C classes ({} M accesses)",
                classified.levels(),
                m as f64 / 1e6
            ),
            cpu.map_or("n/a".into(), rate_m),
            rate_m(wall),
            percent(last.misses as f64 / m as f64),
        ]);
    }
    println!("{table}");
    Ok(())
}

/// All configurations at once on `args.threads` threads: the aggregate rate of a sweep.
fn bench_parallel(
    args: &BenchArgs,
    configs: &[SimConfig],
    trace: &DenseTrace<'_>,
) -> Result<(), String> {
    let started = Instant::now();
    let results =
        simulate_all_dense(configs, trace, 0, args.threads, &|_| {}).map_err(|e| e.to_string())?;
    let secs = started.elapsed().as_secs_f64();
    let total = (configs.len() * trace.len()) as f64;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    table.set_header(vec!["configuration", "hit ratio %"]);
    for r in &results {
        table.add_row(vec![
            r.config.describe(),
            percent(r.stats.overall_hit_ratio()),
        ]);
    }
    println!("{table}");
    println!(
        "{} configurations × {} requests on {} threads in {secs:.2} s wall: {:.1} M requests/s in aggregate ({} cores available)",
        configs.len(),
        trace.len(),
        args.threads,
        total / secs / 1e6,
        default_threads()
    );
    Ok(())
}

// ---------------------------------------------------------------- convert

fn run_convert(args: ConvertArgs) -> Result<(), String> {
    let trace = load_trace(&args.trace)?;
    let dense = DenseTrace::from_ids(&trace.requests);
    binary::write(&args.out, &dense, trace.block_size).map_err(|e| e.to_string())?;
    println!(
        "wrote {}: {} requests over {} distinct blocks of {} bytes",
        args.out.display(),
        dense.len(),
        dense.universe(),
        trace.block_size
    );
    Ok(())
}

/// CPU time of the calling thread: `/proc/thread-self/schedstat` (nanoseconds on
/// the CPU), else `/proc/thread-self/stat` (clock ticks of 1/100 s); `None` off Linux.
fn thread_cpu_seconds() -> Option<f64> {
    if let Ok(s) = fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = s
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<f64>().ok())
        {
            return Some(ns / 1e9);
        }
    }
    let stat = fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_blocks_or_bytes() {
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("2GB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("1.5 MiB").unwrap(), 1_572_864);
        assert!(parse_bytes("12 parsecs").is_err());
        assert_eq!(parse_blocks("5000", 4096).unwrap(), 5000);
        assert_eq!(parse_blocks("64MiB", 4096).unwrap(), 16_384);
        assert!(parse_blocks("1KB", 4096).is_err());
        let l = parse_level("ARC:1MiB", 4096).unwrap();
        assert_eq!((l.policy.as_str(), l.capacity), ("ARC", 256));
        assert!(parse_level("arc", 4096).is_err());
    }

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

    #[test]
    fn reuse_bins_are_round() {
        assert_eq!(round_up_1_2_5(7_481_000), 10_000_000);
        assert_eq!(round_up_1_2_5(1_500_000), 2_000_000);
        assert_eq!(round_up_1_2_5(2_000_000), 2_000_000);
        assert_eq!(round_up_1_2_5(4_096), 5_000);
        assert_eq!(round_up_1_2_5(0), 1);
        assert_eq!(round_up_1_2_5(u64::MAX), u64::MAX);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(2_000_000_000), "2 GB");
        assert_eq!(human_bytes(4096), "4.10 KB");
        assert_eq!(human_bytes(12), "12 B");
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kura-cachesim-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn trace_args(kind: TraceKind) -> TraceArgs {
        TraceArgs {
            trace: kind,
            file: None,
            blocks: 2_000,
            requests: 40_000,
            alpha: 0.9,
            hot_blocks: 100,
            hot_fraction: 0.5,
            seed: 1,
            block_size: "4KiB".into(),
            csv_id_column: None,
            csv_offset_column: None,
            csv_size_column: None,
            csv_delimiter: ',',
            csv_skip_lines: 0,
            csv_filter: None,
        }
    }

    #[test]
    fn run_writes_csv_and_chart_for_a_two_level_sweep() {
        let out = temp_dir("run");
        run(CachesimArgs {
            command: CachesimCommand::Run(RunArgs {
                trace: trace_args(TraceKind::Uniform),
                policies: vec!["lru".into(), "demote".into()],
                sizes: vec!["200".into(), "400".into()],
                upper: Some("lru:400".into()),
                mode: ModeArg::Inclusive,
                warmup: 10_000,
                threads: Some(2),
                out: out.clone(),
            }),
        })
        .unwrap();
        let csv = fs::read_to_string(out.join("results.csv")).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5, "{csv}");
        assert_eq!(lines[0], CSV_HEADER);
        // demote at lower 400: L/(D−U) = 400/1600 = 25 %, within sampling noise
        let demote_400: Vec<&str> = lines[4].split(',').collect();
        assert_eq!(&demote_400[3..6], &["demote", "400", "exclusive"]);
        let ratio: f64 = demote_400[11].parse().unwrap();
        assert!((ratio - 0.25).abs() < 0.02, "{ratio}");
        assert!(fs::metadata(out.join("hit_ratio.png")).unwrap().len() > 1000);
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn binary_traces_convert_and_replay_with_the_same_hit_ratios() {
        let out = temp_dir("binary");
        let sweep = |trace: TraceArgs, dir: &str| {
            run(CachesimArgs {
                command: CachesimCommand::Run(RunArgs {
                    trace,
                    policies: vec!["lru".into(), "arc".into(), "sieve".into()],
                    sizes: vec!["100".into(), "300".into()],
                    upper: None,
                    mode: ModeArg::Inclusive,
                    warmup: 1_000,
                    threads: Some(2),
                    out: out.join(dir),
                }),
            })
            .unwrap();
            let csv = fs::read_to_string(out.join(dir).join("results.csv")).unwrap();
            // everything but the trace-name column
            csv.lines()
                .map(|l| l.split(',').skip(1).collect::<Vec<_>>().join(","))
                .collect::<Vec<_>>()
        };
        let direct = sweep(trace_args(TraceKind::Zipf), "direct");
        let file = out.join("t.kbt");
        run(CachesimArgs {
            command: CachesimCommand::Convert(ConvertArgs {
                trace: trace_args(TraceKind::Zipf),
                out: file.clone(),
            }),
        })
        .unwrap();
        let mut binary = trace_args(TraceKind::Binary);
        binary.file = Some(file.clone());
        assert_eq!(sweep(binary.clone(), "mapped"), direct);
        // the other commands read it too
        assert_eq!(read_trace(&binary).unwrap().len(), 40_000);
        fs::write(&file, b"not a trace").unwrap();
        let err = run_sweep(RunArgs {
            trace: binary,
            policies: vec!["lru".into()],
            sizes: vec!["10".into()],
            upper: None,
            mode: ModeArg::Inclusive,
            warmup: 0,
            threads: None,
            out: out.join("bad"),
        })
        .unwrap_err();
        assert!(err.contains("not a kura binary trace"), "{err}");
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn bench_runs_small_with_reference_threads_and_the_cpu_model() {
        let args = |threads, reference, cpu_accesses| BenchArgs {
            requests: 20_000,
            blocks: 2_000,
            alpha: 0.9,
            capacity: 200,
            policies: vec![
                "lru".into(),
                "sieve".into(),
                "s3fifo".into(),
                "demote".into(),
            ],
            file: None,
            reference,
            threads,
            cpu_accesses,
        };
        run_bench(args(1, true, 10_000)).unwrap();
        run_bench(args(2, false, 0)).unwrap();
        let mut bad = args(1, false, 0);
        bad.policies = vec!["nope".into()];
        assert!(run_bench(bad)
            .unwrap_err()
            .contains("unknown policy 'nope'"));
    }

    #[test]
    fn text_traces_report_bad_lines_with_file_and_line() {
        let dir = temp_dir("text");
        let path = dir.join("pages.txt");
        fs::write(&path, "# kura page trace\n1\n2\nx\n").unwrap();
        let mut args = trace_args(TraceKind::Text);
        args.file = Some(path.clone());
        let err = load_trace(&args).unwrap_err();
        assert!(
            err.ends_with("pages.txt:4: expected a block id (an unsigned integer), found 'x'"),
            "{err}"
        );
        args.file = None;
        assert!(load_trace(&args).unwrap_err().contains("--file"));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn msr_csv_with_filter_loads_read_blocks() {
        let dir = temp_dir("msr");
        let path = dir.join("web_0.csv");
        fs::write(
            &path,
            "1,web,0,Read,8192,8192,10\n2,web,0,Write,0,4096,10\n",
        )
        .unwrap();
        let mut args = trace_args(TraceKind::Msr);
        args.file = Some(path);
        args.csv_filter = Some("4=Read".into());
        assert_eq!(read_trace(&args).unwrap().requests, vec![2, 3]);
        // the simulator renumbers blocks densely in order of first request
        assert_eq!(load_trace(&args).unwrap().requests, vec![0, 1]);
        args.trace = TraceKind::Csv;
        assert!(load_trace(&args).unwrap_err().contains("--csv-id-column"));
        args.csv_id_column = Some(5);
        assert_eq!(read_trace(&args).unwrap().requests, vec![8192]);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reuse_writes_histogram_of_the_lower_stream() {
        let out = temp_dir("reuse");
        run(CachesimArgs {
            command: CachesimCommand::Reuse(ReuseArgs {
                trace: trace_args(TraceKind::Loop),
                upper: Some("lru:100".into()),
                bin: Some("4KiB".into()),
                out: out.clone(),
            }),
        })
        .unwrap();
        // A loop over 2000 blocks misses LRU(100) every time, and every re-access
        // has exactly 1999 distinct blocks in between: one bin at 1999 × 4 KiB.
        let csv = fs::read_to_string(out.join("reuse.csv")).unwrap();
        let nonzero: Vec<&str> = csv
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with('#') && !l.ends_with(",0"))
            .collect();
        assert_eq!(nonzero, vec!["8187904,8192000,38000"]);
        assert!(fs::metadata(out.join("reuse.png")).unwrap().len() > 1000);
        fs::remove_dir_all(out).unwrap();
    }
}
