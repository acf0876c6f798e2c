//! Groups of one integer key over a dense range (order keys, customer keys, part
//! keys): a key's group number sits at `slots[key - base]`, so finding it is one
//! load — no hashing, no probing, no rehashing as the groups grow. The range grows
//! as keys arrive; once the keys are too sparse for it the caller moves the
//! groups to a hash map for good.

/// A slot without a group.
const EMPTY: u32 = u32::MAX;

/// Slots allowed per group (and a floor for few groups): 4 bytes each, so at
/// most 64 bytes a group. A hash map of `(i64, u32)` takes 17 bytes a bucket at
/// a load of 7/16 to 7/8 after doubling (19–39 bytes a group) and twice that
/// while it rehashes. The margin matters for one worker's share of a key: TPC-H
/// order keys use 8 of every 32, and a worker that aggregates every other
/// morsel of `lineitem` sees one key in 8, which 8 slots a group refused.
const SLOTS_PER_GROUP: usize = 16;
const MIN_SLOTS: usize = 1 << 12;

/// The most slots a planner's range may ask for up front (16 MiB).
pub const MAX_RANGE_SLOTS: u64 = 1 << 22;

/// Group numbers of integer keys, indexed by key minus `base`.
pub(super) struct DenseGroups {
    base: i64,
    slots: Vec<u32>,
    groups: usize,
    /// Slots allowed whatever the group count: the planner's range, when given.
    floor: usize,
}

impl DenseGroups {
    pub(super) fn new() -> DenseGroups {
        DenseGroups {
            base: 0,
            slots: Vec::new(),
            groups: 0,
            floor: 0,
        }
    }

    /// Slots for every key of `[lo, hi]` from the start (at most
    /// [`MAX_RANGE_SLOTS`]), so keys arriving in random order are not taken
    /// for sparse ones while few groups exist (TPC-H Q13's customer keys).
    pub(super) fn over(lo: i64, hi: i64) -> DenseGroups {
        let span = (hi as i128 - lo as i128 + 1).clamp(0, MAX_RANGE_SLOTS as i128) as usize;
        DenseGroups {
            base: lo,
            slots: vec![EMPTY; span],
            groups: 0,
            floor: span,
        }
    }

    /// The group of `k`, giving it `next` if it has none (`(group, added)`);
    /// `None` when covering `k` would make the range too sparse — nothing is
    /// changed then.
    #[inline]
    pub(super) fn get_or_insert(&mut self, k: i64, next: u32) -> Option<(u32, bool)> {
        let at = k as i128 - self.base as i128;
        if at < 0 || at >= self.slots.len() as i128 {
            self.cover(k)?;
        }
        let slot = &mut self.slots[(k as i128 - self.base as i128) as usize];
        if *slot == EMPTY {
            *slot = next;
            self.groups += 1;
            Some((next, true))
        } else {
            Some((*slot, false))
        }
    }

    /// Widens the range to cover `k`, with room to grow on that side; `None`
    /// when the range would be too wide for the groups it holds.
    fn cover(&mut self, k: i64) -> Option<()> {
        let limit = (self.groups + 1)
            .saturating_mul(SLOTS_PER_GROUP)
            .max(MIN_SLOTS)
            .max(self.floor.saturating_mul(2)) as i128;
        if self.slots.is_empty() {
            // Start small around the first key; growth doubles.
            let len = 256i128.min(limit);
            self.base = (k as i128 - len / 2).max(i64::MIN as i128) as i64;
            self.slots = vec![EMPTY; len as usize];
            return Some(());
        }
        let (lo, hi) = (
            self.base as i128,
            self.base as i128 + self.slots.len() as i128,
        );
        let need_lo = lo.min(k as i128);
        let need_hi = hi.max(k as i128 + 1);
        if need_hi - need_lo > limit {
            return None;
        }
        // Double on the side that grows (within the limit), so a stream of rising
        // keys costs amortized O(1) copies per key.
        let len = hi - lo;
        let (new_lo, new_hi) = if (k as i128) < lo {
            ((need_lo).min(hi - 2 * len).max(hi - limit), hi)
        } else {
            (lo, (need_hi).max(lo + 2 * len).min(lo + limit))
        };
        let new_lo = new_lo.max(i64::MIN as i128);
        let new_hi = new_hi.min(i64::MAX as i128 + 1);
        let mut slots = vec![EMPTY; (new_hi - new_lo) as usize];
        let shift = (lo - new_lo) as usize;
        slots[shift..shift + self.slots.len()].copy_from_slice(&self.slots);
        self.base = new_lo as i64;
        self.slots = slots;
        Some(())
    }

    /// Every (key, group), for moving the groups to a hash map.
    pub(super) fn entries(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, &g)| g != EMPTY)
            .map(|(i, &g)| ((self.base as i128 + i as i128) as i64, g))
    }

    /// The slot array's memory, for the memory-object registry.
    pub(super) fn region(&self) -> Option<(usize, usize)> {
        (!self.slots.is_empty()).then(|| {
            (
                self.slots.as_ptr() as usize,
                std::mem::size_of_val(self.slots.as_slice()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        // The dense table numbers keys exactly as a hash map would, whatever the
        // order of the keys, until it declines a key; then its entries are those
        // of the map so far.
        #[test]
        fn numbers_groups_like_a_map(
            keys in proptest::collection::vec(
                prop_oneof![0i64..5000, -70i64..70, Just(i64::MIN), Just(i64::MAX), 0i64..10_000_000],
                0..400,
            ),
        ) {
            let mut dense = DenseGroups::new();
            let mut map: HashMap<i64, u32> = HashMap::new();
            for k in keys {
                let next = map.len() as u32;
                match dense.get_or_insert(k, next) {
                    Some((g, added)) => {
                        let want = *map.entry(k).or_insert(next);
                        prop_assert_eq!(g, want);
                        prop_assert_eq!(added, want == next && map.len() as u32 == next + 1);
                    }
                    None => break,
                }
            }
            let mut got: Vec<(i64, u32)> = dense.entries().collect();
            let mut want: Vec<(i64, u32)> = map.into_iter().collect();
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_planned_range_takes_keys_in_random_order() {
        // 150,000 keys in a scrambled order: without the range, the first few
        // groups far apart would make the array decline long before the end.
        let mut d = DenseGroups::over(1, 150_000);
        let mut unplanned = DenseGroups::new();
        let mut declined = false;
        for (n, i) in (0..150_000i64).enumerate() {
            let k = i * 7919 % 150_000 + 1;
            assert_eq!(d.get_or_insert(k, n as u32), Some((n as u32, true)));
            declined |= unplanned.get_or_insert(k, n as u32).is_none();
        }
        assert!(declined);
        assert_eq!(d.get_or_insert(7920, 0), Some((1, false)));
        // Keys past the range are still numbered, while dense enough.
        assert_eq!(d.get_or_insert(150_001, 150_000), Some((150_000, true)));
        assert_eq!(d.get_or_insert(0, 150_001), Some((150_001, true)));
        assert_eq!(d.get_or_insert(1 << 40, 150_002), None);
        assert_eq!(d.entries().count(), 150_002);
        // A range wider than the cap takes its first MAX_RANGE_SLOTS keys.
        let wide = DenseGroups::over(-5, i64::MAX);
        assert_eq!(wide.slots.len() as u64, MAX_RANGE_SLOTS);
    }

    #[test]
    fn one_workers_share_of_order_keys_stays_dense() {
        // TPC-H order keys (8 of every 32), of which a worker aggregates every
        // other morsel of 8,192 rows: one key in 8 of the range.
        let order_key = |i: i64| i / 8 * 32 + i % 8 + 1;
        let mut d = DenseGroups::new();
        let mut n = 0u32;
        for morsel in (0..400i64).step_by(2) {
            for i in morsel * 8192..(morsel + 1) * 8192 {
                assert_eq!(d.get_or_insert(order_key(i), n), Some((n, true)), "key {i}");
                n += 1;
            }
        }
        assert_eq!(d.entries().count(), n as usize);
    }

    #[test]
    fn a_sparse_key_is_declined() {
        let mut d = DenseGroups::new();
        assert_eq!(d.get_or_insert(1, 0), Some((0, true)));
        assert_eq!(d.get_or_insert(1, 1), Some((0, false)));
        assert_eq!(d.get_or_insert(1 << 40, 1), None);
        // Rising keys one apart stay dense far past the first allocation.
        for k in 2..1_000_000i64 {
            assert!(d.get_or_insert(k, k as u32 - 1).is_some());
        }
        assert_eq!(d.entries().count(), 999_999);
    }
}
