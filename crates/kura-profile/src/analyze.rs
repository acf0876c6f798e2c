//! From samples to tables: time per function and per source line (with the
//! line's text), samples per operator and pipeline, and the top miss sites of
//! precise load samples.

use std::collections::HashMap;

use kura_common::probe::Mark;

use crate::attribution::OperatorData;
use crate::records::Sample;
use crate::report::{FunctionRow, LineRow, MissSite, OperatorRow};
use crate::symbolize::Symbolize;

fn sorted<K: Clone>(map: HashMap<K, u64>) -> Vec<(K, u64)> {
    let mut v: Vec<_> = map.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Time per function; `ns_per_sample` for clock events.
pub fn functions(
    samples: &[Sample],
    sym: &mut dyn Symbolize,
    ns_per_sample: Option<u64>,
) -> Vec<FunctionRow> {
    let ips: Vec<u64> = samples.iter().map(|s| s.ip).collect();
    let mut by = HashMap::new();
    for f in sym.frames(&ips) {
        *by.entry(f.function).or_insert(0u64) += 1;
    }
    let total = samples.len() as u64;
    sorted(by)
        .into_iter()
        .map(|(function, n)| FunctionRow {
            function,
            samples: n,
            percent: pct(n, total),
            ms: ns_per_sample.map(|p| n as f64 * p as f64 / 1e6),
        })
        .collect()
}

/// The hottest source lines, annotated with their text by `source_of`.
pub fn lines(
    samples: &[Sample],
    sym: &mut dyn Symbolize,
    source_of: &mut dyn FnMut(&str) -> Option<String>,
    top: usize,
) -> Vec<LineRow> {
    let ips: Vec<u64> = samples.iter().map(|s| s.ip).collect();
    let mut by: HashMap<(String, String), u64> = HashMap::new();
    for f in sym.frames(&ips) {
        if let Some(line) = f.line {
            *by.entry((line, f.function)).or_insert(0) += 1;
        }
    }
    let total = samples.len() as u64;
    sorted(by)
        .into_iter()
        .take(top)
        .map(|((line, function), n)| LineRow {
            source: source_of(&line),
            line,
            function,
            samples: n,
            percent: pct(n, total),
        })
        .collect()
}

/// Reads `file:line` relative to `root` (the workspace), trimmed.
pub fn source_line(root: &std::path::Path, place: &str) -> Option<String> {
    let (file, line) = place.rsplit_once(':')?;
    let n: usize = line.parse().ok()?;
    let text = std::fs::read_to_string(root.join(file)).ok()?;
    Some(text.lines().nth(n.checked_sub(1)?)?.trim().to_string())
}

/// The operator a sample belongs to: the thread's marked operator at its time;
/// for samples outside every mark, the innermost `kura_exec::ops::` frame of the
/// sample (its function or a caller) names the operator kind.
pub fn operator_rows(
    samples: &[&Sample],
    data: &OperatorData,
    sym: &mut dyn Symbolize,
) -> (Vec<OperatorRow>, Vec<OperatorRow>) {
    // Keyed by label: labels carry the node id, so they are unique per node.
    let mut ops: HashMap<String, (Option<u32>, u64)> = HashMap::new();
    let mut pipes: HashMap<String, (Option<u32>, u64)> = HashMap::new();
    for s in samples {
        let mark = data.mark_at(s.tid, s.time);
        if mark != Mark::IDLE {
            ops.entry(data.label(mark.node))
                .or_insert((Some(mark.node), 0))
                .1 += 1;
            pipes
                .entry(format!("pipeline into {}", data.label(mark.pipeline)))
                .or_insert((Some(mark.pipeline), 0))
                .1 += 1;
            continue;
        }
        let mut chain = vec![s.ip];
        chain.extend(&s.callchain);
        let label = sym
            .frames(&chain)
            .into_iter()
            .find(|f| f.function.contains("kura_exec::ops::"))
            .map(|f| format!("(by frame) {}", ops_module(&f.function)))
            .unwrap_or_else(|| data.label(u32::MAX));
        ops.entry(label).or_insert((None, 0)).1 += 1;
        pipes
            .entry("(outside pipelines)".into())
            .or_insert((None, 0))
            .1 += 1;
    }
    let rows = |m: HashMap<String, (Option<u32>, u64)>| {
        let mut v: Vec<OperatorRow> = m
            .into_iter()
            .map(|(label, (node, samples))| OperatorRow {
                node,
                label,
                samples,
                ..Default::default()
            })
            .collect();
        v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.label.cmp(&b.label)));
        v
    };
    (rows(ops), rows(pipes))
}

/// `kura_exec::ops::join::hash` from a function path inside it.
fn ops_module(function: &str) -> String {
    let start = function.find("kura_exec::ops::").unwrap_or(0);
    function[start..]
        .split("::")
        .take_while(|seg| seg.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .collect::<Vec<_>>()
        .join("::")
}

/// The top miss sites of load samples (the paper's tables 5–6): per function,
/// loads sampled, L1 and LLC misses, mean latency; most L1 misses first.
pub fn miss_sites(samples: &[Sample], sym: &mut dyn Symbolize) -> Vec<MissSite> {
    let loads: Vec<&Sample> = samples.iter().filter(|s| s.level.is_some()).collect();
    let ips: Vec<u64> = loads.iter().map(|s| s.ip).collect();
    let frames = sym.frames(&ips);
    let mut by: HashMap<String, (MissSite, u64, u64, HashMap<String, u64>)> = HashMap::new();
    for (s, f) in loads.iter().zip(frames) {
        let e = by.entry(f.function.clone()).or_insert_with(|| {
            (
                MissSite {
                    function: f.function.clone(),
                    ..Default::default()
                },
                0,
                0,
                HashMap::new(),
            )
        });
        e.0.loads += 1;
        if s.l1_miss() {
            e.0.l1_misses += 1;
            if let Some(l) = &f.line {
                *e.3.entry(l.clone()).or_insert(0) += 1;
            }
        }
        if s.llc_miss() {
            e.0.llc_misses += 1;
        }
        if let Some(lat) = s.latency {
            e.1 += lat;
            e.2 += 1;
        }
    }
    let mut out: Vec<MissSite> = by
        .into_values()
        .map(|(mut site, lat_sum, lat_n, lines)| {
            site.mean_latency = (lat_n > 0).then(|| lat_sum as f64 / lat_n as f64);
            site.line = sorted(lines).into_iter().next().map(|(l, _)| l);
            site
        })
        .collect();
    out.sort_by(|a, b| {
        b.l1_misses
            .cmp(&a.l1_misses)
            .then(b.llc_misses.cmp(&a.llc_misses))
            .then(a.function.cmp(&b.function))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::TableSymbolizer;

    fn s(ip: u64, tid: u32, time: u64) -> Sample {
        Sample {
            ip,
            tid,
            time,
            ..Default::default()
        }
    }

    fn table() -> TableSymbolizer {
        TableSymbolizer(vec![
            (
                0x1000,
                "kura_exec::ops::scan::ScanSource::produce".into(),
                Some("crates/kura-exec/src/ops/scan.rs:10".into()),
            ),
            (
                0x2000,
                "kura_exec::expr::eval::filter".into(),
                Some("crates/kura-exec/src/expr/eval.rs:5".into()),
            ),
            (0x3000, "main".into(), None),
        ])
    }

    #[test]
    fn functions_and_lines_count_samples() {
        let samples = vec![
            s(0x1001, 1, 0),
            s(0x1002, 1, 0),
            s(0x2000, 1, 0),
            s(0x3000, 1, 0),
        ];
        let f = functions(&samples, &mut table(), Some(1_000_000));
        assert_eq!(f[0].function, "kura_exec::ops::scan::ScanSource::produce");
        assert_eq!((f[0].samples, f[0].percent, f[0].ms), (2, 50.0, Some(2.0)));
        let l = lines(
            &samples,
            &mut table(),
            &mut |p| Some(format!("text of {p}")),
            10,
        );
        assert_eq!(l.len(), 2, "main has no line");
        assert_eq!(l[0].line, "crates/kura-exec/src/ops/scan.rs:10");
        assert_eq!(
            l[0].source.as_deref(),
            Some("text of crates/kura-exec/src/ops/scan.rs:10")
        );
    }

    #[test]
    fn samples_go_to_the_operator_marked_at_their_time() {
        let mut data = OperatorData::default();
        data.names.insert(1, "Scan: lineitem".into());
        data.names.insert(2, "Aggregate".into());
        data.transitions.insert(
            7,
            vec![
                (100, Mark::new(1, 2)),
                (200, Mark::new(2, 2)),
                (300, Mark::IDLE),
            ],
        );
        let samples = [
            s(0x2000, 7, 150),
            s(0x2000, 7, 160),
            s(0x2000, 7, 250),
            s(0x3000, 7, 400),
            s(0x1000, 9, 10),
        ];
        let refs: Vec<&Sample> = samples.iter().collect();
        let (ops, pipes) = operator_rows(&refs, &data, &mut table());
        let find = |label: &str| ops.iter().find(|r| r.label == label).map(|r| r.samples);
        assert_eq!(find("#1 Scan: lineitem"), Some(2));
        assert_eq!(find("#2 Aggregate"), Some(1));
        // Outside marks: named by an ops frame if there is one, else "outside".
        assert_eq!(find("(by frame) kura_exec::ops::scan"), Some(1));
        assert_eq!(find("(outside operators)"), Some(1));
        assert_eq!(pipes.iter().find(|r| r.node == Some(2)).unwrap().samples, 3);
        assert_eq!(pipes.iter().map(|r| r.samples).sum::<u64>(), 5);
    }
}
