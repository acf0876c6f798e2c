//! Every option sqlparser's `Query` and `Select` carry, and every option of
//! the statements that change data and schema — `INSERT`, `UPDATE`, `DELETE`,
//! `CREATE TABLE` (with its columns' options and its table constraints) and
//! `CREATE INDEX` — is honoured (a statement that sets it gives PostgreSQL's
//! answer, or has PostgreSQL's effect) or refused (0A000 naming it, or a
//! syntax error where kura's dialect does not read it) — never accepted and
//! ignored. The structs are destructured field by field and the enums of
//! column options and table constraints matched without a wildcard, so a
//! sqlparser upgrade that adds an option fails to compile here until the
//! option has a case.

use kura::session::parse;
use kura::{Database, OpenOptions, Session};
use sqlparser::ast::{self, SetExpr, Statement};

/// What a statement setting an option must do.
enum Outcome {
    /// Succeed with these rows (each row's values joined by `|`, NULL empty).
    Rows(&'static [&'static str]),
    /// Succeed; then the statements `check` (run after it) end with these
    /// rows: the option's effect.
    Then(&'static str, &'static [&'static str]),
    /// Succeed; then the statements `check` fail with this SQLSTATE (a
    /// constraint the option makes is enforced).
    ThenFails(&'static str, &'static str),
    /// Fail with this SQLSTATE, PostgreSQL's for the statement.
    Fails(&'static str),
    /// Fail with 0A000 (refused) or 42601 (not read by kura's dialect).
    Refused,
    /// Another dialect's option kura's dialect never sets (the statement
    /// means something else to it, and fails).
    NotRead,
}

use Outcome::{Fails, NotRead, Refused, Rows, Then, ThenFails};

/// (option, a statement that sets it, what it must do).
const CASES: &[(&str, &str, Outcome)] = &[
    // Query.
    ("with", "WITH w AS (SELECT 2 AS a) SELECT a FROM w", Rows(&["2"])),
    ("with recursive", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT sum(n) FROM r", Refused),
    ("order_by", "SELECT a FROM t ORDER BY a DESC", Rows(&["3", "2", "1"])),
    ("limit_clause", "SELECT a FROM t ORDER BY a LIMIT 1 OFFSET 1", Rows(&["2"])),
    ("limit_clause (MySQL's offset, limit)", "SELECT a FROM t ORDER BY a LIMIT 1, 1", Refused),
    ("fetch", "SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY", Rows(&["1", "2"])),
    ("fetch with ties", "SELECT b FROM t ORDER BY b FETCH FIRST 1 ROWS WITH TIES", Rows(&["x", "x"])),
    // Takes the write lock inside a transaction (kura has one writer at a time).
    ("locks", "SELECT a FROM t ORDER BY a FOR UPDATE", Rows(&["1", "2", "3"])),
    ("for_clause", "SELECT a FROM t FOR XML AUTO", Refused),
    ("settings", "SELECT a FROM t SETTINGS max_threads = 1", Refused),
    ("format_clause", "SELECT a FROM t FORMAT JSON", Refused),
    ("pipe_operators", "FROM t |> SELECT a", Refused),
    // Select.
    ("optimizer_hints", "SELECT /*+ SeqScan(t) */ count(*) FROM t", Refused),
    ("distinct", "SELECT DISTINCT b FROM t ORDER BY b", Rows(&["x", "y"])),
    ("distinct on", "SELECT DISTINCT ON (b) b, a FROM t ORDER BY b, a DESC", Rows(&["x|2", "y|3"])),
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

/// Which options a parsed query sets (the names the cases use, before any
/// parenthesis), listing every field of `Query` and `Select`.
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

/// A statement's rows, each row's values joined by `|`.
fn rows_of(r: &kura::QueryResult) -> Vec<String> {
    r.rows()
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// Runs one case in session `s`; what went wrong, if anything. `options`
/// names the options a parsed statement sets (`None`: a statement of another
/// kind than the cases are about).
fn check_case(
    s: &mut Session,
    (option, sql, outcome): &(&str, &str, Outcome),
    options: fn(&Statement) -> Option<Vec<&'static str>>,
) -> Option<String> {
    let field = option.split(' ').next().unwrap();
    // When kura's dialect reads the statement, it must set the option the
    // case is about (else the case tests nothing).
    if let Ok(stmts) = parse(sql) {
        if let Some(set) = stmts.last().and_then(options) {
            if set.contains(&field) == matches!(outcome, NotRead) {
                return Some(format!("{option}: `{sql}` does not set it ({set:?})"));
            }
        }
    }
    let got = s.execute_all(sql).map(|mut r| r.pop().unwrap_or_default());
    let then = |s: &mut Session, check: &str| s.execute_all(check).map(|mut r| r.pop());
    match (outcome, got) {
        (Rows(want), Ok(r)) if rows_of(&r) != *want => Some(format!(
            "{option}: `{sql}` gave {:?}, not {want:?}",
            rows_of(&r)
        )),
        (Rows(_), Ok(_)) => None,
        (Then(check, want), Ok(_)) => match then(s, check) {
            Ok(Some(r)) if rows_of(&r) == *want => None,
            Ok(r) => Some(format!(
                "{option}: after `{sql}`, `{check}` gave {:?}, not {want:?}",
                r.as_ref().map(rows_of)
            )),
            Err(e) => Some(format!("{option}: after `{sql}`, `{check}` failed: {e}")),
        },
        (ThenFails(check, state), Ok(_)) => match then(s, check) {
            Err(e) if e.sqlstate() == *state => None,
            Err(e) => Some(format!(
                "{option}: after `{sql}`, `{check}` failed with {} ({e}), not {state}",
                e.sqlstate()
            )),
            Ok(_) => Some(format!(
                "{option}: after `{sql}`, `{check}` succeeded, not {state}"
            )),
        },
        (Fails(state), Err(e)) if e.sqlstate() == *state => None,
        (Fails(state), Err(e)) => Some(format!(
            "{option}: `{sql}` failed with {} ({e}), not {state}",
            e.sqlstate()
        )),
        (Fails(state), Ok(_)) => Some(format!("{option}: `{sql}` succeeded, not {state}")),
        (Rows(_) | Then(..) | ThenFails(..), Err(e)) => {
            Some(format!("{option}: `{sql}` failed: {e}"))
        }
        (Refused, Ok(_)) => Some(format!("{option}: `{sql}` was accepted, not refused")),
        (Refused, Err(e)) if matches!(e.sqlstate(), "0A000" | "42601") => None,
        (Refused, Err(e)) => Some(format!(
            "{option}: `{sql}` failed with {} ({e}), not 0A000 or 42601",
            e.sqlstate()
        )),
        (NotRead, Err(_)) => None,
        (NotRead, Ok(_)) => Some(format!("{option}: `{sql}` was accepted")),
    }
}

fn query_options(stmt: &Statement) -> Option<Vec<&'static str>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let mut set = Vec::new();
    options_set(q, &mut set);
    Some(set)
}

#[test]
fn every_query_and_select_option_is_honoured_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("o.kura"), OpenOptions::default()).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (a integer, b text)").unwrap();
    s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'x'), (3, 'y')")
        .unwrap();
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|case| check_case(&mut s, case, query_options))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The tables every case of [`DML_DDL_CASES`] starts from (each case on a
/// database of its own): `t` with a primary key and NULLs in `c`, `d` with
/// defaults.
const DML_DDL_SETUP: &str = "CREATE TABLE t (a integer PRIMARY KEY, b text, c integer); \
    INSERT INTO t VALUES (1, 'x', NULL), (2, 'x', NULL), (3, 'y', 7); \
    CREATE TABLE d (a integer DEFAULT 5, b text DEFAULT 'd')";

/// The indexes of `t`, by name.
const T_INDEXES: &str = "SELECT indexname FROM pg_indexes WHERE tablename = 't' ORDER BY 1";

/// (option, statements the last of which sets it, what that statement must
/// do). An option's name is its field's (`column.` a column option's
/// variant, `constraint.` a table constraint's), before any parenthesis.
const DML_DDL_CASES: &[(&str, &str, Outcome)] = &[
    // INSERT.
    ("optimizer_hints", "INSERT /*+ hint */ INTO t VALUES (4, 'z', 0)", Refused),
    ("or", "INSERT OR REPLACE INTO t VALUES (1, 'z', 0)", Refused),
    ("ignore", "INSERT IGNORE INTO t VALUES (1, 'z', 0)", Refused),
    // MySQL's INSERT without INTO (PostgreSQL's grammar requires it).
    ("no_into", "INSERT t VALUES (4, 'z', 0)", Refused),
    // ClickHouse's; kura's dialect reads FUNCTION as the table's name.
    ("table (a table function)", "INSERT INTO FUNCTION remote('h', 't') VALUES (1)", NotRead),
    ("table_alias", "INSERT INTO t AS n VALUES (4, 'z', 0) RETURNING n.a", Rows(&["4"])),
    ("columns", "INSERT INTO t (b, a) VALUES ('z', 4)", Then("SELECT a, b, c FROM t WHERE a = 4", &["4|z|"])),
    ("overwrite", "INSERT OVERWRITE TABLE t SELECT 4, 'z', 0", Refused),
    ("source (VALUES)", "INSERT INTO t VALUES (4, 'z', 0)", Then("SELECT count(*) FROM t", &["4"])),
    ("source (a query)", "INSERT INTO t SELECT a + 10, b, c FROM t", Then("SELECT count(*), sum(a) FROM t", &["6|42"])),
    ("default_values", "INSERT INTO d DEFAULT VALUES", Then("SELECT a, b FROM d", &["5|d"])),
    ("assignments", "INSERT INTO t SET a = 4, b = 'z'", Refused),
    ("partitioned", "INSERT INTO t PARTITION (a = 1) VALUES (4, 'z', 0)", Refused),
    ("after_columns", "INSERT INTO t PARTITION (a) (b) VALUES ('z')", Refused),
    ("has_table_keyword", "INSERT INTO TABLE t VALUES (4, 'z', 0)", Refused),
    ("on (ON DUPLICATE KEY UPDATE)", "INSERT INTO t VALUES (1, 'z', 0) ON DUPLICATE KEY UPDATE b = 'z'", Refused),
    ("on (ON CONFLICT DO NOTHING)", "INSERT INTO t VALUES (1, 'z', 0), (4, 'z', 0) ON CONFLICT DO NOTHING", Then("SELECT a, b FROM t ORDER BY a", &["1|x", "2|x", "3|y", "4|z"])),
    ("on.conflict_target (columns)", "INSERT INTO t VALUES (1, 'z', 0) ON CONFLICT (a) DO NOTHING", Then("SELECT b FROM t WHERE a = 1", &["x"])),
    ("on.conflict_target (ON CONSTRAINT)", "INSERT INTO t VALUES (1, 'z', 0) ON CONFLICT ON CONSTRAINT t_pkey DO NOTHING", Then("SELECT b FROM t WHERE a = 1", &["x"])),
    ("on.conflict_target (no unique key)", "INSERT INTO t VALUES (1, 'z', 0) ON CONFLICT (b) DO NOTHING", Fails("42P10")),
    ("on.do_update", "INSERT INTO t VALUES (1, 'z', 0) ON CONFLICT (a) DO UPDATE SET b = excluded.b", Then("SELECT b FROM t WHERE a = 1", &["z"])),
    ("on.do_update.selection", "INSERT INTO t VALUES (1, 'z', 0), (3, 'w', 0) ON CONFLICT (a) DO UPDATE SET b = excluded.b WHERE t.b = 'y'", Then("SELECT a, b FROM t ORDER BY a", &["1|x", "2|x", "3|w"])),
    ("returning", "INSERT INTO t VALUES (4, 'z', 0) RETURNING a * 10, b", Rows(&["40|z"])),
    ("output", "INSERT INTO t OUTPUT inserted.a VALUES (4, 'z', 0)", Refused),
    ("replace_into", "REPLACE INTO t VALUES (1, 'z', 0)", Refused),
    ("priority", "INSERT LOW_PRIORITY INTO t VALUES (4, 'z', 0)", Refused),
    ("insert_alias", "INSERT INTO t VALUES (1, 'z', 0) AS n ON DUPLICATE KEY UPDATE b = n.b", Refused),
    ("settings", "INSERT INTO t SETTINGS async_insert = 1 VALUES (4, 'z', 0)", Refused),
    ("format_clause", "INSERT INTO t FORMAT JSONEachRow {\"a\": 4}", Refused),
    ("multi_table", "INSERT ALL INTO t INTO d SELECT 4, 'z', 0", Refused),
    // UPDATE.
    ("optimizer_hints", "UPDATE /*+ hint */ t SET b = 'z'", Refused),
    ("table.alias", "UPDATE t AS u SET b = 'z' WHERE u.a = 1 RETURNING u.b", Rows(&["z"])),
    ("table.joins", "UPDATE t JOIN d ON d.a = t.a SET b = 'z'", Refused),
    ("table.sample", "UPDATE t TABLESAMPLE SYSTEM (50) SET b = 'z'", Refused),
    ("assignments", "UPDATE t SET b = 'z', c = a WHERE a = 3", Then("SELECT b, c FROM t WHERE a = 3", &["z|3"])),
    ("assignments.tuple", "UPDATE t SET (b, c) = ('z', 0)", Refused),
    ("from", "UPDATE t SET b = u.b FROM t AS u WHERE u.a = t.a + 1", Refused),
    ("selection", "UPDATE t SET b = 'z' WHERE a > 1", Then("SELECT a, b FROM t ORDER BY a", &["1|x", "2|z", "3|z"])),
    ("returning", "UPDATE t SET c = a * 2 WHERE a < 3 RETURNING a, c", Rows(&["1|2", "2|4"])),
    ("output", "UPDATE t SET b = 'z' OUTPUT inserted.a", Refused),
    ("or", "UPDATE OR REPLACE t SET b = 'z'", Refused),
    ("order_by", "UPDATE t SET b = 'z' ORDER BY a LIMIT 1", Refused),
    ("limit", "UPDATE t SET b = 'z' LIMIT 1", Refused),
    // DELETE.
    ("optimizer_hints", "DELETE /*+ hint */ FROM t WHERE a = 1", Refused),
    ("tables", "DELETE t FROM t WHERE a = 1", Refused),
    ("no_from", "DELETE t WHERE a = 1", Refused),
    ("from.alias", "DELETE FROM t AS r WHERE r.a = 1", Then("SELECT a FROM t ORDER BY a", &["2", "3"])),
    ("from.several", "DELETE FROM t, d", Refused),
    ("using", "DELETE FROM t USING t AS u WHERE u.a = t.a", Refused),
    ("selection", "DELETE FROM t WHERE b = 'x'", Then("SELECT a FROM t", &["3"])),
    ("returning", "DELETE FROM t WHERE a > 1 RETURNING a, b", Rows(&["2|x", "3|y"])),
    ("output", "DELETE FROM t OUTPUT deleted.a WHERE a = 1", Refused),
    ("order_by", "DELETE FROM t ORDER BY a LIMIT 1", Refused),
    ("limit", "DELETE FROM t LIMIT 1", Refused),
    // CREATE TABLE.
    ("or_replace", "CREATE OR REPLACE TABLE n (a integer)", Refused),
    // Private to the session (temp_tables.slt shows another does not see it).
    ("temporary", "CREATE TEMPORARY TABLE n (a integer)", Then("INSERT INTO n VALUES (1); SELECT a FROM n", &["1"])),
    // Every kura table is as durable as a logged one, which UNLOGGED permits.
    ("unlogged", "CREATE UNLOGGED TABLE n (a integer)", Then("INSERT INTO n VALUES (1); SELECT a FROM n", &["1"])),
    ("external", "CREATE EXTERNAL TABLE n (a integer) LOCATION 'n'", Refused),
    ("dynamic", "CREATE DYNAMIC TABLE n TARGET_LAG = '1 minute' WAREHOUSE = w AS SELECT 1", Refused),
    // PostgreSQL reads GLOBAL / LOCAL as noise words (GLOBAL deprecated).
    ("global", "CREATE GLOBAL TEMPORARY TABLE n (a integer)", Refused),
    ("if_not_exists", "CREATE TABLE IF NOT EXISTS t (z integer)", Then("SELECT a FROM t ORDER BY a", &["1", "2", "3"])),
    // A relation of any kind by that name (PostgreSQL's NOTICE and skip).
    ("if_not_exists (an index's name)", "CREATE TABLE IF NOT EXISTS t_pkey (z integer)", Then("SELECT relkind FROM pg_class WHERE relname = 't_pkey'", &["i"])),
    ("if_not_exists (AS query)", "CREATE TABLE IF NOT EXISTS t AS SELECT 1 AS z", Then("SELECT count(*) FROM t", &["3"])),
    ("transient", "CREATE TRANSIENT TABLE n (a integer)", Refused),
    ("volatile", "CREATE VOLATILE TABLE n (a integer)", Refused),
    ("iceberg", "CREATE ICEBERG TABLE n (a integer)", Refused),
    ("snapshot", "CREATE SNAPSHOT TABLE n CLONE t", Refused),
    ("hive_distribution", "CREATE TABLE n (a integer) PARTITIONED BY (b text)", Refused),
    ("hive_formats", "CREATE TABLE n (a integer) ROW FORMAT DELIMITED", Refused),
    ("table_options (WITH)", "CREATE TABLE n (a integer) WITH (fillfactor = 70)", Refused),
    ("table_options (TABLESPACE)", "CREATE TABLE n (a integer) TABLESPACE pg_default", Refused),
    ("table_options (COMMENT)", "CREATE TABLE n (a integer) COMMENT 'n'", Refused),
    ("table_options (AS query)", "CREATE TABLE n WITH (fillfactor = 70) AS SELECT 1 AS a", Refused),
    // An external table's (a plain table's are Hive formats).
    ("file_format", "CREATE EXTERNAL TABLE n (a integer) STORED AS PARQUET LOCATION 'n'", Refused),
    ("location", "CREATE EXTERNAL TABLE n (a integer) LOCATION 'n'", Refused),
    ("hive_formats (LOCATION)", "CREATE TABLE n (a integer) LOCATION 'n'", Refused),
    ("query", "CREATE TABLE n AS SELECT a, b FROM t WHERE a > 1", Then("SELECT a, b FROM n ORDER BY a", &["2|x", "3|y"])),
    // PostgreSQL's column names without types sqlparser does not read;
    // definitions with types PostgreSQL does not read.
    ("query (with column definitions)", "CREATE TABLE n (z integer) AS SELECT a FROM t", Refused),
    ("without_rowid", "CREATE TABLE n (a integer) WITHOUT ROWID", Refused),
    ("like", "CREATE TABLE n (LIKE t)", Refused),
    ("clone", "CREATE TABLE n CLONE t", Refused),
    ("version", "CREATE TABLE n CLONE t AT (OFFSET => -60)", Refused),
    // Hive's; kura's dialect reads it as a table option (refused above).
    ("comment", "CREATE TABLE n (a integer) COMMENT 'n'", NotRead),
    ("on_commit (PRESERVE ROWS)", "CREATE TEMPORARY TABLE n (a integer) ON COMMIT PRESERVE ROWS", Then("BEGIN; INSERT INTO n VALUES (1); COMMIT; SELECT a FROM n", &["1"])),
    ("on_commit (DELETE ROWS)", "CREATE TEMPORARY TABLE n (a integer) ON COMMIT DELETE ROWS", Refused),
    ("on_commit (DROP)", "CREATE TEMPORARY TABLE n (a integer) ON COMMIT DROP", Refused),
    ("on_commit (not temporary)", "CREATE TABLE n (a integer) ON COMMIT DROP", Fails("42P16")),
    ("on_cluster", "CREATE TABLE n ON CLUSTER c (a integer)", Refused),
    ("primary_key", "CREATE TABLE n (a integer) PRIMARY KEY a", Refused),
    ("order_by", "CREATE TABLE n (a integer) ORDER BY a", Refused),
    ("partition_by", "CREATE TABLE n (a integer) PARTITION BY RANGE (a)", Refused),
    ("cluster_by", "CREATE TABLE n (a integer) CLUSTER BY (a)", Refused),
    ("clustered_by", "CREATE TABLE n (a integer) CLUSTERED BY (a) INTO 4 BUCKETS", Refused),
    ("inherits", "CREATE TABLE n (z integer) INHERITS (t)", Refused),
    ("partition_of", "CREATE TABLE n PARTITION OF t FOR VALUES FROM (1) TO (10)", Refused),
    ("for_values", "CREATE TABLE n PARTITION OF t DEFAULT", Refused),
    ("strict", "CREATE TABLE n (a integer) STRICT", Refused),
    ("copy_grants", "CREATE TABLE n (a integer) COPY GRANTS", Refused),
    ("enable_schema_evolution", "CREATE TABLE n (a integer) ENABLE_SCHEMA_EVOLUTION = TRUE", Refused),
    ("change_tracking", "CREATE TABLE n (a integer) CHANGE_TRACKING = TRUE", Refused),
    ("data_retention_time_in_days", "CREATE TABLE n (a integer) DATA_RETENTION_TIME_IN_DAYS = 1", Refused),
    ("max_data_extension_time_in_days", "CREATE TABLE n (a integer) MAX_DATA_EXTENSION_TIME_IN_DAYS = 1", Refused),
    ("default_ddl_collation", "CREATE TABLE n (a integer) DEFAULT_DDL_COLLATION = 'en'", Refused),
    ("with_aggregation_policy", "CREATE TABLE n (a integer) WITH AGGREGATION POLICY p", Refused),
    ("with_row_access_policy", "CREATE TABLE n (a integer) WITH ROW ACCESS POLICY p ON (a)", Refused),
    ("with_storage_lifecycle_policy", "CREATE TABLE n (a integer) WITH STORAGE LIFECYCLE POLICY p", Refused),
    ("with_tags", "CREATE TABLE n (a integer) WITH TAG (k = 'v')", Refused),
    ("external_volume", "CREATE TABLE n (a integer) EXTERNAL_VOLUME = 'v'", Refused),
    ("with_connection", "CREATE TABLE n (a integer) WITH CONNECTION c", Refused),
    ("base_location", "CREATE TABLE n (a integer) BASE_LOCATION = 'b'", Refused),
    ("catalog", "CREATE TABLE n (a integer) CATALOG = 'c'", Refused),
    ("catalog_sync", "CREATE TABLE n (a integer) CATALOG_SYNC = 'c'", Refused),
    ("storage_serialization_policy", "CREATE TABLE n (a integer) STORAGE_SERIALIZATION_POLICY = COMPATIBLE", Refused),
    ("target_lag", "CREATE TABLE n (a integer) TARGET_LAG = '1 minute'", Refused),
    ("warehouse", "CREATE TABLE n (a integer) WAREHOUSE = w", Refused),
    ("refresh_mode", "CREATE TABLE n (a integer) REFRESH_MODE = AUTO", Refused),
    ("initialize", "CREATE TABLE n (a integer) INITIALIZE = ON_CREATE", Refused),
    ("require_user", "CREATE TABLE n (a integer) REQUIRE USER", Refused),
    ("diststyle", "CREATE TABLE n (a integer) DISTSTYLE ALL", Refused),
    ("distkey", "CREATE TABLE n (a integer) DISTKEY (a)", Refused),
    ("sortkey", "CREATE TABLE n (a integer) SORTKEY (a)", Refused),
    ("backup", "CREATE TABLE n (a integer) BACKUP NO", Refused),
    ("multiset", "CREATE MULTISET TABLE n (a integer)", Refused),
    ("fallback", "CREATE TABLE n (a integer) NO FALLBACK", Refused),
    ("with_data (WITH DATA)", "CREATE TABLE n AS SELECT a FROM t WITH DATA", Then("SELECT count(*) FROM n", &["3"])),
    // The query's columns only; the query is not run (1 / 0 raises nothing).
    ("with_data (WITH NO DATA)", "CREATE TABLE n AS SELECT a, 1 / 0 AS z FROM t WITH NO DATA", Then("INSERT INTO n VALUES (1, 2); SELECT a, z FROM n", &["1|2"])),
    ("with_data (AND STATISTICS)", "CREATE TABLE n AS SELECT a FROM t WITH DATA AND STATISTICS", Refused),
    // Column options.
    ("column.Null", "CREATE TABLE n (a integer NULL)", Then("INSERT INTO n VALUES (NULL); SELECT count(*) FROM n", &["1"])),
    ("column.NotNull", "CREATE TABLE n (a integer NOT NULL)", ThenFails("INSERT INTO n VALUES (NULL)", "23502")),
    ("column.Default", "CREATE TABLE n (a integer DEFAULT 5, b text)", Then("INSERT INTO n (b) VALUES ('x'); SELECT a FROM n", &["5"])),
    ("column.Materialized", "CREATE TABLE n (a integer MATERIALIZED 1)", Refused),
    ("column.Ephemeral", "CREATE TABLE n (a integer EPHEMERAL)", Refused),
    ("column.Alias", "CREATE TABLE n (a integer ALIAS 1)", Refused),
    ("column.PrimaryKey", "CREATE TABLE n (a integer PRIMARY KEY)", ThenFails("INSERT INTO n VALUES (1), (1)", "23505")),
    ("column.Unique", "CREATE TABLE n (a integer UNIQUE)", ThenFails("INSERT INTO n VALUES (1), (1)", "23505")),
    ("column.ForeignKey", "CREATE TABLE n (a integer REFERENCES t)", ThenFails("INSERT INTO n VALUES (9)", "23503")),
    ("column.Check", "CREATE TABLE n (a integer CHECK (a > 0))", ThenFails("INSERT INTO n VALUES (0)", "23514")),
    // sqlparser takes these words at the end of a column definition and
    // drops them (it checks the dialect after): kura finds them in the text.
    ("column.DialectSpecific (AUTO_INCREMENT)", "CREATE TABLE n (a integer AUTO_INCREMENT)", Refused),
    ("column.DialectSpecific (AUTOINCREMENT)", "CREATE TABLE n (a integer PRIMARY KEY AUTOINCREMENT)", Refused),
    ("column.DialectSpecific (DESC)", "CREATE TABLE n (a integer DESC, b text)", Refused),
    ("column.DialectSpecific (in a script)", "SELECT 1 AS x; CREATE TABLE n (a integer AUTO_INCREMENT)", Refused),
    // A script whose every AS and DESC the statements keep parses as it is.
    ("column.Default (in a script)", "SELECT 1 AS x ORDER BY 1 DESC; CREATE TABLE n (a integer DEFAULT CAST(1 AS integer) CHECK (a > 0))", Then("INSERT INTO n DEFAULT VALUES; SELECT a FROM n", &["1"])),
    ("column.Identity (IDENTITY without a seed)", "CREATE TABLE n (a integer IDENTITY)", Refused),
    ("column.OnUpdate (ON UPDATE without a value)", "CREATE TABLE n (a integer ON UPDATE)", Refused),
    ("column.CharacterSet", "CREATE TABLE n (a text CHARACTER SET utf8)", Refused),
    // kura compares text bytewise, as the C collation does.
    ("column.Collation", "CREATE TABLE n (a text COLLATE \"C\")", Then("INSERT INTO n VALUES ('b'), ('B'), ('a'); SELECT a FROM n ORDER BY a", &["B", "a", "b"])),
    ("column.Collation (another)", "CREATE TABLE n (a text COLLATE \"en_US\")", Refused),
    ("column.Collation (not text)", "CREATE TABLE n (a integer COLLATE \"C\")", Fails("42804")),
    ("column.Comment", "CREATE TABLE n (a integer COMMENT 'n')", Refused),
    ("column.OnUpdate", "CREATE TABLE n (a timestamp ON UPDATE now())", Refused),
    ("column.Generated (identity)", "CREATE TABLE n (a integer GENERATED ALWAYS AS IDENTITY, b text)", Then("INSERT INTO n (b) VALUES ('x'), ('y'); SELECT a, b FROM n ORDER BY a", &["1|x", "2|y"])),
    ("column.Generated (identity)", "CREATE TABLE n (a integer GENERATED ALWAYS AS IDENTITY)", ThenFails("INSERT INTO n VALUES (7)", "428C9")),
    ("generated.sequence_options", "CREATE TABLE n (a integer GENERATED BY DEFAULT AS IDENTITY (START WITH 10), b text)", Then("INSERT INTO n (b) VALUES ('x'), ('y'); SELECT a FROM n ORDER BY a", &["10", "11"])),
    ("generated.expr (STORED)", "CREATE TABLE n (a integer, b integer GENERATED ALWAYS AS (a * 2) STORED)", Refused),
    ("column.Options", "CREATE TABLE n (a integer OPTIONS (description = 'n'))", Refused),
    ("column.Identity", "CREATE TABLE n (a integer IDENTITY(1, 1))", Refused),
    ("column.OnConflict", "CREATE TABLE n (a integer UNIQUE ON CONFLICT REPLACE)", Refused),
    ("column.Policy", "CREATE TABLE n (a integer WITH MASKING POLICY p)", Refused),
    ("column.Tags", "CREATE TABLE n (a integer WITH TAG (k = 'v'))", Refused),
    ("column.Srid", "CREATE TABLE n (a integer SRID 4326)", Refused),
    ("column.Invisible", "CREATE TABLE n (a integer INVISIBLE)", Refused),
    ("column.constraint_name", "CREATE TABLE n (a integer CONSTRAINT pos CHECK (a > 0))", Then("SELECT conname FROM pg_constraint WHERE contype = 'c'", &["pos"])),
    // What the constraints of columns and tables say.
    ("primary_key.index_name", "CREATE TABLE n (a integer, PRIMARY KEY i (a))", Refused),
    ("key.index_type", "CREATE TABLE n (a integer, PRIMARY KEY USING BTREE (a))", Refused),
    ("key.include", "CREATE TABLE n (a integer, b integer, UNIQUE (a) INCLUDE (b))", Refused),
    ("key.index_options", "CREATE TABLE n (a integer, UNIQUE (a) COMMENT 'n')", Refused),
    ("key_column.sort", "CREATE TABLE n (a integer, PRIMARY KEY (a DESC))", Refused),
    ("key_column.nulls_first", "CREATE TABLE n (a integer, UNIQUE (a NULLS FIRST))", Refused),
    ("key_column.operator_class", "CREATE TABLE n (a integer, UNIQUE (a int4_ops))", Refused),
    ("key_column.expr", "CREATE TABLE n (a integer, UNIQUE ((a + 1)))", Refused),
    ("key_column.with_fill", "CREATE TABLE n (a integer, UNIQUE (a WITH FILL))", Refused),
    ("unique.index_name", "CREATE TABLE n (a integer, UNIQUE i (a))", Refused),
    ("unique.index_type_display", "CREATE TABLE n (a integer, UNIQUE KEY (a))", Refused),
    ("unique.nulls_distinct (NULLS DISTINCT)", "CREATE TABLE n (a integer, UNIQUE NULLS DISTINCT (a))", Then("INSERT INTO n VALUES (NULL), (NULL); SELECT count(*) FROM n", &["2"])),
    ("unique.nulls_distinct (NULLS NOT DISTINCT)", "CREATE TABLE n (a integer, UNIQUE NULLS NOT DISTINCT (a))", Refused),
    // Constraints are checked at the end of each statement.
    ("characteristics.deferrable (NOT DEFERRABLE)", "CREATE TABLE n (a integer, UNIQUE (a) NOT DEFERRABLE)", ThenFails("INSERT INTO n VALUES (1), (1)", "23505")),
    ("characteristics.deferrable (DEFERRABLE)", "CREATE TABLE n (a integer, UNIQUE (a) DEFERRABLE)", Refused),
    ("characteristics.initially (IMMEDIATE)", "CREATE TABLE n (a integer REFERENCES t INITIALLY IMMEDIATE)", ThenFails("INSERT INTO n VALUES (9)", "23503")),
    ("characteristics.initially (DEFERRED)", "CREATE TABLE n (a integer REFERENCES t DEFERRABLE INITIALLY DEFERRED)", Refused),
    ("characteristics.enforced (NOT ENFORCED)", "CREATE TABLE n (a integer REFERENCES t NOT ENFORCED)", Refused),
    ("fk.on_delete (RESTRICT)", "CREATE TABLE n (a integer REFERENCES t ON DELETE RESTRICT)", ThenFails("INSERT INTO n VALUES (1); DELETE FROM t WHERE a = 1", "23503")),
    ("fk.on_delete (CASCADE)", "CREATE TABLE n (a integer REFERENCES t ON DELETE CASCADE)", Refused),
    ("fk.on_update (NO ACTION)", "CREATE TABLE n (a integer REFERENCES t ON UPDATE NO ACTION)", ThenFails("INSERT INTO n VALUES (1); UPDATE t SET a = 10 WHERE a = 1", "23503")),
    ("fk.on_update (SET NULL)", "CREATE TABLE n (a integer REFERENCES t ON UPDATE SET NULL)", Refused),
    // MATCH SIMPLE (the default): a key with a NULL is not checked.
    ("fk.match_kind (SIMPLE)", "CREATE TABLE n (a integer REFERENCES t MATCH SIMPLE)", Then("INSERT INTO n VALUES (NULL); SELECT count(*) FROM n", &["1"])),
    ("fk.match_kind (SIMPLE)", "CREATE TABLE n (a integer REFERENCES t MATCH SIMPLE)", ThenFails("INSERT INTO n VALUES (9)", "23503")),
    ("fk.match_kind (FULL)", "CREATE TABLE n (a integer REFERENCES t MATCH FULL)", Refused),
    ("fk.index_name", "CREATE TABLE n (a integer, FOREIGN KEY i (a) REFERENCES t)", Refused),
    ("check.no_inherit", "CREATE TABLE n (a integer CHECK (a > 0) NO INHERIT)", Refused),
    // PostgreSQL 18's syntax (15 does not read ENFORCED): enforced.
    ("check.enforced (ENFORCED)", "CREATE TABLE n (a integer CHECK (a > 0) ENFORCED)", ThenFails("INSERT INTO n VALUES (0)", "23514")),
    ("check.enforced (NOT ENFORCED)", "CREATE TABLE n (a integer, CHECK (a > 0) NOT ENFORCED)", Refused),
    // Table constraints.
    ("constraint.Unique", "CREATE TABLE n (a integer, b integer, UNIQUE (a, b))", ThenFails("INSERT INTO n VALUES (1, 1), (1, 1)", "23505")),
    ("constraint.PrimaryKey", "CREATE TABLE n (a integer, b integer, PRIMARY KEY (a, b))", ThenFails("INSERT INTO n VALUES (1, NULL)", "23502")),
    ("constraint.ForeignKey", "CREATE TABLE n (a integer, FOREIGN KEY (a) REFERENCES t (a))", ThenFails("INSERT INTO n VALUES (9)", "23503")),
    ("constraint.Check", "CREATE TABLE n (a integer, b integer, CONSTRAINT ab CHECK (a < b))", ThenFails("INSERT INTO n VALUES (2, 1)", "23514")),
    ("constraint.name", "CREATE TABLE n (a integer, CONSTRAINT one UNIQUE (a))", Then("SELECT conname FROM pg_constraint WHERE contype = 'u'", &["one"])),
    // MySQL's; kura's dialect reads INDEX / FULLTEXT as a column's name.
    ("constraint.Index", "CREATE TABLE n (a integer, INDEX i (a))", NotRead),
    ("constraint.FulltextOrSpatial", "CREATE TABLE n (a text, FULLTEXT (a))", NotRead),
    ("constraint.PrimaryKeyUsingIndex", "CREATE TABLE n (a integer, CONSTRAINT k PRIMARY KEY USING INDEX t_pkey)", Refused),
    ("constraint.UniqueUsingIndex", "CREATE TABLE n (a integer, CONSTRAINT k UNIQUE USING INDEX t_pkey)", Refused),
    ("constraint.Exclude", "CREATE TABLE n (a integer, EXCLUDE USING gist (a WITH =))", Refused),
    // CREATE INDEX.
    ("name", "CREATE INDEX i ON t (b)", Then(T_INDEXES, &["i", "t_pkey"])),
    ("unnamed", "CREATE INDEX ON t (b, c)", Then(T_INDEXES, &["t_b_c_idx", "t_pkey"])),
    ("using (btree)", "CREATE INDEX i ON t USING btree (b)", Then(T_INDEXES, &["i", "t_pkey"])),
    ("using (hash)", "CREATE INDEX i ON t USING hash (b)", Refused),
    ("column.sort (ASC NULLS LAST)", "CREATE INDEX i ON t (b ASC NULLS LAST)", Then(T_INDEXES, &["i", "t_pkey"])),
    ("column.sort (DESC)", "CREATE INDEX i ON t (b DESC)", Refused),
    ("column.nulls_first", "CREATE INDEX i ON t (b NULLS FIRST)", Refused),
    ("column.operator_class", "CREATE INDEX i ON t (b text_pattern_ops)", Refused),
    ("column.expr", "CREATE INDEX i ON t ((a + 1))", Refused),
    ("column.with_fill", "CREATE INDEX i ON t (a WITH FILL)", Refused),
    ("unique", "CREATE UNIQUE INDEX i ON t (b)", Fails("23505")),
    // NULLs are distinct: the two NULLs of c are no duplicate.
    ("unique (NULLs distinct)", "CREATE UNIQUE INDEX i ON t (c)", ThenFails("INSERT INTO t VALUES (4, 'z', 7)", "23505")),
    // The same index; kura's build holds the write transaction, which
    // leaves readers be.
    ("concurrently", "CREATE INDEX CONCURRENTLY i ON t (b)", Then(T_INDEXES, &["i", "t_pkey"])),
    ("concurrently (in a transaction block)", "BEGIN; CREATE INDEX CONCURRENTLY i ON t (b)", Fails("25001")),
    ("async", "CREATE ASYNC INDEX i ON t (b)", Refused),
    ("if_not_exists", "CREATE INDEX IF NOT EXISTS t_pkey ON t (b)", Then(T_INDEXES, &["t_pkey"])),
    ("if_not_exists (a table's name)", "CREATE INDEX IF NOT EXISTS d ON t (b)", Then(T_INDEXES, &["t_pkey"])),
    // Covering: b is kept in the index's entries.
    ("include", "CREATE INDEX i ON t (a) INCLUDE (b)", Then(T_INDEXES, &["i", "t_pkey"])),
    ("nulls_distinct (NULLS DISTINCT)", "CREATE UNIQUE INDEX i ON t (c) NULLS DISTINCT", Then(T_INDEXES, &["i", "t_pkey"])),
    ("nulls_distinct (NULLS NOT DISTINCT)", "CREATE UNIQUE INDEX i ON t (c) NULLS NOT DISTINCT", Refused),
    ("with", "CREATE INDEX i ON t (b) WITH (fillfactor = 70)", Refused),
    ("predicate", "CREATE INDEX i ON t (b) WHERE a > 1", Refused),
    ("index_options", "CREATE INDEX i ON t (b) COMMENT 'i'", Refused),
    ("alter_options", "CREATE INDEX i ON t (b) LOCK = NONE", Refused),
];

/// Which options a parsed INSERT, UPDATE, DELETE, CREATE TABLE or CREATE
/// INDEX sets (`None` for other statements), listing every field of their
/// structs.
fn dml_ddl_options(stmt: &Statement) -> Option<Vec<&'static str>> {
    let mut out = Vec::new();
    match stmt {
        Statement::Insert(i) => insert_options(i, &mut out),
        Statement::Update(u) => update_options(u, &mut out),
        Statement::Delete(d) => delete_options(d, &mut out),
        Statement::CreateTable(ct) => create_table_options(ct, &mut out),
        Statement::CreateIndex(ci) => create_index_options(ci, &mut out),
        _ => return None,
    }
    Some(out)
}

fn set(out: &mut Vec<&'static str>, on: bool, name: &'static str) {
    if on {
        out.push(name);
    }
}

fn insert_options(i: &ast::Insert, out: &mut Vec<&'static str>) {
    let ast::Insert {
        insert_token: _, // the INSERT keyword
        optimizer_hints,
        or,
        ignore,
        into,
        table,
        table_alias,
        columns,
        overwrite,
        source,
        assignments,
        partitioned,
        after_columns,
        has_table_keyword,
        on,
        returning,
        output,
        replace_into,
        priority,
        insert_alias,
        settings,
        format_clause,
        multi_table_insert_type,
        multi_table_into_clauses,
        multi_table_when_clauses,
        multi_table_else_clause,
    } = i;
    set(out, !optimizer_hints.is_empty(), "optimizer_hints");
    set(out, or.is_some(), "or");
    set(out, *ignore, "ignore");
    set(out, !*into, "no_into");
    set(
        out,
        matches!(table, ast::TableObject::TableFunction(_)),
        "table",
    );
    set(out, table_alias.is_some(), "table_alias");
    set(out, !columns.is_empty(), "columns");
    set(out, *overwrite, "overwrite");
    set(out, source.is_some(), "source");
    set(
        out,
        source.is_none() && assignments.is_empty(),
        "default_values",
    );
    set(out, !assignments.is_empty(), "assignments");
    set(out, partitioned.is_some(), "partitioned");
    set(out, !after_columns.is_empty(), "after_columns");
    set(out, *has_table_keyword, "has_table_keyword");
    set(out, on.is_some(), "on");
    if let Some(ast::OnInsert::OnConflict(c)) = on {
        let ast::OnConflict {
            conflict_target,
            action,
        } = c;
        set(out, conflict_target.is_some(), "on.conflict_target");
        if let ast::OnConflictAction::DoUpdate(u) = action {
            let ast::DoUpdate {
                assignments: _, // DO UPDATE SET's, always there
                selection,
            } = u;
            set(out, true, "on.do_update");
            set(out, selection.is_some(), "on.do_update.selection");
        }
    }
    set(out, returning.is_some(), "returning");
    set(out, output.is_some(), "output");
    set(out, *replace_into, "replace_into");
    set(out, priority.is_some(), "priority");
    set(out, insert_alias.is_some(), "insert_alias");
    set(out, settings.is_some(), "settings");
    set(out, format_clause.is_some(), "format_clause");
    set(
        out,
        multi_table_insert_type.is_some()
            || !multi_table_into_clauses.is_empty()
            || !multi_table_when_clauses.is_empty()
            || multi_table_else_clause.is_some(),
        "multi_table",
    );
}

/// The options of the table an UPDATE or DELETE names (`prefix.alias` …).
fn target_options(t: &ast::TableWithJoins, names: [&'static str; 3], out: &mut Vec<&'static str>) {
    let ast::TableWithJoins { relation, joins } = t;
    if let ast::TableFactor::Table { alias, sample, .. } = relation {
        set(out, alias.is_some(), names[0]);
        set(out, sample.is_some(), names[2]);
    }
    set(out, !joins.is_empty(), names[1]);
}

fn update_options(u: &ast::Update, out: &mut Vec<&'static str>) {
    let ast::Update {
        update_token: _, // the UPDATE keyword
        optimizer_hints,
        table,
        assignments,
        from,
        selection,
        returning,
        output,
        or,
        order_by,
        limit,
    } = u;
    set(out, !optimizer_hints.is_empty(), "optimizer_hints");
    target_options(table, ["table.alias", "table.joins", "table.sample"], out);
    set(out, !assignments.is_empty(), "assignments");
    set(
        out,
        assignments
            .iter()
            .any(|a| matches!(a.target, ast::AssignmentTarget::Tuple(_))),
        "assignments.tuple",
    );
    set(out, from.is_some(), "from");
    set(out, selection.is_some(), "selection");
    set(out, returning.is_some(), "returning");
    set(out, output.is_some(), "output");
    set(out, or.is_some(), "or");
    set(out, !order_by.is_empty(), "order_by");
    set(out, limit.is_some(), "limit");
}

fn delete_options(d: &ast::Delete, out: &mut Vec<&'static str>) {
    let ast::Delete {
        delete_token: _, // the DELETE keyword
        optimizer_hints,
        tables,
        from,
        using,
        selection,
        returning,
        output,
        order_by,
        limit,
    } = d;
    set(out, !optimizer_hints.is_empty(), "optimizer_hints");
    set(out, !tables.is_empty(), "tables");
    let from = match from {
        ast::FromTable::WithFromKeyword(f) => f,
        ast::FromTable::WithoutKeyword(f) => {
            out.push("no_from");
            f
        }
    };
    set(out, from.len() > 1, "from.several");
    for t in from {
        target_options(t, ["from.alias", "from.joins", "from.sample"], out);
    }
    set(out, using.is_some(), "using");
    set(out, selection.is_some(), "selection");
    set(out, returning.is_some(), "returning");
    set(out, output.is_some(), "output");
    set(out, !order_by.is_empty(), "order_by");
    set(out, limit.is_some(), "limit");
}

fn create_table_options(ct: &ast::CreateTable, out: &mut Vec<&'static str>) {
    let ast::CreateTable {
        or_replace,
        temporary,
        unlogged,
        external,
        dynamic,
        global,
        if_not_exists,
        transient,
        volatile,
        iceberg,
        snapshot,
        name: _, // the table's name, always there
        columns,
        constraints,
        hive_distribution,
        hive_formats,
        table_options,
        file_format,
        location,
        query,
        without_rowid,
        like,
        clone,
        version,
        comment,
        on_commit,
        on_cluster,
        primary_key,
        order_by,
        partition_by,
        cluster_by,
        clustered_by,
        inherits,
        partition_of,
        for_values,
        strict,
        copy_grants,
        enable_schema_evolution,
        change_tracking,
        data_retention_time_in_days,
        max_data_extension_time_in_days,
        default_ddl_collation,
        with_aggregation_policy,
        with_row_access_policy,
        with_storage_lifecycle_policy,
        with_tags,
        external_volume,
        with_connection,
        base_location,
        catalog,
        catalog_sync,
        storage_serialization_policy,
        target_lag,
        warehouse,
        refresh_mode,
        initialize,
        require_user,
        diststyle,
        distkey,
        sortkey,
        backup,
        multiset,
        fallback,
        with_data,
    } = ct;
    for (on, name) in [
        (*or_replace, "or_replace"),
        (*temporary, "temporary"),
        (*unlogged, "unlogged"),
        (*external, "external"),
        (*dynamic, "dynamic"),
        (global.is_some(), "global"),
        (*if_not_exists, "if_not_exists"),
        (*transient, "transient"),
        (*volatile, "volatile"),
        (*iceberg, "iceberg"),
        (*snapshot, "snapshot"),
        (
            !matches!(hive_distribution, ast::HiveDistributionStyle::NONE),
            "hive_distribution",
        ),
        (hive_formats.is_some(), "hive_formats"),
        (
            !matches!(table_options, ast::CreateTableOptions::None),
            "table_options",
        ),
        (file_format.is_some(), "file_format"),
        (location.is_some(), "location"),
        (query.is_some(), "query"),
        (*without_rowid, "without_rowid"),
        (like.is_some(), "like"),
        (clone.is_some(), "clone"),
        (version.is_some(), "version"),
        (comment.is_some(), "comment"),
        (on_commit.is_some(), "on_commit"),
        (on_cluster.is_some(), "on_cluster"),
        (primary_key.is_some(), "primary_key"),
        (order_by.is_some(), "order_by"),
        (partition_by.is_some(), "partition_by"),
        (cluster_by.is_some(), "cluster_by"),
        (clustered_by.is_some(), "clustered_by"),
        (inherits.is_some(), "inherits"),
        (partition_of.is_some(), "partition_of"),
        (for_values.is_some(), "for_values"),
        (*strict, "strict"),
        (*copy_grants, "copy_grants"),
        (enable_schema_evolution.is_some(), "enable_schema_evolution"),
        (change_tracking.is_some(), "change_tracking"),
        (
            data_retention_time_in_days.is_some(),
            "data_retention_time_in_days",
        ),
        (
            max_data_extension_time_in_days.is_some(),
            "max_data_extension_time_in_days",
        ),
        (default_ddl_collation.is_some(), "default_ddl_collation"),
        (with_aggregation_policy.is_some(), "with_aggregation_policy"),
        (with_row_access_policy.is_some(), "with_row_access_policy"),
        (
            with_storage_lifecycle_policy.is_some(),
            "with_storage_lifecycle_policy",
        ),
        (with_tags.is_some(), "with_tags"),
        (external_volume.is_some(), "external_volume"),
        (with_connection.is_some(), "with_connection"),
        (base_location.is_some(), "base_location"),
        (catalog.is_some(), "catalog"),
        (catalog_sync.is_some(), "catalog_sync"),
        (
            storage_serialization_policy.is_some(),
            "storage_serialization_policy",
        ),
        (target_lag.is_some(), "target_lag"),
        (warehouse.is_some(), "warehouse"),
        (refresh_mode.is_some(), "refresh_mode"),
        (initialize.is_some(), "initialize"),
        (*require_user, "require_user"),
        (diststyle.is_some(), "diststyle"),
        (distkey.is_some(), "distkey"),
        (sortkey.is_some(), "sortkey"),
        (backup.is_some(), "backup"),
        (multiset.is_some(), "multiset"),
        (fallback.is_some(), "fallback"),
        (with_data.is_some(), "with_data"),
    ] {
        set(out, on, name);
    }
    for c in columns {
        let ast::ColumnDef {
            name: _,      // the column's name, always there
            data_type: _, // its type, always there (types have tests of their own)
            options,
        } = c;
        for o in options {
            let ast::ColumnOptionDef { name, option } = o;
            set(out, name.is_some(), "column.constraint_name");
            column_option(option, out);
        }
    }
    for c in constraints {
        table_constraint(c, out);
    }
}

/// A column option's name, and those of what it says: matched without a
/// wildcard, so a new variant fails to compile here.
fn column_option(o: &ast::ColumnOption, out: &mut Vec<&'static str>) {
    use ast::ColumnOption as C;
    let name = match o {
        C::Null => "column.Null",
        C::NotNull => "column.NotNull",
        C::Default(_) => "column.Default",
        C::Materialized(_) => "column.Materialized",
        C::Ephemeral(_) => "column.Ephemeral",
        C::Alias(_) => "column.Alias",
        C::PrimaryKey(pk) => {
            primary_key(pk, out);
            "column.PrimaryKey"
        }
        C::Unique(u) => {
            unique(u, out);
            "column.Unique"
        }
        C::ForeignKey(fk) => {
            foreign_key(fk, out);
            "column.ForeignKey"
        }
        C::Check(c) => {
            check(c, out);
            "column.Check"
        }
        C::DialectSpecific(_) => "column.DialectSpecific",
        C::CharacterSet(_) => "column.CharacterSet",
        C::Collation(_) => "column.Collation",
        C::Comment(_) => "column.Comment",
        C::OnUpdate(_) => "column.OnUpdate",
        C::Generated {
            generated_as: _, // ALWAYS / BY DEFAULT: the identity's kind
            sequence_options,
            generation_expr,
            generation_expr_mode: _, // STORED / VIRTUAL, with an expression only
            generated_keyword: _,    // `GENERATED ALWAYS` written or not
        } => {
            set(
                out,
                sequence_options.is_some(),
                "generated.sequence_options",
            );
            set(out, generation_expr.is_some(), "generated.expr");
            "column.Generated"
        }
        C::Options(_) => "column.Options",
        C::Identity(_) => "column.Identity",
        C::OnConflict(_) => "column.OnConflict",
        C::Policy(_) => "column.Policy",
        C::Tags(_) => "column.Tags",
        C::Srid(_) => "column.Srid",
        C::Invisible => "column.Invisible",
    };
    out.push(name);
}

/// A table constraint's name, and those of what it says (the refused
/// kinds are not looked into).
fn table_constraint(c: &ast::TableConstraint, out: &mut Vec<&'static str>) {
    use ast::TableConstraint as T;
    let (name, kind) = match c {
        T::Unique(u) => (unique(u, out), "constraint.Unique"),
        T::PrimaryKey(pk) => (primary_key(pk, out), "constraint.PrimaryKey"),
        T::ForeignKey(fk) => (foreign_key(fk, out), "constraint.ForeignKey"),
        T::Check(c) => (check(c, out), "constraint.Check"),
        T::Index(_) => (false, "constraint.Index"),
        T::FulltextOrSpatial(_) => (false, "constraint.FulltextOrSpatial"),
        T::PrimaryKeyUsingIndex(_) => (false, "constraint.PrimaryKeyUsingIndex"),
        T::UniqueUsingIndex(_) => (false, "constraint.UniqueUsingIndex"),
        T::Exclude(_) => (false, "constraint.Exclude"),
    };
    set(out, name, "constraint.name");
    out.push(kind);
}

/// The options of a PRIMARY KEY; whether it is named.
fn primary_key(pk: &ast::PrimaryKeyConstraint, out: &mut Vec<&'static str>) -> bool {
    let ast::PrimaryKeyConstraint {
        name,
        index_name,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
    } = pk;
    set(out, index_name.is_some(), "primary_key.index_name");
    key_options(index_type, columns, include, index_options, out);
    constraint_characteristics(characteristics, out);
    name.is_some()
}

/// The options of a UNIQUE constraint; whether it is named.
fn unique(u: &ast::UniqueConstraint, out: &mut Vec<&'static str>) -> bool {
    let ast::UniqueConstraint {
        name,
        index_name,
        index_type_display,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
        nulls_distinct,
    } = u;
    set(out, index_name.is_some(), "unique.index_name");
    set(
        out,
        !index_type_display.is_none(),
        "unique.index_type_display",
    );
    set(
        out,
        !matches!(nulls_distinct, ast::NullsDistinctOption::None),
        "unique.nulls_distinct",
    );
    key_options(index_type, columns, include, index_options, out);
    constraint_characteristics(characteristics, out);
    name.is_some()
}

fn key_options(
    index_type: &Option<ast::IndexType>,
    columns: &[ast::IndexColumn],
    include: &[ast::Ident],
    index_options: &[ast::IndexOption],
    out: &mut Vec<&'static str>,
) {
    set(out, index_type.is_some(), "key.index_type");
    set(out, !include.is_empty(), "key.include");
    set(out, !index_options.is_empty(), "key.index_options");
    for c in columns {
        index_column(c, "key_column", out);
    }
}

/// The options of a column of a key or an index (`prefix.sort` …).
fn index_column(c: &ast::IndexColumn, prefix: &'static str, out: &mut Vec<&'static str>) {
    let ast::IndexColumn {
        column,
        operator_class,
    } = c;
    let ast::OrderByExpr {
        expr,
        options,
        with_fill,
    } = column;
    let ast::OrderByOptions { sort, nulls_first } = options;
    let name = |field: &str| -> &'static str {
        match (prefix, field) {
            ("key_column", "expr") => "key_column.expr",
            ("key_column", "sort") => "key_column.sort",
            ("key_column", "nulls_first") => "key_column.nulls_first",
            ("key_column", "operator_class") => "key_column.operator_class",
            ("key_column", _) => "key_column.with_fill",
            (_, "expr") => "column.expr",
            (_, "sort") => "column.sort",
            (_, "nulls_first") => "column.nulls_first",
            (_, "operator_class") => "column.operator_class",
            _ => "column.with_fill",
        }
    };
    set(out, !matches!(expr, ast::Expr::Identifier(_)), name("expr"));
    set(out, sort.is_some(), name("sort"));
    set(out, nulls_first.is_some(), name("nulls_first"));
    set(out, operator_class.is_some(), name("operator_class"));
    set(out, with_fill.is_some(), name("with_fill"));
}

/// The options of a FOREIGN KEY; whether it is named.
fn foreign_key(fk: &ast::ForeignKeyConstraint, out: &mut Vec<&'static str>) -> bool {
    let ast::ForeignKeyConstraint {
        name,
        index_name,
        columns: _,          // the referencing columns, always there
        foreign_table: _,    // the referenced table, always there
        referred_columns: _, // its key (its primary key when left out)
        on_delete,
        on_update,
        match_kind,
        characteristics,
    } = fk;
    set(out, index_name.is_some(), "fk.index_name");
    set(out, on_delete.is_some(), "fk.on_delete");
    set(out, on_update.is_some(), "fk.on_update");
    set(out, match_kind.is_some(), "fk.match_kind");
    constraint_characteristics(characteristics, out);
    name.is_some()
}

/// The options of a CHECK; whether it is named.
fn check(c: &ast::CheckConstraint, out: &mut Vec<&'static str>) -> bool {
    let ast::CheckConstraint {
        name,
        expr: _, // the condition, always there
        no_inherit,
        enforced,
    } = c;
    set(out, *no_inherit, "check.no_inherit");
    set(out, enforced.is_some(), "check.enforced");
    name.is_some()
}

fn constraint_characteristics(
    c: &Option<ast::ConstraintCharacteristics>,
    out: &mut Vec<&'static str>,
) {
    if let Some(ast::ConstraintCharacteristics {
        deferrable,
        initially,
        enforced,
    }) = c
    {
        set(out, deferrable.is_some(), "characteristics.deferrable");
        set(out, initially.is_some(), "characteristics.initially");
        set(out, enforced.is_some(), "characteristics.enforced");
    }
}

fn create_index_options(ci: &ast::CreateIndex, out: &mut Vec<&'static str>) {
    let ast::CreateIndex {
        name,
        table_name: _, // the indexed table, always there
        using,
        columns,
        unique,
        concurrently,
        r#async,
        if_not_exists,
        include,
        nulls_distinct,
        with,
        predicate,
        index_options,
        alter_options,
    } = ci;
    set(out, name.is_some(), "name");
    set(out, name.is_none(), "unnamed");
    set(out, using.is_some(), "using");
    for c in columns {
        index_column(c, "column", out);
    }
    set(out, *unique, "unique");
    set(out, *concurrently, "concurrently");
    set(out, *r#async, "async");
    set(out, *if_not_exists, "if_not_exists");
    set(out, !include.is_empty(), "include");
    set(out, nulls_distinct.is_some(), "nulls_distinct");
    set(out, !with.is_empty(), "with");
    set(out, predicate.is_some(), "predicate");
    set(out, !index_options.is_empty(), "index_options");
    set(out, !alter_options.is_empty(), "alter_options");
}

#[test]
fn every_dml_and_ddl_option_is_honoured_or_refused() {
    let failures: Vec<String> = DML_DDL_CASES
        .iter()
        .filter_map(|case| {
            // A database of its own: the cases change data and schema.
            let dir = tempfile::tempdir().unwrap();
            let db = Database::open(&dir.path().join("o.kura"), OpenOptions::default()).unwrap();
            let mut s = db.session();
            s.execute_all(DML_DDL_SETUP).unwrap();
            check_case(&mut s, case, dml_ddl_options)
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
