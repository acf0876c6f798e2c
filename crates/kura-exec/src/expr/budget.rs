//! Memory of the values expressions build (`repeat`, `lpad`, `||`, ...), counted
//! against the running query's `memory_limit` while the batch holding them flows
//! through its pipeline.
//!
//! Hash tables and sorts reserve what they keep; the values an expression makes
//! live only as long as one batch, but a batch of 1,024 rows of `repeat(s, n)` can
//! be gigabytes. A pipeline enters a [`ValueScope`] around each batch it pushes;
//! string results are charged to the query's tracker within it, and everything
//! charged is given back when the batch is done. Outside a scope (constant
//! folding, one-row evaluation) nothing is counted: those build one value, which
//! `MAX_VALUE_BYTES` bounds.

use std::cell::RefCell;
use std::sync::Arc;

use crate::context::MemoryTracker;
use crate::error::ExecResult;

/// What the error names when expression values pass the limit.
const WHAT: &str = "values built by expressions";

struct Budget {
    tracker: Arc<MemoryTracker>,
    charged: u64,
}

thread_local! {
    // Thread-local because a batch is pushed through its pipeline on one thread,
    // without suspending, while expression evaluation has no context argument.
    static CURRENT: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Counts expression values against `tracker` until dropped; nested scopes
/// restore the outer one.
#[must_use = "values are counted only while the scope lives"]
pub struct ValueScope {
    outer: Option<Budget>,
}

impl ValueScope {
    pub fn enter(tracker: &Arc<MemoryTracker>) -> ValueScope {
        let outer = CURRENT.with(|c| {
            c.replace(Some(Budget {
                tracker: tracker.clone(),
                charged: 0,
            }))
        });
        ValueScope { outer }
    }
}

impl Drop for ValueScope {
    fn drop(&mut self) {
        let mine = CURRENT.with(|c| c.replace(self.outer.take()));
        if let Some(b) = mine {
            b.tracker.release(b.charged);
        }
    }
}

/// Charges `bytes` of values just built; fails once the query is over its limit.
pub fn charge(bytes: usize) -> ExecResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(b) => {
            // Counted even when the reservation fails: the tracker added it.
            b.charged += bytes as u64;
            b.tracker.reserve(bytes as u64, WHAT)
        }
        None => Ok(()),
    })
}

/// Gives back `bytes` charged for values that are gone before the batch is
/// done (an intermediate result); never more than the scope charged.
pub fn release(bytes: usize) {
    CURRENT.with(|c| {
        if let Some(b) = c.borrow_mut().as_mut() {
            let back = (bytes as u64).min(b.charged);
            b.charged -= back;
            b.tracker.release(back);
        }
    })
}

/// Fails if `bytes` more would not fit the query's limit: asked before building
/// a value whose size is known in advance, so that an over-large result is
/// refused before it is allocated.
pub fn check_room(bytes: usize) -> ExecResult<()> {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(b) => b.tracker.check_room(bytes as u64, WHAT),
        None => Ok(()),
    })
}

/// Refuses a value of `bytes` that `func` is about to build when it is larger
/// than one value may be, or does not fit the query's limit beside the `built`
/// bytes of the batch so far.
pub fn check_value(func: &str, bytes: usize, built: usize) -> ExecResult<()> {
    if bytes > kura_common::MAX_VALUE_BYTES {
        return Err(crate::error::ExecError::TooLarge(format!(
            "{func}() would build {bytes} bytes, more than the {} a value may hold",
            kura_common::MAX_VALUE_BYTES
        )));
    }
    check_room(built.saturating_add(bytes))
}

/// Makes room for `bytes` more text in `res`, a text vector being built row
/// by row, growing it as a `Vec` would (doubling) — but only once the old
/// block and the new one, both held while the text moves, fit the limit.
/// Without this a batch allowed `limit` bytes of values could hold three
/// times that at the moment its vector grows.
pub fn grow_text(res: &mut kura_common::Vector, bytes: usize) -> ExecResult<()> {
    if let kura_common::ColumnData::Str(s) = &mut res.data {
        let (len, cap) = (s.data.len(), s.data.capacity());
        if len + bytes > cap {
            let grown = (cap * 2).max(len + bytes);
            check_room(cap + grown)?;
            s.data.reserve_exact(grown - len);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_inside_a_scope_and_gives_them_back() {
        let t = Arc::new(MemoryTracker::new(1000));
        {
            let _s = ValueScope::enter(&t);
            charge(600).unwrap();
            assert_eq!(t.used(), 600);
            assert!(check_room(500).is_err());
            assert!(charge(500).is_err());
        }
        assert_eq!(t.used(), 0);
        // Outside a scope nothing is counted.
        charge(5000).unwrap();
        check_room(5000).unwrap();
        assert_eq!(t.used(), 0);
    }

    #[test]
    fn nested_scopes_restore_the_outer_one() {
        let outer = Arc::new(MemoryTracker::new(1000));
        let inner = Arc::new(MemoryTracker::new(1000));
        let _a = ValueScope::enter(&outer);
        charge(10).unwrap();
        {
            let _b = ValueScope::enter(&inner);
            charge(20).unwrap();
            assert_eq!(inner.used(), 20);
        }
        assert_eq!(inner.used(), 0);
        charge(30).unwrap();
        assert_eq!(outer.used(), 40);
    }
}
