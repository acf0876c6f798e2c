//! A shard database: a kura database holding one slice of a cluster's data plus the record
//! of which slice it is (paper 003 §2: one server of the shared-nothing configuration).
//!
//! `kura_shard(shard, shards, cluster)` names the shard, and `kura_shard_tables(table_name,
//! split)` says how each table is spread: by a key column (a slice per shard, with the
//! partitioning it shares with other tables: [`crate::placement`]) or `replicated` (whole on
//! every shard). Both are written by `kura cluster load` and checked
//! when a worker starts and when each task arrives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kura::{Database, OpenOptions, Value};

use crate::error::{DistError, DistResult};

/// The table naming the shard.
pub const SHARD_TABLE: &str = "kura_shard";
/// The table listing the cluster's tables and how each is split.
pub const SHARD_TABLES_TABLE: &str = "kura_shard_tables";
/// `split` of a table every shard holds whole.
pub const REPLICATED: &str = "replicated";

/// Which slice of which cluster a shard database holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    pub shard: usize,
    pub shards: usize,
    pub cluster: String,
}

/// An open shard database.
pub struct ShardDb {
    pub db: Database,
    pub info: ShardInfo,
    pub path: PathBuf,
    /// Rows this shard's scans have sent, by table (what the cluster read where: a
    /// replicated table must be read on one shard only).
    served: Mutex<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for ShardDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ShardDb({} = shard {} of {})",
            self.path.display(),
            self.info.shard,
            self.info.shards
        )
    }
}

impl ShardDb {
    /// Opens a shard database, refusing a file that is not one.
    pub fn open(path: &Path, opts: OpenOptions) -> DistResult<ShardDb> {
        if !path.exists() {
            return Err(DistError::Cluster(format!(
                "{}: no such shard database",
                path.display()
            )));
        }
        let db = Database::open(path, opts)?;
        let info = read_info(&db).map_err(|e| {
            DistError::Cluster(format!(
                "{} is not a kura shard database (write shards with `kura cluster load`): {e}",
                path.display()
            ))
        })?;
        Ok(ShardDb {
            db,
            info,
            path: path.to_path_buf(),
            served: Mutex::new(BTreeMap::new()),
        })
    }

    /// Counts `rows` sent by a scan of `table`.
    pub fn count_served(&self, table: &str, rows: u64) {
        let mut served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        *served.entry(table.to_string()).or_default() += rows;
    }

    /// Rows the scans of `table` on this shard have sent since it was opened.
    pub fn rows_served(&self, table: &str) -> u64 {
        let served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        served.get(table).copied().unwrap_or(0)
    }

    /// The shard's tables and how each is split, by name.
    pub fn tables(&self) -> DistResult<Vec<(String, String)>> {
        let r = self.db.session().execute(&format!(
            "SELECT table_name, split FROM {SHARD_TABLES_TABLE} ORDER BY table_name"
        ))?;
        r.rows()
            .into_iter()
            .map(|row| match (&row[0], &row[1]) {
                (Value::Text(t), Value::Text(s)) => Ok((t.clone(), s.clone())),
                other => Err(DistError::Cluster(format!(
                    "{}: a bad row in {SHARD_TABLES_TABLE}: {other:?}",
                    self.path.display()
                ))),
            })
            .collect()
    }
}

fn read_info(db: &Database) -> DistResult<ShardInfo> {
    let r = db
        .session()
        .execute(&format!("SELECT shard, shards, cluster FROM {SHARD_TABLE}"))?;
    let rows = r.rows();
    match rows.as_slice() {
        [row] => match (&row[0], &row[1], &row[2]) {
            (Value::Integer(s), Value::Integer(n), Value::Text(c)) if *s >= 0 && *s < *n => {
                Ok(ShardInfo {
                    shard: *s as usize,
                    shards: *n as usize,
                    cluster: c.clone(),
                })
            }
            other => Err(DistError::Cluster(format!(
                "bad {SHARD_TABLE} row {other:?}"
            ))),
        },
        _ => Err(DistError::Cluster(format!(
            "{SHARD_TABLE} has {} rows, not 1",
            rows.len()
        ))),
    }
}

/// Records in `db` that it is `info`'s shard and how each of `tables` is split.
pub fn write_info(db: &Database, info: &ShardInfo, tables: &[(&str, &str)]) -> DistResult<()> {
    let q = |s: &str| s.replace('\'', "''");
    let mut sql = format!(
        "DROP TABLE IF EXISTS {SHARD_TABLE}; DROP TABLE IF EXISTS {SHARD_TABLES_TABLE};
         CREATE TABLE {SHARD_TABLE} (shard INTEGER NOT NULL, shards INTEGER NOT NULL, cluster VARCHAR NOT NULL);
         CREATE TABLE {SHARD_TABLES_TABLE} (table_name VARCHAR NOT NULL, split VARCHAR NOT NULL);
         INSERT INTO {SHARD_TABLE} VALUES ({}, {}, '{}');",
        info.shard,
        info.shards,
        q(&info.cluster)
    );
    for (t, split) in tables {
        sql.push_str(&format!(
            "INSERT INTO {SHARD_TABLES_TABLE} VALUES ('{}', '{}');",
            q(t),
            q(split)
        ));
    }
    db.session().execute_all(&sql)?;
    Ok(())
}
