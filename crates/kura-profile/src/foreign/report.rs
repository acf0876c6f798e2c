//! The profile of another program: counts per function, per source line and per
//! process, each row a vector of metrics (simulated accesses and misses per cache
//! level, or samples), the share of named function groups, rendered as tables
//! and saved as JSON.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ProfileError;
use crate::simulated::symbols::{symbolize, Location};

use super::trace::ForeignTrace;

/// One row: where, and a value per metric.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    /// The file the code was mapped from (functions), or the function (lines).
    pub context: String,
    pub values: Vec<u64>,
}

/// One process of the profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    pub pid: u32,
    pub command: String,
    pub instructions: u64,
    /// Cached lines other processes' writes to shared memory took away.
    #[serde(default)]
    pub invalidated: u64,
    pub values: Vec<u64>,
}

/// A named group of functions (by a substring of their names) and its share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupShare {
    pub name: String,
    pub patterns: Vec<String>,
    /// Per metric: the group's count and its share of the total.
    pub values: Vec<u64>,
    pub shares: Vec<f64>,
    /// The functions that matched.
    pub functions: Vec<String>,
}

impl GroupShare {
    /// `2.1 % of accesses, 0.3 % of L1d misses, ...` for the profile's `metrics`.
    pub fn shares_text(&self, metrics: &[String]) -> String {
        self.shares
            .iter()
            .zip(metrics)
            .map(|(s, m)| format!("{:.1} % of {m}", s * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A profile of a program kura does not run itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ForeignProfile {
    /// What was profiled and how, in one line each.
    pub header: Vec<String>,
    /// The metric names, e.g. `accesses`, `L1d misses`, ...
    pub metrics: Vec<String>,
    pub totals: Vec<u64>,
    pub functions: Vec<Row>,
    pub lines: Vec<Row>,
    pub processes: Vec<ProcessRow>,
    pub groups: Vec<GroupShare>,
}

/// Adds `b` into `a`, element by element.
fn add(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// One process's values per instruction address, and its memory map.
pub(crate) type AddressValues = (
    HashMap<u64, Vec<u64>>,
    Vec<crate::simulated::child::Mapping>,
);

/// Builds rows from per-address values of each process, naming addresses with
/// the process's memory map.
pub(crate) fn rows_from_addresses(per_process: Vec<AddressValues>) -> (Vec<Row>, Vec<Row>) {
    let mut functions: HashMap<(String, String), Vec<u64>> = HashMap::new();
    let mut lines: HashMap<(String, String), Vec<u64>> = HashMap::new();
    for (per_ip, maps) in per_process {
        let ips: Vec<u64> = per_ip.keys().copied().collect();
        let names: HashMap<u64, Location> = symbolize(&ips, &maps);
        for (ip, values) in per_ip {
            let loc = names.get(&ip).cloned().unwrap_or_default();
            add(
                functions
                    .entry((loc.function.clone(), loc.module.clone()))
                    .or_default(),
                &values,
            );
            if let Some(line) = loc.line {
                add(lines.entry((line, loc.function)).or_default(), &values);
            }
        }
    }
    let to_rows = |m: HashMap<(String, String), Vec<u64>>| {
        m.into_iter()
            .map(|((name, context), values)| Row {
                name,
                context,
                values,
            })
            .collect::<Vec<_>>()
    };
    (to_rows(functions), to_rows(lines))
}

impl ForeignProfile {
    /// The simulated profile of a finished trace: accesses and misses per level.
    pub fn from_trace(trace: ForeignTrace, header: Vec<String>) -> ForeignProfile {
        let levels = trace.level_names.len();
        let mut metrics = vec!["accesses".to_string()];
        metrics.extend(trace.level_names.iter().map(|l| format!("{l} misses")));
        let mut totals = vec![0; metrics.len()];
        let mut processes = Vec::new();
        let mut per_process = Vec::new();
        let mut invalidated = 0;
        for p in trace.processes {
            let mut values = vec![p.accesses];
            values.extend(&p.misses[..levels]);
            add(&mut totals, &values);
            if p.accesses == 0 && p.instructions == 0 {
                continue;
            }
            invalidated += p.invalidated;
            processes.push(ProcessRow {
                pid: p.pid,
                command: p.command,
                instructions: p.instructions,
                invalidated: p.invalidated,
                values,
            });
            let per_ip = p
                .per_ip
                .into_iter()
                .map(|(ip, c)| {
                    let mut v = vec![c.accesses];
                    v.extend(&c.misses[..levels]);
                    (ip, v)
                })
                .collect();
            per_process.push((per_ip, p.maps));
        }
        let (functions, lines) = rows_from_addresses(per_process);
        let mut header = header;
        header.push(format!(
            "simulated caches (kura-cache's model of this machine: {}), each process in caches of \
             its own, kept coherent: a write to shared memory drops the line from the others' \
             caches ({invalidated} lines dropped; the processes' traces interleave a piece at a time, \
             not access by access)",
            trace
                .level_names
                .iter()
                .zip(&trace.level_geometry)
                .map(|(n, g)| format!("{n} {g}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
        ForeignProfile {
            header,
            metrics,
            totals,
            functions,
            lines,
            processes,
            groups: Vec::new(),
        }
    }

    /// Adds the share of a group of functions: those whose name contains any of
    /// `patterns` (case-sensitive, as symbol names are).
    pub fn add_group(&mut self, name: &str, patterns: &[String]) {
        let mut values = vec![0; self.metrics.len()];
        let mut functions = Vec::new();
        for f in &self.functions {
            if patterns.iter().any(|p| f.name.contains(p.as_str())) {
                add(&mut values, &f.values);
                functions.push(f.name.clone());
            }
        }
        functions.sort();
        let shares = values
            .iter()
            .zip(&self.totals)
            .map(|(&v, &t)| if t == 0 { 0.0 } else { v as f64 / t as f64 })
            .collect();
        self.groups.push(GroupShare {
            name: name.to_string(),
            patterns: patterns.to_vec(),
            values,
            shares,
            functions,
        });
    }

    /// The index of a metric by a prefix of its name (`L1d`, `L2`, `samples`).
    pub fn metric(&self, prefix: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m.starts_with(prefix))
    }

    /// The top `n` functions by metric `m`.
    pub fn top_functions(&self, m: usize, n: usize) -> Vec<&Row> {
        top(&self.functions, m, n)
    }

    /// The tables: per metric after the first of a simulated profile (the
    /// misses), or the one metric of a sampled one, the top functions; the top
    /// source lines by the first miss level; processes; groups.
    pub fn render(&self, n: usize) -> String {
        let mut out = String::new();
        for h in &self.header {
            let _ = writeln!(out, "{h}");
        }
        let _ = writeln!(
            out,
            "totals: {}",
            self.metrics
                .iter()
                .zip(&self.totals)
                .map(|(m, v)| format!("{v} {m}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let ranked: Vec<usize> = if self.metrics.len() > 1 {
            (1..self.metrics.len()).collect()
        } else {
            vec![0]
        };
        for &m in &ranked {
            let _ = writeln!(out, "\nTop {n} functions by {}", self.metrics[m]);
            out.push_str(&self.table(&self.top_functions(m, n), m, "function", "module"));
        }
        let m = ranked[0];
        let lines = top(&self.lines, m, n);
        if !lines.is_empty() {
            let _ = writeln!(out, "\nTop {n} source lines by {}", self.metrics[m]);
            out.push_str(&self.table(&lines, m, "line", "function"));
        }
        if self.processes.len() > 1 {
            let _ = writeln!(out, "\nProcesses");
            let mut t = comfy_table::Table::new();
            t.load_preset(comfy_table::presets::NOTHING);
            let mut head = vec!["pid".to_string(), "instructions".into()];
            head.extend(self.metrics.iter().cloned());
            head.push("lines taken".into());
            head.push("command".into());
            t.set_header(head);
            let mut procs: Vec<&ProcessRow> = self.processes.iter().collect();
            procs.sort_by_key(|p| std::cmp::Reverse(p.values.get(m).copied().unwrap_or(0)));
            for p in procs.iter().take(n.max(12)) {
                let mut row = vec![p.pid.to_string(), p.instructions.to_string()];
                row.extend(p.values.iter().map(u64::to_string));
                row.push(p.invalidated.to_string());
                row.push(shorten(&p.command, 60));
                t.add_row(row);
            }
            let _ = writeln!(out, "{t}");
        }
        for g in &self.groups {
            let _ = writeln!(
                out,
                "\n{}: {} ({} functions{})",
                g.name,
                g.shares_text(&self.metrics),
                g.functions.len(),
                if g.functions.is_empty() {
                    String::new()
                } else {
                    format!(": {}", shorten(&g.functions.join(", "), 200))
                }
            );
        }
        out
    }

    fn table(&self, rows: &[&Row], m: usize, what: &str, context: &str) -> String {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::NOTHING);
        let mut head = vec!["#".to_string(), what.to_string(), "share".into()];
        head.extend(self.metrics.iter().cloned());
        head.push(context.to_string());
        t.set_header(head);
        for (i, r) in rows.iter().enumerate() {
            let total = self.totals.get(m).copied().unwrap_or(0);
            let v = r.values.get(m).copied().unwrap_or(0);
            let share = if total == 0 {
                0.0
            } else {
                v as f64 * 100.0 / total as f64
            };
            let mut row = vec![
                (i + 1).to_string(),
                shorten(&r.name, 60),
                format!("{share:.1} %"),
            ];
            row.extend(
                self.metrics
                    .iter()
                    .enumerate()
                    .map(|(k, _)| r.values.get(k).copied().unwrap_or(0).to_string()),
            );
            row.push(shorten(&r.context, 40));
            t.add_row(row);
        }
        format!("{t}\n")
    }

    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| ProfileError::Invalid(format!("cannot encode the profile: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| ProfileError::io(format!("writing {}", path.display()), e))
    }
}

fn top(rows: &[Row], m: usize, n: usize) -> Vec<&Row> {
    let mut v: Vec<&Row> = rows
        .iter()
        .filter(|r| r.values.get(m).copied().unwrap_or(0) > 0)
        .collect();
    v.sort_by(|a, b| {
        b.values
            .get(m)
            .cmp(&a.values.get(m))
            .then_with(|| a.name.cmp(&b.name))
    });
    v.truncate(n);
    v
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> ForeignProfile {
        let row = |name: &str, v: Vec<u64>| Row {
            name: name.into(),
            context: "postgres".into(),
            values: v,
        };
        ForeignProfile {
            header: vec!["test".into()],
            metrics: vec!["accesses".into(), "L1d misses".into(), "L2 misses".into()],
            totals: vec![1000, 100, 10],
            functions: vec![
                row("LWLockAcquire", vec![300, 40, 2]),
                row("LWLockRelease", vec![200, 20, 1]),
                row("s_lock", vec![10, 5, 5]),
                row("hash_search", vec![490, 35, 2]),
            ],
            lines: Vec::new(),
            processes: Vec::new(),
            groups: Vec::new(),
        }
    }

    #[test]
    fn groups_sum_their_functions_and_tables_rank_by_each_level() {
        let mut p = profile();
        p.add_group("LWLock", &["LWLock".to_string()]);
        p.add_group(
            "spin locks",
            &["s_lock".to_string(), "SpinLock".to_string()],
        );
        assert_eq!(p.groups[0].values, vec![500, 60, 3]);
        assert!((p.groups[0].shares[1] - 0.6).abs() < 1e-9);
        assert_eq!(p.groups[1].functions, vec!["s_lock".to_string()]);
        let top_l2: Vec<&str> = p
            .top_functions(p.metric("L2").unwrap(), 2)
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(top_l2, vec!["s_lock", "LWLockAcquire"]);
        let text = p.render(3);
        assert!(text.contains("Top 3 functions by L1d misses"), "{text}");
        assert!(text.contains("Top 3 functions by L2 misses"), "{text}");
        assert!(
            text.contains("LWLock: 50.0 % of accesses, 60.0 % of L1d misses"),
            "{text}"
        );
    }
}
