//! Cancellation while a statement is bound, optimized and lowered: a query of
//! thousands of CTEs or set operations plans for seconds, and a cancel request or
//! `statement_timeout` must stop it there too, not only once it runs.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use crate::error::{SqlError, SqlResult};

/// Answers "has the statement been cancelled (or run out of time)?".
#[derive(Clone)]
pub struct Interrupt(pub Arc<dyn Fn() -> bool + Send + Sync>);

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Interrupt")
    }
}

thread_local! {
    // Thread-local so that the binder's and optimizer's many recursive passes
    // can ask without an argument threaded through each of them; planning runs
    // on one thread.
    static CURRENT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
}

/// Makes [`check`] ask `interrupt` until dropped; restores the outer one.
#[must_use = "checks are answered only while the scope lives"]
pub struct InterruptScope {
    outer: Option<Interrupt>,
}

impl InterruptScope {
    pub fn enter(interrupt: Option<Interrupt>) -> InterruptScope {
        let outer = CURRENT.with(|c| c.replace(interrupt));
        InterruptScope { outer }
    }
}

impl Drop for InterruptScope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.replace(self.outer.take()));
    }
}

/// Fails with [`SqlError::Canceled`] once the statement being planned was
/// cancelled; always succeeds outside an [`InterruptScope`].
pub fn check() -> SqlResult<()> {
    let canceled = CURRENT.with(|c| c.borrow().as_ref().is_some_and(|i| (i.0)()));
    if canceled {
        Err(SqlError::Canceled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn asks_the_scope_and_restores_the_outer_one() {
        check().unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let _s =
            InterruptScope::enter(Some(Interrupt(Arc::new(move || f.load(Ordering::Relaxed)))));
        check().unwrap();
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(check(), Err(SqlError::Canceled)));
        {
            let _inner = InterruptScope::enter(None);
            check().unwrap();
        }
        assert!(check().is_err());
    }
}
