//! `kura cluster load tpch | table, worker | query | serve | up`: kura as a shared-nothing cluster of shards run
//! by datafusion-distributed (paper 003 §2). Parses and prints; the work is in kura-dist.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use kura::OpenOptions;
use kura_dist::DistError;
use kura_server::{parse_listen, ServerConfig};

use crate::error::{CliError, CliResult};

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Write a cluster's shard databases.
    Load {
        #[command(subcommand)]
        what: ClusterLoad,
    },
    /// Serve one shard database as a datafusion-distributed (Arrow Flight) worker.
    Worker {
        /// The shard database (written by `kura cluster load`).
        #[arg(long, value_name = "FILE", visible_alias = "db")]
        shard_db: PathBuf,
        /// Address to listen on, e.g. 127.0.0.1:50051 (port 0 picks a free one).
        #[arg(long, value_name = "HOST:PORT")]
        listen: String,
        /// Buffer pool size of the shard database, e.g. 512MB (default: a quarter of RAM).
        #[arg(long, value_parser = crate::parse_size_arg)]
        buffer: Option<u64>,
    },
    /// Run SQL on the cluster (DataFusion's SQL, planned by datafusion-distributed): the
    /// statements in order, printing the last query's rows.
    Query {
        /// The workers, one per shard, any order: HOST:PORT,HOST:PORT,...
        #[arg(long, value_delimiter = ',', required_unless_present = "config")]
        workers: Vec<String>,
        /// A cluster file (TOML) naming the workers: `workers = ["HOST:PORT", ...]`.
        #[arg(long, value_name = "FILE", conflicts_with = "workers")]
        config: Option<PathBuf>,
        /// Print the distributed plan (stages and tasks) of each query instead of running it.
        #[arg(long)]
        explain: bool,
        /// The SQL text (several statements may be separated by `;`).
        #[arg(required_unless_present = "command")]
        sql: Option<String>,
        /// The SQL text, as `psql -c` takes it (instead of the argument).
        #[arg(
            short = 'c',
            long = "command",
            value_name = "SQL",
            conflicts_with = "sql"
        )]
        command: Option<String>,
    },
    /// Serve the cluster over the PostgreSQL wire protocol (psql, psycopg, JDBC): the front
    /// door. Stops on Ctrl-C.
    Serve {
        /// The workers, one per shard, any order: HOST:PORT,HOST:PORT,...
        #[arg(long, value_delimiter = ',', required_unless_present = "config")]
        workers: Vec<String>,
        /// A cluster file (TOML): `workers = ["HOST:PORT", ...]` and, optionally,
        /// `listen = "HOST:PORT"` (the command line's --listen wins).
        #[arg(long, value_name = "FILE", conflicts_with = "workers")]
        config: Option<PathBuf>,
        /// Address to listen on (loopback: clients are let in without a password)
        /// [default: the file's, or 127.0.0.1:5433].
        #[arg(long)]
        listen: Option<String>,
    },
    /// Try a cluster on this machine: load TPC-H into N shards (unless DIR has them), start
    /// N worker processes on loopback ports and a front door; Ctrl-C stops them all.
    Up {
        /// Number of local workers (and shards), 1 or more.
        #[arg(long)]
        local: usize,
        /// TPC-H scale factor of the shards.
        #[arg(long, default_value_t = 0.1)]
        sf: f64,
        /// Directory of the shard databases.
        #[arg(long, default_value = "kura-cluster")]
        dir: PathBuf,
        /// The front door's address.
        #[arg(long, default_value = "127.0.0.1:5433")]
        listen: String,
        /// Buffer pool size of each worker, e.g. 512MB (default: a quarter of RAM each).
        #[arg(long, value_parser = crate::parse_size_arg)]
        buffer: Option<u64>,
    },
}

#[derive(Subcommand)]
pub enum ClusterLoad {
    /// TPC-H: ORDERS and LINEITEM split by order key (co-partitioned), CUSTOMER, PART and
    /// PARTSUPP by their keys, REGION, NATION and SUPPLIER replicated on every shard.
    Tpch {
        /// Scale factor.
        #[arg(long)]
        sf: f64,
        /// Number of shards (1 or more, one worker each).
        #[arg(long)]
        shards: usize,
        /// Directory for shard0.db, shard1.db, ...
        #[arg(long)]
        dir: PathBuf,
    },
    /// Any file kura reads as a table (CSV, TSV, Parquet, JSON) as a new table of the cluster
    /// in --dir (made with --shards shards if the directory holds none): split by ranges of
    /// a column (--by; each value on one shard) or whole on every shard (--replicated).
    Table {
        /// The new table's name.
        name: String,
        /// The file (its columns and types as kura infers them).
        file: PathBuf,
        /// Split by this column.
        #[arg(
            long,
            conflicts_with = "replicated",
            required_unless_present = "replicated"
        )]
        by: Option<String>,
        /// Every shard holds the whole table.
        #[arg(long)]
        replicated: bool,
        /// Shards of a new cluster (an existing one's count when given must match).
        #[arg(long)]
        shards: Option<usize>,
        /// Directory of the shard databases (shard0.db, shard1.db, ...).
        #[arg(long)]
        dir: PathBuf,
    },
}

fn load_tpch(sf: f64, shards: usize, dir: &Path) -> CliResult<()> {
    let loads = kura_dist::load::load_tpch(sf, shards, dir, &OpenOptions::default(), &|k, t| {
        eprint!("\rshard {k}: {t:<10}")
    })?;
    eprintln!();
    for l in loads {
        println!(
            "{}: {} rows in {:.2} s",
            l.path.display(),
            l.rows,
            l.elapsed.as_secs_f64()
        );
    }
    Ok(())
}

/// The front door's address when neither the command line nor a cluster file gives one.
const DEFAULT_LISTEN: &str = "127.0.0.1:5433";

/// A cluster file: the workers, and the front door's address.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    workers: Vec<String>,
    listen: Option<String>,
}

/// The workers given on the command line, or those of the cluster file `config` (with its
/// front door address).
fn workers_of(given: &[String], config: Option<&Path>) -> CliResult<(Vec<String>, Option<String>)> {
    let Some(path) = config else {
        return Ok((given.to_vec(), None));
    };
    let text = std::fs::read_to_string(path)
        .map_err(CliError::io_in(&format!("reading {}", path.display())))?;
    let file: ClusterFile =
        toml::from_str(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    if file.workers.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: `workers` names no worker (one HOST:PORT per shard)",
            path.display()
        )));
    }
    Ok((file.workers, file.listen))
}

/// Serves the front door until Ctrl-C, saying how to connect.
fn serve(workers: &[String], listen: &str) -> CliResult<()> {
    let config = ServerConfig::new(parse_listen(listen).map_err(DistError::from)?);
    let summary = kura_dist::frontdoor::serve_blocking(workers, config, |addr, cluster| {
        eprintln!(
            "kura cluster serve: cluster {} of {} shards on {addr}; connect with \
             psql -h {} -p {} -U kura kura; Ctrl-C stops it",
            cluster.name(),
            cluster.workers().len(),
            addr.ip(),
            addr.port()
        );
    })?;
    eprintln!(
        "kura cluster serve: shut down after {} connections",
        summary.connections
    );
    Ok(())
}

pub fn run(cmd: &ClusterCommand) -> CliResult<()> {
    match cmd {
        ClusterCommand::Load {
            what: ClusterLoad::Tpch { sf, shards, dir },
        } => load_tpch(*sf, *shards, dir),
        ClusterCommand::Load {
            what:
                ClusterLoad::Table {
                    name,
                    file,
                    by,
                    replicated: _,
                    shards,
                    dir,
                },
        } => {
            let spread = match by {
                Some(c) => kura_dist::load::Spread::By(c.clone()),
                None => kura_dist::load::Spread::Replicated,
            };
            let loads = kura_dist::load::load_table(
                name,
                file,
                &spread,
                dir,
                *shards,
                &OpenOptions::default(),
            )?;
            for l in loads {
                println!(
                    "{}: {} rows of {name} in {:.2} s",
                    l.path.display(),
                    l.rows,
                    l.elapsed.as_secs_f64()
                );
            }
            Ok(())
        }
        ClusterCommand::Serve {
            workers,
            config,
            listen,
        } => {
            let (workers, file_listen) = workers_of(workers, config.as_deref())?;
            let listen = listen
                .clone()
                .or(file_listen)
                .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
            serve(&workers, &listen)
        }
        ClusterCommand::Up {
            local,
            sf,
            dir,
            listen,
            buffer,
        } => {
            if *local < 1 {
                return Err(CliError::Usage(format!(
                    "--local {local}: a kura cluster has 1 or more shards, one worker each"
                )));
            }
            let dbs: Vec<PathBuf> = (0..*local)
                .map(|k| kura_dist::load::shard_path(dir, k))
                .collect();
            if dbs.iter().all(|p| p.exists()) {
                eprintln!(
                    "kura cluster up: using the {local} shards in {} (remove it to load anew)",
                    dir.display()
                );
            } else {
                load_tpch(*sf, *local, dir)?;
            }
            let exe = std::env::current_exe().map_err(CliError::io_in("finding kura's binary"))?;
            let workers = kura_dist::local::LocalWorkers::start(&exe, &dbs, *buffer)?;
            for (k, (addr, pid)) in workers.addrs.iter().zip(workers.pids()).enumerate() {
                eprintln!("kura cluster up: worker of shard {k} on {addr} (pid {pid})");
            }
            // The workers stop when `workers` is dropped, after the front door.
            let served = serve(&workers.addrs, listen);
            drop(workers);
            served
        }
        ClusterCommand::Worker {
            shard_db,
            listen,
            buffer,
        } => {
            let opts = OpenOptions {
                buffer_bytes: *buffer,
                ..OpenOptions::default()
            };
            kura_dist::worker::run_worker(shard_db, listen, opts, |addr, info| {
                eprintln!(
                    "kura cluster worker: shard {} of {} ({}) of cluster {} on {addr}",
                    info.shard,
                    info.shards,
                    shard_db.display(),
                    info.cluster
                );
            })?;
            Ok(())
        }
        ClusterCommand::Query {
            workers,
            config,
            explain,
            sql,
            command,
        } => {
            let sql = sql.as_deref().or(command.as_deref()).unwrap_or_default();
            let (workers, _) = workers_of(workers, config.as_deref())?;
            let workers = &workers;
            if *explain {
                let plan = kura_dist::explain_blocking(workers, sql)?;
                println!("{plan}");
                return Ok(());
            }
            let (batches, took) = kura_dist::query_blocking(workers, sql)?;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            println!("{}", kura_dist::format_batches(&batches)?);
            eprintln!("({rows} rows, {:.3} s)", took.as_secs_f64());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_file_names_the_workers_and_the_front_door() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cluster.toml");
        std::fs::write(
            &file,
            "workers = [\"h1:1\", \"h2:2\"]\nlisten = \"127.0.0.1:6000\"\n",
        )
        .unwrap();
        let (workers, listen) = workers_of(&[], Some(&file)).unwrap();
        assert_eq!(workers, ["h1:1", "h2:2"]);
        assert_eq!(listen.as_deref(), Some("127.0.0.1:6000"));
        let given = ["h3:3".to_string()];
        assert_eq!(workers_of(&given, None).unwrap(), (given.to_vec(), None));
        for (text, says) in [
            ("workers = []", "names no worker"),
            ("worker = [\"h\"]", "unknown field `worker`"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = workers_of(&[], Some(&file)).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let e = workers_of(&[], Some(&dir.path().join("none.toml"))).unwrap_err();
        assert!(e.to_string().contains("none.toml"), "{e}");
    }
}
