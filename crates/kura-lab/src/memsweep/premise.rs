//! Paper 001's premise, measured: a sweep shows what memory buys only when each
//! shape's working set — the distinct pages one run reads into an empty pool
//! that holds them all — lies above the smallest buffer and within the largest.
//! Compression and the scale factor move the working sets, so they are measured
//! on the database at hand and the buffers are chosen around them.

use std::path::Path;

use kura::OpenOptions;

use super::{shape_session, Shape};
use crate::error::{At, LabResult};

/// One shape's working set.
#[derive(Debug, Clone)]
pub struct WorkingSet {
    pub shape: &'static str,
    pub bytes: u64,
    /// Pages one run fixes (touches, with repeats).
    pub fixes: u64,
}

/// The smallest buffer holds at most this share of the smallest working set,
/// so every shape misses there (and prefetch has runs to read ahead).
const SMALLEST_SHARE: u64 = 4;

/// No pool is made smaller than this (room for a query's own pages).
const FLOOR: u64 = 256 << 10;

/// Each shape's working set: one run, prefetch off, in `mode`, on a pool of at
/// least `data_bytes` (so nothing is evicted) that starts empty.
pub fn measure(
    db_path: &Path,
    shapes: &[Shape],
    mode: &str,
    data_bytes: u64,
) -> LabResult<Vec<WorkingSet>> {
    let mut sets = Vec::new();
    for shape in shapes {
        let opts = OpenOptions {
            buffer_bytes: Some(data_bytes.next_power_of_two().max(16 << 20)),
            buffered_io: false,
            ..OpenOptions::default()
        };
        let (db, mut session) = shape_session(db_path, opts, mode, false, shape)?;
        let bm = db.storage().buffer().clone();
        let before = bm.stats();
        session.execute(shape.sql).at(shape.name)?;
        let d = bm.stats().since(&before);
        sets.push(WorkingSet {
            shape: shape.name,
            bytes: d.pages_read * db.storage().page_size() as u64,
            fixes: d.fixes,
        });
    }
    Ok(sets)
}

fn floor_pow2(x: u64) -> u64 {
    if x <= 1 {
        1
    } else {
        1u64 << (63 - x.leading_zeros())
    }
}

/// Buffers that straddle every working set: powers of two from at most a
/// quarter of the smallest working set up to one that holds the largest;
/// `quick` keeps the smallest, one in the middle and the largest.
pub fn buffers_for(sets: &[WorkingSet], quick: bool) -> Vec<u64> {
    let smallest_ws = sets.iter().map(|s| s.bytes).min().unwrap_or(16 << 20);
    let largest_ws = sets.iter().map(|s| s.bytes).max().unwrap_or(16 << 20);
    let low = floor_pow2(smallest_ws / SMALLEST_SHARE).max(FLOOR);
    let high = largest_ws.max(1).next_power_of_two().max(low * 2);
    let mut all = Vec::new();
    let mut b = low;
    while b < high {
        all.push(b);
        b *= 2;
    }
    all.push(high);
    if quick && all.len() > 3 {
        return vec![all[0], all[all.len() / 2], all[all.len() - 1]];
    }
    all
}

/// Why the buffers do not straddle the working sets, or `None` when they do.
pub fn failure(sets: &[WorkingSet], buffers: &[u64]) -> Option<String> {
    let (Some(&small), Some(&large)) = (buffers.iter().min(), buffers.iter().max()) else {
        return Some("no buffer sizes".into());
    };
    let mut why = Vec::new();
    for s in sets {
        if s.bytes <= small {
            why.push(format!(
                "{}'s working set ({:.1} MiB) fits the smallest buffer ({:.1} MiB)",
                s.shape,
                mib(s.bytes),
                mib(small)
            ));
        } else if s.bytes > large {
            why.push(format!(
                "{}'s working set ({:.1} MiB) does not fit the largest buffer ({:.1} MiB)",
                s.shape,
                mib(s.bytes),
                mib(large)
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// The line that opens the sweep's output.
pub fn line(sets: &[WorkingSet], buffers: &[u64]) -> String {
    let ws = sets
        .iter()
        .map(|s| format!("{} {:.1} MiB", s.shape, mib(s.bytes)))
        .collect::<Vec<_>>()
        .join(", ");
    let range = format!(
        "buffers {:.1}–{:.1} MiB",
        mib(buffers.iter().copied().min().unwrap_or(0)),
        mib(buffers.iter().copied().max().unwrap_or(0))
    );
    match failure(sets, buffers) {
        None => format!(
            "premise holds: working sets (distinct pages of one run) {ws}; {range}: each shape misses at the smallest and fits the largest"
        ),
        Some(why) => format!("premise does NOT hold: working sets {ws}; {range}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(shape: &'static str, mib: u64) -> WorkingSet {
        WorkingSet {
            shape,
            bytes: mib << 20,
            fixes: 0,
        }
    }

    #[test]
    fn buffers_straddle_every_working_set() {
        let sets = [ws("scan", 20), ws("join3", 12), ws("join4", 80)];
        let all = buffers_for(&sets, false);
        assert_eq!(all.first(), Some(&(2 << 20)));
        assert_eq!(all.last(), Some(&(128 << 20)));
        assert!(failure(&sets, &all).is_none());
        let quick = buffers_for(&sets, true);
        assert_eq!(quick, vec![2 << 20, 16 << 20, 128 << 20]);
        assert!(line(&sets, &quick).starts_with("premise holds"));
    }

    #[test]
    fn a_sweep_above_the_working_sets_is_named() {
        // paper 001's quick sweep at SF 0.1 before: every shape fit 16 MiB
        let sets = [ws("scan", 10), ws("join4", 14)];
        let why = failure(&sets, &[16 << 20, 64 << 20, 128 << 20]).unwrap();
        assert!(
            why.contains("scan's working set (10.0 MiB) fits the smallest buffer (16.0 MiB)"),
            "{why}"
        );
        assert!(why.contains("join4"), "{why}");
        assert!(failure(&sets, &[1 << 20, 8 << 20])
            .unwrap()
            .contains("does not fit the largest"));
    }
}
