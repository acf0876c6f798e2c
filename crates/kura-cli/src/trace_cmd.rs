//! `kura trace` (hidden): the simulated memory profile — queries traced under
//! Valgrind's lackey and replayed through kura-cache's model of this machine's
//! caches (`kura::profile::simulated`) — and the child mode that the trace runs.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Subcommand;

use kura::profile::simulated::{self, child};
use kura_common::memobj;

use crate::error::{CliError, CliResult};
use crate::Cli;

/// The words that select the child mode (the protocol's arguments follow).
pub(crate) const CHILD_COMMAND: [&str; 2] = ["trace", "child"];

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Simulated cache profile of queries: top functions, source lines, data objects and miss classes.
    Profile(ProfileArgs),
    /// The traced run itself (started by `trace profile` under Valgrind).
    Child(ChildArgs),
}

#[derive(clap::Args)]
pub struct ProfileArgs {
    /// SQL to profile (repeatable; each is one access class of the trace).
    #[arg(short = 'c', long = "command", allow_hyphen_values = true)]
    sql: Vec<String>,
    /// TPC-H queries to profile, e.g. tpch:6 (repeatable, or tpch:1,6).
    #[arg(long = "query", value_delimiter = ',')]
    queries: Vec<String>,
    /// Scale factor of the TPC-H database built when --db does not exist yet.
    #[arg(long, default_value_t = 0.01)]
    sf: f64,
    /// Rows per table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Also write the profile as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run the queries once, untraced region, before the profiled run (warm buffer pool).
    #[arg(long)]
    warmup: bool,
    /// Directory describing the cache geometry (sysfs layout).
    #[arg(long, value_name = "DIR", default_value = kura::profile::SYSFS_CACHE_DIR)]
    geometry: PathBuf,
    /// The Valgrind executable.
    #[arg(long, value_name = "PATH", default_value = "valgrind")]
    valgrind: PathBuf,
    #[command(flatten)]
    db: crate::DbArgs,
}

#[derive(clap::Args)]
pub struct ChildArgs {
    /// Where to write the registry log and memory map at the end.
    #[arg(long, value_name = "FILE")]
    dump: PathBuf,
    /// Run the queries once before the region.
    #[arg(long)]
    warmup: bool,
    /// The queries, one access class each.
    #[arg(last = true)]
    sql: Vec<String>,
    #[command(flatten)]
    db: crate::DbArgs,
}

impl TraceCommand {
    pub fn db_args(&self) -> Option<&crate::DbArgs> {
        match self {
            TraceCommand::Profile(a) => Some(&a.db),
            TraceCommand::Child(a) => Some(&a.db),
        }
    }
}

pub fn run(cli: &Cli, cmd: &TraceCommand) -> CliResult<()> {
    match cmd {
        TraceCommand::Profile(args) => profile(cli, args),
        TraceCommand::Child(args) => run_child(cli, args),
    }
}

/// `tpch:6` → Q6's text; anything else is an error naming the form.
fn tpch_query(spec: &str) -> CliResult<String> {
    let id = spec.strip_prefix("tpch:").ok_or_else(|| {
        CliError::Usage(format!(
            "--query takes tpch:N (N from 1 to 22 or a-d), got '{spec}'"
        ))
    })?;
    kura::tpch::run::query_text(id)
        .map(str::to_string)
        .ok_or_else(|| CliError::Usage(format!("no TPC-H query '{id}' (1 to 22, or a-d)")))
}

fn profile(cli: &Cli, args: &ProfileArgs) -> CliResult<()> {
    let mut sql = Vec::new();
    for q in &args.queries {
        sql.push(tpch_query(q.trim())?);
    }
    sql.extend(args.sql.iter().cloned());
    if sql.is_empty() {
        return Err(CliError::Usage(
            "nothing to profile: give -c SQL or --query tpch:N".into(),
        ));
    }
    // Syntax errors now, not after starting Valgrind.
    for s in &sql {
        kura::session::parse(s)?;
    }
    if !cli.db().exists() {
        if args.queries.is_empty() {
            return Err(CliError::Failed(format!(
                "database {} does not exist",
                cli.db().display()
            )));
        }
        // The TPC-H database is built untraced, with the ordinary loader.
        eprintln!(
            "note: building the TPC-H database at SF {} in {}",
            args.sf,
            cli.db().display()
        );
        let (_db, mut session) = cli.open()?;
        session.set_progress(None);
        kura::tpch::load(
            &mut session,
            kura::tpch::load::Source::Generate(args.sf),
            &|_, _| {},
        )?;
    }
    let program =
        std::env::current_exe().map_err(CliError::io_in("finding the kura executable"))?;
    let mut opts = simulated::ProfileOptions::new(
        cli.db().to_path_buf(),
        sql,
        program,
        CHILD_COMMAND.iter().map(OsString::from).collect(),
    );
    opts.top = args.top;
    opts.warmup = args.warmup;
    opts.geometry_root = args.geometry.clone();
    opts.valgrind = args.valgrind.clone();
    eprintln!("note: tracing under valgrind lackey (slow: about a minute for TPC-H Q6 at SF 0.01)");
    let profile = simulated::profile(&opts)?;
    print!("{}", profile.render());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&profile)?;
        std::fs::write(path, text)
            .map_err(CliError::io_in(format!("writing {}", path.display())))?;
    }
    Ok(())
}

/// The traced run: handshake, open, (warm up), then each query as one class
/// inside the region, then the dump.
fn run_child(cli: &Cli, args: &ChildArgs) -> CliResult<()> {
    child::handshake()?;
    let db = kura::Database::open(cli.db(), cli.open_options())?;
    let mut session = db.session();
    // One thread and synchronous reads: Valgrind runs threads one at a time
    // anyway, and it deadlocks on a worker blocked in io_uring_enter (it does not
    // release its scheduler lock around that call).
    session.execute("SET execution_mode = serial")?;
    let parsed = args
        .sql
        .iter()
        .map(|s| kura::session::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    kura::stack::on_statement_stack(|| -> kura::KuraResult<()> {
        if args.warmup {
            for statements in &parsed {
                for stmt in statements {
                    session.execute_statement(stmt)?;
                }
            }
        }
        memobj::region_start();
        for (class, statements) in parsed.iter().enumerate() {
            memobj::set_class(class);
            for stmt in statements {
                let r = session.execute_statement(stmt);
                if let Err(e) = r {
                    memobj::region_stop();
                    return Err(e);
                }
            }
        }
        memobj::region_stop();
        Ok(())
    })?;
    // Buffer pages are named by the column or index they belong to.
    let storage = db.storage();
    let name_page = kura::profile::page_namer(storage)?;
    Ok(child::write_dump(&args.dump, name_page)?)
}
