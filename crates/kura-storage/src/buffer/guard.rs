//! PageGuard: a pinned page's bytes, unpinned when dropped.

use super::*;

impl std::fmt::Debug for PageGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageGuard(page {}, frame {})", self.page, self.frame)
    }
}

impl PageGuard {
    pub fn page(&self) -> PageId {
        self.page
    }

    /// The kind recorded in the page header (checked by the checksum on read).
    pub fn kind(&self) -> Option<crate::file::page::PageKind> {
        crate::file::page::kind(&self.whole()[..PAGE_HEADER])
    }

    /// The whole page, header included.
    #[inline]
    pub(super) fn whole(&self) -> &[u8] {
        // SAFETY: `bytes` points to `len` bytes that stay allocated and
        // unwritten while this guard lives (see the type's safety comment).
        unsafe { std::slice::from_raw_parts(self.bytes, self.len) }
    }
}

impl std::ops::Deref for PageGuard {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.whole()[PAGE_HEADER..]
    }
}

impl Drop for PageGuard {
    #[inline]
    fn drop(&mut self) {
        if self.private.is_none() {
            // SAFETY: the frame's state word stays allocated while it is
            // pinned, and this guard's pin is released only here.
            unsafe { &*self.state }.fetch_sub(1, Ordering::Release);
        }
    }
}

impl Core {
    /// The guard of frame `f`, which holds `page` and carries a pin the guard
    /// now owns.
    #[inline]
    pub(super) fn guard(&self, f: u32, page: PageId) -> PageGuard {
        PageGuard {
            state: &self.frames[f as usize].state,
            bytes: self.frame_bytes(f).as_ptr(),
            len: self.page_size,
            frame: f,
            page,
            private: None,
        }
    }

    #[inline]
    pub(super) fn frame_bytes(&self, f: u32) -> &[u8] {
        let start = f as usize * self.page_size;
        &self.arena[start..start + self.page_size]
    }

    /// Frame memory for the one party allowed to write it (the ticket holder).
    #[allow(clippy::mut_from_ref)]
    pub(super) fn frame_bytes_mut(&self, f: u32) -> &mut [u8] {
        let start = f as usize * self.page_size;
        assert!(start + self.page_size <= self.arena.len());
        // SAFETY: in bounds (checked above); only the holder of the frame's
        // ReadTicket writes a LOADING frame, and nobody reads it before `complete`
        // publishes READY (readers who pin a LOADING frame get an `InFlight`,
        // which gives access only once the state is READY).
        unsafe { std::slice::from_raw_parts_mut(self.arena.as_ptr().add(start), self.page_size) }
    }
}
