//! A one-shot completion many tasks can await: one party completes it with a
//! value, every waiter gets a clone. This is what lets concurrent fixes of one
//! page share a single read (the buffer manager keeps the `Completion` of the
//! read in flight; the task doing the read holds the `Completer`). A completer
//! dropped without completing — its task failed or was cancelled — releases
//! the waiters with [`RuntimeError::Abandoned`] instead of leaving them blocked.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::error::RuntimeError;

enum Outcome<T> {
    Pending,
    Completed(T),
    Abandoned,
}

struct State<T> {
    outcome: Outcome<T>,
    waiters: Vec<Waker>,
}

struct Inner<T> {
    state: Mutex<State<T>>,
}

impl<T> Inner<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn resolve(&self, outcome: Outcome<T>) {
        let waiters = {
            let mut state = self.lock();
            if !matches!(state.outcome, Outcome::Pending) {
                return;
            }
            state.outcome = outcome;
            std::mem::take(&mut state.waiters)
        };
        for waker in waiters {
            waker.wake();
        }
    }
}

/// A new pending completion: the completing side and the (cloneable) waiting side.
pub fn completion<T: Clone + Send>() -> (Completer<T>, Completion<T>) {
    let inner = Arc::new(Inner {
        state: Mutex::new(State {
            outcome: Outcome::Pending,
            waiters: Vec::new(),
        }),
    });
    (
        Completer {
            inner: Some(inner.clone()),
        },
        Completion { inner },
    )
}

/// The side that completes; dropping it uncompleted abandons the waiters.
pub struct Completer<T> {
    inner: Option<Arc<Inner<T>>>,
}

impl<T> Completer<T> {
    /// Completes with `value` and wakes every waiter.
    pub fn complete(mut self, value: T) {
        if let Some(inner) = self.inner.take() {
            inner.resolve(Outcome::Completed(value));
        }
    }
}

impl<T> Drop for Completer<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.resolve(Outcome::Abandoned);
        }
    }
}

/// The waiting side; clone it for every interested task.
pub struct Completion<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Completion<T> {
    fn clone(&self) -> Self {
        Completion {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Clone> Completion<T> {
    /// A future resolving to the value (or `Abandoned`).
    pub fn wait(&self) -> Wait<T> {
        Wait {
            inner: self.inner.clone(),
            registered: None,
        }
    }

    /// The value if already resolved, without waiting.
    pub fn try_get(&self) -> Option<Result<T, RuntimeError>> {
        match &self.inner.lock().outcome {
            Outcome::Pending => None,
            Outcome::Completed(v) => Some(Ok(v.clone())),
            Outcome::Abandoned => Some(Err(RuntimeError::Abandoned)),
        }
    }

    /// Tasks currently registered as waiting.
    pub fn waiters(&self) -> usize {
        self.inner.lock().waiters.len()
    }
}

/// Future of [`Completion::wait`].
pub struct Wait<T> {
    inner: Arc<Inner<T>>,
    /// Index of our waker in the waiter list, once registered.
    registered: Option<usize>,
}

impl<T: Clone> Future for Wait<T> {
    type Output = Result<T, RuntimeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.clone();
        let mut state = inner.lock();
        match &state.outcome {
            Outcome::Completed(v) => return Poll::Ready(Ok(v.clone())),
            Outcome::Abandoned => return Poll::Ready(Err(RuntimeError::Abandoned)),
            Outcome::Pending => {}
        }
        match self.registered {
            // Re-polled (e.g. after a migration): refresh our waker in place.
            Some(i) if i < state.waiters.len() => {
                if !state.waiters[i].will_wake(cx.waker()) {
                    state.waiters[i] = cx.waker().clone();
                }
            }
            _ => {
                state.waiters.push(cx.waker().clone());
                self.registered = Some(state.waiters.len() - 1);
            }
        }
        Poll::Pending
    }
}
