//! Paper 000's tables 4–5 and 9–11 from a recorded memory-access stream: a
//! cache-sensitive query — A (a column of half the LLC; tables 4–5), an index
//! join into an index of about 0.4 LLC (table 9), TPC-H SF 0.01 Q14 and Q18
//! (tables 10–11) — and the scan larger than the LLC (B) run in a child kura
//! under Valgrind's lackey — the recorder of `kura profile`'s simulated mode —
//! each query its own access class. The stream is replayed through a
//! set-associative model of the caches with CAT semantics (fills only into a
//! class's ways, hits in any way), partitioning off and on. As in the paper,
//! what is protected is the *object*: accesses to the buffer frames that hold
//! it (A's column, the index's nodes, the query's columns; known from the
//! memory-object registry at each access) fill the protected ways, every other
//! access the rest. Unlike the derived stream of [`crate::llc`], every access
//! of the engine counts: code paths, vectors, the aggregate's state, not only
//! the object's pages.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use kura_cache::cpu::{
    geometry::data_hierarchy, read_sysfs, LevelConfig, LevelCounters, PartitionSim,
};
use kura_common::memobj::{Event, ObjectKind, ObjectMap};
use kura_profile::simulated::{child_args, record, ProfileOptions, RecordOptions};

use crate::error::{At, LabError, LabResult};
use crate::llc::setup::{self, object_bytes, premise_line, Llc, Needs};
use crate::llc::{protect_masks, JOIN, QUERY_A, QUERY_B};

/// Classes of the replay: accesses to the protected object (protected ways),
/// A's other accesses, B's accesses (both in the other ways).
const OBJECT: usize = 0;
const A_OTHER: usize = 1;
const B_ALL: usize = 2;

/// One recorded access, reduced to what the replay needs: consecutive accesses
/// to the same line by the same query are one (a scan reads each line 8 times).
#[derive(Clone, Copy)]
struct Touch {
    line: u64,
    query: u16,
    epoch: u32,
}

/// What to record and replay.
#[derive(Debug, Clone)]
pub struct RecordedConfig {
    /// Directory for the scratch database and `llc_recorded.csv`.
    pub out: PathBuf,
    /// The kura executable to trace, and the words selecting its child mode.
    pub program: PathBuf,
    pub child_command: Vec<OsString>,
    pub valgrind: PathBuf,
    /// A `.../cpu0/cache` directory: the geometry tables are sized from and
    /// replayed through (this machine's by default; a smaller one makes the
    /// traced runs short).
    pub geometry_root: PathBuf,
    /// Runs of each query per pattern, after one warm-up of each.
    pub reps: usize,
    /// The paper's tables to make: `4-5`, `9`, `10`, `11` (all by default).
    pub tables: Vec<String>,
}

/// Every table `--recorded` can make.
pub const TABLES: [&str; 4] = ["4-5", "9", "10", "11"];

/// One of the paper's experiments: a sensitive query, the object it protects,
/// the patterns it runs in with B.
struct Study {
    table: &'static str,
    /// The sensitive query's statements (settings it needs first).
    sql: String,
    /// B's statements in this study.
    b_sql: String,
    /// The query's name in the rows, and the name of its object's row.
    name: &'static str,
    object_row: &'static str,
    /// `llc_protect`-style object specs; their frames are named by the part
    /// after the colon.
    protected: Vec<&'static str>,
    patterns: &'static [(&'static str, bool)],
}

fn studies(tables: &[String]) -> LabResult<Vec<Study>> {
    let tpch = |id: &str| {
        kura::tpch::run::query_text(id)
            .map(str::to_string)
            .ok_or_else(|| LabError::Missing(format!("TPC-H Q{id}: no query text")))
    };
    let mut out = Vec::new();
    for t in tables {
        out.push(match t.as_str() {
            "4-5" => Study {
                table: "4-5",
                sql: QUERY_A.into(),
                b_sql: QUERY_B.into(),
                name: "A",
                object_row: "A: its column",
                protected: vec!["column:table_a.val"],
                patterns: &[("interleaved", true), ("blocks", false)],
            },
            "9" => Study {
                table: "9",
                // The paper's plan: an index nested-loop join into tbl_a's index.
                sql: format!("SET enable_seqscan = off; {JOIN}"),
                b_sql: format!("SET enable_seqscan = on; {QUERY_B}"),
                name: "index join",
                object_row: "index join: its index",
                protected: vec!["index:tbl_a_k"],
                patterns: &[("alternated with B", true)],
            },
            "10" => Study {
                table: "10",
                sql: tpch("14")?,
                b_sql: QUERY_B.into(),
                name: "Q14",
                object_row: "Q14: its columns",
                protected: vec![
                    "column:lineitem.l_partkey",
                    "column:lineitem.l_extendedprice",
                    "column:lineitem.l_discount",
                    "column:lineitem.l_shipdate",
                    "column:part.p_partkey",
                    "column:part.p_type",
                ],
                patterns: &[("after a sweep", true)],
            },
            "11" => Study {
                table: "11",
                sql: tpch("18")?,
                b_sql: QUERY_B.into(),
                name: "Q18",
                object_row: "Q18: its columns",
                protected: vec![
                    "column:lineitem.l_orderkey",
                    "column:lineitem.l_quantity",
                    "column:orders.o_orderkey",
                    "column:orders.o_custkey",
                    "column:orders.o_orderdate",
                    "column:orders.o_totalprice",
                    "column:customer.c_custkey",
                    "column:customer.c_name",
                ],
                patterns: &[("after a sweep", true)],
            },
            other => {
                return Err(LabError::Invalid(format!(
                    "no table {other} in the recorded study (tables: {})",
                    TABLES.join(", ")
                )))
            }
        });
    }
    Ok(out)
}

/// The replayed LLC counters of one query in one pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRow {
    /// The paper's table: `4-5`, `9`, `10` or `11`.
    pub table: &'static str,
    /// `interleaved` (B, A, B, A, ...), `blocks` (A, A, ..., B, B, ...), or the
    /// interleaved patterns of tables 9–11 by their names.
    pub pattern: &'static str,
    /// The sensitive query (`A`, `index join`, `Q14`, `Q18`), the part of its
    /// accesses to the protected object's frames (`A: its column`, ...), or `B`.
    pub query: &'static str,
    pub off: LevelCounters,
    pub on: LevelCounters,
}

/// The order of queries of a pattern: one warm-up of each, then `reps` of each.
fn sequence(interleaved: bool, reps: usize) -> Vec<usize> {
    let mut seq = vec![0, 1];
    if interleaved {
        for _ in 0..reps {
            seq.extend([1, 0]);
        }
    } else {
        seq.extend(std::iter::repeat_n(0, reps));
        seq.extend(std::iter::repeat_n(1, reps));
    }
    seq
}

/// Records both patterns and replays them; writes `llc_recorded.csv`.
pub fn run(cfg: &RecordedConfig, out: &mut dyn Write) -> LabResult<Vec<RecordedRow>> {
    std::fs::create_dir_all(&cfg.out).at(cfg.out.display())?;
    let caches = read_sysfs(&cfg.geometry_root)?;
    let levels: Vec<LevelConfig> = data_hierarchy(&caches)
        .into_iter()
        .take(4)
        .map(LevelConfig::lru)
        .collect();
    let Some(llc) = levels.last().map(|l| l.geometry.clone()) else {
        return Err(LabError::Unavailable(format!(
            "{} describes no data caches: nothing to replay",
            cfg.geometry_root.display()
        )));
    };
    let studies = studies(&cfg.tables)?;
    let db_path = cfg.out.join("llc-recorded.db");
    let cache = Llc::of(&llc);
    let needs = Needs {
        index_join: studies.iter().any(|st| st.table == "9"),
        tpch: studies
            .iter()
            .any(|st| st.table == "10" || st.table == "11"),
    };
    let (db, sizes, measured) = setup::build_sized(&db_path, &cache, true, needs, out)?;
    writeln!(out, "{}", premise_line(&cache, &measured))?;
    let object_bytes = studies
        .iter()
        .map(|st| object_bytes(&db, &st.protected))
        .collect::<LabResult<Vec<u64>>>()?;
    drop(db);
    writeln!(
        out,
        "recorded stream (valgrind lackey), replayed through {}: A {} KiB of pages, B {} KiB, index join {} probes into {} keys, {} runs each",
        llc.describe(),
        measured.a_bytes / 1024,
        measured.b_bytes / 1024,
        sizes.probe_keys,
        sizes.index_keys,
        cfg.reps
    )?;
    let mut rows = Vec::new();
    for (study, bytes) in studies.iter().zip(object_bytes) {
        let names: Vec<&str> = study
            .protected
            .iter()
            .map(|p| p.split_once(':').map_or(*p, |(_, n)| n))
            .collect();
        writeln!(
            out,
            "table {}: {} protects {} ({} KiB)",
            study.table,
            study.name,
            names.join(", "),
            bytes / 1024
        )?;
        for &(pattern, interleaved) in study.patterns {
            let seq = sequence(interleaved, cfg.reps.max(1));
            let sql: Vec<String> = seq
                .iter()
                .map(|&q| [&study.sql, &study.b_sql][q].clone())
                .collect();
            let dump = cfg
                .out
                .join(format!("llc-recorded-{}.json", std::process::id()));
            let opts = ProfileOptions::new(
                db_path.clone(),
                sql,
                cfg.program.clone(),
                cfg.child_command.clone(),
            );
            let rec = RecordOptions {
                valgrind: cfg.valgrind.clone(),
                program: cfg.program.clone(),
                args: child_args(&opts, &dump),
                dump: dump.clone(),
                batch: 1 << 16,
            };
            // Which object an address is depends on the registry's events before the
            // access, and the log arrives with the dump at the end: keep the touches.
            let mut touches: Vec<Touch> = Vec::new();
            let line_size = u64::from(llc.line_size);
            let recorded = record(&rec, |batch| {
                for a in batch {
                    let t = Touch {
                        line: a.addr / line_size,
                        query: a.class,
                        epoch: a.epoch,
                    };
                    match touches.last() {
                        Some(l) if l.line == t.line && l.query == t.query => {}
                        _ => touches.push(t),
                    }
                }
            });
            let _ = std::fs::remove_file(&dump);
            let recorded = recorded?;
            let mut sim = partitioned(&levels, bytes)?;
            let (mark, sim) = replay(
                &touches,
                &recorded.dump.events,
                &seq,
                &names,
                line_size,
                &mut sim,
            )?;
            let counted = |classes: &[usize]| {
                let mut off = LevelCounters::default();
                let mut on = LevelCounters::default();
                for &c in classes {
                    let m = sim.since(&mark, c);
                    add(&mut off, &m.off);
                    add(&mut on, &m.on);
                }
                (off, on)
            };
            for (name, classes) in [
                (study.name, &[OBJECT, A_OTHER][..]),
                (study.object_row, &[OBJECT][..]),
                ("B", &[B_ALL][..]),
            ] {
                let (off, on) = counted(classes);
                rows.push(RecordedRow {
                    table: study.table,
                    pattern,
                    query: name,
                    off,
                    on,
                });
            }
        }
    }
    let _ = std::fs::remove_file(&db_path);
    print(&rows, out)?;
    write_csv(&cfg.out.join("llc_recorded.csv"), &rows)?;
    Ok(rows)
}

fn add(into: &mut LevelCounters, c: &LevelCounters) {
    into.accesses += c.accesses;
    into.hits += c.hits;
    into.misses += c.misses;
    into.compulsory += c.compulsory;
    into.capacity += c.capacity;
    into.conflict += c.conflict;
}

/// The model with paper 000's masks: the protected object in its ways,
/// everything else (A's other accesses, B's) in the rest. An object larger
/// than the LLC gets all ways but one.
fn partitioned(levels: &[LevelConfig], object_bytes: u64) -> LabResult<PartitionSim> {
    let (protected, others) = protect_masks(levels, object_bytes)?;
    Ok(PartitionSim::new(
        levels.to_vec(),
        &[(OBJECT, protected), (A_OTHER, others), (B_ALL, others)],
    )?)
}

/// Replays the touches in order, each in its class: the registry events up to
/// its epoch say whether its line is in a frame of the protected object. The
/// warm-ups (the first two queries) are replayed, not counted: the mark is
/// taken when the third query starts.
fn replay<'a>(
    touches: &[Touch],
    events: &[Event],
    seq: &[usize],
    protected_names: &[&str],
    line_size: u64,
    sim: &'a mut PartitionSim,
) -> LabResult<(kura_cache::cpu::Mark, &'a PartitionSim)> {
    let mut map = ObjectMap::new();
    let mut applied = 0usize;
    let mut mark = None;
    let mut batch: Vec<(u64, usize)> = Vec::with_capacity(1 << 16);
    for t in touches {
        let q = usize::from(t.query);
        if q >= 2 && mark.is_none() {
            sim.feed(&batch);
            batch.clear();
            mark = Some(sim.mark());
        }
        let epoch = (t.epoch as usize).min(events.len());
        if epoch > applied {
            // Frames change owners only at these events: flush what came before.
            sim.feed(&batch);
            batch.clear();
            for e in &events[applied..epoch] {
                map.apply(e);
            }
            applied = epoch;
        }
        let addr = t.line * line_size;
        let protected = map.lookup(addr).is_some_and(|id| {
            let o = map.object(id);
            o.kind == ObjectKind::BufferFrame && protected_names.contains(&o.name.as_str())
        });
        let class = match seq.get(q).copied().unwrap_or(1) {
            0 if protected => OBJECT,
            0 => A_OTHER,
            _ if protected => OBJECT,
            _ => B_ALL,
        };
        batch.push((addr, class));
    }
    sim.feed(&batch);
    let mark = mark.ok_or_else(|| {
        LabError::Check("the traced run ended before its measured queries".into())
    })?;
    Ok((mark, sim))
}

fn ratio(c: &LevelCounters) -> f64 {
    c.misses as f64 / c.accesses.max(1) as f64
}

fn print(rows: &[RecordedRow], out: &mut dyn Write) -> LabResult<()> {
    writeln!(
        out,
        "{:<6} {:<18} {:<22} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "table",
        "pattern",
        "query",
        "LLC accesses",
        "misses off",
        "misses on",
        "ratio off",
        "ratio on"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<6} {:<18} {:<22} {:>12} {:>12} {:>12} {:>9.1}% {:>9.1}%",
            r.table,
            r.pattern,
            r.query,
            r.off.accesses,
            r.off.misses,
            r.on.misses,
            100.0 * ratio(&r.off),
            100.0 * ratio(&r.on)
        )?;
    }
    Ok(())
}

fn write_csv(path: &Path, rows: &[RecordedRow]) -> LabResult<()> {
    let mut w = csv::Writer::from_path(path).at(path.display())?;
    w.write_record([
        "table",
        "pattern",
        "query",
        "llc_accesses_off",
        "llc_misses_off",
        "llc_accesses_on",
        "llc_misses_on",
    ])?;
    for r in rows {
        w.write_record([
            r.table.to_string(),
            r.pattern.to_string(),
            r.query.to_string(),
            r.off.accesses.to_string(),
            r.off.misses.to_string(),
            r.on.accesses.to_string(),
            r.on.misses.to_string(),
        ])?;
    }
    w.flush().at(path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_warm_up_then_interleave_or_block() {
        assert_eq!(sequence(true, 2), [0, 1, 1, 0, 1, 0]);
        assert_eq!(sequence(false, 2), [0, 1, 0, 0, 1, 1]);
    }
}
