//! Asynchronous I/O of the runtime: each worker's io_uring driver, the `read_at`
//! future tasks await, aligned buffers, and the synchronous fallback.

pub mod buf;
pub mod read;
pub(crate) mod uring;

use std::os::unix::io::RawFd;

use uring::UringDriver;

/// A worker's read path: its own ring, or synchronous `pread`.
pub(crate) enum IoDriver {
    Uring(Box<UringDriver>),
    Sync,
}

/// Whether io_uring works here: creating a ring and completing a no-op
/// through it (seccomp filters may allow the first and refuse the second).
pub(crate) fn probe_uring() -> std::io::Result<()> {
    UringDriver::probe()
}

/// Opens a file read-only with O_DIRECT (no OS page cache), for reads with
/// [`buf::AlignedBuf`]s at aligned offsets. A file system that refuses
/// O_DIRECT (tmpfs, some overlays) gives an `Unsupported` error saying so.
pub fn open_direct(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    format!(
                        "the file system of {} does not support O_DIRECT",
                        path.display()
                    ),
                )
            } else {
                e
            }
        })
}

/// Synchronous positional read, retried on EINTR.
pub(crate) fn pread(fd: RawFd, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let offset = libc::off_t::try_from(offset).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "read offset too large")
    })?;
    loop {
        // SAFETY: buf is valid for buf.len() writable bytes.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
