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
/// through it (seccomp filters may allow the first and refuse the second). Not
/// under Valgrind: it keeps its scheduler lock while a worker waits in
/// `io_uring_enter`, so every other thread of the program would wait forever.
pub(crate) fn probe_uring() -> std::io::Result<()> {
    if under_valgrind(std::env::var_os("LD_PRELOAD").as_deref()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "running under Valgrind, which blocks every thread while one waits for io_uring",
        ));
    }
    UringDriver::probe()
}

/// Valgrind preloads its core library into the program it runs.
fn under_valgrind(ld_preload: Option<&std::ffi::OsStr>) -> bool {
    ld_preload.is_some_and(|p| p.to_string_lossy().contains("vgpreload_core"))
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

#[cfg(test)]
mod tests {
    #[test]
    fn valgrind_is_recognised_by_its_preloaded_core() {
        use std::ffi::OsStr;
        assert!(super::under_valgrind(Some(OsStr::new(
            "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so"
        ))));
        assert!(!super::under_valgrind(Some(OsStr::new(
            "/usr/lib/libjemalloc.so"
        ))));
        assert!(!super::under_valgrind(None));
    }
}
