//! Where the bulk builder's node pages go: normally the pages of a write transaction
//! ([`crate::txn_io::PageIo`], so an index commits atomically with the catalog that
//! names it), or any other page writer that allocates and seals pages.

use crate::error::StorageResult;
use crate::file::page::PageKind;
use crate::file::PageId;
use crate::txn_io::PageIo;

/// Page-header kind byte of B+tree nodes (nodes also carry a magic in their payload).
pub const INDEX_NODE_PAGE_KIND: u8 = PageKind::IndexNode as u8;

/// The `PageKind` node pages are sealed with.
pub const NODE_PAGE_KIND: PageKind = PageKind::IndexNode;

/// A writer of fresh pages.
pub trait PageSink {
    /// Size of a whole page (header included).
    fn page_size(&self) -> usize;
    /// A page that may be written.
    fn alloc(&mut self) -> PageId;
    /// Writes `page`: `fill` receives the zeroed payload (the bytes after the page
    /// header); the sink adds header and checksum.
    fn write(&mut self, page: PageId, fill: &mut dyn FnMut(&mut [u8])) -> StorageResult<()>;
    /// Writes out anything buffered.
    fn flush(&mut self) -> StorageResult<()>;
}

impl PageSink for PageIo {
    fn page_size(&self) -> usize {
        PageIo::page_size(self)
    }

    fn alloc(&mut self) -> PageId {
        PageIo::alloc(self)
    }

    fn write(&mut self, page: PageId, fill: &mut dyn FnMut(&mut [u8])) -> StorageResult<()> {
        self.write_page(page, NODE_PAGE_KIND, fill)
    }

    fn flush(&mut self) -> StorageResult<()> {
        PageIo::flush(self)
    }
}
