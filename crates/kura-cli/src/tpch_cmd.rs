//! `kura tpch gen | load | run`: TPC-H data generated offline by tpchgen, loaded
//! with the bulk loader, and the 22 queries run and checked.

use std::path::PathBuf;
use std::time::Instant;

use clap::Subcommand;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use kura::tpch::load::{LoadReport, Source};

use crate::progress;
use crate::Cli;

#[derive(Subcommand)]
pub enum TpchCommand {
    /// Write the eight .tbl files.
    Gen {
        #[arg(long)]
        sf: f64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Create the eight tables and load them (generated on the fly, or from .tbl files).
    Load {
        #[arg(long, default_value_t = 0.1)]
        sf: f64,
        /// Load TABLE.tbl files from this directory instead of generating.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Also build paper 003's index set (keys, foreign keys, dates, c_name, p_name).
        #[arg(long)]
        indexes: bool,
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
    },
}

pub fn run(cli: &Cli, cmd: &TpchCommand) -> Result<(), String> {
    match cmd {
        TpchCommand::Gen { sf, out } => {
            let start = Instant::now();
            let bar = progress::on_terminal().then(|| progress::bytes_bar("generating", 0));
            let report = |_: &str, _: u64| {
                if let Some(b) = &bar {
                    b.tick();
                }
            };
            let files = kura::tpch::generate_files(*sf, out, &report).map_err(|e| e.to_string())?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
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
        TpchCommand::Load { sf, from, indexes } => {
            let (_db, mut session) = cli.open()?;
            let start = Instant::now();
            let bar = progress::on_terminal().then(|| progress::bytes_bar("loading", 0));
            let report = |table: &str, bytes: u64| {
                if let Some(b) = &bar {
                    b.set_message(table.to_string());
                    b.set_position(bytes);
                }
            };
            let source = match from {
                Some(dir) => Source::Files(dir),
                None => Source::Generate(*sf),
            };
            let reports =
                kura::tpch::load(&mut session, source, &report).map_err(|e| e.to_string())?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            print_load_table(&reports, start.elapsed().as_secs_f64());
            if *indexes {
                let start = Instant::now();
                let bar = progress::on_terminal().then(|| progress::bytes_bar("indexes", 0));
                let built = kura::tpch::load::create_indexes(&mut session, &|name| {
                    if let Some(b) = &bar {
                        b.set_message(name.to_string());
                        b.tick();
                    }
                })
                .map_err(|e| e.to_string())?;
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
        } => {
            if *load {
                run(
                    cli,
                    &TpchCommand::Load {
                        sf: *sf,
                        from: None,
                        indexes: false,
                    },
                )?;
            }
            let (_db, mut session) = cli.open()?;
            for s in settings {
                let (name, value) = s
                    .split_once('=')
                    .ok_or_else(|| format!("--set {s}: expected NAME=VALUE"))?;
                session
                    .execute(&format!("SET {} = '{}'", name.trim(), value.trim()))
                    .map_err(|e| format!("--set {s}: {e}"))?;
            }
            let answers = if *check {
                Some(kura::tpch::run::answers_dir(*sf).ok_or_else(|| {
                    format!(
                        "no reference answers for SF {sf}: expected shared/tpch/answers/{} beside the repository, or set {}",
                        kura::tpch::run::sf_dir_name(*sf),
                        kura::tpch::run::ANSWERS_ENV
                    )
                })?)
            } else {
                None
            };
            let ids: Vec<String> = if queries.iter().any(|q| q.eq_ignore_ascii_case("all")) {
                kura::tpch::run::QUERY_IDS
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            } else {
                queries.clone()
            };
            let runs = kura::tpch::run::run_queries(&mut session, &ids, answers.as_deref(), *reps)
                .map_err(|e| e.to_string())?;
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
                return Err(format!(
                    "{failures} of {} queries failed or gave wrong answers",
                    runs.len()
                ));
            }
            Ok(())
        }
    }
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
