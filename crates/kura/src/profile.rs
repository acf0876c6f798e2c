//! Profiling for front ends (paper 002): kura-profile's counters, samples, reports and simulated caches, the sysfs cache geometry, and buffer pages named by their column or index.

pub use kura_cache::cpu::SYSFS_CACHE_DIR;
pub use kura_profile::{
    counters, diff, events, foreign, overhead, report, run, sampling, simulated, Event, Pmu,
    Profile, ProfileError,
};

use kura_storage::Storage;

use crate::KuraResult;

/// Names a buffer page by the column or index it belongs to (`(name, kind)`), from
/// `storage`'s catalog now.
pub fn page_namer(
    storage: &Storage,
) -> KuraResult<impl Fn(u64) -> Option<(String, Option<String>)>> {
    Ok(kura_storage::resident::page_namer(
        storage.buffer().file(),
        &storage.catalog(),
    )?)
}
