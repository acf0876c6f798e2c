//! Cache-simulator studies (paper 004): block traces (synthetic, kura's page traces,
//! CSV, MSR-Cambridge, libCacheSim's oracleGeneral, kura's binary format) replayed
//! through kura-cache's replacement policies — the code kura's buffer manager runs —
//! over sweeps of cache sizes in one and two levels, reuse distances, and replay
//! speed. `kura cachesim` parses its arguments and calls these.

pub mod bench;
pub mod reuse;
pub mod sweep;

/// What `kura cachesim`'s options name: the two-level mode, the randomised policies'
/// seed and the replay threads by default.
pub use kura_cache::sim::default_threads;
pub use kura_cache::{Mode, DEFAULT_SEED};

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use kura_cache::fast::DenseTrace;
use kura_cache::trace::csv::{Columns, CsvSpec};
use kura_cache::trace::{binary, csv, oracle, synthetic, text};
use kura_cache::{Level, SimResult, Trace};

use crate::error::{At, LabError, LabResult};

/// Writes a line to a study's report (stdout for the command line).
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*)?
    };
}
pub(crate) use say;

/// The block size a trace has unless told; a binary trace's own block size wins.
pub const DEFAULT_BLOCK_SIZE: &str = "4KiB";

/// Progress of long work: units done, units in all.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Where a trace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A trace: synthetic (with its parameters) or read from a file.
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// Trace source.
    pub trace: TraceKind,
    /// Trace file (text, csv, msr, oracle, binary).
    pub file: Option<PathBuf>,
    /// Synthetic traces: distinct blocks (data size); the scan length for `scan`.
    pub blocks: u64,
    /// Synthetic traces: number of requests.
    pub requests: usize,
    /// Zipf exponent α.
    pub alpha: f64,
    /// `scan`: hot-set blocks.
    pub hot_blocks: u64,
    /// `scan`: share of requests that go to the hot set.
    pub hot_fraction: f64,
    /// Seed of synthetic traces and of RAND.
    pub seed: u64,
    /// Bytes one block id stands for (kura's page traces: its page size).
    pub block_size: String,
    /// `csv`: 1-based column holding the block/object id.
    pub csv_id_column: Option<usize>,
    /// `csv`: 1-based byte-offset column (with --csv-size-column).
    pub csv_offset_column: Option<usize>,
    /// `csv`: 1-based size-in-bytes column (with --csv-offset-column).
    pub csv_size_column: Option<usize>,
    /// `csv`/`msr`: field delimiter.
    pub csv_delimiter: char,
    /// `csv`/`msr`: leading lines to skip (a header).
    pub csv_skip_lines: usize,
    /// `csv`/`msr`: keep only rows where 1-based column COL equals VALUE, as
    /// `COL=VALUE` (e.g. `4=Read` for MSR reads).
    pub csv_filter: Option<String>,
}

impl Default for TraceSpec {
    /// The command line's defaults: a Zipf(0.9) trace of a million requests over
    /// 100,000 blocks of 4 KiB.
    fn default() -> Self {
        TraceSpec {
            trace: TraceKind::Zipf,
            file: None,
            blocks: 100_000,
            requests: 1_000_000,
            alpha: 0.9,
            hot_blocks: 1_000,
            hot_fraction: 0.5,
            seed: DEFAULT_SEED,
            block_size: DEFAULT_BLOCK_SIZE.into(),
            csv_id_column: None,
            csv_offset_column: None,
            csv_size_column: None,
            csv_delimiter: ',',
            csv_skip_lines: 0,
            csv_filter: None,
        }
    }
}

/// Bytes in `text` (`4096`, `64KiB`, `2GB` = 2 GiB: kura's one size reader).
pub fn parse_bytes(text: &str) -> LabResult<u64> {
    Ok(kura_common::size::parse_size(text)?)
}

/// A size in blocks: a bare integer is a block count, anything with a unit is bytes.
pub fn parse_blocks(text: &str, block_size: u64) -> LabResult<usize> {
    let blocks = if let Ok(n) = text.trim().parse::<u64>() {
        n
    } else {
        parse_bytes(text)? / block_size
    };
    if blocks == 0 {
        return Err(LabError::Invalid(format!(
            "cache size '{text}' is less than one block"
        )));
    }
    Ok(blocks as usize)
}

/// `POLICY:SIZE`.
pub fn parse_level(text: &str, block_size: u64) -> LabResult<Level> {
    let (policy, size) = text.split_once(':').ok_or_else(|| {
        LabError::Invalid(format!(
            "expected POLICY:SIZE (e.g. lru:64MiB), got '{text}'"
        ))
    })?;
    Ok(Level::new(policy.trim(), parse_blocks(size, block_size)?))
}

pub fn block_size(args: &TraceSpec) -> LabResult<u64> {
    match parse_bytes(&args.block_size)? {
        0 => Err(LabError::Invalid("block size must be positive".into())),
        b => Ok(b),
    }
}

/// Loads the trace and renumbers its blocks densely (hit ratios and distances do not
/// change; the policies' block index becomes a plain table).
pub fn load_trace(args: &TraceSpec) -> LabResult<Trace> {
    let mut trace = read_trace(args)?;
    trace.densify();
    Ok(trace)
}

pub fn read_trace(args: &TraceSpec) -> LabResult<Trace> {
    let bs = block_size(args)?;
    let file = || {
        args.file.clone().ok_or_else(|| {
            LabError::Invalid(format!("--trace {:?} needs --file", args.trace).to_lowercase())
        })
    };
    let mut trace = match args.trace {
        TraceKind::Uniform => synthetic::uniform(args.blocks, args.requests, args.seed)?,
        TraceKind::Zipf => synthetic::zipf(args.blocks, args.alpha, args.requests, args.seed)?,
        TraceKind::Loop => synthetic::sequential_loop(args.blocks, args.requests)?,
        TraceKind::Scan => synthetic::scan_with_hot_set(
            args.hot_blocks,
            args.blocks,
            args.hot_fraction,
            args.requests,
            args.seed,
        )?,
        TraceKind::Text => return Ok(text::read(&file()?, bs)?),
        TraceKind::Oracle => return Ok(oracle::read(&file()?, bs)?),
        TraceKind::Binary => {
            let path = file()?;
            let mapped = binary::open(&path)?;
            let ids = mapped.dense()?.to_block_ids();
            let mut trace = Trace::new(path.display().to_string(), ids, mapped.block_size);
            if args.block_size != DEFAULT_BLOCK_SIZE {
                trace.block_size = bs;
            }
            return Ok(trace);
        }
        TraceKind::Csv | TraceKind::Msr => {
            return Ok(csv::read(&file()?, &csv_spec(args, bs)?)?);
        }
    };
    trace.block_size = bs;
    Ok(trace)
}

pub fn csv_spec(args: &TraceSpec, block_size: u64) -> LabResult<CsvSpec> {
    let col = |c: usize, what: &str| {
        c.checked_sub(1)
            .ok_or_else(|| LabError::Invalid(format!("{what} columns are numbered from 1")))
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
        _ => return Err(LabError::Invalid(
            "csv traces need --csv-id-column, or both --csv-offset-column and --csv-size-column"
                .into(),
        )),
    };
    let filter = match &args.csv_filter {
        None => None,
        Some(f) => {
            let (c, v) = f.split_once('=').ok_or_else(|| {
                LabError::Invalid(format!("--csv-filter expects COL=VALUE, got '{f}'"))
            })?;
            let c: usize = c.trim().parse().map_err(|_| {
                LabError::Invalid(format!("--csv-filter column must be a number, got '{c}'"))
            })?;
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

pub fn create_dir(dir: &Path) -> LabResult<()> {
    fs::create_dir_all(dir).at(dir.display())
}

pub fn write_file(path: &Path, contents: &str) -> LabResult<()> {
    fs::write(path, contents).at(path.display())
}

pub const CSV_HEADER: &str = "trace,upper_policy,upper_blocks,lower_policy,lower_blocks,mode,requests,upper_hits,upper_hit_ratio,lower_requests,lower_hits,lower_hit_ratio,overall_hit_ratio";

pub fn csv_row(trace: &str, label: &str, r: &SimResult) -> String {
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

/// Writes `spec`'s trace in kura's binary format (dense ids, read by mmap) to `path`.
pub fn convert(spec: &TraceSpec, path: &Path, out: &mut dyn Write) -> LabResult<()> {
    let trace = load_trace(spec)?;
    let dense = DenseTrace::from_ids(&trace.requests);
    binary::write(path, &dense, trace.block_size)?;
    say!(
        out,
        "wrote {}: {} requests over {} distinct blocks of {} bytes",
        path.display(),
        dense.len(),
        dense.universe(),
        trace.block_size
    );
    Ok(())
}

/// CPU time of the calling thread: `/proc/thread-self/schedstat` (nanoseconds on
/// the CPU), else `/proc/thread-self/stat` (clock ticks of 1/100 s); `None` off Linux.
pub fn thread_cpu_seconds() -> Option<f64> {
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
    use kura_cache::Mode;

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
    fn reuse_bins_are_round() {
        assert_eq!(reuse::round_up_1_2_5(7_481_000), 10_000_000);
        assert_eq!(reuse::round_up_1_2_5(1_500_000), 2_000_000);
        assert_eq!(reuse::round_up_1_2_5(2_000_000), 2_000_000);
        assert_eq!(reuse::round_up_1_2_5(4_096), 5_000);
        assert_eq!(reuse::round_up_1_2_5(0), 1);
        assert_eq!(reuse::round_up_1_2_5(u64::MAX), u64::MAX);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(crate::paper004::human_bytes(2_000_000_000), "2 GB");
        assert_eq!(crate::paper004::human_bytes(4096), "4.10 KB");
        assert_eq!(crate::paper004::human_bytes(12), "12 B");
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kura-cachesim-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn trace_args(kind: TraceKind) -> TraceSpec {
        TraceSpec {
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
        sweep::run(
            &sweep::SweepConfig {
                trace: trace_args(TraceKind::Uniform),
                policies: vec!["lru".into(), "demote".into()],
                sizes: vec!["200".into(), "400".into()],
                upper: Some("lru:400".into()),
                mode: Mode::Inclusive,
                warmup: 10_000,
                threads: Some(2),
                out: out.clone(),
            },
            &mut std::io::sink(),
            &|_, _| {},
        )
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
        let sweep = |trace: TraceSpec, dir: &str| {
            sweep::run(
                &sweep::SweepConfig {
                    trace,
                    policies: vec!["lru".into(), "arc".into(), "sieve".into()],
                    sizes: vec!["100".into(), "300".into()],
                    upper: None,
                    mode: Mode::Inclusive,
                    warmup: 1_000,
                    threads: Some(2),
                    out: out.join(dir),
                },
                &mut std::io::sink(),
                &|_, _| {},
            )
            .unwrap();
            let csv = fs::read_to_string(out.join(dir).join("results.csv")).unwrap();
            // everything but the trace-name column
            csv.lines()
                .map(|l| l.split(',').skip(1).collect::<Vec<_>>().join(","))
                .collect::<Vec<_>>()
        };
        let direct = sweep(trace_args(TraceKind::Zipf), "direct");
        let file = out.join("t.kbt");
        convert(&trace_args(TraceKind::Zipf), &file, &mut std::io::sink()).unwrap();
        let mut binary = trace_args(TraceKind::Binary);
        binary.file = Some(file.clone());
        assert_eq!(sweep(binary.clone(), "mapped"), direct);
        // the other commands read it too
        assert_eq!(read_trace(&binary).unwrap().len(), 40_000);
        fs::write(&file, b"not a trace").unwrap();
        let err = sweep::run(
            &sweep::SweepConfig {
                trace: binary,
                policies: vec!["lru".into()],
                sizes: vec!["10".into()],
                upper: None,
                mode: Mode::Inclusive,
                warmup: 0,
                threads: None,
                out: out.join("bad"),
            },
            &mut std::io::sink(),
            &|_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not a kura binary trace"), "{err}");
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn bench_runs_small_with_reference_threads_and_the_cpu_model() {
        let args = |threads, reference, cpu_accesses| bench::BenchConfig {
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
        bench::run(&args(1, true, 10_000), &mut std::io::sink()).unwrap();
        bench::run(&args(2, false, 0), &mut std::io::sink()).unwrap();
        let mut bad = args(1, false, 0);
        bad.policies = vec!["nope".into()];
        assert!(bench::run(&bad, &mut std::io::sink())
            .unwrap_err()
            .to_string()
            .contains("unknown policy 'nope'"));
    }

    #[test]
    fn text_traces_report_bad_lines_with_file_and_line() {
        let dir = temp_dir("text");
        let path = dir.join("pages.txt");
        fs::write(&path, "# kura page trace\n1\n2\nx\n").unwrap();
        let mut args = trace_args(TraceKind::Text);
        args.file = Some(path.clone());
        let err = load_trace(&args).unwrap_err().to_string();
        assert!(
            err.ends_with("pages.txt:4: expected a block id (an unsigned integer), found 'x'"),
            "{err}"
        );
        args.file = None;
        assert!(load_trace(&args)
            .unwrap_err()
            .to_string()
            .contains("--file"));
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
        assert!(load_trace(&args)
            .unwrap_err()
            .to_string()
            .contains("--csv-id-column"));
        args.csv_id_column = Some(5);
        assert_eq!(read_trace(&args).unwrap().requests, vec![8192]);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reuse_writes_histogram_of_the_lower_stream() {
        let out = temp_dir("reuse");
        reuse::run(
            &reuse::ReuseConfig {
                trace: trace_args(TraceKind::Loop),
                upper: Some("lru:100".into()),
                bin: Some("4KiB".into()),
                out: out.clone(),
            },
            &mut std::io::sink(),
        )
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
