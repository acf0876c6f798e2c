//! `kura cluster load tpch | table`: TPC-H (or any file's table) written as N shard databases (paper 003 §2, data spread
//! over the servers of a shared-nothing configuration).
//!
//! Each shard generates only its slice with tpchgen's `part`/`part_count`: ORDERS and
//! LINEITEM by ranges of order keys (every order's line items in its order's shard, so the
//! two are co-partitioned by order key), CUSTOMER by customer key, PART and PARTSUPP by part
//! key (co-partitioned), while REGION, NATION and SUPPLIER are replicated whole on every shard.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kura::tpch::load::Source;
use kura::{Database, OpenOptions};

use crate::error::{DistError, DistResult};
use crate::fragment::quote;
use crate::shard::{write_info, ShardInfo, REPLICATED};

/// Tables every shard holds whole.
pub const TPCH_REPLICATED: [&str; 3] = ["region", "nation", "supplier"];

/// How each TPC-H table is spread (the shard map's text, [`crate::placement::Placement`]):
/// its split key and partitioning, or `replicated`. PARTSUPP's generator takes its slice
/// by PART's rows, LINEITEM's by ORDERS' — hence the shared partitionings.
pub fn tpch_split(table: &str) -> &'static str {
    match table {
        "orders" => "o_orderkey:orderkey",
        "lineitem" => "l_orderkey:orderkey",
        "customer" => "c_custkey:custkey",
        "part" => "p_partkey:partkey",
        "partsupp" => "ps_partkey:partkey",
        _ => REPLICATED,
    }
}

/// The file of shard `k` in `dir`.
pub fn shard_path(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("shard{k}.db"))
}

/// What loading one shard did.
#[derive(Debug, Clone)]
pub struct ShardLoad {
    pub path: PathBuf,
    pub rows: u64,
    pub elapsed: Duration,
}

/// Writes `shards` shard databases of TPC-H at `sf` into `dir` (`shard0.db`, ...), one after
/// another (each load is parallel inside). `progress(shard, table)` reports as it goes.
pub fn load_tpch(
    sf: f64,
    shards: usize,
    dir: &Path,
    opts: &OpenOptions,
    progress: &(dyn Fn(usize, &str) + Sync),
) -> DistResult<Vec<ShardLoad>> {
    if shards < 1 || shards > i32::MAX as usize {
        return Err(DistError::Cluster(format!(
            "a cluster needs 1 or more shards, got {shards}"
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| DistError::Io {
        what: dir.display().to_string(),
        source: e,
    })?;
    let cluster = format!(
        "tpch-sf{sf}-{shards}x-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let mut out = Vec::new();
    for k in 0..shards {
        let path = shard_path(dir, k);
        if path.exists() {
            std::fs::remove_file(&path).map_err(|e| DistError::Io {
                what: path.display().to_string(),
                source: e,
            })?;
        }
        let start = Instant::now();
        let db = Database::open(&path, opts.clone())?;
        let mut session = db.session();
        let source = Source::GeneratePart {
            sf,
            part: k as i32 + 1,
            parts: shards as i32,
            whole: &TPCH_REPLICATED,
        };
        let reports = kura::tpch::load(&mut session, source, &|t, _| progress(k, t))?;
        let tables: Vec<(&str, &str)> = kura::tpch::gen::TABLES
            .iter()
            .map(|t| (*t, tpch_split(t)))
            .collect();
        write_info(
            &db,
            &ShardInfo {
                shard: k,
                shards,
                cluster: cluster.clone(),
            },
            &tables,
        )?;
        out.push(ShardLoad {
            path,
            rows: reports.iter().map(|r| r.rows).sum(),
            elapsed: start.elapsed(),
        });
    }
    Ok(out)
}

/// How `kura cluster load table` spreads a table over the shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// Whole on every shard.
    Replicated,
    /// Split by ranges of a column: each value on one shard (boundaries at the column's
    /// `k/N` quantiles, NULLs on shard 0).
    By(String),
}

/// One shard database of a cluster being loaded: its file, the open database, which shard
/// it is, and its tables with their splits.
struct OpenShard {
    path: PathBuf,
    db: Database,
    info: ShardInfo,
    tables: Vec<(String, String)>,
}

/// The shard databases of the cluster in `dir`, or `shards` new ones (the cluster named
/// after `table`) when `dir` holds none.
fn cluster_in(
    dir: &Path,
    shards: Option<usize>,
    table: &str,
    opts: &OpenOptions,
) -> DistResult<Vec<OpenShard>> {
    let first = shard_path(dir, 0);
    if first.exists() {
        let probe = crate::shard::ShardDb::open(&first, opts.clone())?;
        let n = probe.info.shards;
        drop(probe);
        if let Some(s) = shards {
            if s != n {
                return Err(DistError::Cluster(format!(
                    "{} holds a cluster of {n} shards, --shards says {s}",
                    dir.display()
                )));
            }
        }
        let mut out = Vec::new();
        for k in 0..n {
            let path = shard_path(dir, k);
            let shard = crate::shard::ShardDb::open(&path, opts.clone())?;
            if shard.info.shard != k || shard.info.shards != n {
                return Err(DistError::Cluster(format!(
                    "{} is shard {} of {}, not shard {k} of {n}",
                    path.display(),
                    shard.info.shard,
                    shard.info.shards
                )));
            }
            let tables = shard.tables()?;
            out.push(OpenShard {
                path,
                db: shard.db,
                info: shard.info,
                tables,
            });
        }
        return Ok(out);
    }
    let n = shards.ok_or_else(|| {
        DistError::Cluster(format!(
            "{} holds no cluster: say how many shards to make (--shards N)",
            dir.display()
        ))
    })?;
    if n < 1 {
        return Err(DistError::Cluster(format!(
            "a cluster needs 1 or more shards, got {n}"
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| DistError::Io {
        what: dir.display().to_string(),
        source: e,
    })?;
    let cluster = format!(
        "{table}-{n}x-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    (0..n)
        .map(|k| {
            let path = shard_path(dir, k);
            let db = Database::open(&path, opts.clone())?;
            let info = ShardInfo {
                shard: k,
                shards: n,
                cluster: cluster.clone(),
            };
            write_info(&db, &info, &[])?;
            Ok(OpenShard {
                path,
                db,
                info,
                tables: Vec::new(),
            })
        })
        .collect()
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `kura cluster load table`: the rows of `file` (any file kura reads as a table: CSV, TSV,
/// Parquet, JSON — its columns and types as kura infers them) as the new table `table` of the
/// cluster in `dir` (made with `shards` shards when `dir` holds none), spread as `spread`
/// says; the shard map records it. Each shard reads the file and keeps its slice.
pub fn load_table(
    table: &str,
    file: &Path,
    spread: &Spread,
    dir: &Path,
    shards: Option<usize>,
    opts: &OpenOptions,
) -> DistResult<Vec<ShardLoad>> {
    if !file.exists() {
        return Err(DistError::Cluster(format!(
            "{}: no such file",
            file.display()
        )));
    }
    let name = table.to_ascii_lowercase();
    let shards_dbs = cluster_in(dir, shards, &name, opts)?;
    let n = shards_dbs.len();
    if shards_dbs[0].tables.iter().any(|(t, _)| *t == name) {
        return Err(DistError::Cluster(format!(
            "the cluster in {} has a table {name} already",
            dir.display()
        )));
    }
    let source = quoted(&file.display().to_string());
    // The slice predicates: ranges between the column's quantiles, computed once (on shard
    // 0) so every shard cuts at the same values.
    let (split, predicates): (String, Vec<String>) = match spread {
        Spread::Replicated => (REPLICATED.to_string(), vec!["TRUE".to_string(); n]),
        Spread::By(column) => {
            let c = quote(&column.to_ascii_lowercase());
            let cuts: Vec<String> = (1..n)
                .map(|k| format!("percentile_disc({k}.0 / {n}) WITHIN GROUP (ORDER BY {c})"))
                .collect();
            let bound = |k: usize| format!("(SELECT {} FROM {source})", cuts[k - 1]);
            let preds = (0..n)
                .map(|k| match (k, n) {
                    (_, 1) => "TRUE".to_string(),
                    (0, _) => format!("({c} IS NULL OR {c} < {})", bound(1)),
                    (k, n) if k == n - 1 => format!("{c} >= {}", bound(k)),
                    (k, _) => format!("({c} >= {} AND {c} < {})", bound(k), bound(k + 1)),
                })
                .collect();
            (column.to_ascii_lowercase(), preds)
        }
    };
    let mut out = Vec::new();
    for (shard, predicate) in shards_dbs.into_iter().zip(predicates) {
        let OpenShard {
            path,
            db,
            info,
            tables,
        } = shard;
        let start = Instant::now();
        let mut session = db.session();
        session.execute(&format!(
            "CREATE TABLE {} AS SELECT * FROM {source} WHERE {predicate}",
            quote(&name)
        ))?;
        let counted = session.execute(&format!("SELECT count(*) FROM {}", quote(&name)))?;
        let rows = match counted.rows().first().and_then(|r| r.first()) {
            Some(kura::Value::BigInt(n)) => *n as u64,
            _ => 0,
        };
        let mut all: Vec<(String, String)> = tables;
        all.push((name.clone(), split.clone()));
        let refs: Vec<(&str, &str)> = all.iter().map(|(t, s)| (t.as_str(), s.as_str())).collect();
        write_info(&db, &info, &refs)?;
        out.push(ShardLoad {
            path,
            rows,
            elapsed: start.elapsed(),
        });
    }
    Ok(out)
}
