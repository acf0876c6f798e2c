//! Temporary-file writes in flight: a full write buffer goes to one background
//! thread, which writes it (direct I/O waits on the device) while the spilling
//! operator fills the file's other buffer. Each file has at most one write in
//! flight and two buffers; a read or a seal waits for its file's write first.

use std::fs::File;
use std::io;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::write_all_at;
use crate::runtime::io::buf::AlignedBuf;

/// A write to do: `buf` at `offset` of `file`, reported to `flight`.
struct Job {
    file: Arc<File>,
    offset: u64,
    buf: AlignedBuf,
    flight: Arc<Flight>,
}

/// One file's write in flight, its spare buffer and its first failure.
#[derive(Default)]
pub(super) struct Flight {
    state: Mutex<FlightState>,
    done: Condvar,
}

#[derive(Default)]
struct FlightState {
    in_flight: bool,
    /// The buffer of the last write, back for filling once it is written.
    spare: Option<AlignedBuf>,
    /// The first write that failed: its error kind, OS code and text (an
    /// `io::Error` is not `Clone`; every later call of the file reports it).
    failed: Option<(io::ErrorKind, Option<i32>, String)>,
}

impl FlightState {
    fn error(&self) -> io::Result<()> {
        match &self.failed {
            None => Ok(()),
            Some((_, Some(code), _)) => Err(io::Error::from_raw_os_error(*code)),
            Some((kind, None, text)) => Err(io::Error::new(*kind, text.clone())),
        }
    }
}

impl Flight {
    fn lock(&self) -> MutexGuard<'_, FlightState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until no write of the file is in flight; the first failure, if any.
    pub(super) fn wait(&self) -> io::Result<()> {
        let mut st = self.lock();
        while st.in_flight {
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.error()
    }

    /// Frees the spare buffer (the file is complete).
    pub(super) fn release_spare(&self) {
        self.lock().spare = None;
    }

    /// Sends `buf` to be written at `offset` of `file`, once the file's last
    /// write is done; returns the buffer to fill next (that write's, or a new
    /// one the first time).
    pub(super) fn submit(
        self: &Arc<Self>,
        file: &Arc<File>,
        offset: u64,
        buf: AlignedBuf,
    ) -> io::Result<AlignedBuf> {
        let capacity = buf.capacity();
        let mut st = self.lock();
        while st.in_flight {
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.error()?;
        let mut next = st.spare.take().unwrap_or_else(|| AlignedBuf::new(capacity));
        next.set_len(0);
        let job = Job {
            file: file.clone(),
            offset,
            buf,
            flight: self.clone(),
        };
        match writer() {
            Some(tx) => match tx.send(job) {
                Ok(()) => st.in_flight = true,
                // The writer thread is gone: written here.
                Err(mpsc::SendError(job)) => write_all_at(file, &job.buf, offset)?,
            },
            None => write_all_at(file, &job.buf, offset)?,
        }
        Ok(next)
    }
}

/// The process's writer thread, started at the first spilled write.
fn writer() -> Option<&'static Sender<Job>> {
    static WRITER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    WRITER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("kura-spill-writer".into())
                .spawn(move || {
                    for job in rx {
                        let result = write_all_at(&job.file, &job.buf, job.offset);
                        let mut st = job.flight.lock();
                        if let Err(e) = result {
                            st.failed
                                .get_or_insert((e.kind(), e.raw_os_error(), e.to_string()));
                        }
                        st.spare = Some(job.buf);
                        st.in_flight = false;
                        drop(st);
                        job.flight.done.notify_all();
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_in_flight_is_reported_by_every_later_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"").unwrap();
        // Read-only: the writer thread's write fails (EBADF).
        let file = Arc::new(File::open(&path).unwrap());
        let flight = Arc::new(Flight::default());
        let mut buf = AlignedBuf::new(4096);
        buf.fill(7);
        let next = flight.submit(&file, 0, buf).unwrap();
        assert_eq!(next.len(), 0);
        let err = flight.wait().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
        assert!(flight.submit(&file, 4096, next).is_err());
        assert!(flight.wait().is_err());
    }

    #[test]
    fn writes_in_flight_land_before_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = Arc::new(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap(),
        );
        let flight = Arc::new(Flight::default());
        let mut buf = AlignedBuf::new(4096);
        for round in 0..50u8 {
            buf.set_len(4096);
            buf.fill(round);
            buf = flight.submit(&file, round as u64 * 4096, buf).unwrap();
        }
        flight.wait().unwrap();
        let all = std::fs::read(&path).unwrap();
        assert_eq!(all.len(), 50 * 4096);
        assert!(all
            .chunks(4096)
            .enumerate()
            .all(|(i, c)| c.iter().all(|&b| b == i as u8)));
    }
}
