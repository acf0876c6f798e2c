//! The keys a spilled hash join's build side holds, as a Bloom filter over the
//! hashes its rows were partitioned by: a probe row whose key hash is not in it
//! has no partner, so the probe side drops it instead of writing it to disk and
//! reading it back (TPC-H Q9 under a small memory limit: of the orders bound for
//! disk, about four in five have no green-part line item).
//!
//! Blocked, two bits per key in one 64-bit word: one cache miss per look-up.
//! A false positive only keeps a row the partition's join then drops.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::context::MemoryTracker;

/// The smallest and largest filter, in bytes. The largest holds about 20
/// bits per key for 6 M build rows; a larger build side only keeps more rows.
const MIN_BYTES: u64 = 4 << 10;
const MAX_BYTES: u64 = 16 << 20;

/// The share of the memory left to the query that the filter may take.
const ROOM_SHARE: u64 = 16;

/// A set of key hashes that may answer "maybe" for a hash never added.
pub struct KeySet {
    words: Vec<AtomicU64>,
    /// Bytes of the query's memory charged for `words`, given back by `release`.
    charged: AtomicU64,
}

impl KeySet {
    /// A filter sized to a sixteenth of `room` (the memory the query has
    /// left), a power of two up to 16 MiB, charged to `memory`; none when
    /// that is less than 4 KiB (the memory is better left to the join).
    pub fn sized_for(room: u64, memory: &MemoryTracker) -> Option<KeySet> {
        let bytes = (room / ROOM_SHARE).min(MAX_BYTES);
        if bytes < MIN_BYTES {
            return None;
        }
        let bytes = 1u64 << (63 - bytes.leading_zeros());
        memory.charge(bytes);
        Some(KeySet {
            words: (0..bytes / 8).map(|_| AtomicU64::new(0)).collect(),
            charged: AtomicU64::new(bytes),
        })
    }

    /// The word and the two bits of hash `h`. The word comes from the low bits,
    /// the bits from bits 40–51: the partition is the hash's top five bits, so
    /// all three are independent of it and of each other.
    #[inline]
    fn slot(&self, h: u64) -> (usize, u64) {
        let word = (h as usize) & (self.words.len() - 1);
        let bits = 1u64 << ((h >> 40) & 63) | 1u64 << ((h >> 46) & 63);
        (word, bits)
    }

    pub fn insert(&self, h: u64) {
        let (word, bits) = self.slot(h);
        // Most keys of a word are already in it after the first few rows.
        if self.words[word].load(Ordering::Relaxed) & bits != bits {
            self.words[word].fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// Whether a key of hash `h` may have been inserted (false: it was not).
    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        let (word, bits) = self.slot(h);
        self.words[word].load(Ordering::Relaxed) & bits == bits
    }

    /// Gives the filter's bytes back to `memory` (once; the filter is about
    /// to be dropped).
    pub fn release(&self, memory: &MemoryTracker) {
        memory.release(self.charged.swap(0, Ordering::Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::hash_int;

    #[test]
    fn holds_every_key_added_and_few_others() {
        let memory = MemoryTracker::new(u64::MAX);
        let set = KeySet::sized_for(16 << 20, &memory).unwrap();
        assert_eq!(memory.used(), 1 << 20);
        let h = |k: i128| hash_int(7, k);
        for k in (0..50_000).map(|k| k * 3) {
            set.insert(h(k));
        }
        assert!((0..50_000).all(|k| set.may_contain(h(k * 3))));
        let others = (0..50_000)
            .filter(|k| set.may_contain(h(k * 3 + 1)))
            .count();
        // 8 M bits for 50,000 keys: about one in 2,000 answers "maybe" wrongly.
        assert!(others < 200, "{others} false positives");
        set.release(&memory);
        set.release(&memory);
        assert_eq!(memory.used(), 0);
    }

    #[test]
    fn is_sized_from_the_room_left_within_bounds() {
        let memory = MemoryTracker::new(u64::MAX);
        let bytes = |room| KeySet::sized_for(room, &memory).map(|s| s.words.len() as u64 * 8);
        assert_eq!(bytes(MIN_BYTES * ROOM_SHARE - 1), None);
        assert_eq!(bytes(MIN_BYTES * ROOM_SHARE), Some(MIN_BYTES));
        assert_eq!(bytes(1 << 40), Some(MAX_BYTES));
        assert_eq!(bytes(100 << 20), Some(4 << 20));
    }
}
