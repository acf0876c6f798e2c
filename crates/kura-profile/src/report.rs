//! A profile as data (saved and loaded as JSON) and as text tables: per query and
//! per operator/pipeline counts, time per function and per source line, the top
//! miss sites, the overhead table, and the place for the simulated section.

use std::fmt::Write;
use std::path::Path;

use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use serde::{Deserialize, Serialize};

use crate::counters::Counts;
use crate::events::Event;
use crate::ProfileError;

/// Version of the JSON layout.
pub const FORMAT_VERSION: u32 = 1;

/// One profile of a workload (one or more queries).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub version: u32,
    /// `counting` or `sampling`.
    pub mode: String,
    /// The counted group, or the sampled event.
    pub events: Vec<Event>,
    pub period: Option<u64>,
    /// The one line saying that there is no hardware PMU (and what is done instead).
    pub note: Option<String>,
    pub queries: Vec<QueryProfile>,
    /// Sampling: time per function over all queries, most first.
    pub functions: Vec<FunctionRow>,
    /// Sampling: the hottest source lines.
    pub lines: Vec<LineRow>,
    /// Precise load samples: the top miss sites (paper 002, tables 5–6).
    pub miss_sites: Vec<MissSite>,
    pub samples: u64,
    pub lost_samples: u64,
    /// Precise load samples: loads and misses per data object (the registry's
    /// named memory: buffer pages by column or index, hash tables by operator).
    #[serde(default)]
    pub objects: Vec<DataObjectRow>,
    /// The same per (operator that ran, object).
    #[serde(default)]
    pub operator_objects: Vec<DataObjectRow>,
    /// Why samples could not be attributed to objects, if they could not.
    #[serde(default)]
    pub objects_note: Option<String>,
    /// Precise load samples: their misses by class per level, estimated from
    /// the sampled addresses and this machine's cache geometry.
    #[serde(default)]
    pub miss_classes: Vec<crate::missclass::SampledMissClasses>,
    pub overhead: Option<Vec<OverheadRow>>,
    /// The simulated cache's section, where the machine has no PMU: misses per
    /// function, per data object, per (operator, object) and miss classes.
    /// `kura_profile::simulated` fills it; everything in it is labelled
    /// "simulated" when printed.
    #[serde(default)]
    pub simulated: Option<SimulatedSection>,
}

/// One query of the workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryProfile {
    pub name: String,
    pub wall_ms: f64,
    /// The whole process while the query ran.
    pub totals: Counts,
    /// Per plan operator, most CPU (or samples) first.
    pub operators: Vec<OperatorRow>,
    /// Per pipeline (named by its sink operator).
    pub pipelines: Vec<OperatorRow>,
    pub samples: u64,
}

/// Counts and samples of one operator or pipeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OperatorRow {
    /// The plan node (operator rows) or the pipeline's sink node; `None` outside.
    pub node: Option<u32>,
    pub label: String,
    pub counts: Counts,
    pub samples: u64,
}

/// Samples in one function.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    pub function: String,
    pub samples: u64,
    pub percent: f64,
    /// For clock events: samples × period.
    pub ms: Option<f64>,
}

/// Samples on one source line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LineRow {
    /// `crates/…/file.rs:123`.
    pub line: String,
    pub function: String,
    pub samples: u64,
    pub percent: f64,
    /// The line's text, where the source file is readable.
    pub source: Option<String>,
}

/// Load samples of one function (paper 002, tables 5–6).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MissSite {
    pub function: String,
    /// The line with the most L1 misses.
    pub line: Option<String>,
    pub loads: u64,
    pub l1_misses: u64,
    pub llc_misses: u64,
    pub mean_latency: Option<f64>,
}

/// Load samples whose data address lay in one memory object (for the
/// per-(operator, object) table: that the operator made).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataObjectRow {
    /// `lineitem.l_extendedprice (column pages)`, `chain array (hash join build on o_orderkey)`.
    pub object: String,
    /// `buffer page`, `hash table`, ... (`kura_common::memobj::ObjectKind::label`).
    pub kind: String,
    /// The plan operator the sampling thread ran (per-(operator, object) rows).
    pub operator: Option<String>,
    pub loads: u64,
    pub l1_misses: u64,
    pub llc_misses: u64,
    pub mean_latency: Option<f64>,
}

/// One mode of the overhead measurement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverheadRow {
    pub mode: String,
    pub runs: usize,
    pub median_ms: f64,
    pub overhead_pct: f64,
    pub samples: Option<u64>,
    /// Median CPU time of the process (all threads, user and system) per run.
    #[serde(default)]
    pub median_cpu_ms: f64,
    /// Its overhead over no profiling: on a shared machine less disturbed by
    /// other processes than wall time, and it includes the kernel's work for
    /// the samples, which is charged to the sampled threads.
    #[serde(default)]
    pub cpu_overhead_pct: f64,
}

/// A named count of the simulated section: last-level misses, and first-level
/// (L1d) misses where the row has them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedCount {
    pub name: String,
    pub count: u64,
    #[serde(default)]
    pub first_level: u64,
}

/// What the simulated cache found (filled by `kura_profile::simulated`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimulatedSection {
    /// Cache level and geometry the misses are of, e.g. "L1d 48 KiB 12-way".
    pub cache: String,
    pub functions: Vec<NamedCount>,
    pub objects: Vec<NamedCount>,
    /// "operator / object" names.
    pub operator_objects: Vec<NamedCount>,
    /// compulsory, capacity, conflict.
    pub miss_classes: Vec<NamedCount>,
    /// Total misses per cache level, L1d first.
    #[serde(default)]
    pub levels: Vec<NamedCount>,
}

impl Profile {
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| ProfileError::Invalid(format!("cannot encode the profile: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| ProfileError::io(format!("writing {}", path.display()), e))
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::io(format!("reading {}", path.display()), e))?;
        let p: Profile = serde_json::from_str(&text).map_err(|e| {
            ProfileError::Invalid(format!("{} is not a kura profile: {e}", path.display()))
        })?;
        if p.version != FORMAT_VERSION {
            return Err(ProfileError::Invalid(format!(
                "{} is a profile of format {}, this kura reads {FORMAT_VERSION}",
                path.display(),
                p.version
            )));
        }
        Ok(p)
    }

    /// The whole report as text.
    pub fn render(&self, top: usize) -> String {
        let mut out = String::new();
        if let Some(n) = &self.note {
            let _ = writeln!(out, "note: {n}");
        }
        for q in &self.queries {
            let _ = writeln!(out, "\n== {} — {:.1} ms", q.name, q.wall_ms);
            if !q.totals.0.is_empty() {
                let _ = writeln!(out, "{}", counts_line(&q.totals));
            }
            if self.mode == "counting" {
                let _ = writeln!(out, "per operator:\n{}", count_table(&q.operators, top));
                let _ = writeln!(out, "per pipeline:\n{}", count_table(&q.pipelines, top));
            } else {
                let _ = writeln!(
                    out,
                    "per operator ({} samples):\n{}",
                    q.samples,
                    sample_table(&q.operators, q.samples, top)
                );
                let _ = writeln!(
                    out,
                    "per pipeline:\n{}",
                    sample_table(&q.pipelines, q.samples, top)
                );
            }
        }
        if self.mode == "sampling" {
            let ev = self.events.first().map(|e| e.name()).unwrap_or("?");
            let _ = writeln!(
                out,
                "\n{} samples of {ev} every {}{}; top functions:",
                self.samples,
                self.period.unwrap_or(0),
                if self.lost_samples > 0 {
                    format!(" ({} lost)", self.lost_samples)
                } else {
                    String::new()
                }
            );
            let _ = writeln!(out, "{}", function_table(&self.functions, top));
            let _ = writeln!(out, "hottest lines:\n{}", line_table(&self.lines, top));
        }
        if !self.miss_sites.is_empty() {
            let _ = writeln!(
                out,
                "top miss sites:\n{}",
                miss_table(&self.miss_sites, top)
            );
        }
        if !self.miss_classes.is_empty() {
            let _ = writeln!(
                out,
                "miss classes (estimated from sampled addresses):\n{}",
                miss_class_table(&self.miss_classes, top)
            );
        }
        if let Some(n) = &self.objects_note {
            let _ = writeln!(out, "note: {n}");
        }
        if !self.objects.is_empty() {
            let _ = writeln!(
                out,
                "loads per data object:\n{}",
                object_table(&self.objects, false, top)
            );
        }
        if !self.operator_objects.is_empty() {
            let _ = writeln!(
                out,
                "loads per (operator, data object):\n{}",
                object_table(&self.operator_objects, true, top)
            );
        }
        if let Some(sim) = &self.simulated {
            let _ = writeln!(out, "\n{}", sim.render(top));
        }
        if let Some(rows) = &self.overhead {
            let _ = writeln!(out, "\noverhead:\n{}", overhead_table(rows));
        }
        out
    }
}

impl SimulatedSection {
    /// Every table labelled "simulated".
    pub fn render(&self, top: usize) -> String {
        let mut out = format!("simulated cache ({}):\n", self.cache);
        for (title, rows) in [
            ("misses per function", &self.functions),
            ("misses per data object", &self.objects),
            ("misses per (operator, object)", &self.operator_objects),
            ("miss classes", &self.miss_classes),
        ] {
            if rows.is_empty() {
                continue;
            }
            let mut t = table(&[title, "simulated misses"]);
            for r in rows.iter().take(top) {
                t.add_row(vec![Cell::new(&r.name), num(r.count)]);
            }
            let _ = writeln!(out, "{t}");
        }
        out
    }
}

/// One row per level: sampled misses, first touches, repeats, misses in hot
/// sets, and the hottest sets.
fn miss_class_table(rows: &[crate::missclass::SampledMissClasses], top: usize) -> Table {
    let mut t = table(&[
        "level",
        "sampled misses",
        "first touches (compulsory)",
        "repeats (capacity)",
        "in hot sets (conflict)",
        "hottest sets (misses, × mean)",
    ]);
    for r in rows {
        let sets: Vec<String> = r
            .hot_sets
            .iter()
            .take(top.min(5))
            .map(|h| format!("{} ({}, {:.0}×)", h.set, h.misses, h.over_mean))
            .collect();
        t.add_row(vec![
            Cell::new(format!("{} ({})", r.level, r.geometry)),
            num(r.misses),
            num(r.first_touches),
            num(r.repeats),
            num(r.in_hot_sets),
            Cell::new(sets.join(", ")),
        ]);
    }
    t
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY).set_header(header.to_vec());
    t
}

fn num(v: u64) -> Cell {
    Cell::new(v).set_alignment(CellAlignment::Right)
}

fn fnum(v: Option<f64>, digits: usize) -> Cell {
    Cell::new(match v {
        Some(v) => format!("{v:.digits$}"),
        None => "–".into(),
    })
    .set_alignment(CellAlignment::Right)
}

/// One line of totals: the metrics these counts allow.
pub fn counts_line(c: &Counts) -> String {
    let m = c.metrics();
    let mut parts = Vec::new();
    if let Some(v) = m.cpu_ms {
        parts.push(format!("CPU {v:.1} ms"));
    }
    if let Some(v) = m.ipc {
        parts.push(format!("IPC {v:.2}"));
    }
    for (e, v) in &m.mpki {
        parts.push(format!("{} {v:.2}/kinstr", e.name()));
    }
    if let Some(v) = m.cache_miss_rate {
        parts.push(format!("cache miss rate {:.1} %", v * 100.0));
    }
    for (e, v) in &c.0 {
        if !e.is_time() {
            parts.push(format!("{} {v}", e.name()));
        }
    }
    parts.join(", ")
}

fn count_table(rows: &[OperatorRow], top: usize) -> Table {
    let hardware = rows
        .iter()
        .any(|r| r.counts.get(Event::Instructions).is_some());
    let mut t = if hardware {
        table(&[
            "operator",
            "cycles",
            "IPC",
            "L1D miss/ki",
            "LLC miss/ki",
            "dTLB miss/ki",
            "cache miss %",
            "br miss/ki",
        ])
    } else {
        table(&[
            "operator",
            "CPU ms",
            "page faults",
            "ctx switches",
            "faults/CPU ms",
        ])
    };
    for r in rows.iter().take(top) {
        let m = r.counts.metrics();
        if hardware {
            t.add_row(vec![
                Cell::new(&r.label),
                num(r.counts.get(Event::Cycles).unwrap_or(0)),
                fnum(m.ipc, 2),
                fnum(m.mpki.get(&Event::L1dReadMisses).copied(), 2),
                fnum(m.mpki.get(&Event::LlcMisses).copied(), 2),
                fnum(m.mpki.get(&Event::DtlbMisses).copied(), 2),
                fnum(m.cache_miss_rate.map(|r| r * 100.0), 1),
                fnum(m.branch_misses_per_kinstr, 2),
            ]);
        } else {
            t.add_row(vec![
                Cell::new(&r.label),
                fnum(m.cpu_ms, 2),
                num(r.counts.get(Event::PageFaults).unwrap_or(0)),
                num(r.counts.get(Event::ContextSwitches).unwrap_or(0)),
                fnum(m.faults_per_ms, 1),
            ]);
        }
    }
    t
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn sample_table(rows: &[OperatorRow], total: u64, top: usize) -> Table {
    let mut t = table(&["operator", "samples", "%"]);
    for r in rows.iter().take(top) {
        t.add_row(vec![
            Cell::new(&r.label),
            num(r.samples),
            fnum(Some(pct(r.samples, total)), 1),
        ]);
    }
    t
}

fn function_table(rows: &[FunctionRow], top: usize) -> Table {
    let mut t = table(&["function", "samples", "%", "ms"]);
    for r in rows.iter().take(top) {
        t.add_row(vec![
            Cell::new(&r.function),
            num(r.samples),
            fnum(Some(r.percent), 1),
            fnum(r.ms, 1),
        ]);
    }
    t
}

fn line_table(rows: &[LineRow], top: usize) -> Table {
    let mut t = table(&["line", "samples", "%", "source"]);
    for r in rows.iter().take(top) {
        t.add_row(vec![
            Cell::new(format!("{}\n  in {}", r.line, r.function)),
            num(r.samples),
            fnum(Some(r.percent), 1),
            Cell::new(r.source.as_deref().unwrap_or("")),
        ]);
    }
    t
}

fn miss_table(rows: &[MissSite], top: usize) -> Table {
    let mut t = table(&[
        "function",
        "line",
        "loads",
        "L1 misses",
        "LLC misses",
        "mean latency",
    ]);
    for r in rows.iter().take(top) {
        t.add_row(vec![
            Cell::new(&r.function),
            Cell::new(r.line.as_deref().unwrap_or("")),
            num(r.loads),
            num(r.l1_misses),
            num(r.llc_misses),
            fnum(r.mean_latency, 0),
        ]);
    }
    t
}

fn object_table(rows: &[DataObjectRow], with_operator: bool, top: usize) -> Table {
    let mut header = vec![
        "object",
        "kind",
        "loads",
        "L1 misses",
        "LLC misses",
        "mean latency",
    ];
    if with_operator {
        header.insert(0, "operator");
    }
    let mut t = table(&header);
    for r in rows.iter().take(top) {
        let mut row = vec![
            Cell::new(&r.object),
            Cell::new(&r.kind),
            num(r.loads),
            num(r.l1_misses),
            num(r.llc_misses),
            fnum(r.mean_latency, 0),
        ];
        if with_operator {
            row.insert(0, Cell::new(r.operator.as_deref().unwrap_or("")));
        }
        t.add_row(row);
    }
    t
}

fn overhead_table(rows: &[OverheadRow]) -> Table {
    let mut t = table(&[
        "mode",
        "runs",
        "median ms",
        "overhead %",
        "median CPU ms",
        "CPU overhead %",
        "samples",
    ]);
    for r in rows {
        t.add_row(vec![
            Cell::new(&r.mode),
            num(r.runs as u64),
            fnum(Some(r.median_ms), 1),
            fnum(Some(r.overhead_pct), 1),
            fnum(Some(r.median_cpu_ms), 1),
            fnum(Some(r.cpu_overhead_pct), 1),
            Cell::new(r.samples.map(|s| s.to_string()).unwrap_or_default()),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip_through_json_and_check_the_version() {
        let mut p = Profile {
            version: FORMAT_VERSION,
            mode: "sampling".into(),
            events: vec![Event::CpuClock],
            period: Some(1000),
            functions: vec![FunctionRow {
                function: "kura_exec::ops::scan::x".into(),
                samples: 3,
                percent: 100.0,
                ms: Some(0.003),
            }],
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        p.save(&path).unwrap();
        assert_eq!(Profile::load(&path).unwrap(), p);
        let text = p.render(10);
        assert!(text.contains("kura_exec::ops::scan::x"), "{text}");
        p.version = 99;
        p.save(&path).unwrap();
        assert!(Profile::load(&path)
            .unwrap_err()
            .to_string()
            .contains("format 99"));
        std::fs::write(&path, "{").unwrap();
        assert!(Profile::load(&path)
            .unwrap_err()
            .to_string()
            .contains("not a kura profile"));
    }

    /// Profiles saved before the object tables existed still load.
    #[test]
    fn object_tables_print_and_old_profiles_load() {
        let mut p = Profile {
            version: FORMAT_VERSION,
            mode: "sampling".into(),
            events: vec![Event::MemLoads],
            ..Default::default()
        };
        let mut json: serde_json::Value = serde_json::to_value(&p).unwrap();
        for k in ["objects", "operator_objects", "objects_note"] {
            json.as_object_mut().unwrap().remove(k).unwrap();
        }
        let old: Profile = serde_json::from_value(json).unwrap();
        assert_eq!(old, p);
        let row = DataObjectRow {
            object: "lineitem.l_extendedprice (column pages)".into(),
            kind: "buffer page".into(),
            operator: None,
            loads: 7,
            l1_misses: 5,
            llc_misses: 2,
            mean_latency: Some(120.0),
        };
        p.objects = vec![row.clone()];
        p.operator_objects = vec![DataObjectRow {
            operator: Some("#3 Aggregate".into()),
            ..row
        }];
        let text = p.render(10);
        assert!(text.contains("loads per data object"), "{text}");
        assert!(text.contains("lineitem.l_extendedprice (column pages)"));
        assert!(
            text.contains("loads per (operator, data object)") && text.contains("#3 Aggregate")
        );
    }

    #[test]
    fn the_simulated_section_prints_labelled() {
        let p = Profile {
            version: FORMAT_VERSION,
            mode: "counting".into(),
            simulated: Some(SimulatedSection {
                cache: "L1d 32 KiB 8-way".into(),
                objects: vec![NamedCount {
                    name: "hash table of join #3".into(),
                    count: 42,
                    first_level: 50,
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let text = p.render(10);
        assert!(text.contains("simulated cache (L1d 32 KiB 8-way)"));
        assert!(text.contains("simulated misses") && text.contains("hash table of join #3"));
    }
}
