//! Running a statement with the GIL released, on a thread of its own, while the calling thread
//! watches for Ctrl-C: Python's signal handlers run only on the main thread and only when it
//! runs Python, so the wait wakes every 50 ms to let them, and a KeyboardInterrupt cancels
//! the statement (kura stops at its next check) before it is raised.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use kura::CancelHandle;
use pyo3::prelude::*;

use crate::errors::InternalError;

const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` with the GIL released; Ctrl-C (or any pending Python signal exception) cancels
/// it through `cancel` and is raised once `work` has stopped.
pub fn run_released<T: Send>(
    py: Python<'_>,
    cancel: &CancelHandle,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("kura-statement".into())
            .spawn_scoped(scope, move || {
                let _ = tx.send(work());
            })
            .map_err(|e| InternalError::new_err(format!("starting the statement's thread: {e}")))?;
        let mut rx = rx;
        loop {
            let (back, got) = py.detach(move || {
                let got = rx.recv_timeout(SIGNAL_POLL);
                (rx, got)
            });
            rx = back;
            match got {
                Ok(value) => {
                    let _ = worker.join();
                    return Ok(value);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupt) = py.check_signals() {
                        cancel.cancel();
                        let _ = py.detach(move || rx.recv());
                        let _ = worker.join();
                        return Err(interrupt);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = worker.join();
                    return Err(InternalError::new_err(
                        "the statement's thread stopped without a result (a panic)",
                    ));
                }
            }
        }
    })
}
