//! A scope: the tree of tasks started by one root (one query), waited for as a
//! whole; the first error or panic cancels the rest.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::error::RuntimeError;
use super::worker::Shared;

pub(crate) struct Scope {
    pub(crate) runtime: Arc<Shared>,
    pending: AtomicUsize,
    cancelled: AtomicBool,
    first_error: Mutex<Option<RuntimeError>>,
    done: Mutex<bool>,
    done_cv: Condvar,
}

impl Scope {
    pub(crate) fn new(runtime: Arc<Shared>) -> Arc<Scope> {
        Arc::new(Scope {
            runtime,
            pending: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
            first_error: Mutex::new(None),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        })
    }

    /// Counts a new task; called before the task can run.
    pub(crate) fn task_started(&self) {
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether an error has been recorded; remaining tasks are dropped unpolled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Whether every task of the scope has finished.
    pub(crate) fn is_done(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Records a task's end, with its error if it failed.
    pub(crate) fn task_finished(&self, error: Option<RuntimeError>) {
        if let Some(error) = error {
            let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_none() {
                *first = Some(error);
            }
            self.cancelled.store(true, Ordering::Relaxed);
        }
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.done_cv.notify_all();
        }
    }

    /// Blocks the calling (non-worker) thread until the scope is done.
    pub(crate) fn wait(&self) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = self.done_cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The first error recorded, if any.
    pub(crate) fn take_error(&self) -> Option<RuntimeError> {
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
