//! Ordered aggregation: grouping by runs when the input comes clustered on the
//! group key — batches that are pieces of a table stored in the key's order
//! (see [`crate::source::TableSource::ascending`] and
//! [`crate::plan::clustered_on`]). Within such a batch equal keys are adjacent,
//! and every run but the first and the last holds all the rows of its key
//! (they are bounded on both sides by other keys' rows, and a key's rows are
//! contiguous in the table). Those groups are aggregated by run, without a
//! group table, and handed on at once: the aggregation streams, so TPC-H Q18's
//! order-key groups of lineitem (1.5 M at SF 1) never sit in a table nor spill
//! under a memory limit, and its HAVING filter runs as they come. The first and
//! last runs of a batch may go on in other batches (the morsel's next batch,
//! another worker's morsel): their rows go to a hash aggregation, whose few
//! groups — at most two per batch — are emitted as the transform's tail once
//! every batch has passed.

use std::sync::Mutex;

use kura_common::{Batch, ColumnData, Vector};

use super::state::AggState;
use super::AggregateSink;
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::compact_batch;
use crate::pipeline::{LocalState, Sink, Transform};

/// Streams the groups of a single key its input is clustered on.
pub struct OrderedAggregateOp {
    /// The aggregation's calls and results; it also aggregates the batches'
    /// first and last runs by hash.
    agg: AggregateSink,
    /// Hash states of the edge runs, taken by a batch and put back after it
    /// (as many as batches ran at once): workers do not wait on each other.
    edges: Mutex<Vec<LocalState>>,
}

impl OrderedAggregateOp {
    /// `agg` groups by one key, which the input is clustered on.
    pub fn new(agg: AggregateSink) -> Self {
        OrderedAggregateOp {
            agg,
            edges: Mutex::new(Vec::new()),
        }
    }

    /// Aggregates rows whose groups may go on in other batches by hash.
    fn to_edges(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let taken = self.edges.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut local = taken.unwrap_or_else(|| self.agg.local());
        let done = self.agg.consume(&mut local, batch, ctx);
        self.edges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(local);
        done
    }
}

/// Where each run of equal values of `key` starts (0 first), when its values
/// never decrease and none is NULL; `None` otherwise (the batch is then
/// aggregated by hash as a whole).
fn run_starts(key: &Vector) -> Option<Vec<u32>> {
    fn runs<T: PartialOrd>(x: &[T]) -> Option<Vec<u32>> {
        let mut starts = Vec::with_capacity(x.len() / 2 + 1);
        starts.push(0);
        for i in 1..x.len() {
            if x[i] != x[i - 1] {
                if x[i] < x[i - 1] {
                    return None;
                }
                starts.push(i as u32);
            }
        }
        Some(starts)
    }
    if key.is_empty() || key.null_count() > 0 {
        return None;
    }
    match &key.data {
        ColumnData::I32(x) => runs(x),
        ColumnData::I64(x) => runs(x),
        ColumnData::I128(x) => runs(x),
        _ => None,
    }
}

impl Transform for OrderedAggregateOp {
    fn apply(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let batch = compact_batch(batch);
        let n = batch.num_rows;
        if n == 0 {
            return Ok(Some(Batch::with_rows(0)));
        }
        let key = self.agg.group_by[0].eval(&batch)?;
        let starts = match run_starts(&key) {
            // A batch out of order cannot come from a table stored in order;
            // hashing it keeps the answer right all the same.
            Some(s) if s.len() > 2 => s,
            _ => {
                self.to_edges(batch, ctx)?;
                return Ok(Some(Batch::with_rows(0)));
            }
        };
        let runs = starts.len();
        let (first_end, last_start) = (starts[1], starts[runs - 1]);
        let edge_rows: Vec<u32> = (0..first_end).chain(last_start..n as u32).collect();
        let edge = Batch::new(batch.columns.iter().map(|c| c.take(&edge_rows)).collect());
        self.to_edges(edge, ctx)?;

        // Groups 0.. are the inner runs; the edge rows go to one more group,
        // dropped from the output (cheaper than cutting them off every column).
        let inner = runs - 2;
        let mut ids = vec![inner as u32; n];
        for r in 1..runs - 1 {
            ids[starts[r] as usize..starts[r + 1] as usize].fill((r - 1) as u32);
        }
        let mut picks = starts[1..runs - 1].to_vec();
        picks.push(0);
        let mut st = AggState::new(&self.agg.key_types, &self.agg.calls, None);
        st.keys = vec![key.take(&picks)];
        st.add_groups(inner + 1);
        self.agg.update(&mut st, &ids, batch, ctx)?;
        let built = self.agg.result_of(&mut st);
        // What the accumulators reserved (kept text values) goes on with the
        // rows, uncounted like any batch in flight.
        ctx.memory.release(st.charged);
        let mut out = built?;
        let mut out = if out.len() == 1 {
            out.pop().unwrap_or_else(|| Batch::with_rows(0))
        } else {
            let types: Vec<_> = out[0].columns.iter().map(|c| c.data_type).collect();
            crate::ops::concat(&types, out)
        };
        out.selection = Some((0..inner as u32).collect());
        Ok(Some(out))
    }

    fn tail(&self, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let edges = std::mem::take(&mut *self.edges.lock().unwrap_or_else(|e| e.into_inner()));
        if edges.is_empty() {
            return Ok(None);
        }
        for local in edges {
            self.agg.merge(local, ctx)?;
        }
        self.agg.finish(ctx)?;
        let mut batches = self.agg.take();
        if let Some(file) = self.agg.take_spilled() {
            batches.extend(file.read_all()?);
        }
        let Some(first) = batches.first() else {
            return Ok(None);
        };
        let types: Vec<_> = first.columns.iter().map(|c| c.data_type).collect();
        Ok(Some(crate::ops::concat(&types, batches)))
    }
}

#[cfg(test)]
mod tests {
    use super::run_starts;
    use kura_common::{DataType, Value, Vector};

    fn ints(v: &[i64]) -> Vector {
        let values: Vec<Value> = v.iter().map(|&x| Value::BigInt(x)).collect();
        Vector::from_values(DataType::BigInt, &values).unwrap()
    }

    #[test]
    fn runs_start_where_the_key_changes_and_not_in_a_descending_batch() {
        let v = ints(&[1, 1, 2, 5, 5, 5, 9]);
        assert_eq!(run_starts(&v), Some(vec![0, 2, 3, 6]));
        let down = ints(&[1, 3, 2]);
        assert_eq!(run_starts(&down), None);
        let text = Vector::new(DataType::Varchar(None), 0);
        assert_eq!(run_starts(&text), None);
    }
}
