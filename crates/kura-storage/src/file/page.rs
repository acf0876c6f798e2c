//! The layout every page shares: a 16-byte header (CRC-32 of the rest, page kind,
//! the page's own number) followed by the payload. The checksum covers the kind,
//! the number and the payload, so a page written to the wrong place is caught too.

/// Bytes of the per-page header.
pub const PAGE_HEADER: usize = 16;

/// What a page holds (byte 4 of the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    Blob = 1,
    Column = 2,
    IndexNode = 3,
    /// The continuation of a text value too long for a column page (format 3).
    Overflow = 4,
    /// The values of the database's sequences, outside the shadow-paged
    /// state (format 8; see `sequence`).
    Sequences = 5,
}

impl PageKind {
    pub fn from_u8(v: u8) -> Option<PageKind> {
        match v {
            1 => Some(PageKind::Blob),
            2 => Some(PageKind::Column),
            3 => Some(PageKind::IndexNode),
            4 => Some(PageKind::Overflow),
            5 => Some(PageKind::Sequences),
            _ => None,
        }
    }
}

/// Fills in the header of `page` (whole page buffer) and its checksum.
pub fn seal(page: &mut [u8], kind: PageKind, page_no: u64) {
    page[4] = kind as u8;
    page[5..8].fill(0);
    page[8..16].copy_from_slice(&page_no.to_le_bytes());
    let crc = crc32fast::hash(&page[4..]);
    page[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Result of verifying a page: `Err((expected, found))` on checksum mismatch.
pub fn verify(page: &[u8]) -> Result<(), (u32, u32)> {
    let stored = u32::from_le_bytes(page[0..4].try_into().unwrap());
    let computed = crc32fast::hash(&page[4..]);
    if stored == computed {
        Ok(())
    } else {
        Err((stored, computed))
    }
}

/// Page number recorded in a (verified) page header.
pub fn page_no(page: &[u8]) -> u64 {
    u64::from_le_bytes(page[8..16].try_into().unwrap())
}

pub fn kind(page: &[u8]) -> Option<PageKind> {
    PageKind::from_u8(page[4])
}
