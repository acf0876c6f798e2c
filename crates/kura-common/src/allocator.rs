//! The process's memory allocator: mimalloc, when a binary turns on the
//! `mimalloc` feature (the `kura` command and the Python module do).
//!
//! Operators allocate and free column vectors, join pairs and selections of a
//! few hundred KiB to a few MiB per batch, on every worker at once. glibc
//! malloc gives a process a handful of arenas, each behind a lock: two query
//! workers that share one wait on each other (TPC-H SF 10 Q4 spent 8 % of its
//! samples in futex waits under `realloc` of the join's pair list), and blocks
//! it unmaps or trims are faulted in and cleared again by the next batch.
//! mimalloc keeps a heap per thread and returns memory to the system only
//! after it stayed free for a while. Measured with `bench/run --sf 1 --systems
//! kura,duckdb --modes warm --reps 3`, three runs each, alternating: geometric
//! mean kura/DuckDB 0.90–0.99 with glibc (tuned thresholds, arena cap), 0.76–0.81
//! with mimalloc.
//!
//! Without the feature the process keeps its allocator (an embedding program
//! chooses its own); [`release_free_memory`] then asks glibc to trim.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator in use, for diagnostics (`mimalloc` or `system`).
pub fn name() -> &'static str {
    if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system"
    }
}

/// Returns free memory to the operating system now instead of when the
/// allocator would (mimalloc: after a second; glibc: never for a thread's
/// arena). Safe to call from any thread at any time; it costs a walk of the
/// calling thread's heap and the release of the free pages.
pub fn release_free_memory() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: mi_collect only frees memory no allocation uses; thread-safe.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(not(feature = "mimalloc"), target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The process's resident memory in bytes (`/proc/self/statm`), or `None`
/// where that cannot be read. Includes what the allocator keeps free for reuse
/// (mimalloc's counters do not see its own purges, so they cannot say that).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(feature = "mimalloc", target_os = "linux"))]
    fn the_global_allocator_is_mimalloc_and_gives_memory_back() {
        assert_eq!(super::name(), "mimalloc");
        // mimalloc's own statistics see a block this allocator handed out.
        let block = vec![7u8; 64 << 20];
        // SAFETY: mi_usable_size reads the allocation's header.
        let usable = unsafe { libmimalloc_sys::mi_usable_size(block.as_ptr().cast()) };
        assert!(usable >= 64 << 20, "not a mimalloc block: {usable}");
        let rss = || -> u64 {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap()
        };
        let held = rss();
        let resident = super::resident_bytes().unwrap();
        assert!(
            resident >= 64 << 20,
            "64 MiB in use, {resident} bytes resident"
        );
        drop(block);
        super::release_free_memory();
        let after = rss();
        assert!(
            after + 48 * 1024 < held,
            "64 MiB freed and released, RSS {held} KiB -> {after} KiB"
        );
        let released = super::resident_bytes().unwrap();
        assert!(
            released + (48 << 20) < resident,
            "{resident} -> {released} bytes"
        );
    }
}
