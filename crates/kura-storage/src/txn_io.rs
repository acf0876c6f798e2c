//! Page allocation and sequential page writing for one write transaction. Pages
//! come from the free list (pages no committed snapshot can still read) or from
//! the end of the file; consecutive pages are written in one large write.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::buffer::BufferManager;
use crate::error::StorageResult;
use crate::file::aligned::AlignedBuf;
use crate::file::page::{seal, PageKind, PAGE_HEADER};
use crate::file::{DbFile, PageId};

/// Pages gathered before one `pwrite` (4 MiB at 16 KiB pages).
const RUN_BYTES: usize = 4 << 20;

pub struct PageIo {
    file: Arc<DbFile>,
    bm: Arc<BufferManager>,
    page_size: usize,
    /// Free pages this transaction may overwrite.
    reusable: BTreeSet<PageId>,
    /// Pages taken from `reusable` (they leave the committed free list).
    pub(crate) reused: Vec<PageId>,
    /// Next page past the end of the committed extent.
    next: PageId,
    run: AlignedBuf,
    run_first: PageId,
    run_pages: usize,
    written: u64,
}

impl PageIo {
    pub fn new(
        file: Arc<DbFile>,
        bm: Arc<BufferManager>,
        reusable: BTreeSet<PageId>,
        next: PageId,
    ) -> Self {
        let page_size = file.page_size();
        PageIo {
            run: AlignedBuf::new(RUN_BYTES.max(page_size)),
            file,
            bm,
            page_size,
            reusable,
            reused: Vec::new(),
            next,
            run_first: 0,
            run_pages: 0,
            written: 0,
        }
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// End of the file extent after this transaction's allocations.
    pub fn next_page(&self) -> PageId {
        self.next
    }

    pub fn pages_written(&self) -> u64 {
        self.written
    }

    /// Where allocation stands now, for [`PageIo::rewind`]. Gathered pages
    /// not yet written belong to after the mark: flush first.
    pub fn mark(&self) -> IoMark {
        IoMark {
            reused: self.reused.len(),
            next: self.next,
        }
    }

    /// Forgets every page allocated since `mark`: those taken from the free
    /// list become reusable again and the end of the extent moves back, so
    /// the same ids are handed out anew. Nothing references them any more,
    /// but the buffer pool may hold copies of what was written there (a
    /// statement read them back): those are dropped, or a page written anew
    /// under the same id would be read stale. Gathered unwritten pages go too.
    pub fn rewind(&mut self, mark: &IoMark) {
        self.run_pages = 0;
        for p in self.reused.drain(mark.reused.min(self.reused.len())..) {
            self.bm.invalidate(p);
            self.reusable.insert(p);
        }
        for p in mark.next..self.next {
            self.bm.invalidate(p);
        }
        self.next = self.next.min(mark.next);
    }

    /// A page to write. Reused pages are preferred, so the file does not grow
    /// while there is free space.
    pub fn alloc(&mut self) -> PageId {
        if let Some(p) = self.reusable.pop_first() {
            self.reused.push(p);
            // A stale copy of the old contents may still be cached.
            self.bm.invalidate(p);
            p
        } else {
            self.next += 1;
            self.next - 1
        }
    }

    /// `page`, which this transaction wrote, to write again: a copy of what
    /// it held may be cached, and must not be read back.
    pub fn overwrite(&mut self, page: PageId) -> PageId {
        self.bm.invalidate(page);
        page
    }

    /// A page past the end of the committed extent.
    pub fn alloc_at_end(&mut self) -> PageId {
        self.next += 1;
        self.next - 1
    }

    /// Writes page `page`: `fill` gets the zeroed payload; the header and checksum
    /// are added here.
    pub fn write_page(
        &mut self,
        page: PageId,
        kind: PageKind,
        fill: impl FnOnce(&mut [u8]),
    ) -> StorageResult<()> {
        let ps = self.page_size;
        if self.run_pages > 0
            && (page != self.run_first + self.run_pages as u64
                || (self.run_pages + 1) * ps > self.run.len())
        {
            self.flush()?;
        }
        if self.run_pages == 0 {
            self.run_first = page;
        }
        let buf = &mut self.run[self.run_pages * ps..(self.run_pages + 1) * ps];
        buf.fill(0);
        fill(&mut buf[PAGE_HEADER..]);
        seal(buf, kind, page);
        self.run_pages += 1;
        Ok(())
    }

    /// Writes out the gathered run.
    pub fn flush(&mut self) -> StorageResult<()> {
        if self.run_pages > 0 {
            let ps = self.page_size;
            self.file
                .write_pages(self.run_first, &self.run[..self.run_pages * ps])?;
            self.bm.note_written(self.run_pages as u64);
            self.written += self.run_pages as u64;
            self.run_pages = 0;
        }
        Ok(())
    }
}

/// A point in a transaction's page allocation (see [`PageIo::mark`]).
#[derive(Clone, Copy, Debug)]
pub struct IoMark {
    reused: usize,
    next: PageId,
}
