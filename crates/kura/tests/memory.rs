//! Memory bounds across sessions: every query's hash tables, sorts and collected
//! results also count against the budget all running queries share
//! (`OpenOptions::max_memory`, `kura --max-memory`); a query that does not fit
//! fails with 53200 and gives its memory back, and the database goes on serving.

use kura::tpch::load::Source;
use kura::{Database, OpenOptions, Value};

fn tpch(max_memory: u64) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(
        &dir.path().join("t.db"),
        OpenOptions {
            buffer_bytes: Some(16 << 20),
            max_memory: Some(max_memory),
            ..Default::default()
        },
    )
    .unwrap();
    kura::tpch::load(&mut db.session(), Source::Generate(0.01), &|_, _| {}).unwrap();
    (dir, db)
}

#[test]
fn a_query_beyond_the_shared_budget_fails_and_gives_its_memory_back() {
    let (_dir, db) = tpch(2 << 20);
    let mut s = db.session();
    // The session's own limit (4 GB by default) would allow it; the shared one not.
    let e = s.execute("SELECT * FROM lineitem").unwrap_err();
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.to_string().contains("all running queries share"), "{e}");
    assert_eq!(db.shared_memory(), (0, 2 << 20));
    // Small answers still run, from this session and another.
    let r = s.execute("SELECT count(*) FROM lineitem").unwrap();
    assert_eq!(r.rows()[0][0], Value::BigInt(60_175));
    let r = db
        .session()
        .execute("SELECT l_orderkey FROM lineitem ORDER BY l_extendedprice DESC LIMIT 1")
        .unwrap();
    assert_eq!(r.rows().len(), 1);
    assert_eq!(db.shared_memory().0, 0);
}

#[test]
fn the_session_limit_applies_below_the_shared_one() {
    let (_dir, db) = tpch(1 << 30);
    let mut s = db.session();
    s.execute("SET memory_limit = '1MB'").unwrap();
    let e = s
        .execute("SELECT l_comment, count(*) FROM lineitem GROUP BY l_comment")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "53200");
    assert!(e.to_string().contains("SET memory_limit"), "{e}");
    assert_eq!(db.shared_memory().0, 0);
}

/// Collects what a streamed query delivers; wants at most `stop_after` batches.
#[derive(Default)]
struct Collect {
    columns: Vec<String>,
    batches: usize,
    rows: Vec<Vec<Value>>,
    stop_after: Option<usize>,
}

impl kura::RowSink for Collect {
    fn columns(&mut self, columns: &[kura::ResultColumn]) {
        self.columns = columns.iter().map(|c| c.name.clone()).collect();
    }
    fn rows(&mut self, batch: kura::Batch) -> bool {
        self.batches += 1;
        self.rows.extend((0..batch.len()).map(|i| batch.row(i)));
        self.stop_after.is_none_or(|n| self.batches < n)
    }
}

#[test]
fn a_streamed_result_is_the_collected_one_and_needs_no_memory_for_itself() {
    let (_dir, db) = tpch(1 << 30);
    let sql = "SELECT l_orderkey, l_linenumber, l_comment FROM lineitem WHERE l_quantity > 10";
    for mode in ["serial", "static", "ooo"] {
        let mut s = db.session();
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        let whole = s.execute(sql).unwrap();
        // Collected, this result does not fit in 1 MB; streamed, it does.
        s.execute("SET memory_limit = '1MB'").unwrap();
        assert_eq!(s.execute(sql).unwrap_err().sqlstate(), "53200");
        let mut sink = Collect::default();
        let streamed = s.execute_streaming(sql, &mut sink).unwrap();
        assert_eq!(sink.columns, ["l_orderkey", "l_linenumber", "l_comment"]);
        assert_eq!(sink.rows, whole.rows(), "{mode}");
        assert!(streamed.batches.is_empty());
        assert_eq!(streamed.tag, format!("SELECT {}", sink.rows.len()));
        assert!(sink.rows.len() > 40_000, "{}", sink.rows.len());
        // Other statements answer as execute does.
        let r = s.execute_streaming("SET memory_limit = '4GB'", &mut Collect::default());
        assert_eq!(r.unwrap().tag, "SET");
    }
    assert_eq!(db.shared_memory().0, 0);
}

#[test]
fn a_sink_that_wants_no_more_stops_the_query() {
    let (_dir, db) = tpch(1 << 30);
    let mut s = db.session();
    let mut sink = Collect {
        stop_after: Some(1),
        ..Default::default()
    };
    let r = s
        .execute_streaming("SELECT * FROM lineitem, nation", &mut sink)
        .unwrap();
    assert_eq!(sink.batches, 1);
    assert_eq!(r.tag, format!("SELECT {}", sink.rows.len()));
    // The session goes on.
    let r = s.execute("SELECT count(*) FROM nation").unwrap();
    assert_eq!(r.rows()[0][0], Value::BigInt(25));
    // A streamed query that fails reports its error.
    let e = s
        .execute_streaming(
            "SELECT 1 / (l_orderkey - l_orderkey) FROM lineitem",
            &mut Collect::default(),
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22012");
}

#[test]
fn rows_before_an_error_are_delivered() {
    let (_dir, db) = tpch(1 << 30);
    let mut s = db.session();
    let mut sink = Collect::default();
    let e = s
        .execute_streaming(
            "SELECT l_orderkey, 1 / (l_orderkey - 60000) FROM lineitem",
            &mut sink,
        )
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22012");
    assert!(sink.rows.len() > 40_000, "{}", sink.rows.len());
}

#[test]
fn an_open_cursor_holds_its_rows_against_the_shared_budget_until_closed() {
    let (_dir, db) = tpch(64 << 20);
    let mut s = db.session();
    s.execute("BEGIN").unwrap();
    s.execute("DECLARE c CURSOR FOR SELECT l_orderkey, l_comment FROM lineitem")
        .unwrap();
    let held = db.shared_memory().0;
    assert!(held > 1 << 20, "a materialized cursor holds {held} bytes");
    let r = s.execute("FETCH FORWARD 10 FROM c").unwrap();
    assert_eq!((r.row_count(), r.tag.as_str()), (10, "FETCH 10"));
    s.execute("CLOSE c").unwrap();
    assert_eq!(db.shared_memory().0, 0);
    // A WITH HOLD cursor survives COMMIT and gives its memory back when the
    // session ends; one without is closed by COMMIT.
    s.execute("DECLARE h CURSOR WITH HOLD FOR SELECT l_comment FROM lineitem")
        .unwrap();
    s.execute("DECLARE d CURSOR FOR SELECT l_comment FROM lineitem")
        .unwrap();
    s.execute("COMMIT").unwrap();
    let held = db.shared_memory().0;
    assert!(held > 0);
    assert_eq!(s.execute("FETCH ALL FROM h").unwrap().row_count(), 60_175);
    assert_eq!(
        s.execute("FETCH NEXT FROM d").unwrap_err().sqlstate(),
        "34000"
    );
    drop(s);
    assert_eq!(db.shared_memory().0, 0);
    // A cursor larger than the budget is refused (53200) and holds nothing.
    let (_dir2, small) = tpch(2 << 20);
    let mut s = small.session();
    s.execute("BEGIN").unwrap();
    let e = s
        .execute("DECLARE big CURSOR FOR SELECT * FROM lineitem")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert_eq!(small.shared_memory().0, 0);
}

#[test]
fn a_streamed_full_join_over_an_empty_probe_side_still_emits_the_build_rows() {
    // The probe side is an index join over no rows: its pipeline has no morsel,
    // and the build rows no probe row matched come only as the pipeline's tail.
    let (_dir, db) = tpch(1 << 30);
    let mut s = db.session();
    s.execute("CREATE INDEX IF NOT EXISTS orders_key ON orders (o_orderkey)")
        .unwrap();
    let sql = "SELECT t5.o_custkey FROM orders t1 \
               JOIN orders t2 ON t1.o_orderkey = t2.o_orderkey \
               JOIN orders t3 ON t1.o_orderkey = t3.o_orderkey AND 1 = 0 \
               FULL JOIN orders t5 ON TRUE";
    for mode in ["serial", "static", "ooo"] {
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        let plan = s.execute(&format!("EXPLAIN {sql}")).unwrap();
        let plan = format!("{:?}", plan.rows());
        assert!(plan.contains("index_nested_loop_join"), "{mode}: {plan}");
        let whole = s.execute(sql).unwrap();
        assert_eq!(whole.rows().len(), 15_000, "{mode}");
        let mut sink = Collect::default();
        let streamed = s.execute_streaming(sql, &mut sink).unwrap();
        assert_eq!(sink.rows.len(), 15_000, "{mode}");
        assert_eq!(streamed.tag, "SELECT 15000", "{mode}");
    }
}
