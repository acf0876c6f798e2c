//! No statement can take the process down: very long and very deep
//! expressions, deep nesting, huge IN lists, long CTE chains and over-long
//! texts either run or fail with PostgreSQL's error codes (54001, 54000), on a
//! thread with a small stack; `statement_timeout` stops a runaway query (57014).

use kura::{Database, OpenOptions, Session, Value};

/// Held by each test while it runs: one test measures the process's peak
/// memory, which the others' statements (100,000-branch chains) would raise
/// if they ran beside it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_db(f: impl FnOnce(&mut Session) + Send + 'static) {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.kura"), OpenOptions::default()).unwrap();
    let mut s = db.session();
    // A server's blocking threads have 2 MB stacks; statements must not need more.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || f(&mut s))
        .unwrap()
        .join()
        .expect("the statement thread survived");
}

fn scalar(s: &mut Session, sql: &str) -> Value {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{e}"));
    r.rows()[0][0].clone()
}

fn sqlstate(s: &mut Session, sql: &str) -> String {
    match s.execute(sql) {
        Ok(_) => "ok".into(),
        Err(e) => e.sqlstate().to_string(),
    }
}

#[test]
fn long_and_and_or_chains_run() {
    with_db(|s| {
        s.execute("CREATE TABLE t (x INTEGER)").unwrap();
        s.execute("INSERT INTO t VALUES (1), (5), (99999), (100001)")
            .unwrap();
        let ors: Vec<String> = (0..100_000).map(|i| format!("x = {i}")).collect();
        let sql = format!("SELECT count(*) FROM t WHERE {}", ors.join(" OR "));
        assert_eq!(scalar(s, &sql), Value::BigInt(3));
        let ands: Vec<String> = (0..20_000).map(|i| format!("x <> {}", i * 2)).collect();
        let sql = format!("SELECT count(*) FROM t WHERE {}", ands.join(" AND "));
        // 1, 5 and 99999 are odd; 100001 too.
        assert_eq!(scalar(s, &sql), Value::BigInt(4));
        // Prepared, then dropped on this small stack.
        let p = s.prepare(&format!(
            "SELECT count(*) FROM t WHERE {}",
            ors.join(" OR ")
        ));
        drop(p.unwrap());
    });
}

#[test]
fn deep_expressions_fail_with_54001_not_a_crash() {
    with_db(|s| {
        let plus = |n: usize| format!("SELECT {}", vec!["1"; n].join(" + "));
        assert_eq!(scalar(s, &plus(1_500)), Value::Integer(1_500));
        assert_eq!(sqlstate(s, &plus(2_001)), "54001");
        assert_eq!(sqlstate(s, &plus(200_000)), "54001");
        let err = s.execute(&plus(5_000)).unwrap_err().to_string();
        assert!(err.contains("stack depth limit exceeded"), "{err}");
        let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(scalar(s, &parens(300)), Value::Integer(1));
        assert_eq!(sqlstate(s, &parens(1_000)), "54001");
        assert_eq!(sqlstate(s, &parens(100_000)), "54001");
        let nots = format!("SELECT {}true", "NOT ".repeat(100_000));
        assert_eq!(sqlstate(s, &nots), "54001");
        // The session is still usable.
        assert_eq!(scalar(s, "SELECT 41 + 1"), Value::Integer(42));
    });
}

#[test]
fn large_in_lists_and_cte_chains_bind_in_linear_time() {
    with_db(|s| {
        s.execute("CREATE TABLE t (x INTEGER)").unwrap();
        s.execute("INSERT INTO t VALUES (7), (39999), (40000)")
            .unwrap();
        let list: Vec<String> = (0..40_000).map(|i| i.to_string()).collect();
        let sql = format!("SELECT count(*) FROM t WHERE x IN ({})", list.join(", "));
        assert_eq!(scalar(s, &sql), Value::BigInt(2));
        let exprs: Vec<String> = (0..40_000).map(|i| format!("x + {i}")).collect();
        let sql = format!(
            "SELECT count(*) FROM t WHERE 40006 IN ({})",
            exprs.join(", ")
        );
        assert_eq!(scalar(s, &sql), Value::BigInt(3));

        let chain = |n: usize, last: &str| {
            let mut ctes = vec!["c0 AS (SELECT 1 AS x)".to_string()];
            ctes.extend((1..n).map(|i| format!("c{i} AS (SELECT x + 1 AS x FROM c{})", i - 1)));
            format!("WITH {} SELECT {last} FROM c{}", ctes.join(", "), n - 1)
        };
        assert_eq!(scalar(s, &chain(800, "x")), Value::Integer(800));
        assert_eq!(sqlstate(s, &chain(800, "nope")), "42703");
        assert_eq!(sqlstate(s, &chain(1_200, "x")), "54001");
    });
}

#[test]
fn an_over_long_statement_is_refused() {
    with_db(|s| {
        let long = format!("SELECT '{}'", "x".repeat(kura::stack::MAX_STATEMENT_BYTES));
        let err = s.execute(&long).unwrap_err();
        assert_eq!(err.sqlstate(), "54000", "{err}");
    });
}

#[test]
fn statement_timeout_cancels_in_every_mode() {
    with_db(|s| {
        s.execute("CREATE TABLE t (x INTEGER, c VARCHAR)").unwrap();
        let rows: Vec<String> = (0..3_000).map(|i| format!("({i}, 'c{i}')")).collect();
        s.execute(&format!("INSERT INTO t VALUES {}", rows.join(", ")))
            .unwrap();
        // 27 billion pairs: hours of work without the limit.
        let runaway = "SELECT count(*) FROM t a, t b, t c WHERE a.c < b.c AND b.x <> c.x";
        assert_eq!(sqlstate(s, "SET statement_timeout = 'soon'"), "22023");
        s.execute("SET statement_timeout = '300ms'").unwrap();
        assert_eq!(
            scalar(s, "SHOW statement_timeout"),
            Value::Text("300ms".into())
        );
        for mode in ["serial", "static", "ooo"] {
            s.execute(&format!("SET execution_mode = {mode}")).unwrap();
            let t0 = std::time::Instant::now();
            let err = s.execute(runaway).unwrap_err();
            assert_eq!(err.sqlstate(), "57014", "{mode}: {err}");
            assert!(err.to_string().contains("statement timeout"), "{err}");
            // Generous: the limit is 0.3 s; without it the query runs for hours.
            assert!(t0.elapsed().as_secs() < 60, "{mode}: {:?}", t0.elapsed());
            // The next statement runs normally, with a fresh deadline.
            assert_eq!(scalar(s, "SELECT count(*) FROM t"), Value::BigInt(3_000));
        }
        s.execute("SET statement_timeout = 0").unwrap();
        assert_eq!(
            scalar(s, "SELECT count(*) FROM t a, t b WHERE a.x = b.x"),
            Value::BigInt(3_000)
        );
    });
}

#[test]
fn a_long_literal_compares_once_per_row_not_copied_per_row() {
    with_db(|s| {
        s.execute("CREATE TABLE t (v VARCHAR, c CHAR(3))").unwrap();
        let rows: Vec<String> = (0..5_000).map(|i| format!("('v{i}', 'ab')")).collect();
        s.execute(&format!("INSERT INTO t VALUES {}", rows.join(", ")))
            .unwrap();
        // 1 MB: copied into every row of a batch this would be gigabytes.
        let big = "x".repeat(1 << 20);
        let count = |s: &mut Session, cond: &str| {
            scalar(s, &format!("SELECT count(*) FROM t WHERE {cond}"))
        };
        assert_eq!(count(s, &format!("v = '{big}'")), Value::BigInt(0));
        assert_eq!(count(s, &format!("v < '{big}'")), Value::BigInt(5_000));
        assert_eq!(count(s, &format!("'{big}' > v")), Value::BigInt(5_000));
        assert_eq!(count(s, &format!("'{big}' <= v")), Value::BigInt(0));
        // CHAR compares without trailing blanks, on either side.
        assert_eq!(count(s, "c = 'ab   '"), Value::BigInt(5_000));
        assert_eq!(count(s, "'ab ' = c"), Value::BigInt(5_000));
        assert_eq!(count(s, "v = 'v7'"), Value::BigInt(1));
        assert_eq!(count(s, "'v7 ' = v"), Value::BigInt(0));
    });
}

#[test]
fn long_set_operation_chains_run_or_fail_with_54001() {
    with_db(|s| {
        let chain = |n: usize, op: &str| {
            let branches: Vec<String> = (0..n).map(|i| format!("SELECT {i} AS x")).collect();
            format!(
                "SELECT count(*) FROM ({}) u",
                branches.join(&format!(" {op} "))
            )
        };
        // SQLite's limit (500 terms) runs, on a 2 MB stack.
        assert_eq!(scalar(s, &chain(501, "UNION ALL")), Value::BigInt(501));
        assert_eq!(scalar(s, &chain(501, "UNION")), Value::BigInt(501));
        assert_eq!(sqlstate(s, &chain(502, "UNION ALL")), "54001");
        // 100,000 branches overflowed the stack and killed the process.
        for op in ["UNION ALL", "UNION", "EXCEPT", "INTERSECT"] {
            let err = s.execute(&chain(100_000, op)).unwrap_err();
            assert_eq!(err.sqlstate(), "54001", "{op}: {err}");
        }
        // The words count only as operators: in strings and names they are text.
        let words = vec!["union"; 2_000].join(" ");
        assert_eq!(
            scalar(s, &format!("SELECT length('{words}') AS \"union\"")),
            Value::Integer(11_999)
        );
    });
}

#[test]
fn a_result_wider_than_a_target_list_may_be_is_refused() {
    with_db(|s| {
        let cols = |n: usize| {
            (0..n)
                .map(|i| format!("{i} AS c{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        assert_eq!(
            s.execute(&format!("SELECT {}", cols(1664)))
                .unwrap()
                .columns
                .len(),
            1664
        );
        // 70,000 columns sent a RowDescription whose 16-bit count wrapped.
        for n in [1665, 70_000] {
            let err = s.execute(&format!("SELECT {}", cols(n))).unwrap_err();
            assert_eq!(err.sqlstate(), "54011", "{err}");
        }
        let err = s.prepare(&format!("SELECT {}", cols(1665))).unwrap_err();
        assert_eq!(err.sqlstate(), "54011", "{err}");
    });
}

#[test]
fn a_prepared_long_text_holds_its_parse_memory_while_it_lives() {
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let opts = OpenOptions {
        max_memory: Some(64 << 20),
        ..OpenOptions::default()
    };
    let db = Database::open(&dir.path().join("t.kura"), opts).unwrap();
    let mut s = db.session();
    // About 26 MB reserved for each parse of a 41 KB text.
    let text = |n: usize| {
        format!(
            "SELECT count(*) FROM (VALUES (1)) t(x) WHERE x IN ({})",
            (0..n)
                .map(|i| format!("{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let long = text(7_000);
    assert!(long.len() > 30_000, "{}", long.len());
    let first = s.prepare(&long).unwrap();
    let second = s.prepare(&long).unwrap();
    let Err(err) = s.prepare(&long) else {
        panic!("a third long text fit beside the two held");
    };
    assert_eq!(err.sqlstate(), "53200", "{err}");
    drop(first);
    let third = s.prepare(&long).unwrap();
    assert_eq!(
        s.execute_prepared(&third, &[]).unwrap().rows()[0][0],
        Value::BigInt(1)
    );
    drop((second, third));
}

/// Peak resident memory of this process (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A series of a trillion rows is read as it is computed: its scan numbers its
/// morsels instead of listing them, and the out-of-order runtime spawns them a
/// window at a time. It used to list 120 million morsels and spawn a task for
/// each before reading a row: gigabytes a second until the machine ran out.
#[test]
fn a_trillion_row_series_runs_in_little_memory_until_its_time_limit() {
    with_db(|s| {
        let before = peak_rss();
        s.execute("SET statement_timeout = '500ms'").unwrap();
        for mode in ["serial", "static", "ooo"] {
            s.execute(&format!("SET execution_mode = {mode}")).unwrap();
            let t0 = std::time::Instant::now();
            let err = s
                .execute("SELECT count(*) FROM generate_series(1, 1000000000000)")
                .unwrap_err();
            assert_eq!(err.sqlstate(), "57014", "{mode}: {err}");
            assert!(t0.elapsed().as_secs() < 30, "{mode}: {:?}", t0.elapsed());
        }
        let grown = peak_rss().saturating_sub(before);
        assert!(grown < 256 << 20, "the peak RSS grew by {grown} bytes");
        s.execute("SET statement_timeout = 0").unwrap();
        assert_eq!(
            scalar(
                s,
                "SELECT count(*), sum(g) FROM generate_series(1, 300000) g"
            ),
            Value::BigInt(300_000)
        );
    });
}
