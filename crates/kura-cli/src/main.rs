//! `kura`: the command-line front end — interactive shell, one-shot SQL, loading,
//! TPC-H generation/loading, and benchmarks — all through the `kura` façade.

mod bench_cmd;
mod cache_cmd;
mod cachesim;
#[cfg(feature = "cluster")]
mod cluster_cmd;
mod error;
mod format;
mod profile_cmd;
mod progress;
mod serve;
mod shell;
mod tpch_cmd;
mod trace_cmd;

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use kura::buffer::{TierCapacity, TierConfig, TierMode, TraceKind};
use kura::{Database, OpenOptions, Session};
use kura_common::size::parse_size;

use error::{CliError, CliResult};
use format::Format;

/// Heading of the options that apply wherever a database is opened (before or after
/// the subcommand).
const DB_OPTIONS: &str = "Database options";

/// The database options, declared once: `kura` takes them before a subcommand and
/// each subcommand that opens the database after its name; those after it override
/// the same options given before it (`DbArgs::merge`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DbArgs {
    /// Database file [default: kura.db].
    #[arg(long, help_heading = DB_OPTIONS)]
    db: Option<PathBuf>,
    /// Buffer pool size, e.g. 256MB or 4GiB (default: a quarter of RAM).
    #[arg(long, value_parser = parse_size_arg, help_heading = DB_OPTIONS)]
    buffer: Option<u64>,
    /// Read through the OS page cache instead of O_DIRECT.
    #[arg(long, help_heading = DB_OPTIONS)]
    buffered_io: bool,
    /// Buffer replacement policy (lru, clock, arc, 2q, ...).
    #[arg(long, help_heading = DB_OPTIONS)]
    buffer_policy: Option<String>,
    /// Record the buffer manager's page accesses: page ids asked for into FILE, page
    /// ids read from disk into FILE.reads (input for `kura cachesim --trace text`).
    #[arg(long, value_name = "FILE", help_heading = DB_OPTIONS)]
    trace_pages: Option<PathBuf>,
    /// If the newest header slot is damaged, open the previous commit instead of
    /// refusing (the newest commit is lost; a warning names it).
    #[arg(long, help_heading = DB_OPTIONS)]
    recover_header: bool,
    /// Memory all running queries together may hold in hash tables, sorts and
    /// results, e.g. 8GB (default: three fifths of RAM); each query is also bound
    /// by its `memory_limit` setting.
    #[arg(long, value_parser = parse_size_arg, help_heading = DB_OPTIONS)]
    max_memory: Option<u64>,
    #[command(flatten)]
    tier2: TierArgs,
}

impl DbArgs {
    /// Takes the options given after a subcommand (`later`) over those before it.
    fn merge(&mut self, later: &DbArgs) {
        if later.db.is_some() {
            self.db = later.db.clone();
        }
        if later.buffer.is_some() {
            self.buffer = later.buffer;
        }
        if later.max_memory.is_some() {
            self.max_memory = later.max_memory;
        }
        self.buffered_io |= later.buffered_io;
        self.recover_header |= later.recover_header;
        if later.buffer_policy.is_some() {
            self.buffer_policy = later.buffer_policy.clone();
        }
        if later.trace_pages.is_some() {
            self.trace_pages = later.trace_pages.clone();
        }
        let (t, d) = (&mut self.tier2, &later.tier2);
        if d.tier2.is_some() || d.tier2_pages.is_some() {
            t.tier2 = d.tier2;
            t.tier2_pages = d.tier2_pages;
        }
        if d.tier2_mode.is_some() {
            t.tier2_mode = d.tier2_mode;
        }
        if d.tier2_policy.is_some() {
            t.tier2_policy = d.tier2_policy.clone();
        }
        if d.tier2_kind.is_some() {
            t.tier2_kind = d.tier2_kind;
        }
    }
}

/// The second buffer tier below the pool (compressed pages in DRAM, or the OS
/// page cache).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TierArgs {
    /// A second buffer tier below the pool, e.g. 256MB (default: none); its kind
    /// is --tier2-kind.
    #[arg(long, value_name = "SIZE", value_parser = parse_size_arg, help_heading = DB_OPTIONS)]
    tier2: Option<u64>,
    /// The second tier sized in pages instead of bytes (for comparisons with
    /// `kura cachesim`, whose levels count blocks).
    #[arg(long, value_name = "N", conflicts_with = "tier2", help_heading = DB_OPTIONS)]
    tier2_pages: Option<usize>,
    /// exclusive (default; pool victims go down, a tier hit moves the page up —
    /// paper 004) or inclusive (pages read from disk go into both levels).
    #[arg(long, value_name = "MODE", value_parser = kura::buffer::parse_tier_mode, help_heading = DB_OPTIONS)]
    tier2_mode: Option<kura::buffer::TierMode>,
    /// Replacement policy of the second tier (default lru).
    #[arg(long, value_name = "POLICY", help_heading = DB_OPTIONS)]
    tier2_policy: Option<String>,
    /// compressed (default; lz4 page images in kura's memory) or page_cache (the
    /// OS page cache of the database file, bounded to the tier's size by kura).
    #[arg(long, value_name = "KIND", value_parser = kura::buffer::parse_tier_kind, help_heading = DB_OPTIONS)]
    tier2_kind: Option<kura::buffer::TierKind>,
}

impl TierArgs {
    fn config(&self) -> Option<TierConfig> {
        let capacity = match (self.tier2, self.tier2_pages) {
            (Some(b), _) => TierCapacity::Bytes(b),
            (None, Some(n)) => TierCapacity::Pages(n),
            (None, None) => return None,
        };
        let mut c = TierConfig::new(capacity, self.tier2_mode.unwrap_or(TierMode::Exclusive));
        if let Some(p) = &self.tier2_policy {
            c.policy = p.clone();
        }
        if let Some(k) = self.tier2_kind {
            c.kind = k;
        }
        Some(c)
    }
}

#[derive(Parser)]
#[command(
    name = "kura",
    version,
    about = "kura — an analytic SQL database that knows its memory hierarchy",
    // Before a subcommand `--db` has its default (after one, none: the one before counts).
    mut_arg("db", |a| a.help("Database file").default_value("kura.db"))
)]
struct Cli {
    #[command(flatten)]
    database: DbArgs,
    /// Output format for query results.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Field delimiter of `--format csv` (one character; `\t` for a tab).
    #[arg(long = "delimiter", value_name = "CHAR", value_parser = parse_delimiter)]
    out_delimiter: Option<u8>,
    /// Text printed for NULL in table, markdown, csv and tsv output (default: empty in
    /// csv/tsv, NULL otherwise, ∅ in the shell's tables); JSON always writes null.
    #[arg(long, value_name = "TEXT")]
    null: Option<String>,
    /// Run this SQL and exit.
    #[arg(short = 'c', long = "command", allow_hyphen_values = true)]
    command: Option<String>,
    #[command(subcommand)]
    sub: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Load a file (CSV, dbgen .tbl, Parquet) into a table; a .csv, .tsv or .parquet file
    /// creates a table that does not exist from its columns (types sniffed from the file).
    Load {
        /// The table to append to or create.
        table: String,
        /// The file to read.
        file: PathBuf,
        /// Field delimiter (default '|', or ',' for .csv files).
        #[arg(long)]
        delimiter: Option<char>,
        /// The first line is a header.
        #[arg(long)]
        header: bool,
        /// CSV quoting rules (double quotes).
        #[arg(long)]
        csv: bool,
        /// The text that stands for NULL (as COPY's NULL option): a field equal
        /// to it is NULL and no other is; by default `\N` or an empty field.
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        null: Option<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// TPC-H: generate, load, run.
    Tpch {
        #[command(subcommand)]
        cmd: tpch_cmd::TpchCommand,
    },
    /// Serve the PostgreSQL wire protocol (psql, JDBC, psycopg connect unchanged).
    Serve(serve::Args),
    /// Cache simulator: replacement policies, two-level caches, reuse distance (paper 004).
    Cachesim(Box<cachesim::CachesimArgs>),
    /// LLC partitioning by memory object (paper 000): status, protect, release.
    Cache {
        #[command(subcommand)]
        cmd: cache_cmd::CacheCommand,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        cmd: bench_cmd::BenchCommand,
    },
    /// Profile queries with performance counters or samples (paper 002): per
    /// operator, function and source line; --diff compares two saved profiles;
    /// `-- COMMAND` and --pid profile other programs.
    Profile(Box<profile_cmd::ProfileArgs>),
    /// A shared-nothing cluster of kura shards run by datafusion-distributed: load, worker,
    /// query (built with the `cluster` feature).
    #[cfg(feature = "cluster")]
    Cluster {
        #[command(subcommand)]
        cmd: cluster_cmd::ClusterCommand,
    },
    /// Memory-access traces: the simulated cache profile (Valgrind lackey + cache model).
    #[command(hide = true)]
    Trace {
        #[command(subcommand)]
        cmd: trace_cmd::TraceCommand,
    },
}

fn parse_delimiter(s: &str) -> Result<u8, String> {
    match s {
        "\\t" | "tab" => Ok(b'\t'),
        _ if s.len() == 1 => Ok(s.as_bytes()[0]),
        _ => Err(format!("expected one (ASCII) character, got '{s}'")),
    }
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

impl Command {
    /// The database options given after the subcommand, if it opens a database.
    fn db_args(&self) -> Option<DbArgs> {
        match self {
            Command::Load { db, .. } => Some(db.clone()),
            Command::Tpch { cmd } => cmd.db_args().cloned(),
            Command::Serve(a) => Some(a.db.clone()),
            Command::Bench { cmd } => cmd.db_args(),
            Command::Cachesim(_) => None,
            Command::Profile(a) => Some(a.db.clone()),
            Command::Trace { cmd } => cmd.db_args().cloned(),
            Command::Cache { cmd } => cmd.db_args(),
            #[cfg(feature = "cluster")]
            Command::Cluster { .. } => None,
        }
    }
}

impl Cli {
    /// The database file: `--db`, after the subcommand or before it, or kura.db.
    fn db(&self) -> &Path {
        self.database.db.as_deref().unwrap_or(Path::new("kura.db"))
    }

    fn open_options(&self) -> OpenOptions {
        let d = &self.database;
        OpenOptions {
            buffer_bytes: d.buffer,
            buffered_io: d.buffered_io,
            buffer_policy: d.buffer_policy.clone(),
            page_size: None,
            recover_header: d.recover_header,
            max_memory: d.max_memory,
            tier2: d.tier2.config(),
            ..OpenOptions::default()
        }
    }

    fn output_options(&self) -> format::Options {
        let mut o = format::Options::new(self.format);
        if let Some(d) = self.out_delimiter {
            o.delimiter = d;
        }
        o.null = self.null.clone();
        o
    }

    /// Opens the database (saying so when the file is new) and starts the page
    /// traces `--trace-pages` asks for.
    fn open_database(&self) -> CliResult<Database> {
        if !self.db().exists() {
            eprintln!(
                "note: {} does not exist; creating a new, empty database",
                self.db().display()
            );
        }
        let db = Database::open(self.db(), self.open_options())?;
        if let Some(path) = &self.database.trace_pages {
            let bm = db.storage().buffer();
            let mut reads = path.clone().into_os_string();
            reads.push(".reads");
            bm.start_trace(TraceKind::Requests, path)
                .map_err(kura::KuraError::from)?;
            bm.start_trace(TraceKind::Reads, std::path::Path::new(&reads))
                .map_err(kura::KuraError::from)?;
        }
        Ok(db)
    }

    fn open(&self) -> CliResult<(Database, Session)> {
        let db = self.open_database()?;
        let mut session = db.session();
        session.set_progress(progress::for_loads());
        Ok((db, session))
    }
}

fn main() -> ExitCode {
    kura_common::allocator::keep_freed_memory();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KURA_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    let mut cli = Cli::parse();
    if let Some(d) = cli.sub.as_ref().and_then(Command::db_args) {
        cli.database.merge(&d);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ERROR: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> CliResult<()> {
    match &cli.sub {
        Some(Command::Load {
            table,
            file,
            delimiter,
            header,
            csv,
            null,
            ..
        }) => {
            let (_db, mut session) = cli.open()?;
            let delimiter = match delimiter {
                Some(d) if d.is_ascii() => Some(*d as u8),
                Some(d) => {
                    return Err(CliError::Usage(format!(
                        "--delimiter must be an ASCII character, not {d:?}"
                    )))
                }
                None => None,
            };
            let opts = kura::load_file::LoadOptions {
                delimiter,
                header: *header,
                csv: *csv,
                null: null.clone(),
            };
            let start = std::time::Instant::now();
            let r = kura::load_file::load_file(&mut session, table, file, &opts)?;
            if let Some(cols) = &r.created {
                let cols: Vec<String> = cols
                    .iter()
                    .map(|(n, t)| format!("{n} {}", t.to_string().to_lowercase()))
                    .collect();
                eprintln!("created table {table} ({})", cols.join(", "));
            }
            eprintln!("COPY {} in {:.2} s", r.rows, start.elapsed().as_secs_f64());
            Ok(())
        }
        Some(Command::Tpch { cmd }) => tpch_cmd::run(&cli, cmd),
        Some(Command::Profile(args)) => profile_cmd::run(args, cli.db(), || cli.open()),
        Some(Command::Trace { cmd }) => trace_cmd::run(&cli, cmd),
        Some(Command::Serve(args)) => serve::run(args, cli.db(), cli.open_database()?),
        Some(Command::Cachesim(args)) => cachesim::run(args.as_ref().clone()),
        #[cfg(feature = "cluster")]
        Some(Command::Cluster { cmd }) => cluster_cmd::run(cmd),
        Some(Command::Cache { cmd }) => cache_cmd::run(cmd, || cli.open().map(|(db, _)| db)),
        Some(Command::Bench { cmd }) => {
            if matches!(
                cmd,
                bench_cmd::BenchCommand::Modes(_) | bench_cmd::BenchCommand::Paper003(_)
            ) && (cli.database.buffered_io
                || cli.database.buffer_policy.is_some()
                || cli.database.trace_pages.is_some()
                || cli.database.tier2.config().is_some()
                || cli.database.recover_header)
            {
                return Err(CliError::Usage(
                    "bench modes and paper003 open the database cold with O_DIRECT and its own buffer for \
                     each run: --buffered-io, --buffer-policy, --trace-pages, --tier2 and \
                     --recover-header do not apply"
                        .into(),
                ));
            }
            bench_cmd::run(cmd, cli.db(), cli.database.buffer)
        }
        None => {
            let (_db, mut session) = cli.open()?;
            let opts = cli.output_options();
            if let Some(sql) = &cli.command {
                return run_sql(&mut session, sql, &opts);
            }
            if std::io::stdin().is_terminal() {
                shell::run(&mut session, shell::shell_options(opts))
            } else {
                let mut sql = String::new();
                std::io::stdin().read_to_string(&mut sql)?;
                run_sql(&mut session, &sql, &opts)
            }
        }
    }
}

/// Runs SQL non-interactively, printing each statement's result as it finishes.
fn run_sql(session: &mut Session, sql: &str, opts: &format::Options) -> CliResult<()> {
    // The parsed statements may be too deep for this thread's stack to drop.
    kura::stack::on_statement_stack(|| run_sql_on_stack(session, sql, opts))
}

fn run_sql_on_stack(session: &mut Session, sql: &str, opts: &format::Options) -> CliResult<()> {
    let statements = kura::session::parse(sql)?;
    let mut out = std::io::stdout().lock();
    if opts.format == Format::Arrow && std::io::IsTerminal::is_terminal(&out) {
        return Err(CliError::Usage(
            "--format arrow writes binary Arrow IPC: redirect it to a file or a pipe".into(),
        ));
    }
    for stmt in &statements {
        let r = session.execute_statement(stmt)?;
        format::print(&mut out, &r, opts)?;
    }
    Ok(out.flush()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Cli {
        let mut cli = Cli::try_parse_from(args).expect("arguments parse");
        if let Some(d) = cli.sub.as_ref().and_then(Command::db_args) {
            cli.database.merge(&d);
        }
        cli
    }

    /// Every option of every subcommand says what it does, and so does every
    /// value of an option that lists its values with descriptions.
    #[test]
    fn every_option_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} --{id}"));
                }
                let values = arg.get_possible_values();
                let described = values.iter().filter(|v| v.get_help().is_some()).count();
                if described > 0 && described < values.len() {
                    missing.push(format!("{path} --{id}: values without a description"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {}: no description", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(
            &<Cli as clap::CommandFactory>::command(),
            "kura",
            &mut missing,
        );
        assert!(missing.is_empty(), "undescribed: {missing:#?}");
    }

    /// A subcommand lists the database options only if it opens a database, and
    /// `bench modes` only the two it uses.
    #[test]
    fn subcommands_list_only_the_options_that_apply() {
        let root = <Cli as clap::CommandFactory>::command();
        let longs = |path: &[&str]| -> Vec<String> {
            let mut cmd = &root;
            for name in path {
                cmd = cmd.find_subcommand(name).expect("subcommand");
            }
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(String::from))
                .collect()
        };
        for path in [
            &["tpch", "gen"][..],
            &["cachesim", "run"],
            &["bench", "iops"],
        ] {
            let l = longs(path);
            assert!(!l.contains(&"db".to_string()), "{path:?}: {l:?}");
        }
        let modes = longs(&["bench", "modes"]);
        assert!(modes.contains(&"db".into()) && modes.contains(&"buffer".into()));
        for other in [
            "buffered-io",
            "buffer-policy",
            "trace-pages",
            "recover-header",
        ] {
            assert!(
                !modes.contains(&other.to_string()),
                "bench modes lists --{other}"
            );
        }
        let run = longs(&["tpch", "run"]);
        assert!(run.contains(&"trace-pages".into()) && run.contains(&"db".into()));
    }

    #[test]
    fn database_options_count_before_or_after_the_subcommand() {
        let cli = parsed(&["kura", "--db", "x.db", "bench", "modes"]);
        assert_eq!(cli.db(), Path::new("x.db"));
        let cli = parsed(&["kura", "bench", "modes", "--db", "y.db", "--buffer", "8MiB"]);
        assert_eq!(
            (cli.db(), cli.database.buffer),
            (Path::new("y.db"), Some(8 << 20))
        );
        let cli = parsed(&[
            "kura", "--db", "x.db", "tpch", "run", "--db", "y.db", "--buffer", "1MiB",
        ]);
        assert_eq!(
            (cli.db(), cli.database.buffer),
            (Path::new("y.db"), Some(1 << 20))
        );
        let cli = parsed(&["kura", "load", "t", "f.tbl", "--buffered-io"]);
        assert!(cli.database.buffered_io);
        // Commands that open no database do not take (or list) its options.
        assert!(Cli::try_parse_from([
            "kura", "tpch", "gen", "--sf", "1", "--out", "d", "--db", "x"
        ])
        .is_err());
        assert!(Cli::try_parse_from([
            "kura",
            "-c",
            "SELECT 1",
            "--format",
            "jsonl",
            "--delimiter",
            "\\t"
        ])
        .is_ok());
    }
}
