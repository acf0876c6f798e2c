//! A task: one coroutine (a boxed Rust future) with its scheduling state, its
//! home worker and its scope; polling it catches panics.

use std::cell::UnsafeCell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::error::{BoxError, RuntimeError};
use super::scope::Scope;

/// The coroutine type every task is erased to.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

/// Puts a woken task back into a runnable queue. The runtime's shared state
/// implements it; a trait, so that tasks and scopes sit below the workers
/// instead of naming them.
pub(crate) trait Schedule: Send + Sync {
    fn schedule(&self, task: Arc<Task>);
}

/// The scope of a runtime's tasks: woken onto that runtime's queues.
pub(crate) type TaskScope = Scope<Arc<dyn Schedule>>;

/// Blocked: in no queue, waiting for a wake.
const IDLE: u8 = 0;
/// In exactly one runnable queue.
const SCHEDULED: u8 = 1;
/// Being polled by the worker that dequeued it.
const RUNNING: u8 = 2;
/// Woken while running: goes back to the runnable queue after the poll.
const NOTIFIED: u8 = 3;
/// Finished; wakes are ignored.
const DONE: u8 = 4;

pub(crate) struct Task {
    state: AtomicU8,
    /// The worker whose queue the task goes to when woken. Changed only by
    /// that worker while the task sits in its queue (migration), so a wake,
    /// which enqueues only from IDLE, always reads a stable value.
    home: AtomicUsize,
    /// Static-mode parts stay where they were placed.
    pub(crate) pinned: bool,
    pub(crate) scope: Arc<TaskScope>,
    future: UnsafeCell<Option<TaskFuture>>,
}

// SAFETY: `future` is touched only by the thread that moved `state` from
// SCHEDULED to RUNNING (a task is in at most one queue), or when finishing it
// on that same thread; every other field is atomic or immutable.
unsafe impl Sync for Task {}

/// How a poll ended.
pub(crate) enum PollOutcome {
    /// Suspended; `true` when it was woken meanwhile and must be requeued.
    Pending { requeue: bool },
    /// Finished (successfully, with an error, by a panic, or cancelled).
    Finished,
}

impl Task {
    /// A new task, SCHEDULED: the caller must put it into `home`'s queue.
    pub(crate) fn new(
        scope: Arc<TaskScope>,
        home: usize,
        pinned: bool,
        future: TaskFuture,
    ) -> Arc<Task> {
        scope.task_started();
        Arc::new(Task {
            state: AtomicU8::new(SCHEDULED),
            home: AtomicUsize::new(home),
            pinned,
            scope,
            future: UnsafeCell::new(Some(future)),
        })
    }

    pub(crate) fn home(&self) -> usize {
        self.home.load(Ordering::Acquire)
    }

    /// Rehomes a task; only for the worker that has it in its queue.
    pub(crate) fn set_home(&self, worker: usize) {
        self.home.store(worker, Ordering::Release);
    }

    /// Polls the task once. Must be called only by the worker that dequeued it.
    pub(crate) fn poll(self: &Arc<Self>) -> PollOutcome {
        self.state.store(RUNNING, Ordering::Release);
        // SAFETY: we dequeued the task, so we are its only poller (see `Sync`).
        let slot = unsafe { &mut *self.future.get() };
        let Some(future) = slot.as_mut() else {
            return PollOutcome::Finished;
        };
        if self.scope.is_cancelled() {
            self.finish(None);
            return PollOutcome::Finished;
        }
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
            Ok(Poll::Pending) => {
                let requeue = self
                    .state
                    .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err();
                if requeue {
                    self.state.store(SCHEDULED, Ordering::Release);
                }
                PollOutcome::Pending { requeue }
            }
            Ok(Poll::Ready(Ok(()))) => {
                self.finish(None);
                PollOutcome::Finished
            }
            Ok(Poll::Ready(Err(e))) => {
                self.finish(Some(RuntimeError::Task(e)));
                PollOutcome::Finished
            }
            Err(payload) => {
                self.finish(Some(RuntimeError::Panic(panic_message(payload.as_ref()))));
                PollOutcome::Finished
            }
        }
    }

    /// Drops the coroutine (catching a panic in its destructor) and reports
    /// the end to the scope.
    fn finish(&self, mut error: Option<RuntimeError>) {
        self.state.store(DONE, Ordering::Release);
        // SAFETY: called only by the polling thread (see `poll`).
        let future = unsafe { (*self.future.get()).take() };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(future))) {
            error.get_or_insert(RuntimeError::Panic(panic_message(payload.as_ref())));
        }
        self.scope.task_finished(error);
    }

    fn wake_task(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            let next = match state {
                IDLE => SCHEDULED,
                RUNNING => NOTIFIED,
                _ => return,
            };
            match self
                .state
                .compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if next == SCHEDULED {
                        self.scope.scheduler.schedule(self.clone());
                    }
                    return;
                }
                Err(actual) => state = actual,
            }
        }
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_task();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_task();
    }
}

/// The text of a panic payload (`&str` or `String`), for the error message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-text panic payload".to_string()
    }
}
