//! The database file: one file holding a header (two alternating slots, so a torn
//! header write can never lose the committed state — see `header`) and fixed-size
//! checksummed pages. Reads use O_DIRECT by default so kura's buffer pool is the
//! only cache.

pub mod aligned;
pub mod header;
pub mod page;
mod page_cache;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::error::{StorageError, StorageResult};
use aligned::AlignedBuf;
pub use header::Header;
use header::{Refusal, SLOT_SIZE};

/// Page number within the database file (page 0 holds the header slots).
pub type PageId = u64;

/// On-disk format version written to the header (2: per-sector header checksums;
/// 3: text values longer than a page, in overflow pages; 4: covering indexes,
/// whose entries store included columns between key and row id, named in a new
/// last field of the catalog; 5: bit-packed integer column pages, flagged per page;
/// 6: dictionary-coded text column pages, flagged per page; 7: defaults and
/// constraints of tables, in a new last field of the catalog; 8: sequences, in
/// new last fields of the catalog, and their two value pages; 9: which column
/// pages hold sorted values, in a new last part of table metadata).
pub const FORMAT_VERSION: u32 = 9;
/// The oldest format version this build reads. Formats 3 to 9 only add to
/// format 2 (a page kind, page flags, an optional tail on table metadata, a
/// trailing catalog field), so an older file opens as it is; its next commit
/// writes the current header, after which an older build refuses it (a build
/// that did not know included columns would rebuild such an index without them,
/// one that did not know packed pages would read their offsets as values, one
/// that did not know dictionary pages would read codes as text, one that did not
/// know constraints would stop enforcing them, one that did not know sequences
/// would lose them, one that did not know sorted pages would drop their marks
/// when it rewrote a table's metadata and lose its ordered aggregations).
pub const OLDEST_FORMAT_VERSION: u32 = 2;
/// Default page size (DESIGN.md: 16 KiB).
pub const DEFAULT_PAGE_SIZE: usize = 16 * 1024;

/// The committed header an open found, and what the user should be told.
#[derive(Debug, Clone)]
pub struct Opened {
    pub header: Header,
    /// Warnings about the header (a damaged spare slot, an interrupted commit,
    /// a recovery that gave up a commit); not logged, that is the caller's.
    pub warnings: Vec<String>,
    /// After a header recovery: the header to write (with
    /// [`DbFile::write_header`]) once the opened state has loaded. It is not
    /// written by the open itself so that a recovery whose older state turns
    /// out unreadable leaves the file as it found it.
    pub repair: Option<Header>,
}

/// An open database file.
pub struct DbFile {
    path: PathBuf,
    file: File,
    direct: bool,
    page_size: usize,
    /// A buffered descriptor for the page-cache tier, opened on first use.
    cached: OnceLock<page_cache::CachedFile>,
    /// Whether the pool's reads go through the page cache (an inclusive
    /// page-cache tier: a page read from disk stays in both levels).
    through_cache: AtomicBool,
}

impl DbFile {
    /// Opens `path`, creating a new database with `page_size` if no file is
    /// there; warnings about the header are logged. See [`DbFile::open_with`].
    pub fn open(path: &Path, page_size: usize, direct: bool) -> StorageResult<(DbFile, Header)> {
        let (db, opened) = DbFile::open_with(path, page_size, direct, false)?;
        for w in &opened.warnings {
            tracing::warn!("{}: {w}", path.display());
        }
        Ok((db, opened.header))
    }

    /// Opens `path`, creating a new database with `page_size` only if nothing
    /// exists at that path: an existing file that is not a kura database (empty,
    /// too short, anything else) is refused, never overwritten. `recover_header`
    /// lets a damaged newest header slot fall back to the older commit; the
    /// caller then writes [`Opened::repair`].
    pub fn open_with(
        path: &Path,
        page_size: usize,
        direct: bool,
        recover_header: bool,
    ) -> StorageResult<(DbFile, Opened)> {
        if !page_size.is_power_of_two() || !(8192..=1 << 20).contains(&page_size) {
            return Err(StorageError::Invalid(format!(
                "page size {page_size} is not a power of two between 8 KiB and 1 MiB"
            )));
        }
        if let Some(created) = DbFile::create(path, page_size, direct)? {
            return Ok(created);
        }
        let (file, direct) = open_file(path, direct, false)?;
        lock_exclusive(&file, path)?;
        let not_kura = |what: String| StorageError::NotADatabase {
            path: path.to_path_buf(),
            what,
        };
        let mut slots = AlignedBuf::new(2 * SLOT_SIZE);
        let n = read_full_at(&file, &mut slots, 0)
            .map_err(|e| StorageError::io(path, "read header", e))?;
        if n == 0 {
            return Err(not_kura(
                "the file is empty (0 bytes); a new database is created only where no file \
                 exists (an empty file holds no data: remove it to create a database there)"
                    .into(),
            ));
        }
        if n < 2 * SLOT_SIZE {
            return Err(not_kura(format!(
                "the file is only {n} bytes long, shorter than a kura header ({} bytes)",
                2 * SLOT_SIZE
            )));
        }
        let decoded = [
            header::decode(0, &slots[..SLOT_SIZE]),
            header::decode(1, &slots[SLOT_SIZE..]),
        ];
        let chosen = header::choose(decoded, recover_header).map_err(|r| match r {
            Refusal::NotADatabase(what) => not_kura(what),
            Refusal::Version(found) => StorageError::FormatVersion {
                path: path.to_path_buf(),
                found,
                oldest: OLDEST_FORMAT_VERSION,
                supported: FORMAT_VERSION,
            },
            Refusal::Damaged(what) => StorageError::HeaderDamaged {
                path: path.to_path_buf(),
                what,
            },
        })?;
        let header = chosen.header;
        let ps = header.page_size as usize;
        if !ps.is_power_of_two() || !(8192..=1 << 20).contains(&ps) {
            return Err(not_kura(format!("invalid page size {ps} in the header")));
        }
        let db = DbFile {
            path: path.to_path_buf(),
            file,
            direct,
            cached: OnceLock::new(),
            through_cache: AtomicBool::new(false),
            page_size: ps,
        };
        Ok((
            db,
            Opened {
                header,
                warnings: chosen.warnings,
                repair: chosen.repair,
            },
        ))
    }

    /// Creates a new database at `path` if nothing is there (`None` if something
    /// is). Both slots describe the empty database, as commits 0 and 1, so every
    /// slot of a kura file always holds a header.
    ///
    /// The file is written and synced under a temporary name beside `path` and
    /// only then linked to `path`: a crash during creation must not leave an
    /// empty or half-written file there, which every later open would refuse
    /// (it cannot tell that from a damaged or foreign file). Linking, unlike
    /// renaming, fails if `path` has appeared meanwhile, so a database another
    /// process just created is never replaced.
    fn create(
        path: &Path,
        page_size: usize,
        direct: bool,
    ) -> StorageResult<Option<(DbFile, Opened)>> {
        if std::fs::symlink_metadata(path).is_ok() {
            return Ok(None);
        }
        let tmp = temp_path(path);
        let (file, tmp_direct) = open_file(&tmp, direct, true).map_err(|e| match e {
            // Name the database, not the temporary file, in the error.
            StorageError::Io { op, source, .. } => StorageError::io(path, op, source),
            e => e,
        })?;
        let linked = DbFile::initialize(&file, path, page_size).map(|()| {
            match std::fs::hard_link(&tmp, path) {
                Ok(()) => Some(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                // A file system without hard links: create the file in place.
                Err(_) => Some(false),
            }
        });
        let _ = std::fs::remove_file(&tmp);
        let (file, direct) = match linked? {
            Some(true) => (file, tmp_direct),
            // Another process created `path` first: open that one instead.
            None => return Ok(None),
            Some(false) => {
                drop(file);
                match DbFile::create_in_place(path, page_size, direct)? {
                    Some(created) => created,
                    None => return Ok(None),
                }
            }
        };
        sync_parent(path);
        Ok(Some((
            DbFile {
                path: path.to_path_buf(),
                file,
                direct,
                cached: OnceLock::new(),
                through_cache: AtomicBool::new(false),
                page_size,
            },
            Opened {
                header: empty_header(page_size, 1),
                warnings: Vec::new(),
                repair: None,
            },
        )))
    }

    /// Creates `path` directly (`None` if it exists by now), for file systems
    /// without hard links; a crash before its first sync leaves a file that
    /// later opens refuse.
    fn create_in_place(
        path: &Path,
        page_size: usize,
        direct: bool,
    ) -> StorageResult<Option<(File, bool)>> {
        let (file, direct) = match open_file(path, direct, true) {
            Ok(f) => f,
            Err(StorageError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        DbFile::initialize(&file, path, page_size)?;
        Ok(Some((file, direct)))
    }

    /// Locks a new, empty `file` (to be named `path`) and writes and syncs page 0
    /// of an empty database: commit 0 in slot 0, commit 1 in slot 1. A file
    /// built under a temporary name is thus locked before it can be found at
    /// `path`, so no other open gets in between.
    fn initialize(file: &File, path: &Path, page_size: usize) -> StorageResult<()> {
        lock_exclusive(file, path)?;
        let mut first = AlignedBuf::new(page_size);
        first[..SLOT_SIZE].copy_from_slice(&empty_header(page_size, 0).encode());
        first[SLOT_SIZE..2 * SLOT_SIZE].copy_from_slice(&empty_header(page_size, 1).encode());
        file.write_all_at(&first, 0)
            .map_err(|e| StorageError::io(path, "write header", e))?;
        file.sync_data()
            .map_err(|e| StorageError::io(path, "fsync", e))
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

    /// The raw descriptor for page reads submitted elsewhere (io_uring): the
    /// buffered one while an inclusive page-cache tier is on.
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.reader().as_raw_fd()
    }

    /// The descriptor page reads use.
    fn reader(&self) -> &File {
        if self.through_cache.load(Ordering::Acquire) {
            if let Some(c) = self.cached.get() {
                return c.file();
            }
        }
        &self.file
    }

    /// Opens the buffered descriptor of the page-cache tier. Refused where the
    /// pool itself reads through the page cache (no O_DIRECT): the tier would
    /// hold the same pages as the kernel does anyway.
    pub fn open_page_cache(&self) -> StorageResult<()> {
        if !self.direct {
            return Err(StorageError::Invalid(format!(
                "{}: a page-cache tier needs O_DIRECT reads for the pool, and this file is read through the page cache already",
                self.path.display()
            )));
        }
        if self.cached.get().is_none() {
            let c = page_cache::CachedFile::open(&self.path)?;
            let _ = self.cached.set(c);
        }
        Ok(())
    }

    /// Sends the pool's page reads through the page cache (`true`, after
    /// [`Self::open_page_cache`]) or straight to the disk again.
    pub fn set_reads_through_page_cache(&self, on: bool) {
        self.through_cache
            .store(on && self.cached.get().is_some(), Ordering::Release);
    }

    /// Reads `page` from the page cache only if the kernel holds it there:
    /// `Ok(false)` when it would have to come from the disk.
    pub fn read_page_if_cached(&self, page: PageId, buf: &mut [u8]) -> StorageResult<bool> {
        let Some(c) = self.cached.get() else {
            return Ok(false);
        };
        c.read_if_cached(page * self.page_size as u64, &mut buf[..self.page_size])
            .map_err(|e| StorageError::io(&self.path, "read page from the page cache", e))
    }

    /// Demotes a clean page image into the page cache (a buffered write of the
    /// bytes the file already holds).
    pub fn write_page_to_cache(&self, page: PageId, bytes: &[u8]) -> StorageResult<()> {
        let Some(c) = self.cached.get() else {
            return Ok(());
        };
        c.write(page * self.page_size as u64, &bytes[..self.page_size])
            .map_err(|e| StorageError::io(&self.path, "demote page into the page cache", e))
    }

    /// Asks the kernel to drop `pages` pages from `first` from its cache (0:
    /// to the end of the file).
    pub fn drop_from_page_cache(&self, first: PageId, pages: u64) {
        if let Some(c) = self.cached.get() {
            c.drop_pages(first, pages, self.page_size);
        }
    }

    /// Reads page `page` into `buf` (page-sized, aligned) without verifying it.
    pub fn read_page_raw(&self, page: PageId, buf: &mut [u8]) -> StorageResult<()> {
        let off = page * self.page_size as u64;
        let n = read_full_at(self.reader(), &mut buf[..self.page_size], off)
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

    /// Reads the consecutive pages `first, first+1, ...` into `buf` (a multiple
    /// of the page size, aligned) with one positioned read, without verifying
    /// them: sequential read-ahead's large request.
    pub fn read_pages_raw(&self, first: PageId, buf: &mut [u8]) -> StorageResult<()> {
        let off = first * self.page_size as u64;
        let n = read_full_at(self.reader(), buf, off)
            .map_err(|e| StorageError::io(&self.path, "read pages", e))?;
        if n < buf.len() {
            return Err(StorageError::Corrupt {
                path: self.path.clone(),
                page: first + (n / self.page_size) as u64,
                what: "page lies beyond the end of the file".into(),
            });
        }
        Ok(())
    }

    /// Reads the consecutive pages `first, first+1, ...` straight into `bufs`
    /// (one aligned page buffer each, e.g. buffer frames) with one vectored
    /// positioned read, without verifying them. Unlike [`Self::read_pages_raw`]
    /// no staging buffer is zeroed and copied: the memory profiler found that
    /// staging copy to cost about half of a scan's cache misses.
    pub fn read_pages_into(&self, first: PageId, bufs: &mut [&mut [u8]]) -> StorageResult<()> {
        let off = first * self.page_size as u64;
        let n = read_vectored_full_at(self.reader(), bufs, off)
            .map_err(|e| StorageError::io(&self.path, "read pages", e))?;
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        if n < want {
            return Err(StorageError::Corrupt {
                path: self.path.clone(),
                page: first + (n / self.page_size) as u64,
                what: "page lies beyond the end of the file".into(),
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
        let slot = header.slot() as u64;
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

/// How long opening waits for the lock of a process that has just ended.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Takes an exclusive advisory lock on the file for as long as it is open: two
/// handles would each believe they own the free pages and the header, and one
/// would silently undo the other's commits.
///
/// A process killed with SIGKILL keeps its lock for a moment after it has been
/// reaped: the kernel closes the files its io_uring rings hold asynchronously.
/// So a refused lock is tried again for up to [`LOCK_GRACE`] before the
/// database is reported in use (it was refused 2-3 times in 30 reopenings
/// right after a kill).
fn lock_exclusive(file: &File, path: &Path) -> StorageResult<()> {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + LOCK_GRACE;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(StorageError::io(path, "lock", err));
        }
        if std::time::Instant::now() >= deadline {
            return Err(StorageError::InUse {
                path: path.to_path_buf(),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Opens the file read-write; `create_new` creates it and fails if it exists.
fn open_file(path: &Path, direct: bool, create_new: bool) -> StorageResult<(File, bool)> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create_new(create_new);
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
                // The refused O_DIRECT open may already have created the file.
                if create_new {
                    opts.create_new(false).create(true);
                }
            }
            Err(e) => return Err(StorageError::io(path, "open", e)),
        }
    }
    opts.open(path)
        .map(|f| (f, false))
        .map_err(|e| StorageError::io(path, "open", e))
}

/// The header of an empty database as commit `generation`.
fn empty_header(page_size: usize, generation: u64) -> Header {
    Header {
        version: FORMAT_VERSION,
        page_size: page_size as u32,
        generation,
        catalog_root: 0,
        page_count: 1,
    }
}

/// A name beside `path` for building a new database file, unique to this
/// process and call (hidden, and naming the database it is for, in case a
/// crash leaves it behind).
fn temp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.creating-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Makes a new directory entry for `path` durable; a file system that cannot
/// sync a directory still has the file, so this is best effort.
fn sync_parent(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Reads as much of `buf` as the file holds at `off` (short only at end of file).
/// `preadv` until every buffer is full or the file ends; returns the bytes read.
fn read_vectored_full_at(file: &File, bufs: &mut [&mut [u8]], off: u64) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut done = 0;
    while done < total {
        // The buffers not yet full, the first one from where the last read stopped.
        let mut skip = done;
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(bufs.len());
        for b in bufs.iter_mut() {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            iov.push(libc::iovec {
                // SAFETY: `skip < b.len()`, so the pointer stays inside `b`.
                iov_base: unsafe { b.as_mut_ptr().add(skip) }.cast(),
                iov_len: b.len() - skip,
            });
            skip = 0;
        }
        iov.truncate(1024); // IOV_MAX
                            // SAFETY: every iovec points into a live, exclusively borrowed buffer.
        let n = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                (off + done as u64) as libc::off_t,
            )
        };
        match n {
            0 => break,
            n if n > 0 => done += n as usize,
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(done)
}

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
