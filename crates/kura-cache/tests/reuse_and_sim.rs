//! Reuse distances against a brute-force count, the simulator runner, and paper 004's
//! qualitative results on the scaled-down experiment.

use std::collections::HashSet;

use kura_cache::paper004::{Paper004, DEMOTE};
use kura_cache::reuse::{histogram, stack_distances};
use kura_cache::sim::{misses_of, simulate, simulate_all};
use kura_cache::trace::synthetic;
use kura_cache::{BlockId, Level, Mode, SimConfig, Trace};
use proptest::prelude::*;

/// Distinct blocks strictly between each request and the previous one for its block.
fn brute_force(requests: &[BlockId]) -> Vec<Option<u64>> {
    (0..requests.len())
        .map(|t| {
            let prev = (0..t).rev().find(|&p| requests[p] == requests[t])?;
            let between: HashSet<_> = requests[prev + 1..t].iter().collect();
            Some(between.len() as u64)
        })
        .collect()
}

proptest! {
    #[test]
    fn stack_distances_equal_brute_force(trace in prop::collection::vec(0u64..30, 0..300)) {
        prop_assert_eq!(stack_distances(&trace), brute_force(&trace));
    }

    #[test]
    fn lru_hits_exactly_the_requests_closer_than_its_size(
        trace in prop::collection::vec(0u64..40, 1..400),
        capacity in 1usize..30,
    ) {
        let stats = simulate(&SimConfig::single("lru", capacity), &trace, 0).unwrap();
        let closer = stack_distances(&trace)
            .iter()
            .filter(|d| d.is_some_and(|d| d < capacity as u64))
            .count() as u64;
        prop_assert_eq!(stats.upper_hits, closer);
    }
}

#[test]
fn histogram_bins_distances_in_bytes() {
    // a b a c b a: distances -, -, 1, -, 2, 2 (blocks) → 4 KiB, 8 KiB, 8 KiB.
    let t = Trace::new("t", vec![1, 2, 1, 3, 2, 1], 4096);
    let h = histogram(&t, 8192);
    assert_eq!(h.first_requests, 3);
    assert_eq!(h.counts, vec![1, 2]);
    assert_eq!(h.reaccesses(), 3);
}

#[test]
fn parallel_runs_equal_sequential_ones() {
    let trace = synthetic::zipf(2_000, 0.9, 50_000, 5).unwrap();
    let configs: Vec<SimConfig> = ["lru", "arc", "rand", "s3fifo"]
        .iter()
        .map(|p| SimConfig::single(*p, 200))
        .chain(std::iter::once(SimConfig::two_level(
            Level::new("lru", 100),
            Level::new("mru", 300),
            Mode::Exclusive,
        )))
        .collect();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let results = simulate_all(&configs, &trace.requests, 1_000, 3, &|_| {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(calls.into_inner(), configs.len());
    for (config, result) in configs.iter().zip(&results) {
        assert_eq!(&result.config, config);
        let alone = simulate(config, &trace.requests, 1_000).unwrap();
        assert_eq!(result.stats, alone, "{}", config.describe());
        assert_eq!(alone.requests, 49_000);
    }
    // zipf has locality: every policy hits far more than size/data = 10 %
    assert!(results.iter().all(|r| r.stats.overall_hit_ratio() > 0.3));
    let bad = [SimConfig::single("nope", 10)];
    assert!(simulate_all(&bad, &trace.requests, 0, 2, &|_| {}).is_err());
}

#[test]
fn lower_level_stream_is_the_upper_misses() {
    let trace: Vec<BlockId> = vec![1, 2, 1, 3, 1, 2];
    // LRU(2): 1 m, 2 m, 1 h, 3 m (evicts 2), 1 h, 2 m.
    assert_eq!(misses_of("lru", 2, &trace).unwrap(), vec![1, 2, 3, 2]);
}

#[test]
fn paper004_quick_reproduces_the_papers_findings() {
    let p = Paper004::quick();
    assert_eq!(p.data_blocks(), 24_414); // 100 MB of 4 KiB blocks
    let rows = p.run(2, &|_| {}).unwrap();
    assert_eq!(rows.len(), 3 * 4 * 10);
    let d = p.data_blocks() as f64;
    let lower_ratio = |u: u64, l: u64, policy: &str| {
        rows.iter()
            .find(|r| r.upper_bytes == u && r.lower_bytes == l && r.policy == policy)
            .unwrap()
            .stats
            .lower_hit_ratio()
    };
    for &u in &p.upper_bytes {
        for &l in &p.lower_bytes {
            let demote = lower_ratio(u, l, DEMOTE);
            let (ub, lb) = (p.blocks(u) as f64, p.blocks(l) as f64);
            let expected = lb / (d - ub);
            assert!(
                (demote - expected).abs() / expected < 0.01,
                "demote {demote} vs {expected}"
            );
            // The proposal wins everywhere.
            for policy in &p.lower_policies {
                if policy != DEMOTE {
                    let other = lower_ratio(u, l, policy);
                    assert!(
                        other < demote,
                        "U={u} L={l}: {policy} {other} ≥ demote {demote}"
                    );
                }
            }
            // LRU below is worse than no locality (L/D).
            assert!(lower_ratio(u, l, "lru") < lb / d);
        }
    }
    // As the upper cache grows, demote's lower hit ratio rises and LRU's falls.
    let l = p.lower_bytes[0];
    let (u_small, u_big) = (p.upper_bytes[0], p.upper_bytes[2]);
    assert!(lower_ratio(u_big, l, DEMOTE) > lower_ratio(u_small, l, DEMOTE));
    assert!(lower_ratio(u_big, l, "lru") < lower_ratio(u_small, l, "lru"));
}
