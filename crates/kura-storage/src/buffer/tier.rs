//! The second buffer tier below the pool, sized on its own (bytes, or pages
//! for the simulator check), with its own kura-cache policy, inclusive or
//! exclusive (paper 004's demote): lz4-compressed page images in DRAM, or the
//! OS page cache (pages kura tracks in the kernel's cache of the file).
//!
//! The pool keeps only clean pages (every write goes to the file and
//! invalidates the cached copy), so a page image in the tier is always the
//! page as it is on disk, and a tier hit may stand in for a disk read.
//!
//! The page-cache tier: inclusive, the pool reads through the page cache, so a
//! page read from disk stays in both levels; exclusive, the pool reads with
//! O_DIRECT, a hit is dropped from the kernel's cache once it is in the pool
//! (`POSIX_FADV_DONTNEED`), and a pool victim is demoted by a buffered write of
//! its (unchanged) bytes. The tier's own victims are dropped the same way, so
//! the kernel holds no more of the file than the tier's size. A hit is served
//! only if the kernel still has the page (RWF_NOWAIT); one it dropped on its
//! own is counted as lost and read from disk.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kura_cache::{Mode, Policy};

use crate::error::{StorageError, StorageResult};
use crate::file::{DbFile, PageId};

/// How large the tier may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierCapacity {
    /// Compressed bytes held (what memory it costs).
    Bytes(u64),
    /// Pages held, whatever they compress to: the simulator's level-2 blocks,
    /// so that `kura cachesim` and the engine can be compared exactly.
    Pages(usize),
}

/// Where the second tier keeps its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierKind {
    /// lz4-compressed page images in kura's memory.
    #[default]
    Compressed,
    /// The OS page cache of the database file (buffered reads and writes).
    PageCache,
}

impl TierKind {
    pub fn name(self) -> &'static str {
        match self {
            TierKind::Compressed => "compressed",
            TierKind::PageCache => "page_cache",
        }
    }
}

/// Parses `compressed` (also `lz4`) or `page_cache` (also `os`).
pub fn parse_tier_kind(s: &str) -> Result<TierKind, String> {
    match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
        "compressed" | "lz4" => Ok(TierKind::Compressed),
        "page_cache" | "os" => Ok(TierKind::PageCache),
        other => Err(format!(
            "tier2 kind must be compressed or page_cache, not '{other}'"
        )),
    }
}

/// The configuration of a second tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierConfig {
    pub capacity: TierCapacity,
    pub mode: Mode,
    /// kura-cache policy name of the tier (default `lru`).
    pub policy: String,
    pub kind: TierKind,
}

impl TierConfig {
    pub fn new(capacity: TierCapacity, mode: Mode) -> TierConfig {
        TierConfig {
            capacity,
            mode,
            policy: "lru".to_string(),
            kind: TierKind::Compressed,
        }
    }

    pub fn with_kind(mut self, kind: TierKind) -> TierConfig {
        self.kind = kind;
        self
    }
}

/// Parses `inclusive` or `exclusive`.
pub fn parse_tier_mode(s: &str) -> Result<Mode, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "inclusive" => Ok(Mode::Inclusive),
        "exclusive" => Ok(Mode::Exclusive),
        other => Err(format!(
            "tier2 mode must be inclusive or exclusive, not '{other}'"
        )),
    }
}

/// A byte-sized tier tracks at most one page per this many bytes: the policy
/// needs a block capacity, and lz4 rarely packs a page into fewer bytes.
const MIN_IMAGE_BYTES: u64 = 256;

/// Refuses a tier larger than half of this machine's memory before anything
/// is allocated: its images (or the kernel's copies) and the policy's entries,
/// sized from the tier's capacity, would otherwise fail an allocation and
/// abort the whole process (`SET tier2 = '1TB'` did, for every session).
fn check_fits_in_memory(
    config: &TierConfig,
    page_size: usize,
    physical: Option<u64>,
) -> StorageResult<()> {
    let Some(physical) = physical else {
        return Ok(());
    };
    let bytes = match config.capacity {
        TierCapacity::Bytes(b) => b,
        TierCapacity::Pages(n) => (n as u64).saturating_mul(page_size as u64),
    };
    let most = physical / 2;
    if bytes > most {
        return Err(StorageError::Invalid(format!(
            "tier2 of {} is more than this machine can hold: it has {} of memory, and a \
             second tier may take at most half ({})",
            kura_common::size::format_size(bytes),
            kura_common::size::format_size(physical),
            kura_common::size::format_size(most)
        )));
    }
    Ok(())
}

struct Images {
    policy: Box<dyn Policy>,
    images: HashMap<PageId, Box<[u8]>>,
    bytes: u64,
}

/// The tier's counters (all monotonic except `bytes`/`pages`, which are levels).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Pool misses served from the tier.
    pub hits: u64,
    /// Pool misses the tier did not hold (then read from disk).
    pub misses: u64,
    /// Pool victims compressed into the tier (exclusive mode).
    pub demotions: u64,
    /// Pages read from disk put into the tier (inclusive mode).
    pub inserts: u64,
    /// Compressed bytes and pages held now.
    pub bytes: u64,
    pub pages: u64,
    /// Page-cache tier hits the kernel had already dropped on its own (then
    /// read from disk, and counted as misses, not hits).
    pub lost: u64,
}

/// The tier's counters, kept by the pool across tier changes (`SET tier2`):
/// hits, misses, demotions and inserts only grow; bytes and pages are what the
/// current tier holds.
#[derive(Default)]
pub(super) struct TierCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    demotions: AtomicU64,
    inserts: AtomicU64,
    bytes: AtomicU64,
    pages: AtomicU64,
    lost: AtomicU64,
}

impl TierCounters {
    /// A tier was replaced: the new one holds nothing yet.
    pub fn clear_levels(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        self.pages.store(0, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> TierStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TierStats {
            hits: l(&self.hits),
            misses: l(&self.misses),
            demotions: l(&self.demotions),
            inserts: l(&self.inserts),
            bytes: l(&self.bytes),
            pages: l(&self.pages),
            lost: l(&self.lost),
        }
    }
}

/// What a tier hit gives the pool.
pub(super) enum TierHit {
    /// A compressed image to decompress into the frame.
    Image(Box<[u8]>),
    /// The page is in the OS page cache: read it with
    /// [`DbFile::read_page_if_cached`].
    PageCache,
}

pub(super) struct Tier {
    config: TierConfig,
    inner: Mutex<Images>,
    counters: Arc<TierCounters>,
    /// The file whose page cache is the tier (page-cache kind only).
    cache: Option<Arc<DbFile>>,
    page_size: usize,
}

impl Tier {
    /// A tier of `config`'s kind; a page-cache tier opens the file's buffered
    /// descriptor (and the caller sets where the pool's reads go, see
    /// [`Tier::reads_through_page_cache`]).
    pub fn new(
        config: TierConfig,
        counters: Arc<TierCounters>,
        file: &Arc<DbFile>,
    ) -> StorageResult<Tier> {
        let page_size = file.page_size();
        check_fits_in_memory(&config, page_size, crate::memory::physical_memory())?;
        let blocks = match (config.kind, config.capacity) {
            (_, TierCapacity::Pages(n)) => n,
            (TierKind::Compressed, TierCapacity::Bytes(b)) => {
                (b / MIN_IMAGE_BYTES).clamp(1, kura_cache::MAX_CAPACITY as u64) as usize
            }
            (TierKind::PageCache, TierCapacity::Bytes(b)) => {
                (b / page_size as u64).clamp(1, kura_cache::MAX_CAPACITY as u64) as usize
            }
        };
        let cache = match config.kind {
            TierKind::Compressed => None,
            TierKind::PageCache => {
                file.open_page_cache()?;
                Some(file.clone())
            }
        };
        let policy = kura_cache::make_policy(&config.policy, blocks)
            .map_err(|e| StorageError::Policy(format!("tier2: {e}")))?;
        Ok(Tier {
            config,
            inner: Mutex::new(Images {
                policy,
                images: HashMap::new(),
                bytes: 0,
            }),
            counters,
            cache,
            page_size,
        })
    }

    /// Whether the pool's disk reads should pass through the page cache: an
    /// inclusive page-cache tier keeps what is read from disk in both levels.
    pub fn reads_through_page_cache(&self) -> bool {
        self.cache.is_some() && self.config.mode == Mode::Inclusive
    }

    /// The file of a page-cache tier.
    pub fn page_cache(&self) -> Option<&Arc<DbFile>> {
        self.cache.as_ref()
    }

    /// A page-cache hit the kernel no longer held: it was read from disk.
    pub fn lost(&self) {
        self.counters.hits.fetch_sub(1, Ordering::Relaxed);
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        self.counters.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes one held page costs: its image, or a whole page in the kernel.
    fn held_len(&self, t: &Images, page: PageId) -> u64 {
        match &self.cache {
            None => t.images.get(&page).map_or(0, |i| i.len() as u64),
            Some(_) => self.page_size as u64,
        }
    }

    /// Forgets a page the policy let go of: its image, or the kernel's copy.
    fn release(&self, t: &mut Images, page: PageId) {
        t.bytes -= self.held_len(t, page);
        t.images.remove(&page);
        if let Some(f) = &self.cache {
            f.drop_from_page_cache(page, 1);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Images> {
        // Every change keeps map, policy and byte count in step before any
        // point that could panic, so a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn config(&self) -> &TierConfig {
        &self.config
    }

    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    /// Looks `page` up on a pool miss. Exclusive: a hit leaves the tier (the
    /// page moves up); inclusive: it stays, and the hit is told to the policy.
    /// Same order of policy calls as [`kura_cache::TwoLevel::request`].
    /// A page-cache hit leaves the kernel's copy where it is: the pool drops
    /// it (exclusive) once the page is read into its frame.
    pub fn take(&self, page: PageId) -> Option<TierHit> {
        let mut t = self.lock();
        if !t.policy.contains(page) {
            drop(t);
            self.counters.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let hit = match self.config.mode {
            Mode::Exclusive => {
                t.policy.remove(page);
                t.bytes -= self.held_len(&t, page);
                let image = t.images.remove(&page);
                self.publish(&t);
                image
            }
            Mode::Inclusive => {
                t.policy.access(page);
                t.images.get(&page).cloned()
            }
        };
        drop(t);
        self.counters.hits.fetch_add(1, Ordering::Relaxed);
        match (&self.cache, hit) {
            (Some(_), _) => Some(TierHit::PageCache),
            (None, Some(image)) => Some(TierHit::Image(image)),
            (None, None) => None,
        }
    }

    /// Demotes a pool victim (a whole clean page) into the tier: compressed,
    /// or written into the page cache. A page cache gets only bytes that verify
    /// as the page: the kernel will write them back to the file.
    pub fn put(&self, page: PageId, bytes: &[u8]) {
        match &self.cache {
            None => self.insert(page, compress(bytes)),
            Some(f) => {
                if f.verify_page(page, bytes).is_err() {
                    return;
                }
                if self.admit(page, self.page_size as u64, None) {
                    if let Err(e) = f.write_page_to_cache(page, bytes) {
                        tracing::warn!("page-cache tier: {e}");
                        self.remove(page);
                    }
                }
            }
        }
    }

    /// Notes that `page` was just read from disk through the page cache
    /// (inclusive page-cache tier): the kernel holds it now.
    pub fn note_read(&self, page: PageId) {
        if !self.admit(page, self.page_size as u64, None) {
            if let Some(f) = &self.cache {
                f.drop_from_page_cache(page, 1);
            }
        }
    }

    /// Puts an image made by [`compress`] into the tier, evicting as needed.
    pub fn insert(&self, page: PageId, image: Box<[u8]>) {
        let len = image.len() as u64;
        self.admit(page, len, Some(image));
    }

    /// Lists `page` (of `len` bytes, with its image if compressed) in the
    /// tier, evicting as needed. False if it is not held afterwards.
    fn admit(&self, page: PageId, len: u64, image: Option<Box<[u8]>>) -> bool {
        if let TierCapacity::Bytes(cap) = self.config.capacity {
            if len > cap {
                return false;
            }
        }
        let mut t = self.lock();
        if t.policy.contains(page) {
            // Already held (a race between two readers): refresh the image.
            t.policy.access(page);
            if let Some(image) = image {
                if let Some(old) = t.images.insert(page, image) {
                    t.bytes = t.bytes - old.len() as u64 + len;
                }
            }
            self.publish(&t);
            return true;
        }
        if !t.policy.admits() {
            return false;
        }
        loop {
            let full = t.policy.len() >= t.policy.capacity()
                || matches!(self.config.capacity, TierCapacity::Bytes(cap) if t.bytes + len > cap);
            if !full {
                break;
            }
            match t.policy.evict_for(page, &mut |_| true) {
                Some(victim) => self.release(&mut t, victim),
                None => {
                    self.publish(&t);
                    return false;
                }
            }
        }
        match self.config.mode {
            Mode::Exclusive => {
                t.policy.insert_protected(page);
                self.counters.demotions.fetch_add(1, Ordering::Relaxed);
            }
            Mode::Inclusive => {
                t.policy.insert(page);
                self.counters.inserts.fetch_add(1, Ordering::Relaxed);
            }
        }
        t.bytes += len;
        if let Some(image) = image {
            t.images.insert(page, image);
        }
        self.publish(&t);
        true
    }

    /// Drops the image of `page` (its id is about to hold new contents).
    pub fn remove(&self, page: PageId) {
        let mut t = self.lock();
        if t.policy.remove(page) {
            self.release(&mut t, page);
            self.publish(&t);
        }
    }

    /// Publishes what is held now (under the tier lock, after every change).
    fn publish(&self, t: &Images) {
        self.counters.bytes.store(t.bytes, Ordering::Relaxed);
        self.counters
            .pages
            .store(t.policy.len() as u64, Ordering::Relaxed);
    }

    #[cfg(test)]
    fn stats(&self) -> TierStats {
        self.counters.snapshot()
    }
}

/// Compresses a whole page into a tier image.
pub(super) fn compress(bytes: &[u8]) -> Box<[u8]> {
    lz4_flex::block::compress(bytes).into_boxed_slice()
}

/// Decompresses a page image into `dst` (a whole frame); false if the image
/// does not decompress to exactly a page (then the page is read from disk).
pub(super) fn decompress_into(image: &[u8], dst: &mut [u8]) -> bool {
    matches!(lz4_flex::block::decompress_into(image, dst), Ok(n) if n == dst.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tier_larger_than_half_the_memory_is_refused_before_allocating() {
        let gib = 1u64 << 30;
        let bytes = |b| TierConfig::new(TierCapacity::Bytes(b), Mode::Exclusive);
        let err = check_fits_in_memory(&bytes(1 << 40), 16384, Some(24 * gib)).unwrap_err();
        assert!(err.to_string().contains("more than this machine"), "{err}");
        assert!(check_fits_in_memory(&bytes(12 * gib), 16384, Some(24 * gib)).is_ok());
        assert!(check_fits_in_memory(&bytes(13 * gib), 16384, Some(24 * gib)).is_err());
        let pages = TierConfig::new(TierCapacity::Pages(1 << 20), Mode::Exclusive);
        assert!(check_fits_in_memory(&pages, 16384, Some(24 * gib)).is_err());
        assert!(check_fits_in_memory(&pages, 16384, Some(64 * gib)).is_ok());
        // Where the machine's memory is unknown nothing is refused.
        assert!(check_fits_in_memory(&bytes(1 << 40), 16384, None).is_ok());
    }

    /// A tier of `config` over a fresh database file (compressed tiers never
    /// touch it).
    fn tier(config: TierConfig) -> (Tier, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let (file, _) = DbFile::open(&dir.path().join("t.kura"), 16384, true).unwrap();
        (
            Tier::new(config, Default::default(), &Arc::new(file)).unwrap(),
            dir,
        )
    }

    fn page(seed: u8, len: usize) -> Vec<u8> {
        // Half patterned, half zero: compressible but not trivially.
        (0..len)
            .map(|i| {
                if i < len / 2 {
                    (i as u8).wrapping_mul(seed)
                } else {
                    0
                }
            })
            .collect()
    }

    #[test]
    fn round_trip_and_exclusive_move_up() {
        let (t, _dir) = tier(TierConfig::new(TierCapacity::Pages(2), Mode::Exclusive));
        let p = page(7, 4096);
        t.put(1, &p);
        let s = t.stats();
        assert_eq!((s.demotions, s.pages), (1, 1));
        assert!(s.bytes > 0 && s.bytes < 4096, "compressed: {}", s.bytes);
        let Some(TierHit::Image(image)) = t.take(1) else {
            panic!("held")
        };
        let mut out = vec![0u8; 4096];
        assert!(decompress_into(&image, &mut out));
        assert_eq!(out, p);
        // Exclusive: the hit left the tier.
        assert!(t.take(1).is_none());
        let s = t.stats();
        assert_eq!((s.hits, s.misses, s.pages, s.bytes), (1, 1, 0, 0));
    }

    #[test]
    fn inclusive_keeps_hits_and_lru_evicts_oldest() {
        let (t, _dir) = tier(TierConfig::new(TierCapacity::Pages(2), Mode::Inclusive));
        for id in [1, 2] {
            t.put(id, &page(id as u8, 1024));
        }
        assert!(t.take(1).is_some()); // 1 is now the most recent
        t.put(3, &page(3, 1024)); // evicts 2
        assert!(t.take(2).is_none());
        assert!(t.take(1).is_some() && t.take(3).is_some());
        assert_eq!(t.stats().pages, 2);
    }

    #[test]
    fn byte_capacity_bounds_what_is_held() {
        let probe = lz4_flex::block::compress(&page(5, 4096)).len() as u64;
        let (t, _dir) = tier(TierConfig::new(
            TierCapacity::Bytes(probe * 3),
            Mode::Exclusive,
        ));
        for id in 0..10 {
            t.put(id, &page(5, 4096));
            assert!(t.stats().bytes <= probe * 3);
        }
        assert_eq!(t.stats().pages, 3);
        t.remove(9);
        assert_eq!(t.stats().pages, 2);
        assert!(!decompress_into(b"garbage", &mut [0u8; 64]));
    }
}
