//! An exclusive `flock` on the resctrl root, so two kura processes never interleave
//! their group and schemata changes. Released when dropped (the file is closed).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{io, RdtError};

pub struct RootLock {
    _file: File,
}

impl RootLock {
    /// Takes the lock, retrying for up to `timeout` while another holder has it.
    pub fn acquire(root: &Path, timeout: Duration) -> Result<Self, RdtError> {
        let file = File::open(root).map_err(|e| io(root, e))?;
        let started = Instant::now();
        loop {
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Self { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io(root, err));
            }
            if started.elapsed() >= timeout {
                return Err(RdtError::Busy(format!(
                    "{}: another process holds the resctrl lock (waited {:.1} s)",
                    root.display(),
                    timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
