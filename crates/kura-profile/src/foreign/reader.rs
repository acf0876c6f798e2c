//! The trace reader: finds each process's log as it appears, reads the logs a
//! few chunks per process per turn, opens the counted region, keeps the
//! processes' caches coherent, and re-reads their memory maps from /proc.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kura_cache::cpu::Hierarchy;

use crate::error::ProfileError;
use crate::simulated::child::parse_maps;
use crate::simulated::replay::MAX_LEVELS;

use super::log::Log;
use super::process::{Gathered, ProcessTrace};
use super::procfs::{command_line, merge_code_maps};

pub(super) const LOG_PREFIX: &str = "lackey.";
/// Bytes read per system call.
const CHUNK: usize = 1 << 20;
/// Chunks read from one log before the reader turns to the next.
const CHUNKS_PER_TURN: usize = 4;
/// Read bytes are given back to the file system in steps of this size.
const PUNCH_STEP: u64 = 64 << 20;
/// How often the reader looks for new logs and re-reads memory maps.
const POLL: Duration = Duration::from_millis(200);

pub(super) struct Reader<F: FnMut() -> Hierarchy> {
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
    pub(super) fn new(dir: PathBuf, first: Hierarchy, start: Instant, new_model: F) -> Self {
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

    pub(super) fn run(
        &mut self,
        count: &AtomicBool,
        exited: &AtomicBool,
    ) -> Result<Gathered, ProfileError> {
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
            processes.push(log.finish().0);
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
            merge_code_maps(&maps, &mut log.trace.maps);
            // Under Valgrind the command line is Valgrind's until the program
            // rewrites it; keep the program's part.
            let command = strip_valgrind(&command_line(*pid));
            if !command.is_empty() {
                log.trace.command = command;
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
            self.finished.push(old.finish().0);
            return;
        };
        let path = old.path.clone();
        let (trace, mut model) = old.finish();
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
