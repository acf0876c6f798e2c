//! Cache partitioning replayed (paper 000 where the CPU has no CAT): batches of
//! `(data address, class)` go through two copies of one hierarchy — one with every
//! class filling every LLC way, one with each class's CAT way mask — so the misses
//! per class with partitioning off and on come from the same stream. The stream is
//! abstract: any recorder (or a workload's own knowledge of its objects) feeds it.

use super::hierarchy::{Hierarchy, LevelConfig, LevelCounters};
use crate::error::CacheError;

/// LLC counts of one class, with partitioning off and on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassMisses {
    pub off: LevelCounters,
    pub on: LevelCounters,
}

/// A point in the replay to measure from (counters per class and hierarchy).
#[derive(Clone, Debug, Default)]
pub struct Mark {
    off: Vec<LevelCounters>,
    on: Vec<LevelCounters>,
}

pub struct PartitionSim {
    off: Hierarchy,
    on: Hierarchy,
    classes: usize,
}

fn llc(h: &Hierarchy, class: usize) -> LevelCounters {
    h.counters(class).last().copied().unwrap_or_default()
}

fn minus(a: LevelCounters, b: LevelCounters) -> LevelCounters {
    LevelCounters {
        accesses: a.accesses - b.accesses,
        hits: a.hits - b.hits,
        misses: a.misses - b.misses,
        compulsory: a.compulsory - b.compulsory,
        capacity: a.capacity - b.capacity,
        conflict: a.conflict - b.conflict,
    }
}

impl PartitionSim {
    /// `levels` from the machine (e.g. sysfs), `masks` the LLC way mask of each
    /// class in the partitioned copy; classes not named fill every way.
    pub fn new(levels: Vec<LevelConfig>, masks: &[(usize, u64)]) -> Result<Self, CacheError> {
        let off = Hierarchy::new(levels.clone())?;
        let mut on = Hierarchy::new(levels)?;
        let mut classes = 1;
        for &(class, mask) in masks {
            on.set_llc_way_mask(class, mask)?;
            classes = classes.max(class + 1);
        }
        Ok(Self { off, on, classes })
    }

    /// Changes one class's mask in the partitioned copy (warm-and-protect changes
    /// masks between warming and running).
    pub fn set_mask(&mut self, class: usize, mask: u64) -> Result<(), CacheError> {
        self.classes = self.classes.max(class + 1);
        self.on.set_llc_way_mask(class, mask)
    }

    /// LLC ways of the model.
    pub fn llc_ways(&self) -> u32 {
        self.on.level(self.on.levels() - 1).geometry().ways
    }

    /// LLC bytes of the model.
    pub fn llc_bytes(&self) -> u64 {
        self.on.level(self.on.levels() - 1).geometry().size
    }

    /// Replays one batch; runs of one class go through the batched replay.
    pub fn feed(&mut self, batch: &[(u64, usize)]) {
        let mut run = Vec::new();
        let mut i = 0;
        while i < batch.len() {
            let class = batch[i].1;
            run.clear();
            while i < batch.len() && batch[i].1 == class {
                run.push(batch[i].0);
                i += 1;
            }
            self.feed_class(&run, class);
        }
    }

    /// Replays addresses that all belong to `class`.
    pub fn feed_class(&mut self, addrs: &[u64], class: usize) {
        self.classes = self.classes.max(class + 1);
        self.off.replay(addrs, class);
        self.on.replay(addrs, class);
    }

    /// Empties both copies, as a cache sweep (likwid memsweep) does.
    pub fn sweep(&mut self) {
        self.off.flush();
        self.on.flush();
    }

    /// The counters now, to measure a phase from.
    pub fn mark(&self) -> Mark {
        Mark {
            off: (0..self.classes).map(|c| llc(&self.off, c)).collect(),
            on: (0..self.classes).map(|c| llc(&self.on, c)).collect(),
        }
    }

    /// LLC counts of `class` since `mark`, off and on.
    pub fn since(&self, mark: &Mark, class: usize) -> ClassMisses {
        let before = |v: &Vec<LevelCounters>| v.get(class).copied().unwrap_or_default();
        ClassMisses {
            off: minus(llc(&self.off, class), before(&mark.off)),
            on: minus(llc(&self.on, class), before(&mark.on)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::Geometry;

    const LINE: u64 = 64;

    fn sim(masks: &[(usize, u64)]) -> PartitionSim {
        let levels = vec![
            LevelConfig::lru(Geometry::new(1, 32 << 10, 8, 64).unwrap()),
            LevelConfig::lru(Geometry::new(2, 1 << 20, 16, 64).unwrap()),
        ];
        PartitionSim::new(levels, masks).unwrap()
    }

    /// A hot set of `hot` bytes read line by line (class 0), then a scan of
    /// `scan` bytes elsewhere (class 1), `rounds` times.
    fn hot_and_scan(sim: &mut PartitionSim, hot: u64, scan: u64, rounds: usize) -> ClassMisses {
        let hot_lines: Vec<(u64, usize)> = (0..hot / LINE).map(|l| (l * LINE, 0)).collect();
        let base = 1u64 << 40;
        let scan_lines: Vec<(u64, usize)> =
            (0..scan / LINE).map(|l| (base + l * LINE, 1)).collect();
        sim.feed(&hot_lines); // warm
        let mark = sim.mark();
        for _ in 0..rounds {
            sim.feed(&scan_lines);
            sim.feed(&hot_lines);
        }
        sim.since(&mark, 0)
    }

    #[test]
    fn partitioning_cuts_the_hot_sets_misses_under_a_scan() {
        // 512 KiB hot set, 4 MiB scan, 1 MiB 16-way LLC; the scan may fill 4 ways
        // and the hot set was warmed into the other 12 (warm-and-protect).
        let mut s = sim(&[(0, 0xfff0), (1, 0x000f)]);
        let hot = hot_and_scan(&mut s, 512 << 10, 4 << 20, 4);
        let lines = 4 * (512 << 10) / LINE;
        assert_eq!(hot.off.accesses, lines, "every hot line misses L1");
        assert!(hot.off.miss_ratio() > 0.95, "off: {:?}", hot.off);
        assert!(hot.on.miss_ratio() < 0.05, "on: {:?}", hot.on);
        // the scan's own misses do not change: it never reused anything
        let scan = s.since(&Mark::default(), 1);
        assert_eq!(scan.off.misses, scan.on.misses);
        // with the hot set free to fill the scan's ways too, a part of it sits
        // there and is evicted every round: better than off, worse than disjoint
        let mut shared = sim(&[(1, 0x000f)]);
        let hot_shared = hot_and_scan(&mut shared, 512 << 10, 4 << 20, 4);
        assert!(hot_shared.on.misses > hot.on.misses);
        assert!(hot_shared.on.misses * 4 < hot_shared.off.misses);
    }

    #[test]
    fn a_mask_too_small_for_the_hot_set_helps_less() {
        // the scan keeps 14 of 16 ways: the hot set (half the LLC) no longer fits
        // in the 2 left, and the scan's 14 ways hold only its own lines
        let mut wide = sim(&[(1, 0x3fff)]);
        let hot_wide = hot_and_scan(&mut wide, 512 << 10, 4 << 20, 4);
        let mut narrow = sim(&[(1, 0x000f)]);
        let hot_narrow = hot_and_scan(&mut narrow, 512 << 10, 4 << 20, 4);
        assert!(hot_wide.on.misses > hot_narrow.on.misses * 4);
        assert_eq!(hot_wide.off, hot_narrow.off);
    }

    #[test]
    fn a_sweep_empties_both_copies() {
        let mut s = sim(&[(1, 0x000f)]);
        let hot: Vec<(u64, usize)> = (0..1024).map(|l| (l * LINE, 0)).collect();
        s.feed(&hot);
        s.sweep();
        let mark = s.mark();
        s.feed(&hot);
        let m = s.since(&mark, 0);
        assert_eq!((m.off.misses, m.on.misses), (1024, 1024));
        assert!(s.set_mask(0, 0).is_err());
    }
}
