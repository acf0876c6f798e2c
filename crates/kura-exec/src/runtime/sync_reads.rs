//! Counts the buffer manager's synchronous page reads (serial and static mode
//! read with `pread`, which the runtime does not issue) in the runtime's
//! counters, so that IOPS and timelines of every mode count the same reads.

use std::sync::{Arc, OnceLock};

use kura_storage::SyncRead;

use super::context;
use super::shared::Shared;
use super::stats::{add, Counters};

/// The process-wide runtime's shared state once it has started: reads on
/// threads outside any worker count in its caller slot. Set by that runtime as
/// it starts (`global`), so that this file need not name the runtimes above it.
static PROCESS_RUNTIME: OnceLock<Arc<Shared>> = OnceLock::new();

/// Makes `shared`'s caller slot count the reads of threads outside any worker
/// (the first call wins; only the process-wide runtime calls it).
pub(crate) fn count_outside_workers_in(shared: Arc<Shared>) {
    let _ = PROCESS_RUNTIME.set(shared);
}

/// The observer the runtime installs in the buffer manager: counts a read in
/// the running worker's counters, or in the process-wide runtime's caller slot
/// on any other thread.
pub(crate) fn count_sync_read(phase: SyncRead) {
    let count = |c: &Counters| match phase {
        SyncRead::Submitted => add(&c.io_submitted, 1),
        SyncRead::Completed { pages } => {
            add(&c.io_completed, 1);
            add(&c.extra_run_pages, pages.saturating_sub(1) as u64);
        }
    };
    if context::current().is_some() {
        context::with_counters(count);
    } else if let Some(shared) = PROCESS_RUNTIME.get() {
        count(&shared.slots[shared.caller_slot()].counters);
    }
}
