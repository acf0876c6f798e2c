//! Bulk-load throughput (no paper figure: the baseline against DuckDB's `read_csv`,
//! `kura bench load`): generate+load straight into the loader, and load from
//! existing .tbl files, at a scale factor — median of runs, each into a fresh database.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use kura::tpch::load::Source;
use kura::{Database, OpenOptions};

use crate::error::{At, LabResult};

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    pub sf: f64,
    /// Directory for the .tbl files and the scratch databases (`None`: a temp dir).
    pub dir: Option<PathBuf>,
    /// Runs of each kind; the median is reported.
    pub reps: usize,
}

struct Run {
    secs: f64,
    bytes: u64,
    rows: u64,
}

fn load_once(dir: &std::path::Path, source: Source<'_>) -> LabResult<Run> {
    let path = dir.join("bench-load.db");
    let _ = std::fs::remove_file(&path);
    let db = Database::open(&path, OpenOptions::default())?;
    let mut session = db.session();
    let start = Instant::now();
    let reports = kura::tpch::load(&mut session, source, &|_, _| {})?;
    let secs = start.elapsed().as_secs_f64();
    drop(session);
    drop(db);
    let _ = std::fs::remove_file(&path);
    Ok(Run {
        secs,
        bytes: reports.iter().map(|r| r.bytes).sum(),
        rows: reports.iter().map(|r| r.rows).sum(),
    })
}

fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    runs.swap_remove(runs.len() / 2)
}

fn report(out: &mut dyn Write, label: &str, r: &Run) -> LabResult<()> {
    writeln!(
        out,
        "{label:<22} {:>8.2} s  {:>8.1} MB/s  {:>12.0} rows/s  ({:.1} MB, {} rows)",
        r.secs,
        r.bytes as f64 / 1e6 / r.secs,
        r.rows as f64 / r.secs,
        r.bytes as f64 / 1e6,
        r.rows
    )?;
    Ok(())
}

/// Runs the study, writing its report to `out`.
pub fn run(args: &Config, out: &mut dyn Write) -> LabResult<()> {
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = std::env::temp_dir().join(format!("kura-bench-load-{}", std::process::id()));
            tmp.clone()
        }
    };
    std::fs::create_dir_all(&dir).at(dir.display())?;
    let reps = args.reps.max(1);
    writeln!(
        out,
        "kura bench load: SF {}, {} runs each, median; {} cores",
        args.sf,
        reps,
        kura_storage::loader::default_threads()
    )?;
    let mut gen_runs = Vec::new();
    for _ in 0..reps {
        gen_runs.push(load_once(&dir, Source::Generate(args.sf))?);
    }
    report(out, "generate+load", &median(gen_runs))?;
    let tbl_dir = dir.join(format!("sf{}", args.sf));
    if !tbl_dir.join("lineitem.tbl").exists() {
        let start = Instant::now();
        kura::tpch::generate_files(args.sf, &tbl_dir, &|_, _| {})?;
        writeln!(
            out,
            "(.tbl files written to {} in {:.1} s)",
            tbl_dir.display(),
            start.elapsed().as_secs_f64()
        )?;
    }
    let mut file_runs = Vec::new();
    for _ in 0..reps {
        file_runs.push(load_once(&dir, Source::Files(&tbl_dir))?);
    }
    report(out, "load from .tbl", &median(file_runs))?;
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
