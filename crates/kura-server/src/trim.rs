//! Giving freed memory back to the operating system. The allocator keeps what
//! a large query freed for reuse (mimalloc until it has been free for a while,
//! and only when it next allocates; glibc in its arenas), so a server whose
//! clients ran big queries would stay gigabytes large although nothing is in
//! use; after a long statement or a closed session the server asks it to
//! return the free pages (`kura::release_free_memory`, on its own thread and every query worker's), at
//! most ten times a second.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Statements that ran at least this long may have used much memory (a
/// TPC-H SF 1 query's 30 ms leave tens of MB free in the allocator's heaps).
pub(crate) const LONG_STATEMENT: Duration = Duration::from_millis(10);

/// At most one trim in this long; requests in between make one trim after it.
/// A trim costs each worker a walk of its heap, a millisecond or two.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Default)]
pub(crate) struct MemoryTrim {
    wanted: Notify,
}

impl MemoryTrim {
    /// Asks for a trim now, or after the last one's interval (cheap; many
    /// requests make one trim).
    pub(crate) fn request(&self) {
        self.wanted.notify_one();
    }

    /// Trims whenever asked, until the task is dropped. At once: the memory a
    /// statement freed is given back before the client's next statement starts
    /// (the allocator would keep it for a second, and the next statement's
    /// peak would stand on it).
    pub(crate) async fn run(self: Arc<Self>) {
        loop {
            self.wanted.notified().await;
            // Walking the heaps takes a few milliseconds with a large heap:
            // off the async workers.
            let _ = tokio::task::spawn_blocking(kura::release_free_memory).await;
            tokio::time::sleep(MIN_INTERVAL).await;
        }
    }
}
