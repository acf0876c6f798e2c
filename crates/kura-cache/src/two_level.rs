//! Two caches in series (paper 004): an upper cache (a guest's page cache, kura's
//! buffer pool) over a lower one (the host's or the OS page cache), in the two modes
//! the paper compares.
//!
//! - **Inclusive** (the baseline): a double miss stores the block in both levels; a
//!   lower hit copies it up; upper victims are simply dropped. The lower level then
//!   sees only what the upper one missed — negative temporal locality — and holds
//!   duplicates of upper blocks.
//! - **Exclusive / demote** (the paper's method): a double miss stores the block in
//!   the upper cache only; every upper victim is inserted into the lower cache at its
//!   least-likely-to-be-evicted position ([`Policy::insert_protected`]); a lower hit
//!   moves the block up. The paper keeps the moved block as the lower MRU, "next to
//!   go", and lets the demoted victim push it out; we drop it at once, which is the
//!   same whenever the upper cache is full (always, in steady state) and never keeps a
//!   duplicate. With an MRU lower cache this is the paper's proposal; any policy may
//!   sit at either level.

use crate::policy::{BlockId, Policy};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Inclusive,
    Exclusive,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Inclusive => "inclusive",
            Mode::Exclusive => "exclusive",
        }
    }
}

/// Where a request was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    Upper,
    Lower,
    /// Missed both levels (read from storage).
    Storage,
}

/// Request counts per level, with paper 004's hit-ratio definitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TwoLevelStats {
    pub requests: u64,
    pub upper_hits: u64,
    /// Requests that reached the lower level (= upper misses).
    pub lower_requests: u64,
    pub lower_hits: u64,
    /// Upper victims inserted into the lower level (exclusive mode).
    pub demotions: u64,
}

impl TwoLevelStats {
    /// 1 − upper misses / upper requests.
    pub fn upper_hit_ratio(&self) -> f64 {
        ratio(self.upper_hits, self.requests)
    }

    /// 1 − lower misses / lower requests (requests that reached the lower level).
    pub fn lower_hit_ratio(&self) -> f64 {
        ratio(self.lower_hits, self.lower_requests)
    }

    /// Requests served by either cache.
    pub fn overall_hit_ratio(&self) -> f64 {
        ratio(self.upper_hits + self.lower_hits, self.requests)
    }
}

pub(crate) fn ratio(hits: u64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        hits as f64 / requests as f64
    }
}

pub struct TwoLevel {
    upper: Box<dyn Policy>,
    lower: Box<dyn Policy>,
    mode: Mode,
    stats: TwoLevelStats,
}

impl TwoLevel {
    pub fn new(upper: Box<dyn Policy>, lower: Box<dyn Policy>, mode: Mode) -> Self {
        Self {
            upper,
            lower,
            mode,
            stats: TwoLevelStats::default(),
        }
    }

    pub fn upper(&self) -> &dyn Policy {
        self.upper.as_ref()
    }

    pub fn lower(&self) -> &dyn Policy {
        self.lower.as_ref()
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn stats(&self) -> TwoLevelStats {
        self.stats
    }

    /// Serves one request for `id` and updates the counters.
    #[inline]
    pub fn request(&mut self, id: BlockId) -> Served {
        self.stats.requests += 1;
        if self.upper.touch(id) {
            self.stats.upper_hits += 1;
            return Served::Upper;
        }
        self.stats.lower_requests += 1;
        let lower_hit = self.lower.contains(id);
        if lower_hit {
            self.stats.lower_hits += 1;
        }
        match self.mode {
            Mode::Inclusive => {
                if lower_hit {
                    self.lower.access(id);
                } else {
                    cache_in(self.lower.as_mut(), id);
                }
                // The upper victim is clean and the lower level is not told.
                self.upper_insert(id);
            }
            Mode::Exclusive => {
                if lower_hit {
                    self.lower.remove(id);
                }
                if let Some(victim) = self.upper_insert(id) {
                    self.demote(victim);
                }
            }
        }
        if lower_hit {
            Served::Lower
        } else {
            Served::Storage
        }
    }

    /// Caches `id` in the upper level; returns the block that left it: its victim,
    /// or `id` itself when the upper policy declines new blocks (FIX when full).
    fn upper_insert(&mut self, id: BlockId) -> Option<BlockId> {
        if !self.upper.admits() {
            return Some(id);
        }
        let mut victim = None;
        if self.upper.len() >= self.upper.capacity() {
            victim = self.upper.evict_for(id, &mut |_| true);
            if victim.is_none() {
                return Some(id);
            }
        }
        self.upper.insert(id);
        victim
    }

    fn demote(&mut self, id: BlockId) {
        if !self.lower.admits() {
            return;
        }
        if self.lower.len() >= self.lower.capacity()
            && self.lower.evict_for(id, &mut |_| true).is_none()
        {
            return;
        }
        self.lower.insert_protected(id);
        self.stats.demotions += 1;
    }
}

/// Caches a missed block in a single level if the policy admits it.
fn cache_in(policy: &mut dyn Policy, id: BlockId) {
    if !policy.admits() {
        return;
    }
    if policy.len() >= policy.capacity() && policy.evict_for(id, &mut |_| true).is_none() {
        return;
    }
    policy.insert(id);
}
