//! The sqllogictest suite: every `.slt` file under `tests/slt/` (recursively) runs
//! against a fresh kura database of its own, through `Database` / `Session` — the
//! same path every front end takes.
//!
//! Conventions of the files: `onlyif kura` marks records for kura alone (its own
//! settings and syntax), `$DATA_DIR` (after `control substitution on`) is the
//! repository's `tests/data`, NULL prints as `NULL`, the empty string as `(empty)`,
//! column types are I (integers), R (DOUBLE, DECIMAL) and T (the rest) and are checked.
//! `KURA_SLT=part` runs only the files whose path contains `part`; `KURA_SLT_DIR`
//! runs the files of another directory.
//!
//! Files under a `tpch/` directory (the differential tester's regressions, see
//! `tests/difftest`) run against TPC-H SF 0.01 with paper 003's indexes, in an 8 MB
//! buffer, and compare as the tester does: numbers within a relative 1e-9 or an
//! absolute 1e-6 (the expected rows are DuckDB's), column types unchecked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use kura::{DataType, Database, KuraError, OpenOptions, Session, Value};
use sqllogictest::{DBOutput, DefaultColumnType, Record, Runner};

/// One connection of a test file: a session on the file's database.
struct KuraConnection {
    session: Session,
}

impl sqllogictest::DB for KuraConnection {
    type Error = KuraError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, KuraError> {
        let result = self.session.execute(sql)?;
        if !result.has_rows() {
            return Ok(DBOutput::StatementComplete(affected_rows(&result.tag)));
        }
        let types = result
            .columns
            .iter()
            .map(|c| column_type(c.data_type))
            .collect();
        let rows = result
            .rows()
            .iter()
            .map(|row| {
                row.iter()
                    .zip(&result.columns)
                    .map(|(v, c)| format_value(v, c.data_type))
                    .collect()
            })
            .collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "kura"
    }

    fn error_sql_state(err: &KuraError) -> Option<String> {
        Some(err.sqlstate().to_string())
    }
}

/// The sqllogictest type letter of a column.
fn column_type(data_type: DataType) -> DefaultColumnType {
    match data_type {
        DataType::SmallInt | DataType::Integer | DataType::BigInt => DefaultColumnType::Integer,
        DataType::Double | DataType::Decimal { .. } => DefaultColumnType::FloatingPoint,
        DataType::Boolean
        | DataType::Date
        | DataType::Timestamp
        | DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Array(_)
        | DataType::Vector(_)
        | DataType::Uuid
        | DataType::Bytea
        | DataType::Interval => DefaultColumnType::Text,
        DataType::Json | DataType::Jsonb => DefaultColumnType::Text,
    }
}

/// A value as the `.slt` files write it. The runner compares rows with whitespace
/// collapsed, so an empty (or, for CHAR, all-blank) string needs a visible form.
fn format_value(value: &Value, data_type: DataType) -> String {
    match value {
        Value::Null => "NULL".to_string(),
        Value::Text(s) => {
            let s = if matches!(data_type, DataType::Char(_)) {
                s.trim_end_matches(' ')
            } else {
                s.as_str()
            };
            if s.trim().is_empty() {
                "(empty)".to_string()
            } else {
                s.to_string()
            }
        }
        other => other.to_string(),
    }
}

/// Rows a command affected, from its tag (`INSERT 0 3`, `COPY 5`); 0 for DDL.
fn affected_rows(tag: &str) -> u64 {
    tag.split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            slt_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "slt") {
            out.push(p);
        }
    }
}

/// A database directory that removes itself.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> ScratchDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kura-slt-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Outcome of one file: records run and the failures (location and message).
struct FileOutcome {
    records: usize,
    failures: Vec<String>,
}

/// Runs every record of one file, going on after a failing record so one run lists
/// all of a file's failures.
fn run_file(path: &Path, data_dir: &Path) -> FileOutcome {
    let scratch = ScratchDir::new();
    let tpch = path.components().any(|c| c.as_os_str() == "tpch");
    let opts = OpenOptions {
        buffer_bytes: Some(if tpch { 8 << 20 } else { 64 << 20 }),
        buffered_io: true,
        ..OpenOptions::default()
    };
    let db = match Database::open(&scratch.0.join("test.kura"), opts) {
        Ok(db) => db,
        Err(e) => {
            return FileOutcome {
                records: 0,
                failures: vec![format!("{}: cannot open a database: {e}", path.display())],
            }
        }
    };
    let records = match sqllogictest::parse_file::<DefaultColumnType>(path) {
        Ok(r) => r,
        Err(e) => {
            return FileOutcome {
                records: 0,
                failures: vec![format!("{}: {e}", path.display())],
            }
        }
    };
    if tpch {
        if let Err(e) = load_tpch(&db) {
            return FileOutcome {
                records: 0,
                failures: vec![format!("{}: cannot load TPC-H: {e}", path.display())],
            };
        }
    }
    let mut runner = Runner::new(move || {
        let session = db.session();
        async move { Ok::<_, KuraError>(KuraConnection { session }) }
    });
    runner.add_label("kura");
    runner.set_var("DATA_DIR".to_string(), data_dir.display().to_string());
    if tpch {
        runner.with_validator(tolerant_validator);
    } else {
        runner.with_column_validator(sqllogictest::strict_column_validator);
    }
    let mut outcome = FileOutcome {
        records: 0,
        failures: Vec::new(),
    };
    for record in records {
        let counts = matches!(record, Record::Statement { .. } | Record::Query { .. });
        UNORDERED.with(|u| {
            u.set(matches!(
                &record,
                Record::Query {
                    expected: sqllogictest::QueryExpect::Results {
                        sort_mode: Some(sqllogictest::SortMode::RowSort),
                        ..
                    },
                    ..
                }
            ))
        });
        if let Err(e) = runner.run(record) {
            outcome.failures.push(format!("{}", e.display(false)));
        }
        outcome.records += usize::from(counts);
    }
    outcome
}

/// TPC-H SF 0.01 (generated, as `kura tpch load --sf 0.01`) and paper 003's indexes.
fn load_tpch(db: &Database) -> Result<(), KuraError> {
    let mut session = db.session();
    kura::tpch::load(
        &mut session,
        kura::tpch::load::Source::Generate(0.01),
        &|_, _| {},
    )?;
    kura::tpch::load::create_indexes(&mut session, &|_| {})?;
    Ok(())
}

thread_local! {
    /// Whether the record being run is a `rowsort` query (its rows compare as a multiset).
    static UNORDERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The differential tester's comparison: row by row, word by word, numbers within a
/// tolerance; a `rowsort` query's rows sorted on both sides by the same numeric-aware key.
fn tolerant_validator(
    _normalizer: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    let mut actual: Vec<Vec<String>> = actual
        .iter()
        .map(|row| {
            row.join(" ")
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .collect();
    let mut expected: Vec<Vec<String>> = expected
        .iter()
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .collect();
    if UNORDERED.with(|u| u.get()) {
        actual.sort_by(|a, b| row_order(a, b));
        expected.sort_by(|a, b| row_order(a, b));
    }
    actual.len() == expected.len()
        && actual
            .iter()
            .zip(&expected)
            .all(|(a, e)| a.len() == e.len() && a.iter().zip(e).all(|(x, y)| same_word(x, y)))
}

fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-6 || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => false,
    }
}

fn row_order(a: &[String], b: &[String]) -> std::cmp::Ordering {
    let key = |w: &String| match w.parse::<f64>() {
        Ok(x) => (0, x, String::new()),
        Err(_) => (1, 0.0, w.clone()),
    };
    for (x, y) in a.iter().zip(b) {
        let (kx, ky) = (key(x), key(y));
        let o =
            kx.0.cmp(&ky.0)
                .then(kx.1.total_cmp(&ky.1))
                .then_with(|| kx.2.cmp(&ky.2));
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

#[test]
fn sqllogictest_files() {
    let root = repo_root();
    let dir = std::env::var_os("KURA_SLT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("tests/slt"));
    let data_dir = root
        .join("tests/data")
        .canonicalize()
        .expect("tests/data exists");
    let filter = std::env::var("KURA_SLT").unwrap_or_default();
    let mut files = Vec::new();
    slt_files(&dir, &mut files);
    files.retain(|f| f.to_string_lossy().contains(&filter));
    assert!(
        !files.is_empty(),
        "no .slt files under {} matching {filter:?}",
        dir.display()
    );

    let mut failed_files = Vec::new();
    for file in &files {
        let outcome = run_file(file, &data_dir);
        let name = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        let failed = outcome.failures.len();
        println!(
            "{name}: {} of {} records passed",
            outcome.records - failed.min(outcome.records),
            outcome.records
        );
        for f in &outcome.failures {
            println!("  {}", f.replace('\n', "\n    "));
        }
        if failed > 0 {
            failed_files.push(format!("{name} ({failed} failing)"));
        }
    }
    assert!(
        failed_files.is_empty(),
        "sqllogictest failures in: {}",
        failed_files.join(", ")
    );
}

#[test]
fn values_print_as_the_files_write_them() {
    assert_eq!(format_value(&Value::Null, DataType::Integer), "NULL");
    assert_eq!(
        format_value(&Value::Text(String::new()), DataType::Varchar(None)),
        "(empty)"
    );
    assert_eq!(
        format_value(&Value::Text("ab   ".into()), DataType::Char(5)),
        "ab"
    );
    assert_eq!(
        format_value(&Value::Text("     ".into()), DataType::Char(5)),
        "(empty)"
    );
    assert_eq!(
        format_value(
            &Value::Decimal(1250, 2),
            DataType::Decimal {
                precision: 10,
                scale: 2
            }
        ),
        "12.50"
    );
    assert_eq!(format_value(&Value::Boolean(true), DataType::Boolean), "t");
    assert_eq!(column_type(DataType::BigInt), DefaultColumnType::Integer);
    assert_eq!(
        column_type(DataType::Decimal {
            precision: 15,
            scale: 2
        }),
        DefaultColumnType::FloatingPoint
    );
    assert_eq!(column_type(DataType::Date), DefaultColumnType::Text);
    assert_eq!(affected_rows("INSERT 0 3"), 3);
    assert_eq!(affected_rows("COPY 150000"), 150000);
    assert_eq!(affected_rows("CREATE TABLE"), 0);
}
