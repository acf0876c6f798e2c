//! psql (Debian's postgresql-client) against `kura serve`'s protocol: TPC-H Q1
//! and Q6 at SF 0.01 give the reference answers; errors come back with their
//! SQLSTATE and the session goes on.

mod common;

use std::process::Command;

use common::{answers_dir, compare_answer, load_tpch, tpch_query, TestServer};

/// Runs psql with `args` against the server; returns stdout, stderr and success.
fn psql(s: &TestServer, args: &[&str], stdin: Option<&str>) -> (String, String, bool) {
    use std::io::Write;
    let mut cmd = Command::new("psql");
    cmd.args([
        "-X",
        "-h",
        "127.0.0.1",
        "-p",
        &s.addr.port().to_string(),
        "-U",
        "tester",
        "-d",
        "kura",
    ])
    .args(args)
    .env("PGCONNECT_TIMEOUT", "10")
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let mut child = cmd
        .spawn()
        .expect("psql is installed (apt-get install postgresql-client)");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// Unaligned psql output (`-A -F '|' -t`) as rows of fields.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').map(String::from).collect())
        .collect()
}

#[test]
fn psql_connects_and_reports_errors_with_sqlstate() {
    let s = TestServer::trust(|db| common::exec(db, "create table t (x integer)"));
    let (out, err, ok) = psql(&s, &["-A", "-t", "-c", "select version()"], None);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("PostgreSQL") && out.contains("kura"),
        "{out}"
    );
    // VERBOSITY verbose makes psql print the SQLSTATE; ON_ERROR_STOP off keeps going.
    let script = "\\set VERBOSITY verbose\nselect * from nope;\nselec;\nselect count(*) from t;\n";
    let (out, err, _) = psql(&s, &["-A", "-t"], Some(script));
    assert!(err.contains("ERROR:  42P01"), "{err}");
    assert!(err.contains("ERROR:  42601"), "{err}");
    assert_eq!(out.trim(), "0", "the session is usable after errors");
    // The error's position: psql draws its caret under the word, on the line
    // of a multi-line statement, after an earlier statement of the string.
    let (_, err, _) = psql(
        &s,
        &["-c", "select 1; select x,\n  'é' || nope from t"],
        None,
    );
    assert!(
        err.contains("ERROR:  column \"nope\" does not exist\nLINE 2:   'é' || nope from t\n                 ^"),
        "{err}"
    );
    let (_, err, _) = psql(&s, &["-c", "select 'abc'::int"], None);
    assert!(
        err.contains("invalid input syntax for type integer: \"abc\"\nLINE 1: select 'abc'::int\n               ^"),
        "{err}"
    );
}

#[test]
fn psql_rollback_discards_and_commit_keeps() {
    let s = TestServer::trust(|db| common::exec(db, "create table t (x integer)"));
    let script = "begin;\ninsert into t values (1);\nselect count(*) from t;\nrollback;\n\
                  select count(*) from t;\n\
                  begin;\ninsert into t values (2);\ncommit;\nselect count(*) from t;\n";
    let (out, err, ok) = psql(
        &s,
        &["-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"],
        Some(script),
    );
    assert!(ok, "{err}");
    assert_eq!(rows(&out), [["1"], ["0"], ["1"]], "{out}");
    // An error aborts the transaction until ROLLBACK (25P02), as in PostgreSQL.
    let script = "begin;\nselect 1/0;\nselect 1;\n\\echo :LAST_ERROR_SQLSTATE\nrollback;\nselect count(*) from t;\n";
    let (out, err, _) = psql(&s, &["-q", "-A", "-t"], Some(script));
    assert!(err.contains("current transaction is aborted"), "{err}");
    assert_eq!(rows(&out), [["25P02"], ["1"]], "{out}");
}

#[test]
fn psql_temporary_tables_are_the_connections_own_until_discard() {
    let s = TestServer::trust(|db| common::exec(db, "create table t (x integer)"));
    // The temporary t hides the permanent one, \dt lists it, DISCARD ALL (what
    // poolers send between clients) drops it.
    let script =
        "create temp table t (x integer, y integer);\ninsert into t values (1, 2), (3, 4);\n\
                  select count(*), sum(y) from t;\n\\dt\ndiscard all;\nselect count(*) from t;\n";
    let (out, err, ok) = psql(
        &s,
        &["-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"],
        Some(script),
    );
    assert!(ok, "{err}");
    let rows = rows(&out);
    assert_eq!(
        rows.first().cloned(),
        Some(vec!["2".to_string(), "6".to_string()]),
        "{out}"
    );
    assert!(
        rows.iter().any(|r| r.get(1).is_some_and(|n| n == "t")),
        "{out}"
    );
    assert_eq!(rows.last().cloned(), Some(vec!["0".to_string()]), "{out}");
    // Another connection never saw it.
    let script = "create temp table mine (z integer);\ninsert into mine values (1);\n";
    let (_, err, ok) = psql(&s, &["-q", "-v", "ON_ERROR_STOP=1"], Some(script));
    assert!(ok, "{err}");
    let (_, err, ok) = psql(&s, &["-q", "-c", "select * from mine"], None);
    assert!(!ok && err.contains("does not exist"), "{err}");
}

#[test]
fn psql_tpch_q1_q6_match_reference_answers() {
    let s = TestServer::trust(|db| load_tpch(db, 0.01));
    for id in ["q01", "q06"] {
        let (out, err, ok) = psql(
            &s,
            &["-A", "-F", "|", "-t", "-v", "ON_ERROR_STOP=1"],
            Some(&tpch_query(id)),
        );
        assert!(ok, "{id}: {err}");
        let answer =
            std::fs::read_to_string(answers_dir("0.01").join(format!("{id}.csv"))).unwrap();
        compare_answer(&answer, &rows(&out)).unwrap_or_else(|e| panic!("{id}: {e}\n{out}"));
    }
}

/// psql's describe commands run their catalog queries (pg_class, pg_attribute,
/// pg_index ... with format_type, pg_get_indexdef, `~` patterns) through the
/// ordinary binder and list the database's objects.
#[test]
fn psql_describe_commands_list_the_catalog() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table lineitem (l_orderkey integer not null, l_quantity decimal(12,2), \
             l_comment varchar(44), l_shipdate date);\
             create index li_ok on lineitem (l_orderkey);\
             create unique index li_u on lineitem (l_orderkey, l_comment);\
             create table orders (o_orderkey bigint);\
             create view big_orders as select o_orderkey from orders",
        )
    });
    let run = |cmd: &str| {
        let (out, err, ok) = psql(&s, &["-v", "ON_ERROR_STOP=1", "-c", cmd], None);
        assert!(ok && err.is_empty(), "{cmd}: {err}");
        out
    };
    let out = run("\\dt");
    assert!(out.contains("lineitem") && out.contains("orders"), "{out}");
    assert!(
        !out.contains("big_orders") && !out.contains("li_ok"),
        "{out}"
    );
    // \dt+ adds sizes (pg_table_size, pg_size_pretty): an empty table has none.
    let out = run("\\dt+");
    let orders = out
        .lines()
        .find(|l| l.contains(" orders "))
        .unwrap_or_default();
    assert!(orders.contains("| 0 bytes"), "{out}");
    let out = run("\\di");
    assert!(out.contains("li_ok") && out.contains("li_u"), "{out}");
    // \di+ adds sizes (pg_table_size of the index): an empty table's index
    // has its root node, one 16 kB page.
    let out = run("\\di+");
    let li_ok = out
        .lines()
        .find(|l| l.contains(" li_ok "))
        .unwrap_or_default();
    assert!(li_ok.contains("| 16 kB"), "{out}");
    assert!(out.contains("| lineitem"), "the index's table: {out}");
    let out = run("\\dv");
    assert!(
        out.contains("big_orders") && !out.contains("lineitem"),
        "{out}"
    );
    let out = run("\\d");
    for name in ["lineitem", "orders", "big_orders"] {
        assert!(out.contains(name), "{name}: {out}");
    }
    let out = run("\\l");
    assert!(out.contains("kura") && out.contains("UTF8"), "{out}");
    let out = run("\\dn");
    assert!(out.contains("public"), "{out}");
    let out = run("\\d lineitem");
    assert!(out.contains("Table \"public.lineitem\""), "{out}");
    for line in [
        "l_orderkey | integer ",
        "l_quantity | numeric(12,2) ",
        "l_comment  | character varying(44) ",
        "l_shipdate | date ",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let orderkey = out.lines().find(|l| l.contains("l_orderkey |")).unwrap();
    assert!(orderkey.contains("not null"), "{orderkey}");
    assert!(out.contains("\"li_ok\" btree (l_orderkey)"), "{out}");
    assert!(
        out.contains("\"li_u\" UNIQUE, btree (l_orderkey, l_comment)"),
        "{out}"
    );
    let out = run("\\d big_orders");
    assert!(
        out.contains("View \"public.big_orders\"") && out.contains("o_orderkey | bigint"),
        "{out}"
    );
    // \d+ adds storage and the access method; \du lists the role with its
    // memberships (ARRAY(subquery)); \l+ the database's size; \df the
    // functions (without signatures: kura's pg_proc has names only).
    let out = run("\\d+ lineitem");
    assert!(
        out.contains(
            "l_comment  | character varying(44) |           |          |         | extended"
        ) && out.contains("Access method: heap"),
        "{out}"
    );
    let out = run("\\du");
    let kura = out
        .lines()
        .find(|l| l.starts_with(" kura "))
        .unwrap_or_default();
    assert!(
        kura.contains("Superuser") && kura.ends_with("| {}"),
        "{out}"
    );
    let out = run("\\l+");
    let db = out
        .lines()
        .find(|l| l.starts_with(" kura "))
        .unwrap_or_default();
    assert!(db.contains(" kB |") && db.contains("pg_default"), "{out}");
    let out = run("\\df array_length");
    assert!(out.contains("pg_catalog | array_length |"), "{out}");
    // \df+ joins pg_language and asks for SQL bodies: every function is internal.
    let out = run("\\df+ left");
    assert!(
        out.contains("| left | text") && out.contains("| internal |"),
        "{out}"
    );
    for cmd in ["\\dx", "\\dT", "\\dn+", "\\dv+"] {
        run(cmd);
    }
    // A name that matches nothing is psql's own message, not an error from kura.
    let (_, err, _) = psql(&s, &["-c", "\\d nosuch"], None);
    assert!(
        err.contains("Did not find any relation named \"nosuch\""),
        "{err}"
    );
}

#[test]
fn psql_describe_shows_keys_checks_foreign_keys_and_defaults() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table parent (id integer primary key, code text unique);\
             create table child (id integer, parent_id integer references parent, \
             qty integer default 1 check (qty > 0))",
        )
    });
    let run = |cmd: &str| {
        let (out, err, ok) = psql(&s, &["-v", "ON_ERROR_STOP=1", "-c", cmd], None);
        assert!(ok && err.is_empty(), "{cmd}: {err}");
        out
    };
    let out = run("\\d parent");
    assert!(
        out.contains("\"parent_pkey\" PRIMARY KEY, btree (id)"),
        "{out}"
    );
    assert!(
        out.contains("\"parent_code_key\" UNIQUE CONSTRAINT, btree (code)"),
        "{out}"
    );
    let out = run("\\d child");
    let qty = out.lines().find(|l| l.contains("qty")).unwrap_or_default();
    assert!(qty.contains("| 1"), "the default: {out}");
    assert!(
        out.contains("\"child_qty_check\" CHECK ((qty > 0))"),
        "{out}"
    );
    // Foreign keys are in pg_constraint (tests/slt/ddl_dml/constraints.slt); psql's \d
    // lists them only for tables with triggers, which kura does not have.
}

#[test]
fn psql_shows_sequences_identity_columns_and_returning_rows() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table items (id serial primary key, name text);\
             create table events (id bigint generated always as identity, what text);\
             create sequence tickets",
        )
    });
    let run = |cmd: &str| {
        let (out, err, ok) = psql(&s, &["-v", "ON_ERROR_STOP=1", "-c", cmd], None);
        assert!(ok && err.is_empty(), "{cmd}: {err}");
        out
    };
    let out = run("\\ds");
    for name in ["items_id_seq", "events_id_seq", "tickets"] {
        assert!(out.contains(name), "\\ds lists {name}: {out}");
    }
    let out = run("\\d items");
    assert!(out.contains("nextval('items_id_seq'::regclass)"), "{out}");
    let out = run("\\d events");
    assert!(out.contains("generated always as identity"), "{out}");
    // INSERT … RETURNING sends its rows; psql reads its `INSERT 0 n` tag
    // (`INSERT n` made it report "could not interpret result from server").
    let sql = "insert into items (name) values ('a'), ('b') returning id, name";
    let (out, err, ok) = psql(&s, &["-A", "-F", "|", "-t", "-c", sql], None);
    assert!(ok && err.is_empty(), "{err}");
    assert_eq!(
        rows(&out),
        vec![vec!["1", "a"], vec!["2", "b"], vec!["INSERT 0 2"]],
        "{out}"
    );
}
