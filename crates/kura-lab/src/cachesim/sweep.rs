//! `kura cachesim run` (paper 004): a trace replayed through each policy at each
//! cache size, one level or two (inclusive, exclusive, or DEMOTE), as a CSV, a
//! table and a hit-ratio chart.

use std::io::Write;
use std::path::PathBuf;

use comfy_table::{presets::UTF8_FULL, Table};
use kura_cache::paper004::DEMOTE;
use kura_cache::sim::{default_threads, simulate_all, simulate_all_dense};
use kura_cache::trace::binary;
use kura_cache::{Level, Mode, SimConfig, SimResult, Trace};

use super::{
    create_dir, csv_row, load_trace, parse_blocks, parse_level, say, write_file, Progress,
    TraceKind, TraceSpec, CSV_HEADER,
};
use crate::error::{LabError, LabResult};
use crate::paper004::{human_bytes, percent};
use crate::plot::{line_chart, Labels, Series};

/// A sweep: policies × cache sizes, one level or two.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub trace: TraceSpec,
    /// Policies to compare (a line each); `demote` = MRU below in exclusive mode.
    pub policies: Vec<String>,
    /// Cache sizes to sweep (of the lower cache when --upper is given).
    pub sizes: Vec<String>,
    /// Upper cache as POLICY:SIZE (e.g. `lru:64MiB`); makes every run two-level.
    pub upper: Option<String>,
    /// Two-level mode.
    pub mode: Mode,
    /// Requests replayed before counting.
    pub warmup: usize,
    /// Worker threads (one configuration each at a time).
    pub threads: Option<usize>,
    /// Directory for results.csv and hit_ratio.png.
    pub out: PathBuf,
}

/// Runs the sweep: writes results.csv and hit_ratio.png to `args.out`, and the
/// table of hit ratios to `out`.
pub fn run(args: &SweepConfig, out: &mut dyn Write, progress: Progress) -> LabResult<()> {
    // A binary trace is replayed from its mapping; other traces are loaded.
    let mapped = match (args.trace.trace, &args.trace.file) {
        (TraceKind::Binary, Some(path)) => Some(binary::open(path)?),
        _ => None,
    };
    let trace = match &mapped {
        Some(m) => Trace::new(
            args.trace
                .file
                .as_ref()
                .map_or(String::new(), |f| f.display().to_string()),
            Vec::new(),
            m.block_size,
        ),
        None => load_trace(&args.trace)?,
    };
    let requests = mapped.as_ref().map_or(trace.len(), |m| m.len());
    if requests == 0 {
        return Err(LabError::Missing(format!(
            "trace {} has no requests",
            trace.name
        )));
    }
    let bs = trace.block_size;
    let sizes = args
        .sizes
        .iter()
        .map(|s| parse_blocks(s, bs))
        .collect::<Result<Vec<_>, _>>()?;
    let upper = args
        .upper
        .as_deref()
        .map(|u| parse_level(u, bs))
        .transpose()?;
    let mode = args.mode;
    // (policy label, size) per configuration, in sweep order.
    let mut points = Vec::new();
    let mut configs = Vec::new();
    for policy in &args.policies {
        let policy = policy.trim().to_ascii_lowercase();
        for &size in &sizes {
            let mut config = match (&upper, policy.as_str()) {
                (None, DEMOTE) => {
                    return Err(LabError::Invalid(
                        "'demote' is a two-level method: give --upper POLICY:SIZE".into(),
                    ))
                }
                (None, p) => SimConfig::single(p, size),
                (Some(u), DEMOTE) => {
                    SimConfig::two_level(u.clone(), Level::new("mru", size), Mode::Exclusive)
                }
                (Some(u), p) => SimConfig::two_level(u.clone(), Level::new(p, size), mode),
            };
            config.seed = args.trace.seed;
            points.push((policy.clone(), size));
            configs.push(config);
        }
    }
    let threads = args.threads.unwrap_or_else(default_threads);
    let total = configs.len();
    let on_done = |n: usize| progress(n, total);
    let results = match &mapped {
        Some(m) => {
            let dense = m.dense()?;
            simulate_all_dense(&configs, &dense, args.warmup, threads, &on_done)
        }
        None => simulate_all(&configs, &trace.requests, args.warmup, threads, &on_done),
    }?;

    let two_level = upper.is_some();
    let ratio = |r: &SimResult| {
        if two_level {
            r.stats.lower_hit_ratio()
        } else {
            r.stats.upper_hit_ratio()
        }
    };
    create_dir(&args.out)?;
    let mut csv_text = format!("{CSV_HEADER}\n");
    for ((label, _), r) in points.iter().zip(&results) {
        csv_text.push_str(&csv_row(&trace.name, label, r));
        csv_text.push('\n');
    }
    write_file(&args.out.join("results.csv"), &csv_text)?;

    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    let mut header = vec![if two_level {
        "lower size"
    } else {
        "cache size"
    }
    .to_string()];
    header.extend(args.policies.iter().cloned());
    table.set_header(header);
    let mut series: Vec<Series> = args
        .policies
        .iter()
        .map(|p| Series::line(p.clone(), Vec::new()))
        .collect();
    for (si, &size) in sizes.iter().enumerate() {
        let mut row = vec![format!("{size} ({})", human_bytes(size as u64 * bs))];
        for (pi, s) in series.iter_mut().enumerate() {
            let r = &results[pi * sizes.len() + si];
            row.push(percent(ratio(r)));
            s.points.push(((size as u64 * bs) as f64 / 1e6, ratio(r)));
        }
        table.add_row(row);
    }
    let what = if two_level {
        "lower-level hit ratio %"
    } else {
        "hit ratio %"
    };
    say!(
        out,
        "{} — {} requests ({} warm-up), {what}",
        trace.name,
        requests,
        args.warmup
    );
    if let Some(u) = &upper {
        say!(
            out,
            "upper cache: {}({} blocks), mode {}",
            u.policy,
            u.capacity,
            mode.name()
        );
    }
    say!(out, "{table}");
    // The title names the workload: which trace, how many requests.
    let title = match &upper {
        Some(u) => format!(
            "{}: lower hit ratio under {}({}), {}",
            trace.name,
            u.policy,
            u.capacity,
            mode.name()
        ),
        None => format!("{}: hit ratio, {} requests", trace.name, trace.len()),
    };
    let png = args.out.join("hit_ratio.png");
    line_chart(
        &png,
        &Labels {
            title: &title,
            x: if two_level {
                "lower cache size (MB)"
            } else {
                "cache size (MB)"
            },
            y: "hit ratio",
        },
        &series,
        Some(0.0..1.0),
    )?;
    say!(
        out,
        "wrote {} and {}",
        args.out.join("results.csv").display(),
        png.display()
    );
    Ok(())
}
