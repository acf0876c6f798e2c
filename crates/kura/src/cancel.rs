//! Cancellation of the statement a session runs: by the user (Ctrl-C, a
//! cancel request) or by its `statement_timeout`, which for a long text counts
//! from the start of its parse.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{KuraError, KuraResult};

/// Requests cancellation of the query a session is running, by the user
/// (Ctrl-C, a cancel request) or by the statement's time limit.
#[derive(Clone)]
pub struct CancelHandle(Arc<CancelState>);

struct CancelState {
    canceled: AtomicBool,
    timed_out: AtomicBool,
    /// When the running statement must stop: nanoseconds after `epoch`, 0 for never.
    deadline: AtomicU64,
    /// When parsing a long text began (nanoseconds after `epoch`, 0 for none):
    /// the next statement's time limit counts from there.
    parse_started: AtomicU64,
    epoch: Instant,
}

impl Default for CancelHandle {
    fn default() -> Self {
        CancelHandle(Arc::new(CancelState {
            canceled: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
            deadline: AtomicU64::new(0),
            parse_started: AtomicU64::new(0),
            epoch: Instant::now(),
        }))
    }
}

impl CancelHandle {
    pub fn cancel(&self) {
        self.0.canceled.store(true, Ordering::Release);
    }

    /// True once the user cancelled the statement or its time ran out.
    pub fn is_canceled(&self) -> bool {
        if self.0.canceled.load(Ordering::Acquire) {
            return true;
        }
        let deadline = self.0.deadline.load(Ordering::Relaxed);
        if deadline != 0 && self.0.epoch.elapsed().as_nanos() as u64 >= deadline {
            self.0.timed_out.store(true, Ordering::Release);
            self.0.canceled.store(true, Ordering::Release);
            return true;
        }
        false
    }

    /// Fails with [`KuraError::Canceled`] (or [`KuraError::StatementTimeout`])
    /// once cancellation was requested.
    pub fn check(&self) -> KuraResult<()> {
        if self.is_canceled() {
            Err(self.canceled_error())
        } else {
            Ok(())
        }
    }

    /// Whether the last cancellation came from the statement's time limit.
    pub fn timed_out(&self) -> bool {
        self.0.timed_out.load(Ordering::Acquire)
    }

    pub(crate) fn canceled_error(&self) -> KuraError {
        if self.timed_out() {
            KuraError::StatementTimeout
        } else {
            KuraError::Canceled
        }
    }

    /// Starts a statement: clears an earlier cancellation and arms its time
    /// limit, counted from the start of its text's parse if that was long.
    pub(crate) fn start(&self, timeout: Option<Duration>) {
        self.0.canceled.store(false, Ordering::Release);
        self.0.timed_out.store(false, Ordering::Release);
        let now = self.0.epoch.elapsed().as_nanos() as u64;
        let since = match self.0.parse_started.swap(0, Ordering::Relaxed) {
            0 => now,
            parsed => parsed,
        };
        let deadline = timeout.map_or(0, |t| (since + t.as_nanos() as u64).max(1));
        self.0.deadline.store(deadline, Ordering::Relaxed);
    }

    /// Forgets a parse's start once its text's statements are done (or it
    /// held none that ran).
    pub(crate) fn end_text(&self) {
        self.0.parse_started.store(0, Ordering::Relaxed);
    }

    /// Starts parsing a long text: its time limit runs from now, through the
    /// parse and the first statement [`CancelHandle::start`]ed after it.
    pub(crate) fn start_parse(&self, timeout: Option<Duration>) {
        self.start(timeout);
        let now = self.0.epoch.elapsed().as_nanos().max(1) as u64;
        self.0.parse_started.store(now, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_has_one_time_limit_for_its_parse_and_first_statement() {
        let c = CancelHandle::default();
        let limit = Some(Duration::from_millis(40));
        c.start_parse(limit);
        std::thread::sleep(Duration::from_millis(50));
        // The statement starts after its parse used the whole limit.
        c.start(limit);
        assert!(c.is_canceled());
        assert!(c.timed_out());
        // The next statement has a limit of its own.
        c.start(limit);
        assert!(!c.is_canceled());
    }

    #[test]
    fn a_parse_is_forgotten_once_its_text_is_done() {
        let c = CancelHandle::default();
        c.start_parse(Some(Duration::from_millis(40)));
        c.end_text();
        std::thread::sleep(Duration::from_millis(50));
        c.start(Some(Duration::from_millis(40)));
        assert!(!c.is_canceled());
        c.cancel();
        assert!(c.is_canceled());
        assert!(!c.timed_out());
    }
}
