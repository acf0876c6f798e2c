//! Buffer manager counters: fixes, hits, misses, pages and bytes read and
//! written, read requests and the most of them in flight at once, and the second
//! tier's hits, misses, demotions and bytes held.

use std::sync::atomic::{AtomicU64, Ordering};

use super::tier::TierStats;

/// The counters of the slow paths. Fixes are counted per thread slot (the hit
/// path touches no shared line), and hits are fixes less misses.
#[derive(Default)]
pub(super) struct Counters {
    pub misses: AtomicU64,
    pub pages_read: AtomicU64,
    pub pages_written: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub prefetch_reads: AtomicU64,
    pub read_requests: AtomicU64,
    pub reads_in_flight: AtomicU64,
    pub peak_reads_in_flight: AtomicU64,
}

/// One disk read request of the pool's pages, from its start until it returns
/// (see [`super::BufferManager::start_read`]): counted as a request and as in
/// flight while it lives.
pub struct ReadRequest<'a> {
    counters: &'a Counters,
}

impl Counters {
    pub(super) fn start_read(&self) -> ReadRequest<'_> {
        self.read_requests.fetch_add(1, Ordering::Relaxed);
        let now = self.reads_in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_reads_in_flight.fetch_max(now, Ordering::Relaxed);
        ReadRequest { counters: self }
    }

    /// The peak since the last call, restarted from the reads in flight now.
    pub(super) fn take_peak_reads_in_flight(&self) -> u64 {
        let now = self.reads_in_flight.load(Ordering::Relaxed);
        self.peak_reads_in_flight.swap(now, Ordering::Relaxed)
    }
}

impl Drop for ReadRequest<'_> {
    fn drop(&mut self) {
        self.counters
            .reads_in_flight
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// A snapshot of the counters since the database was opened; diff two snapshots
/// to measure one query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    pub fixes: u64,
    pub hits: u64,
    pub misses: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Misses taken by read-ahead ([`super::BufferManager::try_prefetch`]); their
    /// reads are part of `pages_read` once complete.
    pub prefetch_reads: u64,
    /// Disk read requests (one `pread` or one ring read): a coalesced read of a
    /// run of consecutive pages is one request for several of `pages_read`, so
    /// `pages_read == read_requests` means every request read one page.
    pub read_requests: u64,
    /// The most read requests in flight at once since the pool was opened or
    /// [`super::BufferManager::take_peak_reads_in_flight`] was last called (a
    /// level, not a count: [`BufferStats::since`] keeps the later one's).
    pub peak_reads_in_flight: u64,
    /// Pool misses served by the second tier (no disk read).
    pub tier_hits: u64,
    /// Pool misses the second tier did not hold (`misses` = tier hits + tier
    /// misses while a tier is on).
    pub tier_misses: u64,
    /// Pool victims compressed into the tier (exclusive mode).
    pub tier_demotions: u64,
    /// Pages read from disk also put into the tier (inclusive mode).
    pub tier_inserts: u64,
    /// Compressed bytes and pages the tier holds now (levels, not counts).
    pub tier_bytes: u64,
    pub tier_pages: u64,
    /// Page-cache tier hits the kernel had dropped on its own (read from disk;
    /// counted in `tier_misses`).
    pub tier_lost: u64,
}

impl Counters {
    /// `fixes` sums the per-slot fix counters; read after the misses, so every
    /// miss counted has its fix counted too and hits never go negative.
    pub fn snapshot(&self, fixes: impl FnOnce() -> u64, tier: TierStats) -> BufferStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let misses = l(&self.misses);
        let fixes = fixes();
        BufferStats {
            fixes,
            hits: fixes.saturating_sub(misses),
            misses,
            pages_read: l(&self.pages_read),
            pages_written: l(&self.pages_written),
            bytes_read: l(&self.bytes_read),
            bytes_written: l(&self.bytes_written),
            prefetch_reads: l(&self.prefetch_reads),
            read_requests: l(&self.read_requests),
            peak_reads_in_flight: l(&self.peak_reads_in_flight),
            tier_hits: tier.hits,
            tier_misses: tier.misses,
            tier_demotions: tier.demotions,
            tier_inserts: tier.inserts,
            tier_bytes: tier.bytes,
            tier_pages: tier.pages,
            tier_lost: tier.lost,
        }
    }
}

impl BufferStats {
    /// Counters accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &BufferStats) -> BufferStats {
        BufferStats {
            fixes: self.fixes - earlier.fixes,
            hits: self.hits - earlier.hits,
            misses: self.misses - earlier.misses,
            pages_read: self.pages_read - earlier.pages_read,
            pages_written: self.pages_written - earlier.pages_written,
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            prefetch_reads: self.prefetch_reads - earlier.prefetch_reads,
            read_requests: self.read_requests - earlier.read_requests,
            peak_reads_in_flight: self.peak_reads_in_flight,
            tier_hits: self.tier_hits - earlier.tier_hits,
            tier_misses: self.tier_misses - earlier.tier_misses,
            tier_demotions: self.tier_demotions - earlier.tier_demotions,
            tier_inserts: self.tier_inserts - earlier.tier_inserts,
            tier_bytes: self.tier_bytes,
            tier_pages: self.tier_pages,
            tier_lost: self.tier_lost - earlier.tier_lost,
        }
    }

    /// Hits / fixes (1.0 when nothing was fixed).
    pub fn hit_ratio(&self) -> f64 {
        if self.fixes == 0 {
            1.0
        } else {
            self.hits as f64 / self.fixes as f64
        }
    }
}
