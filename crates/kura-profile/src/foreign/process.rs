//! What the trace counted of one traced process, and what the reader thread
//! hands back when the program ends.

use std::collections::HashMap;
use std::time::Duration;

use crate::simulated::child::Mapping;
use crate::simulated::replay::MAX_LEVELS;

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

/// What the reader thread hands back.
pub(super) struct Gathered {
    pub(super) processes: Vec<ProcessTrace>,
    pub(super) level_names: Vec<String>,
    pub(super) level_geometry: Vec<String>,
    pub(super) log_bytes: u64,
}
