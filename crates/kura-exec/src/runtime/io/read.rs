//! `read_at`: the asynchronous positional read tasks await. On a worker with
//! io_uring the read goes onto that worker's ring and the task suspends until
//! the completion; elsewhere (serial mode, sync fallback, plain threads) it is a
//! synchronous `pread`.

use std::future::Future;
use std::io;
use std::os::unix::io::RawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::super::context::{self, IoRoute};
use super::super::stats::add;
use super::buf::AlignedBuf;
use super::pread;
use super::uring::IoOp;

/// Memory a read lands in. The read owns it while the kernel may write it, so
/// its bytes must stay where they are however the owner is moved: a heap buffer,
/// or a buffer-pool frame held by its read ticket.
pub trait ReadTarget: Send + 'static {
    /// The bytes to read into; the same memory for as long as `self` lives.
    fn bytes(&mut self) -> &mut [u8];
}

impl ReadTarget for AlignedBuf {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

/// Reads up to `buf.len()` bytes of `fd` at `offset` into `buf`.
///
/// The buffer is passed by value and handed back with the result because the
/// kernel writes into it asynchronously: if the awaiting task is dropped
/// mid-read, the buffer stays with the in-flight operation until the kernel
/// is done with it. For O_DIRECT files, `offset` and `buf.len()` must be
/// multiples of the device block size (buffers are already aligned).
///
/// `fd` must stay open until the returned future completes or is dropped.
pub fn read_at(fd: RawFd, offset: u64, buf: AlignedBuf) -> ReadAt {
    read_into(fd, offset, buf)
}

/// [`read_at`] into any [`ReadTarget`]: a page read straight into its frame
/// saves a copy of every page a query reads.
pub fn read_into<T: ReadTarget>(fd: RawFd, offset: u64, target: T) -> ReadAt<T> {
    ReadAt {
        fd,
        offset,
        state: State::Start(Some(target)),
    }
}

/// Like [`read_at`] but fails with `UnexpectedEof` unless the whole buffer was filled.
pub async fn read_exact_at(fd: RawFd, offset: u64, buf: AlignedBuf) -> io::Result<AlignedBuf> {
    let want = buf.len();
    let (result, buf) = read_at(fd, offset, buf).await;
    let n = result?;
    if n < want {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read of {want} bytes at offset {offset} returned {n}"),
        ));
    }
    Ok(buf)
}

/// Synchronous read counted in the current worker's I/O statistics (for
/// static-mode parts and other code that runs without suspending).
pub fn read_at_blocking(fd: RawFd, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    context::with_counters(|c| add(&c.io_submitted, 1));
    let result = pread(fd, buf, offset);
    context::with_counters(|c| add(&c.io_completed, 1));
    result
}

enum State<T> {
    Start(Option<T>),
    InFlight(Arc<IoOp>),
    Done,
}

/// The future returned by [`read_at`]: resolves to the byte count and the buffer.
pub struct ReadAt<T = AlignedBuf> {
    fd: RawFd,
    offset: u64,
    state: State<T>,
}

// The target is only ever moved in and out by value, never pinned in place.
impl<T> Unpin for ReadAt<T> {}

impl<T: ReadTarget> Future for ReadAt<T> {
    type Output = (io::Result<usize>, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match &mut this.state {
            State::Start(buf) => {
                let Some(mut buf) = buf.take() else {
                    unreachable!("ReadAt polled in an invalid state")
                };
                let bytes = buf.bytes();
                let Ok(len) = u32::try_from(bytes.len()) else {
                    this.state = State::Done;
                    let err = io::Error::new(io::ErrorKind::InvalidInput, "read larger than 4 GiB");
                    return Poll::Ready((Err(err), buf));
                };
                let ptr = bytes.as_mut_ptr();
                let op = IoOp::new(Box::new(buf), cx.waker().clone());
                match context::submit_read(this.fd, ptr, len, this.offset, op.clone()) {
                    IoRoute::Submitted => {
                        this.state = State::InFlight(op);
                        Poll::Pending
                    }
                    IoRoute::Synchronous => {
                        this.state = State::Done;
                        let mut buf: T = take_buf(&op);
                        let result = read_at_blocking(this.fd, this.offset, buf.bytes());
                        Poll::Ready((result, buf))
                    }
                }
            }
            State::InFlight(op) => {
                let mut inner = op.inner.lock().unwrap_or_else(|e| e.into_inner());
                match inner.result {
                    Some(res) => {
                        drop(inner);
                        let buf: T = take_buf(op);
                        this.state = State::Done;
                        let result = if res < 0 {
                            Err(io::Error::from_raw_os_error(-res))
                        } else {
                            Ok(res as usize)
                        };
                        Poll::Ready((result, buf))
                    }
                    None => {
                        // The task may have migrated: always wake the latest waker.
                        match &inner.waker {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            _ => inner.waker = Some(cx.waker().clone()),
                        }
                        Poll::Pending
                    }
                }
            }
            State::Done => panic!("ReadAt polled after completion"),
        }
    }
}

fn take_buf<T: ReadTarget>(op: &IoOp) -> T {
    let owner = op
        .inner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .buf
        .take()
        .expect("a read owns its target until it is handed back");
    *owner
        .downcast::<T>()
        .expect("a read hands back the target it was given")
}
