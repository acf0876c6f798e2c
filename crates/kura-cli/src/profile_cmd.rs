//! `kura profile` (paper 002): counts (or samples) queries with kura-profile and
//! prints or saves the profile; where the machine has no hardware PMU it samples
//! cpu-clock, adds the simulated cache (the queries traced under Valgrind and
//! replayed through kura-cache's model) and the overhead table. `--diff` compares
//! two saved profiles, `--overhead` measures the profiler's own cost alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kura::profile::counters::PerfSource;
use kura::profile::events::{check_perf_allowed, Event, Pmu};
use kura::profile::run::{Options, Step};
use kura::profile::sampling::{default_period, SampleConfig};
use kura::profile::{diff, overhead, report, run, simulated, Profile, SYSFS_CACHE_DIR};
use kura::{Database, Session};

use crate::error::{CliError, CliResult};
use crate::DbArgs;

mod other;

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
    /// Sample instead of counting (with --pid: the event sampled), on EVENT (default: cpu-clock where there is no
    /// hardware PMU); e.g. --sample cpu-clock, --sample mem-loads.
    #[arg(long, value_name = "EVENT", num_args = 0..=1, default_missing_value = "default")]
    sample: Option<String>,
    /// Events between samples (nanoseconds for cpu-clock; default 4000000, which
    /// keeps the overhead within 3 %).
    #[arg(long, value_name = "N")]
    period: Option<u64>,
    /// Save the profile as JSON to FILE.
    #[arg(long = "json", short = 'o', value_name = "FILE")]
    json: Option<PathBuf>,
    /// Compare two saved profiles (before, after) per function, operator and object.
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"])]
    diff: Option<Vec<PathBuf>>,
    /// Count events per query, operator and pipeline (the default with a hardware PMU).
    #[arg(long, conflicts_with = "sample")]
    count: bool,
    /// Measure the profiler's overhead alone: no profiling, counting, sampling at several periods.
    #[arg(long)]
    overhead: bool,
    /// Add the simulated cache: the queries traced under Valgrind's lackey in a
    /// child kura and replayed through a model of this machine's caches (the
    /// default where there is no hardware PMU).
    #[arg(long, overrides_with = "no_simulate")]
    simulate: bool,
    /// Leave the simulated cache out.
    #[arg(long)]
    no_simulate: bool,
    /// The Valgrind executable for the simulated cache.
    #[arg(long, value_name = "PATH", default_value = "valgrind")]
    valgrind: PathBuf,
    /// Runs per mode for --overhead (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Run each query N times inside the profile [default: enough times for
    /// about 600 ms of work, so that short queries give enough samples].
    #[arg(long, value_name = "N")]
    repeat: Option<usize>,
    /// Rows per table.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// Session settings for the queries, e.g. --set execution_mode=serial.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    settings: Vec<String>,
    /// Profile a running process instead of queries (repeat for several): its
    /// threads are sampled from outside for --seconds.
    #[arg(long = "pid", value_name = "PID", conflicts_with_all = ["commands", "queries", "program"])]
    pub(crate) pids: Vec<u32>,
    /// How long --pid samples (it stops earlier when the processes end, or on Ctrl-C).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "pids"
    )]
    pub(crate) seconds: f64,
    /// Report the share of a group of functions: NAME=PATTERN[,PATTERN...]
    /// (functions whose names contain a pattern), e.g. --group locks=LWLock,s_lock.
    #[arg(long = "group", value_name = "NAME=PATTERNS")]
    pub(crate) groups: Vec<String>,
    /// Directory describing the cache geometry for the simulated caches (sysfs layout).
    #[arg(long, value_name = "DIR", default_value = SYSFS_CACHE_DIR)]
    pub(crate) geometry: PathBuf,
    /// Profile another program: `kura profile [OPTIONS] -- COMMAND ARGS...` runs it
    /// under Valgrind's lackey, every process it forks or executes included, and
    /// replays each through the simulated caches.
    #[arg(last = true, value_name = "COMMAND", conflicts_with_all = ["commands", "queries"])]
    pub(crate) program: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The SQL of each query to profile, with its name.
fn workload(args: &ProfileArgs) -> CliResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for q in &args.queries {
        let (kind, id) = q.split_once(':').unwrap_or(("tpch", q.as_str()));
        if !kind.eq_ignore_ascii_case("tpch") {
            return Err(CliError::Usage(format!(
                "--query {q}: unknown query set '{kind}' (known: tpch)"
            )));
        }
        let sql = kura::tpch::run::query_text(id).ok_or_else(|| {
            CliError::Usage(format!(
                "--query {q}: no TPC-H query '{id}' (1 … 22, a … d)"
            ))
        })?;
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
        return Err(CliError::Usage(
            "nothing to profile: give -c \"SQL\" or --query tpch:N".into(),
        ));
    }
    Ok(out)
}

/// Runs every statement of `sql` to completion (the rows are dropped).
fn execute(session: &mut Session, sql: &str) -> kura::KuraResult<()> {
    kura::stack::on_statement_stack(|| {
        let statements = kura::session::parse(sql)?;
        for stmt in &statements {
            session.execute_statement(stmt)?;
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

/// What a profile run does besides its counting or sampling, decided from the
/// flags and the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    /// Sample with the machine's default event though no `--sample` was given.
    default_sampling: bool,
    /// Append the overhead table.
    overhead_table: bool,
    simulate: bool,
}

impl Plan {
    /// With a PMU the default is counting alone. Without one the counters have
    /// nothing to say about caches, so the default is what works here: cpu-clock
    /// samples, the overhead table, and the simulated cache.
    fn new(args: &ProfileArgs, pmu: &Pmu) -> Plan {
        let no_mode = args.sample.is_none() && !args.count;
        let default_no_pmu = !pmu.hardware && no_mode;
        Plan {
            default_sampling: default_no_pmu,
            overhead_table: default_no_pmu,
            simulate: args.simulate || (default_no_pmu && !args.no_simulate),
        }
    }
}

/// Names buffer pages by their column or index, from the catalog at the end of the run.
fn page_names(db: &Database) -> run::PageNamer {
    let storage = db.storage().clone();
    Box::new(move || {
        let name = kura::profile::page_namer(&storage).map_err(|e| e.to_string())?;
        Ok(Box::new(name))
    })
}

/// Runs `kura profile`.
pub fn run(
    args: &ProfileArgs,
    db_path: &Path,
    open: impl FnOnce() -> CliResult<(Database, Session)>,
) -> CliResult<()> {
    if let Some(files) = &args.diff {
        let a = Profile::load(&files[0])?;
        let b = Profile::load(&files[1])?;
        print!("{}", diff::render(&diff::diff(&a, &b), args.top));
        return Ok(());
    }
    if !args.program.is_empty() {
        return other::trace_command(args);
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !args.pids.is_empty() {
        check_perf_allowed(std::path::Path::new("/proc/sys"), root)?;
        return other::sample_pids(args);
    }
    check_perf_allowed(std::path::Path::new("/proc/sys"), root)?;
    let pmu = Pmu::this_machine();
    let plan = Plan::new(args, &pmu);
    let sample_name = match &args.sample {
        Some(name) => Some(name.as_str()),
        None if plan.default_sampling && !args.overhead => Some("default"),
        None => None,
    };
    let sample = match sample_name {
        Some(name) => {
            let event = if name == "default" {
                pmu.default_sample_event()
            } else {
                Event::parse(name)?
            };
            let period = args.period.unwrap_or_else(|| default_period(event));
            Some(SampleConfig::new(event, period, &pmu)?)
        }
        None if args.period.is_some() && !args.overhead && !plan.default_sampling => {
            return Err(CliError::Usage(
                "--period applies to --sample (or --overhead)".into(),
            ))
        }
        None => None,
    };
    if args.period == Some(0) {
        return Err(CliError::Usage(
            "the sampling period must be at least 1 (0 would never sample)".into(),
        ));
    }
    // Options of the other-program profiles mean nothing for queries: refused,
    // not ignored.
    if !args.groups.is_empty() {
        return Err(CliError::Usage(
            "--group applies to `-- COMMAND` and --pid profiles, not to queries".into(),
        ));
    }
    if args.geometry != Path::new(SYSFS_CACHE_DIR) {
        return Err(CliError::Usage(
            "--geometry applies to `-- COMMAND` profiles; the queries' simulated cache uses \
             this machine's (`kura trace profile --geometry DIR` takes another)"
                .into(),
        ));
    }
    let queries = workload(args)?;
    let simulate = plan.simulate && simulation_possible(args, &plan)?;
    // The database stays open while its session runs queries.
    let (db, mut session) = open()?;
    for s in &args.settings {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--set {s}: expected NAME=VALUE")))?;
        session
            .execute(&format!("SET {} = '{}'", name.trim(), value.trim()))
            .map_err(CliError::db_in(format!("--set {s}")))?;
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
        execute(&mut session, sql).map_err(CliError::db_in(name))?;
    }
    let repeat = match args.repeat {
        Some(n) => n.max(1),
        None => {
            let t0 = std::time::Instant::now();
            for (name, sql) in &queries {
                execute(&mut session, sql).map_err(CliError::db_in(name))?;
            }
            let n = repeats_for(t0.elapsed());
            if n > 1 {
                eprintln!(
                    "note: each query runs {n} times inside the profile (--repeat N to choose)"
                );
            }
            n
        }
    };
    let overhead_event = sample
        .map(|s| s.event)
        .unwrap_or(pmu.default_sample_event());
    if args.overhead {
        let (rows, chosen) =
            measure_overhead(&mut session, &queries, args, repeat, &pmu, overhead_event)?;
        let profile = Profile {
            version: report::FORMAT_VERSION,
            mode: "overhead".into(),
            events: vec![overhead_event],
            note: pmu.note(),
            overhead: Some(rows),
            ..Default::default()
        };
        print!("{}", profile.render(args.top));
        print_chosen(chosen, overhead_event);
        if let Some(path) = &args.json {
            profile.save(path)?;
        }
        return Ok(());
    }
    let session = std::cell::RefCell::new(session);
    let mut steps: Vec<Step> = queries
        .iter()
        .map(|(name, sql)| {
            let session = &session;
            Step {
                name: name.clone(),
                run: Box::new(move || {
                    for _ in 0..repeat {
                        execute(&mut session.borrow_mut(), sql).map_err(|e| e.to_string())?;
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
    let mut profile = run::profile(&mut steps, &opts)?;
    // Both hold the database (the session, the page namer's storage).
    drop(steps);
    drop(opts);
    let mut session = session.into_inner();
    let mut chosen = None;
    if plan.overhead_table {
        let (rows, c) =
            measure_overhead(&mut session, &queries, args, repeat, &pmu, overhead_event)?;
        profile.overhead = Some(rows);
        chosen = Some(c);
    }
    let mut text = profile.render(args.top);
    // The note went to stderr already.
    if let Some(n) = &profile.note {
        text = text.replacen(&format!("note: {n}\n"), "", 1);
    }
    print!("{text}");
    if let Some(c) = chosen {
        print_chosen(c, overhead_event);
    }
    if simulate {
        // The traced child opens the database itself: this process lets it go.
        drop(session);
        drop(db);
        let sim = simulated_profile(args, db_path, &queries)?;
        println!("\n{}", sim.render());
        profile.simulated = Some(sim.section());
    }
    if let Some(path) = &args.json {
        profile.save(path)?;
        eprintln!("profile saved to {}", path.display());
    }
    Ok(())
}

/// The overhead table: the workload (each query `--repeat` times) alone, counted,
/// and sampled at a tenth, a quarter, one and four times the period.
fn measure_overhead(
    session: &mut Session,
    queries: &[(String, String)],
    args: &ProfileArgs,
    repeat: usize,
    pmu: &Pmu,
    event: Event,
) -> CliResult<(Vec<report::OverheadRow>, Option<u64>)> {
    let base = args.period.unwrap_or_else(|| default_period(event));
    let periods = [base / 10, base / 4, base, base * 4];
    let periods: Vec<u64> = periods.into_iter().filter(|p| *p > 0).collect();
    let mut all = || -> Result<(), String> {
        for _ in 0..repeat {
            for (name, sql) in queries {
                execute(session, sql).map_err(|e| format!("{name}: {e}"))?;
            }
        }
        Ok(())
    };
    Ok(overhead::measure(
        &mut all, pmu, event, &periods, args.runs,
    )?)
}

/// Runs of the workload that take about [`PROFILED_WORK`] when one takes `once`
/// (at most 1,000).
fn repeats_for(once: std::time::Duration) -> usize {
    let once = once.as_secs_f64().max(1e-6);
    ((PROFILED_WORK.as_secs_f64() / once).ceil() as usize).clamp(1, 1000)
}

/// How long the profiled workload runs when `--repeat` is not given: at the
/// default 4 ms cpu-clock period, a few hundred samples on two cores.
const PROFILED_WORK: std::time::Duration = std::time::Duration::from_millis(600);

fn print_chosen(chosen: Option<u64>, event: Event) {
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
}

/// Whether the simulated cache can run. Asked for with `--simulate`, a missing
/// Valgrind is an error; as the no-PMU default, one line says it is left out.
fn simulation_possible(args: &ProfileArgs, plan: &Plan) -> CliResult<bool> {
    let present = std::process::Command::new(&args.valgrind)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        return Ok(true);
    }
    let why = format!(
        "{} not found: the simulated cache needs Valgrind (apt-get install valgrind)",
        args.valgrind.display()
    );
    if args.simulate {
        return Err(CliError::Failed(why));
    }
    debug_assert!(plan.simulate);
    eprintln!("note: {why}; profiling without it");
    Ok(false)
}

/// The simulated cache profile of the queries, each one access class, traced in a
/// child kura (serial mode, cold buffer pool) under Valgrind's lackey.
fn simulated_profile(
    args: &ProfileArgs,
    db_path: &Path,
    queries: &[(String, String)],
) -> CliResult<simulated::SimulatedProfile> {
    let program =
        std::env::current_exe().map_err(CliError::io_in("finding the kura executable"))?;
    let mut opts = simulated::ProfileOptions::new(
        db_path.to_path_buf(),
        queries.iter().map(|(_, sql)| sql.clone()).collect(),
        program,
        crate::trace_cmd::CHILD_COMMAND
            .iter()
            .map(OsString::from)
            .collect(),
    );
    opts.top = args.top;
    opts.valgrind = args.valgrind.clone();
    eprintln!(
        "note: tracing the queries under valgrind lackey for the simulated cache \
         (slow: about a minute for TPC-H Q6 at SF 0.01; --no-simulate leaves it out)"
    );
    Ok(simulated::profile(&opts)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pmu(hardware: bool) -> Pmu {
        Pmu {
            hardware,
            ibs_op: None,
        }
    }

    #[test]
    fn without_pmu_the_default_samples_measures_overhead_and_simulates() {
        let args = ProfileArgs::default();
        let plan = Plan::new(&args, &pmu(false));
        assert_eq!(
            plan,
            Plan {
                default_sampling: true,
                overhead_table: true,
                simulate: true
            }
        );
        // With a PMU the default is counting alone.
        let plan = Plan::new(&args, &pmu(true));
        assert!(!plan.default_sampling && !plan.overhead_table && !plan.simulate);
        // A named mode is only that mode, unless the simulation is asked for.
        let count = ProfileArgs {
            count: true,
            ..Default::default()
        };
        assert!(!Plan::new(&count, &pmu(false)).simulate);
        let no_sim = ProfileArgs {
            no_simulate: true,
            ..Default::default()
        };
        assert!(!Plan::new(&no_sim, &pmu(false)).simulate);
        let sim = ProfileArgs {
            sample: Some("default".into()),
            simulate: true,
            ..Default::default()
        };
        assert!(Plan::new(&sim, &pmu(true)).simulate);
    }

    #[test]
    fn short_workloads_repeat_to_about_600_ms() {
        use std::time::Duration;
        assert_eq!(repeats_for(Duration::from_millis(2)), 300);
        assert_eq!(repeats_for(Duration::from_secs(2)), 1);
        assert_eq!(repeats_for(Duration::ZERO), 1000);
    }
}
