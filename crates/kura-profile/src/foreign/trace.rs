//! Traces any program — and every process it forks or executes — under Valgrind's
//! lackey, and replays each process's accesses through its own model of this
//! machine's data caches as the trace is written (paper 002 on other programs,
//! where the machine has no hardware counters).
//!
//! Each process writes its own log (`--log-file=DIR/lackey.%p`): one pipe shared
//! by forked processes would interleave their records mid-line. The logs are
//! read as they grow and the part already read is given back to the file system
//! (hole punching), so a long run needs little disk. The process's memory map is
//! read from `/proc` while it runs, to name its instructions afterwards.
//!
//! A caller may open the profiled region late ([`Tracing::count_from_now`]):
//! what each process logged before that still goes through its caches (they are
//! warm when counting starts) but is not counted.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kura_cache::cpu::Hierarchy;

use crate::error::ProfileError;
use crate::simulated::child::{parse_maps, Mapping};
use crate::simulated::lackey::Parser;
use crate::simulated::record::check_valgrind;
use crate::simulated::replay::MAX_LEVELS;

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

/// Counts of one instruction address.
#[derive(Clone, Copy, Debug, Default)]
pub struct IpCounts {
    pub accesses: u64,
    pub misses: [u64; MAX_LEVELS],
}

/// One traced process image (a process that executes another program becomes a
/// second image with the same pid).
#[derive(Clone, Debug, Default)]
pub struct ProcessTrace {
    pub pid: u32,
    /// Its command line as `/proc` last showed it (servers rewrite theirs).
    pub command: String,
    /// Instructions and data accesses counted (inside the region).
    pub instructions: u64,
    pub accesses: u64,
    pub misses: [u64; MAX_LEVELS],
    pub per_ip: HashMap<u64, IpCounts>,
    /// Executable file mappings seen while it ran.
    pub maps: Vec<Mapping>,
    /// Log lines that were not lackey records.
    pub malformed: u64,
    /// When its log was first seen, from the start of the trace.
    pub first_seen: Duration,
    /// Lines it had cached that another process's write to shared memory took
    /// away (inside the region): each costs it a miss when it looks again.
    pub invalidated: u64,
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

/// What the reader thread hands back.
struct Gathered {
    processes: Vec<ProcessTrace>,
    level_names: Vec<String>,
    level_geometry: Vec<String>,
    log_bytes: u64,
}

const LOG_PREFIX: &str = "lackey.";
/// Bytes read per system call.
const CHUNK: usize = 1 << 20;
/// Chunks read from one log before the reader turns to the next.
const CHUNKS_PER_TURN: usize = 4;
/// Read bytes are given back to the file system in steps of this size.
const PUNCH_STEP: u64 = 64 << 20;
/// How often the reader looks for new logs and re-reads memory maps.
const POLL: Duration = Duration::from_millis(200);

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

/// One log being read.
struct Log {
    path: PathBuf,
    file: File,
    /// Bytes of the log consumed, and given back.
    pos: u64,
    punched: u64,
    /// The log's offset from which accesses count (`u64::MAX`: not yet decided).
    count_from: u64,
    /// An unfinished last line.
    carry: Vec<u8>,
    parser: Parser,
    /// Whether the file system gives read parts back.
    can_punch: bool,
    model: Hierarchy,
    trace: ProcessTrace,
    /// Its shared mappings (MAP_SHARED: what other processes see too).
    shared: Vec<(u64, u64)>,
    /// Lines of shared memory it wrote since the other processes were told.
    written: Vec<u64>,
    /// It has ended and its log has been read to the end.
    done: bool,
    gone: bool,
}

struct Reader<F: FnMut() -> Hierarchy> {
    dir: PathBuf,
    start: Instant,
    logs: HashMap<u32, Log>,
    finished: Vec<ProcessTrace>,
    spare_model: Option<Hierarchy>,
    new_model: F,
    counting: bool,
    level_names: Vec<String>,
    level_geometry: Vec<String>,
    line_size: u64,
    levels: usize,
    log_bytes: u64,
    buf: Vec<u8>,
}

impl<F: FnMut() -> Hierarchy> Reader<F> {
    fn new(dir: PathBuf, first: Hierarchy, start: Instant, new_model: F) -> Self {
        let levels = first.levels().min(MAX_LEVELS);
        let mut level_names = Vec::new();
        let mut level_geometry = Vec::new();
        for i in 0..levels {
            let g = first.level(i).geometry();
            let mut name = if i == 0 {
                "L1d".to_string()
            } else {
                format!("L{}", g.level)
            };
            if i + 1 == levels && levels > 1 {
                name.push_str(" (LLC)");
            }
            level_names.push(name);
            level_geometry.push(format!(
                "{} KiB, {}-way, {} B lines",
                g.size >> 10,
                g.ways,
                g.line_size
            ));
        }
        let line_size = u64::from(first.level(0).geometry().line_size);
        Self {
            dir,
            start,
            logs: HashMap::new(),
            finished: Vec::new(),
            spare_model: Some(first),
            new_model,
            counting: false,
            level_names,
            level_geometry,
            line_size,
            levels,
            log_bytes: 0,
            buf: vec![0; CHUNK],
        }
    }

    fn run(&mut self, count: &AtomicBool, exited: &AtomicBool) -> Result<Gathered, ProfileError> {
        let mut last_poll = Instant::now() - POLL;
        loop {
            // Read after the exit flag, so the last pass sees everything written.
            let done = exited.load(Ordering::SeqCst);
            if !self.counting && count.load(Ordering::SeqCst) {
                self.open_region()?;
            }
            if done || last_poll.elapsed() >= POLL {
                self.discover()?;
                self.read_maps();
                last_poll = Instant::now();
            }
            let mut progressed = false;
            let pids: Vec<u32> = self.logs.keys().copied().collect();
            for pid in pids {
                progressed |= self.drain(pid)?;
            }
            if done && !progressed {
                break;
            }
            if !progressed {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let mut processes = std::mem::take(&mut self.finished);
        for (_, log) in self.logs.drain() {
            processes.push(log.trace);
        }
        processes.sort_by_key(|p| p.pid);
        Ok(Gathered {
            processes,
            level_names: self.level_names.clone(),
            level_geometry: self.level_geometry.clone(),
            log_bytes: self.log_bytes,
        })
    }

    /// Counting starts: each log counts from its present length.
    fn open_region(&mut self) -> Result<(), ProfileError> {
        self.discover()?;
        for log in self.logs.values_mut() {
            log.count_from = std::fs::metadata(&log.path).map(|m| m.len()).unwrap_or(0);
        }
        self.counting = true;
        Ok(())
    }

    /// Opens logs that appeared since the last look.
    fn discover(&mut self) -> Result<(), ProfileError> {
        let dir = std::fs::read_dir(&self.dir)
            .map_err(|e| ProfileError::io(format!("listing {}", self.dir.display()), e))?;
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(LOG_PREFIX))
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if self.logs.contains_key(&pid) {
                continue;
            }
            let path = entry.path();
            // Write access, to give read parts back (hole punching).
            let file = match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) => return Err(ProfileError::io(format!("opening {}", path.display()), e)),
            };
            let model = match self.spare_model.take() {
                Some(m) => m,
                None => (self.new_model)(),
            };
            let log = Log::new(pid, path, file, model, self.counting, self.start.elapsed());
            self.logs.insert(pid, log);
        }
        Ok(())
    }

    /// Re-reads the memory map and command line of every live process.
    fn read_maps(&mut self) {
        for (pid, log) in self.logs.iter_mut() {
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
                log.gone = true;
                continue;
            };
            let maps = parse_maps(&text);
            log.shared = maps
                .iter()
                .filter(|m| m.perms.as_bytes().get(3) == Some(&b's'))
                .map(|m| (m.start, m.end))
                .collect();
            for m in maps {
                if m.path.starts_with('/')
                    && m.perms.contains('x')
                    && !m.path.contains("/valgrind/")
                    && !log
                        .trace
                        .maps
                        .iter()
                        .any(|k| k.start == m.start && k.path == m.path)
                {
                    log.trace.maps.push(m);
                }
            }
            if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
                let text: String = String::from_utf8_lossy(&cmd)
                    .split('\0')
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                // Under Valgrind the command line is Valgrind's until the program
                // rewrites it; keep the program's part.
                let text = strip_valgrind(&text);
                if !text.is_empty() {
                    log.trace.command = text;
                }
            }
        }
    }

    /// Reads what log `pid` has grown by; whether anything was read.
    fn drain(&mut self, pid: u32) -> Result<bool, ProfileError> {
        let len = {
            let log = self.logs.get(&pid).expect("known log");
            log.file
                .metadata()
                .map_err(|e| ProfileError::io(format!("reading {}", log.path.display()), e))?
                .len()
        };
        if len < self.logs[&pid].pos {
            // A new Valgrind (the process executed another program) truncated the
            // log: the image so far is finished; the new one starts from zero.
            self.restart(pid);
        }
        let (line_size, levels, counting) = (self.line_size, self.levels, self.counting);
        let mut progressed = false;
        // A few chunks per turn, then the next process: the processes' traces
        // interleave finely, and the reader soon looks for new logs and for the
        // region opening again, however fast one process writes.
        for _ in 0..CHUNKS_PER_TURN {
            let log = self.logs.get_mut(&pid).expect("known log");
            let n = match log.file.read(&mut self.buf) {
                Ok(0) => {
                    log.done = log.gone;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ProfileError::io(
                        format!("reading {}", log.path.display()),
                        e,
                    ))
                }
            };
            progressed = true;
            self.log_bytes += n as u64;
            log.consume(&self.buf[..n], line_size, levels, counting);
            if log.can_punch && log.pos - log.punched >= PUNCH_STEP {
                log.punch();
            }
            let written = std::mem::take(&mut log.written);
            self.invalidate_others(pid, &written, counting);
        }
        Ok(progressed)
    }

    /// Write-invalidate coherence between the processes' caches, a chunk of
    /// trace at a time: the shared lines `pid` wrote leave every other live
    /// process's caches.
    fn invalidate_others(&mut self, pid: u32, written: &[u64], counting: bool) {
        if written.is_empty() {
            return;
        }
        let mut lines = written.to_vec();
        lines.sort_unstable();
        lines.dedup();
        for (other, log) in self.logs.iter_mut() {
            if *other == pid || log.done {
                continue;
            }
            for &line in &lines {
                let held = (0..log.model.levels()).any(|i| {
                    let level = log.model.level(i);
                    level.holds(level.line_of(line))
                });
                if held {
                    log.model.invalidate(line);
                    log.trace.invalidated += u64::from(counting);
                }
            }
        }
    }

    fn restart(&mut self, pid: u32) {
        let Some(old) = self.logs.remove(&pid) else {
            return;
        };
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&old.path)
        else {
            self.finished.push(old.trace);
            return;
        };
        let Log {
            path, model, trace, ..
        } = old;
        let mut model = model;
        model.flush();
        self.finished.push(trace);
        let log = Log::new(pid, path, file, model, self.counting, self.start.elapsed());
        self.logs.insert(pid, log);
    }
}

/// `valgrind --tool=lackey ... /usr/bin/prog args` → `/usr/bin/prog args`.
fn strip_valgrind(cmd: &str) -> String {
    let words: Vec<&str> = cmd.split(' ').collect();
    if words
        .first()
        .is_some_and(|w| w.contains("valgrind") || w.contains("lackey"))
    {
        words
            .iter()
            .skip(1)
            .skip_while(|w| w.starts_with("--"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        cmd.to_string()
    }
}

impl Log {
    /// A log just found (or restarted by an exec), read from its start; it
    /// counts from the start if the region is open already.
    fn new(
        pid: u32,
        path: PathBuf,
        file: File,
        model: Hierarchy,
        counting: bool,
        first_seen: Duration,
    ) -> Log {
        Log {
            path,
            file,
            pos: 0,
            punched: 0,
            count_from: if counting { 0 } else { u64::MAX },
            carry: Vec::new(),
            parser: Parser::whole_trace(),
            can_punch: true,
            model,
            trace: ProcessTrace {
                pid,
                first_seen,
                ..ProcessTrace::default()
            },
            shared: Vec::new(),
            written: Vec::new(),
            done: false,
            gone: false,
        }
    }

    /// Parses the complete lines of `bytes` (after any carried part), replays
    /// their accesses and counts those past the region's start.
    fn consume(&mut self, bytes: &[u8], line_size: u64, levels: usize, counting: bool) {
        let mut offset = self.pos - self.carry.len() as u64;
        self.pos += bytes.len() as u64;
        let mut rest = bytes;
        if !self.carry.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let mut line = std::mem::take(&mut self.carry);
                    line.extend_from_slice(&rest[..=i]);
                    self.one_line(&line, offset, line_size, levels, counting);
                    offset += line.len() as u64;
                    rest = &rest[i + 1..];
                }
                None => {
                    self.carry.extend_from_slice(rest);
                    return;
                }
            }
        }
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            let line = &rest[..=i];
            self.one_line(line, offset, line_size, levels, counting);
            offset += line.len() as u64;
            rest = &rest[i + 1..];
        }
        self.carry.extend_from_slice(rest);
    }

    #[inline]
    fn one_line(
        &mut self,
        line: &[u8],
        offset: u64,
        line_size: u64,
        levels: usize,
        counting: bool,
    ) {
        let counted = counting && offset >= self.count_from;
        let Some(a) = self.parser.line(line) else {
            if counted && line.first() == Some(&b'I') {
                self.trace.instructions += 1;
            }
            self.trace.malformed = self.parser.stats().malformed;
            return;
        };
        let first = a.addr / line_size;
        let last = (a.addr + u64::from(a.size.max(1)) - 1) / line_size;
        if a.is_write && self.is_shared(a.addr) {
            let line = first * line_size;
            // Consecutive writes to one line are one invalidation.
            if self.written.last() != Some(&line) {
                self.written.push(line);
            }
        }
        for l in first..=last {
            let served = self.model.access(l * line_size, 0).served_by.min(levels);
            if !counted {
                continue;
            }
            let c = self.trace.per_ip.entry(a.ip).or_default();
            c.accesses += 1;
            self.trace.accesses += 1;
            for i in 0..served {
                c.misses[i] += 1;
                self.trace.misses[i] += 1;
            }
        }
    }

    #[inline]
    fn is_shared(&self, addr: u64) -> bool {
        self.shared.iter().any(|&(lo, hi)| addr >= lo && addr < hi)
    }

    /// Gives the read part of the log back to the file system; the file keeps
    /// its length, so Valgrind's writes land where they would have.
    fn punch(&mut self) {
        let end = self.pos / 4096 * 4096;
        if end <= self.punched {
            return;
        }
        // SAFETY: fallocate on a descriptor we own, within the file.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                self.punched as libc::off_t,
                (end - self.punched) as libc::off_t,
            )
        };
        // A file system without hole punching keeps the log; the run still works.
        if r == 0 {
            self.punched = end;
        } else {
            self.can_punch = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valgrind_words_are_cut_from_a_command_line() {
        assert_eq!(
            strip_valgrind("/usr/bin/valgrind --tool=lackey --log-file=x /usr/bin/prog -a b"),
            "/usr/bin/prog -a b"
        );
        assert_eq!(
            strip_valgrind("postgres: kura db [local] idle"),
            "postgres: kura db [local] idle"
        );
    }
}
