//! The stack a statement runs on. Parsing, binding, optimizing, explaining and
//! dropping a statement all recurse over its syntax tree, and a long
//! `a OR b OR ...` chain parses into a tree thousands of levels deep; on a
//! thread's usual 2–8 MB stack that overflowed and aborted the whole process.
//! Each statement therefore runs on a stack of its own, sized for the deepest
//! tree the binder accepts ([`kura_sql::binder::MAX_EXPR_DEPTH`]) and for
//! dropping the longest statement ([`MAX_STATEMENT_BYTES`]); the memory is
//! reserved, and only the part a statement touches is ever committed.

/// The stack each statement runs on.
pub const STATEMENT_STACK: usize = 512 << 20;

/// A statement starts on a fresh stack unless this much is left where it is
/// (so nested calls, e.g. a statement run by another one, do not stack up).
const RED_ZONE: usize = 64 << 20;

/// The longest SQL text accepted in one call (PostgreSQL's own limit is 1 GB,
/// but a text this long is a mistake or an attack, and parsing it needs many
/// times its size in memory).
pub const MAX_STATEMENT_BYTES: usize = 16 << 20;

/// Runs `f` on a stack with room for the deepest statement kura accepts.
pub fn on_statement_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, STATEMENT_STACK, f)
}

/// A value dropped on a statement stack: a parsed statement kept beyond the
/// call that parsed it (a prepared statement) may be too deep to drop on the
/// stack of whatever thread lets go of it.
#[derive(Clone)]
pub struct DropOnStack<T>(Option<T>);

impl<T> DropOnStack<T> {
    pub fn new(value: T) -> Self {
        DropOnStack(Some(value))
    }
}

impl<T> std::ops::Deref for DropOnStack<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for DropOnStack<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<T> Drop for DropOnStack<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            on_statement_stack(move || drop(value));
        }
    }
}
