//! Independent pieces of a breaker's final work (sorting each worker's run)
//! run on the runtime's workers, which are idle once a pipeline's morsels are
//! done, instead of one after the other on the calling thread.

use std::convert::Infallible;

use crate::context::{ExecContext, ExecutionMode};
use crate::error::{ExecError, ExecResult};
use crate::runtime;

/// Runs `parts` and returns their outputs in order: on the runtime's workers
/// when the query runs in a parallel mode and there are two parts or more,
/// else (serial mode, a single part, or already on a worker, where the runtime
/// cannot be re-entered) on this thread. The first part that fails fails all.
pub fn run_parts<T, F>(ctx: &ExecContext, parts: Vec<F>) -> ExecResult<Vec<T>>
where
    F: FnOnce() -> ExecResult<T> + Send + 'static,
    T: Send + 'static,
{
    let serial =
        ctx.mode == ExecutionMode::Serial || parts.len() < 2 || runtime::current_worker().is_some();
    if serial {
        return parts.into_iter().map(|p| p()).collect();
    }
    let rt = ctx.runtime()?;
    // A part's own error is its output, so the caller gets the operator's error
    // back rather than the runtime's wrapping of it.
    let wrapped: Vec<_> = parts
        .into_iter()
        .map(|p| move || Ok::<_, Infallible>(p()))
        .collect();
    let done = rt
        .run_static(wrapped)
        .map_err(|e| ExecError::Internal(format!("parallel parts failed: {e}")))?;
    done.outputs.into_iter().collect()
}
