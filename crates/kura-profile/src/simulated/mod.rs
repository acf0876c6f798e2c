//! The simulated path of the memory profiler, for machines without hardware
//! performance counters: record the workload's memory accesses under Valgrind's
//! lackey, replay them through kura-cache's model of this machine's caches, and
//! attribute the simulated misses to functions, source lines, kura's named memory
//! objects and 3C classes.
//!
//! The traced program is a kura executable that understands the child protocol
//! ([`child_args`]): it announces its marker page ([`child::handshake`]), runs each
//! query as one access class between the region markers, and dumps its registry
//! log ([`child::write_dump`]).

pub mod child;
pub mod lackey;
pub mod record;
pub mod replay;
pub mod report;
pub mod symbols;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

pub use child::Dump;
pub use lackey::{ParseStats, Parser, TraceAccess};
pub use record::{record, RecordOptions, Recording};
pub use replay::Replay;
pub use report::SimulatedProfile;

use crate::error::ProfileError;

/// What to profile and how.
#[derive(Clone, Debug)]
pub struct ProfileOptions {
    /// The database (built beforehand: loading is not traced).
    pub db: PathBuf,
    /// The queries; each is one access class (0, 1, ...) of the trace.
    pub sql: Vec<String>,
    /// Where the cache geometry is described (`kura_cache::cpu::SYSFS_CACHE_DIR`).
    pub geometry_root: PathBuf,
    /// Rows per table.
    pub top: usize,
    /// The kura executable to trace, and the words that select its child mode
    /// (the protocol's arguments follow them).
    pub program: PathBuf,
    pub child_command: Vec<OsString>,
    /// The Valgrind executable.
    pub valgrind: PathBuf,
    /// Run the queries once before the region, so the profile sees a warm buffer
    /// pool (the cache model still starts empty).
    pub warmup: bool,
}

impl ProfileOptions {
    /// Options with the defaults: this machine's geometry, top 10, `valgrind` on
    /// the PATH, no warm-up.
    pub fn new(
        db: PathBuf,
        sql: Vec<String>,
        program: PathBuf,
        child_command: Vec<OsString>,
    ) -> Self {
        Self {
            db,
            sql,
            geometry_root: PathBuf::from(kura_cache::cpu::SYSFS_CACHE_DIR),
            top: 10,
            program,
            child_command,
            valgrind: PathBuf::from("valgrind"),
            warmup: false,
        }
    }
}

/// The child protocol's arguments: `--db DB --dump FILE [--warmup] -- SQL...`.
pub fn child_args(opts: &ProfileOptions, dump: &std::path::Path) -> Vec<OsString> {
    let mut args = opts.child_command.clone();
    args.extend([
        "--db".into(),
        opts.db.clone().into_os_string(),
        "--dump".into(),
        dump.to_path_buf().into_os_string(),
    ]);
    if opts.warmup {
        args.push("--warmup".into());
    }
    args.push("--".into());
    args.extend(opts.sql.iter().map(OsString::from));
    args
}

/// Records the queries under lackey, replays the trace through the cache model
/// and builds the report.
pub fn profile(opts: &ProfileOptions) -> Result<SimulatedProfile, ProfileError> {
    let start = Instant::now();
    if opts.sql.is_empty() {
        return Err(ProfileError::Invalid("no query to profile".into()));
    }
    if !opts.db.exists() {
        return Err(ProfileError::Invalid(format!(
            "database {} does not exist",
            opts.db.display()
        )));
    }
    // Fail on the geometry before the slow part.
    let mut replay = Replay::new(&opts.geometry_root)?;
    let dump = std::env::temp_dir().join(format!(
        "kura-trace-{}-{}.json",
        std::process::id(),
        start.elapsed().as_nanos()
    ));
    let rec_opts = RecordOptions {
        valgrind: opts.valgrind.clone(),
        program: opts.program.clone(),
        args: child_args(opts, &dump),
        dump: dump.clone(),
        batch: 1 << 16,
    };
    let recording = record(&rec_opts, |batch| replay.feed(batch));
    let _ = std::fs::remove_file(&dump);
    let recording = recording?;
    if recording.stats.regions == 0 {
        return Err(ProfileError::Invalid(
            "the traced run never started its profiled region".into(),
        ));
    }
    Ok(SimulatedProfile::build(
        replay,
        &recording,
        &opts.sql,
        opts.top.max(1),
        start.elapsed().as_secs_f64(),
    ))
}
