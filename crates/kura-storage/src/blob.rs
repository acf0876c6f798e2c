//! Byte blobs spread over a chain of pages (the catalog and per-table metadata).
//! Each page: next page (u64, 0 = last), length used (u32), bytes.

use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::{PageKind, PAGE_HEADER};
use crate::file::{DbFile, PageId};
use crate::txn_io::PageIo;

const LINK: usize = 12;

/// Pages a blob of `len` bytes takes.
pub fn pages_for(page_size: usize, len: usize) -> usize {
    len.div_ceil(page_size - PAGE_HEADER - LINK).max(1)
}

/// Writes `bytes` into newly allocated pages (`at_end`: only pages past the
/// committed extent, never free-list pages); returns the first page and all pages.
pub fn write_blob(
    io: &mut PageIo,
    bytes: &[u8],
    at_end: bool,
) -> StorageResult<(PageId, Vec<PageId>)> {
    let count = pages_for(io.page_size(), bytes.len());
    let pages: Vec<PageId> = (0..count)
        .map(|_| {
            if at_end {
                io.alloc_at_end()
            } else {
                io.alloc()
            }
        })
        .collect();
    let root = write_blob_into(io, bytes, &pages)?;
    Ok((root, pages))
}

/// Writes `bytes` across `pages` (at least [`pages_for`] of them; pages past the
/// data hold nothing but the link); returns the first page.
pub fn write_blob_into(io: &mut PageIo, bytes: &[u8], pages: &[PageId]) -> StorageResult<PageId> {
    let per_page = io.page_size() - PAGE_HEADER - LINK;
    debug_assert!(pages.len() >= pages_for(io.page_size(), bytes.len()));
    for (i, &page) in pages.iter().enumerate() {
        let start = (i * per_page).min(bytes.len());
        let chunk = &bytes[start..(start + per_page).min(bytes.len())];
        let next = pages.get(i + 1).copied().unwrap_or(0);
        io.write_page(page, PageKind::Blob, |buf| {
            buf[0..8].copy_from_slice(&next.to_le_bytes());
            buf[8..12].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            buf[LINK..LINK + chunk.len()].copy_from_slice(chunk);
        })?;
    }
    Ok(pages[0])
}

/// Reads a blob starting at `root`; returns its bytes and the pages it occupies.
pub fn read_blob(file: &DbFile, root: PageId) -> StorageResult<(Vec<u8>, Vec<PageId>)> {
    let ps = file.page_size();
    let mut buf = AlignedBuf::new(ps);
    let mut out = Vec::new();
    let mut pages = Vec::new();
    let mut page = root;
    let limit = file.len_pages()?;
    while page != 0 {
        if pages.len() as u64 > limit || page >= limit {
            return Err(StorageError::Corrupt {
                path: file.path().to_path_buf(),
                page,
                what: "metadata chain points outside the file or loops".into(),
            });
        }
        file.read_page(page, &mut buf)?;
        let p = &buf[PAGE_HEADER..ps];
        if crate::file::page::kind(&buf) != Some(PageKind::Blob) {
            return Err(StorageError::Corrupt {
                path: file.path().to_path_buf(),
                page,
                what: "expected a metadata page".into(),
            });
        }
        let next = u64::from_le_bytes(p[0..8].try_into().unwrap());
        let len = u32::from_le_bytes(p[8..12].try_into().unwrap()) as usize;
        if LINK + len > p.len() {
            return Err(StorageError::Corrupt {
                path: file.path().to_path_buf(),
                page,
                what: format!("metadata page claims {len} bytes"),
            });
        }
        out.extend_from_slice(&p[LINK..LINK + len]);
        pages.push(page);
        page = next;
    }
    Ok((out, pages))
}
