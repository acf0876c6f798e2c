//! The simulator: replays a trace through one- or two-level cache configurations —
//! in parallel over configurations, each on its own thread with its own policies —
//! and reports hits per level with paper 004's definitions.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::CacheError;
use crate::fast::{self, DenseTrace, FastCache};
use crate::policy::{serve, BlockId, Policy};
pub use crate::sim_config::{Level, SimConfig};
use crate::two_level::{TwoLevel, TwoLevelStats};
use crate::{make_policy_seeded, DEFAULT_SEED};

/// A configuration and what replaying the trace through it counted. For a single
/// cache the "upper" counters are the cache's and nothing reaches a lower level.
#[derive(Clone, Debug, PartialEq)]
pub struct SimResult {
    pub config: SimConfig,
    pub stats: TwoLevelStats,
}

enum Cache {
    Single(Box<dyn Policy>, TwoLevelStats),
    Two(TwoLevel),
}

impl Cache {
    fn build(config: &SimConfig) -> Result<Self, CacheError> {
        let upper = make_policy_seeded(&config.upper.policy, config.upper.capacity, config.seed)?;
        Ok(match &config.lower {
            None => Cache::Single(upper, TwoLevelStats::default()),
            Some((lower, mode)) => {
                let lower = make_policy_seeded(&lower.policy, lower.capacity, config.seed + 1)?;
                Cache::Two(TwoLevel::new(upper, lower, *mode))
            }
        })
    }

    fn replay(&mut self, requests: &[BlockId]) {
        match self {
            Cache::Single(policy, stats) => {
                let mut hits = 0;
                for &id in requests {
                    hits += u64::from(serve(policy.as_mut(), id).is_hit());
                }
                let n = requests.len() as u64;
                stats.requests += n;
                stats.upper_hits += hits;
                stats.lower_requests += n - hits;
            }
            Cache::Two(two) => {
                for &id in requests {
                    two.request(id);
                }
            }
        }
    }

    fn stats(&self) -> TwoLevelStats {
        match self {
            Cache::Single(_, stats) => *stats,
            Cache::Two(two) => two.stats(),
        }
    }
}

/// Replays `requests` through `config`; the first `warmup` requests fill the caches
/// and are not counted. Configurations whose policies have a fast-path port replay
/// on dense ids ([`crate::fast`]); the others through the reference policies.
pub fn simulate(
    config: &SimConfig,
    requests: &[BlockId],
    warmup: usize,
) -> Result<TwoLevelStats, CacheError> {
    if fast::supports(config) {
        Cache::build(config)?;
        return simulate_dense(config, &DenseTrace::from_ids(requests), warmup);
    }
    simulate_reference(config, requests, warmup)
}

/// [`simulate`] through the reference policies (the buffer manager's code) only.
pub fn simulate_reference(
    config: &SimConfig,
    requests: &[BlockId],
    warmup: usize,
) -> Result<TwoLevelStats, CacheError> {
    let mut cache = Cache::build(config)?;
    let warmup = warmup.min(requests.len());
    cache.replay(&requests[..warmup]);
    let before = cache.stats();
    cache.replay(&requests[warmup..]);
    Ok(difference(cache.stats(), before))
}

/// [`simulate`] on a dense trace: the fast path where `config` has one, else the
/// reference policies on the widened ids.
pub fn simulate_dense(
    config: &SimConfig,
    trace: &DenseTrace<'_>,
    warmup: usize,
) -> Result<TwoLevelStats, CacheError> {
    let Some(mut cache) = FastCache::new(config, trace.universe()) else {
        return simulate_reference(config, &trace.to_block_ids(), warmup);
    };
    let ids = trace.ids();
    let warmup = warmup.min(ids.len());
    cache.replay(&ids[..warmup]);
    let before = cache.stats();
    cache.replay(&ids[warmup..]);
    Ok(difference(cache.stats(), before))
}

fn difference(after: TwoLevelStats, before: TwoLevelStats) -> TwoLevelStats {
    TwoLevelStats {
        requests: after.requests - before.requests,
        upper_hits: after.upper_hits - before.upper_hits,
        lower_requests: after.lower_requests - before.lower_requests,
        lower_hits: after.lower_hits - before.lower_hits,
        demotions: after.demotions - before.demotions,
    }
}

/// [`simulate`] for every configuration on up to `threads` threads. `on_done` is
/// called (from worker threads) with the number finished so far. Results come back
/// in the order of `configs`. Every configuration is checked before any runs.
pub fn simulate_all(
    configs: &[SimConfig],
    requests: &[BlockId],
    warmup: usize,
    threads: usize,
    on_done: &(dyn Fn(usize) + Sync),
) -> Result<Vec<SimResult>, CacheError> {
    for config in configs {
        Cache::build(config)?;
    }
    // One renumbering pass shared by every fast configuration.
    let dense = configs
        .iter()
        .any(fast::supports)
        .then(|| DenseTrace::from_ids(requests));
    run_all(configs, threads, on_done, |config| match &dense {
        Some(dense) if fast::supports(config) => simulate_dense(config, dense, warmup),
        _ => simulate_reference(config, requests, warmup),
    })
}

/// [`simulate_all`] on a dense trace (e.g. a mapped binary trace); configurations
/// without a fast path share one widened copy of the ids.
pub fn simulate_all_dense(
    configs: &[SimConfig],
    trace: &DenseTrace<'_>,
    warmup: usize,
    threads: usize,
    on_done: &(dyn Fn(usize) + Sync),
) -> Result<Vec<SimResult>, CacheError> {
    for config in configs {
        Cache::build(config)?;
    }
    let wide = std::sync::OnceLock::new();
    run_all(configs, threads, on_done, |config| {
        if fast::supports(config) {
            simulate_dense(config, trace, warmup)
        } else {
            simulate_reference(config, wide.get_or_init(|| trace.to_block_ids()), warmup)
        }
    })
}

/// Runs `one` for every configuration on up to `threads` threads, results in order.
fn run_all(
    configs: &[SimConfig],
    threads: usize,
    on_done: &(dyn Fn(usize) + Sync),
    one: impl Fn(&SimConfig) -> Result<TwoLevelStats, CacheError> + Sync,
) -> Result<Vec<SimResult>, CacheError> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<SimResult>>> = Mutex::new(vec![None; configs.len()]);
    let first_error: Mutex<Option<CacheError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, configs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(config) = configs.get(i) else { break };
                match one(config) {
                    Ok(stats) => {
                        results.lock().expect("results lock")[i] = Some(SimResult {
                            config: config.clone(),
                            stats,
                        });
                    }
                    Err(e) => {
                        first_error.lock().expect("error lock").get_or_insert(e);
                    }
                }
                on_done(done.fetch_add(1, Ordering::Relaxed) + 1);
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("error lock") {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .map(|r| r.expect("every configuration ran"))
        .collect())
}

/// The requests that reach the level below a cache of `policy`/`capacity`: its
/// misses, in order — the input for reuse-distance analysis of the lower level.
pub fn misses_of(
    policy: &str,
    capacity: usize,
    requests: &[BlockId],
) -> Result<Vec<BlockId>, CacheError> {
    let mut cache = make_policy_seeded(policy, capacity, DEFAULT_SEED)?;
    Ok(requests
        .iter()
        .copied()
        .filter(|&id| !serve(cache.as_mut(), id).is_hit())
        .collect())
}

/// Threads to use when the caller has no preference.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
