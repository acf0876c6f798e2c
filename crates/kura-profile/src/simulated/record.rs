//! The recorder: runs a program under `valgrind --tool=lackey --trace-mem=yes`
//! with the trace going to a pipe (`--log-fd`), parses it as it streams, and hands
//! the accesses of the profiled region to the caller in batches — a trace is never
//! stored. The program announces its marker page first ([`super::child`]), and at
//! the end leaves a [`Dump`] (registry log, memory map) in a file.
//!
//! Both the memory profiler and cache partitioning (paper 000) replay what this
//! yields; each access carries the class the program had switched to.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::child::{Dump, MARKER_LINE};
use super::lackey::{ParseStats, Parser, TraceAccess};
use crate::error::ProfileError;

/// How to run the traced program.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The Valgrind executable (normally `valgrind`, found on `PATH`).
    pub valgrind: PathBuf,
    /// The program and its arguments; it must call [`super::child::handshake`]
    /// first and [`super::child::write_dump`] to `dump` at the end.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Where the program writes its dump.
    pub dump: PathBuf,
    /// Accesses per batch handed to the caller.
    pub batch: usize,
}

/// A finished recording.
#[derive(Clone, Debug)]
pub struct Recording {
    pub stats: ParseStats,
    pub dump: Dump,
    /// Wall time of the traced run.
    pub elapsed: Duration,
}

/// The one-line error for a machine without Valgrind.
pub fn valgrind_missing(valgrind: &std::path::Path) -> ProfileError {
    ProfileError::Unavailable(format!(
        "the simulated profile needs Valgrind ('{}' was not found): install it, e.g. `apt-get install valgrind`",
        valgrind.display()
    ))
}

/// Checks that `valgrind` runs.
pub fn check_valgrind(valgrind: &std::path::Path) -> Result<(), ProfileError> {
    match Command::new(valgrind)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        _ => Err(valgrind_missing(valgrind)),
    }
}

/// A pipe whose write end the child inherits (the read end is close-on-exec).
fn trace_pipe() -> Result<(OwnedFd, OwnedFd), ProfileError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(ProfileError::io(
            "creating the trace pipe",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: pipe(2) returned two fresh descriptors that nothing else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on descriptors we own. A larger pipe lets the writer run on
    // while the reader sleeps (see `Batching`); the kernel may refuse, harmlessly.
    unsafe {
        libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(fds[0], libc::F_SETPIPE_SZ, PIPE_BYTES as libc::c_int);
    }
    Ok((read, write))
}

/// The trace pipe's capacity asked for.
const PIPE_BYTES: usize = 1 << 20;

/// Reads the trace in large pieces: Valgrind writes its log a few hundred bytes
/// at a time, and a reader that wakes for each piece spends more time in the
/// kernel than the tracing itself. After a short read it lets the pipe fill for
/// a millisecond first.
struct Batching {
    file: File,
    last: usize,
}

impl Read for Batching {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.last < (64 << 10).min(buf.len()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.last = self.file.read(buf)?;
        Ok(self.last)
    }
}

/// Runs the program under lackey and calls `sink` with each batch of accesses of
/// its profiled region, in program order.
pub fn record(
    opts: &RecordOptions,
    mut sink: impl FnMut(&[TraceAccess]),
) -> Result<Recording, ProfileError> {
    check_valgrind(&opts.valgrind)?;
    let _ = std::fs::remove_file(&opts.dump);
    let (read_end, write_end) = trace_pipe()?;
    let log_fd = {
        use std::os::fd::AsRawFd;
        write_end.as_raw_fd()
    };
    let start = Instant::now();
    let mut child = Command::new(&opts.valgrind)
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg(format!("--log-fd={log_fd}"))
        .arg(&opts.program)
        .args(&opts.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => valgrind_missing(&opts.valgrind),
            _ => ProfileError::io("starting valgrind", e),
        })?;
    // Only the child writes the trace: our copy would keep the pipe open forever.
    drop(write_end);

    // The handshake: the program's first stdout line names its marker page; we
    // publish it to the parser and answer on stdin, and only then does the program
    // start its region — so no region access can be parsed before the marker is
    // known. The rest of stdout and all of stderr are drained in the background.
    let marker = Arc::new(AtomicU64::new(0));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let marker_w = marker.clone();
    let out_thread = std::thread::spawn(move || {
        let (Some(mut stdin), Some(stdout)) = (stdin, stdout) else {
            return;
        };
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let Ok(line) = line else { return };
            if let Some(hex) = line.trim().strip_prefix(MARKER_LINE) {
                if let Ok(m) = u64::from_str_radix(hex.trim(), 16) {
                    marker_w.store(m, Ordering::SeqCst);
                    let _ = writeln!(stdin, "go").and_then(|_| stdin.flush());
                    break;
                }
            }
        }
        for _ in lines {}
    });
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut text);
        }
        text
    });

    let mut parser = Parser::new(0);
    let mut known = false;
    let mut reader = BufReader::with_capacity(
        PIPE_BYTES,
        Batching {
            file: File::from(read_end),
            last: 0,
        },
    );
    let mut line = Vec::with_capacity(64);
    let mut batch = Vec::with_capacity(opts.batch.max(1));
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProfileError::io("reading the trace", e));
            }
        }
        if !known {
            let m = marker.load(Ordering::SeqCst);
            if m == 0 {
                // Before the handshake: nothing to count, but the registry events
                // of this stretch must not be missed either — and there are none,
                // since the program turns the registry on after the handshake.
                continue;
            }
            parser = Parser::new(m);
            known = true;
        }
        if let Some(a) = parser.line(&line) {
            batch.push(a);
            if batch.len() >= opts.batch.max(1) {
                sink(&batch);
                batch.clear();
            }
        }
    }
    if !batch.is_empty() {
        sink(&batch);
    }
    let status = child
        .wait()
        .map_err(|e| ProfileError::io("waiting for valgrind", e))?;
    let _ = out_thread.join();
    let stderr = err_thread.join().unwrap_or_default();
    let elapsed = start.elapsed();
    if !status.success() {
        // The program's own one-line error, if it printed one.
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message")
            .trim()
            .trim_start_matches("ERROR: ")
            .to_string();
        return Err(ProfileError::Invalid(format!(
            "the traced run failed: {last}"
        )));
    }
    if !known {
        return Err(ProfileError::Invalid(
            "the traced program never announced its marker page".into(),
        ));
    }
    let text = std::fs::read_to_string(&opts.dump)
        .map_err(|e| ProfileError::io(format!("reading {}", opts.dump.display()), e))?;
    let dump: Dump = serde_json::from_str(&text).map_err(|e| {
        ProfileError::Invalid(format!("{} is not a trace dump: {e}", opts.dump.display()))
    })?;
    Ok(Recording {
        stats: parser.stats().clone(),
        dump,
        elapsed,
    })
}
