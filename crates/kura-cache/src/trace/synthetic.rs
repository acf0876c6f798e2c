//! Synthetic traces: uniform random reads (paper 004's workload), Zipf with exponent
//! α (rejection-inversion sampling, O(1) per request), a sequential loop, and a
//! sequential scan mixed with a hot set. All are seeded and reproducible.

use super::{Trace, DEFAULT_BLOCK_SIZE};
use crate::error::CacheError;
use crate::util::rng::SplitMix64;

/// `requests` uniform random reads over blocks `0..blocks`.
pub fn uniform(blocks: u64, requests: usize, seed: u64) -> Result<Trace, CacheError> {
    check_blocks(blocks)?;
    let mut rng = SplitMix64::new(seed);
    let ids = (0..requests).map(|_| rng.below(blocks)).collect();
    Ok(Trace::new(
        format!("uniform({blocks} blocks)"),
        ids,
        DEFAULT_BLOCK_SIZE,
    ))
}

/// `requests` reads of blocks `0..blocks` where block k (0-based) has probability
/// ∝ 1/(k+1)^α.
pub fn zipf(blocks: u64, alpha: f64, requests: usize, seed: u64) -> Result<Trace, CacheError> {
    let sampler = Zipf::new(blocks, alpha)?;
    let mut rng = SplitMix64::new(seed);
    let ids = (0..requests)
        .map(|_| sampler.sample(&mut rng) - 1)
        .collect();
    Ok(Trace::new(
        format!("zipf(α={alpha}, {blocks} blocks)"),
        ids,
        DEFAULT_BLOCK_SIZE,
    ))
}

/// Reads blocks `0..blocks` in order, over and over: LRU's worst case once
/// `blocks` exceeds the cache.
pub fn sequential_loop(blocks: u64, requests: usize) -> Result<Trace, CacheError> {
    check_blocks(blocks)?;
    let ids = (0..requests as u64).map(|i| i % blocks).collect();
    Ok(Trace::new(
        format!("loop({blocks} blocks)"),
        ids,
        DEFAULT_BLOCK_SIZE,
    ))
}

/// With probability `hot_fraction` a uniform read of the hot set `0..hot`, otherwise
/// the next block of a sequential scan over `hot..hot + scan` (wrapping): a table
/// scan polluting a cache that holds a working set.
pub fn scan_with_hot_set(
    hot: u64,
    scan: u64,
    hot_fraction: f64,
    requests: usize,
    seed: u64,
) -> Result<Trace, CacheError> {
    check_blocks(hot)?;
    check_blocks(scan)?;
    if !(0.0..=1.0).contains(&hot_fraction) {
        return Err(CacheError::InvalidConfig(format!(
            "hot fraction must be within 0..1, got {hot_fraction}"
        )));
    }
    let mut rng = SplitMix64::new(seed);
    let mut next_scan = 0;
    let ids = (0..requests)
        .map(|_| {
            if rng.next_f64() < hot_fraction {
                rng.below(hot)
            } else {
                let id = hot + next_scan;
                next_scan = (next_scan + 1) % scan;
                id
            }
        })
        .collect();
    Ok(Trace::new(
        format!("scan({scan} blocks)+hot({hot} blocks, {hot_fraction})"),
        ids,
        DEFAULT_BLOCK_SIZE,
    ))
}

fn check_blocks(blocks: u64) -> Result<(), CacheError> {
    if blocks == 0 {
        return Err(CacheError::InvalidConfig(
            "a synthetic trace needs at least one block".into(),
        ));
    }
    Ok(())
}

/// Zipf sampler over ranks 1..=n by rejection-inversion (Hörmann & Derflinger, 1996),
/// as in Apache Commons RNG: constant expected time, no table.
pub struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    pub fn new(n: u64, exponent: f64) -> Result<Self, CacheError> {
        if n == 0 {
            return Err(CacheError::InvalidConfig(
                "zipf needs at least one block".into(),
            ));
        }
        if !(exponent > 0.0 && exponent.is_finite()) {
            return Err(CacheError::InvalidConfig(format!(
                "zipf exponent α must be a positive number, got {exponent}"
            )));
        }
        let nf = n as f64;
        let mut z = Self {
            n: nf,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(nf + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        Ok(z)
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.exponent) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (log1p_over_x(t) * x).exp()
    }
}

/// log1p(x)/x, accurate near 0.
fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// expm1(x)/x, accurate near 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_frequencies_follow_the_power_law() {
        // α = 1 over 100 ranks: P(1)/P(2) = 2, P(1)/P(10) = 10; H(100) ≈ 5.187.
        let t = zipf(100, 1.0, 400_000, 7).unwrap();
        let mut counts = [0u64; 100];
        for &id in &t.requests {
            counts[id as usize] += 1;
        }
        let p0 = counts[0] as f64 / t.len() as f64;
        assert!((p0 - 1.0 / 5.187).abs() < 0.005, "P(rank 1) = {p0}");
        let r2 = counts[0] as f64 / counts[1] as f64;
        let r10 = counts[0] as f64 / counts[9] as f64;
        assert!((r2 - 2.0).abs() < 0.1, "{r2}");
        assert!((r10 - 10.0).abs() < 0.8, "{r10}");
        // α = 0.5 is flatter, and other α values work too
        let t = zipf(1000, 0.5, 100_000, 7).unwrap();
        assert!(t.requests.iter().all(|&id| id < 1000));
        assert!(zipf(10, 0.0, 1, 1).is_err());
    }

    #[test]
    fn uniform_covers_all_blocks_evenly() {
        let t = uniform(10, 100_000, 3).unwrap();
        let mut counts = [0u64; 10];
        for &id in &t.requests {
            counts[id as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn loop_and_scan_shapes() {
        assert_eq!(
            sequential_loop(3, 7).unwrap().requests,
            vec![0, 1, 2, 0, 1, 2, 0]
        );
        let t = scan_with_hot_set(4, 100, 0.5, 10_000, 1).unwrap();
        let hot = t.requests.iter().filter(|&&id| id < 4).count();
        assert!((4_500..5_500).contains(&hot), "{hot}");
        let scans: Vec<_> = t.requests.iter().filter(|&&id| id >= 4).take(3).collect();
        assert_eq!(scans, vec![&4, &5, &6]);
    }
}

#[cfg(test)]
mod densify_tests {
    use crate::Trace;

    #[test]
    fn densify_renumbers_in_first_request_order() {
        let mut t = Trace::new("t", vec![900, 5, 900, 1 << 60, 5], 4096);
        t.densify();
        assert_eq!(t.requests, vec![0, 1, 0, 2, 1]);
        assert_eq!(t.distinct_blocks(), 3);
    }
}
