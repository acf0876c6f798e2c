//! A CPU cache hierarchy (L1d, L2, LLC) of set-associative levels: an access looks
//! each level up in turn until one hits and fills the line into every level that
//! missed (non-inclusive, write-allocate, no back-invalidation). Counters per class
//! of service and level, way masks (CAT) on any level, and optional 3C
//! classification per level — the simulated mode of the memory profiler (paper 002)
//! and of cache partitioning (paper 000).

use std::path::Path;

use super::classify::{Classifier, MissClass};
use super::geometry::{data_hierarchy, read_sysfs, Geometry};
use super::set_assoc::{Fp16, Fp8, FpWord, Lookup, Replacement, SetAssoc, WayMask};
use crate::error::CacheError;

/// Levels a hierarchy may have.
pub const MAX_LEVELS: usize = 4;

#[derive(Clone, Debug)]
pub struct LevelConfig {
    pub geometry: Geometry,
    pub replacement: Replacement,
    /// Keep a 3C classifier for this level (a fully-associative shadow: slower).
    pub classify: bool,
}

impl LevelConfig {
    pub fn lru(geometry: Geometry) -> Self {
        Self {
            geometry,
            replacement: Replacement::Lru,
            classify: false,
        }
    }
}

/// Counts of one class at one level. `accesses = hits + misses`; the three miss
/// classes are counted only where classification is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounters {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
}

impl LevelCounters {
    pub fn miss_ratio(&self) -> f64 {
        crate::two_level::ratio(self.misses, self.accesses)
    }
}

/// The outcome of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Index of the level that hit; the number of levels if memory served it.
    pub served_by: usize,
    /// For each level above `served_by`: what kind of miss it was there.
    pub misses: [MissClass; MAX_LEVELS],
}

impl Access {
    /// The level that hit, `None` for memory.
    pub fn hit_level(&self, levels: usize) -> Option<usize> {
        (self.served_by < levels).then_some(self.served_by)
    }
}

/// The batch loop for `N` levels of one line size: unrolled over the levels, the
/// line and its fingerprints computed once per access.
#[inline(never)]
fn replay_levels<const N: usize>(
    levels: &mut [SetAssoc],
    addrs: &[u64],
    masks: &[WayMask; MAX_LEVELS],
    hits: &mut [u64; MAX_LEVELS],
    misses: &mut [u64; MAX_LEVELS],
) {
    let levels: &mut [SetAssoc; N] = levels.try_into().expect("N levels");
    // How many accesses each level (or memory, at N) served: one count per access;
    // the per-level hits and misses follow from them at the end.
    let mut served = [0u64; MAX_LEVELS + 1];
    for &addr in addrs {
        let line = levels[0].line_of(addr);
        let fp = SetAssoc::fingerprint(line);
        let mut by = N;
        for i in 0..N {
            let hit = if i == 0 {
                levels[i].access_hashed::<true>(line, fp, masks[i])
            } else {
                levels[i].access_hashed::<false>(line, fp, masks[i])
            } == Lookup::Hit;
            if hit {
                by = i;
                break;
            }
        }
        served[by] += 1;
    }
    for i in 0..N {
        hits[i] += served[i];
        misses[i] += served[i + 1..=N].iter().sum::<u64>();
    }
}

/// [`replay_levels`] for three levels whose kinds of set (`A`, `B`, `C`: 8 or 16
/// fingerprint bytes, LRU) are known: no per-access dispatch at all.
#[inline(never)]
fn replay_typed3<A: FpWord, B: FpWord, C: FpWord>(
    levels: &mut [SetAssoc],
    addrs: &[u64],
    masks: &[WayMask; MAX_LEVELS],
) -> [u64; MAX_LEVELS + 1] {
    let [l0, l1, l2] = levels else {
        unreachable!("three levels")
    };
    let mut served = [0u64; MAX_LEVELS + 1];
    for &addr in addrs {
        let line = l0.line_of(addr);
        let fp = SetAssoc::fingerprint(line);
        let by = if l0.access_typed::<A, true>(line, fp, masks[0]) {
            0
        } else if l1.access_typed::<B, false>(line, fp, masks[1]) {
            1
        } else if l2.access_typed::<C, false>(line, fp, masks[2]) {
            2
        } else {
            3
        };
        served[by] += 1;
    }
    served
}

/// [`replay_typed3`] for two levels.
#[inline(never)]
fn replay_typed2<A: FpWord, B: FpWord>(
    levels: &mut [SetAssoc],
    addrs: &[u64],
    masks: &[WayMask; MAX_LEVELS],
) -> [u64; MAX_LEVELS + 1] {
    let [l0, l1] = levels else {
        unreachable!("two levels")
    };
    let mut served = [0u64; MAX_LEVELS + 1];
    for &addr in addrs {
        let line = l0.line_of(addr);
        let fp = SetAssoc::fingerprint(line);
        let by = if l0.access_typed::<A, true>(line, fp, masks[0]) {
            0
        } else if l1.access_typed::<B, false>(line, fp, masks[1]) {
            1
        } else {
            2
        };
        served[by] += 1;
    }
    served
}

/// A batch loop: levels, addresses, the class's way mask per level → how many
/// accesses each level (or memory, last) served.
type BatchLoop = fn(&mut [SetAssoc], &[u64], &[WayMask; MAX_LEVELS]) -> [u64; MAX_LEVELS + 1];

/// The specialised batch loop for these levels, if there is one: two or three LRU
/// levels of one line size with at most 16 ways.
fn typed_replay(levels: &[SetAssoc]) -> Option<BatchLoop> {
    let line_size = levels[0].geometry().line_size;
    if levels.iter().any(|l| l.geometry().line_size != line_size) {
        return None;
    }
    let widths: Option<Vec<usize>> = levels.iter().map(SetAssoc::narrow_lru).collect();
    Some(match widths?.as_slice() {
        [8, 8] => replay_typed2::<Fp8, Fp8>,
        [8, 16] => replay_typed2::<Fp8, Fp16>,
        [16, 8] => replay_typed2::<Fp16, Fp8>,
        [16, 16] => replay_typed2::<Fp16, Fp16>,
        [8, 8, 8] => replay_typed3::<Fp8, Fp8, Fp8>,
        [8, 8, 16] => replay_typed3::<Fp8, Fp8, Fp16>,
        [8, 16, 8] => replay_typed3::<Fp8, Fp16, Fp8>,
        [8, 16, 16] => replay_typed3::<Fp8, Fp16, Fp16>,
        [16, 8, 8] => replay_typed3::<Fp16, Fp8, Fp8>,
        [16, 8, 16] => replay_typed3::<Fp16, Fp8, Fp16>,
        [16, 16, 8] => replay_typed3::<Fp16, Fp16, Fp8>,
        [16, 16, 16] => replay_typed3::<Fp16, Fp16, Fp16>,
        _ => return None,
    })
}

pub struct Hierarchy {
    levels: Vec<SetAssoc>,
    classifiers: Vec<Option<Classifier>>,
    /// Per class, per level.
    counters: Vec<Vec<LevelCounters>>,
}

impl Hierarchy {
    pub fn new(levels: Vec<LevelConfig>) -> Result<Self, CacheError> {
        if levels.is_empty() || levels.len() > MAX_LEVELS {
            return Err(CacheError::InvalidConfig(format!(
                "a cache hierarchy has 1 to {MAX_LEVELS} levels, got {}",
                levels.len()
            )));
        }
        let classifiers = levels
            .iter()
            .map(|l| {
                let lines = l.geometry.size / u64::from(l.geometry.line_size);
                l.classify.then(|| Classifier::new(lines as usize))
            })
            .collect();
        let n = levels.len();
        Ok(Self {
            levels: levels
                .into_iter()
                .map(|l| SetAssoc::new(l.geometry, l.replacement))
                .collect::<Result<_, _>>()?,
            classifiers,
            counters: vec![vec![LevelCounters::default(); n]],
        })
    }

    /// This machine's data caches as sysfs describes them under `root` (normally
    /// [`super::geometry::SYSFS_CACHE_DIR`]), LRU in every set.
    pub fn from_sysfs(root: &Path, classify: bool) -> Result<Self, CacheError> {
        let geometries = data_hierarchy(&read_sysfs(root)?);
        if geometries.is_empty() {
            return Err(CacheError::InvalidConfig(format!(
                "{} describes no data caches",
                root.display()
            )));
        }
        Self::new(
            geometries
                .into_iter()
                .take(MAX_LEVELS)
                .map(|geometry| LevelConfig {
                    geometry,
                    replacement: Replacement::Lru,
                    classify,
                })
                .collect(),
        )
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    pub fn level(&self, i: usize) -> &SetAssoc {
        &self.levels[i]
    }

    /// CAT: class `class` may fill only the ways of `mask` at level `level`.
    pub fn set_way_mask(
        &mut self,
        level: usize,
        class: usize,
        mask: u64,
    ) -> Result<(), CacheError> {
        let n = self.levels.len();
        self.levels
            .get_mut(level)
            .ok_or_else(|| CacheError::InvalidConfig(format!("no cache level {level} of {n}")))?
            .set_way_mask(class, mask)
    }

    /// CAT on the last level, where real hardware offers it.
    pub fn set_llc_way_mask(&mut self, class: usize, mask: u64) -> Result<(), CacheError> {
        self.set_way_mask(self.levels.len() - 1, class, mask)
    }

    /// One access to byte address `addr` by class of service `class`.
    #[inline]
    pub fn access(&mut self, addr: u64, class: usize) -> Access {
        self.ensure_class(class);
        let counters = &mut self.counters[class];
        let mut misses = [MissClass::Unclassified; MAX_LEVELS];
        // The line of the previous access hits L1 again and changes no state — not
        // the set's order, nor a classifier's shadow (it is most recent there too).
        let l1 = &self.levels[0];
        if l1.line_of(addr) == l1.last_line() {
            counters[0].accesses += 1;
            counters[0].hits += 1;
            return Access {
                served_by: 0,
                misses,
            };
        }
        for (i, level) in self.levels.iter_mut().enumerate() {
            let line = level.line_of(addr);
            let lookup = if i == 0 {
                level.access_line(line, class)
            } else {
                level.access_line_deep(line, class)
            };
            let hit = lookup == Lookup::Hit;
            let c = &mut counters[i];
            c.accesses += 1;
            let kind = self.classifiers[i]
                .as_mut()
                .and_then(|cl| cl.observe(line, !hit));
            if hit {
                c.hits += 1;
                return Access {
                    served_by: i,
                    misses,
                };
            }
            c.misses += 1;
            match kind {
                Some(MissClass::Compulsory) => c.compulsory += 1,
                Some(MissClass::Capacity) => c.capacity += 1,
                Some(MissClass::Conflict) => c.conflict += 1,
                _ => {}
            }
            misses[i] = kind.unwrap_or(MissClass::Unclassified);
        }
        Access {
            served_by: self.levels.len(),
            misses,
        }
    }

    /// Drops the line of byte address `addr` from every level (another core
    /// wrote it); the next access to it misses everywhere.
    pub fn invalidate(&mut self, addr: u64) {
        for level in &mut self.levels {
            let line = level.line_of(addr);
            level.invalidate(line);
        }
    }

    /// Replays byte addresses for one class (counters as [`Self::access`]).
    pub fn replay(&mut self, addrs: &[u64], class: usize) {
        if self.classifiers.iter().any(Option::is_some) {
            for &addr in addrs {
                self.access(addr, class);
            }
            return;
        }
        // Without classifiers an access is only lookups: keep the class's masks and
        // the counts in locals for the whole batch instead of per access.
        self.ensure_class(class);
        let n = self.levels.len();
        let mut masks = [self.levels[0].class_mask(class); MAX_LEVELS];
        for (m, level) in masks.iter_mut().zip(&self.levels) {
            *m = level.class_mask(class);
        }
        let mut hits = [0u64; MAX_LEVELS];
        let mut misses = [0u64; MAX_LEVELS];
        let same_lines = self
            .levels
            .iter()
            .all(|l| l.geometry().line_size == self.levels[0].geometry().line_size);
        if let Some(replay) = typed_replay(&self.levels) {
            let served = replay(&mut self.levels, addrs, &masks);
            for i in 0..n {
                hits[i] += served[i];
                misses[i] += served[i + 1..=n].iter().sum::<u64>();
            }
        } else {
            match (n, same_lines) {
                (3, true) => {
                    replay_levels::<3>(&mut self.levels, addrs, &masks, &mut hits, &mut misses)
                }
                (2, true) => {
                    replay_levels::<2>(&mut self.levels, addrs, &masks, &mut hits, &mut misses)
                }
                _ => {
                    for &addr in addrs {
                        for (i, level) in self.levels.iter_mut().enumerate() {
                            let line = level.line_of(addr);
                            let lookup = if i == 0 {
                                level.access_masked(line, masks[i])
                            } else {
                                let fp = SetAssoc::fingerprint(line);
                                level.access_hashed::<false>(line, fp, masks[i])
                            };
                            if lookup == Lookup::Hit {
                                hits[i] += 1;
                                break;
                            }
                            misses[i] += 1;
                        }
                    }
                }
            }
        }
        for (i, c) in self.counters[class].iter_mut().enumerate().take(n) {
            c.accesses += hits[i] + misses[i];
            c.hits += hits[i];
            c.misses += misses[i];
        }
    }

    fn ensure_class(&mut self, class: usize) {
        if class >= self.counters.len() {
            self.counters
                .resize(class + 1, vec![LevelCounters::default(); self.levels.len()]);
        }
    }

    /// Counters of class `class`, one per level (zeros for a class never seen).
    pub fn counters(&self, class: usize) -> Vec<LevelCounters> {
        self.counters
            .get(class)
            .cloned()
            .unwrap_or_else(|| vec![LevelCounters::default(); self.levels.len()])
    }

    /// Forgets all cached lines, as a cache sweep would; counters and masks stay.
    /// Classifiers keep which lines were ever touched (so a miss after the flush is
    /// not compulsory) and restart their fully-associative shadows empty (so it
    /// counts as capacity, not conflict).
    pub fn flush(&mut self) {
        self.levels.iter_mut().for_each(SetAssoc::clear);
        self.classifiers
            .iter_mut()
            .flatten()
            .for_each(Classifier::flush);
    }
}
