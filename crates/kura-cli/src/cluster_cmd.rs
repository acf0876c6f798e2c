//! `kura cluster load tpch | worker | query | serve | up`: kura as a shared-nothing cluster of shards run
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
        #[arg(long, value_name = "FILE")]
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
        #[arg(long, value_delimiter = ',', required = true)]
        workers: Vec<String>,
        /// Print the distributed plan (stages and tasks) of each query instead of running it.
        #[arg(long)]
        explain: bool,
        /// The SQL text (several statements may be separated by `;`).
        sql: String,
    },
    /// Serve the cluster over the PostgreSQL wire protocol (psql, psycopg, JDBC): the front
    /// door. Stops on Ctrl-C.
    Serve {
        /// The workers, one per shard, any order: HOST:PORT,HOST:PORT,...
        #[arg(long, value_delimiter = ',', required = true)]
        workers: Vec<String>,
        /// Address to listen on (loopback: clients are let in without a password).
        #[arg(long, default_value = "127.0.0.1:5433")]
        listen: String,
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
        ClusterCommand::Serve { workers, listen } => serve(workers, listen),
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
            explain,
            sql,
        } => {
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
