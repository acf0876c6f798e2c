//! Helper threads for the work a pipeline breaker does between pipelines (a
//! join's hash table): it runs on the caller while the workers wait for the
//! next pipeline, which cannot start before it, so it is split into parts
//! done side by side, one per worker. (TPC-H Q3 at SF 10: the table of 1.5 M
//! orders held the caller alone for a seventh of the query's CPU time.)

use crate::context::{ExecContext, ExecutionMode};
use crate::error::{ExecError, ExecResult};

/// Items (rows, groups) below which one thread does the work: a helper
/// thread's start costs more than it saves.
pub(crate) const PARALLEL_ITEMS: usize = 1 << 17;

/// How many threads share work over `items`: one per worker, but one in
/// serial mode (one core is what it measures), on a worker (a partition of a
/// spilled operator, done while the other workers do theirs) and for little
/// work.
pub(crate) fn helper_threads(items: usize, ctx: &ExecContext) -> usize {
    if items < PARALLEL_ITEMS
        || ctx.mode == ExecutionMode::Serial
        || crate::runtime::current_worker().is_some()
    {
        return 1;
    }
    crate::runtime::started_shared_runtime()
        .map_or(1, |rt| rt.workers())
        .clamp(1, 8)
}

/// `part(0..parts)`, part 0 on the calling thread and each other on a thread
/// of its own; the results in part order, or the first error.
pub(crate) fn run_parts<T: Send>(
    parts: usize,
    part: impl Fn(usize) -> ExecResult<T> + Sync,
) -> ExecResult<Vec<T>> {
    if parts <= 1 {
        return Ok(vec![part(0)?]);
    }
    let part = &part;
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..parts).map(|p| s.spawn(move || part(p))).collect();
        let mut done = vec![part(0)];
        for h in helpers {
            done.push(
                h.join().unwrap_or_else(|_| {
                    Err(ExecError::Internal("a helper thread panicked".into()))
                }),
            );
        }
        done.into_iter().collect()
    })
}
