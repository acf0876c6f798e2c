//! Fixes and disk reads counted per thread, across every buffer manager of the
//! process: EXPLAIN ANALYZE reads them before and after a stretch of synchronous
//! work to charge that work's pages to one operator. The buffer manager's own
//! counters are shared by all threads, so their difference over the same stretch
//! would also take in what the other workers fixed and read meanwhile.

use std::cell::Cell;

thread_local! {
    static FIXES: Cell<u64> = const { Cell::new(0) };
    static READS: Cell<u64> = const { Cell::new(0) };
}

/// `(pages fixed, pages read from disk)` by the calling thread so far.
pub fn thread_io() -> (u64, u64) {
    (
        FIXES.try_with(Cell::get).unwrap_or(0),
        READS.try_with(Cell::get).unwrap_or(0),
    )
}

#[inline]
pub(super) fn note_fix() {
    // A thread past its TLS destruction (a guard dropped late) counts nowhere.
    let _ = FIXES.try_with(|c| c.set(c.get() + 1));
}

#[inline]
pub(super) fn note_read() {
    let _ = READS.try_with(|c| c.set(c.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_calling_threads_own() {
        let before = thread_io();
        note_fix();
        note_fix();
        note_read();
        std::thread::spawn(|| {
            note_fix();
            note_read();
            assert_eq!(thread_io(), (1, 1));
        })
        .join()
        .unwrap();
        let after = thread_io();
        assert_eq!((after.0 - before.0, after.1 - before.1), (2, 1));
    }
}
