//! `kura cachesim bench` (paper 004): how fast the policies replay a trace, in
//! requests per second of CPU and of wall time, optionally checked against the
//! reference policies the buffer manager runs, and the CPU-cache model's speed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use comfy_table::{presets::UTF8_FULL, Table};
use kura_cache::fast::DenseTrace;
use kura_cache::paper004::DEMOTE;
use kura_cache::sim::{default_threads, simulate_all_dense, simulate_dense, simulate_reference};
use kura_cache::trace::{binary, synthetic};
use kura_cache::{Level, Mode, SimConfig, DEFAULT_SEED, POLICY_NAMES};

use super::{say, thread_cpu_seconds};
use crate::error::{LabError, LabResult};
use crate::paper004::percent;

/// Replay-speed measurement: policies on a Zipf or binary trace.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Requests in the Zipf trace.
    pub requests: usize,
    /// Distinct blocks.
    pub blocks: u64,
    /// Zipf exponent α.
    pub alpha: f64,
    /// Cache size in blocks (each level for `demote`).
    pub capacity: usize,
    /// Single-level policies to time; `demote` = LRU over MRU, exclusive.
    pub policies: Vec<String>,
    /// Replay this binary trace (`kura cachesim convert`) instead of the Zipf trace.
    pub file: Option<PathBuf>,
    /// Also time the reference policies (the buffer manager's code) and check that
    /// they count exactly what the fast path counts.
    pub reference: bool,
    /// Replay all configurations at once on this many threads and report the
    /// aggregate rate (1: one at a time, per-core rates).
    pub threads: usize,
    /// Accesses per stream for the set-associative CPU-cache model's timing (0: skip).
    pub cpu_accesses: usize,
}

fn bench_config(policy: &str, capacity: usize) -> LabResult<SimConfig> {
    if policy.eq_ignore_ascii_case(DEMOTE) {
        Ok(SimConfig::two_level(
            Level::new("lru", capacity),
            Level::new("mru", capacity),
            Mode::Exclusive,
        ))
    } else if POLICY_NAMES.contains(&policy.to_ascii_lowercase().as_str()) {
        Ok(SimConfig::single(policy, capacity))
    } else {
        Err(LabError::Invalid(format!(
            "unknown policy '{policy}'; valid: {}, {DEMOTE}",
            POLICY_NAMES.join(", ")
        )))
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

/// Times each policy's replay and prints the rates to `out`.
pub fn run(args: &BenchConfig, out: &mut dyn Write) -> LabResult<()> {
    let configs = args
        .policies
        .iter()
        .map(|p| bench_config(p.trim(), args.capacity))
        .collect::<Result<Vec<_>, _>>()?;
    let mapped;
    let generated;
    let (trace, prepare) = match &args.file {
        Some(path) => {
            say!(out, "mapping binary trace {}", path.display());
            mapped = binary::open(path)?;
            let (trace, wall, _) = timed(|| mapped.dense());
            (trace?, wall)
        }
        None => {
            say!(
                out,
                "generating zipf(α={}) trace: {} requests over {} blocks",
                args.alpha,
                args.requests,
                args.blocks
            );
            generated = synthetic::zipf(args.blocks, args.alpha, args.requests, DEFAULT_SEED)?;
            let (trace, wall, _) = timed(|| DenseTrace::from_ids(&generated.requests));
            (trace, wall)
        }
    };
    if trace.is_empty() {
        return Err(LabError::Missing("the trace has no requests".into()));
    }
    say!(
            out,
        "{} requests, {} distinct ids; dense ids ready in {prepare:.2} s (once per trace, shared by all configurations)",
        trace.len(),
        trace.universe()
    );
    let rate = |s: f64| format!("{:.1}", trace.len() as f64 / s / 1e6);
    if args.threads > 1 {
        return bench_parallel(args, &configs, &trace, out);
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
        let stats = stats?;
        let mut row = vec![
            config.describe(),
            cpu.map_or("n/a".into(), rate),
            rate(secs),
            percent(stats.overall_hit_ratio()),
        ];
        if let Some(wide) = &wide {
            let (reference, ref_secs, ref_cpu) = timed(|| simulate_reference(config, wide, 0));
            let reference = reference?;
            let (fast_s, ref_s) = (cpu.unwrap_or(secs), ref_cpu.unwrap_or(ref_secs));
            row.extend([
                rate(ref_s),
                format!("{:.1}×", ref_s / fast_s),
                if reference == stats { "yes" } else { "NO" }.to_string(),
            ]);
            if reference != stats {
                say!(out, "{table}");
                return Err(LabError::Check(format!(
                    "{}: the fast path counted {stats:?}, the reference {reference:?}",
                    config.describe()
                )));
            }
        }
        table.add_row(row);
    }
    say!(out, "{table}");
    say!(
        out,
        "(CPU: this thread's run time, so other load on the machine does not count)"
    );
    if args.cpu_accesses > 0 {
        bench_cpu_model(args.cpu_accesses, out)?;
    }
    Ok(())
}

/// Accesses per stream timed with 3C classification on (it runs at tens of
/// millions of accesses per second at best, not hundreds).
const CLASSIFIED_ACCESSES: usize = 2_000_000;

/// Replay speed of the set-associative CPU-cache model (this machine's geometry):
/// L1d alone and the whole data hierarchy, on three address streams.
fn bench_cpu_model(n: usize, out: &mut dyn Write) -> LabResult<()> {
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
            say!(out, "no cache geometry from sysfs ({why}); using 32 KiB/8-way L1d, 512 KiB/8-way L2, 32 MiB/16-way L3");
            let level = |l, size, ways| Geometry::new(l, size, ways, 64).map(LevelConfig::lru);
            vec![
                level(1, 32 << 10, 8)?,
                level(2, 512 << 10, 8)?,
                level(3, 32 << 20, 16)?,
            ]
        }
    };
    let hierarchy = || Hierarchy::new(levels.clone());
    let describe = hierarchy()?;
    let names: Vec<String> = (0..describe.levels())
        .map(|i| describe.level(i).geometry().describe())
        .collect();
    say!(out, "CPU-cache model: {}", names.join("; "));
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
        let mut single = SetAssoc::new(l1, Replacement::Lru)?;
        let (misses, wall, cpu) = timed(|| single.replay(addrs, 0));
        table.add_row(vec![
            name.to_string(),
            "L1d alone".into(),
            cpu.map_or("n/a".into(), rate),
            rate(wall),
            percent(misses as f64 / n as f64),
        ]);
        let mut h = hierarchy()?;
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
        )?;
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
    say!(out, "{table}");
    Ok(())
}

/// All configurations at once on `args.threads` threads: the aggregate rate of a sweep.
fn bench_parallel(
    args: &BenchConfig,
    configs: &[SimConfig],
    trace: &DenseTrace<'_>,
    out: &mut dyn Write,
) -> LabResult<()> {
    let started = Instant::now();
    let results = simulate_all_dense(configs, trace, 0, args.threads, &|_| {})?;
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
    say!(out, "{table}");
    say!(
            out,
        "{} configurations × {} requests on {} threads in {secs:.2} s wall: {:.1} M requests/s in aggregate ({} cores available)",
        configs.len(),
        trace.len(),
        args.threads,
        total / secs / 1e6,
        default_threads()
    );
    Ok(())
}
