//! The database file seen through the OS page cache: a second, buffered
//! descriptor for the page-cache tier below the buffer pool (paper 004's lower
//! level, kept by the kernel). The pool's own reads stay O_DIRECT unless an
//! inclusive tier asks for them to pass through the cache.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{StorageError, StorageResult};

use super::PageId;

/// A buffered descriptor of the database file, opened on demand.
pub(super) struct CachedFile {
    file: File,
}

impl CachedFile {
    pub fn open(path: &Path) -> StorageResult<CachedFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| StorageError::io(path, "open through the page cache", e))?;
        // kura asks for exactly the pages it tracks: kernel read-ahead would
        // fill the cache with pages the tier does not know it holds.
        // SAFETY: fadvise on a valid descriptor has no memory effects.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
        Ok(CachedFile { file })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    /// Reads a page only if the kernel holds it: `Ok(false)` when reading it
    /// would have to wait for the disk (preadv2 with RWF_NOWAIT), so a page
    /// the kernel dropped on its own is never taken for a tier hit.
    pub fn read_if_cached(&self, off: u64, buf: &mut [u8]) -> std::io::Result<bool> {
        let mut done = 0;
        while done < buf.len() {
            let iov = libc::iovec {
                // SAFETY: `done < buf.len()`: the pointer stays inside `buf`.
                iov_base: unsafe { buf.as_mut_ptr().add(done) }.cast(),
                iov_len: buf.len() - done,
            };
            // SAFETY: one iovec into a live, exclusively borrowed buffer.
            let n = unsafe {
                libc::preadv2(
                    self.file.as_raw_fd(),
                    &iov,
                    1,
                    (off + done as u64) as libc::off_t,
                    libc::RWF_NOWAIT,
                )
            };
            match n {
                0 => return Ok(false),
                n if n > 0 => done += n as usize,
                _ => {
                    let e = std::io::Error::last_os_error();
                    match e.raw_os_error() {
                        Some(libc::EINTR) => {}
                        // Not cached (or the kernel cannot tell without waiting).
                        Some(libc::EAGAIN) | Some(libc::EOPNOTSUPP) => return Ok(false),
                        _ => return Err(e),
                    }
                }
            }
        }
        Ok(true)
    }

    /// Puts a clean page image into the cache through a buffered write (a
    /// demotion: the kernel later writes the same bytes back to the file).
    pub fn write(&self, off: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all_at(bytes, off)?;
        // Start the write-back now: a dirty page cannot be dropped, and the
        // tier drops pages (its victims, its hits in exclusive mode) often.
        // SAFETY: advice on a valid descriptor; no memory is passed.
        unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                off as libc::off64_t,
                bytes.len() as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        Ok(())
    }

    /// Asks the kernel to drop `pages` pages from `first` (0: to the end).
    pub fn drop_pages(&self, first: PageId, pages: u64, page_size: usize) {
        let ps = page_size as u64;
        // SAFETY: advice only; errors leave the cache as it was.
        unsafe {
            libc::posix_fadvise(
                self.file.as_raw_fd(),
                (first * ps) as libc::off_t,
                (pages * ps) as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            )
        };
    }
}
