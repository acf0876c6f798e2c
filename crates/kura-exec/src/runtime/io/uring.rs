//! One worker's io_uring: reads pushed by tasks are batched into the submission
//! queue and submitted once per scheduling round; completions are reaped between
//! task polls and wake the waiting tasks. An armed read on the worker's eventfd
//! lets other threads wake a worker sleeping in the ring.

use std::any::Any;
use std::collections::VecDeque;
use std::io;
use std::os::unix::io::RawFd;
use std::sync::{Arc, Mutex};
use std::task::Waker;

use io_uring::{opcode, squeue, types, IoUring};

/// user_data of the eventfd read that wakes a sleeping worker.
const WAKE_TOKEN: u64 = u64::MAX;

/// The shared state of one read in flight: the result the kernel reported,
/// the task to wake, and the buffer (kept here so that it outlives the
/// kernel's use of it even if the waiting task is dropped).
pub(crate) struct IoOp {
    pub(crate) inner: Mutex<OpInner>,
}

pub(crate) struct OpInner {
    pub(crate) result: Option<i32>,
    pub(crate) waker: Option<Waker>,
    /// What owns the memory the kernel writes (a [`ReadTarget`](super::read::ReadTarget)).
    pub(crate) buf: Option<Box<dyn Any + Send>>,
}

impl IoOp {
    pub(crate) fn new(buf: Box<dyn Any + Send>, waker: Waker) -> Arc<IoOp> {
        Arc::new(IoOp {
            inner: Mutex::new(OpInner {
                result: None,
                waker: Some(waker),
                buf: Some(buf),
            }),
        })
    }

    fn complete(&self, result: i32, wakers: &mut Vec<Waker>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.result = Some(result);
        if let Some(w) = inner.waker.take() {
            wakers.push(w);
        }
    }
}

pub(crate) struct UringDriver {
    ring: IoUring,
    /// Reads in flight, indexed by their user_data.
    ops: Vec<Option<Arc<IoOp>>>,
    free_slots: Vec<usize>,
    in_flight: usize,
    /// Entries that did not fit into the submission queue yet.
    backlog: VecDeque<squeue::Entry>,
    wake_fd: RawFd,
    wake_buf: Box<u64>,
    wake_armed: bool,
}

impl UringDriver {
    pub(crate) fn probe() -> io::Result<()> {
        let mut ring = IoUring::new(2)?;
        let nop = opcode::Nop::new().build().user_data(7);
        // SAFETY: a no-op references no memory.
        unsafe { ring.submission().push(&nop) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        ring.submit_and_wait(1)?;
        let cqe = ring.completion().next();
        match cqe {
            Some(cqe) if cqe.user_data() == 7 && cqe.result() >= 0 => Ok(()),
            Some(cqe) => Err(io::Error::from_raw_os_error(-cqe.result())),
            None => Err(io::Error::other("io_uring returned no completion")),
        }
    }

    pub(crate) fn new(entries: u32, wake_fd: RawFd) -> io::Result<UringDriver> {
        let ring = IoUring::builder()
            .setup_cqsize(entries.saturating_mul(4).max(8))
            .build(entries.max(2))?;
        Ok(UringDriver {
            ring,
            ops: Vec::new(),
            free_slots: Vec::new(),
            in_flight: 0,
            backlog: VecDeque::new(),
            wake_fd,
            wake_buf: Box::new(0),
            wake_armed: false,
        })
    }

    /// Queues a read of `len` bytes at `ptr`; the memory is owned by `op`'s buffer.
    pub(crate) fn push_read(
        &mut self,
        fd: RawFd,
        ptr: *mut u8,
        len: u32,
        offset: u64,
        op: Arc<IoOp>,
    ) {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.ops[s] = Some(op);
                s
            }
            None => {
                self.ops.push(Some(op));
                self.ops.len() - 1
            }
        };
        let entry = opcode::Read::new(types::Fd(fd), ptr, len)
            .offset(offset)
            .build()
            .user_data(slot as u64);
        self.in_flight += 1;
        self.push(entry);
    }

    fn push(&mut self, entry: squeue::Entry) {
        if self.backlog.is_empty() {
            // SAFETY: the entry's buffer is owned by an IoOp kept in `ops`
            // until its completion is reaped.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
            // SAFETY: as above.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
        }
        self.backlog.push_back(entry);
    }

    fn move_backlog(&mut self) {
        while let Some(entry) = self.backlog.front() {
            // SAFETY: as in `push`.
            if unsafe { self.ring.submission().push(entry) }.is_err() {
                break;
            }
            self.backlog.pop_front();
        }
    }

    /// Hands queued entries to the kernel (one system call, only if any).
    pub(crate) fn submit(&mut self) {
        self.move_backlog();
        if !self.ring.submission().is_empty() {
            // EBUSY/EAGAIN: the kernel is saturated; entries stay queued for
            // the next round, after completions have been reaped.
            let _ = self.ring.submit();
        }
    }

    /// Collects completions (no system call) and returns the wakers to call.
    pub(crate) fn reap(&mut self, wakers: &mut Vec<Waker>) -> usize {
        let mut completed = 0;
        for cqe in self.ring.completion() {
            let data = cqe.user_data();
            if data == WAKE_TOKEN {
                self.wake_armed = false;
                continue;
            }
            let slot = data as usize;
            if let Some(op) = self.ops.get_mut(slot).and_then(Option::take) {
                op.complete(cqe.result(), wakers);
                self.free_slots.push(slot);
                self.in_flight -= 1;
                completed += 1;
            }
        }
        completed
    }

    /// Sleeps until a completion arrives: a read, or a wake through the eventfd.
    pub(crate) fn wait(&mut self) {
        if !self.wake_armed {
            let ptr: *mut u64 = &mut *self.wake_buf;
            let entry = opcode::Read::new(types::Fd(self.wake_fd), ptr.cast(), 8)
                .build()
                .user_data(WAKE_TOKEN);
            self.wake_armed = true;
            self.push(entry);
        }
        self.move_backlog();
        // EINTR, EBUSY: simply return; the caller's loop checks again.
        let _ = self.ring.submit_and_wait(1);
    }

    /// Waits for every read in flight, so no buffer is freed under the kernel.
    pub(crate) fn drain(&mut self, wakers: &mut Vec<Waker>) {
        while self.in_flight > 0 {
            self.move_backlog();
            if let Err(e) = self.ring.submit_and_wait(1) {
                if e.raw_os_error() != Some(libc::EINTR) && e.raw_os_error() != Some(libc::EBUSY) {
                    tracing::warn!("io_uring wait failed while draining reads: {e}");
                    // The kernel keeps the ring alive until its requests end;
                    // leaking the buffers is the only safe choice left.
                    for op in self.ops.drain(..).flatten() {
                        std::mem::forget(op);
                    }
                    self.in_flight = 0;
                    return;
                }
            }
            self.reap(wakers);
        }
    }
}

impl Drop for UringDriver {
    fn drop(&mut self) {
        if self.wake_armed {
            // The pending eventfd read targets `wake_buf`: keep that memory
            // alive past the ring's teardown.
            std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
        }
    }
}
