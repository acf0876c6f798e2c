//! Prefetch: read tickets for pages not yet resident, and synchronous runs of adjacent
//! pages read with one call.

use super::*;

impl BufferManager {
    /// Read-ahead: reserves a frame for `page` when it is neither resident nor being
    /// read, and a frame can be had without failing anyone. `None` means there is
    /// nothing to do (or no unpinned frame to spare: read-ahead never takes the last
    /// frames a real fix needs). The caller reads the page like a miss and completes
    /// the ticket; dropping the resulting guard leaves the page resident, unpinned.
    /// Not counted as a fix, so hit ratios still describe what queries asked for.
    pub fn try_prefetch(self: &Arc<Self>, page: PageId) -> Option<ReadTicket> {
        let core = &*self.core;
        if core.table.get(page).is_some() {
            return None;
        }
        let mut inner = core.lock();
        if core.table.get(page).is_some() {
            return None;
        }
        let image = inner
            .tier
            .as_ref()
            .and_then(|t| t.take(page).map(|hit| (t.clone(), hit)));
        core.drain_hits(&mut inner);
        let f = core.take_frame(&mut inner, page)?;
        core.assign(&mut inner, f, page);
        let ticket = ReadTicket {
            h: self.handle(slot_index()),
            frame: f,
            page,
            done: false,
        };
        drop(inner);
        if let Some((t, hit)) = image {
            // Served from the tier: nothing left to read (the guard is dropped,
            // the page stays resident, unpinned).
            match self.fill_from_tier(ticket, &t, hit) {
                Ok(FixAttempt::Miss(t)) => return self.count_prefetch(t),
                _ => return None,
            }
        }
        self.count_prefetch(ticket)
    }

    pub(super) fn count_prefetch(&self, ticket: ReadTicket) -> Option<ReadTicket> {
        self.core
            .counters
            .prefetch_reads
            .fetch_add(1, Ordering::Relaxed);
        Some(ticket)
    }

    /// Synchronous read-ahead (serial and static scans): reserves frames for
    /// those of `pages` not resident (as [`BufferManager::try_prefetch`]), then
    /// reads each run of consecutive page ids with one `pread` of up to
    /// [`MAX_READ_PAGES`] pages and completes them. Returns the pages read. A
    /// failed read only drops its pages (the fix that needs one reports the error).
    pub fn prefetch_sync(self: &Arc<Self>, pages: &[PageId]) -> usize {
        let mut sorted: Vec<PageId> = pages.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut tickets: Vec<ReadTicket> = Vec::new();
        for page in sorted {
            if let Some(t) = self.try_prefetch(page) {
                tickets.push(t);
            }
        }
        let mut read = 0;
        let mut run: Vec<ReadTicket> = Vec::new();
        for t in tickets {
            let extends = run
                .last()
                .is_some_and(|l| l.page + 1 == t.page && run.len() < MAX_READ_PAGES);
            if !extends && !run.is_empty() {
                read += self.read_run(std::mem::take(&mut run));
            }
            run.push(t);
        }
        if !run.is_empty() {
            read += self.read_run(run);
        }
        read
    }

    /// Reads a run of consecutive reserved pages with one request, straight into
    /// their frames.
    pub(super) fn read_run(&self, mut run: Vec<ReadTicket>) -> usize {
        observer::note(SyncRead::Submitted);
        let first = run[0].page;
        let r = {
            let mut bufs: Vec<&mut [u8]> = run.iter_mut().map(|t| t.buffer()).collect();
            let _request = self.start_read();
            self.core.file.read_pages_into(first, &mut bufs)
        };
        observer::note(SyncRead::Completed { pages: run.len() });
        let mut read = 0;
        for t in run {
            let outcome = match &r {
                Ok(()) => Ok(()),
                Err(e) => Err(StorageError::Invalid(format!("read-ahead failed: {e}"))),
            };
            // The guard is dropped at once: the page stays resident, unpinned.
            if self.complete(t, outcome).is_ok() {
                read += 1;
            }
        }
        read
    }
}
