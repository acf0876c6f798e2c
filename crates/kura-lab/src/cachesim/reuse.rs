//! `kura cachesim reuse` (paper 004): the re-access distance histogram of a trace, or
//! of the requests that miss an upper cache (what the level below sees).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use comfy_table::{presets::UTF8_FULL, Table};
use kura_cache::reuse::{histogram, ReuseHistogram};
use kura_cache::sim::misses_of;
use kura_cache::Trace;

use super::{create_dir, load_trace, parse_bytes, parse_level, say, write_file, TraceSpec};
use crate::error::LabResult;
use crate::paper004::human_bytes;
use crate::plot::{grouped_bar_chart, BarGroup, Labels};

/// A reuse-distance histogram of a trace, or of the stream below a cache.
#[derive(Debug, Clone)]
pub struct ReuseConfig {
    pub trace: TraceSpec,
    /// Analyse the requests that miss this cache (POLICY:SIZE), i.e. the stream the
    /// lower level sees.
    pub upper: Option<String>,
    /// Histogram bin width in bytes (e.g. `100MB`); default: 50 bins over the range.
    pub bin: Option<String>,
    /// Directory for reuse.csv and reuse.png.
    pub out: PathBuf,
}

/// Writes reuse.csv and reuse.png to `args.out` and a summary to `out`.
pub fn run(args: &ReuseConfig, out: &mut dyn Write) -> LabResult<()> {
    let mut trace = load_trace(&args.trace)?;
    if let Some(u) = &args.upper {
        let level = parse_level(u, trace.block_size)?;
        let misses = misses_of(&level.policy, level.capacity, &trace.requests)?;
        trace = Trace::new(
            format!("{} below {}({})", trace.name, level.policy, level.capacity),
            misses,
            trace.block_size,
        );
    }
    let bin = match &args.bin {
        Some(b) => parse_bytes(b)?.max(1),
        // About 50 bins over the largest possible distance (distinct blocks), of a
        // round width so the axis reads 0, 100 MB, 200 MB rather than 7.48 MB steps.
        None => round_up_1_2_5((trace.distinct_blocks() as u64 * trace.block_size).div_ceil(50)),
    };
    let h = histogram(&trace, bin);
    create_dir(&args.out)?;
    write_file(&args.out.join("reuse.csv"), &reuse_csv(&h))?;
    let groups: Vec<BarGroup> = h
        .counts
        .iter()
        .enumerate()
        .map(|(i, &c)| BarGroup {
            label: human_bytes(i as u64 * h.bin_bytes),
            values: vec![c as f64],
        })
        .collect();
    let png = args.out.join("reuse.png");
    grouped_bar_chart(
        &png,
        &Labels {
            title: &format!("re-access distance: {}", trace.name),
            x: &format!("re-access distance (bins of {})", human_bytes(h.bin_bytes)),
            y: "re-accesses",
        },
        &["re-accesses".to_string()],
        &groups,
    )?;
    say!(out, "{}: {} requests", trace.name, trace.len());
    say!(
        out,
        "first requests {}, re-accesses {}, bin {}",
        h.first_requests,
        h.reaccesses(),
        human_bytes(h.bin_bytes)
    );
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    table.set_header(vec!["distance below", "share of re-accesses %"]);
    let total = h.reaccesses().max(1) as f64;
    let mut cumulative = 0u64;
    let step = h.counts.len().div_ceil(10).max(1);
    for (i, &c) in h.counts.iter().enumerate() {
        cumulative += c;
        if (i + 1) % step == 0 || i + 1 == h.counts.len() {
            table.add_row(vec![
                human_bytes((i as u64 + 1) * h.bin_bytes),
                format!("{:.2}", 100.0 * cumulative as f64 / total),
            ]);
        }
    }
    say!(out, "{table}");
    say!(
        out,
        "wrote {} and {}",
        args.out.join("reuse.csv").display(),
        png.display()
    );
    Ok(())
}

/// The smallest 1, 2 or 5 × 10^k that is at least `n` (and at least 1).
pub fn round_up_1_2_5(n: u64) -> u64 {
    let mut decade = 1u64;
    loop {
        for step in [1, 2, 5] {
            if let Some(v) = decade.checked_mul(step) {
                if v >= n {
                    return v;
                }
            }
        }
        match decade.checked_mul(10) {
            Some(d) => decade = d,
            None => return n,
        }
    }
}

pub fn reuse_csv(h: &ReuseHistogram) -> String {
    let mut out = String::from("distance_from_bytes,distance_to_bytes,reaccesses\n");
    for (i, c) in h.counts.iter().enumerate() {
        let from = i as u64 * h.bin_bytes;
        let _ = writeln!(out, "{from},{},{c}", from + h.bin_bytes);
    }
    let _ = writeln!(out, "# first requests: {}", h.first_requests);
    out
}
