//! `kura bench load`: bulk-load throughput at a scale factor — generate+load
//! straight into the loader, and load from existing .tbl files — median of runs,
//! each into a fresh database.

use std::path::PathBuf;
use std::time::Instant;

use kura::tpch::load::Source;
use kura::{Database, OpenOptions};

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Directory for the .tbl files and the scratch databases (default: a temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Runs of each kind; the median is reported.
    #[arg(long, default_value_t = 3)]
    reps: usize,
}

struct Run {
    secs: f64,
    bytes: u64,
    rows: u64,
}

fn load_once(dir: &std::path::Path, source: Source<'_>) -> Result<Run, String> {
    let path = dir.join("bench-load.db");
    let _ = std::fs::remove_file(&path);
    let db = Database::open(&path, OpenOptions::default()).map_err(|e| e.to_string())?;
    let mut session = db.session();
    let start = Instant::now();
    let reports = kura::tpch::load(&mut session, source, &|_, _| {}).map_err(|e| e.to_string())?;
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

fn report(label: &str, r: &Run) {
    println!(
        "{label:<22} {:>8.2} s  {:>8.1} MB/s  {:>12.0} rows/s  ({:.1} MB, {} rows)",
        r.secs,
        r.bytes as f64 / 1e6 / r.secs,
        r.rows as f64 / r.secs,
        r.bytes as f64 / 1e6,
        r.rows
    );
}

pub fn run(args: &Args) -> Result<(), String> {
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = std::env::temp_dir().join(format!("kura-bench-load-{}", std::process::id()));
            tmp.clone()
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let reps = args.reps.max(1);
    println!(
        "kura bench load: SF {}, {} runs each, median; {} cores",
        args.sf,
        reps,
        kura_storage::loader::default_threads()
    );
    let mut gen_runs = Vec::new();
    for _ in 0..reps {
        gen_runs.push(load_once(&dir, Source::Generate(args.sf))?);
    }
    report("generate+load", &median(gen_runs));
    let tbl_dir = dir.join(format!("sf{}", args.sf));
    if !tbl_dir.join("lineitem.tbl").exists() {
        let start = Instant::now();
        kura::tpch::generate_files(args.sf, &tbl_dir, &|_, _| {}).map_err(|e| e.to_string())?;
        println!(
            "(.tbl files written to {} in {:.1} s)",
            tbl_dir.display(),
            start.elapsed().as_secs_f64()
        );
    }
    let mut file_runs = Vec::new();
    for _ in 0..reps {
        file_runs.push(load_once(&dir, Source::Files(&tbl_dir))?);
    }
    report("load from .tbl", &median(file_runs));
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
