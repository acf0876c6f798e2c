//! `kura bench modes`: the selective queries (C), (A), (B), (D) in the three
//! execution modes (paper 003) — cold, over a buffer far smaller than the data, with
//! O_DIRECT reads — printing time, mean IOPS, mean CPU %, the speed-ups of
//! out-of-order over serial and static, and out-of-order IOPS as a share of the
//! disk's QD-64 ceiling; writes each run's timeline as CSV and PNG.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kura::tpch::run::query_text;
use kura::{Database, OpenOptions};
use kura_exec::runtime::{open_direct, shared_runtime, Timeline};

use crate::plot::{line_chart, Labels, Series};

/// Options of `kura bench modes`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// An existing database holding the TPC-H tables (e.g. loaded by `kura tpch load`).
    #[arg(long)]
    pub db: PathBuf,
    /// Buffer pool size of each cold run (far smaller than the data).
    #[arg(long, default_value = "64MiB", value_parser = crate::bench_iops::parse_size)]
    pub buffer: u64,
    /// Queries to run (a to d).
    #[arg(long, value_delimiter = ',', default_values_t = vec!["c".to_string(), "a".into(), "b".into(), "d".into()])]
    pub queries: Vec<String>,
    /// Directory for the timeline CSV and PNG files.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// Seconds of the QD-64 ceiling measurement.
    #[arg(long, default_value_t = 3.0)]
    pub ceiling_seconds: f64,
}

const MODES: [&str; 3] = ["serial", "static", "ooo"];

/// One cold run of one query in one mode.
struct Measured {
    secs: f64,
    rows: usize,
    iops: f64,
    cpu_pct: f64,
    timeline: Option<Timeline>,
}

/// CPU seconds this process has used (user + system), from /proc.
fn process_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is parenthesised and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // The kernel reports in USER_HZ, 100 on Linux ABIs.
    Some(ticks / 100.0)
}

fn run_cold(db_path: &Path, buffer: u64, id: &str, mode: &str) -> Result<Measured, String> {
    let sql = query_text(id).ok_or_else(|| format!("unknown query {id}"))?;
    // A fresh open per run: an empty buffer pool; O_DIRECT keeps the OS cache out.
    let opts = OpenOptions {
        buffer_bytes: Some(buffer),
        buffered_io: false,
        ..OpenOptions::default()
    };
    let db = Database::open(db_path, opts).map_err(|e| e.to_string())?;
    let mut session = db.session();
    session
        .execute(&format!("SET execution_mode = '{mode}'"))
        .map_err(|e| e.to_string())?;
    let rt = shared_runtime().map_err(|e| e.to_string())?;
    let reads0 = db.storage().buffer().stats().pages_read;
    let cpu0 = process_cpu_secs();
    rt.start_timeline();
    let started = Instant::now();
    let result = session
        .execute(sql)
        .map_err(|e| format!("query {id} in {mode} mode: {e}"));
    let secs = started.elapsed().as_secs_f64();
    let timeline = rt.stop_timeline();
    let result = result?;
    let reads = db.storage().buffer().stats().pages_read - reads0;
    let cpu_pct = match (cpu0, process_cpu_secs()) {
        (Some(a), Some(b)) if secs > 0.0 => (b - a) / secs * 100.0,
        _ => f64::NAN,
    };
    Ok(Measured {
        secs,
        rows: result.row_count(),
        iops: reads as f64 / secs.max(1e-9),
        cpu_pct,
        timeline,
    })
}

fn write_timeline(out: &Path, id: &str, mode: &str, timeline: &Timeline) -> Result<(), String> {
    let stem = out.join(format!("modes-{id}-{mode}"));
    timeline
        .write_csv(&stem.with_extension("csv"))
        .map_err(|e| e.to_string())?;
    let points = |f: &dyn Fn(&kura_exec::runtime::TimelineSample) -> f64| {
        timeline
            .samples
            .iter()
            .map(|s| (s.at.as_secs_f64(), f(s)))
            .collect::<Vec<_>>()
    };
    let title = format!("query ({}) in {mode} mode", id.to_uppercase());
    line_chart(
        &out.join(format!("modes-{id}-{mode}-iops.png")),
        &Labels {
            title: &title,
            x: "seconds",
            y: "reads per second",
        },
        &[Series {
            name: "IOPS".into(),
            points: points(&|s| s.iops),
        }],
        None,
    )?;
    line_chart(
        &out.join(format!("modes-{id}-{mode}-cpu.png")),
        &Labels {
            title: &title,
            x: "seconds",
            y: "CPU busy % (summed over workers)",
        },
        &[Series {
            name: "CPU %".into(),
            points: points(&|s| s.cpu_busy_pct),
        }],
        None,
    )
}

/// The disk's random 4 KiB read IOPS at queue depth 64, over the database file.
fn ceiling(db_path: &Path, seconds: f64) -> Result<f64, String> {
    let file = Arc::new(open_direct(db_path).map_err(|e| format!("{}: {e}", db_path.display()))?);
    let blocks = file.metadata().map_err(|e| e.to_string())?.len() / 4096;
    if blocks == 0 {
        return Err(format!("{} is empty", db_path.display()));
    }
    let rt = shared_runtime().map_err(|e| e.to_string())?;
    let r = crate::bench_iops::measure(
        rt,
        &file,
        blocks,
        4096,
        64,
        Duration::from_secs_f64(seconds),
    )?;
    Ok(r.iops)
}

/// Runs the benchmark and prints one table row per query and mode.
pub fn run(args: Args) -> Result<(), String> {
    if !args.db.exists() {
        return Err(format!("no database at {}", args.db.display()));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let rt = shared_runtime().map_err(|e| e.to_string())?;
    let ceiling = ceiling(&args.db, args.ceiling_seconds)?;
    println!(
        "kura bench modes: {} with a {} MiB buffer, O_DIRECT, {} workers ({}); QD-64 ceiling {ceiling:.0} IOPS",
        args.db.display(),
        args.buffer >> 20,
        rt.workers(),
        if rt.uses_io_uring() { "io_uring" } else { "synchronous reads" }
    );
    println!(
        "{:<6} {:<7} {:>9} {:>8} {:>11} {:>7}",
        "query", "mode", "time s", "rows", "mean IOPS", "CPU %"
    );
    for id in &args.queries {
        let mut times = Vec::new();
        for mode in MODES {
            let m = run_cold(&args.db, args.buffer, id, mode)?;
            println!(
                "({:<4} {:<7} {:>9.3} {:>8} {:>11.0} {:>7.1}",
                format!("{})", id.to_uppercase()),
                mode,
                m.secs,
                m.rows,
                m.iops,
                m.cpu_pct
            );
            if let Some(t) = &m.timeline {
                write_timeline(&args.out, id, mode, t)?;
            }
            times.push(m);
        }
        let (serial, stat, ooo) = (&times[0], &times[1], &times[2]);
        println!(
            "       ooo/serial {:.2}x   ooo/static {:.2}x   ooo IOPS = {:.0}% of the QD-64 ceiling",
            serial.secs / ooo.secs,
            stat.secs / ooo.secs,
            ooo.iops / ceiling * 100.0
        );
    }
    Ok(())
}
