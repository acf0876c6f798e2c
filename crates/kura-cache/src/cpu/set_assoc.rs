//! One set-associative cache level: tags per set, LRU (age stamps) or tree-PLRU
//! within a set, and Intel CAT semantics — a class of service may *fill* only into
//! the ways of its capacity bitmask, while a hit may be in any way (paper 000).

use crate::error::CacheError;

use super::geometry::Geometry;

/// Tag of an empty way.
const INVALID: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// True LRU within a set.
    Lru,
    /// Tree pseudo-LRU (one bit per inner node of a binary tree over the ways), as
    /// many real L1/L2 caches do; needs a power-of-two number of ways.
    TreePlru,
}

/// What one lookup did at this level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// The line was filled into a way; `evicted` is the line it replaced, if any.
    Miss {
        evicted: Option<u64>,
    },
}

pub struct SetAssoc {
    geometry: Geometry,
    replacement: Replacement,
    ways: usize,
    line_shift: u32,
    set_mask: u64,
    /// Line address per way, set by set (`sets × ways`).
    tags: Vec<u64>,
    /// LRU: last-use stamp per way; larger is more recent.
    stamps: Vec<u64>,
    /// Tree-PLRU: node bits per set (bit i = node i; 0 → the older half is left).
    plru: Vec<u64>,
    clock: u64,
    /// Way masks per class of service (bit w = way w); class 0 defaults to all.
    masks: Vec<u64>,
    /// The last line looked up: repeated accesses to one line (sequential streams)
    /// skip the set search — its state is already "most recent" in its set.
    last_line: u64,
}

impl SetAssoc {
    pub fn new(geometry: Geometry, replacement: Replacement) -> Result<Self, CacheError> {
        let ways = geometry.ways as usize;
        if replacement == Replacement::TreePlru && !ways.is_power_of_two() {
            return Err(CacheError::InvalidConfig(format!(
                "tree-PLRU needs a power-of-two number of ways, {} has {ways}",
                geometry.describe()
            )));
        }
        let sets = geometry.sets as usize;
        Ok(Self {
            replacement,
            ways,
            line_shift: geometry.line_size.trailing_zeros(),
            set_mask: u64::from(geometry.sets) - 1,
            tags: vec![INVALID; sets * ways],
            stamps: vec![
                0;
                if replacement == Replacement::Lru {
                    sets * ways
                } else {
                    0
                }
            ],
            plru: vec![
                0;
                if replacement == Replacement::TreePlru {
                    sets
                } else {
                    0
                }
            ],
            clock: 0,
            masks: vec![full_mask(ways)],
            last_line: INVALID,
            geometry,
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Sets the capacity bitmask of class `class` (CAT's CBM). Like resctrl, the
    /// mask must be non-empty, contiguous and within the ways.
    pub fn set_way_mask(&mut self, class: usize, mask: u64) -> Result<(), CacheError> {
        let all = full_mask(self.ways);
        let run = mask.checked_shr(mask.trailing_zeros()).unwrap_or(0);
        let contiguous = mask != 0 && run & run.wrapping_add(1) == 0;
        if mask & !all != 0 || !contiguous {
            return Err(CacheError::InvalidConfig(format!(
                "way mask {mask:#x} must be a non-empty contiguous run of bits within {all:#x}"
            )));
        }
        if self.masks.len() <= class {
            self.masks.resize(class + 1, all);
        }
        self.masks[class] = mask;
        Ok(())
    }

    #[inline(always)]
    pub fn way_mask(&self, class: usize) -> u64 {
        self.masks
            .get(class)
            .copied()
            .unwrap_or(full_mask(self.ways))
    }

    /// Line address (address without the offset bits).
    #[inline(always)]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    #[inline(always)]
    pub fn set_of_line(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// The line looked up last (already the most recent in its set).
    #[inline(always)]
    pub fn last_line(&self) -> u64 {
        self.last_line
    }

    /// Whether `line` is cached (no state change).
    pub fn holds(&self, line: u64) -> bool {
        let base = self.set_of_line(line) * self.ways;
        self.tags[base..base + self.ways].contains(&line)
    }

    /// Looks `line` up for class `class`: a hit refreshes it; a miss fills it into
    /// one of the class's ways, evicting that way's line.
    #[inline]
    pub fn access_line(&mut self, line: u64, class: usize) -> Lookup {
        if line == self.last_line {
            return Lookup::Hit;
        }
        let base = self.set_of_line(line) * self.ways;
        let set = &self.tags[base..base + self.ways];
        if let Some(way) = set.iter().position(|&t| t == line) {
            self.touch(base, way);
            self.last_line = line;
            return Lookup::Hit;
        }
        let mask = self.way_mask(class);
        let way = self.victim(base, mask);
        let old = std::mem::replace(&mut self.tags[base + way], line);
        self.touch(base, way);
        self.last_line = line;
        Lookup::Miss {
            evicted: (old != INVALID).then_some(old),
        }
    }

    #[inline(always)]
    fn touch(&mut self, base: usize, way: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.stamps[base + way] = self.clock;
            }
            Replacement::TreePlru => {
                let set = base / self.ways;
                self.plru[set] = plru_touch(self.plru[set], way, self.ways);
            }
        }
    }

    /// The way to fill among `mask`: an empty allowed way first, else the least
    /// recently used allowed way (LRU) or the tree's pick restricted to `mask`.
    #[inline]
    fn victim(&self, base: usize, mask: u64) -> usize {
        let set = &self.tags[base..base + self.ways];
        match self.replacement {
            Replacement::Lru => {
                // One pass: the first empty allowed way, else the oldest allowed way.
                let stamps = &self.stamps[base..base + self.ways];
                let (mut best, mut oldest) = (usize::MAX, u64::MAX);
                for (w, (&tag, &stamp)) in set.iter().zip(stamps).enumerate() {
                    if mask >> w & 1 == 0 {
                        continue;
                    }
                    if tag == INVALID {
                        return w;
                    }
                    if stamp < oldest {
                        (best, oldest) = (w, stamp);
                    }
                }
                debug_assert!(best != usize::MAX, "way masks are non-empty");
                best
            }
            Replacement::TreePlru => {
                match (0..self.ways).find(|&w| mask >> w & 1 == 1 && set[w] == INVALID) {
                    Some(way) => way,
                    None => plru_victim(self.plru[base / self.ways], self.ways, mask),
                }
            }
        }
    }

    /// Replays byte addresses for one class; returns the number of misses.
    pub fn replay(&mut self, addrs: &[u64], class: usize) -> u64 {
        let mut misses = 0;
        for &addr in addrs {
            let line = self.line_of(addr);
            misses += u64::from(self.access_line(line, class) != Lookup::Hit);
        }
        misses
    }

    /// Forgets every line (a cache flush); masks stay.
    pub fn clear(&mut self) {
        self.tags.fill(INVALID);
        self.stamps.fill(0);
        self.plru.fill(0);
        self.last_line = INVALID;
    }
}

fn full_mask(ways: usize) -> u64 {
    if ways >= 64 {
        u64::MAX
    } else {
        (1u64 << ways) - 1
    }
}

/// Tree-PLRU over `ways` leaves: node 0 is the root, node i's children are 2i+1
/// and 2i+2. A node bit of 0 means "the victim is on the left". Touching a way
/// points every node on its path away from it.
fn plru_touch(mut bits: u64, way: usize, ways: usize) -> u64 {
    let (mut node, mut lo, mut hi) = (0usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if way < mid {
            bits |= 1 << node; // victim side: right
            node = 2 * node + 1;
            hi = mid;
        } else {
            bits &= !(1 << node); // victim side: left
            node = 2 * node + 2;
            lo = mid;
        }
    }
    bits
}

/// Follows the tree's pointers to a victim, turning away from halves that hold no
/// way of `mask`.
fn plru_victim(bits: u64, ways: usize, mask: u64) -> usize {
    let allowed = |lo: usize, hi: usize| (lo..hi).any(|w| mask >> w & 1 == 1);
    let (mut node, mut lo, mut hi) = (0usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let go_right = bits >> node & 1 == 1;
        let go_right = if go_right {
            allowed(mid, hi)
        } else {
            !allowed(lo, mid)
        };
        if go_right {
            node = 2 * node + 2;
            lo = mid;
        } else {
            node = 2 * node + 1;
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 sets × 4 ways of 64-byte lines (512 bytes).
    fn tiny(replacement: Replacement) -> SetAssoc {
        SetAssoc::new(Geometry::new(1, 512, 4, 64).unwrap(), replacement).unwrap()
    }

    /// Line addresses that all map to set 0 of [`tiny`].
    fn set0(i: u64) -> u64 {
        i * 2
    }

    #[test]
    fn lines_conflict_within_one_set_while_the_other_stays_empty() {
        let mut c = tiny(Replacement::Lru);
        for i in 0..4 {
            assert_eq!(c.access_line(set0(i), 0), Lookup::Miss { evicted: None });
        }
        assert_eq!(c.access_line(set0(0), 0), Lookup::Hit); // 0 is now most recent
                                                            // a fifth line in set 0 evicts the least recently used: line of i = 1
        assert_eq!(
            c.access_line(set0(4), 0),
            Lookup::Miss {
                evicted: Some(set0(1))
            }
        );
        assert!(!c.holds(set0(1)) && c.holds(set0(0)));
        // the cache is only half used: set 1 is empty
        assert!((0..4).all(|w| c.tags[4 + w] == INVALID));
    }

    #[test]
    fn way_masks_keep_a_class_out_of_protected_ways_but_hits_are_anywhere() {
        let mut c = tiny(Replacement::Lru);
        c.set_way_mask(1, 0b0011).unwrap(); // sensitive class: ways 0-1
        c.set_way_mask(2, 0b1100).unwrap(); // streaming class: ways 2-3
        c.access_line(set0(0), 1);
        c.access_line(set0(1), 1);
        // a scan by class 2 over many lines of set 0 never evicts class 1's lines
        for i in 10..100 {
            assert!(matches!(c.access_line(set0(i), 2), Lookup::Miss { .. }));
        }
        assert!(c.holds(set0(0)) && c.holds(set0(1)));
        // class 2 hits a line class 1 filled (hits in any way)
        assert_eq!(c.access_line(set0(0), 2), Lookup::Hit);
        // class 1 filling more lines evicts only its own
        assert_eq!(
            c.access_line(set0(200), 1),
            Lookup::Miss {
                evicted: Some(set0(1))
            }
        );
        assert!(c.set_way_mask(3, 0b0101).is_err(), "non-contiguous");
        assert!(c.set_way_mask(3, 0).is_err());
        assert!(c.set_way_mask(3, 0b10000).is_err(), "beyond the ways");
        assert_eq!(c.way_mask(7), 0b1111, "unknown classes get every way");
    }

    #[test]
    fn tree_plru_follows_its_pointers_and_respects_masks() {
        let mut c = tiny(Replacement::TreePlru);
        for i in 0..4 {
            c.access_line(set0(i), 0); // ways 0,1,2,3 in order
        }
        // after touching 3 the tree points left, then at way 0 (touched before 1)
        assert_eq!(
            c.access_line(set0(4), 0),
            Lookup::Miss {
                evicted: Some(set0(0))
            }
        );
        c.access_line(set0(1), 0); // way 1 touched: tree points right → way 2
        assert_eq!(
            c.access_line(set0(5), 0),
            Lookup::Miss {
                evicted: Some(set0(2))
            }
        );
        // restricted to ways 0-1, the right half is skipped
        c.set_way_mask(1, 0b0011).unwrap();
        let Lookup::Miss { evicted: Some(v) } = c.access_line(set0(6), 1) else {
            panic!("expected an eviction")
        };
        assert!(
            v == set0(4) || v == set0(1),
            "evicted {v} from a way outside the mask"
        );
        assert!(SetAssoc::new(
            Geometry::new(3, 768 * 4, 12, 64).unwrap(),
            Replacement::TreePlru
        )
        .is_err());
    }
}
