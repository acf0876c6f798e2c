//! Miss classes of sampled load misses (paper 002's proposal, hardware path): the
//! cache geometry from sysfs gives each missing address its set; sets that take
//! far more than their share of misses are conflict candidates, lines that miss
//! again and again are capacity candidates, lines seen missing once are first
//! touches (compulsory candidates). Samples are sparse (one load in N), so these
//! are estimates from the sampled addresses, labelled as such.

use std::collections::HashMap;

use kura_cache::cpu::Geometry;
use serde::{Deserialize, Serialize};

use crate::records::Sample;

/// A set with more sampled misses than its share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampledHotSet {
    pub set: u64,
    pub misses: u64,
    /// Misses over the mean per set.
    pub over_mean: f64,
}

/// The sampled misses of one cache level, by class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampledMissClasses {
    /// `L1d` or `LLC`.
    pub level: String,
    pub geometry: String,
    /// Sampled loads that missed this level and carry a data address.
    pub misses: u64,
    /// Misses on a line no earlier sampled miss of this level touched.
    pub first_touches: u64,
    /// Misses on a line that missed before (capacity candidates).
    pub repeats: u64,
    /// Misses in sets with at least [`HOT_SET_FACTOR`] times the mean per set
    /// and at least two misses (conflict candidates).
    pub in_hot_sets: u64,
    /// The sets with the most misses, most first.
    pub hot_sets: Vec<SampledHotSet>,
}

/// A set is hot when it takes this many times the mean misses per set.
pub const HOT_SET_FACTOR: f64 = 4.0;

/// Classifies the sampled L1d misses against the first level of `levels` and
/// the LLC misses against the last (the data-side hierarchy, L1d first).
/// Levels without any sampled miss are left out.
pub fn classify(samples: &[Sample], levels: &[Geometry], top: usize) -> Vec<SampledMissClasses> {
    let mut out = Vec::new();
    let (Some(first), Some(last)) = (levels.first(), levels.last()) else {
        return out;
    };
    let mut in_time: Vec<&Sample> = samples.iter().filter(|s| s.addr.is_some()).collect();
    in_time.sort_by_key(|s| s.time);
    let l1: Vec<u64> = in_time
        .iter()
        .filter(|s| s.l1_miss())
        .filter_map(|s| s.addr)
        .collect();
    let llc: Vec<u64> = in_time
        .iter()
        .filter(|s| s.llc_miss())
        .filter_map(|s| s.addr)
        .collect();
    for (name, geometry, addrs) in [("L1d", first, l1), ("LLC", last, llc)] {
        if !addrs.is_empty() {
            out.push(classify_level(name, geometry, &addrs, top));
        }
    }
    out
}

fn classify_level(name: &str, g: &Geometry, addrs: &[u64], top: usize) -> SampledMissClasses {
    let line_size = u64::from(g.line_size.max(1));
    let sets = u64::from(g.sets.max(1));
    let mut seen: HashMap<u64, u64> = HashMap::new();
    let mut per_set: HashMap<u64, u64> = HashMap::new();
    let mut first_touches = 0;
    for &addr in addrs {
        let line = addr / line_size;
        let n = seen.entry(line).or_insert(0);
        if *n == 0 {
            first_touches += 1;
        }
        *n += 1;
        *per_set.entry(line % sets).or_insert(0) += 1;
    }
    let misses = addrs.len() as u64;
    let mean = misses as f64 / sets as f64;
    let hot = |count: u64| count >= 2 && count as f64 >= HOT_SET_FACTOR * mean;
    let in_hot_sets = per_set.values().filter(|&&c| hot(c)).sum();
    let mut hot_sets: Vec<SampledHotSet> = per_set
        .iter()
        .filter(|(_, &c)| hot(c))
        .map(|(&set, &c)| SampledHotSet {
            set,
            misses: c,
            over_mean: c as f64 / mean,
        })
        .collect();
    hot_sets.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.set.cmp(&b.set)));
    hot_sets.truncate(top);
    SampledMissClasses {
        level: name.into(),
        geometry: g.describe(),
        misses,
        first_touches,
        repeats: misses - first_touches,
        in_hot_sets,
        hot_sets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(time: u64, addr: u64, level: &str) -> Sample {
        Sample {
            ip: 0x401000,
            tid: 1,
            time,
            addr: Some(addr),
            level: Some(level.into()),
            latency: Some(100),
            callchain: Vec::new(),
        }
    }

    #[test]
    fn first_touches_repeats_and_hot_sets() {
        // 4 KiB, 1-way, 64 B lines: 64 sets; addresses 4 KiB apart share a set.
        let l1 = Geometry::new(1, 4096, 1, 64).unwrap();
        let llc = Geometry::new(3, 1 << 20, 16, 64).unwrap();
        let samples = vec![
            load(1, 0x10000, "RAM"),
            load(2, 0x11000, "L2"),
            load(3, 0x12000, "L2"),
            load(4, 0x10000, "RAM"), // the same line again
            load(5, 0x20040, "L1"),  // a hit: not a miss of any level
            load(6, 0x30080, "L3"),
        ];
        let c = classify(&samples, &[l1, llc], 5);
        assert_eq!(c.len(), 2);
        let l1 = &c[0];
        assert_eq!((l1.level.as_str(), l1.misses), ("L1d", 5));
        assert_eq!((l1.first_touches, l1.repeats), (4, 1));
        // Set 0 takes 4 of 5 misses over 64 sets: hot; set 2 (0x30080) is not.
        assert_eq!(l1.hot_sets.len(), 1);
        assert_eq!((l1.hot_sets[0].set, l1.hot_sets[0].misses), (0, 4));
        assert_eq!(l1.in_hot_sets, 4);
        let llc = &c[1];
        assert_eq!((llc.level.as_str(), llc.misses), ("LLC", 2));
        assert_eq!((llc.first_touches, llc.repeats), (1, 1));
        // No sampled address: nothing to classify.
        let none: Vec<Sample> = samples
            .iter()
            .map(|s| Sample {
                addr: None,
                ..s.clone()
            })
            .collect();
        assert!(classify(&none, &[Geometry::new(1, 4096, 1, 64).unwrap()], 5).is_empty());
    }
}
