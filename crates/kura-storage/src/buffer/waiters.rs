//! Wakers of asynchronous tasks waiting for a frame's in-flight read (paper 003):
//! a task whose fix finds the page already being read registers its waker here
//! instead of blocking its worker thread, and `complete` wakes them all.

use std::sync::Mutex;
use std::task::Waker;

use hashbrown::HashMap;

/// Wakers registered per frame, taken and woken when the frame's read completes.
#[derive(Default)]
pub(super) struct Waiters {
    by_frame: Mutex<HashMap<u32, Vec<Waker>>>,
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Vec<Waker>>> {
        // Only pushes and removals happen under this lock: a poisoned map is intact.
        self.by_frame.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `waker` to be woken when `frame`'s read completes.
    pub(super) fn register(&self, frame: u32, waker: &Waker) {
        let mut map = self.lock();
        let list = map.entry(frame).or_default();
        if !list.iter().any(|w| w.will_wake(waker)) {
            list.push(waker.clone());
        }
    }

    /// Wakes everyone waiting on `frame` (outside the lock: a waker may run code).
    pub(super) fn wake(&self, frame: u32) {
        let woken = self.lock().remove(&frame);
        for waker in woken.into_iter().flatten() {
            waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn wakes_only_the_frames_waiters_once() {
        let w = Waiters::default();
        let a = Arc::new(Count(AtomicUsize::new(0)));
        let b = Arc::new(Count(AtomicUsize::new(0)));
        let wa = Waker::from(a.clone());
        w.register(1, &wa);
        w.register(1, &wa);
        w.register(2, &Waker::from(b.clone()));
        w.wake(1);
        w.wake(1);
        assert_eq!(a.0.load(Ordering::SeqCst), 1);
        assert_eq!(b.0.load(Ordering::SeqCst), 0);
        w.wake(2);
        assert_eq!(b.0.load(Ordering::SeqCst), 1);
    }
}
