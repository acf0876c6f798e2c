//! The simulator's fast path against the reference policies (the buffer manager's
//! code): on random traces every ported policy, alone and in every two-level pairing
//! and mode, must serve every request from the same level, and `simulate` must count
//! exactly what the reference counts — also on scattered ids that get renumbered.

use kura_cache::fast::{DenseTrace, FastCache, FAST_POLICIES};
use kura_cache::sim::{simulate, simulate_reference};
use kura_cache::{make_policy, serve, BlockId, Level, Mode, Served, SimConfig, TwoLevel};
use proptest::prelude::*;

fn trace() -> impl Strategy<Value = Vec<BlockId>> {
    prop::collection::vec(
        prop_oneof![3 => 0u64..6, 2 => 0u64..16, 1 => 0u64..40],
        1..500,
    )
}

fn check_single(policy: &str, capacity: usize, trace: &[BlockId]) -> Result<(), TestCaseError> {
    let config = SimConfig::single(policy, capacity);
    let mut fast = FastCache::new(&config, 40).expect("fast policy");
    let mut reference = make_policy(policy, capacity).unwrap();
    for (i, &x) in trace.iter().enumerate() {
        let want = if serve(reference.as_mut(), x).is_hit() {
            Served::Upper
        } else {
            Served::Storage
        };
        prop_assert_eq!(
            fast.request(x as u32),
            want,
            "{}({}) request {}",
            policy,
            capacity,
            i
        );
    }
    Ok(())
}

fn check_two(
    upper: &str,
    lower: &str,
    (u, l): (usize, usize),
    mode: Mode,
    trace: &[BlockId],
) -> Result<(), TestCaseError> {
    let config = SimConfig::two_level(Level::new(upper, u), Level::new(lower, l), mode);
    let mut fast = FastCache::new(&config, 40).expect("fast policies");
    let mut reference = TwoLevel::new(
        make_policy(upper, u).unwrap(),
        make_policy(lower, l).unwrap(),
        mode,
    );
    for (i, &x) in trace.iter().enumerate() {
        prop_assert_eq!(
            fast.request(x as u32),
            reference.request(x),
            "{} request {}",
            config.describe(),
            i
        );
    }
    prop_assert_eq!(fast.stats(), reference.stats(), "{}", config.describe());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    #[test]
    fn fast_policies_serve_every_request_as_the_reference(
        capacity in 1usize..14,
        lower_capacity in 1usize..14,
        trace in trace(),
    ) {
        for &p in FAST_POLICIES {
            check_single(p, capacity, &trace)?;
        }
        for &upper in FAST_POLICIES {
            for &lower in FAST_POLICIES {
                for mode in [Mode::Inclusive, Mode::Exclusive] {
                    check_two(upper, lower, (capacity, lower_capacity), mode, &trace)?;
                }
            }
        }
    }

    #[test]
    fn simulate_counts_as_the_reference_on_scattered_ids(
        capacity in 1usize..20,
        warmup in 0usize..100,
        trace in trace(),
    ) {
        let scattered: Vec<BlockId> =
            trace.iter().map(|&x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 << 63).collect();
        for &p in FAST_POLICIES {
            let configs = [
                SimConfig::single(p, capacity),
                SimConfig::two_level(Level::new("lru", capacity), Level::new(p, capacity + 3), Mode::Exclusive),
            ];
            for config in &configs {
                let want = simulate_reference(config, &scattered, warmup).unwrap();
                prop_assert_eq!(simulate(config, &scattered, warmup).unwrap(), want, "{}", config.describe());
                prop_assert_eq!(simulate(config, &trace, warmup).unwrap(), simulate_reference(config, &trace, warmup).unwrap());
            }
        }
    }
}

#[test]
fn zipf_replay_counts_as_the_reference_for_every_fast_configuration() {
    let trace = kura_cache::trace::synthetic::zipf(5_000, 0.9, 200_000, 3).unwrap();
    let dense = DenseTrace::from_ids(&trace.requests);
    let mut configs: Vec<SimConfig> = FAST_POLICIES
        .iter()
        .map(|p| SimConfig::single(*p, 500))
        .collect();
    configs.push(SimConfig::two_level(
        Level::new("lru", 300),
        Level::new("mru", 700),
        Mode::Exclusive,
    ));
    for config in &configs {
        let want = simulate_reference(config, &trace.requests, 10_000).unwrap();
        let got = kura_cache::sim::simulate_dense(config, &dense, 10_000).unwrap();
        assert_eq!(got, want, "{}", config.describe());
    }
}
