//! One process's lackey log as the trace reader consumes it: its lines parsed,
//! every access replayed through the process's cache model, those inside the
//! region counted per instruction, its shared writes noted for the other
//! processes' caches, and the part read given back to the file system.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use kura_cache::cpu::Hierarchy;

use crate::simulated::lackey::Parser;

use super::process::ProcessTrace;

/// One log being read.
pub(super) struct Log {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// Bytes of the log consumed, and given back.
    pub(super) pos: u64,
    pub(super) punched: u64,
    /// The log's offset from which accesses count (`u64::MAX`: not yet decided).
    pub(super) count_from: u64,
    /// An unfinished last line.
    pub(super) carry: Vec<u8>,
    pub(super) parser: Parser,
    /// Whether the file system gives read parts back.
    pub(super) can_punch: bool,
    pub(super) model: Hierarchy,
    pub(super) trace: ProcessTrace,
    /// Its shared mappings (MAP_SHARED: what other processes see too).
    pub(super) shared: Vec<(u64, u64)>,
    /// Lines of shared memory it wrote since the other processes were told.
    pub(super) written: Vec<u64>,
    /// It has ended and its log has been read to the end.
    pub(super) done: bool,
    pub(super) gone: bool,
}

impl Log {
    /// A log just found (or restarted by an exec), read from its start; it
    /// counts from the start if the region is open already.
    pub(super) fn new(
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

    /// The image's trace, with what the parser saw, and its cache model.
    pub(super) fn finish(mut self) -> (ProcessTrace, Hierarchy) {
        self.trace.malformed = self.parser.stats().malformed;
        (self.trace, self.model)
    }

    /// Parses the complete lines of `bytes` (after any carried part), replays
    /// their accesses and counts those past the region's start.
    pub(super) fn consume(&mut self, bytes: &[u8], line_size: u64, levels: usize, counting: bool) {
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
    pub(super) fn punch(&mut self) {
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
