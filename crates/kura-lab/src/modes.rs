//! Paper 003's figures 2 and 3 and its mode table (`kura bench modes`): the selective
//! queries (C), (A), (B), (D) in the paper's three execution modes plus kura's serial
//! mode with read-ahead — cold, over a buffer far smaller than the data, with
//! O_DIRECT reads — printing time, mean IOPS, mean CPU %, read requests, the
//! speed-ups of out-of-order over each of the others, and out-of-order IOPS as a
//! share of the disk's I/O ceiling (crate::ceiling: the best median of a repeated
//! queue-depth sweep); writes each run's timeline as CSV and PNG.
//!
//! "serial" is the paper's serial: one thread, synchronous, one page per read
//! request (`execution_mode = serial` with `prefetch = off`). kura's serial mode
//! with `prefetch = on` reads runs of consecutive pages with one `pread` each and
//! beats a one-page-at-a-time disk; it is shown beside it as "serial + read-ahead",
//! so the speed-up of out-of-order is reported against the paper's baseline and
//! against the faster one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kura::tpch::run::session_query_text;
use kura::{Database, OpenOptions};
use kura_exec::runtime::{shared_runtime, Timeline};

use crate::ceiling::{self, Ceiling, DirectProbe, Plan};
use crate::error::{At, LabError, LabResult};
use crate::plot::{line_chart, line_chart_with, HLine, Labels, Series};

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// An existing database holding the TPC-H tables.
    pub db: PathBuf,
    /// Buffer pool size of each cold run (far smaller than the data).
    pub buffer: u64,
    /// Queries to run (a to d, or the variants va, vc, vd at the paper's selectivity).
    pub queries: Vec<String>,
    /// Directory for the timeline CSV and PNG files.
    pub out: PathBuf,
    /// Sequential read-ahead (`SET prefetch`, on or off) of the static and
    /// out-of-order runs; the two serial lines set it themselves (off and on).
    pub prefetch: String,
    /// Seconds of each ceiling measurement (one depth, one repetition).
    pub ceiling_seconds: f64,
    /// Repetitions of the ceiling sweep (median and spread reported).
    pub ceiling_reps: usize,
    /// Count performance events around each run (kura-profile's `Profiler`) and
    /// print them under its row: hardware events where the CPU has a PMU, the
    /// kernel's software events (CPU time, page faults, context switches) where not.
    pub counters: bool,
}

/// One line of the figures: a name and the session settings it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeSpec {
    /// The name in tables, legends and CSV rows.
    pub name: &'static str,
    /// The name in file names (`modes-Q-FILE.csv`).
    pub file: &'static str,
    /// `SET execution_mode` of the run.
    pub execution_mode: &'static str,
    /// `SET prefetch` of the run; `None` takes [`Config::prefetch`].
    pub prefetch: Option<&'static str>,
}

/// The lines, in the order of the paper's figures, with kura's read-ahead serial
/// beside the paper's.
pub const MODE_SPECS: [ModeSpec; 4] = [
    ModeSpec {
        name: "serial",
        file: "serial",
        execution_mode: "serial",
        prefetch: Some("off"),
    },
    ModeSpec {
        name: "serial + read-ahead",
        file: "serial-read-ahead",
        execution_mode: "serial",
        prefetch: Some("on"),
    },
    ModeSpec {
        name: "static",
        file: "static",
        execution_mode: "static",
        prefetch: None,
    },
    ModeSpec {
        name: "ooo",
        file: "ooo",
        execution_mode: "ooo",
        prefetch: None,
    },
];

/// The lines' names, in [`MODE_SPECS`]' order.
pub const MODES: [&str; 4] = [
    MODE_SPECS[0].name,
    MODE_SPECS[1].name,
    MODE_SPECS[2].name,
    MODE_SPECS[3].name,
];

/// The paper's serial mode: synchronous, one page per read request.
pub const SERIAL: &str = MODE_SPECS[0].name;
/// kura's serial mode reading ahead (runs of pages with one request).
pub const SERIAL_READ_AHEAD: &str = MODE_SPECS[1].name;

/// The line called `name`.
pub fn mode_spec(name: &str) -> Option<&'static ModeSpec> {
    MODE_SPECS.iter().find(|m| m.name == name)
}

/// What one cold run measured (one row of the printed table).
#[derive(Debug, Clone)]
pub struct ModeRun {
    /// Query id as given (c, a, b, d, va, vc, vd).
    pub query: String,
    pub mode: String,
    pub secs: f64,
    pub rows: usize,
    /// Mean page reads per second over the run.
    pub iops: f64,
    /// Mean CPU busy % (100 = one core).
    pub cpu_pct: f64,
    /// The most read requests in flight at once (the buffer manager's count:
    /// synchronous and asynchronous reads alike).
    pub peak_in_flight: u64,
    /// Pages read ahead (the buffer manager's read-ahead misses, synchronous
    /// or asynchronous).
    pub read_ahead: u64,
    /// Pages read from disk.
    pub pages_read: u64,
    /// Read requests that read them (one `pread` of a run of pages is one).
    pub read_requests: u64,
}

impl ModeRun {
    /// Pages per read request (1.0 when every request read one page).
    pub fn pages_per_request(&self) -> f64 {
        self.pages_read as f64 / self.read_requests.max(1) as f64
    }
}

/// Everything the study measured: the disk's ceiling and every run, for reports
/// built on top of it (paper 003's figure set).
#[derive(Debug, Clone)]
pub struct Report {
    pub ceiling: Ceiling,
    pub runs: Vec<ModeRun>,
    /// Worker threads of the out-of-order runtime.
    pub workers: usize,
    pub io_uring: bool,
    /// Bytes per page (the unit of every read).
    pub page: usize,
}

impl Report {
    /// The run of `query` in `mode`, if measured.
    pub fn run_of(&self, query: &str, mode: &str) -> Option<&ModeRun> {
        self.runs
            .iter()
            .find(|r| r.query == query && r.mode == mode)
    }
}

/// A query's name as the paper and the reports write it: C, vC.
pub fn label(id: &str) -> String {
    match id.strip_prefix('v') {
        Some(rest) => format!("v{}", rest.to_uppercase()),
        None => id.to_uppercase(),
    }
}

/// One cold run of one query in one mode.
struct Measured {
    secs: f64,
    rows: usize,
    iops: f64,
    cpu_pct: f64,
    peak_in_flight: u64,
    read_ahead: u64,
    pages_read: u64,
    read_requests: u64,
    timeline: Option<Timeline>,
    /// The counters of the run, as one line (with `counters`).
    counters: Option<String>,
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

/// One cold run of query `id` (a to d, a variant, or a TPC-H query number) as
/// the line `mode` (a [`ModeSpec`]'s name) runs it, without the ceiling sweep,
/// timelines or charts: what the tests check the lines' read pattern with.
pub fn cold_run(args: &Config, id: &str, mode: &str) -> LabResult<ModeRun> {
    let m = run_cold(args, id, mode, Duration::from_millis(50))?;
    Ok(m.row(id, mode))
}

impl Measured {
    fn row(&self, id: &str, mode: &str) -> ModeRun {
        ModeRun {
            query: id.to_string(),
            mode: mode.to_string(),
            secs: self.secs,
            rows: self.rows,
            iops: self.iops,
            cpu_pct: self.cpu_pct,
            peak_in_flight: self.peak_in_flight,
            read_ahead: self.read_ahead,
            pages_read: self.pages_read,
            read_requests: self.read_requests,
        }
    }
}

/// One cold run of query `id` as the line `mode` (a [`ModeSpec`]'s name) runs it.
fn run_cold(args: &Config, id: &str, mode: &str, interval: Duration) -> LabResult<Measured> {
    let spec =
        mode_spec(mode).ok_or_else(|| LabError::Invalid(format!("unknown mode line {mode:?}")))?;
    let (db_path, buffer) = (&args.db, args.buffer);
    // A fresh open per run: an empty buffer pool; O_DIRECT keeps the OS cache out.
    let opts = OpenOptions {
        buffer_bytes: Some(buffer),
        buffered_io: false,
        ..OpenOptions::default()
    };
    let db = Database::open(db_path, opts)?;
    let mut session = db.session();
    let sql = session_query_text(&mut session, id)?;
    let sql: &str = &sql;
    session.execute(&format!("SET execution_mode = '{}'", spec.execution_mode))?;
    session.execute(&format!(
        "SET prefetch = {}",
        spec.prefetch.unwrap_or(&args.prefetch)
    ))?;
    let rt = shared_runtime()?;
    let bm = db.storage().buffer();
    let io0 = bm.stats();
    let cpu0 = process_cpu_secs();
    bm.take_peak_reads_in_flight();
    rt.start_timeline_every(interval);
    let profiler = match args.counters {
        true => Some(kura_profile::Profiler::start_default()?),
        false => None,
    };
    let started = Instant::now();
    let result = session
        .execute(sql)
        .at(format_args!("query {id} in {mode} mode"));
    let secs = started.elapsed().as_secs_f64();
    let counters = match profiler {
        Some(p) => Some(kura_profile::report::counts_line(&p.stop()?.counts)),
        None => None,
    };
    let timeline = rt.stop_timeline();
    let peak_in_flight = bm.take_peak_reads_in_flight();
    let io = bm.stats().since(&io0);
    let result = result?;
    let reads = io.pages_read;
    let cpu_pct = match (cpu0, process_cpu_secs()) {
        (Some(a), Some(b)) if secs > 0.0 => (b - a) / secs * 100.0,
        _ => f64::NAN,
    };
    Ok(Measured {
        secs,
        rows: result.row_count(),
        iops: reads as f64 / secs.max(1e-9),
        cpu_pct,
        peak_in_flight,
        read_ahead: io.prefetch_reads,
        pages_read: io.pages_read,
        read_requests: io.read_requests,
        timeline,
        counters,
    })
}

/// Samples in the IOPS charts' moving average.
const SMOOTHING: usize = 5;

/// Centred moving average of `points` over `window` samples (fewer at the ends).
fn moving_average(points: &[(f64, f64)], window: usize) -> Vec<(f64, f64)> {
    let half = window / 2;
    (0..points.len())
        .map(|i| {
            let lo = i.saturating_sub(half);
            let hi = (i + half + 1).min(points.len());
            let mean = points[lo..hi].iter().map(|p| p.1).sum::<f64>() / (hi - lo) as f64;
            (points[i].0, mean)
        })
        .collect()
}

/// Timeline samples per run the sampling interval aims at (so sub-second and
/// minute-long runs both show their shape).
const SAMPLES_PER_RUN: f64 = 40.0;

/// Writes each mode's timeline as CSV, and one CPU % and one IOPS chart per query
/// with a line per mode over time (the layout of paper 003's figures 2 and 3, with
/// the read-ahead serial as a fourth line).
fn write_timelines(
    out: &Path,
    id: &str,
    runs: &[(&str, &Timeline)],
    ceiling: &Ceiling,
) -> LabResult<()> {
    for (mode, timeline) in runs {
        let file = mode_spec(mode).map_or(*mode, |m| m.file);
        let path = out.join(format!("modes-{id}-{file}.csv"));
        timeline.write_csv(&path).at(path.display())?;
    }
    // A sub-second run is drawn in milliseconds: seconds ticks would need more
    // decimals than the axis prints and repeat one label.
    let longest = runs
        .iter()
        .filter_map(|(_, t)| t.samples.last().map(|s| s.at.as_secs_f64()))
        .fold(0.0f64, f64::max);
    let (x_scale, x_desc) = if longest < 2.0 {
        (1e3, "milliseconds")
    } else {
        (1.0, "seconds")
    };
    let series = |f: &dyn Fn(&kura_exec::runtime::TimelineSample) -> f64| {
        runs.iter()
            .map(|(mode, t)| {
                Series::line(
                    mode.to_string(),
                    t.samples
                        .iter()
                        .map(|s| (s.at.as_secs_f64() * x_scale, f(s)))
                        .collect(),
                )
            })
            .collect::<Vec<_>>()
    };
    // Both axes start at zero, as in the paper: a level, not a wiggle, is the point.
    let from_zero = |series: &[Series]| {
        let top = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        0.0..(top * 1.08).max(1.0)
    };
    let upper = label(id);
    // Raw samples zig-zag (a 2 ms sample holds 0 or 100 reads): drawn faint behind a
    // centred moving average over a stated window.
    let raw = series(&|s| s.iops);
    // The sampling interval, read off one run's first two samples (a run too short
    // for two samples has no average to describe).
    let interval = runs.iter().find_map(|(_, t)| {
        Some(t.samples.get(1)?.at.as_secs_f64() - t.samples.first()?.at.as_secs_f64())
    });
    let average = match interval {
        Some(i) => format!(
            " (moving average, {} ms)",
            (i * SMOOTHING as f64 * 1e3).round()
        ),
        None => String::new(),
    };
    let smoothed = |raw: &[Series]| -> Vec<Series> {
        let mut out: Vec<Series> = raw
            .iter()
            .map(|s| {
                Series::line(
                    format!("{}{average}", s.name),
                    moving_average(&s.points, SMOOTHING),
                )
            })
            .collect();
        out.extend(
            raw.iter()
                .enumerate()
                .map(|(i, s)| Series::faint(i, s.points.clone())),
        );
        out
    };
    let iops = smoothed(&raw);
    let (lo, hi) = ceiling.spread();
    let mut hlines = vec![HLine {
        label: format!(
            "ceiling: QD {} median {:.0} (runs {:.0}–{:.0})",
            ceiling.at_best().depth,
            ceiling.iops(),
            lo,
            hi
        ),
        y: ceiling.iops(),
        band: Some((lo, hi)),
    }];
    // The paper's speed-up limit is the QD-64 / QD-1 ratio: QD 64 gets its own line
    // when the best median lies at another depth.
    if ceiling.at_best().depth != 64 {
        if let Some(qd64) = ceiling.sweep.iter().find(|d| d.depth == 64) {
            hlines.push(HLine {
                label: format!("QD 64 median {:.0}", qd64.median()),
                y: qd64.median(),
                band: None,
            });
        }
    }
    if let Some(qd1) = ceiling.sweep.iter().find(|d| d.depth == 1) {
        hlines.push(HLine {
            label: format!("QD 1 median {:.0}", qd1.median()),
            y: qd1.median(),
            band: Some((qd1.min(), qd1.max())),
        });
    }
    // The axis fits the smoothed lines and the ceiling: a single raw 2 ms spike
    // would otherwise flatten everything else (raw samples above it are cut off).
    let top = iops
        .iter()
        .filter(|s| !matches!(s.style, crate::plot::Style::Faint(_)))
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(hi, f64::max);
    line_chart_with(
        &out.join(format!("modes-{id}-iops.png")),
        &Labels {
            title: &format!("TPC-H query ({upper}), cold: reads per second by execution mode"),
            x: x_desc,
            y: "page reads per second",
        },
        &iops,
        &hlines,
        Some(0.0..top * 1.08),
    )?;
    let cpu_raw = series(&|s| s.cpu_busy_pct);
    let cpu = smoothed(&cpu_raw);
    line_chart(
        &out.join(format!("modes-{id}-cpu.png")),
        &Labels {
            title: &format!("TPC-H query ({upper}), cold: CPU busy % by execution mode"),
            x: x_desc,
            y: "CPU busy % (100 = one core)",
        },
        &cpu,
        Some(from_zero(&cpu[..cpu_raw.len()])),
    )
}

/// The database's page size (the unit of every read the queries do).
fn page_size(db_path: &Path) -> LabResult<usize> {
    let db = Database::open(db_path, OpenOptions::default())?;
    let size = db.storage().buffer().page_size();
    Ok(size)
}

/// Runs the benchmark and prints one table row per query and mode.
/// Prints the queue-depth sweep: median and spread per depth, the ceiling marked.
fn write_ceiling(out: &mut dyn Write, c: &Ceiling) -> LabResult<()> {
    writeln!(
        out,
        "{:>6} {:>12} {:>12} {:>12}",
        "QD", "median IOPS", "min", "max"
    )?;
    for (i, d) in c.sweep.iter().enumerate() {
        writeln!(
            out,
            "{:>6} {:>12.0} {:>12.0} {:>12.0}{}",
            d.depth,
            d.median(),
            d.min(),
            d.max(),
            if i == c.best { "   <- ceiling" } else { "" }
        )?;
    }
    Ok(())
}

/// Runs the benchmark and writes one table row per query and mode to `out`;
/// `progress(done, total)` follows the ceiling measurements. Returns what it measured.
pub fn run(
    args: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<Report> {
    if !args.db.exists() {
        return Err(LabError::Missing(format!(
            "no database at {0}: load one first (kura --db {0} tpch load --sf 1 --indexes)",
            args.db.display()
        )));
    }
    std::fs::create_dir_all(&args.out).at(args.out.display())?;
    let rt = shared_runtime()?;
    let page = page_size(&args.db)?;
    writeln!(
        out,
        "kura bench modes: {} with a {} MiB buffer, O_DIRECT, {} workers ({}), prefetch {} in static and ooo",
        args.db.display(),
        args.buffer >> 20,
        rt.workers(),
        if rt.uses_io_uring() {
            "io_uring"
        } else {
            "synchronous reads"
        },
        args.prefetch
    )?;
    let plan = Plan::standard(args.ceiling_seconds, args.ceiling_reps);
    writeln!(
        out,
        "I/O ceiling: random {} KiB page reads over {} with O_DIRECT, {:.1} s warm-up, then QD {:?} × {} runs of {:.1} s (interleaved)",
        page >> 10,
        args.db.display(),
        plan.warmup.as_secs_f64(),
        plan.depths,
        plan.reps,
        plan.duration.as_secs_f64()
    )?;
    let probe = DirectProbe::open(rt, &args.db, page)?;
    let ceiling = ceiling::measure(&probe, &plan, progress)?;
    write_ceiling(out, &ceiling)?;
    let csv = args.out.join("modes-ceiling.csv");
    std::fs::write(&csv, ceiling.csv()).at(csv.display())?;
    writeln!(
        out,
        "serial is the paper's (synchronous, one page per read: prefetch off); \
         serial + read-ahead is kura's serial with prefetch on (runs of pages per read)"
    )?;
    writeln!(
        out,
        "{:<6} {:<19} {:>9} {:>8} {:>11} {:>7} {:>8} {:>9} {:>10}",
        "query",
        "mode",
        "time s",
        "rows",
        "mean IOPS",
        "CPU %",
        "peak QD",
        "pages/req",
        "read-ahead"
    )?;
    let mut measured = Vec::new();
    for id in &args.queries {
        // Out-of-order runs first: it is the shortest, and its time sets one
        // sampling interval for all the lines (comparable curves, and enough
        // samples for a sub-second run).
        let ooo = run_cold(args, id, "ooo", Duration::from_millis(5))?;
        let interval = Duration::from_secs_f64(ooo.secs / SAMPLES_PER_RUN)
            .clamp(Duration::from_millis(2), Duration::from_millis(500));
        let mut times = Vec::new();
        for mode in MODES {
            times.push(run_cold(args, id, mode, interval)?);
        }
        for (mode, m) in MODES.iter().zip(&times) {
            let row = m.row(id, mode);
            writeln!(
                out,
                "({:<4} {:<19} {:>9.3} {:>8} {:>11.0} {:>7.1} {:>8} {:>9.2} {:>10}",
                format!("{})", label(id)),
                mode,
                row.secs,
                row.rows,
                row.iops,
                row.cpu_pct,
                row.peak_in_flight,
                row.pages_per_request(),
                row.read_ahead
            )?;
            if let Some(c) = &m.counters {
                writeln!(out, "       counters: {c}")?;
            }
            measured.push(row);
        }
        let runs: Vec<(&str, &Timeline)> = MODES
            .iter()
            .zip(&times)
            .filter_map(|(mode, m)| Some((*mode, m.timeline.as_ref()?)))
            .collect();
        write_timelines(&args.out, id, &runs, &ceiling)?;
        let (serial, ahead, stat, ooo) = (&times[0], &times[1], &times[2], &times[3]);
        writeln!(
            out,
            "       ooo/serial {:.2}x   ooo/(serial + read-ahead) {:.2}x   ooo/static {:.2}x   ooo IOPS = {:.0}% of the QD-{} ceiling (its runs reach up to {:.0}%)",
            serial.secs / ooo.secs,
            ahead.secs / ooo.secs,
            stat.secs / ooo.secs,
            ceiling.percent(ooo.iops),
            ceiling.at_best().depth,
            ceiling.percent_limit()
        )?;
    }
    Ok(Report {
        ceiling,
        runs: measured,
        workers: rt.workers(),
        io_uring: rt.uses_io_uring(),
        page,
    })
}
