//! Traces any program — and every process it forks or executes — under Valgrind's
//! lackey, and replays each process's accesses through its own model of this
//! machine's data caches as the trace is written (paper 002 on other programs,
//! where the machine has no hardware counters).
//!
//! Each process writes its own log (`--log-file=DIR/lackey.%p`): one pipe shared
//! by forked processes would interleave their records mid-line. The logs are
//! read as they grow and the part already read is given back to the file system
//! (hole punching; modules `reader` and `log`), so a long run needs little
//! disk. The process's memory map is
//! read from `/proc` while it runs, to name its instructions afterwards.
//!
//! A caller may open the profiled region late ([`Tracing::count_from_now`]):
//! what each process logged before that still goes through its caches (they are
//! warm when counting starts) but is not counted.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kura_cache::cpu::Hierarchy;

use crate::error::ProfileError;
use crate::simulated::record::check_valgrind;

use super::process::Gathered;
use super::reader::{Reader, LOG_PREFIX};

pub use super::process::{IpCounts, ProcessTrace};

/// How to run the traced program.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    pub valgrind: PathBuf,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Where the cache geometry is described (sysfs layout).
    pub geometry_root: PathBuf,
    /// A directory for the logs while they are read (created, removed at the end).
    pub scratch: PathBuf,
    /// Count from the start (else from [`Tracing::count_from_now`]).
    pub count_from_start: bool,
    /// Run as this user and group (e.g. a server that refuses to run as root).
    pub run_as: Option<(u32, u32)>,
    /// Where the program's standard output and error go (inherited when `None`,
    /// else appended to this file).
    pub output: Option<PathBuf>,
}

/// A finished trace.
#[derive(Clone, Debug)]
pub struct ForeignTrace {
    pub processes: Vec<ProcessTrace>,
    /// Names of the modelled levels, e.g. `L1d`, `L2`, `L3 (LLC)`, and their geometry.
    pub level_names: Vec<String>,
    pub level_geometry: Vec<String>,
    pub status: ExitStatus,
    pub elapsed: Duration,
    /// Bytes of log read.
    pub log_bytes: u64,
}

/// A traced program that is running.
pub struct Tracing {
    child: Child,
    count: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
    reader: Option<JoinHandle<Result<Gathered, ProfileError>>>,
    scratch: PathBuf,
    start: Instant,
}

/// Starts the program under lackey.
pub fn start(opts: &TraceOptions) -> Result<Tracing, ProfileError> {
    check_valgrind(&opts.valgrind)?;
    let model = || {
        Hierarchy::from_sysfs(&opts.geometry_root, false).map_err(|e| {
            ProfileError::Unavailable(format!(
                "cannot read the cache geometry under {}: {e}",
                opts.geometry_root.display()
            ))
        })
    };
    // Fail on the geometry before starting anything.
    let first = model()?;
    let _ = std::fs::remove_dir_all(&opts.scratch);
    std::fs::create_dir_all(&opts.scratch)
        .map_err(|e| ProfileError::io(format!("creating {}", opts.scratch.display()), e))?;
    let mut cmd = Command::new(&opts.valgrind);
    cmd.arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg("--trace-children=yes")
        .arg(format!(
            "--log-file={}/{LOG_PREFIX}%p",
            opts.scratch.display()
        ))
        .arg(&opts.program)
        .args(&opts.args)
        .stdin(Stdio::null());
    if let Some(path) = &opts.output {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ProfileError::io(format!("opening {}", path.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| ProfileError::io("duplicating the output file", e))?;
        cmd.stdout(out).stderr(err);
    }
    if let Some((uid, gid)) = opts.run_as {
        chown(&opts.scratch, uid, gid)?;
        cmd.uid(uid).gid(gid);
    }
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| ProfileError::io(format!("starting {}", opts.valgrind.display()), e))?;
    let count = Arc::new(AtomicBool::new(opts.count_from_start));
    let exited = Arc::new(AtomicBool::new(false));
    let reader = {
        let (count, exited, dir) = (count.clone(), exited.clone(), opts.scratch.clone());
        let root = opts.geometry_root.clone();
        std::thread::Builder::new()
            .name("kura-trace-reader".into())
            .spawn(move || {
                let mut r = Reader::new(dir, first, start, move || {
                    Hierarchy::from_sysfs(&root, false).expect("read once already")
                });
                r.run(&count, &exited)
            })
            .map_err(|e| ProfileError::io("starting the trace reader", e))?
    };
    Ok(Tracing {
        child,
        count,
        exited,
        reader: Some(reader),
        scratch: opts.scratch.clone(),
        start,
    })
}

fn chown(path: &Path, uid: u32, gid: u32) -> Result<(), ProfileError> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .map_err(|e| ProfileError::io(format!("handing {} to uid {uid}", path.display()), e))
}

impl Tracing {
    /// Time since the program started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// The traced program's process id (Valgrind runs in it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Opens the profiled region: what every process logs from now on is counted.
    pub fn count_from_now(&self) {
        self.count.store(true, Ordering::SeqCst);
    }

    /// Whether the program has ended (without waiting).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for the program to end, reads the rest of the logs and returns the trace.
    pub fn finish(mut self) -> Result<ForeignTrace, ProfileError> {
        let status = self
            .child
            .wait()
            .map_err(|e| ProfileError::io("waiting for valgrind", e))?;
        self.collect(status)
    }

    /// Stops the program (SIGKILL) and returns what was traced so far.
    pub fn kill(mut self) -> Result<ForeignTrace, ProfileError> {
        let _ = self.child.kill();
        let status = self
            .child
            .wait()
            .map_err(|e| ProfileError::io("waiting for valgrind", e))?;
        self.collect(status)
    }

    fn collect(&mut self, status: ExitStatus) -> Result<ForeignTrace, ProfileError> {
        self.exited.store(true, Ordering::SeqCst);
        let gathered = self
            .reader
            .take()
            .expect("collected once")
            .join()
            .map_err(|_| ProfileError::Unavailable("the trace reader panicked".into()))?;
        let _ = std::fs::remove_dir_all(&self.scratch);
        let g = gathered?;
        Ok(ForeignTrace {
            processes: g.processes,
            level_names: g.level_names,
            level_geometry: g.level_geometry,
            status,
            elapsed: self.start.elapsed(),
            log_bytes: g.log_bytes,
        })
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.exited.store(true, Ordering::SeqCst);
            if let Some(r) = self.reader.take() {
                let _ = r.join();
            }
            let _ = std::fs::remove_dir_all(&self.scratch);
        }
    }
}
