//! Paper 004's evaluation (figures 12–14) as data: 4 KiB blocks, 10 GB of data,
//! uniform random single-block reads; an upper LRU cache of 2, 3, 4 GB over a lower
//! cache of 2, 3, 4, 5 GB run by LRU, MRU, FIFO, RAND, LFU, FIX, 2Q, MQ, ARC
//! (inclusive, the baseline) and by the paper's demote method (exclusive, MRU below).

use crate::error::CacheError;
use crate::sim::{simulate_all, Level, SimConfig, SimResult};
use crate::trace::{synthetic, Trace};
use crate::two_level::{Mode, TwoLevelStats};

/// The name the paper's method goes by in results.
pub const DEMOTE: &str = "demote";

pub const LOWER_POLICIES: &[&str] = &[
    "lru", "mru", "fifo", "rand", "lfu", "fix", "2q", "mq", "arc", DEMOTE,
];

const GB: u64 = 1_000_000_000;

#[derive(Clone, Debug)]
pub struct Paper004 {
    pub block_size: u64,
    pub data_bytes: u64,
    pub upper_bytes: Vec<u64>,
    pub lower_bytes: Vec<u64>,
    pub lower_policies: Vec<String>,
    /// Requests replayed to fill the caches, per block of data.
    pub warmup_per_block: u64,
    /// Requests counted, per block of data.
    pub measured_per_block: u64,
    pub seed: u64,
}

/// One point of figures 12–14.
#[derive(Clone, Debug)]
pub struct Paper004Row {
    pub upper_bytes: u64,
    pub lower_bytes: u64,
    pub policy: String,
    pub stats: TwoLevelStats,
}

impl Paper004 {
    /// The paper's sizes. Warm-up covers filling 9 of 10 GB with distinct blocks
    /// (coupon collector: ln 10 ≈ 2.3 passes).
    pub fn full() -> Self {
        Self {
            block_size: 4096,
            data_bytes: 10 * GB,
            upper_bytes: vec![2 * GB, 3 * GB, 4 * GB],
            lower_bytes: vec![2 * GB, 3 * GB, 4 * GB, 5 * GB],
            lower_policies: LOWER_POLICIES.iter().map(|s| s.to_string()).collect(),
            warmup_per_block: 3,
            measured_per_block: 5,
            seed: crate::DEFAULT_SEED,
        }
    }

    /// Everything 100× smaller (data, caches): same ratios, seconds to run.
    pub fn quick() -> Self {
        let full = Self::full();
        Self {
            data_bytes: full.data_bytes / 100,
            upper_bytes: full.upper_bytes.iter().map(|b| b / 100).collect(),
            lower_bytes: full.lower_bytes.iter().map(|b| b / 100).collect(),
            ..full
        }
    }

    pub fn blocks(&self, bytes: u64) -> usize {
        (bytes / self.block_size) as usize
    }

    pub fn data_blocks(&self) -> u64 {
        self.data_bytes / self.block_size
    }

    pub fn warmup_requests(&self) -> usize {
        (self.warmup_per_block * self.data_blocks()) as usize
    }

    pub fn trace(&self) -> Result<Trace, CacheError> {
        let n = (self.warmup_per_block + self.measured_per_block) * self.data_blocks();
        let mut t = synthetic::uniform(self.data_blocks(), n as usize, self.seed)?;
        t.block_size = self.block_size;
        Ok(t)
    }

    /// (upper bytes, lower bytes, lower policy label, configuration) per point.
    pub fn configs(&self) -> Vec<(u64, u64, String, SimConfig)> {
        let mut out = Vec::new();
        for &u in &self.upper_bytes {
            for &l in &self.lower_bytes {
                for policy in &self.lower_policies {
                    let upper = Level::new("lru", self.blocks(u));
                    let (lower, mode) = if policy == DEMOTE {
                        (Level::new("mru", self.blocks(l)), Mode::Exclusive)
                    } else {
                        (Level::new(policy.clone(), self.blocks(l)), Mode::Inclusive)
                    };
                    let mut config = SimConfig::two_level(upper, lower, mode);
                    config.seed = self.seed;
                    out.push((u, l, policy.clone(), config));
                }
            }
        }
        out
    }

    /// Runs every point on `threads` threads over one shared trace.
    pub fn run(
        &self,
        threads: usize,
        on_done: &(dyn Fn(usize) + Sync),
    ) -> Result<Vec<Paper004Row>, CacheError> {
        let trace = self.trace()?;
        let points = self.configs();
        let configs: Vec<SimConfig> = points.iter().map(|p| p.3.clone()).collect();
        let results: Vec<SimResult> = simulate_all(
            &configs,
            &trace.requests,
            self.warmup_requests(),
            threads,
            on_done,
        )?;
        Ok(points
            .into_iter()
            .zip(results)
            .map(|((u, l, policy, _), r)| Paper004Row {
                upper_bytes: u,
                lower_bytes: l,
                policy,
                stats: r.stats,
            })
            .collect())
    }
}
