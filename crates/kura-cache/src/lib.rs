//! kura-cache: replacement policies over page/block ids behind one trait, two-level
//! (inclusive and exclusive/demote) compositions, and trace replay — paper 004 — with
//! a fast replay path on dense ids; and set-associative CPU-cache models with CAT
//! way masks and 3C miss classes (papers 000 and 002). It depends on nothing else in
//! kura, so the buffer manager and `kura cachesim` run the same policy code.

pub mod cpu;
pub mod error;
pub mod fast;
pub mod paper004;
pub mod policies;
pub mod policy;
pub mod reuse;
pub mod sim;
pub mod sim_config;
pub mod trace;
pub mod two_level;
mod util;

pub use error::CacheError;
pub use policies::ObjectMap;
pub use policy::{serve, BlockId, HitKind, Outcome, Policy};
pub use sim::{Level, SimConfig, SimResult};
pub use trace::Trace;
pub use two_level::{Mode, Served, TwoLevel, TwoLevelStats};
pub use util::rng::SplitMix64;

/// Every policy [`make_policy`] knows, in the order they are usually listed.
pub const POLICY_NAMES: &[&str] = &[
    "lru", "mru", "fifo", "rand", "lfu", "fix", "clock", "2q", "mq", "arc", "sieve", "s3fifo",
    "density",
];

/// Seed RAND uses when none is given, so two runs evict the same blocks.
pub const DEFAULT_SEED: u64 = 0x6b75_7261; // "kura"

/// Largest capacity in blocks: node indices are 32-bit and ghost lists may track
/// up to as many ids again as the cache holds.
pub const MAX_CAPACITY: usize = 1 << 30;

/// Builds a policy by (case-insensitive) name with room for `capacity` blocks.
pub fn make_policy(name: &str, capacity: usize) -> Result<Box<dyn Policy>, CacheError> {
    make_policy_seeded(name, capacity, DEFAULT_SEED)
}

/// [`make_policy`] with an explicit seed for the randomised policies (RAND).
pub fn make_policy_seeded(
    name: &str,
    capacity: usize,
    seed: u64,
) -> Result<Box<dyn Policy>, CacheError> {
    use policies::*;
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(CacheError::InvalidConfig(format!(
            "cache policy '{name}' needs a capacity of 1 to {MAX_CAPACITY} blocks, got {capacity}"
        )));
    }
    let policy: Box<dyn Policy> = match name.to_ascii_lowercase().as_str() {
        "lru" => Box::new(Recency::lru(capacity)),
        "mru" => Box::new(Recency::mru(capacity)),
        "fifo" => Box::new(Recency::fifo(capacity)),
        "rand" | "random" => Box::new(Random::new(capacity, seed)),
        "fix" => Box::new(Fix::new(capacity)),
        "clock" => Box::new(Clock::new(capacity)),
        "lfu" => Box::new(Lfu::new(capacity)),
        "2q" => Box::new(TwoQ::new(capacity)),
        "mq" => Box::new(Mq::new(capacity)),
        "arc" => Box::new(Arc::new(capacity)),
        "sieve" => Box::new(Sieve::new(capacity)),
        "s3fifo" | "s3-fifo" => Box::new(S3Fifo::new(capacity)),
        "density" => Box::new(Density::new(capacity)),
        _ => {
            return Err(CacheError::UnknownPolicy {
                name: name.to_string(),
            })
        }
    };
    Ok(policy)
}

/// [`make_policy`] for a buffer pool: rejects policies that cannot always make room
/// (FIX never replaces, so a full pool would wait forever).
pub fn make_buffer_policy(name: &str, capacity: usize) -> Result<Box<dyn Policy>, CacheError> {
    let policy = make_policy(name, capacity)?;
    if policy.name() == "fix" {
        return Err(CacheError::UnsuitableForBuffer {
            name: name.to_string(),
            reason: "FIX never replaces a block, so a full buffer pool could not serve a miss",
        });
    }
    Ok(policy)
}
