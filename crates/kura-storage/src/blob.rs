//! Byte blobs spread over a chain of pages (the catalog and per-table metadata).
//! Each page: next page (u64, 0 = last), length used (u32), bytes.

use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::{PageKind, PAGE_HEADER};
use crate::file::{DbFile, PageId};
use crate::txn_io::PageIo;

const LINK: usize = 12;

/// Writes `bytes` into newly allocated pages (`at_end`: only pages past the
/// committed extent, never free-list pages); returns the first page and all pages.
pub fn write_blob(io: &mut PageIo, bytes: &[u8], at_end: bool) -> StorageResult<(PageId, Vec<PageId>)> {
    let per_page = io.page_size() - PAGE_HEADER - LINK;
    let count = bytes.len().div_ceil(per_page).max(1);
    let pages: Vec<PageId> = (0..count).map(|_| if at_end { io.alloc_at_end() } else { io.alloc() }).collect();
    for (i, chunk_start) in (0..count).map(|i| (i, i * per_page)) {
        let chunk = &bytes[chunk_start..(chunk_start + per_page).min(bytes.len())];
        let next = pages.get(i + 1).copied().unwrap_or(0);
        io.write_page(pages[i], PageKind::Blob, |buf| {
            buf[0..8].copy_from_slice(&next.to_le_bytes());
            buf[8..12].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            buf[LINK..LINK + chunk.len()].copy_from_slice(chunk);
        })?;
    }
    Ok((pages[0], pages))
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
