//! `kura bench twotier` (issue 17, paper 004 inside the engine): queries over a
//! pool alone, and over the same pool with a second tier (compressed pages or
//! the OS page cache), inclusive and exclusive — pool and tier hit ratios, disk reads and time per query and
//! configuration; a table, a CSV and a chart of disk reads.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use comfy_table::Table;
use kura::tpch::run::run_queries;
use kura::{Database, OpenOptions};
use kura_cache::Mode;
use kura_storage::{BufferStats, TierCapacity, TierConfig, TierKind};

use crate::error::{At, LabError, LabResult};
use crate::plot::{grouped_bar_chart, BarGroup, Labels};

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// A TPC-H database (`kura tpch load`).
    pub db: PathBuf,
    /// Pool bytes.
    pub buffer: u64,
    /// Second-tier bytes (compressed, or of the page cache).
    pub tier2: u64,
    /// Compressed pages in kura's memory, or the OS page cache.
    pub kind: TierKind,
    /// The tier's replacement policy.
    pub tier_policy: String,
    /// Query ids (`1`…`22`, `a`…`d`).
    pub queries: Vec<String>,
    /// Times the whole query list runs in each configuration (later passes find
    /// what earlier ones left in the pool and the tier).
    pub passes: usize,
    /// Read through the OS page cache instead of O_DIRECT.
    pub buffered_io: bool,
    /// Directory for twotier.csv and twotier_reads.png.
    pub out: PathBuf,
}

/// One query's run in one configuration.
#[derive(Debug, Clone)]
pub struct Point {
    pub config: &'static str,
    pub pass: usize,
    pub query: String,
    pub seconds: f64,
    pub stats: BufferStats,
}

const CONFIGS: [(&str, Option<Mode>); 3] = [
    ("pool only", None),
    ("inclusive", Some(Mode::Inclusive)),
    ("exclusive", Some(Mode::Exclusive)),
];

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}", 100.0 * part as f64 / whole as f64)
    }
}

/// Runs every configuration and prints the summary; returns every point.
pub fn run(cfg: &Config, out: &mut dyn Write) -> LabResult<Vec<Point>> {
    if !cfg.db.is_file() {
        return Err(LabError::Missing(format!(
            "{}: no database there (make one with `kura tpch load`)",
            cfg.db.display()
        )));
    }
    let mut points = Vec::new();
    let mut totals: Vec<(&'static str, BufferStats, f64)> = Vec::new();
    for (name, mode) in CONFIGS {
        let tier2 = mode.map(|m| TierConfig {
            capacity: TierCapacity::Bytes(cfg.tier2),
            mode: m,
            policy: cfg.tier_policy.clone(),
            kind: cfg.kind,
        });
        let db = Database::open(
            &cfg.db,
            OpenOptions {
                buffer_bytes: Some(cfg.buffer),
                buffered_io: cfg.buffered_io,
                tier2,
                ..OpenOptions::default()
            },
        )
        .at(cfg.db.display())?;
        let bm = db.storage().buffer().clone();
        let mut session = db.session();
        let start = bm.stats();
        let t0 = Instant::now();
        for pass in 0..cfg.passes.max(1) {
            for q in &cfg.queries {
                let before = bm.stats();
                let t = Instant::now();
                let runs = run_queries(&mut session, std::slice::from_ref(q), None, 1)
                    .at(format_args!("query {q}"))?;
                let seconds = t.elapsed().as_secs_f64();
                if let Some(r) = runs.first() {
                    if r.times.is_empty() {
                        return Err(LabError::QueryFailed(format!(
                            "{name}: query {q}: {}",
                            r.status
                        )));
                    }
                }
                points.push(Point {
                    config: name,
                    pass,
                    query: q.clone(),
                    seconds,
                    stats: bm.stats().since(&before),
                });
            }
        }
        totals.push((name, bm.stats().since(&start), t0.elapsed().as_secs_f64()));
    }

    let mut table = Table::new();
    table.set_header(vec![
        "configuration",
        "fixes",
        "pool hit %",
        "tier hit % (of pool misses)",
        "disk reads",
        "demotions",
        "tier bytes held",
        "lost",
        "seconds",
    ]);
    for (name, s, secs) in &totals {
        table.add_row(vec![
            name.to_string(),
            s.fixes.to_string(),
            pct(s.hits, s.fixes),
            pct(s.tier_hits, s.tier_hits + s.tier_misses),
            s.pages_read.to_string(),
            s.tier_demotions.to_string(),
            s.tier_bytes.to_string(),
            s.tier_lost.to_string(),
            format!("{secs:.3}"),
        ]);
    }
    writeln!(
        out,
        "kura bench twotier: {} — pool {} bytes, tier {} bytes ({}, {}), queries {}, {} passes",
        cfg.db.display(),
        cfg.buffer,
        cfg.tier2,
        cfg.kind.name(),
        cfg.tier_policy,
        cfg.queries.join(","),
        cfg.passes.max(1)
    )?;
    writeln!(out, "{table}")?;

    std::fs::create_dir_all(&cfg.out).at(cfg.out.display())?;
    let csv_path = cfg.out.join("twotier.csv");
    let mut csv = csv::Writer::from_path(&csv_path)?;
    csv.write_record([
        "config",
        "pass",
        "query",
        "seconds",
        "fixes",
        "pool_hits",
        "tier_hits",
        "tier_misses",
        "disk_reads",
        "demotions",
        "tier_bytes",
    ])?;
    for p in &points {
        let s = &p.stats;
        csv.write_record([
            p.config.to_string(),
            p.pass.to_string(),
            p.query.clone(),
            format!("{:.6}", p.seconds),
            s.fixes.to_string(),
            s.hits.to_string(),
            s.tier_hits.to_string(),
            s.tier_misses.to_string(),
            s.pages_read.to_string(),
            s.tier_demotions.to_string(),
            s.tier_bytes.to_string(),
        ])?;
    }
    csv.flush()?;

    // Disk reads per query (all passes), one bar per configuration.
    let names: Vec<String> = CONFIGS.iter().map(|(n, _)| n.to_string()).collect();
    let groups: Vec<BarGroup> = cfg
        .queries
        .iter()
        .map(|q| BarGroup {
            label: q.clone(),
            values: names
                .iter()
                .map(|n| {
                    points
                        .iter()
                        .filter(|p| p.config == n && &p.query == q)
                        .map(|p| p.stats.pages_read as f64)
                        .sum()
                })
                .collect(),
        })
        .collect();
    let chart = cfg.out.join("twotier_reads.png");
    let title = format!(
        "Disk reads per query: pool only, inclusive and exclusive {} tier",
        cfg.kind.name().replace('_', " ")
    );
    grouped_bar_chart(
        &chart,
        &Labels {
            title: &title,
            x: "query",
            y: "pages read from disk",
        },
        &names,
        &groups,
    )?;
    writeln!(out, "wrote {} and {}", csv_path.display(), chart.display())?;
    Ok(points)
}
