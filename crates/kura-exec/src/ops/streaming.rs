//! Streaming operators: filter, projection, limit, row replication, and an in-memory
//! batch source (VALUES, materialised breaker results).

use std::sync::{Arc, Mutex};

use kura_common::Batch;

use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
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
        let batch = match pick_columns(&self.exprs, batch) {
            Ok(picked) => return Ok(Some(picked)),
            Err(batch) => batch,
        };
        let batch = compact_batch(batch);
        super::project(&self.exprs, &batch).map(Some)
    }
}

/// A projection of plain column references (such as one dropping the columns a
/// scan read only for its filter): the columns are moved out of the batch, not
/// copied, and the selection stays, so that only the kept columns are ever
/// compacted. The batch comes back untouched when an expression is more than a
/// column.
fn pick_columns(exprs: &[PhysExpr], mut batch: Batch) -> Result<Batch, Batch> {
    let mut idx = Vec::with_capacity(exprs.len());
    for e in exprs {
        match e {
            PhysExpr::Column { index, .. } if *index < batch.columns.len() => idx.push(*index),
            _ => return Err(batch),
        }
    }
    if idx.is_empty() {
        return Err(batch);
    }
    let mut columns = Vec::with_capacity(idx.len());
    for (k, &i) in idx.iter().enumerate() {
        let used_again = idx[k + 1..].contains(&i);
        columns.push(if used_again {
            batch.columns[i].clone()
        } else {
            let dt = batch.columns[i].data_type;
            std::mem::replace(&mut batch.columns[i], kura_common::Vector::new(dt, 0))
        });
    }
    Ok(Batch {
        columns,
        selection: batch.selection,
        num_rows: batch.num_rows,
    })
}

/// OFFSET / LIMIT over the stream; stops the pipeline once the limit is reached.
pub struct LimitOp {
    state: Mutex<(usize, Option<usize>)>,
    /// The rows it takes depend on their order: an OFFSET, or sorted input.
    ordered: bool,
}

impl LimitOp {
    /// `sorted`: the input comes from an ORDER BY, so a LIMIT must take its
    /// first rows, not the first to arrive.
    pub fn new(offset: usize, limit: Option<usize>, sorted: bool) -> LimitOp {
        LimitOp {
            state: Mutex::new((offset, limit)),
            ordered: sorted || offset > 0,
        }
    }
}

impl Transform for LimitOp {
    fn needs_morsel_order(&self) -> bool {
        self.ordered
    }

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

/// Repeats every row as many times as its `count` column says (none for zero, NULL
/// or a negative count): the duplicates `INTERSECT ALL` and `EXCEPT ALL` emit.
pub struct ReplicateOp {
    pub count: usize,
}

impl Transform for ReplicateOp {
    fn apply(&self, batch: Batch, _ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let batch = compact_batch(batch);
        let counts = batch
            .columns
            .get(self.count)
            .ok_or_else(|| ExecError::Internal("replicate count column".into()))?;
        let mut idx: Vec<u32> = Vec::with_capacity(batch.len());
        for row in 0..batch.len() {
            let n = match counts.get_value(row) {
                kura_common::Value::BigInt(n) => n,
                kura_common::Value::Integer(n) => i64::from(n),
                _ => 0,
            };
            idx.extend(std::iter::repeat_n(row as u32, n.max(0) as usize));
        }
        Ok(Some(Batch::new(
            batch.columns.iter().map(|c| c.take(&idx)).collect(),
        )))
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

    /// Over batches another holder keeps too (a shared subplan's result).
    pub fn shared(batches: Arc<Vec<Batch>>) -> MemorySource {
        MemorySource { batches }
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

#[cfg(test)]
mod tests {
    use kura_common::{DataType, Value, Vector};

    use super::*;

    #[test]
    fn replicate_repeats_rows_by_their_count() {
        let keys = Vector::from_values(
            DataType::Integer,
            &[
                Value::Integer(1),
                Value::Integer(2),
                Value::Null,
                Value::Integer(4),
                Value::Integer(5),
            ],
        )
        .unwrap();
        let counts = Vector::from_values(
            DataType::BigInt,
            &[
                Value::BigInt(2),
                Value::BigInt(0),
                Value::BigInt(3),
                Value::Null,
                Value::BigInt(-1),
            ],
        )
        .unwrap();
        let mut batch = Batch::new(vec![keys, counts]);
        // Rows outside the selection are not repeated.
        batch.selection = Some(vec![0, 1, 2, 3]);
        let out = ReplicateOp { count: 1 }
            .apply(batch, &ExecContext::unbounded())
            .unwrap()
            .unwrap();
        let rows: Vec<Value> = (0..out.len())
            .map(|i| out.columns[0].get_value(i))
            .collect();
        assert_eq!(
            rows,
            vec![
                Value::Integer(1),
                Value::Integer(1),
                Value::Null,
                Value::Null,
                Value::Null
            ]
        );
    }
}
