//! Every option sqlparser's `Query` and `Select` carry is honoured (a statement
//! that sets it gives PostgreSQL's answer) or refused (0A000 naming it, or a
//! syntax error where kura's dialect does not read it) — never accepted and
//! ignored. The structs are destructured field by field, so a sqlparser upgrade
//! that adds an option fails to compile here until the option has a case.

use kura::session::parse;
use kura::{Database, OpenOptions};
use sqlparser::ast::{self, SetExpr, Statement};

/// What a statement setting an option must do.
enum Outcome {
    /// Succeed with these rows (each row's values joined by `|`).
    Rows(&'static [&'static str]),
    /// Fail with 0A000 (refused) or 42601 (not read by kura's dialect).
    Refused,
    /// Another dialect's option kura's dialect never sets (the statement
    /// means something else to it, and fails).
    NotRead,
}

use Outcome::{NotRead, Refused, Rows};

/// (option, a statement that sets it, what it must do).
const CASES: &[(&str, &str, Outcome)] = &[
    // Query.
    ("with", "WITH w AS (SELECT 2 AS a) SELECT a FROM w", Rows(&["2"])),
    ("with recursive", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT sum(n) FROM r", Refused),
    ("order_by", "SELECT a FROM t ORDER BY a DESC", Rows(&["3", "2", "1"])),
    ("limit_clause", "SELECT a FROM t ORDER BY a LIMIT 1 OFFSET 1", Rows(&["2"])),
    ("limit_clause (MySQL's offset, limit)", "SELECT a FROM t ORDER BY a LIMIT 1, 1", Refused),
    ("fetch", "SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY", Rows(&["1", "2"])),
    ("fetch with ties", "SELECT a FROM t ORDER BY a FETCH FIRST 1 ROWS WITH TIES", Refused),
    // Takes the write lock inside a transaction (kura has one writer at a time).
    ("locks", "SELECT a FROM t ORDER BY a FOR UPDATE", Rows(&["1", "2", "3"])),
    ("for_clause", "SELECT a FROM t FOR XML AUTO", Refused),
    ("settings", "SELECT a FROM t SETTINGS max_threads = 1", Refused),
    ("format_clause", "SELECT a FROM t FORMAT JSON", Refused),
    ("pipe_operators", "FROM t |> SELECT a", Refused),
    // Select.
    ("optimizer_hints", "SELECT /*+ SeqScan(t) */ count(*) FROM t", Refused),
    ("distinct", "SELECT DISTINCT b FROM t ORDER BY b", Rows(&["x", "y"])),
    ("distinct on", "SELECT DISTINCT ON (b) b, a FROM t ORDER BY b, a DESC", Refused),
    // MySQL's; kura's dialect reads HIGH_PRIORITY as a column name.
    ("select_modifiers", "SELECT HIGH_PRIORITY a FROM t", NotRead),
    ("top", "SELECT TOP 1 a FROM t", Refused),
    ("exclude", "SELECT * EXCLUDE (b) FROM t ORDER BY a", Refused),
    ("into", "SELECT a INTO t_copy FROM t", Refused),
    ("from", "SELECT count(*) FROM t, t AS u", Rows(&["9"])),
    ("lateral_views", "SELECT a FROM t LATERAL VIEW explode(b) v AS c", Refused),
    ("prewhere", "SELECT a FROM t PREWHERE a > 1", Refused),
    ("selection", "SELECT a FROM t WHERE a > 2", Rows(&["3"])),
    ("connect_by", "SELECT a FROM t START WITH a = 1 CONNECT BY PRIOR a = a - 1", Refused),
    ("group_by", "SELECT b, count(*) FROM t GROUP BY b ORDER BY b", Rows(&["x|2", "y|1"])),
    ("group_by ALL", "SELECT b, count(*) FROM t GROUP BY ALL ORDER BY b", Refused),
    ("cluster_by", "SELECT a FROM t CLUSTER BY a", Refused),
    ("distribute_by", "SELECT a FROM t DISTRIBUTE BY a", Refused),
    ("sort_by", "SELECT a FROM t SORT BY a", Refused),
    ("having", "SELECT b FROM t GROUP BY b HAVING count(*) > 1", Rows(&["x"])),
    ("named_window", "SELECT a, sum(a) OVER w FROM t WINDOW w AS (ORDER BY a) ORDER BY a", Rows(&["1|1", "2|3", "3|6"])),
    ("qualify", "SELECT a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1", Refused),
    ("value_table_mode", "SELECT AS STRUCT a FROM t", Refused),
    ("flavor (FROM first)", "FROM t SELECT a", Refused),
];

/// Which options a parsed statement sets (the names the cases use, before
/// any parenthesis), listing every field of `Query` and `Select`.
fn options_set(q: &ast::Query, out: &mut Vec<&'static str>) {
    let ast::Query {
        with,
        body,
        order_by,
        limit_clause,
        fetch,
        locks,
        for_clause,
        settings,
        format_clause,
        pipe_operators,
    } = q;
    let mut set = |on: bool, name| {
        if on {
            out.push(name)
        }
    };
    set(with.is_some(), "with");
    set(order_by.is_some(), "order_by");
    set(limit_clause.is_some(), "limit_clause");
    set(fetch.is_some(), "fetch");
    set(!locks.is_empty(), "locks");
    set(for_clause.is_some(), "for_clause");
    set(settings.is_some(), "settings");
    set(format_clause.is_some(), "format_clause");
    set(!pipe_operators.is_empty(), "pipe_operators");
    if let SetExpr::Select(s) = &**body {
        let ast::Select {
            select_token: _,
            optimizer_hints,
            distinct,
            select_modifiers,
            top,
            top_before_distinct: _,
            projection: _,
            exclude,
            into,
            from,
            lateral_views,
            prewhere,
            selection,
            connect_by,
            group_by,
            cluster_by,
            distribute_by,
            sort_by,
            having,
            named_window,
            qualify,
            window_before_qualify: _,
            value_table_mode,
            flavor,
        } = &**s;
        let no_group =
            matches!(group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        for (on, name) in [
            (!optimizer_hints.is_empty(), "optimizer_hints"),
            (distinct.is_some(), "distinct"),
            (select_modifiers.is_some(), "select_modifiers"),
            (top.is_some(), "top"),
            (exclude.is_some(), "exclude"),
            (into.is_some(), "into"),
            (!from.is_empty(), "from"),
            (!lateral_views.is_empty(), "lateral_views"),
            (prewhere.is_some(), "prewhere"),
            (selection.is_some(), "selection"),
            (!connect_by.is_empty(), "connect_by"),
            (!no_group, "group_by"),
            (!cluster_by.is_empty(), "cluster_by"),
            (!distribute_by.is_empty(), "distribute_by"),
            (!sort_by.is_empty(), "sort_by"),
            (having.is_some(), "having"),
            (!named_window.is_empty(), "named_window"),
            (qualify.is_some(), "qualify"),
            (value_table_mode.is_some(), "value_table_mode"),
            (!matches!(flavor, ast::SelectFlavor::Standard), "flavor"),
        ] {
            if on {
                out.push(name);
            }
        }
    }
}

#[test]
fn every_query_and_select_option_is_honoured_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("o.kura"), OpenOptions::default()).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (a integer, b text)").unwrap();
    s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'x'), (3, 'y')")
        .unwrap();
    let mut failures = Vec::new();
    for (option, sql, outcome) in CASES {
        let field = option.split(' ').next().unwrap();
        // When kura's dialect reads the statement, it must set the option
        // the case is about (else the case tests nothing).
        if let Ok(stmts) = parse(sql) {
            if let [Statement::Query(q)] = stmts.as_slice() {
                let mut set = Vec::new();
                options_set(q, &mut set);
                if set.contains(&field) == matches!(outcome, NotRead) {
                    failures.push(format!("{option}: `{sql}` does not set it ({set:?})"));
                    continue;
                }
            }
        }
        let got = s.execute(sql);
        match (outcome, got) {
            (Rows(want), Ok(r)) => {
                let rows: Vec<String> = r
                    .rows()
                    .iter()
                    .map(|row| {
                        row.iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join("|")
                    })
                    .collect();
                if rows != *want {
                    failures.push(format!("{option}: `{sql}` gave {rows:?}, not {want:?}"));
                }
            }
            (Rows(_), Err(e)) => failures.push(format!("{option}: `{sql}` failed: {e}")),
            (Refused, Ok(_)) => {
                failures.push(format!("{option}: `{sql}` was accepted, not refused"))
            }
            (Refused, Err(e)) if matches!(e.sqlstate(), "0A000" | "42601") => {}
            (NotRead, Err(_)) => {}
            (NotRead, Ok(_)) => failures.push(format!("{option}: `{sql}` was accepted")),
            (Refused, Err(e)) => failures.push(format!(
                "{option}: `{sql}` failed with {} ({e}), not 0A000 or 42601",
                e.sqlstate()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
