//! Pipelines: a source, a linear list of streaming transforms, and a breaker sink
//! (hash build, aggregation, sort, result). Sources split their input into morsels
//! (a row group, a run) and sinks keep per-worker local state merged at the end, so
//! the task runtime can run morsels as independent tasks; here they run serially on
//! the calling thread.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use kura_common::Batch;

use crate::context::ExecContext;
use crate::error::ExecResult;

/// Receives batches from a source; returns `false` to ask the source to stop early.
pub type Emit<'a> = dyn FnMut(Batch) -> ExecResult<bool> + 'a;

/// Produces the batches of a pipeline, morsel by morsel.
pub trait Source: Send + Sync {
    /// Number of independent units of work.
    fn morsels(&self) -> usize;
    /// Emits the batches of one morsel.
    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()>;
}

/// A streaming operator: one batch in, one (possibly empty) batch out. `None` means
/// no further input is needed (LIMIT reached).
pub trait Transform: Send + Sync {
    fn apply(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<Option<Batch>>;
}

/// Per-worker state of a sink.
pub type LocalState = Box<dyn Any + Send>;

/// The breaker that ends a pipeline.
pub trait Sink: Send + Sync {
    fn local(&self) -> LocalState;
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()>;
    /// Folds one worker's local state into the shared state.
    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()>;
    /// Called once after every local state is merged.
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()>;
}

/// One pipeline, with the plan node ids its parts report statistics to.
pub struct Pipeline {
    pub source: Arc<dyn Source>,
    pub source_node: usize,
    pub transforms: Vec<(usize, Arc<dyn Transform>)>,
}

impl Pipeline {
    /// Runs every morsel through the transforms into `sink` (serially, one local state).
    pub fn run(&self, sink: &dyn Sink, sink_node: usize, ctx: &ExecContext) -> ExecResult<()> {
        let mut local = sink.local();
        let mut stopped = false;
        for morsel in 0..self.source.morsels() {
            let mut started = Instant::now();
            let mut emit = |batch: Batch| -> ExecResult<bool> {
                ctx.check_cancel()?;
                let src_ns = started.elapsed().as_nanos() as u64;
                ctx.record(self.source_node, |s| {
                    s.rows_out += batch.len() as u64;
                    s.nanos += src_ns;
                });
                let mut batch = batch;
                for (node, t) in &self.transforms {
                    let t0 = Instant::now();
                    let out = t.apply(batch, ctx)?;
                    let ns = t0.elapsed().as_nanos() as u64;
                    match out {
                        Some(b) => {
                            ctx.record(*node, |s| {
                                s.rows_out += b.len() as u64;
                                s.nanos += ns;
                            });
                            batch = b;
                        }
                        None => {
                            ctx.record(*node, |s| s.nanos += ns);
                            stopped = true;
                            started = Instant::now();
                            return Ok(false);
                        }
                    }
                    if batch.is_empty() {
                        started = Instant::now();
                        return Ok(true);
                    }
                }
                let t0 = Instant::now();
                sink.consume(&mut local, batch, ctx)?;
                let ns = t0.elapsed().as_nanos() as u64;
                ctx.record(sink_node, |s| s.nanos += ns);
                started = Instant::now();
                Ok(true)
            };
            self.source.produce(morsel, ctx, &mut emit)?;
            if stopped {
                break;
            }
        }
        let t0 = Instant::now();
        sink.merge(local, ctx)?;
        sink.finish(ctx)?;
        ctx.record(sink_node, |s| s.nanos += t0.elapsed().as_nanos() as u64);
        Ok(())
    }
}
