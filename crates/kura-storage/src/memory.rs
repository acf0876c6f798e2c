//! What the machine has: its physical memory (the buffer pool's default size and
//! the check that a configured tier fits are both sized from it).

/// Bytes of physical memory, when the OS tells.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}
