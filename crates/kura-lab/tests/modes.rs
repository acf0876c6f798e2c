//! `kura bench modes`' serial lines read as they say, counted by the buffer manager
//! on a TPC-H SF 0.01 database: the paper's serial issues one page per read request
//! with at most one read in flight, and "serial + read-ahead" reads several pages
//! per request on a sequential scan. Counts, not times, so the machine's load does
//! not matter.

use kura_lab::modes::{self, Config, SERIAL, SERIAL_READ_AHEAD};

/// The queries' pages are read from the process-wide runtime's caller slot and
/// its counters: one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A TPC-H SF 0.01 database with paper 003's indexes in `dir`.
fn tpch_db(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("modes.db");
    let db = kura::Database::open(&path, kura::OpenOptions::default()).unwrap();
    let mut session = db.session();
    kura::tpch::load(
        &mut session,
        kura::tpch::load::Source::Generate(0.01),
        &|_, _| {},
    )
    .unwrap();
    kura::tpch::load::create_indexes(&mut session, &|_| {}).unwrap();
    path
}

fn config(db: std::path::PathBuf, out: std::path::PathBuf) -> Config {
    Config {
        db,
        // Far smaller than the data, as the benchmark's cold runs.
        buffer: 4 << 20,
        queries: vec![],
        out,
        prefetch: "on".into(),
        ceiling_seconds: 0.05,
        ceiling_reps: 1,
        counters: false,
    }
}

#[test]
fn the_papers_serial_reads_one_page_per_request_and_read_ahead_reads_runs() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(tpch_db(dir.path()), dir.path().join("out"));

    // Q1 and Q6 scan LINEITEM; (C) and vC search indexes and fetch rows.
    for id in ["1", "6", "c", "vc"] {
        let r = modes::cold_run(&cfg, id, SERIAL).unwrap();
        assert!(r.pages_read > 0, "({id}) serial: a cold run read nothing");
        assert_eq!(
            r.read_requests, r.pages_read,
            "({id}) the paper's serial must read one page per request"
        );
        assert!(
            r.peak_in_flight <= 1,
            "({id}) the paper's serial had {} reads in flight at once",
            r.peak_in_flight
        );
        assert_eq!(r.read_ahead, 0, "({id}) the paper's serial read ahead");
    }

    // kura's serial with read-ahead: still one synchronous read at a time, but a
    // sequential scan's requests read runs of consecutive pages.
    for id in ["1", "6"] {
        let r = modes::cold_run(&cfg, id, SERIAL_READ_AHEAD).unwrap();
        assert!(
            r.read_requests > 0 && r.pages_read > r.read_requests,
            "({id}) serial + read-ahead read {} pages with {} requests",
            r.pages_read,
            r.read_requests
        );
        assert!(r.pages_per_request() > 1.0, "({id})");
        assert!(r.peak_in_flight <= 1, "({id}) {}", r.peak_in_flight);
        assert!(
            r.read_ahead > 0,
            "({id}) serial + read-ahead read nothing ahead"
        );
    }
}

/// The printed table has the four lines, and the speed-up of out-of-order is
/// given against the paper's serial and against the read-ahead serial.
#[test]
fn the_table_shows_four_lines_and_both_serial_ratios() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut cfg = config(tpch_db(dir.path()), out.clone());
    cfg.queries = vec!["6".into()];
    let mut log = Vec::new();
    let report = modes::run(&cfg, &mut log, &mut |_, _| {}).unwrap();
    let log = String::from_utf8(log).unwrap();
    for mode in modes::MODES {
        let r = report.run_of("6", mode).unwrap_or_else(|| panic!("{mode}"));
        assert!(r.secs > 0.0 && r.rows == 1, "{r:?}");
        assert!(log.contains(&format!("(6)   {mode:<19}")), "{mode}: {log}");
    }
    let serial = report.run_of("6", SERIAL).unwrap();
    assert_eq!(serial.pages_per_request(), 1.0, "{log}");
    assert!(log.contains("ooo/serial "), "{log}");
    assert!(log.contains("ooo/(serial + read-ahead) "), "{log}");
    for file in ["serial", "serial-read-ahead", "static", "ooo"] {
        assert!(out.join(format!("modes-6-{file}.csv")).exists(), "{file}");
    }
    for chart in ["modes-6-iops.png", "modes-6-cpu.png"] {
        assert!(std::fs::metadata(out.join(chart)).unwrap().len() > 1000);
    }
}
