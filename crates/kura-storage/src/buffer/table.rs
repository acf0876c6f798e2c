//! The page table: page id → frame, read without any lock (a direct-mapped,
//! lazily allocated two-level array indexed by the page id, in the spirit of
//! vmcache's translation by arithmetic); written only under the pool's lock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use hashbrown::HashMap;

use crate::file::PageId;

/// Entries per chunk (64 KiB of `u32` frame numbers).
const CHUNK_BITS: u32 = 14;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks: page ids below `CHUNKS * CHUNK` (2^28 pages, 4 TiB of 16 KiB pages)
/// are direct-mapped; larger ids (no real file has them) go to a locked map.
const CHUNKS: usize = 1 << 14;
/// An empty entry.
const NONE: u32 = u32::MAX;

pub(super) struct PageTable {
    chunks: Box<[OnceLock<Box<[AtomicU32]>>]>,
    /// Ids beyond the direct range.
    overflow: Mutex<HashMap<PageId, u32>>,
}

impl PageTable {
    pub fn new() -> PageTable {
        PageTable {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            overflow: Mutex::new(HashMap::new()),
        }
    }

    fn overflow(&self) -> std::sync::MutexGuard<'_, HashMap<PageId, u32>> {
        // Single inserts and removals only: a poisoned map is intact.
        self.overflow.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The frame listed for `page`. Without the pool's lock the answer may be
    /// stale: the caller pins the frame and then checks that it holds `page`.
    #[inline]
    pub fn get(&self, page: PageId) -> Option<u32> {
        let chunk = (page >> CHUNK_BITS) as usize;
        if chunk >= CHUNKS {
            return self.overflow().get(&page).copied();
        }
        let f = self.chunks[chunk].get()?[page as usize & (CHUNK - 1)].load(Ordering::Acquire);
        (f != NONE).then_some(f)
    }

    /// Lists `page` in frame `f` (under the pool's lock).
    pub fn set(&self, page: PageId, f: u32) {
        let chunk = (page >> CHUNK_BITS) as usize;
        if chunk >= CHUNKS {
            self.overflow().insert(page, f);
            return;
        }
        let entries =
            self.chunks[chunk].get_or_init(|| (0..CHUNK).map(|_| AtomicU32::new(NONE)).collect());
        entries[page as usize & (CHUNK - 1)].store(f, Ordering::Release);
    }

    /// Unlists `page` (under the pool's lock); returns the frame it was in.
    pub fn remove(&self, page: PageId) -> Option<u32> {
        let chunk = (page >> CHUNK_BITS) as usize;
        if chunk >= CHUNKS {
            return self.overflow().remove(&page);
        }
        let f = self.chunks[chunk].get()?[page as usize & (CHUNK - 1)].swap(NONE, Ordering::AcqRel);
        (f != NONE).then_some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_unlists_near_and_far_ids() {
        let t = PageTable::new();
        for (i, &p) in [0u64, 1, 16_383, 16_384, 1 << 27, u64::MAX]
            .iter()
            .enumerate()
        {
            assert_eq!(t.get(p), None);
            t.set(p, i as u32);
            assert_eq!(t.get(p), Some(i as u32));
        }
        assert_eq!(t.remove(16_384), Some(3));
        assert_eq!(t.get(16_384), None);
        assert_eq!(t.get(16_383), Some(2));
        assert_eq!(t.remove(u64::MAX), Some(5));
        assert_eq!(t.remove(u64::MAX), None);
    }
}
