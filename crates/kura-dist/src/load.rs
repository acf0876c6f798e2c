//! `kura cluster load tpch`: TPC-H written as N shard databases (paper 003 §2, data spread
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
