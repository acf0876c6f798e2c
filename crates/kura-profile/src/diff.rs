//! Before/after: two saved profiles compared per function, per operator, per miss
//! site, per sampled data object and (operator, object), and, when both have
//! them, per simulated data object (paper 002's tables
//! 7–8: what a change did to the misses).

use std::collections::BTreeMap;

use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use serde::{Deserialize, Serialize};

use crate::counters::Counts;
use crate::events::Event;
use crate::report::{DataObjectRow, NamedCount, Profile};

/// One name's value in each profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffRow {
    pub name: String,
    pub before: f64,
    pub after: f64,
}

impl DiffRow {
    /// Change in per cent of `before` (`None` when it was 0).
    pub fn change_pct(&self) -> Option<f64> {
        (self.before != 0.0).then(|| (self.after - self.before) / self.before * 100.0)
    }
}

/// A titled comparison, largest absolute change first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffTable {
    pub title: String,
    pub unit: String,
    pub rows: Vec<DiffRow>,
}

fn compare(
    title: &str,
    unit: &str,
    a: BTreeMap<String, f64>,
    b: BTreeMap<String, f64>,
) -> DiffTable {
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<DiffRow> = names
        .into_iter()
        .map(|n| DiffRow {
            name: n.clone(),
            before: a.get(n).copied().unwrap_or(0.0),
            after: b.get(n).copied().unwrap_or(0.0),
        })
        .collect();
    rows.sort_by(|x, y| {
        (y.after - y.before)
            .abs()
            .total_cmp(&(x.after - x.before).abs())
            .then(x.name.cmp(&y.name))
    });
    DiffTable {
        title: title.into(),
        unit: unit.into(),
        rows,
    }
}

/// The weight of an operator's counts: cycles where counted, else CPU ms.
fn weight(c: &Counts) -> (f64, &'static str) {
    match c.get(Event::Cycles) {
        Some(v) => (v as f64, "cycles"),
        None => (c.get(Event::TaskClock).unwrap_or(0) as f64 / 1e6, "CPU ms"),
    }
}

/// Last-level misses by name.
fn named(v: &[NamedCount]) -> BTreeMap<String, f64> {
    v.iter().map(|c| (c.name.clone(), c.count as f64)).collect()
}

/// First-level misses by name.
fn named_first(v: &[NamedCount]) -> BTreeMap<String, f64> {
    v.iter()
        .map(|c| (c.name.clone(), c.first_level as f64))
        .collect()
}

/// Every comparison the two profiles allow.
pub fn diff(a: &Profile, b: &Profile) -> Vec<DiffTable> {
    let mut out = Vec::new();
    let functions = |p: &Profile| -> BTreeMap<String, f64> {
        p.functions
            .iter()
            .map(|f| (f.function.clone(), f.ms.unwrap_or(f.samples as f64)))
            .collect()
    };
    if !a.functions.is_empty() || !b.functions.is_empty() {
        let unit = if a
            .functions
            .iter()
            .chain(&b.functions)
            .all(|f| f.ms.is_some())
        {
            "ms"
        } else {
            "samples"
        };
        out.push(compare("per function", unit, functions(a), functions(b)));
    }
    let mut unit = "CPU ms";
    let operators = |p: &Profile, unit: &mut &'static str| -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for q in &p.queries {
            for o in &q.operators {
                let v = if p.mode == "counting" {
                    let (v, u) = weight(&o.counts);
                    *unit = u;
                    v
                } else {
                    o.samples as f64
                };
                *m.entry(format!("{} / {}", q.name, o.label)).or_insert(0.0) += v;
            }
        }
        m
    };
    let (oa, ob) = (operators(a, &mut unit), operators(b, &mut unit));
    if a.mode != b.mode {
        unit = "mixed";
    } else if a.mode == "sampling" {
        unit = "samples";
    }
    if !oa.is_empty() || !ob.is_empty() {
        out.push(compare("per operator", unit, oa, ob));
    }
    let sites = |p: &Profile| -> BTreeMap<String, f64> {
        p.miss_sites
            .iter()
            .map(|s| (s.function.clone(), s.l1_misses as f64))
            .collect()
    };
    if !a.miss_sites.is_empty() || !b.miss_sites.is_empty() {
        out.push(compare(
            "L1 misses per function",
            "sampled misses",
            sites(a),
            sites(b),
        ));
    }
    let objects = |rows: &[DataObjectRow]| -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for r in rows {
            let name = match &r.operator {
                Some(op) => format!("{op} / {}", r.object),
                None => r.object.clone(),
            };
            *m.entry(name).or_insert(0.0) += r.l1_misses as f64;
        }
        m
    };
    if !a.objects.is_empty() || !b.objects.is_empty() {
        out.push(compare(
            "L1 misses per data object",
            "sampled misses",
            objects(&a.objects),
            objects(&b.objects),
        ));
    }
    if !a.operator_objects.is_empty() || !b.operator_objects.is_empty() {
        out.push(compare(
            "L1 misses per (operator, data object)",
            "sampled misses",
            objects(&a.operator_objects),
            objects(&b.operator_objects),
        ));
    }
    if let (Some(sa), Some(sb)) = (&a.simulated, &b.simulated) {
        if !sa.levels.is_empty() || !sb.levels.is_empty() {
            out.push(compare(
                "simulated misses per cache level",
                "simulated misses",
                named(&sa.levels),
                named(&sb.levels),
            ));
        }
        for (what, ra, rb) in [
            ("function", &sa.functions, &sb.functions),
            ("data object", &sa.objects, &sb.objects),
        ] {
            out.push(compare(
                &format!("simulated last-level misses per {what}"),
                "simulated misses",
                named(ra),
                named(rb),
            ));
            out.push(compare(
                &format!("simulated L1d misses per {what}"),
                "simulated misses",
                named_first(ra),
                named_first(rb),
            ));
        }
    }
    out
}

/// The comparisons as text tables.
pub fn render(tables: &[DiffTable], top: usize) -> String {
    let mut out = String::new();
    for t in tables {
        let mut table = Table::new();
        table.load_preset(UTF8_BORDERS_ONLY).set_header(vec![
            t.title.clone(),
            format!("before ({})", t.unit),
            format!("after ({})", t.unit),
            "change".into(),
        ]);
        for r in t.rows.iter().take(top) {
            let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
            table.add_row(vec![
                Cell::new(&r.name),
                right(format!("{:.1}", r.before)),
                right(format!("{:.1}", r.after)),
                right(match r.change_pct() {
                    Some(p) => format!("{p:+.1} %"),
                    None => "new".into(),
                }),
            ]);
        }
        out.push_str(&format!("{table}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{FunctionRow, SimulatedSection, FORMAT_VERSION};

    fn with_functions(rows: &[(&str, f64)]) -> Profile {
        Profile {
            version: FORMAT_VERSION,
            mode: "sampling".into(),
            functions: rows
                .iter()
                .map(|(f, ms)| FunctionRow {
                    function: f.to_string(),
                    samples: *ms as u64,
                    percent: 0.0,
                    ms: Some(*ms),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn functions_and_objects_are_compared_biggest_change_first() {
        let mut a = with_functions(&[("scan", 100.0), ("hash_probe", 40.0)]);
        let mut b = with_functions(&[("scan", 90.0), ("hash_probe", 10.0), ("sort", 5.0)]);
        let d = diff(&a, &b);
        let f = &d[0];
        assert_eq!(f.title, "per function");
        assert_eq!(f.rows[0].name, "hash_probe");
        assert_eq!(f.rows[0].change_pct(), Some(-75.0));
        let sort = f.rows.iter().find(|r| r.name == "sort").unwrap();
        assert_eq!((sort.before, sort.change_pct()), (0.0, None));
        assert!(render(&d, 10).contains("-75.0 %"));
        // Objects only when both profiles have the simulated section.
        assert!(!d.iter().any(|t| t.title.contains("object")));
        let obj = |n: u64| SimulatedSection {
            objects: vec![NamedCount {
                name: "lineitem.l_extendedprice pages".into(),
                count: n,
                first_level: 2 * n,
            }],
            ..Default::default()
        };
        a.simulated = Some(obj(200));
        b.simulated = Some(obj(50));
        let d = diff(&a, &b);
        let o = d.iter().find(|t| t.title.contains("object")).unwrap();
        assert_eq!(o.rows[0].change_pct(), Some(-75.0));
    }

    #[test]
    fn sampled_objects_are_compared_by_l1_misses() {
        let row = |object: &str, op: Option<&str>, l1: u64| DataObjectRow {
            object: object.into(),
            kind: "buffer page".into(),
            operator: op.map(str::to_string),
            loads: l1 * 2,
            l1_misses: l1,
            ..Default::default()
        };
        let mut a = with_functions(&[]);
        let mut b = with_functions(&[]);
        a.objects = vec![row("lineitem.l_extendedprice (column pages)", None, 40)];
        b.objects = vec![
            row("lineitem.l_extendedprice (column pages)", None, 10),
            row("chain array (hash join build on o_orderkey)", None, 5),
        ];
        b.operator_objects = vec![row("chain array", Some("#4 probe"), 5)];
        let d = diff(&a, &b);
        let o = d
            .iter()
            .find(|t| t.title == "L1 misses per data object")
            .unwrap();
        assert_eq!(o.rows[0].name, "lineitem.l_extendedprice (column pages)");
        assert_eq!(o.rows[0].change_pct(), Some(-75.0));
        assert_eq!((o.rows[1].before, o.rows[1].after), (0.0, 5.0));
        let p = d
            .iter()
            .find(|t| t.title == "L1 misses per (operator, data object)")
            .unwrap();
        assert_eq!(p.rows[0].name, "#4 probe / chain array");
        assert!(render(&d, 10).contains("L1 misses per data object"));
    }
}
