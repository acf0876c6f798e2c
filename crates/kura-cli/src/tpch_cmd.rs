//! `kura tpch gen | load | run`: TPC-H data generated offline by tpchgen, loaded
//! with the bulk loader, and the 22 queries run and checked.

use std::path::PathBuf;
use std::time::Instant;

use clap::Subcommand;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use kura::tpch::load::{LoadReport, Source};

use crate::error::{CliError, CliResult};
use crate::progress;
use crate::Cli;

#[derive(Subcommand)]
pub enum TpchCommand {
    /// Write the eight .tbl files (tpchgen, byte-identical to dbgen).
    Gen {
        /// Scale factor: 1 is about 1.1 GB of .tbl files, 0.01 about 11 MB.
        #[arg(long)]
        sf: f64,
        /// Directory for the files (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Create the eight tables and load them (generated on the fly, or from .tbl files).
    Load {
        /// Scale factor of the generated data (ignored with --from).
        #[arg(long, default_value_t = 0.1)]
        sf: f64,
        /// Load TABLE.tbl files from this directory instead of generating.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Also build paper 003's index set (keys, foreign keys, dates, c_name, p_name).
        #[arg(long)]
        indexes: bool,
        /// Also build covering indexes for (A)-(D) and their variants (key plus
        /// INCLUDE columns: index-only plans); not part of the benchmark's set.
        #[arg(long)]
        covering: bool,
        #[command(flatten)]
        db: crate::DbArgs,
    },
    /// Run the 22 queries (and/or the selective queries a-d), print times, optionally check answers.
    Run {
        /// Scale factor of the loaded data (selects the reference answers).
        #[arg(long, default_value_t = 0.1)]
        sf: f64,
        /// Queries to run, e.g. 1,3,5 or a,b,c,d or all (default: the 22 TPC-H queries).
        #[arg(long, value_delimiter = ',')]
        queries: Vec<String>,
        /// Compare every result with the reference answers; exit non-zero on a mismatch.
        #[arg(long)]
        check: bool,
        /// Generate and load the data at --sf first.
        #[arg(long)]
        load: bool,
        /// Runs per query (the median is reported).
        #[arg(long, default_value_t = 1)]
        reps: usize,
        /// Session settings for the run, e.g. --set enable_index=off --set execution_mode=serial.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        settings: Vec<String>,
        #[command(flatten)]
        db: crate::DbArgs,
    },
}

impl TpchCommand {
    pub fn db_args(&self) -> Option<&crate::DbArgs> {
        match self {
            TpchCommand::Gen { .. } => None,
            TpchCommand::Load { db, .. } | TpchCommand::Run { db, .. } => Some(db),
        }
    }
}

pub fn run(cli: &Cli, cmd: &TpchCommand) -> CliResult<()> {
    match cmd {
        TpchCommand::Gen { sf, out } => {
            let start = Instant::now();
            let bar = progress::TableBytes::new("generating", estimated_tbl_bytes(*sf));
            let files = kura::tpch::generate_files(*sf, out, &|t, b| bar.update(t, b))?;
            bar.finish();
            let total: u64 = files.iter().map(|(_, b)| b).sum();
            for (t, bytes) in &files {
                println!(
                    "{:<10} {:>14} bytes  {}",
                    t,
                    bytes,
                    out.join(format!("{t}.tbl")).display()
                );
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "generated {:.1} MB in {secs:.2} s ({:.1} MB/s)",
                total as f64 / 1e6,
                total as f64 / 1e6 / secs
            );
            Ok(())
        }
        TpchCommand::Load {
            sf,
            from,
            indexes,
            covering,
            ..
        } => {
            let (_db, mut session) = cli.open()?;
            let start = Instant::now();
            let (source, total) = match from {
                Some(dir) => (Source::Files(dir), tbl_file_bytes(dir)),
                None => (Source::Generate(*sf), estimated_tbl_bytes(*sf)),
            };
            // The session's own per-COPY bar would restart for every table.
            session.set_progress(None);
            let bar = progress::TableBytes::new("loading", total);
            let reports = kura::tpch::load(&mut session, source, &|t, b| bar.update(t, b))?;
            bar.finish();
            print_load_table(&reports, start.elapsed().as_secs_f64());
            if *indexes {
                build_indexes(
                    &mut session,
                    kura::tpch::load::INDEX_SQL,
                    kura::tpch::load::create_indexes,
                )?;
            }
            if *covering {
                build_indexes(
                    &mut session,
                    kura::tpch::load::COVERING_INDEX_SQL,
                    kura::tpch::load::create_covering_indexes,
                )?;
            }
            Ok(())
        }
        TpchCommand::Run {
            sf,
            queries,
            check,
            load,
            reps,
            settings,
            ..
        } => {
            if *load {
                run(
                    cli,
                    &TpchCommand::Load {
                        sf: *sf,
                        from: None,
                        indexes: false,
                        covering: false,
                        db: crate::DbArgs::default(),
                    },
                )?;
            }
            let load_hint = || {
                format!(
                    "load TPC-H first (kura --db {} tpch load --sf {sf}) or add --load",
                    cli.db().display()
                )
            };
            // Not created empty just to fail every query on a missing table.
            if !cli.db().exists() {
                return Err(CliError::Failed(format!(
                    "no database at {}: {}",
                    cli.db().display(),
                    load_hint()
                )));
            }
            let (_db, mut session) = cli.open()?;
            if session.storage().catalog().table("lineitem").is_none() {
                return Err(CliError::Failed(format!(
                    "{} holds no TPC-H tables: {}",
                    cli.db().display(),
                    load_hint()
                )));
            }
            for s in settings {
                let (name, value) = s
                    .split_once('=')
                    .ok_or_else(|| CliError::Usage(format!("--set {s}: expected NAME=VALUE")))?;
                session
                    .execute(&format!("SET {} = '{}'", name.trim(), value.trim()))
                    .map_err(CliError::db_in(format!("--set {s}")))?;
            }
            let answers = if *check {
                Some(kura::tpch::run::answers_dir(*sf).ok_or_else(|| {
                    CliError::Failed(format!(
                        "no reference answers for SF {sf}: expected shared/tpch/answers/{} beside the repository, or set {}",
                        kura::tpch::run::sf_dir_name(*sf),
                        kura::tpch::run::ANSWERS_ENV
                    ))
                })?)
            } else {
                None
            };
            let asked: Vec<String> = if queries.iter().any(|q| q.eq_ignore_ascii_case("all")) {
                kura::tpch::run::QUERY_IDS
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            } else {
                queries.clone()
            };
            // Resolved here (none given: the 22 TPC-H queries), since they run one at
            // a time below and an empty list would run nothing.
            let ids: Vec<String> = kura::tpch::run::resolve_ids(&asked)?
                .into_iter()
                .map(String::from)
                .collect();
            let loaded = kura::tpch::run::loaded_scale_factor(&mut session);
            let sf_note = loaded.filter(|l| (l - sf).abs() > 1e-9).map(|l| {
                format!(
                    "note: the database holds TPC-H SF {l} (supplier rows / 10,000), not SF {sf}; \
                     answers for SF {sf} cannot match — run with --sf {l}"
                )
            });
            if let Some(n) = &sf_note {
                eprintln!("{n}");
            }
            // One query at a time, so the bar moves (and shows an ETA) as each finishes.
            let bar = progress::on_terminal()
                .then(|| progress::count_bar("queries", ids.len() as u64, "queries"));
            let mut runs = Vec::new();
            for id in &ids {
                if let Some(b) = &bar {
                    b.set_message(format!("query {id}"));
                }
                let mut r = kura::tpch::run::run_queries(
                    &mut session,
                    std::slice::from_ref(id),
                    answers.as_deref(),
                    *reps,
                )?;
                runs.append(&mut r);
                if let Some(b) = &bar {
                    b.inc(1);
                }
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED);
            t.set_header(["query", "rows", "median ms", "result"]);
            let mut failures = 0;
            let mut total = 0.0;
            for r in &runs {
                let ms = r.median.as_secs_f64() * 1e3;
                total += ms;
                if r.status.is_failure() {
                    failures += 1;
                }
                t.add_row([
                    r.label(),
                    r.rows.to_string(),
                    format!("{ms:.1}"),
                    r.status.to_string(),
                ]);
            }
            t.add_row([
                "total".to_string(),
                String::new(),
                format!("{total:.1}"),
                String::new(),
            ]);
            println!("{t}");
            println!(
                "SF {sf}, {} queries, {} run(s) each",
                runs.len(),
                reps.max(&1)
            );
            if failures > 0 {
                return Err(CliError::Failed(format!(
                    "{failures} of {} queries failed or gave wrong answers{}",
                    runs.len(),
                    sf_note.map_or(String::new(), |n| format!(" ({n})"))
                )));
            }
            Ok(())
        }
    }
}

/// Bytes of the .tbl files at scale factor 1 (dbgen's), by table; all but nation and
/// region grow linearly with the scale factor.
const TBL_BYTES_SF1: [(&str, u64); 8] = [
    ("lineitem", 759_863_287),
    ("orders", 171_952_161),
    ("partsupp", 118_984_616),
    ("customer", 24_346_144),
    ("part", 24_135_125),
    ("supplier", 1_409_184),
    ("nation", 2_224),
    ("region", 389),
];

/// The .tbl bytes expected at `sf`: the progress bars' total before anything exists.
pub fn estimated_tbl_bytes(sf: f64) -> u64 {
    TBL_BYTES_SF1
        .iter()
        .map(|&(t, b)| {
            if t == "nation" || t == "region" {
                b
            } else {
                (b as f64 * sf) as u64
            }
        })
        .sum()
}

/// Total size of the .tbl files in `dir` (what loading them reads).
fn tbl_file_bytes(dir: &std::path::Path) -> u64 {
    TBL_BYTES_SF1
        .iter()
        .filter_map(|(t, _)| std::fs::metadata(dir.join(format!("{t}.tbl"))).ok())
        .map(|m| m.len())
        .sum()
}

/// Prints rows, bytes and throughput per table and in total.
pub fn print_load_table(reports: &[LoadReport], total_secs: f64) {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["table", "rows", "MB", "seconds", "MB/s", "rows/s"]);
    for r in reports {
        let s = r.elapsed.as_secs_f64().max(1e-9);
        t.add_row([
            r.table.clone(),
            r.rows.to_string(),
            format!("{:.1}", r.bytes as f64 / 1e6),
            format!("{s:.3}"),
            format!("{:.1}", r.bytes as f64 / 1e6 / s),
            format!("{:.0}", r.rows as f64 / s),
        ]);
    }
    let rows: u64 = reports.iter().map(|r| r.rows).sum();
    let bytes: u64 = reports.iter().map(|r| r.bytes).sum();
    t.add_row([
        "total".to_string(),
        rows.to_string(),
        format!("{:.1}", bytes as f64 / 1e6),
        format!("{total_secs:.3}"),
        format!("{:.1}", bytes as f64 / 1e6 / total_secs),
        format!("{:.0}", rows as f64 / total_secs),
    ]);
    println!("{t}");
}

/// A function that builds an index set, reporting each index by name.
type IndexBuild = fn(
    &mut kura::Session,
    &(dyn Fn(&str) + Sync),
) -> kura::KuraResult<Vec<(String, std::time::Duration)>>;

/// Builds the indexes of `sql` with `build`, with a progress bar, and prints
/// each index's build time.
fn build_indexes(session: &mut kura::Session, sql: &str, build: IndexBuild) -> CliResult<()> {
    let start = Instant::now();
    let count = sql.split(';').filter(|s| s.contains("CREATE")).count();
    let bar =
        progress::on_terminal().then(|| progress::count_bar("indexes", count as u64, "indexes"));
    let built = build(session, &|name| {
        if let Some(b) = &bar {
            b.set_message(name.to_string());
            b.inc(1);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["index", "seconds"]);
    for (name, d) in &built {
        t.add_row([name.clone(), format!("{:.3}", d.as_secs_f64())]);
    }
    t.add_row([
        "total".to_string(),
        format!("{:.3}", start.elapsed().as_secs_f64()),
    ]);
    println!("{t}");
    Ok(())
}
