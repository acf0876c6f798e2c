//! Two-level caches: a hand-worked trace, and paper 004's analytic results on uniform
//! random reads (D blocks of data, upper size U, lower size L).

use kura_cache::{make_policy, Mode, Served, SplitMix64, TwoLevel};

fn two_level(upper: &str, u: usize, lower: &str, l: usize, mode: Mode) -> TwoLevel {
    TwoLevel::new(
        make_policy(upper, u).unwrap(),
        make_policy(lower, l).unwrap(),
        mode,
    )
}

fn served(cache: &mut TwoLevel, trace: &[u64]) -> String {
    trace
        .iter()
        .map(|&id| match cache.request(id) {
            Served::Upper => 'U',
            Served::Lower => 'L',
            Served::Storage => 'S',
        })
        .collect()
}

#[test]
fn demote_keeps_upper_victims_below_while_inclusive_duplicates() {
    // Worked by hand with upper LRU(2) over lower MRU/LRU(2).
    let trace = [1, 2, 3, 1, 4, 5, 3, 5];
    let mut exclusive = two_level("lru", 2, "mru", 2, Mode::Exclusive);
    assert_eq!(served(&mut exclusive, &trace), "SSSLSSLU");
    let s = exclusive.stats();
    assert_eq!(
        (s.requests, s.upper_hits, s.lower_requests, s.lower_hits),
        (8, 1, 7, 2)
    );
    // No block is in both levels.
    for id in 1..=5 {
        assert!(!(exclusive.upper().contains(id) && exclusive.lower().contains(id)));
    }
    let mut inclusive = two_level("lru", 2, "lru", 2, Mode::Inclusive);
    assert_eq!(served(&mut inclusive, &trace), "SSSSSSSU");
    assert!(inclusive.upper().contains(5) && inclusive.lower().contains(5));
}

/// Lower-level hit ratio on uniform random single-block reads, measured after the
/// caches are warm.
fn uniform_lower_hit_ratio(d: u64, u: usize, l: usize, lower: &str, mode: Mode) -> f64 {
    let mut cache = two_level("lru", u, lower, l, mode);
    let mut rng = SplitMix64::new(42);
    for _ in 0..20 * d {
        cache.request(rng.below(d));
    }
    let warm = cache.stats();
    for _ in 0..150 * d {
        cache.request(rng.below(d));
    }
    let s = cache.stats();
    (s.lower_hits - warm.lower_hits) as f64 / (s.lower_requests - warm.lower_requests) as f64
}

const D: u64 = 5_000;
/// Paper 004's upper/lower sizes (2–4 GB, 2–5 GB of 10 GB), scaled to D.
const SIZES: &[(usize, usize)] = &[(1000, 1000), (1500, 2000), (2000, 2500), (2000, 1000)];

#[test]
fn demote_lower_hit_ratio_is_l_over_d_minus_u() {
    for &(u, l) in SIZES {
        let expected = l as f64 / (D as f64 - u as f64);
        for lower in ["mru", "lru"] {
            let got = uniform_lower_hit_ratio(D, u, l, lower, Mode::Exclusive);
            assert!(
                (got - expected).abs() / expected < 0.01,
                "exclusive {lower} U={u} L={l}: {got:.4} vs L/(D-U) = {expected:.4}"
            );
        }
    }
}

#[test]
fn inclusive_lru_below_is_strictly_worse_than_demote() {
    for &(u, l) in SIZES {
        let demote = uniform_lower_hit_ratio(D, u, l, "mru", Mode::Exclusive);
        let inclusive = uniform_lower_hit_ratio(D, u, l, "lru", Mode::Inclusive);
        assert!(
            inclusive < demote * 0.99,
            "U={u} L={l}: inclusive LRU {inclusive:.4} vs demote {demote:.4}"
        );
        // Paper 004: below even what no locality at all would give (L/D).
        let no_locality = l as f64 / D as f64;
        assert!(
            inclusive < no_locality,
            "U={u} L={l}: inclusive LRU {inclusive:.4} vs L/D {no_locality:.4}"
        );
    }
}

#[test]
fn fix_below_hits_l_over_d() {
    for &(u, l) in SIZES {
        let expected = l as f64 / D as f64;
        let got = uniform_lower_hit_ratio(D, u, l, "fix", Mode::Inclusive);
        assert!(
            (got - expected).abs() / expected < 0.01,
            "FIX U={u} L={l}: {got:.4} vs L/D = {expected:.4}"
        );
    }
}
