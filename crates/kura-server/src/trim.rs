//! Giving freed memory back to the operating system. The allocator keeps what
//! a large query freed for reuse (mimalloc until it has been free for a while,
//! and only when it next allocates; glibc in its arenas), so a server whose
//! clients ran big queries would stay gigabytes large although nothing is in
//! use. After a long statement or a closed session the server gives the free
//! pages back (`kura::release_free_memory`, on its own thread and every query
//! worker's) once the process holds more than a reserve ([`RESERVE`], at most
//! an eighth of the queries' memory budget) beyond what it held after the
//! last release, and all of it after [`IDLE`] without statements; at most ten
//! times a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Statements that ran at least this long may have used much memory (a
/// TPC-H SF 1 query's 30 ms leave tens of MB free in the allocator's heaps).
pub(crate) const LONG_STATEMENT: Duration = Duration::from_millis(10);

/// Free memory kept for the next statements, at most: what a release gives
/// back, the next statement faults in and clears again (TPC-H SF 1 through
/// psycopg, one release after every statement: Q3 42–45 ms against 34–37 ms
/// without, Q10 70–75 against 51–60 ms). Most SF 1 queries need less than this.
const RESERVE: u64 = 128 << 20;

/// ... and no more than this share of the queries' memory budget
/// (`--max-memory`): a server told to stay small keeps little.
const RESERVE_SHARE: u64 = 8;

/// Memory kept within the reserve is given back after this long without a
/// statement asking for a trim: an idle server does not keep it.
const IDLE: Duration = Duration::from_secs(1);

/// At most one trim in this long; requests in between make one trim after it.
/// A trim costs each worker a walk of its heap, a millisecond or two.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

pub(crate) struct MemoryTrim {
    wanted: Notify,
    /// Bytes of free memory kept between statements, at most.
    reserve: u64,
    /// Releases made so far.
    releases: AtomicU64,
}

impl MemoryTrim {
    /// A trimmer for a server whose queries may use `budget` bytes together
    /// (`None`: unbounded).
    pub(crate) fn new(budget: Option<u64>) -> Self {
        MemoryTrim {
            wanted: Notify::new(),
            reserve: budget.map_or(RESERVE, |b| RESERVE.min(b / RESERVE_SHARE)),
            releases: AtomicU64::new(0),
        }
    }

    /// How many times memory was given back so far.
    #[cfg(test)]
    fn releases(&self) -> u64 {
        self.releases.load(Ordering::Relaxed)
    }

    /// Asks for a trim now, or after the last one's interval (cheap; many
    /// requests make one trim).
    pub(crate) fn request(&self) {
        self.wanted.notify_one();
    }

    /// Trims whenever asked and the process holds more than the reserve, and
    /// when idle; until the task is dropped. At once: the memory a large
    /// statement freed is given back before the client's next statement starts
    /// (the allocator would keep it for a second, and the next statement's
    /// peak would stand on it).
    pub(crate) async fn run(self: Arc<Self>) {
        let mut floor = kura_common::allocator::resident_bytes();
        let mut kept = false;
        loop {
            // While something within the reserve is held, a second without a
            // request counts as one: an idle server gives it back.
            let asked = if kept {
                tokio::time::timeout(IDLE, self.wanted.notified())
                    .await
                    .is_ok()
            } else {
                self.wanted.notified().await;
                true
            };
            if asked && !past_reserve(floor, self.reserve) {
                kept = true;
                continue;
            }
            // Walking the heaps takes a few milliseconds with a large heap:
            // off the async workers.
            floor = tokio::task::spawn_blocking(|| {
                kura::release_free_memory();
                kura_common::allocator::resident_bytes()
            })
            .await
            .unwrap_or(None);
            self.releases.fetch_add(1, Ordering::Relaxed);
            kept = false;
            tokio::time::sleep(MIN_INTERVAL).await;
        }
    }
}

/// Whether the process holds more than `reserve` beyond `floor` (what it held
/// after the last release); always, where resident memory is unknown.
fn past_reserve(floor: Option<u64>, reserve: u64) -> bool {
    match (floor, kura_common::allocator::resident_bytes()) {
        (Some(floor), Some(now)) => now > floor.saturating_add(reserve),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_at_most_an_eighth_of_the_budget() {
        assert_eq!(MemoryTrim::new(None).reserve, RESERVE);
        assert_eq!(MemoryTrim::new(Some(256 << 20)).reserve, 32 << 20);
        assert_eq!(MemoryTrim::new(Some(64 << 30)).reserve, RESERVE);
        // Unknown resident memory: always release.
        assert!(past_reserve(None, RESERVE));
        assert!(past_reserve(Some(0), 0));
        assert!(!past_reserve(Some(u64::MAX / 2), RESERVE));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[cfg(target_os = "linux")]
    async fn memory_within_the_reserve_is_kept_until_idle_and_beyond_it_given_back_at_once() {
        let trim = Arc::new(MemoryTrim::new(Some(256 << 20)));
        let task = tokio::spawn(trim.clone().run());
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Nothing grew since the trimmer started: kept while statements come.
        for _ in 0..5 {
            trim.request();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(trim.releases(), 0, "released within the reserve");
        // No statement for longer than IDLE: given back.
        tokio::time::sleep(IDLE + Duration::from_millis(500)).await;
        assert_eq!(trim.releases(), 1, "not released when idle");
        // 64 MiB more resident than after that release, past the 32 MiB
        // reserve: given back at the next request.
        let held = vec![1u8; 64 << 20];
        tokio::time::sleep(MIN_INTERVAL).await;
        trim.request();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(trim.releases(), 2, "not released past the reserve");
        drop(held);
        task.abort();
    }
}
