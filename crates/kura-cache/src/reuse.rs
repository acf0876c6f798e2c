//! Reuse (re-access) distance of a trace, paper 004 figures 3–4: for every request of
//! a block seen before, the number of *distinct* other blocks requested since its
//! previous request — its LRU stack distance; times the block size it is a distance
//! in bytes. An LRU cache of c blocks hits exactly the requests with distance < c.
//!
//! Computed exactly in O(n log n) with a Fenwick tree over request positions that
//! marks, for every block, only its latest request: the distance is the number of
//! marks between the previous and the current request.

use crate::policy::BlockId;
use crate::trace::Trace;
use crate::util::idmap::id_map_with_capacity;

/// Calls `f(distance)` per request: `None` for a block's first request.
pub fn for_each_distance(requests: &[BlockId], mut f: impl FnMut(Option<u64>)) {
    let n = requests.len();
    let mut marks = Fenwick::new(n);
    let mut last = id_map_with_capacity::<usize>(0);
    for (t, &id) in requests.iter().enumerate() {
        match last.insert(id, t) {
            Some(prev) => {
                // Marks in (prev, t) are the distinct blocks requested in between.
                let between = marks.prefix(t) - marks.prefix(prev + 1);
                marks.add(prev, -1);
                f(Some(between as u64));
            }
            None => f(None),
        }
        marks.add(t, 1);
    }
}

/// Distance of every request (`None` = first request of its block).
pub fn stack_distances(requests: &[BlockId]) -> Vec<Option<u64>> {
    let mut out = Vec::with_capacity(requests.len());
    for_each_distance(requests, |d| out.push(d));
    out
}

/// Histogram of reuse distances in bytes with fixed-width bins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReuseHistogram {
    pub bin_bytes: u64,
    /// `counts[i]` = re-accesses with distance in `[i·bin, (i+1)·bin)` bytes.
    pub counts: Vec<u64>,
    /// Requests for blocks never requested before.
    pub first_requests: u64,
}

impl ReuseHistogram {
    pub fn reaccesses(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Reuse-distance histogram of `trace` (distance in bytes = distinct blocks ×
/// block size), `bin_bytes` per bin.
pub fn histogram(trace: &Trace, bin_bytes: u64) -> ReuseHistogram {
    let bin_bytes = bin_bytes.max(1);
    let mut h = ReuseHistogram {
        bin_bytes,
        counts: Vec::new(),
        first_requests: 0,
    };
    for_each_distance(&trace.requests, |d| match d {
        None => h.first_requests += 1,
        Some(d) => {
            let bin = (d.saturating_mul(trace.block_size) / bin_bytes) as usize;
            if bin >= h.counts.len() {
                h.counts.resize(bin + 1, 0);
            }
            h.counts[bin] += 1;
        }
    });
    h
}

/// Fenwick (binary indexed) tree of signed counts over positions `0..n`.
struct Fenwick {
    tree: Vec<i32>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Self {
            tree: vec![0; n + 1],
        }
    }

    fn add(&mut self, pos: usize, delta: i32) {
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `0..end`.
    fn prefix(&self, end: usize) -> i64 {
        let mut i = end;
        let mut sum = 0i64;
        while i > 0 {
            sum += i64::from(self.tree[i]);
            i &= i - 1;
        }
        sum
    }
}
