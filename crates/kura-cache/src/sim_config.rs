//! What the simulator replays a trace through: one cache level (a policy by name
//! and its size in blocks), or an upper level over a lower one (paper 004).

use crate::two_level::Mode;
use crate::DEFAULT_SEED;

/// One cache level: a policy by name and its size in blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub policy: String,
    pub capacity: usize,
}

impl Level {
    pub fn new(policy: impl Into<String>, capacity: usize) -> Self {
        Self {
            policy: policy.into(),
            capacity,
        }
    }
}

/// A single cache (`lower: None`) or an upper cache over a lower one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    pub upper: Level,
    pub lower: Option<(Level, Mode)>,
    /// Seed of the randomised policies (RAND); the lower level gets `seed + 1`.
    pub seed: u64,
}

impl SimConfig {
    pub fn single(policy: impl Into<String>, capacity: usize) -> Self {
        Self {
            upper: Level::new(policy, capacity),
            lower: None,
            seed: DEFAULT_SEED,
        }
    }

    pub fn two_level(upper: Level, lower: Level, mode: Mode) -> Self {
        Self {
            upper,
            lower: Some((lower, mode)),
            seed: DEFAULT_SEED,
        }
    }

    /// e.g. `lru(1000)` or `lru(1000) / mru(2000) exclusive`.
    pub fn describe(&self) -> String {
        let upper = format!("{}({})", self.upper.policy, self.upper.capacity);
        match &self.lower {
            None => upper,
            Some((l, mode)) => format!("{upper} / {}({}) {}", l.policy, l.capacity, mode.name()),
        }
    }
}
