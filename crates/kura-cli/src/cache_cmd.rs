//! `kura cache status | protect OBJECT | release`: LLC partitioning by memory object
//! (paper 000) from the command line; the work is in `kura::llc`.

use clap::Subcommand;
use kura::Database;

use crate::error::{CliError, CliResult};

#[derive(Subcommand)]
pub enum CacheCommand {
    /// resctrl/CAT on this machine (or why not, and what kura does instead), the
    /// LLC size, kura's groups and the protected object.
    Status {
        #[command(flatten)]
        db: crate::DbArgs,
    },
    /// Warm an object into the LLC (`index:NAME` or `column:TABLE.COLUMN`) and, with
    /// CAT, protect it for as long as this command runs (use `SET llc_protect` in
    /// the shell or under `kura serve` to keep it).
    Protect {
        /// The object: `index:NAME` or `column:TABLE.COLUMN`.
        object: String,
        /// Seconds to hold the protection before releasing it.
        #[arg(long, default_value_t = 0.0)]
        hold: f64,
        #[command(flatten)]
        db: crate::DbArgs,
    },
    /// Remove resctrl groups left by kura processes that are gone.
    Release {
        #[command(flatten)]
        db: crate::DbArgs,
    },
}

impl CacheCommand {
    pub fn db_args(&self) -> Option<crate::DbArgs> {
        match self {
            CacheCommand::Status { db }
            | CacheCommand::Protect { db, .. }
            | CacheCommand::Release { db } => Some(db.clone()),
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

pub fn run(cmd: &CacheCommand, open: impl FnOnce() -> CliResult<Database>) -> CliResult<()> {
    let db = open()?;
    let llc = db.llc();
    match cmd {
        CacheCommand::Status { .. } => {
            let s = llc.status();
            println!("{}", s.detection);
            println!("LLC: {}", mib(s.llc_bytes));
            if s.groups.is_empty() {
                println!("groups: none of kura's");
            } else {
                println!("groups: {}", s.groups.join(", "));
            }
            match s.protected {
                Some(p) => println!(
                    "protected: {} ({} pages, {})",
                    p.object,
                    p.pages,
                    mib(p.bytes)
                ),
                None => println!("protected: nothing"),
            }
        }
        CacheCommand::Protect { object, hold, .. } => {
            if object
                .get(..kura::llc::HASH_JOIN_PREFIX.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(kura::llc::HASH_JOIN_PREFIX))
            {
                return Err(CliError::Usage(format!(
                    "{object}: a hash join's table exists only while its query runs; use SET llc_protect = '{object}' in the session that runs it"
                )));
            }
            let p = llc.protect(db.storage(), object)?;
            println!(
                "warmed {}: {} pages, {}, {} cache lines read in {:.2} ms",
                p.object,
                p.pages,
                mib(p.bytes),
                p.lines,
                p.warm_time.as_secs_f64() * 1e3
            );
            match p.masks {
                Some(m) => println!(
                    "protected: its ways {:#x}; every other kura thread fills only {:#x}",
                    m.protected, m.others
                ),
                None => println!("not protected: {}", llc.status().detection),
            }
            if *hold > 0.0 {
                std::thread::sleep(std::time::Duration::from_secs_f64(*hold));
            }
            llc.release()?;
        }
        CacheCommand::Release { .. } => {
            let removed = llc.remove_stale_groups()?;
            if removed.is_empty() {
                println!("no stale kura groups");
            } else {
                println!("removed: {}", removed.join(", "));
            }
        }
    }
    Ok(())
}
