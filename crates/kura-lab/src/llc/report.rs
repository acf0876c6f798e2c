//! The report of paper 000's derived study: its table, llc.csv and the two charts.

use std::io::Write;
use std::path::Path;

use crate::plot::{grouped_bar_chart, BarGroup, Labels};

use super::{Kind, Report, Row};
use crate::error::{At, LabResult};

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1} %", v * 100.0))
}

pub(crate) fn print(r: &Report, out: &mut dyn Write) -> LabResult<()> {
    writeln!(out, "{}", r.premise)?;
    writeln!(out, "LLC {} MiB; {}", r.llc_bytes >> 20, r.detection)?;
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(vec![
        "table",
        "query",
        "condition",
        "time ms (measured)",
        "LLC miss, off (simulated)",
        "LLC miss, on (simulated)",
        "paper",
    ]);
    for row in &r.rows {
        t.add_row(vec![
            row.table.to_string(),
            row.query.clone(),
            row.condition.clone(),
            format!("{:.2}", row.time_ms),
            pct(row.sim_off),
            pct(row.sim_on),
            row.paper.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    for n in &r.notes {
        writeln!(out, "- {n}")?;
    }
    Ok(())
}

pub fn write_csv(path: &Path, rows: &[Row]) -> LabResult<()> {
    let mut w = csv::Writer::from_path(path).at(path.display())?;
    w.write_record([
        "table",
        "query",
        "condition",
        "time_ms",
        "sim_llc_miss_off",
        "sim_llc_miss_on",
        "paper",
    ])?;
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    for r in rows {
        w.write_record([
            r.table.to_string(),
            r.query.clone(),
            r.condition.clone(),
            format!("{:.3}", r.time_ms),
            opt(r.sim_off),
            opt(r.sim_on),
            r.paper.to_string(),
        ])?;
    }
    Ok(w.flush()?)
}

/// Short chart label of an experiment.
fn short(r: &Row) -> String {
    let q = r.query.split(' ').next().unwrap_or("");
    match r.table {
        "4-5" => format!("T4-5 {q}"),
        "9" => "T9 join".into(),
        t => format!("T{t} {q}"),
    }
}

/// Two charts: each experiment's time when disturbed and with the flush policy,
/// relative to its undisturbed time (measured; the paper's penalty is A
/// interleaved / A in blocks = 1.23), and the disturbed runs' simulated LLC miss
/// ratios with partitioning off and on.
pub(crate) fn charts(dir: &Path, rows: &[Row]) -> LabResult<()> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        let n = short(r);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let time = |name: &str, kind: Kind| {
        rows.iter()
            .find(|r| short(r) == name && r.kind == kind)
            .map(|r| r.time_ms)
    };
    let groups: Vec<BarGroup> = names
        .iter()
        .filter_map(|n| {
            let quiet = time(n, Kind::Quiet)?;
            Some(BarGroup {
                label: n.clone(),
                values: vec![
                    1.0,
                    time(n, Kind::Disturbed).map_or(f64::NAN, |t| t / quiet),
                    time(n, Kind::Flush).map_or(f64::NAN, |t| t / quiet),
                ],
            })
        })
        .collect();
    grouped_bar_chart(
        &dir.join("llc_time.png"),
        &Labels {
            title: "Time relative to undisturbed (measured, no CAT here)",
            x: "experiment (table of paper 000)",
            y: "time / undisturbed time",
        },
        &[
            "undisturbed (blocks / alone / warm)".to_string(),
            "with the big scan between".to_string(),
            "big scan with llc_scan_policy = flush".to_string(),
        ],
        &groups,
    )?;
    let groups: Vec<BarGroup> = rows
        .iter()
        .filter(|r| r.kind == Kind::Disturbed)
        .filter_map(|r| {
            Some(BarGroup {
                label: short(r),
                values: vec![r.sim_off? * 100.0, r.sim_on? * 100.0],
            })
        })
        .collect();
    grouped_bar_chart(
        &dir.join("llc_miss.png"),
        &Labels {
            title: "LLC misses with the big scan between, partitioning off vs on (simulated)",
            x: "experiment (table of paper 000)",
            y: "LLC miss %",
        },
        &[
            "partitioning off".to_string(),
            "partitioning on (CAT model)".to_string(),
        ],
        &groups,
    )
}
