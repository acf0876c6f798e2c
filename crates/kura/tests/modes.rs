//! The three execution modes (paper 003) give the same results: every TPC-H query
//! and the selective queries (A)–(D) (and, with indexes, their variants) at SF 0.01 run in `serial`, `static` and `ooo`
//! mode and are compared with each other; then `ooo` runs again over a buffer far
//! smaller than the data, where concurrent scan tasks miss on the same pages.

use kura::tpch::check::{field_matches, render};
use kura::tpch::load::Source;
use kura::tpch::run::{query_text, query_text_at, QUERY_IDS, VARIANT_IDS};
use kura::{Database, OpenOptions, Session};
use kura_common::Value;
use kura_exec::runtime::{page_fix_stats, shared_runtime};

const MODES: [&str; 3] = ["serial", "static", "ooo"];

/// The tests read process-wide runtime counters: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Rows of query `id` in `mode`; unordered queries are sorted so that only the
/// multiset of rows is compared.
fn run(session: &mut Session, id: &str, mode: &str) -> Vec<Vec<Value>> {
    session
        .execute(&format!("SET execution_mode = '{mode}'"))
        .expect("set the mode");
    // The data is SF 0.01 (the variants' parameters follow it).
    let sql = query_text_at(id, 0.01).expect("known query");
    let sql: &str = &sql;
    let result = session
        .execute(sql)
        .unwrap_or_else(|e| panic!("query {id} in {mode} mode: {e}"));
    let mut rows = result.rows();
    if !sql.to_ascii_lowercase().contains("order by") {
        rows.sort_by_key(|r| r.iter().map(render).collect::<Vec<_>>());
    }
    rows
}

/// Compares `other` with `reference` value by value (decimal and float sums may
/// differ in their last digits because partial sums are added in another order).
fn assert_same(id: &str, mode: &str, reference: &[Vec<Value>], other: &[Vec<Value>]) {
    assert_eq!(
        reference.len(),
        other.len(),
        "query {id}: row count in {mode} mode differs from serial"
    );
    for (i, (r, o)) in reference.iter().zip(other).enumerate() {
        assert_eq!(r.len(), o.len(), "query {id}: row {i} width in {mode} mode");
        for (a, b) in r.iter().zip(o) {
            assert!(
                field_matches(&render(a), b),
                "query {id}, row {i}: serial gave {a:?}, {mode} gave {b:?}"
            );
        }
    }
}

fn spawned_tasks() -> u64 {
    shared_runtime().expect("runtime").stats().total().spawned
}

fn with_database(name: &str, buffer_bytes: u64, body: impl FnOnce(&mut Session)) {
    with_database_indexed(name, buffer_bytes, false, body)
}

fn with_database_indexed(
    name: &str,
    buffer_bytes: u64,
    indexes: bool,
    body: impl FnOnce(&mut Session),
) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("kura-modes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let opts = OpenOptions {
            buffer_bytes: Some(buffer_bytes),
            buffered_io: true,
            ..OpenOptions::default()
        };
        let db = Database::open(&dir.join("tpch.kura"), opts).expect("open a fresh database");
        let mut session = db.session();
        kura::tpch::load(&mut session, Source::Generate(0.01), &|_, _| {}).expect("load SF 0.01");
        if indexes {
            kura::tpch::load::create_indexes(&mut session, &|_| {}).expect("build the indexes");
        }
        body(&mut session);
    }));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn all_queries_give_identical_results_in_the_three_modes() {
    with_database("all", 256 << 20, |session| {
        // Tasks spawned per mode: a query over small tables may have single-morsel
        // pipelines only (run on the caller), so this is counted over all queries.
        let mut spawned = [0u64; 3];
        for id in QUERY_IDS {
            let before = spawned_tasks();
            let reference = run(session, id, "serial");
            spawned[0] += spawned_tasks() - before;
            for (m, mode) in MODES.iter().enumerate().skip(1) {
                let before = spawned_tasks();
                let rows = run(session, id, mode);
                spawned[m] += spawned_tasks() - before;
                assert_same(id, mode, &reference, &rows);
            }
        }
        assert_eq!(spawned[0], 0, "serial mode used the task runtime");
        assert!(spawned[1] > 0, "static mode ran no task on the runtime");
        assert!(
            spawned[2] > spawned[1],
            "ooo mode did not decompose into more tasks than static: {spawned:?}"
        );
    });
}

#[test]
fn out_of_order_with_a_small_buffer_shares_reads_and_matches_serial() {
    // 512 KB: a small fraction of SF 0.01 (packed), so scan tasks keep missing and evicting.
    with_database("small", 1 << 19, |session| {
        let reads_before = page_fix_stats().reads;
        for id in ["1", "3", "6", "9", "18", "c"] {
            let reference = run(session, id, "serial");
            let rows = run(session, id, "ooo");
            assert_same(id, "ooo", &reference, &rows);
        }
        let stats = page_fix_stats();
        assert!(
            stats.reads > reads_before,
            "ooo scans issued no asynchronous reads: {stats:?}"
        );
        assert!(
            stats.max_in_flight > 1,
            "ooo scans never had two reads in flight: {stats:?}"
        );
        let pinned = session.storage().buffer().pinned_frames();
        assert_eq!(pinned, 0, "frames left pinned after the queries");
    });
}

#[test]
fn index_plans_give_identical_results_in_the_three_modes() {
    // With paper 003's indexes, (A)–(D) and several TPC-H queries run as index
    // scans and index nested-loop joins, whose pieces are tasks in ooo mode.
    with_database_indexed("indexed", 256 << 20, true, |session| {
        for id in QUERY_IDS.iter().chain(VARIANT_IDS.iter()) {
            let reference = run(session, id, "serial");
            for mode in MODES.iter().skip(1) {
                let rows = run(session, id, mode);
                assert_same(id, mode, &reference, &rows);
            }
        }
    });
}

#[test]
fn index_plans_over_a_small_buffer_give_identical_results_in_the_three_modes() {
    // 512 KB: an index fetch's rows need more table pages than a task may pin, so
    // index scans cut their pieces into slices and index joins their probe
    // input into short runs of keys, each a task of its own in ooo mode.
    with_database_indexed("indexed-small", 1 << 19, true, |session| {
        let reads_before = page_fix_stats().reads;
        for id in ["a", "b", "c", "d"].iter().chain(VARIANT_IDS.iter()) {
            let reference = run(session, id, "serial");
            for mode in MODES.iter().skip(1) {
                let rows = run(session, id, mode);
                assert_same(id, mode, &reference, &rows);
            }
        }
        let stats = page_fix_stats();
        assert!(
            stats.reads > reads_before && stats.max_in_flight > 1,
            "index plans in ooo mode had no reads in flight together: {stats:?}"
        );
        let pinned = session.storage().buffer().pinned_frames();
        assert_eq!(pinned, 0, "frames left pinned after the queries");
    });
}

/// Runs `sql` in ooo mode on a freshly opened (cold) database with `SET prefetch`;
/// returns the rows and the buffer's read-ahead count.
fn cold_scan(path: &std::path::Path, sql: &str, prefetch: &str) -> (Vec<Vec<Value>>, u64) {
    cold_scan_in(path, sql, prefetch, "ooo")
}

/// [`cold_scan`] in `mode`.
fn cold_scan_in(
    path: &std::path::Path,
    sql: &str,
    prefetch: &str,
    mode: &str,
) -> (Vec<Vec<Value>>, u64) {
    let opts = OpenOptions {
        buffer_bytes: Some(1 << 19),
        buffered_io: true,
        ..OpenOptions::default()
    };
    let db = Database::open(path, opts).expect("reopen the database");
    let mut session = db.session();
    session
        .execute(&format!("SET execution_mode = '{mode}'"))
        .unwrap();
    session
        .execute(&format!("SET prefetch = {prefetch}"))
        .unwrap();
    let before = db.storage().buffer().stats();
    let rows = session
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql} with prefetch {prefetch}: {e}"))
        .rows();
    let stats = db.storage().buffer().stats().since(&before);
    assert_eq!(
        db.storage().buffer().pinned_frames(),
        0,
        "frames left pinned"
    );
    (rows, stats.prefetch_reads)
}

/// A database file loaded with SF 0.01 and closed, for tests that reopen it cold.
fn with_loaded_file(name: &str, body: impl FnOnce(&std::path::Path)) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::env::temp_dir().join(format!("kura-modes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tpch.kura");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        {
            let db = Database::open(&path, OpenOptions::default()).expect("create");
            let mut session = db.session();
            kura::tpch::load(&mut session, Source::Generate(0.01), &|_, _| {}).expect("load");
        }
        body(&path);
    }));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn prefetch_reads_scans_ahead_and_keeps_results() {
    with_loaded_file("prefetch", |path| {
        let prefetches_before = page_fix_stats().prefetches;
        for sql in [
            // Text as well: packed integer pages alone hold SF 0.01's 60,000
            // rows in so few pages that every morsel's are already pinned.
            "SELECT count(*), sum(l_quantity), sum(l_extendedprice), min(l_shipdate), max(l_comment) FROM lineitem",
            query_text("1").unwrap(),
            query_text("6").unwrap(),
        ] {
            // Read-ahead races the morsel tasks that fix the same pages: on a
            // loaded machine one cold run may find every page it would read
            // already being read. It must read ahead in one of three.
            let mut tries = (0..3).map(|_| cold_scan(path, sql, "on"));
            let (on, ahead_on) = tries
                .find(|(_, ahead)| *ahead > 0)
                .unwrap_or_else(|| panic!("{sql}: three cold scans were not read ahead"));
            let (off, ahead_off) = cold_scan(path, sql, "off");
            assert_eq!(ahead_off, 0, "{sql}: read ahead with prefetch off");
            assert!(ahead_on > 0);
            assert_same(sql, "ooo with prefetch off", &on, &off);
        }
        assert!(page_fix_stats().prefetches > prefetches_before);
    });
}

#[test]
fn the_probe_sides_first_pages_are_read_while_the_build_side_merges() {
    with_loaded_file("next-pipeline", |path| {
        let sql = "SELECT o_orderpriority, count(*), sum(l_quantity) FROM orders JOIN lineitem \
                   ON o_orderkey = l_orderkey WHERE o_orderdate < DATE '1993-06-01' \
                   GROUP BY o_orderpriority ORDER BY o_orderpriority";
        let (reference, _) = cold_scan_in(path, sql, "off", "serial");
        for mode in ["static", "ooo"] {
            let before = kura_exec::next_reads::pages_read();
            let (rows, _) = cold_scan_in(path, sql, "on", mode);
            assert_same(sql, mode, &reference, &rows);
            assert!(
                kura_exec::next_reads::pages_read() > before,
                "{mode}: no page of the probe side was read during the build's merge"
            );
        }
        // Serial mode stays the one-thread baseline; prefetch off reads nothing ahead.
        for (mode, prefetch) in [("serial", "on"), ("ooo", "off")] {
            let before = kura_exec::next_reads::pages_read();
            let (rows, _) = cold_scan_in(path, sql, prefetch, mode);
            assert_same(sql, mode, &reference, &rows);
            assert_eq!(
                kura_exec::next_reads::pages_read(),
                before,
                "{mode}, prefetch {prefetch}"
            );
        }
    });
}

#[test]
fn serial_and_static_mode_read_ahead_synchronously_and_keep_results() {
    with_loaded_file("sync-prefetch", |path| {
        for mode in ["serial", "static"] {
            for sql in [
                // Text as well: packed integer pages alone hold SF 0.01's 60,000
            // rows in so few pages that every morsel's are already pinned.
            "SELECT count(*), sum(l_quantity), sum(l_extendedprice), min(l_shipdate), max(l_comment) FROM lineitem",
                query_text("6").unwrap(),
            ] {
                let (on, ahead_on) = cold_scan_in(path, sql, "on", mode);
                let (off, ahead_off) = cold_scan_in(path, sql, "off", mode);
                assert_eq!(ahead_off, 0, "{mode}: {sql}: read ahead with prefetch off");
                assert!(ahead_on > 0, "{mode}: {sql}: a cold scan was not read ahead");
                assert_same(sql, &format!("{mode} with prefetch off"), &on, &off);
            }
        }
    });
}

#[test]
fn runtime_counts_the_synchronous_reads_of_serial_and_static_mode() {
    with_loaded_file("sync-reads", |path| {
        let rt = shared_runtime().expect("runtime");
        for mode in ["serial", "static"] {
            let opts = OpenOptions {
                buffer_bytes: Some(1 << 19),
                buffered_io: true,
                ..OpenOptions::default()
            };
            let db = Database::open(path, opts).expect("reopen the database");
            let mut session = db.session();
            session
                .execute(&format!("SET execution_mode = '{mode}'"))
                .unwrap();
            // Without read-ahead every page read is one request; read-ahead
            // reads runs of pages with one request each.
            session.execute("SET prefetch = off").unwrap();
            let (reads0, io0) = (db.storage().buffer().stats().pages_read, rt.stats().total());
            session.execute(query_text("1").unwrap()).unwrap();
            let reads = db.storage().buffer().stats().pages_read - reads0;
            let io = rt.stats().total();
            let completed = io.io_completed - io0.io_completed;
            assert!(reads > 0, "{mode}: a cold query read nothing");
            assert!(
                completed >= reads,
                "{mode}: the runtime counted {completed} of {reads} page reads"
            );
            assert_eq!(io.io_submitted - io0.io_submitted, completed, "{mode}");
            // With read-ahead a request reads a run of pages: the runtime's page
            // count (what the timelines plot) still counts each page.
            drop(session);
            drop(db);
            let db = Database::open(path, opts_small()).expect("reopen the database");
            let mut session = db.session();
            session
                .execute(&format!("SET execution_mode = '{mode}'"))
                .unwrap();
            session.execute("SET prefetch = on").unwrap();
            let (reads0, io0) = (db.storage().buffer().stats().pages_read, rt.stats().total());
            session.execute(query_text("1").unwrap()).unwrap();
            let reads = db.storage().buffer().stats().pages_read - reads0;
            let io = rt.stats().total();
            let requests = io.io_completed - io0.io_completed;
            let pages = requests + io.extra_run_pages - io0.extra_run_pages;
            assert!(
                pages >= reads,
                "{mode}: the runtime counted {pages} of {reads} pages read ({requests} requests)"
            );
        }
    });
}

fn opts_small() -> OpenOptions {
    OpenOptions {
        buffer_bytes: Some(1 << 19),
        buffered_io: true,
        ..OpenOptions::default()
    }
}
