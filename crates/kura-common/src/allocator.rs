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
//! That while is [`PURGE_DELAY_MS`], not mimalloc's 1 s ([`keep_freed_memory`]):
//! an operator's hash tables and batches are freed and allocated again within a
//! query and between queries, and each page given back in between was faulted in
//! and cleared again (transparent huge pages: 2 MiB at a time). TPC-H SF 10 Q9,
//! three runs in one process, under `memory_limit = '256MB'`: 51,735 page faults
//! with 1 s, 990 with 10 s, and 13 % less CPU time; Q21 without a limit 41,412
//! against 835. Peak RSS stays the same. What must be given back soon is given
//! back on purpose ([`release_free_memory`]: the server after long statements).
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

/// How long mimalloc keeps a freed page before giving it back on its own.
pub const PURGE_DELAY_MS: i64 = 10_000;

/// Makes the allocator keep freed pages for [`PURGE_DELAY_MS`] (see the module
/// doc) unless `MIMALLOC_PURGE_DELAY` says otherwise. The earlier the better:
/// called first thing by the `kura` command and the Python module (set at a
/// database's opening instead, a TPC-H SF 10 Q21 process still took 7,700
/// page faults against 820), and again when a database opens, for other
/// embedders; calling it again changes nothing.
pub fn keep_freed_memory() {
    #[cfg(feature = "mimalloc")]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // mimalloc.h's `mi_option_purge_delay` (libmimalloc-sys names no
        // constant for it).
        const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
        // SAFETY: setting an option is thread-safe and valid at any time.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _) };
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
        // Freed pages kept for seconds are still given back when asked.
        super::keep_freed_memory();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reading an option is thread-safe.
            let delay = unsafe { libmimalloc_sys::mi_option_get(15) };
            assert_eq!(delay as i64, super::PURGE_DELAY_MS);
        }
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
