//! The simulator's fast path (paper 004's experiments at libCacheSim speed): traces
//! with dense `u32` block ids, policies whose state lives in arrays indexed by id
//! (no hashing, intrusive `u32` links), static dispatch in the replay loop, and
//! software prefetching of the entries the next requests will touch (the trace is
//! known ahead). Every policy here makes exactly the decisions of its reference in
//! [`crate::policies`] — the code the buffer manager runs — which tests check
//! request by request; policies without a port here replay through the reference.

mod arc;
mod clock;
mod dense;
mod lists;
mod recency;
mod sieve;
mod two_q;

pub use dense::DenseTrace;

use crate::policies::RecencyKind;
use crate::sim_config::{Level, SimConfig};
use crate::two_level::{Mode, Served, TwoLevelStats};

/// Policies with a fast-path port (names as [`crate::make_policy`] accepts them).
pub const FAST_POLICIES: &[&str] = &["lru", "mru", "fifo", "clock", "arc", "2q", "sieve"];

/// Requests ahead whose first entry is prefetched.
const FAR: usize = 16;
/// Requests ahead whose neighbours are prefetched (their entry has arrived by then).
const NEAR: usize = 6;

/// Hint to bring the cache line at `p` into L1; no effect on results.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint that never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A replacement policy over dense ids `0..universe`, every block evictable. The
/// protocol is [`crate::Policy`]'s: `touch`, and on a miss `evict_for` when full,
/// then `insert`.
pub(crate) trait DensePolicy {
    fn touch(&mut self, id: u32) -> bool;
    fn contains(&self, id: u32) -> bool;
    fn remove(&mut self, id: u32) -> bool;
    fn is_full(&self) -> bool;
    fn evict_for(&mut self, incoming: u32) -> Option<u32>;
    fn insert(&mut self, id: u32);
    fn insert_protected(&mut self, id: u32) {
        self.insert(id);
    }
    /// Start loading what a request for `id` reads first.
    fn prefetch(&self, id: u32);
    /// Start loading what a request for `id` writes next (its list neighbours).
    fn prefetch_deep(&self, _id: u32) {}
    /// The block the next eviction will most likely choose (`None` if unknown): an
    /// exclusive lower level prefetches its entry for the demotion to come.
    fn victim_hint(&self) -> Option<u32> {
        None
    }
}

enum AnyDense {
    Recency(recency::DenseRecency),
    Clock(clock::DenseClock),
    Arc(arc::DenseArc),
    TwoQ(two_q::DenseTwoQ),
    Sieve(sieve::DenseSieve),
}

/// Runs `$body` with `$p` bound to the concrete policy, so loops inside are
/// monomorphised per policy.
macro_rules! with_policy {
    ($any:expr, $p:ident => $body:expr) => {
        match $any {
            AnyDense::Recency($p) => $body,
            AnyDense::Clock($p) => $body,
            AnyDense::Arc($p) => $body,
            AnyDense::TwoQ($p) => $body,
            AnyDense::Sieve($p) => $body,
        }
    };
}

impl AnyDense {
    fn build(level: &Level, universe: usize) -> Option<Self> {
        let c = level.capacity;
        if c == 0 || c > crate::MAX_CAPACITY || universe > lists::MAX_UNIVERSE {
            return None;
        }
        Some(match level.policy.to_ascii_lowercase().as_str() {
            "lru" => AnyDense::Recency(recency::DenseRecency::new(RecencyKind::Lru, c, universe)),
            "mru" => AnyDense::Recency(recency::DenseRecency::new(RecencyKind::Mru, c, universe)),
            "fifo" => AnyDense::Recency(recency::DenseRecency::new(RecencyKind::Fifo, c, universe)),
            "clock" => AnyDense::Clock(clock::DenseClock::new(c, universe)),
            "arc" => AnyDense::Arc(arc::DenseArc::new(c, universe)),
            "2q" => AnyDense::TwoQ(two_q::DenseTwoQ::new(c, universe)),
            "sieve" => AnyDense::Sieve(sieve::DenseSieve::new(c, universe)),
            _ => return None,
        })
    }
}

/// Whether every level of `config` has a fast-path port.
pub fn supports(config: &SimConfig) -> bool {
    let fast = |l: &Level| FAST_POLICIES.contains(&l.policy.to_ascii_lowercase().as_str());
    fast(&config.upper) && config.lower.as_ref().is_none_or(|(l, _)| fast(l))
}

enum Levels {
    Single(AnyDense),
    Two(AnyDense, AnyDense, Mode),
}

/// A one- or two-level cache on the fast path, counting as [`crate::TwoLevel`] does
/// (a single cache's misses count as lower requests).
pub struct FastCache {
    levels: Levels,
    stats: TwoLevelStats,
}

impl FastCache {
    /// `None` if a level's policy has no fast port (or its capacity is invalid).
    pub fn new(config: &SimConfig, universe: usize) -> Option<Self> {
        let upper = AnyDense::build(&config.upper, universe)?;
        let levels = match &config.lower {
            None => Levels::Single(upper),
            Some((lower, mode)) => Levels::Two(upper, AnyDense::build(lower, universe)?, *mode),
        };
        Some(Self {
            levels,
            stats: TwoLevelStats::default(),
        })
    }

    pub fn stats(&self) -> TwoLevelStats {
        self.stats
    }

    /// Serves one request (ids must be below the universe given to [`Self::new`]).
    pub fn request(&mut self, id: u32) -> Served {
        let stats = &mut self.stats;
        match &mut self.levels {
            Levels::Single(p) => with_policy!(p, p => {
                let hit = serve_single(p, id);
                stats.requests += 1;
                if hit {
                    stats.upper_hits += 1;
                    Served::Upper
                } else {
                    stats.lower_requests += 1;
                    Served::Storage
                }
            }),
            Levels::Two(u, l, mode) => {
                let mode = *mode;
                with_policy!(u, u => with_policy!(l, l => serve_two(u, l, mode, stats, id)))
            }
        }
    }

    /// Serves every request of `ids` in order.
    pub fn replay(&mut self, ids: &[u32]) {
        let stats = &mut self.stats;
        match &mut self.levels {
            Levels::Single(p) => {
                let hits = with_policy!(p, p => replay_single(p, ids));
                let n = ids.len() as u64;
                stats.requests += n;
                stats.upper_hits += hits;
                stats.lower_requests += n - hits;
            }
            Levels::Two(u, l, mode) => {
                let mode = *mode;
                with_policy!(u, u => with_policy!(l, l => replay_two(u, l, mode, stats, ids)))
            }
        }
    }
}

#[inline(always)]
fn serve_single<P: DensePolicy>(p: &mut P, id: u32) -> bool {
    if p.touch(id) {
        return true;
    }
    if p.is_full() && p.evict_for(id).is_none() {
        return false;
    }
    p.insert(id);
    false
}

fn replay_single<P: DensePolicy>(p: &mut P, ids: &[u32]) -> u64 {
    let mut hits = 0u64;
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&ahead) = ids.get(i + FAR) {
            p.prefetch(ahead);
        }
        if let Some(&near) = ids.get(i + NEAR) {
            p.prefetch_deep(near);
        }
        hits += u64::from(serve_single(p, id));
    }
    hits
}

/// [`crate::TwoLevel::request`] on dense policies: the same steps and counters.
#[inline(always)]
fn serve_two<U: DensePolicy, L: DensePolicy>(
    upper: &mut U,
    lower: &mut L,
    mode: Mode,
    stats: &mut TwoLevelStats,
    id: u32,
) -> Served {
    stats.requests += 1;
    if upper.touch(id) {
        stats.upper_hits += 1;
        return Served::Upper;
    }
    stats.lower_requests += 1;
    let lower_hit = lower.contains(id);
    stats.lower_hits += u64::from(lower_hit);
    match mode {
        Mode::Inclusive => {
            if lower_hit {
                lower.touch(id);
            } else if !lower.is_full() || lower.evict_for(id).is_some() {
                lower.insert(id);
            }
            upper_insert(upper, id);
        }
        Mode::Exclusive => {
            if lower_hit {
                lower.remove(id);
            }
            if let Some(victim) = upper_insert(upper, id) {
                if !lower.is_full() || lower.evict_for(victim).is_some() {
                    lower.insert_protected(victim);
                    stats.demotions += 1;
                }
            }
        }
    }
    if lower_hit {
        Served::Lower
    } else {
        Served::Storage
    }
}

/// Caches `id` above; returns the block that left the upper level (its victim, or
/// `id` itself if nothing could be evicted), as `TwoLevel::upper_insert`.
#[inline(always)]
fn upper_insert<U: DensePolicy>(upper: &mut U, id: u32) -> Option<u32> {
    let mut victim = None;
    if upper.is_full() {
        victim = upper.evict_for(id);
        if victim.is_none() {
            return Some(id);
        }
    }
    upper.insert(id);
    victim
}

fn replay_two<U: DensePolicy, L: DensePolicy>(
    upper: &mut U,
    lower: &mut L,
    mode: Mode,
    stats: &mut TwoLevelStats,
    ids: &[u32],
) {
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&ahead) = ids.get(i + FAR) {
            upper.prefetch(ahead);
            lower.prefetch(ahead);
        }
        if let Some(&near) = ids.get(i + NEAR) {
            upper.prefetch_deep(near);
        }
        serve_two(upper, lower, mode, stats, id);
        if let Some(victim) = upper.victim_hint() {
            lower.prefetch(victim);
        }
    }
}
