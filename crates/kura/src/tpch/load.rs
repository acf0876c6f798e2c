//! `kura tpch load`: creates the eight tables with the specification's types and
//! fills them — generated straight into the loader, or from existing `.tbl` files.

use std::path::Path;
use std::time::{Duration, Instant};

use kura_storage::loader::{self, TextFormat};

use crate::error::{KuraError, KuraResult};
use crate::session::Session;
use crate::tpch::gen::{check_sf, table_chunks, table_chunks_part, TABLES};

/// The TPC-H DDL.
pub const SCHEMA_SQL: &str = include_str!("schema.sql");

/// The index set of paper 003 (`kura tpch load --indexes`).
pub const INDEX_SQL: &str = include_str!("indexes.sql");

/// Covering indexes for (A)–(D) and their variants (`kura tpch load --covering`),
/// built in addition to [`INDEX_SQL`]'s.
pub const COVERING_INDEX_SQL: &str = include_str!("covering.sql");

/// Builds [`INDEX_SQL`]'s indexes one by one; returns each name with its build time.
pub fn create_indexes(
    session: &mut Session,
    progress: &(dyn Fn(&str) + Sync),
) -> KuraResult<Vec<(String, Duration)>> {
    create_indexes_from(session, INDEX_SQL, progress)
}

/// Builds [`COVERING_INDEX_SQL`]'s covering indexes one by one.
pub fn create_covering_indexes(
    session: &mut Session,
    progress: &(dyn Fn(&str) + Sync),
) -> KuraResult<Vec<(String, Duration)>> {
    create_indexes_from(session, COVERING_INDEX_SQL, progress)
}

/// Runs the `CREATE INDEX` statements of `sql` one by one, timing each.
fn create_indexes_from(
    session: &mut Session,
    sql: &str,
    progress: &(dyn Fn(&str) + Sync),
) -> KuraResult<Vec<(String, Duration)>> {
    let mut out = Vec::new();
    for stmt in sql
        .split(';')
        .map(str::trim)
        .filter(|s| s.contains("CREATE"))
    {
        let name = stmt
            .split_whitespace()
            .skip_while(|w| *w != "INDEX")
            .nth(1)
            .unwrap_or("index")
            .to_string();
        progress(&name);
        let start = Instant::now();
        session.execute(stmt)?;
        out.push((name, start.elapsed()));
    }
    Ok(out)
}

/// What one table's load did.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub table: String,
    pub rows: u64,
    /// Bytes of `.tbl` text parsed.
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Where the rows come from.
pub enum Source<'a> {
    /// Generate at this scale factor.
    Generate(f64),
    /// Read `TABLE.tbl` files from this directory.
    Files(&'a Path),
    /// Generate part `part` (1-based) of `parts` at scale factor `sf` (one shard of a
    /// cluster), except the tables in `whole`, generated complete.
    GeneratePart {
        sf: f64,
        part: i32,
        parts: i32,
        whole: &'a [&'a str],
    },
}

/// Drops any existing TPC-H tables, recreates them and loads every table, all
/// in one transaction: a load that fails (a full disk, a bad file) leaves the
/// database as it was, never a schema of empty or partly loaded tables.
/// `progress(table, bytes_done)` reports as it goes.
pub fn load(
    session: &mut Session,
    source: Source<'_>,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> KuraResult<Vec<LoadReport>> {
    if let Source::Generate(sf) | Source::GeneratePart { sf, .. } = source {
        check_sf(sf)?;
    }
    if session.in_transaction() {
        return Err(KuraError::Invalid(
            "a TPC-H load runs in a transaction of its own; end the open one first".into(),
        ));
    }
    session.execute("BEGIN")?;
    let loaded = load_in_transaction(session, source, progress);
    match loaded {
        Ok(reports) => {
            let r = session.execute("COMMIT")?;
            if r.tag != "COMMIT" {
                return Err(KuraError::Internal(format!("the load ended in {}", r.tag)));
            }
            Ok(reports)
        }
        Err(e) => {
            session.execute("ROLLBACK")?;
            Err(e)
        }
    }
}

fn load_in_transaction(
    session: &mut Session,
    source: Source<'_>,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> KuraResult<Vec<LoadReport>> {
    let drop_sql: String = TABLES
        .iter()
        .map(|t| format!("DROP TABLE IF EXISTS {t};"))
        .collect();
    session.execute_all(&drop_sql)?;
    session.execute_all(SCHEMA_SQL)?;
    let fmt = TextFormat {
        delimiter: b'|',
        header: false,
        quoted: false,
        null: None,
        ..TextFormat::default()
    };
    let mut reports = Vec::new();
    for table in TABLES {
        let start = Instant::now();
        let bytes = std::sync::atomic::AtomicU64::new(0);
        let report = |b: u64| {
            bytes.store(b, std::sync::atomic::Ordering::Relaxed);
            progress(table, b)
        };
        let rows = session.tx().write(|txn| match &source {
            Source::Generate(sf) => {
                let mut chunks = table_chunks(table, *sf)?;
                let name = format!("{table} (generated)");
                Ok(loader::load_chunks(
                    txn,
                    table,
                    &name,
                    move || Ok(chunks()),
                    &fmt,
                    loader::default_threads(),
                    Some(&report),
                )?)
            }
            Source::GeneratePart {
                sf,
                part,
                parts,
                whole,
            } => {
                let mut chunks = if whole.contains(&table) {
                    table_chunks(table, *sf)?
                } else {
                    table_chunks_part(table, *sf, *part, *parts)?
                };
                let name = format!("{table} (generated, part {part} of {parts})");
                Ok(loader::load_chunks(
                    txn,
                    table,
                    &name,
                    move || Ok(chunks()),
                    &fmt,
                    loader::default_threads(),
                    Some(&report),
                )?)
            }
            Source::Files(dir) => {
                let path = dir.join(format!("{table}.tbl"));
                if !path.exists() {
                    return Err(KuraError::Invalid(format!(
                        "{}: no such file",
                        path.display()
                    )));
                }
                Ok(loader::load_file(
                    txn,
                    table,
                    &path,
                    &fmt,
                    loader::default_threads(),
                    Some(&report),
                )?)
            }
        })?;
        reports.push(LoadReport {
            table: table.to_string(),
            rows,
            bytes: bytes.load(std::sync::atomic::Ordering::Relaxed),
            elapsed: start.elapsed(),
        });
    }
    Ok(reports)
}
