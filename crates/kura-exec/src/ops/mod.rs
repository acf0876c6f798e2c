//! The operators: sources (table scan, in-memory batches), streaming transforms
//! (filter, project, limit, join probe) and breakers (join build, aggregation, sort,
//! result collection).

pub mod aggregate;
pub mod collect;
pub mod index;
pub mod join;
pub mod minmax;
mod parallel;
pub mod scan;
pub mod sort;
mod sort_normalized;
mod sort_order;
mod sort_run;
mod sort_spill;
pub mod streaming;
pub mod window;
mod window_frame;
mod window_layout;
mod window_value;

use kura_common::{Batch, ColumnData, DataType, Value, Vector};

use crate::error::ExecResult;
use crate::expr::PhysExpr;

/// Marks "no row" in a gather index (outer-join padding).
pub const NO_ROW: u32 = u32::MAX;

/// Gathers rows `idx` of `v`, producing NULL where the index is [`NO_ROW`].
pub fn take_or_null(v: &Vector, idx: &[u32]) -> Vector {
    if !idx.contains(&NO_ROW) {
        return v.take(idx);
    }
    if v.is_empty() {
        let mut out = Vector::new(v.data_type, idx.len());
        for _ in idx {
            out.push_null();
        }
        return out;
    }
    let safe: Vec<u32> = idx
        .iter()
        .map(|&i| if i == NO_ROW { 0 } else { i })
        .collect();
    let mut out = v.take(&safe);
    let mut validity = out.validity.take().unwrap_or_else(|| vec![true; idx.len()]);
    for (k, &i) in idx.iter().enumerate() {
        if i == NO_ROW {
            validity[k] = false;
        }
    }
    out.validity = Some(validity);
    out
}

/// Rows `sel` of the columns `read` picks, as a batch without selection; the
/// other columns are left empty, never to be read (the keys of a join probe,
/// an aggregation's arguments).
pub(crate) fn gather_read(columns: &[Vector], sel: &[u32], read: impl Fn(usize) -> bool) -> Batch {
    let columns = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if read(i) {
                c.take(sel)
            } else {
                Vector::new(c.data_type, 0)
            }
        })
        .collect();
    Batch {
        columns,
        num_rows: sel.len(),
        selection: None,
    }
}

/// Evaluates expressions over a compacted batch into a new batch.
pub fn project(exprs: &[PhysExpr], batch: &Batch) -> ExecResult<Batch> {
    let cols = exprs
        .iter()
        .map(|e| e.eval(batch))
        .collect::<ExecResult<Vec<_>>>()?;
    Ok(if cols.is_empty() {
        Batch::with_rows(batch.num_rows)
    } else {
        Batch::new(cols)
    })
}

/// Concatenates batches (all compacted) into one, keeping the row count for
/// column-less batches.
pub fn concat(types: &[DataType], batches: Vec<Batch>) -> Batch {
    let rows: usize = batches.iter().map(|b| b.len()).sum();
    if types.is_empty() {
        return Batch::with_rows(rows);
    }
    let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, rows)).collect();
    // Text sized exactly: grown by doubling, a sort's batch of long strings
    // could take twice its size.
    for (i, c) in cols.iter_mut().enumerate() {
        if let ColumnData::Str(s) = &mut c.data {
            let bytes: usize = batches
                .iter()
                .filter_map(|b| match &b.columns.get(i)?.data {
                    ColumnData::Str(t) => Some(match &b.selection {
                        None => (t.offsets[t.len()] - t.offsets[0]) as usize,
                        Some(sel) => sel
                            .iter()
                            .map(|&r| (t.offsets[r as usize + 1] - t.offsets[r as usize]) as usize)
                            .sum(),
                    }),
                    _ => None,
                })
                .sum();
            s.data = Vec::with_capacity(bytes);
        }
    }
    for b in batches {
        let b = crate::expr::compact_batch(b);
        for (c, v) in cols.iter_mut().zip(&b.columns) {
            c.append(v);
        }
    }
    Batch::new(cols)
}

/// Splits a large batch into batches of at most `BATCH_SIZE` rows.
pub fn split(batch: Batch) -> Vec<Batch> {
    split_rows(batch, kura_common::BATCH_SIZE)
}

/// [`split`] into batches of at most `rows` rows (at least one).
pub fn split_rows(batch: Batch, rows: usize) -> Vec<Batch> {
    let rows = rows.max(1);
    let n = batch.len();
    if n <= rows {
        return vec![batch];
    }
    let batch = crate::expr::compact_batch(batch);
    (0..n)
        .step_by(rows)
        .map(|s| {
            let len = rows.min(n - s);
            if batch.columns.is_empty() {
                Batch::with_rows(len)
            } else {
                Batch::new(batch.columns.iter().map(|c| c.slice(s, len)).collect())
            }
        })
        .collect()
}

/// Builds a batch of constant rows of the given types.
pub fn rows_to_batch(types: &[DataType], rows: &[Vec<Value>]) -> ExecResult<Batch> {
    if types.is_empty() {
        return Ok(Batch::with_rows(rows.len()));
    }
    let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, rows.len())).collect();
    for r in rows {
        for (c, v) in cols.iter_mut().zip(r) {
            let v = crate::expr::cast_value(v, c.data_type)?;
            c.push_value(&v);
        }
    }
    Ok(Batch::new(cols))
}
