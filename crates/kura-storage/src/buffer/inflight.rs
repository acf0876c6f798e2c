//! Reads in flight: the ticket that fills a frame and the handle other readers wait on.

use super::*;

impl ReadTicket {
    pub fn page(&self) -> PageId {
        self.page
    }
    /// The frame's whole page buffer (aligned, page-sized) to read into.
    pub fn buffer(&mut self) -> &mut [u8] {
        self.h.core.frame_bytes_mut(self.frame)
    }
}

impl Drop for ReadTicket {
    fn drop(&mut self) {
        if !self.done {
            // Abandoned (e.g. a cancelled task): release the frame as a failed read.
            let t = ReadTicket {
                h: self.h.clone(),
                frame: self.frame,
                page: self.page,
                done: true,
            };
            let _ = self
                .h
                .core
                .complete(t, Err(StorageError::Invalid("page read abandoned".into())));
        }
    }
}

impl InFlight {
    pub fn page(&self) -> PageId {
        self.page
    }

    /// Whether the read finished (either way); `wait` then returns at once.
    pub fn is_done(&self) -> bool {
        kind(
            self.h.core.frames[self.frame as usize]
                .state
                .load(Ordering::Acquire),
        ) != LOADING
    }

    /// Asks for `waker` to be woken when the other read completes; returns whether
    /// it already has (then nothing is registered and `wait` returns at once).
    /// This is how an asynchronous task awaits a shared read without blocking its
    /// worker thread.
    pub fn register_waker(&self, waker: &std::task::Waker) -> bool {
        if self.is_done() {
            return true;
        }
        self.h.core.waiters.register(self.frame, waker);
        // `complete` publishes the state before waking: re-checking after
        // registering means a completion in between is never missed.
        self.is_done()
    }

    /// Blocks until the other read completes: the pinned page, or `None` if that
    /// read failed (the caller retries the fix).
    pub fn wait(mut self) -> Option<PageGuard> {
        let h = self.h.clone();
        let core = &*h.core;
        let frame = &core.frames[self.frame as usize];
        let mut inner = core.lock();
        while kind(frame.state.load(Ordering::Acquire)) == LOADING {
            inner = core.loaded.wait(inner).unwrap_or_else(|p| p.into_inner());
        }
        // Not ready: the read failed, or the page was invalidated while it was
        // read; either way the caller fixes it afresh.
        let ok = kind(frame.state.load(Ordering::Acquire)) == READY;
        // The pin passes to the guard (or is released here), not on drop.
        self.pinned = false;
        if ok {
            drop(inner);
            Some(core.guard(self.frame, self.page))
        } else {
            core.unpin_locked(&mut inner, self.frame);
            None
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.pinned {
            self.h.core.unpin(self.frame);
        }
    }
}
