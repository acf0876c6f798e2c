//! Paper 003's figures 2–5 in one command (`kura bench paper003`): (C) in the three
//! execution modes — the paper's serial (synchronous, one page per read), static
//! and out-of-order — and kura's serial with read-ahead as a fourth line, with CPU %
//! and IOPS over time against the disk's ceiling (figures 2–3, through [`crate::modes`]), (A)–(D) and the variants against PostgreSQL and
//! DuckDB cold and warm (figure 4) and TPC-H Q1–Q10 and Q19 against PostgreSQL
//! (figure 5) through the `bench/run` suite, with log-scale charts, one CSV and one
//! Markdown table of every number.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kura::{Database, OpenOptions};

use crate::error::{At, LabError, LabResult};
use crate::modes::{self, ModeRun, MODES, SERIAL, SERIAL_READ_AHEAD};
use crate::plot::{grouped_bar_chart_log_y, BarGroup, Labels};

/// Figure 4's queries: the originals, then the variants at the paper's selectivity.
pub const FIG4_QUERIES: [&str; 7] = ["A", "B", "C", "D", "vA", "vC", "vD"];
/// Figure 5's queries (the suite's ids).
pub const FIG5_QUERIES: [&str; 11] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q19",
];
/// Peers of figure 4 (figure 5 compares with PostgreSQL only, as the paper).
pub const PEERS: [&str; 2] = ["postgres", "duckdb"];
/// Columns of paper003.csv.
pub const CSV_COLUMNS: [&str; 9] = [
    "figure",
    "query",
    "setting",
    "system",
    "seconds",
    "status",
    "mean_iops",
    "cpu_pct",
    "rows",
];

/// Shortest run whose mean CPU % the Markdown table shows.
const CPU_MIN_SECS: f64 = 0.1;

/// How the peers' figures are made.
#[derive(Debug, Clone)]
pub enum Peers {
    /// Run the benchmark suite: its `bench/run` script and the kura binary it should
    /// query (so the suite builds nothing).
    Suite { script: PathBuf, kura: PathBuf },
    /// Left out, for the reason given (printed as one line in the report).
    Skip(String),
}

/// The command's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    pub sf: f64,
    /// Directory for the CSVs, charts, paper003.md and the suite's own report.
    pub out: PathBuf,
    /// Measured runs per query and mode in the suite (median reported).
    pub reps: usize,
    /// kura's buffer in every cold run (figures 2–3 and the suite's cold runs), and
    /// PostgreSQL's cold shared_buffers, so both start from the same small cache.
    pub buffer: u64,
    /// A TPC-H database with paper 003's indexes for figures 2–3 (`None`: built in
    /// `out` at `sf` and removed afterwards).
    pub db: Option<PathBuf>,
    /// Queries of the timeline figures (the paper's is (C); vC is (C) at its selectivity).
    pub timeline_queries: Vec<String>,
    /// Seconds of each ceiling measurement and repetitions of the sweep.
    pub ceiling_seconds: f64,
    pub ceiling_reps: usize,
    /// Seconds one suite run may take.
    pub timeout: f64,
    /// Also build the covering indexes of (A)–(D) and their variants (kura's
    /// `covering.sql`), in kura's database and in every peer that has `INCLUDE`
    /// (PostgreSQL), so index-only plans are measured against the same indexes.
    pub covering: bool,
    pub peers: Peers,
}

impl Config {
    /// The full run at `sf`: 3 repetitions, a 64 MiB cold buffer, the ceiling swept
    /// 5 times 1 s per depth.
    pub fn new(sf: f64, out: PathBuf, peers: Peers) -> Self {
        Config {
            sf,
            out,
            reps: 3,
            buffer: 64 << 20,
            db: None,
            // (C) as the paper's text, and its variant at the paper's selectivity: below
            // SF 1 (C) picks no customer at all, above SF 100 far too many.
            timeline_queries: vec!["c".into(), "vc".into()],
            ceiling_seconds: 1.0,
            ceiling_reps: 5,
            timeout: 600.0,
            covering: false,
            peers,
        }
    }

    /// A few minutes' run: SF 0.01, one repetition, a short ceiling sweep.
    pub fn quick(out: PathBuf, peers: Peers) -> Self {
        Config {
            sf: 0.01,
            reps: 1,
            ceiling_seconds: 0.2,
            ceiling_reps: 2,
            timeout: 120.0,
            ..Config::new(0.01, out, peers)
        }
    }
}

/// One system's result for one query in one mode (warm/cold), from the suite's CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRow {
    pub system: String,
    pub mode: String,
    pub query: String,
    /// ok | error | timeout | not run; an answer found wrong is "wrong".
    pub status: String,
    /// The median in seconds, when the query ran and its answer was right.
    pub seconds: Option<f64>,
}

/// What the command made.
#[derive(Debug)]
pub struct Summary {
    pub modes: modes::Report,
    pub peers: Vec<PeerRow>,
    /// One line each on what could not be run (peers, systems).
    pub notes: Vec<String>,
    pub files: Vec<PathBuf>,
}

fn say(out: &mut dyn Write, line: &str) -> LabResult<()> {
    Ok(writeln!(out, "{line}")?)
}

/// Scale factor as the suite names it (0.01, 1, 10).
fn sf_name(sf: f64) -> String {
    format!("{sf}")
}

/// Opens `db`, building TPC-H at `sf` with paper 003's indexes (and the covering
/// ones when `covering`) when it does not exist.
fn ensure_database(db: &Path, sf: f64, covering: bool, out: &mut dyn Write) -> LabResult<()> {
    if db.exists() {
        return Ok(());
    }
    let which = if covering {
        "paper 003's and the covering indexes"
    } else {
        "paper 003's indexes"
    };
    say(
        out,
        &format!(
            "building {} (TPC-H SF {} with {which})...",
            db.display(),
            sf_name(sf)
        ),
    )?;
    let started = Instant::now();
    let database = Database::open(db, OpenOptions::default())?;
    let mut session = database.session();
    kura::tpch::load(
        &mut session,
        kura::tpch::load::Source::Generate(sf),
        &|_, _| {},
    )?;
    kura::tpch::load::create_indexes(&mut session, &|_| {})?;
    if covering {
        kura::tpch::load::create_covering_indexes(&mut session, &|_| {})?;
    }
    say(
        out,
        &format!("  built in {:.1} s", started.elapsed().as_secs_f64()),
    )
}

/// Runs everything, printing progress and tables to `out`; `progress(done, total)`
/// follows the ceiling measurements.
pub fn run(
    cfg: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<Summary> {
    std::fs::create_dir_all(&cfg.out).at(cfg.out.display())?;
    let (db, scratch_db) = match &cfg.db {
        Some(db) => (db.clone(), false),
        None => (
            cfg.out.join(format!("paper003-sf{}.db", sf_name(cfg.sf))),
            true,
        ),
    };
    let scratch_db = scratch_db && !db.exists();
    say(
        out,
        &format!(
            "== figures 2-3: ({}) in serial (the paper's: one page per read), serial + read-ahead, static and out-of-order mode, cold, {} MiB buffer",
            cfg.timeline_queries
                .iter()
                .map(|q| modes::label(q))
                .collect::<Vec<_>>()
                .join(", "),
            cfg.buffer >> 20
        ),
    )?;
    let measured = ensure_database(&db, cfg.sf, cfg.covering, out).and_then(|_| {
        modes::run(
            &modes::Config {
                db: db.clone(),
                buffer: cfg.buffer,
                queries: cfg.timeline_queries.clone(),
                out: cfg.out.clone(),
                prefetch: "on".into(),
                ceiling_seconds: cfg.ceiling_seconds,
                ceiling_reps: cfg.ceiling_reps,
                counters: false,
            },
            out,
            progress,
        )
    });
    if scratch_db {
        // The database is scratch: rebuilt by the next run (give --db to keep one).
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(db.with_extension("db.tmp"));
    }
    let measured = measured?;
    let mut files = rename_timeline_charts(&cfg.out, &cfg.timeline_queries)?;

    let mut notes = Vec::new();
    let peers = match &cfg.peers {
        Peers::Skip(reason) => {
            notes.push(format!(
                "PostgreSQL and DuckDB not run ({reason}): figures 4 and 5 are left out"
            ));
            Vec::new()
        }
        Peers::Suite { script, kura } => {
            say(
                out,
                "== figures 4-5: bench/run with kura, PostgreSQL and DuckDB, warm and cold",
            )?;
            match run_suite(cfg, script, kura, out) {
                Ok((rows, suite_notes)) => {
                    notes.extend(suite_notes);
                    rows
                }
                Err(e) => {
                    notes.push(format!(
                        "the peers could not be run ({e}): figures 4 and 5 are left out"
                    ));
                    Vec::new()
                }
            }
        }
    };
    for n in &notes {
        say(out, n)?;
    }
    files.extend(write_peer_charts(&cfg.out, cfg.sf, &peers)?);
    let settings = read_settings(&cfg.out.join("peers"));
    let csv_path = cfg.out.join("paper003.csv");
    std::fs::write(&csv_path, summary_csv(&measured.runs, &peers)).at(csv_path.display())?;
    let md_path = cfg.out.join("paper003.md");
    let md = markdown(cfg, &measured, &peers, &notes, &settings, &files);
    std::fs::write(&md_path, &md).at(md_path.display())?;
    files.push(csv_path);
    files.push(md_path);
    say(out, "")?;
    say(out, &peer_tables(&peers))?;
    for f in &files {
        say(out, &format!("wrote {}", f.display()))?;
    }
    Ok(Summary {
        modes: measured,
        peers,
        notes,
        files,
    })
}

/// Gives the timeline charts of `crate::modes` the paper's figure numbers:
/// figure 2 is CPU %, figure 3 IOPS.
fn rename_timeline_charts(out: &Path, queries: &[String]) -> LabResult<Vec<PathBuf>> {
    let mut files = Vec::new();
    for q in queries {
        for (from, to) in [
            (format!("modes-{q}-cpu.png"), format!("fig2-{q}-cpu.png")),
            (format!("modes-{q}-iops.png"), format!("fig3-{q}-iops.png")),
        ] {
            let (from, to) = (out.join(from), out.join(to));
            std::fs::rename(&from, &to).at(from.display())?;
            files.push(to);
        }
    }
    Ok(files)
}

/// The suite's query list: figure 4's and figure 5's queries in one run, so every
/// system loads the data once.
fn suite_queries() -> String {
    let mut ids: Vec<String> = FIG4_QUERIES.iter().map(|q| q.to_lowercase()).collect();
    ids.extend(FIG5_QUERIES.iter().map(|q| q[1..].to_string()));
    ids.join(",")
}

/// Runs `bench/run` into OUT/peers, its data and databases in a scratch directory
/// removed afterwards; returns the rows of its CSV and a line per system that could
/// not be run.
fn run_suite(
    cfg: &Config,
    script: &Path,
    kura: &Path,
    out: &mut dyn Write,
) -> LabResult<(Vec<PeerRow>, Vec<String>)> {
    let results = cfg.out.join("peers");
    std::fs::create_dir_all(&results).at(results.display())?;
    // The suite's work directory (the .tbl files, every system's database) is scratch
    // and must be reachable by the PostgreSQL server's own user: the system's temp
    // directory, not OUT.
    let work = std::env::temp_dir().join(format!("kura-paper003-{}", std::process::id()));
    let buffer = format!("{}MB", cfg.buffer >> 20);
    let mut command = Command::new(script);
    command
        .args(["--sf", &sf_name(cfg.sf)])
        .args(["--systems", "kura,postgres,duckdb"])
        .args(["--queries", &suite_queries()])
        .args(["--modes", "warm,cold"])
        .args(["--reps", &cfg.reps.max(1).to_string()])
        .args(["--timeout", &format!("{}", cfg.timeout)])
        .arg("--kura")
        .arg(kura)
        .args(["--kura-cold-buffer", &buffer])
        .args(["--pg-cold-shared-buffers", &buffer])
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(&results)
        .args(cfg.covering.then_some("--covering"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let log_path = results.join("bench-run.log");
    let mut log = std::fs::File::create(&log_path).at(log_path.display())?;
    let mut child = command.spawn().at(script.display())?;
    // stderr goes to the log from its own thread, so a full pipe never stalls the suite.
    let stderr = child.stderr.take();
    let err_log = log.try_clone().at(log_path.display())?;
    let err_thread = std::thread::spawn(move || {
        let mut err_log = err_log;
        if let Some(e) = stderr {
            for line in BufReader::new(e).lines().map_while(Result::ok) {
                let _ = writeln!(err_log, "{line}");
            }
        }
    });
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
            say(out, &format!("  bench/run: {line}"))?;
        }
    }
    let status = child.wait();
    let _ = err_thread.join();
    let _ = std::fs::remove_dir_all(&work);
    let status = status?;
    let mut notes = Vec::new();
    let csv = find_suite_csv(&results, cfg.sf).ok_or_else(|| {
        LabError::External(format!(
            "bench/run failed ({status}) and wrote no CSV; see {}",
            log_path.display()
        ))
    })?;
    if !status.success() {
        notes.push(format!(
            "bench/run exited with {status} (failures listed in its report in {})",
            results.display()
        ));
    }
    let rows = read_peer_csv(&csv)?;
    let settings = read_settings(&results);
    for system in ["kura", "postgres", "duckdb"] {
        let error = settings
            .get(&(system.to_string(), "load_error".to_string()))
            .filter(|e| !e.is_empty());
        if let Some(e) = error {
            notes.push(format!("{system} could not be run here: {e}"));
        }
    }
    Ok((rows, notes))
}

/// The newest `<date>-sf<X>.csv` the suite wrote into `dir`.
fn find_suite_csv(dir: &Path, sf: f64) -> Option<PathBuf> {
    let suffix = format!("-sf{}.csv", sf_name(sf));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&suffix))
        })
        .collect();
    found.sort_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    found.pop()
}

/// Reads the suite's per-query CSV (columns system, mode, query, status, wrong,
/// median_s, ...).
pub fn read_peer_csv(path: &Path) -> LabResult<Vec<PeerRow>> {
    let mut reader = csv::Reader::from_path(path).at(path.display())?;
    let header = reader.headers().at(path.display())?.clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| LabError::Missing(format!("{}: no column {name}", path.display())))
    };
    let (system, mode, query, status, wrong, median) = (
        col("system")?,
        col("mode")?,
        col("query")?,
        col("status")?,
        col("wrong")?,
        col("median_s")?,
    );
    let mut rows = Vec::new();
    for record in reader.records() {
        let r = record.at(path.display())?;
        let is_wrong = &r[wrong] == "yes";
        let status = if is_wrong { "wrong" } else { &r[status] };
        rows.push(PeerRow {
            system: r[system].to_string(),
            mode: r[mode].to_string(),
            query: r[query].to_string(),
            status: status.to_string(),
            // A wrong answer's time does not count, as in the suite's own report.
            seconds: (status == "ok")
                .then(|| r[median].parse::<f64>().ok())
                .flatten(),
        });
    }
    Ok(rows)
}

/// The suite's `(scope, key) -> value` settings (machine, versions, buffers), if any.
fn read_settings(dir: &Path) -> BTreeMap<(String, String), String> {
    let mut map = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return map;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-settings.csv"))
        .collect();
    files.sort_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    let Some(file) = files.pop() else {
        return map;
    };
    let Ok(mut reader) = csv::Reader::from_path(&file) else {
        return map;
    };
    for r in reader.records().map_while(Result::ok) {
        if r.len() >= 3 {
            map.insert((r[0].to_string(), r[1].to_string()), r[2].to_string());
        }
    }
    map
}

fn seconds_of(rows: &[PeerRow], system: &str, mode: &str, query: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.system == system && r.mode == mode && r.query == query)
        .and_then(|r| r.seconds)
}

fn status_of<'a>(rows: &'a [PeerRow], system: &str, mode: &str, query: &str) -> &'a str {
    rows.iter()
        .find(|r| r.system == system && r.mode == mode && r.query == query)
        .map_or("not run", |r| r.status.as_str())
}

/// Systems of a figure that have at least one row, kura first.
fn systems_in(rows: &[PeerRow], wanted: &[&str]) -> Vec<String> {
    wanted
        .iter()
        .filter(|s| rows.iter().any(|r| r.system == **s))
        .map(|s| s.to_string())
        .collect()
}

/// The figures' layout: (figure number, queries, systems).
fn figures() -> [(u8, &'static [&'static str], &'static [&'static str]); 2] {
    [
        (4, &FIG4_QUERIES, &["kura", "postgres", "duckdb"]),
        (5, &FIG5_QUERIES, &["kura", "postgres"]),
    ]
}

/// Figures 4 and 5, cold and warm: median times per query, a bar per system, log
/// scale. Nothing is drawn for a figure no system ran.
pub fn write_peer_charts(out: &Path, sf: f64, rows: &[PeerRow]) -> LabResult<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (fig, queries, wanted) in figures() {
        let systems = systems_in(rows, wanted);
        if systems.is_empty() {
            continue;
        }
        for mode in ["cold", "warm"] {
            let groups: Vec<BarGroup> = queries
                .iter()
                .map(|q| BarGroup {
                    label: q.to_string(),
                    values: systems
                        .iter()
                        .map(|s| seconds_of(rows, s, mode, q).unwrap_or(f64::NAN))
                        .collect(),
                })
                .collect();
            let what = if fig == 4 {
                "(A)-(D) and variants vA, vC, vD"
            } else {
                "TPC-H Q1-Q10, Q19"
            };
            let path = out.join(format!("fig{fig}-{mode}.png"));
            grouped_bar_chart_log_y(
                &path,
                &Labels {
                    title: &format!("Fig. {fig}: {what}, SF {}, {mode}", sf_name(sf)),
                    x: "query",
                    y: "median time (s, log scale)",
                },
                &systems,
                &groups,
            )?;
            files.push(path);
        }
    }
    Ok(files)
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |v| format!("{v:.digits$}"))
}

/// paper003.csv: one row per figure, query, setting and system.
fn summary_csv(runs: &[ModeRun], peers: &[PeerRow]) -> String {
    let mut s = CSV_COLUMNS.join(",") + "\n";
    for r in runs {
        let _ = writeln!(
            s,
            "2-3,{},{},kura,{:.6},ok,{:.0},{:.1},{}",
            modes::label(&r.query),
            r.mode,
            r.secs,
            r.iops,
            r.cpu_pct,
            r.rows
        );
    }
    for (fig, queries, wanted) in figures() {
        for system in systems_in(peers, wanted) {
            for mode in ["cold", "warm"] {
                for q in queries {
                    let _ = writeln!(
                        s,
                        "{fig},{q},{mode},{system},{},{},,,",
                        fmt_opt(seconds_of(peers, &system, mode, q), 6),
                        status_of(peers, &system, mode, q)
                    );
                }
            }
        }
    }
    s
}

/// A cell of a time table: the median, or why there is none.
fn time_cell(rows: &[PeerRow], system: &str, mode: &str, q: &str) -> String {
    match seconds_of(rows, system, mode, q) {
        Some(t) => format!("{t:.4}"),
        None => status_of(rows, system, mode, q).to_string(),
    }
}

fn geometric_mean(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Figures 4 and 5 as Markdown tables: per mode, each system's median and the ratios
/// kura/peer (below 1: kura faster), with their geometric mean.
fn peer_tables(rows: &[PeerRow]) -> String {
    let mut s = String::new();
    for (fig, queries, wanted) in figures() {
        let systems = systems_in(rows, wanted);
        if systems.is_empty() {
            continue;
        }
        let peers: Vec<&String> = systems.iter().filter(|s| *s != "kura").collect();
        for mode in ["cold", "warm"] {
            let _ = writeln!(
                s,
                "Figure {fig}, {mode} (median seconds; kura/peer: below 1 kura is faster)\n"
            );
            let mut header = vec!["query".to_string()];
            header.extend(systems.iter().map(|s| format!("{s} s")));
            header.extend(peers.iter().map(|p| format!("kura/{p}")));
            let _ = writeln!(s, "| {} |", header.join(" | "));
            let _ = writeln!(s, "|{}", "---|".repeat(header.len()));
            let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); peers.len()];
            for q in queries {
                let mut cells = vec![q.to_string()];
                cells.extend(systems.iter().map(|sys| time_cell(rows, sys, mode, q)));
                let kura = seconds_of(rows, "kura", mode, q);
                for (i, p) in peers.iter().enumerate() {
                    let ratio = kura.zip(seconds_of(rows, p, mode, q)).map(|(k, p)| k / p);
                    if let Some(r) = ratio {
                        ratios[i].push(r);
                    }
                    cells.push(fmt_opt(ratio, 3));
                }
                let _ = writeln!(s, "| {} |", cells.join(" | "));
            }
            let mut cells = vec!["geometric mean".to_string()];
            cells.extend(systems.iter().map(|_| String::new()));
            cells.extend(ratios.iter().map(|r| fmt_opt(geometric_mean(r), 3)));
            let _ = writeln!(s, "| {} |\n", cells.join(" | "));
        }
    }
    s
}

/// This machine, from /proc where the suite did not describe it.
fn machine_lines(settings: &BTreeMap<(String, String), String>) -> Vec<String> {
    let from_suite: Vec<String> = settings
        .iter()
        .filter(|((scope, _), _)| scope == "machine")
        .map(|((_, k), v)| format!("- {k}: {v}"))
        .collect();
    if !from_suite.is_empty() {
        return from_suite;
    }
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let ram = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or("unknown".into(), |kb| format!("{:.1} GiB", kb / 1048576.0));
    vec![
        format!("- CPU: {cpu}"),
        format!("- cores: {cores}"),
        format!("- RAM: {ram}"),
    ]
}

fn markdown(
    cfg: &Config,
    m: &modes::Report,
    peers: &[PeerRow],
    notes: &[String],
    settings: &BTreeMap<(String, String), String>,
    files: &[PathBuf],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Paper 003, figures 2-5: TPC-H SF {}\n",
        sf_name(cfg.sf)
    );
    let _ = writeln!(s, "## Machine and buffers\n");
    for l in machine_lines(settings) {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(
        s,
        "- kura, figures 2-3: each run a fresh open with an empty {} MiB buffer, O_DIRECT reads, {} workers ({}), {} KiB pages",
        cfg.buffer >> 20,
        m.workers,
        if m.io_uring { "io_uring" } else { "synchronous reads" },
        m.page >> 10
    );
    let _ = writeln!(
        s,
        "- indexes: {}",
        if cfg.covering {
            "paper 003's set and the covering indexes of (A)-(D) and their variants (--covering), in kura and PostgreSQL"
        } else {
            "paper 003's set (bench/indexes.sql) in kura and PostgreSQL"
        }
    );
    for system in ["kura", "postgres", "duckdb"] {
        let mut items: Vec<String> = settings
            .iter()
            .filter(|((scope, k), v)| scope == system && k != "load_error" && !v.is_empty())
            .map(|((_, k), v)| format!("{k}: {v}"))
            .collect();
        if !items.is_empty() {
            items.sort();
            let _ = writeln!(s, "- {system}, figures 4-5: {}", items.join("; "));
        }
    }
    if !peers.is_empty() {
        let _ = writeln!(
            s,
            "- figures 4-5: median of {} measured runs per query and mode (bench/run; its own report is in peers/)",
            cfg.reps.max(1)
        );
    }
    if let Some(note) = settings.get(&("run".into(), "OS page cache before cold runs".into())) {
        let _ = writeln!(s, "- OS page cache before cold runs: {note}");
    }
    for n in notes {
        let _ = writeln!(s, "- **{n}**");
    }

    let _ = writeln!(s, "\n## Figures 2-3: execution modes, cold\n");
    let c = &m.ceiling;
    let qd1 = c.median_at(1);
    let qd64 = c.median_at(64);
    let _ = writeln!(
        s,
        "I/O ceiling (random page reads, O_DIRECT, median of {} runs): {}; best QD {} at {:.0} IOPS.\n",
        c.at_best().samples.len(),
        c.sweep
            .iter()
            .map(|d| format!("QD {} {:.0}", d.depth, d.median()))
            .collect::<Vec<_>>()
            .join(", "),
        c.at_best().depth,
        c.iops()
    );
    let _ = writeln!(
        s,
        "| query | mode | time s | rows | mean IOPS | CPU % | peak QD | pages/read | % of QD-64 IOPS | speed-up vs serial |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for q in &cfg.timeline_queries {
        let serial = m.run_of(q, SERIAL).map(|r| r.secs);
        for mode in MODES {
            let Some(r) = m.run_of(q, mode) else { continue };
            // /proc counts CPU time in 10 ms ticks: a shorter run's share is noise.
            let cpu = if r.secs >= CPU_MIN_SECS {
                format!("{:.1}", r.cpu_pct)
            } else {
                "–".into()
            };
            let _ = writeln!(
                s,
                "| ({}) | {mode} | {:.3} | {} | {:.0} | {cpu} | {} | {:.2} | {} | {} |",
                modes::label(q),
                r.secs,
                r.rows,
                r.iops,
                r.peak_in_flight,
                r.pages_per_request(),
                fmt_opt(qd64.map(|c| r.iops / c * 100.0), 1),
                fmt_opt(serial.map(|t| t / r.secs), 2)
            );
        }
    }
    let _ = writeln!(
        s,
        "\nCPU % (100 = one core) is left out (–) for runs under {CPU_MIN_SECS} s: the kernel counts CPU time in 10 ms ticks."
    );
    let _ = writeln!(
        s,
        "\n*serial* is the paper's serial mode: one thread, synchronous reads, one page per read \
         request (`execution_mode = serial`, `prefetch = off`); speed-ups are against it. \
         *serial + read-ahead* is kura's serial mode with `prefetch = on`, which reads runs of \
         consecutive pages with one `pread` (pages/read above 1). Peak QD is the most read \
         requests in flight at once."
    );
    if let (Some(q1), Some(q64)) = (qd1, qd64) {
        let _ = writeln!(
            s,
            "\nThe disk's QD-64/QD-1 IOPS ratio, the physical limit of ooo/serial here: {:.1}.",
            q64 / q1
        );
        for q in &cfg.timeline_queries {
            if let (Some(o), Some(se)) = (m.run_of(q, "ooo"), m.run_of(q, SERIAL)) {
                let _ = write!(
                    s,
                    "({}) ooo/serial {:.2}× = {:.0} % of that limit",
                    modes::label(q),
                    se.secs / o.secs,
                    se.secs / o.secs / (q64 / q1) * 100.0
                );
                if let Some(ra) = m.run_of(q, SERIAL_READ_AHEAD) {
                    let _ = write!(
                        s,
                        "; ooo/(serial + read-ahead) {:.2}× (not bounded by it: read-ahead reads several pages per request)",
                        ra.secs / o.secs
                    );
                }
                let _ = writeln!(s, ".");
            }
        }
    }
    let _ = writeln!(s, "\n## Figures 4-5: kura against its peers\n");
    if peers.is_empty() {
        let _ = writeln!(s, "Not measured (see above).\n");
    } else {
        s.push_str(&peer_tables(peers));
    }
    let _ = writeln!(s, "## Charts\n");
    for f in files {
        if let Some(name) = f.file_name().and_then(|n| n.to_str()) {
            let _ = writeln!(s, "![{name}]({name})");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, mode: &str, query: &str, seconds: Option<f64>) -> PeerRow {
        PeerRow {
            system: system.into(),
            mode: mode.into(),
            query: query.into(),
            status: if seconds.is_some() { "ok" } else { "error" }.into(),
            seconds,
        }
    }

    #[test]
    fn the_suite_csv_is_read_and_wrong_answers_lose_their_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("2026-01-01-sf0.01.csv");
        std::fs::write(
            &path,
            "system,mode,query,status,wrong,median_s,runs,times_s\n\
             kura,cold,A,ok,no,0.250000,1,0.250000\n\
             postgres,cold,A,ok,yes,0.500000,1,0.500000\n\
             duckdb,warm,Q1,timeout,no,,0,\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("2026-01-01-sf0.1.csv"), "x\n").unwrap();
        assert_eq!(find_suite_csv(dir.path(), 0.01), Some(path.clone()));
        let rows = read_peer_csv(&path).unwrap();
        assert_eq!(rows[0], row("kura", "cold", "A", Some(0.25)));
        assert_eq!((rows[1].status.as_str(), rows[1].seconds), ("wrong", None));
        assert_eq!(
            (rows[2].status.as_str(), rows[2].seconds),
            ("timeout", None)
        );
        assert!(read_peer_csv(&dir.path().join("2026-01-01-sf0.1.csv")).is_err());
    }

    #[test]
    fn peer_tables_give_ratios_and_charts_are_drawn() {
        let mut rows = Vec::new();
        for (i, q) in FIG4_QUERIES.iter().enumerate() {
            let k = 0.01 * (i + 1) as f64;
            rows.push(row("kura", "cold", q, Some(k)));
            rows.push(row("postgres", "cold", q, Some(k * 4.0)));
            rows.push(row("duckdb", "cold", q, (i != 2).then_some(k / 2.0)));
        }
        rows.push(row("kura", "cold", "Q1", Some(1.0)));
        rows.push(row("postgres", "cold", "Q1", Some(2.0)));
        let tables = peer_tables(&rows);
        assert!(
            tables.contains("| A | 0.0100 | 0.0400 | 0.0050 | 0.250 | 2.000 |"),
            "{tables}"
        );
        // (C) without a DuckDB time: its status, no ratio.
        assert!(
            tables.contains("| C | 0.0300 | 0.1200 | error | 0.250 |  |"),
            "{tables}"
        );
        assert!(
            tables.contains("| geometric mean |  |  |  | 0.250 | 2.000 |"),
            "{tables}"
        );
        assert!(
            tables.contains("| Q1 | 1.0000 | 2.0000 | 0.500 |"),
            "{tables}"
        );
        assert!(tables.contains("| Q2 | not run | not run |  |"), "{tables}");
        let dir = tempfile::tempdir().unwrap();
        let files = write_peer_charts(dir.path(), 0.01, &rows).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "fig4-cold.png",
                "fig4-warm.png",
                "fig5-cold.png",
                "fig5-warm.png"
            ]
        );
        for f in &files {
            assert!(
                std::fs::metadata(f).unwrap().len() > 1000,
                "{}",
                f.display()
            );
        }
        let csv = summary_csv(&[], &rows);
        assert!(csv.contains("4,A,cold,postgres,0.040000,ok,,,\n"), "{csv}");
        assert!(csv.contains("4,C,cold,duckdb,,error,,,\n"), "{csv}");
        // Without rows no chart is drawn.
        assert!(write_peer_charts(dir.path(), 0.01, &[]).unwrap().is_empty());
    }

    #[test]
    fn the_suite_runs_both_figures_queries_in_one_go() {
        assert_eq!(suite_queries(), "a,b,c,d,va,vc,vd,1,2,3,4,5,6,7,8,9,10,19");
    }
}
