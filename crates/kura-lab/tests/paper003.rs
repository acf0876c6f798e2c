//! `kura bench paper003` without its peers, at SF 0.01: figures 2-3 are measured on a
//! tiny database built for the run (and removed after it), paper003.csv holds one row
//! per query and mode with a time and as many rows as the expected answer of (C) and
//! (vC), paper003.md states the buffer and says the peers were left out, and the
//! timeline charts are PNGs.

use kura_lab::paper003::{self, Config, Peers, CSV_COLUMNS};

const QUERIES: [&str; 2] = ["c", "vc"];
/// The paper's serial, kura's serial with read-ahead, static, out-of-order.
const MODES: [&str; 4] = ["serial", "serial + read-ahead", "static", "ooo"];
/// Their timeline CSVs' names.
const MODE_FILES: [&str; 4] = ["serial", "serial-read-ahead", "static", "ooo"];

/// Rows of a query's expected answer at SF 0.01 (the file has a header line).
fn expected_rows(query: &str) -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/selective/sf0.01")
        .join(format!("{query}.csv"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines().filter(|l| !l.is_empty()).count() - 1
}

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// The timelines of figures 2-3 are sampled from the process-wide task runtime,
/// so two runs in one process (these tests) must not overlap.
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn the_kura_only_path_writes_figures_2_and_3_with_csv_and_markdown() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cfg = Config::quick(out.clone(), Peers::Skip("no peers in this test".into()));
    cfg.buffer = 4 << 20;
    cfg.ceiling_seconds = 0.05;
    cfg.ceiling_reps = 1;
    cfg.timeline_queries = QUERIES.iter().map(|q| q.to_string()).collect();
    let mut log = Vec::new();
    let summary = paper003::run(&cfg, &mut log, &mut |_, _| {}).unwrap();
    let log = String::from_utf8(log).unwrap();

    // The scratch database is gone; the figures are there.
    assert!(!out.join("paper003-sf0.01.db").exists(), "{log}");
    for q in QUERIES {
        for name in [format!("fig2-{q}-cpu.png"), format!("fig3-{q}-iops.png")] {
            let bytes = std::fs::read(out.join(&name)).unwrap();
            assert!(bytes.len() > 1000 && bytes[..8] == PNG_SIGNATURE, "{name}");
        }
        for file in MODE_FILES {
            assert!(out.join(format!("modes-{q}-{file}.csv")).exists(), "{file}");
        }
    }
    assert!(!out.join("fig4-cold.png").exists());
    assert!(summary.peers.is_empty());

    let mut csv = csv::Reader::from_path(out.join("paper003.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, CSV_COLUMNS);
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), QUERIES.len() * MODES.len(), "{rows:?}");
    let mut r = rows.iter();
    for q in QUERIES {
        let expected = expected_rows(q);
        for mode in MODES {
            let r = r.next().unwrap();
            let id = kura_lab::modes::label(q);
            assert_eq!(
                (&r[0], &r[1], &r[2], &r[3]),
                ("2-3", id.as_str(), mode, "kura")
            );
            let secs: f64 = r[4].parse().unwrap();
            let iops: f64 = r[6].parse().unwrap();
            assert!(secs > 0.0 && iops >= 0.0, "{r:?}");
            assert_eq!(r[8].parse::<usize>().unwrap(), expected, "{q} {mode}");
        }
    }

    let md = std::fs::read_to_string(out.join("paper003.md")).unwrap();
    assert!(
        md.contains("# Paper 003, figures 2-5: TPC-H SF 0.01"),
        "{md}"
    );
    assert!(md.contains("empty 4 MiB buffer"), "{md}");
    assert!(
        md.contains("PostgreSQL and DuckDB not run (no peers in this test)"),
        "{md}"
    );
    for mode in MODES {
        assert!(md.contains(&format!("| (C) | {mode} |")), "{md}");
        assert!(md.contains(&format!("| (vC) | {mode} |")), "{md}");
    }
    assert!(md.contains("![fig3-c-iops.png](fig3-c-iops.png)"), "{md}");
    assert!(summary.files.iter().all(|f| f.exists()));
}

/// `--covering`: the database of figures 2-3 gets the covering indexes beside paper
/// 003's set, vC then reads index leaves only (answers unchanged), and the report says
/// which index set was measured.
#[test]
fn covering_builds_the_covering_indexes_and_says_so() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let db = dir.path().join("covering.db");
    let mut cfg = Config::quick(out.clone(), Peers::Skip("no peers in this test".into()));
    cfg.buffer = 4 << 20;
    cfg.ceiling_seconds = 0.05;
    cfg.ceiling_reps = 1;
    cfg.timeline_queries = vec!["vc".into()];
    cfg.db = Some(db.clone());
    cfg.covering = true;
    let mut log = Vec::new();
    paper003::run(&cfg, &mut log, &mut |_, _| {}).unwrap();
    let log = String::from_utf8(log).unwrap();
    assert!(log.contains("covering indexes"), "{log}");

    let mut csv = csv::Reader::from_path(out.join("paper003.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), MODES.len(), "{rows:?}");
    for r in &rows {
        assert_eq!(r[8].parse::<usize>().unwrap(), expected_rows("vc"), "{r:?}");
    }
    let md = std::fs::read_to_string(out.join("paper003.md")).unwrap();
    assert!(md.contains("the covering indexes of (A)-(D)"), "{md}");

    // The database was given, so it is kept: its index set and vC's plan show the
    // covering indexes at work.
    let database = kura::Database::open(&db, kura::OpenOptions::default()).unwrap();
    let mut session = database.session();
    let names = session
        .execute("SELECT indexname FROM pg_indexes ORDER BY indexname")
        .unwrap();
    let names = format!("{:?}", names.rows());
    for index in [
        "lineitem_orderkey_cover",
        "orders_custkey_cover",
        "customer_name",
    ] {
        assert!(names.contains(index), "{names}");
    }
    let text = kura::tpch::run::variant_text("vc", 0.01).unwrap();
    let plan = session.execute(&format!("EXPLAIN {text}")).unwrap();
    let plan = format!("{:?}", plan.rows());
    assert!(plan.contains("index-only"), "{plan}");
}
