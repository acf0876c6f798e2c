//! `kura profile`: counts (or samples) queries with kura-profile and prints or
//! saves the profile; `--diff` compares two saved profiles, `--overhead` measures
//! the profiler's own cost.

use std::path::PathBuf;
use std::sync::Arc;

use kura::{Database, Session};
use kura_profile::counters::PerfSource;
use kura_profile::events::{check_perf_allowed, Event, Pmu};
use kura_profile::run::{Options, Step};
use kura_profile::sampling::{default_period, SampleConfig};
use kura_profile::{diff, overhead, run, Profile};

use crate::DbArgs;

/// Arguments of `kura profile`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ProfileArgs {
    /// SQL to profile (repeat for several statements, each profiled on its own).
    #[arg(
        short = 'c',
        long = "command",
        value_name = "SQL",
        allow_hyphen_values = true
    )]
    commands: Vec<String>,
    /// A named query to profile: tpch:1 … tpch:22, tpch:a … tpch:d (repeat, or separate with commas).
    #[arg(long = "query", value_name = "NAME", value_delimiter = ',')]
    queries: Vec<String>,
    /// Sample instead of counting, on EVENT (default: cpu-clock where there is no
    /// hardware PMU); e.g. --sample cpu-clock, --sample mem-loads.
    #[arg(long, value_name = "EVENT", num_args = 0..=1, default_missing_value = "default")]
    sample: Option<String>,
    /// Events between samples (nanoseconds for cpu-clock; default 1000000, which
    /// keeps the overhead under 3 %).
    #[arg(long, value_name = "N")]
    period: Option<u64>,
    /// Save the profile as JSON to FILE.
    #[arg(long = "json", short = 'o', value_name = "FILE")]
    json: Option<PathBuf>,
    /// Compare two saved profiles (before, after) per function, operator and object.
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"])]
    diff: Option<Vec<PathBuf>>,
    /// Measure the profiler's overhead: no profiling, counting, sampling at several periods.
    #[arg(long)]
    overhead: bool,
    /// Runs per mode for --overhead (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Run each query N times inside the profile (short queries give few samples).
    #[arg(long, default_value_t = 1, value_name = "N")]
    repeat: usize,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// Session settings for the queries, e.g. --set execution_mode=serial.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    settings: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The SQL of each query to profile, with its name.
fn workload(args: &ProfileArgs) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for q in &args.queries {
        let (kind, id) = q.split_once(':').unwrap_or(("tpch", q.as_str()));
        if !kind.eq_ignore_ascii_case("tpch") {
            return Err(format!(
                "--query {q}: unknown query set '{kind}' (known: tpch)"
            ));
        }
        let sql = kura::tpch::run::query_text(id)
            .ok_or_else(|| format!("--query {q}: no TPC-H query '{id}' (1 … 22, a … d)"))?;
        out.push((
            format!("tpch:{}", kura::tpch::run::query_label(id)),
            sql.to_string(),
        ));
    }
    for (i, sql) in args.commands.iter().enumerate() {
        let name = if args.commands.len() == 1 {
            "-c".to_string()
        } else {
            format!("-c #{}", i + 1)
        };
        out.push((name, sql.clone()));
    }
    if out.is_empty() {
        return Err("nothing to profile: give -c \"SQL\" or --query tpch:N".into());
    }
    Ok(out)
}

/// Runs every statement of `sql` to completion (the rows are dropped).
fn execute(session: &mut Session, sql: &str) -> Result<(), String> {
    kura::stack::on_statement_stack(|| {
        let statements = kura::session::parse(sql).map_err(|e| e.to_string())?;
        for stmt in &statements {
            session.execute_statement(stmt).map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// The workspace, for the text of hot source lines: the current directory when
/// it is one, else the one kura was built in.
fn source_root() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    if cwd.join("crates/kura-exec").is_dir() {
        return Some(cwd);
    }
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    built.join("crates/kura-exec").is_dir().then_some(built)
}

/// Names buffer pages by their column or index, from the catalog at the end of the run.
fn page_names(db: &Database) -> run::PageNamer {
    let storage = db.storage().clone();
    Box::new(move || {
        let name = kura_storage::resident::page_namer(storage.buffer().file(), &storage.catalog())
            .map_err(|e| e.to_string())?;
        Ok(Box::new(name))
    })
}

/// Runs `kura profile`.
pub fn run(
    args: &ProfileArgs,
    open: impl FnOnce() -> Result<(Database, Session), String>,
) -> Result<(), String> {
    if let Some(files) = &args.diff {
        let a = Profile::load(&files[0]).map_err(|e| e.to_string())?;
        let b = Profile::load(&files[1]).map_err(|e| e.to_string())?;
        print!("{}", diff::render(&diff::diff(&a, &b), args.top));
        return Ok(());
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    check_perf_allowed(std::path::Path::new("/proc/sys"), root).map_err(|e| e.to_string())?;
    let pmu = Pmu::this_machine();
    let sample = match &args.sample {
        Some(name) => {
            let event = if name == "default" {
                pmu.default_sample_event()
            } else {
                Event::parse(name).map_err(|e| e.to_string())?
            };
            let period = args.period.unwrap_or_else(|| default_period(event));
            Some(SampleConfig::new(event, period, &pmu).map_err(|e| e.to_string())?)
        }
        None if args.period.is_some() && !args.overhead => {
            return Err("--period applies to --sample (or --overhead)".into())
        }
        None => None,
    };
    if args.period == Some(0) {
        return Err("the sampling period must be at least 1 (0 would never sample)".into());
    }
    let queries = workload(args)?;
    // The database stays open while its session runs queries.
    let (db, mut session) = open()?;
    for s in &args.settings {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s}: expected NAME=VALUE"))?;
        session
            .execute(&format!("SET {} = '{}'", name.trim(), value.trim()))
            .map_err(|e| format!("--set {s}: {e}"))?;
    }
    if let Some(note) = pmu.note() {
        eprintln!("note: {note}");
    }
    // Load samples are named by memory object: the registry is on from the
    // warm-up run on, so the pages it brings into the pool are named too.
    if !args.overhead && sample.is_some_and(|s| s.event == Event::MemLoads) {
        kura_common::memobj::enable(true);
    }
    // One untimed run first: buffer pool, runtime threads and plan caches warm,
    // and a query that fails says so before any profiling starts.
    for (name, sql) in &queries {
        execute(&mut session, sql).map_err(|e| format!("{name}: {e}"))?;
    }
    if args.overhead {
        let event = sample
            .map(|s| s.event)
            .unwrap_or(pmu.default_sample_event());
        let base = args.period.unwrap_or_else(|| default_period(event));
        let periods = [base / 10, base / 4, base, base * 4];
        let periods: Vec<u64> = periods.into_iter().filter(|p| *p > 0).collect();
        let mut all = || -> Result<(), String> {
            for _ in 0..args.repeat.max(1) {
                for (name, sql) in &queries {
                    execute(&mut session, sql).map_err(|e| format!("{name}: {e}"))?;
                }
            }
            Ok(())
        };
        let (rows, chosen) = overhead::measure(&mut all, &pmu, event, &periods, args.runs)
            .map_err(|e| e.to_string())?;
        let profile = Profile {
            version: kura_profile::report::FORMAT_VERSION,
            mode: "overhead".into(),
            events: vec![event],
            note: pmu.note(),
            overhead: Some(rows),
            ..Default::default()
        };
        print!("{}", profile.render(args.top));
        match chosen {
            Some(p) => println!(
                "finest period within {} %: {p}{}",
                overhead::BUDGET_PCT,
                if event.is_time() { " ns" } else { "" }
            ),
            None => println!(
                "no measured period stayed within {} %",
                overhead::BUDGET_PCT
            ),
        }
        if let Some(path) = &args.json {
            profile.save(path).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    let session = std::cell::RefCell::new(session);
    let repeat = args.repeat.max(1);
    let mut steps: Vec<Step> = queries
        .iter()
        .map(|(name, sql)| {
            let session = &session;
            Step {
                name: name.clone(),
                run: Box::new(move || {
                    for _ in 0..repeat {
                        execute(&mut session.borrow_mut(), sql)?;
                    }
                    Ok(())
                }),
            }
        })
        .collect();
    let opts = Options {
        pmu: pmu.clone(),
        sample,
        source: Arc::new(PerfSource),
        top: args.top,
        source_root: source_root(),
        page_names: Some(page_names(&db)),
    };
    let profile = run::profile(&mut steps, &opts).map_err(|e| e.to_string())?;
    let mut text = profile.render(args.top);
    // The note went to stderr already.
    if let Some(n) = &profile.note {
        text = text.replacen(&format!("note: {n}\n"), "", 1);
    }
    print!("{text}");
    if let Some(path) = &args.json {
        profile.save(path).map_err(|e| e.to_string())?;
        eprintln!("profile saved to {}", path.display());
    }
    Ok(())
}
