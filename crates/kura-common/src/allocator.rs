//! Process-wide tuning of the C allocator (glibc malloc) for query work.
//!
//! Operators allocate and free column vectors, packed keys and selections of a
//! few hundred KiB to a few MiB per batch. With glibc's defaults those blocks
//! are either mmap-ed and unmapped each time or trimmed back to the kernel when
//! freed, so every batch pays page faults and page clearing for memory it just
//! gave back (TPC-H SF 1 Q18, Q21, Q9 spent 5–9 % of their samples there).
//! Fixed thresholds keep such blocks in the heap for reuse.

/// Blocks below this size come from the heap, not from their own mapping.
pub const MMAP_THRESHOLD: usize = 32 << 20;
/// Free memory at the top of a heap kept before it is returned to the kernel.
pub const TRIM_THRESHOLD: usize = 128 << 20;
/// Extra memory asked for when a heap grows, so that growth is rare.
pub const TOP_PAD: usize = 64 << 20;

/// The environment variables with which a user sets these thresholds
/// themselves; when any is set, `tune` leaves the allocator alone.
const USER_SETTINGS: [&str; 3] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
];

/// Applies the thresholds above, unless the user set any of them through the
/// environment. Returns whether it did. Call once, at start, before threads.
pub fn tune() -> bool {
    if USER_SETTINGS.iter().any(|v| std::env::var_os(v).is_some()) {
        return false;
    }
    set_thresholds()
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
