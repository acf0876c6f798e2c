//! A tiny `kura bench memsweep` (SF 0.01, two buffer sizes): the CSV has the
//! study's columns and one row per point, the counters are consistent, prefetch
//! reads ahead only when on, and the too-small pool refuses the resident set.

use kura_lab::memsweep::{self, Config, CSV_COLUMNS};

#[test]
fn a_tiny_sweep_writes_the_csv_with_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::quick(dir.path().join("sweep.db"), dir.path().join("out"));
    cfg.sf = 0.01;
    // 256 KiB: less than the scan's bit-packed and dictionary-coded columns of
    // SF 0.01 lineitem (512 KiB held them all once l_returnflag was coded).
    cfg.buffers = vec![1 << 18, 16 << 20];
    cfg.policies = vec!["lru".into(), "density".into()];
    cfg.reps = 1;
    let mut report = Vec::new();
    let mut calls = 0;
    let points = memsweep::run(&cfg, &mut report, &mut |_, _| calls += 1).unwrap();
    let report = String::from_utf8(report).unwrap();
    // Per shape and buffer: lru on/off, density; the index shapes add resident
    // indexes, whole and interior nodes only.
    assert_eq!(points.len(), 3 * 2 * 3 + 2 * 2 * 2, "{report}");
    assert_eq!(calls, points.len());

    let mut csv = csv::Reader::from_path(dir.path().join("out/memsweep.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, CSV_COLUMNS);
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), points.len());
    let col = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
    for r in &rows {
        assert_eq!(r.len(), CSV_COLUMNS.len(), "{r:?}");
        if !r[col("error")].is_empty() {
            assert_ne!(r[col("resident")].to_string(), "no", "{r:?}");
            continue;
        }
        let fixes: u64 = r[col("fixes")].parse().unwrap();
        let hit: f64 = r[col("hit_ratio")].parse().unwrap();
        let total: f64 = r[col("total_s")].parse().unwrap();
        assert!(
            fixes > 0 && (0.0..=1.0).contains(&hit) && total > 0.0,
            "{r:?}"
        );
        if &r[col("prefetch")] == "off" {
            assert_eq!(r[col("prefetched")].to_string(), "0", "{r:?}");
        }
    }
    // The scan over a 256 KiB pool misses, and with prefetch on reads ahead.
    let scan_small_on = points
        .iter()
        .find(|p| p.shape == "scan" && p.buffer == 1 << 18 && p.prefetch && p.policy == "lru")
        .unwrap();
    assert!(
        scan_small_on.pages_read > 0 && scan_small_on.prefetched > 0,
        "{scan_small_on:?}"
    );
    // 256 KiB is 16 frames, all of which must stay free for queries.
    assert!(points
        .iter()
        .filter(|p| p.resident && p.buffer == 1 << 18)
        .all(|p| p
            .error
            .as_deref()
            .is_some_and(|e| e.contains("must stay free"))));
    for shape in ["scan", "join3", "join4"] {
        assert!(dir
            .path()
            .join(format!("out/memsweep-{shape}.png"))
            .exists());
    }
    assert!(report.contains("improvement ratio"), "{report}");
}

/// Without --buffers the sweep measures each shape's working set, says whether
/// the premise holds, and picks buffers around the working sets: at the
/// smallest every shape reads pages (and prefetch reads ahead for the scan), at
/// the largest none does — the effect paper 001 charts, counted, not timed.
#[test]
fn chosen_buffers_straddle_the_working_sets() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::quick(dir.path().join("sweep.db"), dir.path().join("out"));
    cfg.sf = 0.01;
    cfg.policies = vec!["lru".into()];
    cfg.shapes = vec!["scan".into(), "join4".into()];
    cfg.resident = false;
    cfg.reps = 1;
    let mut report = Vec::new();
    let points = memsweep::run(&cfg, &mut report, &mut |_, _| {}).unwrap();
    let report = String::from_utf8(report).unwrap();
    let premise = report
        .lines()
        .find(|l| l.starts_with("premise"))
        .unwrap_or_else(|| panic!("no premise line: {report}"));
    assert!(premise.starts_with("premise holds"), "{report}");
    assert!(
        premise.contains("scan ") && premise.contains("join4 "),
        "{premise}"
    );
    let smallest = points.iter().map(|p| p.buffer).min().unwrap();
    let largest = points.iter().map(|p| p.buffer).max().unwrap();
    assert!(smallest * 4 <= largest, "{report}");
    for p in &points {
        assert!(p.error.is_none(), "{p:?}");
        if p.buffer == smallest {
            assert!(p.pages_read > 0, "misses at the smallest buffer: {p:?}");
        }
        if p.buffer == largest {
            assert_eq!(p.pages_read, 0, "fits the largest buffer: {p:?}");
        }
    }
    let scan_small = points
        .iter()
        .find(|p| p.shape == "scan" && p.buffer == smallest && p.prefetch)
        .unwrap();
    assert!(scan_small.prefetched > 0, "{scan_small:?}");
}
