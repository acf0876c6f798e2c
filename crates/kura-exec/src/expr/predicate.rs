//! Predicates as filters: a batch's selection narrowed conjunct by conjunct,
//! OR by the rows each side leaves, and comparisons with constants straight
//! into selection vectors (see `select`).

use kura_common::{Batch, Vector};

use super::conjuncts::flatten;
use super::eval::bools;
use super::{BinaryOp, PhysExpr};
use crate::error::ExecResult;

/// Rows (physical indexes) where a BOOLEAN vector is TRUE (not FALSE, not NULL).
pub fn selection_of(v: &Vector) -> ExecResult<Vec<u32>> {
    let b = bools(v)?;
    Ok(match &v.validity {
        None => (0..b.len() as u32).filter(|&i| b[i as usize]).collect(),
        Some(valid) => (0..b.len() as u32)
            .filter(|&i| b[i as usize] && valid[i as usize])
            .collect(),
    })
}

/// Applies a predicate to a batch: the result keeps only rows where it is TRUE.
/// Conjunctions are applied one conjunct at a time on the surviving rows, so a
/// later conjunct never sees rows an earlier one rejected.
pub fn eval_predicate(pred: &PhysExpr, batch: Batch) -> ExecResult<Batch> {
    if let PhysExpr::Binary {
        op: BinaryOp::And, ..
    } = pred
    {
        let mut parts = Vec::new();
        flatten(pred, &mut parts);
        let mut batch = batch;
        let mut i = 0;
        while i < parts.len() {
            if batch.is_empty() {
                return Ok(batch);
            }
            // Two bounds of one column in a row are one range test.
            let range = parts
                .get(i + 1)
                .and_then(|next| super::select::select_column_range(parts[i], next, &batch));
            if let Some(sel) = range {
                let all = batch.selection.is_none() && sel.len() == batch.num_rows;
                batch.selection = (!all).then_some(sel);
                i += 2;
            } else {
                batch = eval_predicate(parts[i], batch)?;
                i += 1;
            }
        }
        return Ok(batch);
    }
    if let PhysExpr::Binary {
        op: BinaryOp::Or,
        left,
        right,
        ..
    } = pred
    {
        return eval_or(left, right, batch);
    }
    let direct = super::select::select_column_constant(pred, &batch)
        .or_else(|| super::select::select_column_column(pred, &batch));
    if let Some(sel) = direct {
        let all = batch.selection.is_none() && sel.len() == batch.num_rows;
        return Ok(Batch {
            selection: (!all).then_some(sel),
            ..batch
        });
    }
    let Some(live) = batch.selection.as_ref() else {
        let v = pred.eval(&batch)?;
        let sel = selection_of(&v)?;
        let n = batch.num_rows;
        return Ok(Batch {
            selection: if sel.len() == n { None } else { Some(sel) },
            ..batch
        });
    };
    // Later conjuncts: gather only the columns this one reads (at the live rows,
    // so no rejected row reaches it) and narrow the selection, instead of
    // compacting every column of the batch once per conjunct.
    let mut used = Vec::new();
    pred.columns(&mut used);
    let cols = batch
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if used.contains(&i) {
                c.take(live)
            } else {
                Vector::new(c.data_type, 0)
            }
        })
        .collect();
    let gathered = Batch {
        columns: cols,
        selection: None,
        num_rows: live.len(),
    };
    let v = pred.eval(&gathered)?;
    let keep = selection_of(&v)?;
    let sel: Vec<u32> = keep.iter().map(|&j| live[j as usize]).collect();
    Ok(Batch {
        selection: Some(sel),
        ..batch
    })
}

/// `left OR right` as a filter: the rows where the left side is TRUE are kept,
/// and the right side is tested only on the others (a row is kept when either
/// side is TRUE, so NULLs need nothing more). Each side narrows in turn as a
/// conjunction does: TPC-H Q19's three (brand, containers, size) branches each
/// compare containers only at their brand's rows, not at every part.
fn eval_or(left: &PhysExpr, right: &PhysExpr, batch: Batch) -> ExecResult<Batch> {
    let n = batch.num_rows;
    let live: Vec<u32> = match &batch.selection {
        Some(s) => s.clone(),
        None => (0..n as u32).collect(),
    };
    let b = eval_predicate(left, batch)?;
    let Some(by_left) = b.selection else {
        return Ok(b);
    };
    if by_left.len() == live.len() {
        return Ok(Batch {
            selection: Some(by_left),
            ..b
        });
    }
    // The live rows the left side did not keep (both ascending).
    let mut rest = Vec::with_capacity(live.len() - by_left.len());
    let mut kept = by_left.iter().peekable();
    for &r in &live {
        if kept.next_if_eq(&&r).is_none() {
            rest.push(r);
        }
    }
    let b = eval_predicate(
        right,
        Batch {
            selection: Some(rest.clone()),
            ..b
        },
    )?;
    // No selection back means every row given passed.
    let by_right = b.selection.clone().unwrap_or(rest);
    // Both ascending and disjoint: one merge.
    let mut sel = Vec::with_capacity(by_left.len() + by_right.len());
    let (mut i, mut j) = (0, 0);
    while i < by_left.len() || j < by_right.len() {
        if j == by_right.len() || (i < by_left.len() && by_left[i] < by_right[j]) {
            sel.push(by_left[i]);
            i += 1;
        } else {
            sel.push(by_right[j]);
            j += 1;
        }
    }
    let all = sel.len() == n;
    Ok(Batch {
        selection: (!all).then_some(sel),
        ..b
    })
}

#[cfg(test)]
mod tests {
    use kura_common::{Batch, DataType, Value, Vector};

    use super::*;

    fn col(index: usize) -> PhysExpr {
        PhysExpr::Column {
            index,
            data_type: DataType::Boolean,
        }
    }

    fn binary(op: BinaryOp, left: PhysExpr, right: PhysExpr) -> PhysExpr {
        PhysExpr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
            data_type: DataType::Boolean,
        }
    }

    #[test]
    fn or_filters_keep_the_rows_either_side_makes_true() {
        // Every combination of TRUE, FALSE and NULL in three columns; the
        // filter must keep exactly the rows whose evaluated predicate is TRUE,
        // with and without a selection coming in.
        let states = [Value::Boolean(true), Value::Boolean(false), Value::Null];
        let mut cols = [Vec::new(), Vec::new(), Vec::new()];
        for a in &states {
            for b in &states {
                for c in &states {
                    cols[0].push(a.clone());
                    cols[1].push(b.clone());
                    cols[2].push(c.clone());
                }
            }
        }
        let n = cols[0].len();
        let preds = [
            binary(BinaryOp::Or, col(0), col(1)),
            binary(BinaryOp::Or, binary(BinaryOp::And, col(0), col(1)), col(2)),
            binary(BinaryOp::And, binary(BinaryOp::Or, col(0), col(1)), col(2)),
            binary(BinaryOp::Or, col(0), binary(BinaryOp::Or, col(1), col(2))),
        ];
        for pred in &preds {
            for every in [1usize, 2, 5] {
                let mut batch = Batch::new(
                    cols.iter()
                        .map(|c| Vector::from_values(DataType::Boolean, c).unwrap())
                        .collect(),
                );
                if every > 1 {
                    batch.selection = Some((0..n as u32).step_by(every).collect());
                }
                let live: Vec<u32> = batch
                    .selection
                    .clone()
                    .unwrap_or_else(|| (0..n as u32).collect());
                let general = pred.eval(&batch).unwrap();
                let expect: Vec<u32> = live
                    .into_iter()
                    .filter(|&r| general.get_value(r as usize) == Value::Boolean(true))
                    .collect();
                let got = eval_predicate(pred, batch).unwrap();
                let got = got.selection.unwrap_or_else(|| (0..n as u32).collect());
                assert_eq!(got, expect, "{pred} every {every}");
            }
        }
    }
}
