//! Request traces for the simulator: synthetic generators and readers for kura's own
//! page traces and common public formats. A trace is a sequence of block ids plus the
//! block size they stand for (used to express reuse distances in bytes).

pub mod binary;
pub mod csv;
pub mod oracle;
pub mod synthetic;
pub mod text;

use crate::policy::BlockId;

/// 4 KiB, the block size of paper 004 and of the CSV/MSR readers' splitting.
pub const DEFAULT_BLOCK_SIZE: u64 = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Where it came from (file name or generator description), for reports.
    pub name: String,
    pub requests: Vec<BlockId>,
    /// Bytes one block id stands for.
    pub block_size: u64,
}

impl Trace {
    pub fn new(name: impl Into<String>, requests: Vec<BlockId>, block_size: u64) -> Self {
        Self {
            name: name.into(),
            requests,
            block_size,
        }
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Renumbers blocks 0, 1, 2, ... in order of first request. Hit ratios and reuse
    /// distances do not change; policies then index blocks by a plain table.
    pub fn densify(&mut self) {
        let mut ids = crate::util::idmap::id_map_with_capacity::<u64>(0);
        for id in &mut self.requests {
            let next = ids.len() as u64;
            *id = *ids.entry(*id).or_insert(next);
        }
    }

    /// Number of distinct blocks (the data size, in blocks).
    pub fn distinct_blocks(&self) -> usize {
        let mut seen = crate::util::idmap::id_map_with_capacity::<()>(0);
        for &id in &self.requests {
            seen.insert(id, ());
        }
        seen.len()
    }
}
