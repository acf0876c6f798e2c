//! Paper 004's figures 12–14 and its table (`kura cachesim paper004`): uniform random
//! reads over a two-level cache — an LRU upper level of three sizes over lower levels of
//! several sizes and policies — the lower level's hit ratio against the analytic bounds
//! L/(D−U) (exclusive caching) and L/D (no locality left).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use comfy_table::{presets::UTF8_FULL, Table};
use kura_cache::paper004::{Paper004, Paper004Row};

use crate::error::{At, LabResult};
use crate::plot::{line_chart, Labels, Series};

/// The experiment's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Everything 100× smaller (100 MB of data): seconds instead of minutes.
    pub quick: bool,
    /// Requests counted per block of data (`None`: the paper's).
    pub measured_per_block: Option<u64>,
    pub threads: usize,
    /// Directory for paper004.csv, paper004.txt and the figures.
    pub out: PathBuf,
}

fn create_dir(dir: &Path) -> LabResult<()> {
    std::fs::create_dir_all(dir).at(dir.display())
}

fn write_file(path: &Path, contents: &str) -> LabResult<()> {
    std::fs::write(path, contents).at(path.display())
}

/// Runs the experiment, writing its report to `out` and the CSV, table and figures to
/// `config.out`; `progress(done, total)` follows the simulated configurations.
pub fn run(
    args: &Config,
    out: &mut dyn Write,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> LabResult<()> {
    let mut p = if args.quick {
        Paper004::quick()
    } else {
        Paper004::full()
    };
    if let Some(m) = args.measured_per_block {
        p.measured_per_block = m.max(1);
    }
    let threads = args.threads.max(1);
    let total = p.configs().len();
    writeln!(
        out,
        "paper 004: {} of data in {}-byte blocks, uniform random reads, {} requests ({} warm-up), {total} configurations on {threads} threads",
        human_bytes(p.data_bytes),
        p.block_size,
        (p.warmup_per_block + p.measured_per_block) * p.data_blocks(),
        p.warmup_requests(),
    )?;
    let started = Instant::now();
    let rows = p.run(threads, &|n| progress(n, total))?;
    writeln!(out, "simulated in {:.1} s", started.elapsed().as_secs_f64())?;

    create_dir(&args.out)?;
    write_file(&args.out.join("paper004.csv"), &paper004_csv(&p, &rows))?;
    let table = paper004_table(&p, &rows);
    writeln!(out, "{table}")?;
    write_file(&args.out.join("paper004.txt"), &format!("{table}\n"))?;
    let largest = p.lower_bytes.iter().copied().max().unwrap_or(0);
    let (scale, unit) = if largest >= 1_000_000_000 {
        (1e9, "GB")
    } else {
        (1e6, "MB")
    };
    let x_desc = format!("lower cache size ({unit})");
    for (fig, &u) in (12..).zip(&p.upper_bytes) {
        let mut series: Vec<Series> = p
            .lower_policies
            .iter()
            .map(|policy| {
                Series::line(
                    policy.clone(),
                    rows.iter()
                        .filter(|r| r.upper_bytes == u && &r.policy == policy)
                        .map(|r| (r.lower_bytes as f64 / scale, r.stats.lower_hit_ratio()))
                        .collect(),
                )
            })
            .collect();
        // The analytic references of the table, drawn: L/(D−U) is what an exclusive
        // hierarchy reaches, L/D what a lower level with no locality left gets.
        let d = p.data_blocks() as f64;
        let ub = p.blocks(u) as f64;
        let bound = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            p.lower_bytes
                .iter()
                .map(|&l| (l as f64 / scale, f(p.blocks(l) as f64)))
                .collect()
        };
        series.push(Series::reference(
            "L/(D−U): exclusive bound",
            bound(&|l| (l / (d - ub)).min(1.0)),
        ));
        series.push(Series::reference("L/D: no locality", bound(&|l| l / d)));
        let path = args.out.join(format!(
            "fig{fig}_upper_{}.png",
            human_bytes(u).replace(' ', "")
        ));
        line_chart(
            &path,
            &Labels {
                title: &format!(
                    "Fig. {fig}: uniform reads over {}, upper LRU {} — lower hit ratio",
                    human_bytes(p.data_bytes),
                    human_bytes(u)
                ),
                x: &x_desc,
                y: "lower cache hit ratio",
            },
            &series,
            Some(0.0..1.0),
        )?;
        writeln!(out, "wrote {}", path.display())?;
    }
    writeln!(
        out,
        "wrote {} and {}",
        args.out.join("paper004.csv").display(),
        args.out.join("paper004.txt").display()
    )?;
    Ok(())
}

fn paper004_csv(p: &Paper004, rows: &[Paper004Row]) -> String {
    let mut out = String::from(
        "upper_bytes,lower_bytes,lower_policy,requests,upper_hit_ratio,lower_requests,lower_hits,lower_hit_ratio,overall_hit_ratio,exclusive_bound,no_locality\n",
    );
    let d = p.data_blocks() as f64;
    for r in rows {
        let (u, l) = (
            p.blocks(r.upper_bytes) as f64,
            p.blocks(r.lower_bytes) as f64,
        );
        let _ = writeln!(
            out,
            "{},{},{},{},{:.6},{},{},{:.6},{:.6},{:.6},{:.6}",
            r.upper_bytes,
            r.lower_bytes,
            r.policy,
            r.stats.requests,
            r.stats.upper_hit_ratio(),
            r.stats.lower_requests,
            r.stats.lower_hits,
            r.stats.lower_hit_ratio(),
            r.stats.overall_hit_ratio(),
            (l / (d - u)).min(1.0),
            l / d
        );
    }
    out
}

/// Lower-level hit ratio (%) per (upper, lower) size and policy, with the two
/// analytic references: L/(D−U) (exclusive, no duplicates) and L/D (no locality).
fn paper004_table(p: &Paper004, rows: &[Paper004Row]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    let mut header = vec!["upper".to_string(), "lower".to_string()];
    header.extend(p.lower_policies.iter().cloned());
    header.push("L/(D−U)".into());
    header.push("L/D".into());
    table.set_header(header);
    let d = p.data_blocks() as f64;
    for &u in &p.upper_bytes {
        for &l in &p.lower_bytes {
            let mut row = vec![human_bytes(u), human_bytes(l)];
            for policy in &p.lower_policies {
                let r = rows
                    .iter()
                    .find(|r| r.upper_bytes == u && r.lower_bytes == l && &r.policy == policy);
                row.push(r.map_or("-".into(), |r| percent(r.stats.lower_hit_ratio())));
            }
            let (ub, lb) = (p.blocks(u) as f64, p.blocks(l) as f64);
            row.push(percent((lb / (d - ub)).min(1.0)));
            row.push(percent(lb / d));
            table.add_row(row);
        }
    }
    table
}

pub fn percent(r: f64) -> String {
    format!("{:.2}", 100.0 * r)
}

/// Human size of `bytes` (decimal units, as paper 004 writes them).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)];
    let b = bytes as f64;
    for (unit, scale) in UNITS {
        if b >= scale {
            let v = b / scale;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.2} {unit}")
            };
        }
    }
    format!("{bytes} B")
}
