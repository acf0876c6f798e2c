//! Straightforward CPU-cache models — per-set vectors, one stamp per way, the PLRU
//! tree walked node by node, a linear fully-associative shadow for the 3C
//! classification — kept as the oracle the optimized [`super::SetAssoc`] and
//! [`super::Hierarchy`] are tested against (and `cachesim bench --reference`).

use std::collections::HashSet;

use super::classify::MissClass;
use super::geometry::Geometry;
use super::hierarchy::{Access, LevelConfig, LevelCounters, MAX_LEVELS};
use super::set_assoc::{Lookup, Replacement};
use crate::error::CacheError;

/// One set-associative level, written for clarity rather than speed.
#[derive(Clone, Debug)]
pub struct ReferenceSetAssoc {
    ways: usize,
    sets: usize,
    line_shift: u32,
    replacement: Replacement,
    /// Per set, per way: the cached line, if any.
    tags: Vec<Vec<Option<u64>>>,
    /// LRU: per set, per way, the time of the last use.
    stamps: Vec<Vec<u64>>,
    /// Tree-PLRU node bits per set (node i's children are 2i+1, 2i+2; 1 = the
    /// victim is on the right).
    plru: Vec<u64>,
    clock: u64,
    masks: Vec<u64>,
}

impl ReferenceSetAssoc {
    pub fn new(geometry: &Geometry, replacement: Replacement) -> Result<Self, CacheError> {
        let (ways, sets) = (geometry.ways as usize, geometry.sets as usize);
        if replacement == Replacement::TreePlru && !ways.is_power_of_two() {
            return Err(CacheError::InvalidConfig(format!(
                "tree-PLRU needs a power-of-two number of ways, {} has {ways}",
                geometry.describe()
            )));
        }
        Ok(Self {
            ways,
            sets,
            line_shift: geometry.line_size.trailing_zeros(),
            replacement,
            tags: vec![vec![None; ways]; sets],
            stamps: vec![vec![0; ways]; sets],
            plru: vec![0; sets],
            clock: 0,
            masks: Vec::new(),
        })
    }

    fn all(&self) -> u64 {
        if self.ways >= 64 {
            u64::MAX
        } else {
            (1 << self.ways) - 1
        }
    }

    /// CAT capacity bitmask of `class` (checked by the optimized model; taken as is).
    pub fn set_way_mask(&mut self, class: usize, mask: u64) {
        if self.masks.len() <= class {
            self.masks.resize(class + 1, self.all());
        }
        self.masks[class] = mask;
    }

    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    pub fn holds(&self, line: u64) -> bool {
        self.tags[(line % self.sets as u64) as usize].contains(&Some(line))
    }

    fn touch(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamps[set][way] = self.clock;
        // Walk from the root to the leaf, pointing every node away from `way`.
        let (mut node, mut lo, mut hi) = (0, 0, self.ways);
        while hi - lo > 1 && self.replacement == Replacement::TreePlru {
            let mid = (lo + hi) / 2;
            if way < mid {
                self.plru[set] |= 1 << node;
                node = 2 * node + 1;
                hi = mid;
            } else {
                self.plru[set] &= !(1 << node);
                node = 2 * node + 2;
                lo = mid;
            }
        }
    }

    pub fn access_line(&mut self, line: u64, class: usize) -> Lookup {
        let set = (line % self.sets as u64) as usize;
        if let Some(way) = self.tags[set].iter().position(|&t| t == Some(line)) {
            self.touch(set, way);
            return Lookup::Hit;
        }
        let mask = self.masks.get(class).copied().unwrap_or(self.all());
        let allowed: Vec<usize> = (0..self.ways).filter(|w| mask >> w & 1 == 1).collect();
        let way = match allowed.iter().find(|&&w| self.tags[set][w].is_none()) {
            Some(&w) => w,
            None => match self.replacement {
                Replacement::Lru => *allowed
                    .iter()
                    .min_by_key(|&&w| self.stamps[set][w])
                    .expect("way masks are non-empty"),
                Replacement::TreePlru => {
                    let any = |lo: usize, hi: usize| allowed.iter().any(|&w| lo <= w && w < hi);
                    let (mut node, mut lo, mut hi) = (0, 0, self.ways);
                    while hi - lo > 1 {
                        let mid = (lo + hi) / 2;
                        let right = if self.plru[set] >> node & 1 == 1 {
                            any(mid, hi)
                        } else {
                            !any(lo, mid)
                        };
                        if right {
                            (node, lo) = (2 * node + 2, mid);
                        } else {
                            (node, hi) = (2 * node + 1, mid);
                        }
                    }
                    lo
                }
            },
        };
        let old = self.tags[set][way].replace(line);
        self.touch(set, way);
        Lookup::Miss { evicted: old }
    }

    pub fn clear(&mut self) {
        self.tags.iter_mut().for_each(|s| s.fill(None));
        self.stamps.iter_mut().for_each(|s| s.fill(0));
        self.plru.fill(0);
    }
}

/// The 3C classifier by definition: a set of every line seen and a fully-associative
/// LRU list (most recent first) of the level's number of lines.
#[derive(Clone, Debug)]
struct ReferenceClassifier {
    seen: HashSet<u64>,
    shadow: Vec<u64>,
    lines: usize,
}

impl ReferenceClassifier {
    fn observe(&mut self, line: u64, missed: bool) -> MissClass {
        let shadow_hit = match self.shadow.iter().position(|&l| l == line) {
            Some(i) => {
                self.shadow.remove(i);
                true
            }
            None => {
                self.shadow.truncate(self.lines - 1);
                false
            }
        };
        self.shadow.insert(0, line);
        let first = self.seen.insert(line);
        match (missed, first, shadow_hit) {
            (false, _, _) => MissClass::Unclassified,
            (true, true, _) => MissClass::Compulsory,
            (true, false, false) => MissClass::Capacity,
            (true, false, true) => MissClass::Conflict,
        }
    }
}

/// A non-inclusive, write-allocate hierarchy of [`ReferenceSetAssoc`] levels.
#[derive(Clone, Debug)]
pub struct ReferenceHierarchy {
    levels: Vec<ReferenceSetAssoc>,
    classifiers: Vec<Option<ReferenceClassifier>>,
    counters: Vec<Vec<LevelCounters>>,
}

impl ReferenceHierarchy {
    pub fn new(levels: &[LevelConfig]) -> Result<Self, CacheError> {
        Ok(Self {
            classifiers: levels
                .iter()
                .map(|l| {
                    l.classify.then(|| ReferenceClassifier {
                        seen: HashSet::new(),
                        shadow: Vec::new(),
                        lines: (l.geometry.size / u64::from(l.geometry.line_size)) as usize,
                    })
                })
                .collect(),
            levels: levels
                .iter()
                .map(|l| ReferenceSetAssoc::new(&l.geometry, l.replacement))
                .collect::<Result<_, _>>()?,
            counters: Vec::new(),
        })
    }

    pub fn set_way_mask(&mut self, level: usize, class: usize, mask: u64) {
        self.levels[level].set_way_mask(class, mask);
    }

    pub fn access(&mut self, addr: u64, class: usize) -> Access {
        let n = self.levels.len();
        if self.counters.len() <= class {
            self.counters
                .resize(class + 1, vec![LevelCounters::default(); n]);
        }
        let mut misses = [MissClass::Unclassified; MAX_LEVELS];
        for i in 0..n {
            let line = self.levels[i].line_of(addr);
            let hit = self.levels[i].access_line(line, class) == Lookup::Hit;
            let kind = self.classifiers[i]
                .as_mut()
                .map_or(MissClass::Unclassified, |c| c.observe(line, !hit));
            let c = &mut self.counters[class][i];
            c.accesses += 1;
            if hit {
                c.hits += 1;
                return Access {
                    served_by: i,
                    misses,
                };
            }
            c.misses += 1;
            match kind {
                MissClass::Compulsory => c.compulsory += 1,
                MissClass::Capacity => c.capacity += 1,
                MissClass::Conflict => c.conflict += 1,
                MissClass::Unclassified => {}
            }
            misses[i] = kind;
        }
        Access {
            served_by: n,
            misses,
        }
    }

    pub fn counters(&self, class: usize) -> Vec<LevelCounters> {
        self.counters
            .get(class)
            .cloned()
            .unwrap_or_else(|| vec![LevelCounters::default(); self.levels.len()])
    }

    /// Forgets every cached line and every shadow; first touches are remembered.
    pub fn flush(&mut self) {
        self.levels.iter_mut().for_each(ReferenceSetAssoc::clear);
        for c in self.classifiers.iter_mut().flatten() {
            c.shadow.clear();
        }
    }

    pub fn holds(&self, level: usize, line: u64) -> bool {
        self.levels[level].holds(line)
    }
}
