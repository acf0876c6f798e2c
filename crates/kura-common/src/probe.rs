//! Operator-boundary probe: the executor marks which plan operator (and pipeline)
//! a thread is running; a profiler, when one is installed, hears every switch on
//! the thread that makes it. With no profiler installed a mark costs one relaxed
//! atomic load, so the executor can mark every batch.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// What a thread is running: a plan node and the pipeline it belongs to (named by
/// the node of the pipeline's sink). [`Mark::IDLE`] is "no operator".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mark {
    pub node: u32,
    pub pipeline: u32,
}

impl Mark {
    /// Outside every operator (scheduling, I/O waits, the session's own work).
    pub const IDLE: Mark = Mark {
        node: u32::MAX,
        pipeline: u32::MAX,
    };

    /// A mark from the executor's node ids; ids that do not fit (the executor's
    /// "no node") become `u32::MAX`.
    pub fn new(node: usize, pipeline: usize) -> Mark {
        Mark {
            node: u32::try_from(node).unwrap_or(u32::MAX),
            pipeline: u32::try_from(pipeline).unwrap_or(u32::MAX),
        }
    }

    pub fn is_idle(self) -> bool {
        self == Mark::IDLE
    }
}

/// Hears the executor's marks. Called on the thread that switches, so an
/// observer may keep per-thread state (a counter group, a transition log).
pub trait Observer: Send + Sync {
    /// The thread leaves `from` and starts running `to`.
    fn switch(&self, from: Mark, to: Mark);
    /// A query is about to run plan node `node`, described by `label`.
    fn name(&self, node: u32, label: &str) {
        let _ = (node, label);
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static OBSERVER: RwLock<Option<Arc<dyn Observer>>> = RwLock::new(None);

thread_local! {
    static CURRENT: Cell<Mark> = const { Cell::new(Mark::IDLE) };
}

/// Keeps an observer installed; dropping it uninstalls the observer.
pub struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        ENABLED.store(false, Ordering::SeqCst);
        *OBSERVER.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Installs `observer`; `None` if another one is installed already (one
/// profiler at a time: the marks are process-wide).
pub fn install(observer: Arc<dyn Observer>) -> Option<Installed> {
    let mut slot = OBSERVER.write().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return None;
    }
    *slot = Some(observer);
    ENABLED.store(true, Ordering::SeqCst);
    Some(Installed(()))
}

/// Whether an observer listens (the executor names operators only then).
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

fn with_observer(f: impl FnOnce(&dyn Observer)) {
    if let Some(o) = OBSERVER
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_deref()
    {
        f(o)
    }
}

/// Names plan node `node` for the observer (EXPLAIN's text of the node).
pub fn name(node: usize, label: &str) {
    if enabled() {
        with_observer(|o| o.name(Mark::new(node, 0).node, label));
    }
}

/// The mark of the calling thread.
pub fn current() -> Mark {
    CURRENT.with(Cell::get)
}

/// Marks the calling thread as running `node` of `pipeline` until the returned
/// scope drops, which restores the mark before it (operators nest: a transform
/// calls the operators it feeds).
#[inline]
pub fn enter(node: usize, pipeline: usize) -> Scope {
    if !enabled() {
        return Scope { restore: None };
    }
    let to = Mark::new(node, pipeline);
    let from = CURRENT.with(|c| c.replace(to));
    if from != to {
        with_observer(|o| o.switch(from, to));
    }
    Scope {
        restore: Some(from),
    }
}

/// An operator's turn on a thread; see [`enter`].
#[must_use = "the mark lasts as long as the scope"]
pub struct Scope {
    restore: Option<Mark>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(back) = self.restore {
            let from = CURRENT.with(|c| c.replace(back));
            // Uninstalled meanwhile: the thread's mark is restored all the same.
            if from != back && enabled() {
                with_observer(|o| o.switch(from, back));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<(Mark, Mark)>>);
    impl Observer for Log {
        fn switch(&self, from: Mark, to: Mark) {
            self.0.lock().unwrap().push((from, to));
        }
    }

    #[test]
    fn nested_scopes_report_each_switch_and_restore() {
        // Not installed: marks are not even kept.
        drop(enter(1, 9));
        assert_eq!(current(), Mark::IDLE);
        let log = Arc::new(Log::default());
        let installed = install(log.clone()).expect("first observer");
        assert!(install(Arc::new(Log::default())).is_none());
        {
            let _a = enter(1, 9);
            {
                let _b = enter(2, 9);
                assert_eq!(current(), Mark::new(2, 9));
            }
            assert_eq!(current(), Mark::new(1, 9));
        }
        drop(installed);
        assert!(!enabled());
        let got = log.0.lock().unwrap().clone();
        let (m1, m2) = (Mark::new(1, 9), Mark::new(2, 9));
        assert_eq!(
            got,
            vec![(Mark::IDLE, m1), (m1, m2), (m2, m1), (m1, Mark::IDLE)]
        );
    }
}
