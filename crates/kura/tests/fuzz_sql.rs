//! The SQL front end under random input (proptest): token soup, and random
//! well-formed queries with one token dropped, doubled or replaced, run against
//! a small database in every execution mode. Whatever the text, a statement
//! answers or fails with a SQL error — never an internal error (a caught panic,
//! XX000) — and the session keeps answering afterwards.
//!
//! Cases per property: 256 by default, from a fixed seed so that a run in CI
//! repeats; `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=<n> cargo test -p kura --test
//! fuzz_sql` explores further.

use kura::{Database, OpenOptions, Session};
use proptest::prelude::*;

const SETUP: &str = "
CREATE TABLE t (a INTEGER, b VARCHAR(20), c DECIMAL(10,2), d DATE, e DOUBLE, f BOOLEAN);
INSERT INTO t VALUES (1, 'x', 1.50, DATE '1995-01-01', 0.5, true),
  (2, '', -3.25, DATE '2000-02-29', -1e10, false), (NULL, NULL, NULL, NULL, NULL, NULL),
  (2147483647, 'abc  ', 99999999.99, DATE '1970-01-01', 0.0, true);
CREATE TABLE u (a BIGINT, b CHAR(3));
INSERT INTO u VALUES (1, 'x'), (9223372036854775807, 'zz'), (NULL, 'n');
CREATE INDEX u_a ON u (a);
CREATE VIEW v AS SELECT a, b FROM t WHERE a > 0;
";

const WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT",
    "FULL",
    "ON",
    "USING",
    "UNION",
    "ALL",
    "EXCEPT",
    "INTERSECT",
    "WITH",
    "AS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "IN",
    "EXISTS",
    "NOT",
    "AND",
    "OR",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "BETWEEN",
    "LIKE",
    "CAST",
    "DISTINCT",
    "DESC",
    "ASC",
    "NULLS",
    "FIRST",
    "count(",
    "sum(",
    "avg(",
    "min(",
    "max(",
    "abs(",
    "round(",
    "coalesce(",
    "nullif(",
    "substring(",
    "length(",
    "upper(",
    "extract(",
    "year",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "%",
    "||",
    "=",
    "<>",
    "<",
    ">=",
    ".",
    ";",
    "t",
    "u",
    "v",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "x",
    "1",
    "0",
    "-1",
    "2147483647",
    "9223372036854775807",
    "1.5",
    "1e308",
    "'x'",
    "''",
    "'1995-01-01'",
    "DATE",
    "INTEGER",
    "DECIMAL(5,2)",
    "VARCHAR",
    "DOUBLE",
    "BIGINT",
    "INTERVAL",
    "'1' DAY",
    "$1",
    "::",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "EXPLAIN",
    "ANALYZE",
];

/// Expressions over the columns of `t`, nested up to a few levels.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("c".to_string()),
        Just("d".to_string()),
        Just("e".to_string()),
        Just("f".to_string()),
        Just("NULL".to_string()),
        (-3i64..3).prop_map(|v| v.to_string()),
        Just("2147483647".to_string()),
        Just("0.01".to_string()),
        Just("'x'".to_string()),
        Just("DATE '1995-06-30'".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(
                    &["+", "-", "*", "/", "%", "=", "<", "<>", "AND", "OR", "||"][..]
                ),
                inner.clone()
            )
                .prop_map(|(l, op, r)| format!("({l} {op} {r})")),
            inner.clone().prop_map(|x| format!("NOT ({x})")),
            inner.clone().prop_map(|x| format!("({x} IS NULL)")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, t, e)| format!("CASE WHEN {c} THEN {t} ELSE {e} END")),
            (
                inner.clone(),
                prop::sample::select(
                    &[
                        "INTEGER",
                        "BIGINT",
                        "DECIMAL(6,2)",
                        "VARCHAR",
                        "DATE",
                        "DOUBLE",
                        "BOOLEAN"
                    ][..]
                )
            )
                .prop_map(|(x, ty)| format!("CAST({x} AS {ty})")),
            (
                prop::sample::select(
                    &["abs", "round", "length", "upper", "coalesce", "sum", "count", "min", "avg"]
                        [..]
                ),
                inner.clone()
            )
                .prop_map(|(f, x)| format!("{f}({x})")),
            (inner.clone(), inner.clone()).prop_map(|(x, l)| format!("{x} IN ({l}, NULL)")),
            inner.prop_map(|x| format!("{x} IN (SELECT a FROM u WHERE u.a = t.a)")),
        ]
    })
}

/// A query over `t` (and `u`), well formed in grammar if not always in types.
fn query() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(expr(), 1..4),
        prop::option::of(expr()),
        prop::option::of(expr()),
        prop::option::of(0u8..4),
        prop::bool::ANY,
    )
        .prop_map(|(items, filter, group, limit, join)| {
            let mut q = format!("SELECT {} FROM t", items.join(", "));
            if join {
                q.push_str(" LEFT JOIN u ON t.a = u.a");
            }
            if let Some(f) = filter {
                q.push_str(&format!(" WHERE {f}"));
            }
            if let Some(g) = group {
                q.push_str(&format!(" GROUP BY {g}"));
            }
            if let Some(l) = limit {
                q.push_str(&format!(" ORDER BY 1 LIMIT {l}"));
            }
            q
        })
}

/// `q` with one of its tokens dropped, doubled or replaced by a random word.
fn mutated() -> impl Strategy<Value = String> {
    (
        query(),
        any::<prop::sample::Index>(),
        0u8..3,
        prop::sample::select(WORDS),
    )
        .prop_map(|(q, at, how, word)| {
            let mut tokens: Vec<&str> = q.split(' ').collect();
            let i = at.index(tokens.len());
            match how {
                0 => {
                    tokens.remove(i);
                }
                1 => tokens.insert(i, tokens[i]),
                _ => tokens[i] = word,
            }
            tokens.join(" ")
        })
}

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..24).prop_map(|w| w.join(" "))
}

fn database() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(
        &dir.path().join("f.db"),
        OpenOptions {
            buffer_bytes: Some(8 << 20),
            ..Default::default()
        },
    )
    .unwrap();
    db.session().execute_all(SETUP).unwrap();
    (dir, db)
}

/// Runs `sql` in each mode; fails the property on an internal error.
fn check(s: &mut Session, sql: &str) -> Result<(), TestCaseError> {
    for mode in ["serial", "ooo"] {
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        if let Err(e) = s.execute(sql) {
            prop_assert_ne!(e.sqlstate(), "XX000", "{}: {}", sql, e);
        }
        // Whatever happened, the session answers (after leaving any
        // transaction the statement may have opened or aborted).
        let _ = s.execute("ROLLBACK");
        let n = s
            .execute("SELECT count(*) FROM t")
            .map(|r| r.rows()[0][0].clone());
        prop_assert!(n.is_ok(), "after {}: {:?}", sql, n);
    }
    Ok(())
}

/// The default configuration (which reads `PROPTEST_CASES` and
/// `PROPTEST_RNG_SEED`), with a fixed seed unless one is given.
fn config() -> ProptestConfig {
    let mut c = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = proptest::test_runner::RngSeed::Fixed(0x6b75_7261);
    }
    c
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn token_soup_never_fails_internally(sql in soup()) {
        let (_dir, db) = database();
        check(&mut db.session(), &sql)?;
    }

    #[test]
    fn queries_and_their_mutants_never_fail_internally(q in query(), m in mutated()) {
        let (_dir, db) = database();
        let mut s = db.session();
        check(&mut s, &q)?;
        check(&mut s, &m)?;
    }
}
