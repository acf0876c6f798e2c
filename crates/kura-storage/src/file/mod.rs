//! The database file: one file holding a header (two alternating slots, so a torn
//! header write can never lose the committed state) and fixed-size checksummed
//! pages. Reads use O_DIRECT by default so kura's buffer pool is the only cache.

pub mod aligned;
pub mod page;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{StorageError, StorageResult};
use aligned::AlignedBuf;

/// Page number within the database file (page 0 holds the header slots).
pub type PageId = u64;

/// On-disk format version written to the header.
pub const FORMAT_VERSION: u32 = 1;
/// Default page size (DESIGN.md: 16 KiB).
pub const DEFAULT_PAGE_SIZE: usize = 16 * 1024;
const MAGIC: &[u8; 8] = b"KURADB\0\x01";
/// Each header slot is one 4 KiB block; slot 0 at offset 0, slot 1 at 4096.
const SLOT_SIZE: usize = 4096;

/// The committed root of the database, as recorded in a header slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub page_size: u32,
    /// Incremented by every commit; the slot with the higher valid generation wins.
    pub generation: u64,
    /// First page of the catalog blob, 0 for an empty catalog.
    pub catalog_root: PageId,
    /// Pages in use by the committed state's file extent (the file may be longer
    /// after an interrupted load; those pages are unreferenced and reused).
    pub page_count: u64,
}

impl Header {
    fn encode(&self) -> AlignedBuf {
        let mut b = AlignedBuf::new(SLOT_SIZE);
        b[4..12].copy_from_slice(MAGIC);
        b[12..16].copy_from_slice(&self.version.to_le_bytes());
        b[16..20].copy_from_slice(&self.page_size.to_le_bytes());
        b[20..28].copy_from_slice(&self.generation.to_le_bytes());
        b[28..36].copy_from_slice(&self.catalog_root.to_le_bytes());
        b[36..44].copy_from_slice(&self.page_count.to_le_bytes());
        let crc = crc32fast::hash(&b[4..SLOT_SIZE]);
        b[0..4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Header> {
        let crc = u32::from_le_bytes(b[0..4].try_into().ok()?);
        if crc != crc32fast::hash(&b[4..SLOT_SIZE]) || &b[4..12] != MAGIC {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        Some(Header {
            version: u32_at(12),
            page_size: u32_at(16),
            generation: u64_at(20),
            catalog_root: u64_at(28),
            page_count: u64_at(36),
        })
    }
}

/// An open database file.
pub struct DbFile {
    path: PathBuf,
    file: File,
    direct: bool,
    page_size: usize,
}

impl DbFile {
    /// Opens `path`, creating a new database with `page_size` if it does not exist.
    /// Returns the file and the committed header.
    pub fn open(path: &Path, page_size: usize, direct: bool) -> StorageResult<(DbFile, Header)> {
        if !page_size.is_power_of_two() || !(8192..=1 << 20).contains(&page_size) {
            return Err(StorageError::Invalid(format!(
                "page size {page_size} is not a power of two between 8 KiB and 1 MiB"
            )));
        }
        let exists = path.exists()
            && std::fs::metadata(path)
                .map(|m| m.len() > 0)
                .unwrap_or(false);
        let (file, direct) = open_file(path, direct)?;
        lock_exclusive(&file, path)?;
        if !exists {
            let header = Header {
                version: FORMAT_VERSION,
                page_size: page_size as u32,
                generation: 1,
                catalog_root: 0,
                page_count: 1,
            };
            let db = DbFile {
                path: path.to_path_buf(),
                file,
                direct,
                page_size,
            };
            // A fresh file: page 0 with both header slots, the same state in each.
            let mut first = AlignedBuf::new(page_size);
            first[..SLOT_SIZE].copy_from_slice(&header.encode());
            db.file
                .write_all_at(&first, 0)
                .map_err(|e| StorageError::io(path, "write header", e))?;
            db.sync()?;
            return Ok((db, header));
        }
        let mut slots = AlignedBuf::new(2 * SLOT_SIZE);
        let n = read_full_at(&file, &mut slots, 0)
            .map_err(|e| StorageError::io(path, "read header", e))?;
        if n < SLOT_SIZE {
            return Err(StorageError::NotADatabase {
                path: path.to_path_buf(),
                what: format!("file is only {n} bytes long"),
            });
        }
        let a = Header::decode(&slots[..SLOT_SIZE]);
        let b = if n >= 2 * SLOT_SIZE {
            Header::decode(&slots[SLOT_SIZE..])
        } else {
            None
        };
        let header = match (a, b) {
            (Some(a), Some(b)) => {
                if a.generation >= b.generation {
                    a
                } else {
                    b
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => {
                let what =
                    if &slots[4..12] == MAGIC || &slots[SLOT_SIZE + 4..SLOT_SIZE + 12] == MAGIC {
                        "both header slots fail their checksum".to_string()
                    } else {
                        "no kura header".to_string()
                    };
                return Err(StorageError::NotADatabase {
                    path: path.to_path_buf(),
                    what,
                });
            }
        };
        if header.version != FORMAT_VERSION {
            return Err(StorageError::NotADatabase {
                path: path.to_path_buf(),
                what: format!(
                    "format version {} (this kura reads {FORMAT_VERSION})",
                    header.version
                ),
            });
        }
        let ps = header.page_size as usize;
        if !ps.is_power_of_two() || !(8192..=1 << 20).contains(&ps) {
            return Err(StorageError::NotADatabase {
                path: path.to_path_buf(),
                what: format!("invalid page size {ps} in header"),
            });
        }
        Ok((
            DbFile {
                path: path.to_path_buf(),
                file,
                direct,
                page_size: ps,
            },
            header,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Whether reads bypass the OS page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// The raw descriptor, for asynchronous reads submitted elsewhere (io_uring).
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    /// Reads page `page` into `buf` (page-sized, aligned) without verifying it.
    pub fn read_page_raw(&self, page: PageId, buf: &mut [u8]) -> StorageResult<()> {
        let off = page * self.page_size as u64;
        let n = read_full_at(&self.file, &mut buf[..self.page_size], off)
            .map_err(|e| StorageError::io(&self.path, "read page", e))?;
        if n < self.page_size {
            return Err(StorageError::Corrupt {
                path: self.path.clone(),
                page,
                what: format!(
                    "page lies beyond the end of the file (read {n} of {} bytes)",
                    self.page_size
                ),
            });
        }
        Ok(())
    }

    /// Verifies a page just read: checksum, then that it is the page asked for.
    pub fn verify_page(&self, page: PageId, buf: &[u8]) -> StorageResult<()> {
        if let Err((expected, found)) = page::verify(&buf[..self.page_size]) {
            return Err(StorageError::Checksum {
                path: self.path.clone(),
                page,
                expected,
                found,
            });
        }
        let recorded = page::page_no(buf);
        if recorded != page {
            return Err(StorageError::Corrupt {
                path: self.path.clone(),
                page,
                what: format!("page header says it is page {recorded}"),
            });
        }
        Ok(())
    }

    /// Reads and verifies one page.
    pub fn read_page(&self, page: PageId, buf: &mut [u8]) -> StorageResult<()> {
        self.read_page_raw(page, buf)?;
        self.verify_page(page, buf)
    }

    /// Writes sealed pages `first, first+1, ...` from `bufs` (a multiple of the page size).
    pub fn write_pages(&self, first: PageId, bufs: &[u8]) -> StorageResult<()> {
        debug_assert_eq!(bufs.len() % self.page_size, 0);
        self.file
            .write_all_at(bufs, first * self.page_size as u64)
            .map_err(|e| StorageError::io(&self.path, "write pages", e))
    }

    /// Makes every write so far durable.
    pub fn sync(&self) -> StorageResult<()> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io(&self.path, "fsync", e))
    }

    /// Writes `header` into the slot its generation selects (alternating), then syncs.
    /// The other slot still holds the previous commit, so a torn write loses nothing.
    pub fn write_header(&self, header: &Header) -> StorageResult<()> {
        let slot = header.generation % 2;
        self.file
            .write_all_at(&header.encode(), slot * SLOT_SIZE as u64)
            .map_err(|e| StorageError::io(&self.path, "write header", e))?;
        self.sync()
    }

    /// Current file length in pages (may exceed the committed page count).
    pub fn len_pages(&self) -> StorageResult<u64> {
        let len = self
            .file
            .metadata()
            .map_err(|e| StorageError::io(&self.path, "stat", e))?
            .len();
        Ok(len.div_ceil(self.page_size as u64))
    }
}

/// Takes an exclusive advisory lock on the file for as long as it is open: two
/// handles would each believe they own the free pages and the header, and one
/// would silently undo the other's commits.
fn lock_exclusive(file: &File, path: &Path) -> StorageResult<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(StorageError::InUse {
            path: path.to_path_buf(),
        });
    }
    Err(StorageError::io(path, "lock", err))
}

fn open_file(path: &Path, direct: bool) -> StorageResult<(File, bool)> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    if direct {
        let mut d = opts.clone();
        d.custom_flags(libc::O_DIRECT);
        match d.open(path) {
            Ok(f) => return Ok((f, true)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                tracing::warn!(
                    "{}: the file system does not support O_DIRECT; using buffered I/O",
                    path.display()
                );
            }
            Err(e) => return Err(StorageError::io(path, "open", e)),
        }
    }
    opts.open(path)
        .map(|f| (f, false))
        .map_err(|e| StorageError::io(path, "open", e))
}

/// Reads as much of `buf` as the file holds at `off` (short only at end of file).
fn read_full_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
