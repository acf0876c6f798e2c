//! The thread-local worker context: lets code running inside a task spawn
//! children onto its own worker (local binding), submit reads on that worker's
//! ring, take buffers from its pool, and yield.
//!
//! The worker's thread-local state is defined here, below the worker loop
//! (`worker.rs`, which adds the loop's methods), since everything running in a
//! task reaches its worker through it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::os::unix::io::RawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::error::BoxError;
use super::io::buf::AlignedBuf;
use super::io::uring::IoOp;
use super::io::IoDriver;
use super::shared::{Shared, Slot};
use super::stats::{add, Counters};
use super::task::{Schedule, Task, TaskFuture};

/// The part of a worker only its own thread touches.
pub(crate) struct WorkerLocal {
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    pub(crate) queue: RefCell<VecDeque<Arc<Task>>>,
    /// The task being polled (its scope receives spawned children).
    pub(crate) current: RefCell<Option<Arc<Task>>>,
    pub(crate) io: RefCell<IoDriver>,
    /// Reused by each reap, so reaping allocates nothing.
    pub(crate) wakers: RefCell<Vec<Waker>>,
}

impl WorkerLocal {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, io: IoDriver) -> WorkerLocal {
        WorkerLocal {
            index,
            shared,
            queue: RefCell::new(VecDeque::new()),
            current: RefCell::new(None),
            io: RefCell::new(io),
            wakers: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn slot(&self) -> &Slot {
        &self.shared.slots[self.index]
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.slot().counters
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<WorkerLocal>>> = const { RefCell::new(None) };
}

/// Restores the previous context when dropped.
pub(crate) struct EnterGuard {
    previous: Option<Rc<WorkerLocal>>,
}

/// Makes `local` the current thread's worker context.
pub(crate) fn enter(local: Rc<WorkerLocal>) -> EnterGuard {
    let previous = CURRENT.with(|c| c.borrow_mut().replace(local));
    EnterGuard { previous }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

pub(crate) fn current() -> Option<Rc<WorkerLocal>> {
    CURRENT.with(|c| c.borrow().clone())
}

// Here rather than beside `Shared`: the fast path needs the thread's worker.
impl Schedule for Shared {
    /// Puts a woken or new task into its home worker's queue: directly when on
    /// that worker's thread, else through its injector.
    fn schedule(&self, task: Arc<Task>) {
        let home = task.home();
        if let Some(local) = current() {
            if local.index == home && std::ptr::eq(Arc::as_ptr(&local.shared), self) {
                local.queue.borrow_mut().push_back(task);
                return;
            }
        }
        self.slots[home].inject([task]);
    }
}

/// Boxes a user future into the runtime's task type.
pub(crate) fn erase<F, E>(future: F) -> TaskFuture
where
    F: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<BoxError>,
{
    Box::pin(async move { future.await.map_err(Into::into) })
}

/// Spawns a child of the current task onto the current worker's runnable
/// queue (local binding: it runs where its parent runs unless the balancer
/// moves it). The child belongs to the parent's scope: the scope finishes
/// when it does, and its error fails the scope.
///
/// # Panics
/// When called outside a runtime task (a programming error: there is no scope
/// to attach the child to).
pub fn spawn<F, E>(future: F)
where
    F: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<BoxError>,
{
    let local = current().expect("kura runtime: spawn() called outside a runtime task");
    let scope = {
        let running = local.current.borrow();
        let parent = running
            .as_ref()
            .expect("kura runtime: spawn() called outside a runtime task");
        parent.scope.clone()
    };
    if scope.is_cancelled() {
        return;
    }
    let task = Task::new(scope, local.index, false, erase(future));
    add(&local.counters().spawned, 1);
    local.queue.borrow_mut().push_back(task);
}

/// Index of the worker running the current task (`None` outside workers;
/// the caller's thread in serial mode reports the index after the last worker).
pub fn current_worker() -> Option<usize> {
    current().map(|l| l.index)
}

/// A buffer of `len` bytes from the current worker's pool (or the global
/// allocator outside workers).
pub fn buffer(len: usize) -> AlignedBuf {
    match current() {
        Some(local) => local.shared.slots[local.index].pool.take(len),
        None => AlignedBuf::new(len),
    }
}

/// Lets the worker run other tasks, reap completions and serve the balancer
/// before this task continues; for long computations inside one task.
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// Future of [`yield_now`].
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Where a read went.
pub(crate) enum IoRoute {
    /// Onto the current worker's ring; the op's waker fires on completion.
    Submitted,
    /// No ring here: the caller reads synchronously.
    Synchronous,
}

pub(crate) fn submit_read(
    fd: RawFd,
    ptr: *mut u8,
    len: u32,
    offset: u64,
    op: Arc<IoOp>,
) -> IoRoute {
    let Some(local) = current() else {
        return IoRoute::Synchronous;
    };
    let mut io = local.io.borrow_mut();
    match &mut *io {
        IoDriver::Uring(driver) => {
            driver.push_read(fd, ptr, len, offset, op);
            add(&local.counters().io_submitted, 1);
            IoRoute::Submitted
        }
        IoDriver::Sync => IoRoute::Synchronous,
    }
}

/// Runs `f` on the current worker's counters, if on a worker.
pub(crate) fn with_counters(f: impl FnOnce(&Counters)) {
    if let Some(local) = current() {
        f(local.counters());
    }
}
