//! Streaming operators: filter, projection, limit, and an in-memory batch source
//! (VALUES, materialised breaker results).

use std::sync::{Arc, Mutex};

use kura_common::Batch;

use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::{compact_batch, eval_predicate, PhysExpr};
use crate::pipeline::{Emit, Source, Transform};

/// Keeps rows where the predicate is TRUE (narrows the selection vector).
pub struct FilterOp {
    pub predicate: PhysExpr,
}

impl Transform for FilterOp {
    fn apply(&self, batch: Batch, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        eval_predicate(&self.predicate, batch).map(Some)
    }
}

/// Computes output columns from expressions.
pub struct ProjectOp {
    pub exprs: Vec<PhysExpr>,
}

impl Transform for ProjectOp {
    fn apply(&self, batch: Batch, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let batch = compact_batch(batch);
        super::project(&self.exprs, &batch).map(Some)
    }
}

/// OFFSET / LIMIT over the stream; stops the pipeline once the limit is reached.
pub struct LimitOp {
    state: Mutex<(usize, Option<usize>)>,
}

impl LimitOp {
    pub fn new(offset: usize, limit: Option<usize>) -> LimitOp {
        LimitOp {
            state: Mutex::new((offset, limit)),
        }
    }
}

impl Transform for LimitOp {
    fn apply(&self, batch: Batch, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (skip, remaining) = &mut *st;
        if *remaining == Some(0) {
            return Ok(None);
        }
        let n = batch.len();
        let sel: Vec<u32> = match &batch.selection {
            Some(s) => s.clone(),
            None => (0..batch.num_rows as u32).collect(),
        };
        let from = (*skip).min(n);
        *skip -= from;
        let mut to = n;
        if let Some(r) = remaining {
            to = (from + *r).min(n);
            *r -= to - from;
        }
        let keep = sel[from..to].to_vec();
        Ok(Some(Batch {
            selection: Some(keep),
            ..batch
        }))
    }
}

/// Batches already in memory, one morsel per batch.
pub struct MemorySource {
    batches: Arc<Vec<Batch>>,
}

impl MemorySource {
    pub fn new(batches: Vec<Batch>) -> MemorySource {
        MemorySource {
            batches: Arc::new(batches),
        }
    }
}

impl Source for MemorySource {
    fn morsels(&self) -> usize {
        self.batches.len()
    }
    fn produce(&self, morsel: usize, _ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        emit(self.batches[morsel].clone())?;
        Ok(())
    }
}
