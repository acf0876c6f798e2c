//! A scope: the tree of tasks started by one root (one query), waited for as a
//! whole; the first error or panic cancels the rest.
//!
//! Generic over the scheduler its tasks are woken onto, so that it names no
//! task and no worker: tasks hold their scope, not the other way round.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::error::RuntimeError;

pub(crate) struct Scope<S> {
    /// Where the scope's tasks go when woken (one per runtime, shared by its
    /// scopes); kept here rather than in every task to spare a reference count
    /// per spawn.
    pub(crate) scheduler: S,
    pending: AtomicUsize,
    cancelled: AtomicBool,
    first_error: Mutex<Option<RuntimeError>>,
    done: Mutex<bool>,
    done_cv: Condvar,
}

impl<S> Scope<S> {
    pub(crate) fn new(scheduler: S) -> Arc<Scope<S>> {
        Arc::new(Scope {
            scheduler,
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

    /// Records a task's end, with its error if it failed. The first error is
    /// kept, except that a panic replaces an earlier error that is not one: a
    /// task that panics while holding a completer abandons its waiters, and on
    /// another worker their `Abandoned` errors can be recorded before the panic
    /// that caused them.
    pub(crate) fn task_finished(&self, error: Option<RuntimeError>) {
        if let Some(error) = error {
            let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
            let panic = |e: &RuntimeError| matches!(e, RuntimeError::Panic(_));
            if first.as_ref().is_none_or(|f| panic(&error) && !panic(f)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The scope's bookkeeping does not involve its scheduler.
    fn scope() -> Arc<Scope<()>> {
        Scope::new(())
    }

    #[test]
    fn a_panic_outranks_the_errors_it_caused_and_the_first_error_stays_otherwise() {
        let s = scope();
        (0..3).for_each(|_| s.task_started());
        s.task_finished(Some(RuntimeError::Abandoned));
        s.task_finished(Some(RuntimeError::Panic("reader died".into())));
        s.task_finished(Some(RuntimeError::Panic("later".into())));
        assert!(s.is_done());
        assert!(matches!(s.take_error(), Some(RuntimeError::Panic(m)) if m == "reader died"));

        let s = scope();
        (0..2).for_each(|_| s.task_started());
        s.task_finished(Some(RuntimeError::Task("first".into())));
        s.task_finished(Some(RuntimeError::Abandoned));
        assert!(matches!(s.take_error(), Some(RuntimeError::Task(e)) if e.to_string() == "first"));
    }
}
