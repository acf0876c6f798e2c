//! Giving freed memory back to the operating system. glibc's allocator keeps
//! what a large query freed in its per-thread arenas, so a server whose
//! clients abandoned big queries would stay gigabytes large although nothing
//! is in use; after a long statement or a closed session the server asks it to
//! return the free pages (`malloc_trim`), at most twice a second.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Statements that ran at least this long may have used much memory.
pub(crate) const LONG_STATEMENT: Duration = Duration::from_millis(100);

const CHECK_EVERY: Duration = Duration::from_millis(500);

#[derive(Default)]
pub(crate) struct MemoryTrim {
    wanted: AtomicBool,
}

impl MemoryTrim {
    /// Asks for a trim soon (cheap; many requests make one trim).
    pub(crate) fn request(&self) {
        self.wanted.store(true, Ordering::Relaxed);
    }

    /// Trims whenever asked, until the task is dropped.
    pub(crate) async fn run(self: Arc<Self>) {
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if self.wanted.swap(false, Ordering::Relaxed) {
                // Walking the arenas takes a few milliseconds with a large heap:
                // off the async workers.
                let _ = tokio::task::spawn_blocking(release_free_memory).await;
            }
        }
    }
}

fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
