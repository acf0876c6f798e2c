//! `kura bench llc --quick` (paper 000) on a small cache geometry (a sysfs layout
//! in a temporary directory, a 2 MiB LLC): the workload is sized in pages so the
//! premise holds and the output says so first; the simulated misses show the
//! paper's direction — A interleaved with B misses far more than in blocks, and
//! partitioning keeps A's and the index's lines; a second run reuses the tables.

use kura_lab::llc::{self, setup, Config, Kind, Row};

fn cache(root: &std::path::Path, i: usize, level: u8, kind: &str, size: &str, ways: u32) {
    kura_cache::cpu::geometry::write_sysfs_cache(root, i, level, kind, size, ways).unwrap();
}

fn row<'a>(rows: &'a [Row], table: &str, kind: Kind, query: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.table == table && r.kind == kind && r.query.starts_with(query))
        .unwrap_or_else(|| panic!("no {table} {kind:?} {query} row"))
}

#[test]
fn the_quick_run_states_its_premise_and_shows_the_papers_direction() {
    let dir = tempfile::tempdir().unwrap();
    let geo = dir.path().join("cache");
    cache(&geo, 0, 1, "Data", "32K", 8);
    cache(&geo, 1, 1, "Instruction", "32K", 8);
    cache(&geo, 2, 2, "Unified", "256K", 8);
    cache(&geo, 3, 3, "Unified", "2048K", 16);
    let mut cfg = Config::new(dir.path().join("out"), true);
    cfg.reps = 2;
    cfg.geometry_root = geo;
    let mut out = Vec::new();
    let report = llc::run(&cfg, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(report.premise.starts_with("premise holds"), "{text}");
    // the premise comes before any measurement
    let first_table = text.find("tables 4-5").unwrap();
    assert!(text[..first_table].contains("premise holds"), "{text}");
    assert!(text.contains("LLC 2.0 MiB, 16-way"), "{text}");

    let rows = &report.rows;
    let off = |r: &Row| r.sim_off.unwrap();
    let on = |r: &Row| r.sim_on.unwrap();
    let a_inter = row(rows, "4-5", Kind::Disturbed, "A");
    let a_blocks = row(rows, "4-5", Kind::Quiet, "A");
    assert!(off(a_inter) > 0.8, "A interleaved: {a_inter:?}\n{text}");
    assert!(off(a_blocks) < 0.1, "A in blocks: {a_blocks:?}\n{text}");
    assert!(
        on(a_inter) < 0.1,
        "A interleaved, partitioned: {a_inter:?}\n{text}"
    );
    let b_inter = row(rows, "4-5", Kind::Disturbed, "B");
    assert!(off(b_inter) > 0.8, "B is larger than the LLC: {b_inter:?}");
    let join = row(rows, "9", Kind::Disturbed, "index join");
    // A probe's root and upper lines repeat across probes, so even a cold
    // index misses on a share of the accesses only (the paper: 77 %).
    assert!(
        off(join) >= 0.3 && on(join) < off(join) / 2.0,
        "index join alternated with B: {join:?}\n{text}"
    );
    // Tables 10-11 run only where the query's columns fit this LLC, and say so.
    for (table, q) in [("10", "Q14"), ("11", "Q18")] {
        match rows
            .iter()
            .find(|r| r.table == table && r.kind == Kind::Disturbed)
        {
            Some(r) => assert!(off(r) > on(r), "{q}: {r:?}"),
            None => assert!(
                report
                    .notes
                    .iter()
                    .any(|n| n.starts_with(&format!("table {table} skipped: {q}'s columns"))),
                "{:?}",
                report.notes
            ),
        }
    }
    assert!(dir.path().join("out/llc.csv").exists());
    assert!(dir.path().join("out/llc_miss.png").exists());

    // The scratch database is reused for the same LLC and mode.
    let llc = setup::Llc {
        bytes: 2 << 20,
        hardware_bytes: 2 << 20,
        ways: 16,
    };
    let mut again = Vec::new();
    let (_, sizes, measured) =
        setup::open_or_build(&dir.path().join("out/llc-quick.db"), &llc, true, &mut again).unwrap();
    assert!(again.is_empty(), "{}", String::from_utf8_lossy(&again));
    assert!(sizes.b_rows > sizes.a_rows);
    assert!(setup::premise_failure(&llc, &measured).is_none());
}
