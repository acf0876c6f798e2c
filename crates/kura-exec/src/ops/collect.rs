//! The result sink: collects a pipeline's output batches (compacted) in order.

use std::sync::Mutex;

use kura_common::Batch;

use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::compact_batch;
use crate::ops::join::batch_bytes;
use crate::pipeline::{LocalState, Sink};

/// Collects batches; used for query results and materialised inputs (UNION ALL).
#[derive(Default)]
pub struct CollectSink {
    batches: Mutex<Vec<Batch>>,
}

impl CollectSink {
    pub fn take(&self) -> Vec<Batch> {
        std::mem::take(&mut *self.batches.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Sink for CollectSink {
    fn local(&self) -> LocalState {
        Box::new(Vec::<Batch>::new())
    }
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        // Collected rows count against the query's memory limit like a hash table:
        // a result (or UNION input) larger than the limit fails with 53200
        // instead of growing the process without bound.
        ctx.memory.reserve(batch_bytes(&batch), "result rows")?;
        if let Some(v) = local.downcast_mut::<Vec<Batch>>() {
            v.push(batch);
        }
        Ok(())
    }
    fn merge(&self, local: LocalState, _ctx: &ExecContext) -> ExecResult<()> {
        if let Ok(v) = local.downcast::<Vec<Batch>>() {
            self.batches
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(*v);
        }
        Ok(())
    }
    fn finish(&self, _ctx: &ExecContext) -> ExecResult<()> {
        Ok(())
    }
}
