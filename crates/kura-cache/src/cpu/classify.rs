//! The 3C miss model (Hill & Smith; paper 002's proposal): a miss is *compulsory* on
//! a line's first touch, *capacity* if a fully-associative LRU cache of the same size
//! would have missed too, else *conflict* — the set mapping, not the size, lost it.

use crate::policies::Recency;
use crate::policy::{serve, Policy};
use crate::util::idmap::{id_map_with_capacity, IdMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissClass {
    Compulsory,
    Capacity,
    Conflict,
    /// Classification is off for this level.
    Unclassified,
}

/// Watches the line stream reaching one level.
pub struct Classifier {
    seen: IdMap<()>,
    /// Fully-associative LRU with the level's number of lines (the reference LRU,
    /// hashed by line address).
    shadow: Recency,
}

impl Classifier {
    pub fn new(lines: usize) -> Self {
        Self {
            seen: id_map_with_capacity(1024),
            shadow: Recency::lru(lines.max(1)),
        }
    }

    /// Records an access to `line`; for a miss of the real cache, says which kind.
    #[inline]
    pub fn observe(&mut self, line: u64, missed: bool) -> Option<MissClass> {
        let shadow_hit = serve(&mut self.shadow, line).is_hit();
        let first = self.seen.insert(line, ()).is_none();
        missed.then_some(if first {
            MissClass::Compulsory
        } else if !shadow_hit {
            MissClass::Capacity
        } else {
            MissClass::Conflict
        })
    }

    /// Empties the shadow (the real cache was flushed); first touches are kept.
    pub fn flush(&mut self) {
        self.shadow = Recency::lru(self.shadow.capacity());
    }

    /// Lines touched so far.
    pub fn distinct_lines(&self) -> usize {
        self.seen.len()
    }

    /// Whether the fully-associative shadow holds `line` (for tests and reports).
    pub fn shadow_holds(&self, line: u64) -> bool {
        self.shadow.contains(line)
    }
}
