//! Process-wide tuning of the C allocator (glibc malloc) for query work.
//!
//! Operators allocate and free column vectors, packed keys and selections of a
//! few hundred KiB to a few MiB per batch. With glibc's defaults those blocks
//! are either mmap-ed and unmapped each time or trimmed back to the kernel when
//! freed, so every batch pays page faults and page clearing for memory it just
//! gave back (TPC-H SF 1 Q18, Q21, Q9 spent 5–9 % of their samples there).
//! Fixed thresholds keep such blocks in the heap for reuse.
//!
//! Those thresholds hold per arena, and `malloc_trim` never shrinks the top of
//! a thread's arena (only `free` does, above the trim threshold). glibc makes up
//! to eight arenas per core, one for each thread that finds the others busy, so
//! after a large query each could keep up to `TRIM_THRESHOLD + TOP_PAD` of free
//! memory resident: at TPC-H SF 1, nine arenas kept about 190 MB no query used.
//! Capping arenas at the core count (query workers are one per core) bounds that.

/// Blocks below this size come from the heap, not from their own mapping.
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free memory at the top of a heap kept before it is returned to the kernel.
/// (128 MiB kept Q18's hash tables resident through the queries after it, with
/// no query faster than at 32 MiB in TPC-H SF 1 runs.)
pub const TRIM_THRESHOLD: usize = 32 << 20;
/// Extra memory asked for when a heap grows, so that growth is rare.
pub const TOP_PAD: usize = 16 << 20;

/// The environment variables with which a user sets these thresholds
/// themselves; when any is set, `tune` leaves the thresholds alone.
const USER_SETTINGS: [&str; 3] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
];

/// The environment variable with which a user sets the arena count.
const USER_ARENAS: &str = "MALLOC_ARENA_MAX";

/// The arena cap: one per core, at least two (the main thread's and one for
/// the workers, which otherwise contend on a single lock).
pub fn arena_cap() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(2)
}

/// Applies the thresholds and the arena cap above, each unless the user set it
/// through the environment. Returns whether the thresholds were set. Call once,
/// at start, before threads.
pub fn tune() -> bool {
    if std::env::var_os(USER_ARENAS).is_none() {
        set_arena_cap(arena_cap());
    }
    if USER_SETTINGS.iter().any(|v| std::env::var_os(v).is_some()) {
        return false;
    }
    set_thresholds()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_cap(arenas: usize) -> bool {
    let arenas = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
    // SAFETY: as in set_thresholds; called before other threads start.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_cap(_arenas: usize) -> bool {
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds() -> bool {
    // SAFETY: mallopt only changes allocator parameters; it is called before
    // the process starts other threads.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TOP_PAD, TOP_PAD as libc::c_int) == 1
    }
}

/// Other C libraries have their own policies; nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds() -> bool {
    false
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn batch_sized_blocks_come_from_the_heap() {
        assert!(super::set_thresholds());
        // With glibc's default threshold (128 KiB, raised only after a larger
        // mapped block is freed) a fresh process maps a 16 MiB block of its own.
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let mapped = || unsafe { libc::mallinfo2() }.hblks;
        let before = mapped();
        let block = vec![1u8; 16 << 20];
        assert_eq!(mapped(), before, "a 16 MiB block was mapped on its own");
        assert_eq!(block.iter().map(|&b| b as usize).sum::<usize>(), 16 << 20);
    }
}
