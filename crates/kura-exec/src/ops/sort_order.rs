//! The order of a sort's run (paper 003's sort breaker): the rows gathered
//! into one batch, their keys evaluated and the permutation that sorts them;
//! gathered into a run in memory, or written to disk a block at a time.

use std::cmp::Ordering;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use kura_common::memobj;
use kura_common::{Batch, ColumnData, DataType, Vector};

use super::concat;
use super::sort_normalized::Normalized;
use super::sort_run::{cmp_rows, Run};
use crate::error::ExecResult;
use crate::expr::PhysExpr;
use crate::plan::SortKey;

/// Sorts `idx` by `cmp`, asking `cancel` every `every` comparisons; a cancel
/// unwinds out of the sort (without the panic hook: it is not a panic).
/// Answering Equal from then on instead would break the total order the
/// standard sort checks, and it panics on that.
pub(super) fn sort_canceling(
    idx: &mut [u32],
    mut cmp: impl FnMut(u32, u32) -> Ordering,
    cancel: &dyn Fn() -> ExecResult<()>,
    every: u32,
) -> ExecResult<()> {
    let mut compared = 0u32;
    let mut stopped = None;
    let sorted = catch_unwind(AssertUnwindSafe(|| {
        idx.sort_by(|&x, &y| {
            compared = compared.wrapping_add(1);
            if compared.is_multiple_of(every) {
                if let Err(e) = cancel() {
                    stopped = Some(e);
                    resume_unwind(Box::new(SortCanceled));
                }
            }
            cmp(x, y)
        })
    }));
    match (sorted, stopped) {
        (Ok(()), _) => Ok(()),
        (Err(payload), Some(e)) if payload.is::<SortCanceled>() => Err(e),
        (Err(payload), _) => resume_unwind(payload),
    }
}

/// The payload a canceled comparison sort unwinds with.
struct SortCanceled;

/// A run's rows in sort order, not yet gathered: every row in one batch, the
/// evaluated keys and the permutation that sorts them. Gathered whole into a
/// [`Run`] for a merge in memory, or a block at a time into a run on disk, so
/// that a spilled run never has a sorted copy of itself beside it.
pub(super) struct Ordered {
    /// Every row; a column that is also a sort key is held in `keys` instead
    /// (see `moved`), not copied there.
    all: Batch,
    keys: Vec<Vector>,
    /// For each column of `all`, the key that holds it, when it was moved.
    moved: Vec<Option<usize>>,
    /// Row numbers of `all` in sort order, cut to the limit.
    idx: Vec<u32>,
    /// The first key's order-preserving integers in sort order, when it has them.
    prefix: Option<Vec<u64>>,
    /// Spans named for the memory profiler, released when dropped.
    named: Vec<(usize, usize)>,
}

impl Ordered {
    /// Rows in the run.
    pub(super) fn len(&self) -> usize {
        self.idx.len()
    }

    fn column(&self, i: usize) -> &Vector {
        match self.moved[i] {
            Some(k) => &self.keys[k],
            None => &self.all.columns[i],
        }
    }

    /// Rows `start..start + len` of the run in sort order: the columns, then
    /// the keys.
    pub(super) fn block(&self, start: usize, len: usize) -> Vec<Vector> {
        let idx = &self.idx[start..start + len];
        (0..self.all.columns.len())
            .map(|i| self.column(i).take(idx))
            .chain(self.keys.iter().map(|k| k.take(idx)))
            .collect()
    }

    /// The whole run gathered in sort order.
    pub(super) fn gather(mut self, cancel: &dyn Fn() -> ExecResult<()>) -> ExecResult<Run> {
        cancel()?;
        let rows = if self.all.columns.is_empty() {
            Batch::with_rows(self.idx.len())
        } else {
            let mut columns = Vec::with_capacity(self.all.columns.len());
            for i in 0..self.all.columns.len() {
                cancel()?;
                columns.push(self.column(i).take(&self.idx));
            }
            Batch::new(columns)
        };
        let keys = self.keys.iter().map(|k| k.take(&self.idx)).collect();
        Ok(Run {
            rows,
            keys,
            prefix: self.prefix.take(),
        })
    }
}

impl Drop for Ordered {
    fn drop(&mut self) {
        for &(start, len) in &self.named {
            memobj::unregister(start, len);
        }
    }
}

/// Sorts `batches` by `keys` into a run, cut to `limit` rows. `cancel` is
/// asked between the steps and between columns: a run of millions of wide
/// rows (a top-N over a cross product) takes seconds to sort and gather.
pub(super) fn sort_run(
    sort_keys: &[SortKey],
    types: &[DataType],
    limit: Option<usize>,
    batches: Vec<Batch>,
    cancel: &dyn Fn() -> ExecResult<()>,
) -> ExecResult<Run> {
    order_rows(sort_keys, types, limit, batches, cancel)?.gather(cancel)
}

/// The keys of `all` by `sort_keys`: a key that is a plain column takes that
/// column (the first key naming it), the others are evaluated. Returns the
/// keys and, per column, the key it moved to.
fn take_keys(
    sort_keys: &[SortKey],
    all: &mut Batch,
) -> ExecResult<(Vec<Vector>, Vec<Option<usize>>)> {
    let mut moved = vec![None; all.columns.len()];
    let mut plain = vec![None; sort_keys.len()];
    for (k, key) in sort_keys.iter().enumerate() {
        if let PhysExpr::Column { index, .. } = key.expr {
            if index < moved.len() && moved[index].is_none() {
                moved[index] = Some(k);
                plain[k] = Some(index);
            }
        }
    }
    // Evaluated first, while every column is still in `all`.
    let mut keys = sort_keys
        .iter()
        .zip(&plain)
        .map(|(key, p)| match p {
            Some(_) => Ok(None),
            None => key.expr.eval(all).map(Some),
        })
        .collect::<ExecResult<Vec<_>>>()?;
    for (k, p) in plain.iter().enumerate() {
        if let Some(i) = *p {
            let empty = Vector::new(all.columns[i].data_type, 0);
            keys[k] = Some(std::mem::replace(&mut all.columns[i], empty));
        }
    }
    Ok((keys.into_iter().flatten().collect(), moved))
}

/// Puts `batches` in the order of `sort_keys`, cut to `limit` rows, without
/// gathering them: see [`Ordered`].
pub(super) fn order_rows(
    sort_keys: &[SortKey],
    types: &[DataType],
    limit: Option<usize>,
    batches: Vec<Batch>,
    cancel: &dyn Fn() -> ExecResult<()>,
) -> ExecResult<Ordered> {
    let mut all = concat(types, batches);
    cancel()?;
    let (keys, moved) = take_keys(sort_keys, &mut all)?;
    cancel()?;
    let mut idx: Vec<u32> = (0..all.num_rows as u32).collect();
    let mut ordered = Ordered {
        named: Vec::new(),
        all,
        keys,
        moved,
        idx: Vec::new(),
        prefix: None,
    };
    ordered.named = name_sort_buffers(&ordered.all, &ordered.keys, &idx);
    let keys = &ordered.keys;
    let first_int = sort_keys
        .first()
        .zip(keys.first())
        .and_then(|(k, v)| int_prefix(k, v));
    // One integer key sorts fastest as pairs below; several keys, or a key of
    // another type, by their normalized bytes.
    let normalized = match (&first_int, keys.len()) {
        (Some(_), 1) => None,
        _ => Normalized::new(sort_keys, keys, idx.len()),
    };
    if let Some(norm) = normalized {
        sort_canceling(&mut idx, |x, y| norm.cmp(x, y), cancel, 65_536)?;
        idx.truncate(limit.unwrap_or(usize::MAX));
        // A merge of runs compares the first key's integers first.
        ordered.prefix = first_int.map(|p| idx.iter().map(|&r| p[r as usize]).collect());
        ordered.idx = idx;
        return Ok(ordered);
    }
    match first_int {
        Some(prefix) => {
            // The first key as order-preserving integers beside the row
            // numbers: most comparisons read one contiguous array, and the
            // row number breaks ties last, so the unstable sort is stable.
            let (rest, rest_keys) = (&sort_keys[1..], &keys[1..]);
            let mut pairs: Vec<(u64, u32)> = prefix.into_iter().zip(0u32..).collect();
            pairs.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| cmp_rows(rest, rest_keys, a.1 as usize, rest_keys, b.1 as usize))
                    .then(a.1.cmp(&b.1))
            });
            pairs.truncate(limit.unwrap_or(usize::MAX));
            let mut sorted = Vec::with_capacity(pairs.len());
            for (slot, (p, row)) in idx.iter_mut().zip(pairs) {
                *slot = row;
                sorted.push(p);
            }
            ordered.prefix = Some(sorted);
        }
        None => {
            // Comparing rows key by key is slow (a second for a few million
            // rows): a cancel is asked every 65,536 comparisons.
            sort_canceling(
                &mut idx,
                |x, y| cmp_rows(sort_keys, keys, x as usize, keys, y as usize),
                cancel,
                65_536,
            )?;
        }
    }
    if let Some(l) = limit {
        idx.truncate(l);
    }
    ordered.idx = idx;
    Ok(ordered)
}

/// The values of an integer sort key without NULLs as unsigned integers in the
/// key's order (the sign bit flipped; every bit flipped for a descending key),
/// or `None` for other keys.
pub(super) fn int_prefix(key: &SortKey, v: &Vector) -> Option<Vec<u64>> {
    if v.validity.as_ref().is_some_and(|b| b.iter().any(|ok| !ok)) {
        return None;
    }
    let flip = if key.descending { u64::MAX } else { 0 };
    let image = |x: i64| (x as u64 ^ 1 << 63) ^ flip;
    match &v.data {
        ColumnData::I32(x) => Some(x.iter().map(|&x| image(x as i64)).collect()),
        ColumnData::I64(x) => Some(x.iter().map(|&x| image(x)).collect()),
        _ => None,
    }
}

/// Names a run's memory for the memory profiler while it is sorted: the
/// gathered input rows, the evaluated keys and the permutation. Returns the
/// spans to release afterwards (none when profiling is off).
fn name_sort_buffers(all: &Batch, keys: &[Vector], idx: &[u32]) -> Vec<(usize, usize)> {
    if !memobj::enabled() {
        return Vec::new();
    }
    let mut named = Vec::new();
    let mut name = |spans: Vec<(usize, usize)>, what: &'static str| {
        for (start, len) in spans {
            memobj::register(start, len, || {
                memobj::Object::new(memobj::ObjectKind::SortBuffer, what)
            });
            named.push((start, len));
        }
    };
    for c in &all.columns {
        name(c.data.spans(), "sort buffer: input rows");
    }
    for k in keys {
        name(k.data.spans(), "sort buffer: keys");
    }
    name(
        vec![(idx.as_ptr() as usize, std::mem::size_of_val(idx))],
        "sort buffer: permutation",
    );
    named
}
