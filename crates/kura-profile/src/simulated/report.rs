//! The simulated profile: what the replay attributed, as serde-serializable rows
//! (for JSON) and as text tables, every one labelled "simulated".

use std::collections::HashMap;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde::{Deserialize, Serialize};

use super::lackey::ParseStats;
use super::replay::{resolve_objects, Replay};
use super::symbols::{symbolize, Location};
use super::Recording;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    pub name: String,
    /// e.g. `L1 32 KiB, 8-way, 64 B lines, 64 sets`
    pub geometry: String,
    pub accesses: u64,
    pub misses: u64,
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
}

/// Misses per level (same order as [`SimulatedProfile::levels`]).
pub type LevelMisses = Vec<u64>;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    pub function: String,
    pub module: String,
    pub accesses: u64,
    pub misses: LevelMisses,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LineRow {
    /// `file:line`
    pub line: String,
    pub function: String,
    pub misses: LevelMisses,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectRow {
    pub object: String,
    /// `buffer page`, `hash table`, ... (`kura_common::memobj::ObjectKind::label`)
    pub kind: String,
    pub misses: LevelMisses,
    /// Last-level misses by class.
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PairRow {
    /// The function that made the accesses (the operator's code).
    pub function: String,
    pub object: String,
    pub misses: LevelMisses,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HotSet {
    pub level: String,
    pub set: u64,
    pub misses: u64,
    /// Misses in this set over the mean per set: well above 1 marks a conflict
    /// candidate (addresses equal modulo sets × line size collide).
    pub over_mean: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RepeatLine {
    pub addr: u64,
    pub misses: u64,
    pub object: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassRow {
    pub class: u16,
    /// The query (or what the class stands for).
    pub label: String,
    pub accesses: u64,
    pub misses: LevelMisses,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    pub trace_lines: u64,
    pub instructions: u64,
    pub data_accesses: u64,
    /// Line-sized accesses replayed (an access spanning two lines counts twice).
    pub replayed: u64,
    pub registry_events: u64,
    pub seconds_traced_run: f64,
    pub seconds_total: f64,
}

/// A profile from the simulated cache.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimulatedProfile {
    pub queries: Vec<String>,
    pub trace: TraceSummary,
    pub levels: Vec<LevelSummary>,
    pub functions: Vec<FunctionRow>,
    pub lines: Vec<LineRow>,
    pub objects: Vec<ObjectRow>,
    pub pairs: Vec<PairRow>,
    pub hot_sets: Vec<HotSet>,
    pub repeat_lines: Vec<RepeatLine>,
    pub classes: Vec<ClassRow>,
}

fn add(into: &mut LevelMisses, served_by: usize) {
    for m in into.iter_mut().take(served_by) {
        *m += 1;
    }
}

/// Sorts rows by last-level misses, then first-level, most first; keeps `top`.
fn top_by<T>(mut rows: Vec<T>, top: usize, misses: impl Fn(&T) -> &LevelMisses) -> Vec<T> {
    rows.sort_by(|a, b| {
        let (a, b) = (misses(a), misses(b));
        (b.last(), b.first()).cmp(&(a.last(), a.first()))
    });
    rows.truncate(top);
    rows
}

impl SimulatedProfile {
    /// Builds the report from a finished replay and the recording it came from.
    pub fn build(
        replay: Replay,
        recording: &Recording,
        queries: &[String],
        top: usize,
        total_seconds: f64,
    ) -> Self {
        let levels = replay.levels();
        let n = levels;
        let hier = replay.hierarchy();
        let mut level_rows: Vec<LevelSummary> = (0..n)
            .map(|i| LevelSummary {
                name: replay.level_names[i].clone(),
                geometry: hier.level(i).geometry().describe(),
                ..LevelSummary::default()
            })
            .collect();
        for &class in replay.classes.keys() {
            for (row, c) in level_rows.iter_mut().zip(hier.counters(usize::from(class))) {
                row.accesses += c.accesses;
                row.misses += c.misses;
                row.compulsory += c.compulsory;
                row.capacity += c.capacity;
                row.conflict += c.conflict;
            }
        }
        // Functions and lines.
        let ips: Vec<u64> = replay.per_ip.keys().copied().collect();
        let locs = symbolize(&ips, &recording.dump.maps);
        let unknown = Location::default();
        let loc = |ip: u64| locs.get(&ip).unwrap_or(&unknown);
        let mut functions: HashMap<(String, String), FunctionRow> = HashMap::new();
        let mut lines: HashMap<(String, String), LineRow> = HashMap::new();
        for (&ip, c) in &replay.per_ip {
            let l = loc(ip);
            let f = functions
                .entry((l.function.clone(), l.module.clone()))
                .or_insert_with(|| FunctionRow {
                    function: l.function.clone(),
                    module: l.module.clone(),
                    accesses: 0,
                    misses: vec![0; n],
                });
            f.accesses += c.accesses;
            for i in 0..n {
                f.misses[i] += c.misses[i];
            }
            if c.misses[0] > 0 {
                let where_ = l.line.clone().unwrap_or_else(|| "?".into());
                let who = l.inlined.clone().unwrap_or_else(|| l.function.clone());
                let r = lines
                    .entry((where_.clone(), who.clone()))
                    .or_insert_with(|| LineRow {
                        line: where_,
                        function: who,
                        misses: vec![0; n],
                    });
                for i in 0..n {
                    r.misses[i] += c.misses[i];
                }
            }
        }
        // Objects, pairs, repeated lines.
        let resolved = resolve_objects(&replay.misses, &recording.dump);
        let mut objects: HashMap<String, ObjectRow> = HashMap::new();
        let mut pairs: HashMap<(String, String), PairRow> = HashMap::new();
        let mut line_object: HashMap<u64, String> = HashMap::new();
        let line_size = hier.level(0).geometry().line_size as u64;
        for (m, (name, kind, _op)) in replay.misses.iter().zip(&resolved) {
            let served = usize::from(m.served_by);
            let o = objects.entry(name.clone()).or_insert_with(|| ObjectRow {
                object: name.clone(),
                kind: kind.map(|k| k.label().to_string()).unwrap_or_default(),
                misses: vec![0; n],
                ..ObjectRow::default()
            });
            add(&mut o.misses, served);
            match m.llc_class {
                1 => o.compulsory += 1,
                2 => o.capacity += 1,
                3 => o.conflict += 1,
                _ => {}
            }
            let f = loc(m.ip).function.clone();
            let p = pairs
                .entry((f.clone(), name.clone()))
                .or_insert_with(|| PairRow {
                    function: f,
                    object: name.clone(),
                    misses: vec![0; n],
                });
            add(&mut p.misses, served);
            if served == n {
                line_object
                    .entry(m.addr / line_size)
                    .or_insert_with(|| name.clone());
            }
        }
        let mut repeat: Vec<RepeatLine> = replay
            .line_misses
            .iter()
            .filter(|(_, &c)| c > 1)
            .map(|(&line, &c)| RepeatLine {
                addr: line * line_size,
                misses: u64::from(c),
                object: line_object.get(&line).cloned().unwrap_or_default(),
            })
            .collect();
        repeat.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.addr.cmp(&b.addr)));
        repeat.truncate(top);
        // Hot sets: per level, the sets with the most misses.
        let mut hot_sets = Vec::new();
        for (i, sets) in replay.set_misses.iter().enumerate() {
            let total: u64 = sets.iter().sum();
            if total == 0 {
                continue;
            }
            let mean = total as f64 / sets.len() as f64;
            let mut idx: Vec<usize> = (0..sets.len()).collect();
            idx.sort_by(|&a, &b| sets[b].cmp(&sets[a]).then(a.cmp(&b)));
            for &s in idx.iter().take(top.min(5)) {
                hot_sets.push(HotSet {
                    level: replay.level_names[i].clone(),
                    set: s as u64,
                    misses: sets[s],
                    over_mean: sets[s] as f64 / mean,
                });
            }
        }
        let classes = replay
            .classes
            .iter()
            .map(|(&class, &accesses)| {
                let c = hier.counters(usize::from(class));
                ClassRow {
                    class,
                    label: queries
                        .get(usize::from(class))
                        .map(|q| one_line(q, 60))
                        .unwrap_or_else(|| format!("class {class}")),
                    accesses,
                    misses: c.iter().map(|l| l.misses).collect(),
                }
            })
            .collect();
        let stats: &ParseStats = &recording.stats;
        SimulatedProfile {
            queries: queries.to_vec(),
            trace: TraceSummary {
                trace_lines: stats.lines,
                instructions: stats.instructions,
                data_accesses: stats.accesses,
                replayed: replay.accesses,
                registry_events: stats.events,
                seconds_traced_run: recording.elapsed.as_secs_f64(),
                seconds_total: total_seconds,
            },
            levels: level_rows,
            functions: top_by(functions.into_values().collect(), top, |r| &r.misses),
            lines: top_by(lines.into_values().collect(), top, |r| &r.misses),
            objects: top_by(objects.into_values().collect(), top, |r| &r.misses),
            pairs: top_by(pairs.into_values().collect(), top, |r| &r.misses),
            hot_sets,
            repeat_lines: repeat,
            classes,
        }
    }

    /// The summary a [`crate::Profile`] keeps (and `--diff` compares): misses per
    /// level, function, data object, (function, object) pair and 3C class of the
    /// last level.
    pub fn section(&self) -> crate::report::SimulatedSection {
        use crate::report::NamedCount;
        let counted = |name: String, m: &LevelMisses| NamedCount {
            name,
            count: m.last().copied().unwrap_or(0),
            first_level: m.first().copied().unwrap_or(0),
        };
        let last = self.levels.last();
        crate::report::SimulatedSection {
            cache: self
                .levels
                .iter()
                .map(|l| format!("{} {}", l.name, l.geometry))
                .collect::<Vec<_>>()
                .join(", "),
            functions: self
                .functions
                .iter()
                .map(|f| counted(f.function.clone(), &f.misses))
                .collect(),
            objects: self
                .objects
                .iter()
                .map(|o| counted(o.object.clone(), &o.misses))
                .collect(),
            operator_objects: self
                .pairs
                .iter()
                .map(|p| counted(format!("{} / {}", p.function, p.object), &p.misses))
                .collect(),
            miss_classes: last
                .map(|l| {
                    [
                        ("compulsory", l.compulsory),
                        ("capacity", l.capacity),
                        ("conflict", l.conflict),
                    ]
                    .into_iter()
                    .map(|(n, c)| NamedCount {
                        name: format!("{} {n}", l.name),
                        count: c,
                        first_level: 0,
                    })
                    .collect()
                })
                .unwrap_or_default(),
            levels: self
                .levels
                .iter()
                .map(|l| NamedCount {
                    name: l.name.clone(),
                    count: l.misses,
                    first_level: 0,
                })
                .collect(),
        }
    }

    /// Misses of the object whose description contains `needle`, per level.
    pub fn object_misses(&self, needle: &str) -> Option<&LevelMisses> {
        self.objects
            .iter()
            .find(|o| o.object.contains(needle))
            .map(|o| &o.misses)
    }

    /// The text report: a summary line, then one table per view.
    pub fn render(&self) -> String {
        let names: Vec<String> = self.levels.iter().map(|l| l.name.clone()).collect();
        let miss_headers = |first: &[&str]| -> Vec<String> {
            first
                .iter()
                .map(|s| s.to_string())
                .chain(names.iter().map(|n| format!("{n} misses")))
                .collect()
        };
        let num = |v: u64| Cell::new(v).set_alignment(CellAlignment::Right);
        let new_table = |header: Vec<String>| {
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED);
            t.set_header(header);
            t
        };
        let mut out = String::new();
        let t = &self.trace;
        out.push_str(&format!(
            "simulated cache profile (valgrind lackey trace replayed through kura-cache's model of this machine): \
             {} instructions, {} data accesses, {} registry events; traced run {:.1} s, total {:.1} s\n",
            t.instructions, t.data_accesses, t.registry_events, t.seconds_traced_run, t.seconds_total
        ));
        out.push_str("\nSimulated cache levels (misses by 3C class)\n");
        let mut tl = new_table(
            [
                "level",
                "geometry",
                "accesses",
                "misses",
                "miss %",
                "compulsory",
                "capacity",
                "conflict",
            ]
            .map(String::from)
            .to_vec(),
        );
        for l in &self.levels {
            tl.add_row(vec![
                Cell::new(&l.name),
                Cell::new(&l.geometry),
                num(l.accesses),
                num(l.misses),
                Cell::new(format!(
                    "{:.2}",
                    100.0 * l.misses as f64 / l.accesses.max(1) as f64
                ))
                .set_alignment(CellAlignment::Right),
                num(l.compulsory),
                num(l.capacity),
                num(l.conflict),
            ]);
        }
        out.push_str(&format!("{tl}\n"));
        let misses_cells = |m: &LevelMisses| m.iter().map(|&v| num(v)).collect::<Vec<_>>();

        out.push_str("\nTop functions by simulated misses\n");
        let mut tf = new_table(miss_headers(&["function", "module", "accesses"]));
        for r in &self.functions {
            let mut row = vec![
                Cell::new(one_line(&r.function, 70)),
                Cell::new(&r.module),
                num(r.accesses),
            ];
            row.extend(misses_cells(&r.misses));
            tf.add_row(row);
        }
        out.push_str(&format!("{tf}\n"));

        out.push_str("\nTop source lines by simulated misses\n");
        let mut tli = new_table(miss_headers(&["line", "function"]));
        for r in &self.lines {
            let mut row = vec![
                Cell::new(shorten_path(&r.line)),
                Cell::new(one_line(&r.function, 50)),
            ];
            row.extend(misses_cells(&r.misses));
            tli.add_row(row);
        }
        out.push_str(&format!("{tli}\n"));

        out.push_str("\nTop data objects by simulated misses (last-level misses by 3C class)\n");
        let mut h = miss_headers(&["object", "kind"]);
        h.extend(["compulsory", "capacity", "conflict"].map(String::from));
        let mut to = new_table(h);
        for r in &self.objects {
            let mut row = vec![Cell::new(&r.object), Cell::new(&r.kind)];
            row.extend(misses_cells(&r.misses));
            row.extend([num(r.compulsory), num(r.capacity), num(r.conflict)]);
            to.add_row(row);
        }
        out.push_str(&format!("{to}\n"));

        out.push_str("\nTop (function, object) pairs by simulated misses\n");
        let mut tp = new_table(miss_headers(&["function", "object"]));
        for r in &self.pairs {
            let mut row = vec![Cell::new(one_line(&r.function, 50)), Cell::new(&r.object)];
            row.extend(misses_cells(&r.misses));
            tp.add_row(row);
        }
        out.push_str(&format!("{tp}\n"));

        out.push_str("\nSimulated hot sets (conflict candidates)\n");
        let mut th = new_table(
            ["level", "set", "misses", "× mean per set"]
                .map(String::from)
                .to_vec(),
        );
        for r in &self.hot_sets {
            th.add_row(vec![
                Cell::new(&r.level),
                num(r.set),
                num(r.misses),
                Cell::new(format!("{:.1}", r.over_mean)).set_alignment(CellAlignment::Right),
            ]);
        }
        out.push_str(&format!("{th}\n"));

        out.push_str(
            "\nSimulated last-level lines that missed again and again (capacity candidates)\n",
        );
        let mut tr = new_table(
            ["line address", "misses", "object"]
                .map(String::from)
                .to_vec(),
        );
        for r in &self.repeat_lines {
            tr.add_row(vec![
                Cell::new(format!("{:#x}", r.addr)),
                num(r.misses),
                Cell::new(&r.object),
            ]);
        }
        if self.repeat_lines.is_empty() {
            tr.add_row(vec![
                "none",
                "",
                "every last-level miss was a line's only one",
            ]);
        }
        out.push_str(&format!("{tr}\n"));

        out.push_str("\nSimulated misses per query (access class)\n");
        let mut tc = new_table(miss_headers(&["class", "query", "accesses"]));
        for r in &self.classes {
            let mut row = vec![
                num(u64::from(r.class)),
                Cell::new(&r.label),
                num(r.accesses),
            ];
            row.extend(misses_cells(&r.misses));
            tc.add_row(row);
        }
        out.push_str(&format!("{tc}\n"));
        out
    }
}

/// `text` on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// A source path from its `crates/` or `src/` component on (registry and
/// toolchain paths keep their last three components).
fn shorten_path(path: &str) -> String {
    if let Some(i) = path.find("crates/") {
        return path[i..].to_string();
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > 3 {
        parts[parts.len() - 3..].join("/")
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sort_by_last_level_then_first_and_text_is_shortened() {
        let rows = vec![vec![5, 1], vec![1, 2], vec![9, 2], vec![0, 0]];
        let sorted = top_by(rows, 3, |r| r);
        assert_eq!(sorted, vec![vec![9, 2], vec![1, 2], vec![5, 1]]);
        assert_eq!(one_line("SELECT\n  a\tFROM t", 100), "SELECT a FROM t");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(
            shorten_path("/home/x/kura/crates/kura-exec/src/ops/scan.rs:10"),
            "crates/kura-exec/src/ops/scan.rs:10"
        );
        assert_eq!(
            shorten_path("/rustc/abc/library/core/src/x.rs:5"),
            "core/src/x.rs:5"
        );
        let mut m = vec![0, 0, 0];
        add(&mut m, 2);
        assert_eq!(m, vec![1, 1, 0]);
    }
}
