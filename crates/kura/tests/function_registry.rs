//! The function list (`kura_exec::expr::registry`) is the truth about kura's
//! functions: every signature it lists binds (no "function does not exist"),
//! `pg_proc` shows each signature with its types, and the README's function
//! table is the one the list renders.

use kura::{Database, OpenOptions};
use kura_exec::expr::registry::{markdown_table, Kind, FUNCTIONS};

/// A typed NULL for a signature's argument type (a constant for text, which
/// some functions need: `date_part('day', …)`).
fn argument(t: &str) -> String {
    match t {
        "text" => "'day'".into(),
        "any" | "anyelement" => "CAST(NULL AS integer)".into(),
        "anyarray" => "CAST(NULL AS integer[])".into(),
        "_text" => "CAST(NULL AS text[])".into(),
        "regclass" => "CAST('t' AS regclass)".into(),
        "name" => "CAST('t' AS name)".into(),
        "float8" => "CAST(0.5 AS double precision)".into(),
        other => format!("CAST(NULL AS {other})"),
    }
}

fn call_sql(name: &str, kind: Kind, args: &[&str]) -> String {
    let list: Vec<String> = args.iter().map(|a| argument(a)).collect();
    match (kind, name) {
        (Kind::Aggregate, "count") if args.is_empty() => "SELECT count(*) FROM t".into(),
        (Kind::Aggregate, "mode") => {
            format!("SELECT mode() WITHIN GROUP (ORDER BY {}) FROM t", list[0])
        }
        (Kind::Aggregate, "percentile_cont" | "percentile_disc") => format!(
            "SELECT {name}({}) WITHIN GROUP (ORDER BY {}) FROM t",
            list[0], list[1]
        ),
        (Kind::Aggregate, _) => format!("SELECT {name}({}) FROM t", list.join(", ")),
        (Kind::Window, _) => format!("SELECT {name}({}) OVER () FROM t", list.join(", ")),
        (Kind::SetReturning, _) => format!("SELECT * FROM {name}({})", list.join(", ")),
        (Kind::Scalar, _) => format!("SELECT {name}({}) FROM t", list.join(", ")),
    }
}

#[test]
fn every_listed_signature_binds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("f.kura"), OpenOptions::default()).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (a integer)").unwrap();
    s.execute("INSERT INTO t VALUES (1)").unwrap();
    s.execute("CREATE SEQUENCE sq").unwrap();
    let mut missing = Vec::new();
    for f in FUNCTIONS {
        for sig in f.signatures {
            let sql = call_sql(f.name, f.kind, sig.args);
            if let Err(e) = s.execute(&sql) {
                // Other errors (a NULL where a value is needed, a refused
                // argument) are the function's; 42883 would be the list lying.
                if matches!(e.sqlstate(), "42883" | "42725" | "XX000") {
                    missing.push(format!("{sql}: {e}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "listed but not bound:\n{}",
        missing.join("\n")
    );
}

#[test]
fn pg_proc_lists_every_signature_with_its_types() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("f.kura"), OpenOptions::default()).unwrap();
    let mut s = db.session();
    let n: usize = FUNCTIONS.iter().map(|f| f.signatures.len()).sum();
    let r = s.execute("SELECT count(*) FROM pg_proc").unwrap();
    assert_eq!(r.rows()[0][0].to_string(), n.to_string());
    let r = s
        .execute(
            "SELECT pg_get_function_arguments(oid), pg_get_function_result(oid), provolatile, prokind \
             FROM pg_proc WHERE proname = 'round' ORDER BY 1",
        )
        .unwrap();
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
    assert_eq!(
        rows,
        [
            "double precision|double precision|i|f",
            "numeric|numeric|i|f",
            "numeric, integer|numeric|i|f"
        ]
    );
    let r = s
        .execute(
            "SELECT pg_get_function_result(oid), proretset FROM pg_proc WHERE proname = 'unnest'",
        )
        .unwrap();
    assert_eq!(r.rows()[0][0].to_string(), "SETOF anyelement");
    assert_eq!(r.rows()[0][1].to_string(), "t");
}

/// The README's table between its markers; set KURA_UPDATE_README=1 to
/// rewrite it from the list.
#[test]
fn readme_function_table_is_the_lists() {
    const BEGIN: &str = "<!-- function table: made from kura_exec::expr::registry -->\n";
    const END: &str = "<!-- end of function table -->";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README has the function table's begin marker")
        + BEGIN.len();
    let end = readme[start..]
        .find(END)
        .expect("README has the end marker")
        + start;
    let table = markdown_table();
    if readme[start..end] != table {
        if std::env::var_os("KURA_UPDATE_README").is_some() {
            let updated = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, updated).unwrap();
        } else {
            panic!("README's function table differs from the function list; run this test with KURA_UPDATE_README=1");
        }
    }
}
