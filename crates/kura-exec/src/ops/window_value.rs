//! Window functions that read other rows or the partition's size: `lag`,
//! `lead`, `ntile`, `percent_rank`, `cume_dist`, and `first_value`,
//! `last_value`, `nth_value` over the frame.

use kura_common::{ColumnData, DataType, Vector};

use super::window_frame::{pick, Bounds};
use super::window_layout::Layout;
use super::{take_or_null, NO_ROW};
use crate::error::{ExecError, ExecResult};
use crate::expr::ints_of;

fn bad(code: &'static str, message: &str) -> ExecError {
    ExecError::WindowArgument {
        code,
        message: message.into(),
    }
}

fn doubles(v: Vec<f64>) -> Vector {
    Vector {
        data_type: DataType::Double,
        data: ColumnData::F64(v),
        validity: None,
    }
}

/// Rows of each row's partition, and rows up to its last peer.
fn sizes(l: &Layout, i: usize) -> (f64, f64) {
    let p = l.partition[i] as usize;
    let begin = l.part_begin[p];
    let total = (l.part_end[p] - begin) as f64;
    let upto = (l.group_end[l.peer[i] as usize] - begin) as f64;
    (total, upto)
}

/// `cume_dist()`: the fraction of the partition up to the current row's last peer.
pub(super) fn cume_dist(l: &Layout) -> Vector {
    doubles(
        (0..l.peer.len())
            .map(|i| {
                let (total, upto) = sizes(l, i);
                upto / total
            })
            .collect(),
    )
}

/// `percent_rank()`: `(rank - 1) / (rows - 1)`, 0 in a one-row partition.
pub(super) fn percent_rank(l: &Layout) -> Vector {
    doubles(
        (0..l.peer.len())
            .map(|i| {
                let p = l.partition[i] as usize;
                let begin = l.part_begin[p];
                let total = (l.part_end[p] - begin) as f64;
                let rank = (l.group_begin[l.peer[i] as usize] - begin) as f64;
                if total > 1.0 {
                    rank / (total - 1.0)
                } else {
                    0.0
                }
            })
            .collect(),
    )
}

/// `ntile(n)`, as PostgreSQL computes it: `n` is read at the partition's first
/// row (and again at later rows while it is NULL, whose result is NULL); the
/// first `rows % n` buckets hold one row more than the others.
pub(super) fn ntile(l: &Layout, n: &Vector) -> ExecResult<Vector> {
    let rows = l.peer.len();
    let n_vals = ints_of(n);
    let mut out = Vec::with_capacity(rows);
    let mut validity = vec![true; rows];
    // The partition's (bucket, rows in it so far, rows per bucket, buckets
    // holding one row more), once its `n` is known.
    let mut state: Option<(i64, i64, i64, i64)> = None;
    for i in 0..rows {
        let p = l.partition[i] as usize;
        if l.part_begin[p] as usize == i {
            state = None;
        }
        let st = match &mut state {
            Some(st) => st,
            None => {
                if n.is_null(i) {
                    validity[i] = false;
                    out.push(0);
                    continue;
                }
                let buckets = n_vals[i];
                if buckets <= 0 {
                    return Err(bad("22014", "argument of ntile must be greater than zero"));
                }
                let total = (l.part_end[p] - l.part_begin[p]) as i128;
                let mut boundary = total / buckets;
                let mut remainder = 0;
                if boundary <= 0 {
                    boundary = 1;
                } else {
                    remainder = total % buckets;
                    if remainder != 0 {
                        boundary += 1;
                    }
                }
                state.insert((1, 0, boundary as i64, remainder as i64))
            }
        };
        let (bucket, in_bucket, boundary, remainder) = st;
        *in_bucket += 1;
        if *boundary < *in_bucket {
            if *remainder != 0 && *bucket == *remainder {
                *remainder = 0;
                *boundary -= 1;
            }
            *bucket += 1;
            *in_bucket = 1;
        }
        out.push(*bucket as i32);
    }
    Ok(Vector {
        data_type: DataType::Integer,
        data: ColumnData::I32(out),
        validity: validity.contains(&false).then_some(validity),
    })
}

/// `lag` / `lead`: the value `offset` rows before / after in the partition, else
/// the default; NULL when the offset is NULL.
pub(super) fn shift(
    l: &Layout,
    lead: bool,
    value: &Vector,
    offset: &Vector,
    default: &Vector,
) -> Vector {
    let rows = l.peer.len();
    let off = ints_of(offset);
    // Rows of `value` then of `default`: row `rows + i` is row i's default.
    let mut both = value.clone();
    both.append(default);
    let idx: Vec<u32> = (0..rows)
        .map(|i| {
            if offset.is_null(i) {
                return NO_ROW;
            }
            let p = l.partition[i] as usize;
            let (pb, pe) = (l.part_begin[p] as i128, l.part_end[p] as i128);
            let t = if lead {
                i as i128 + off[i]
            } else {
                i as i128 - off[i]
            };
            if (pb..pe).contains(&t) {
                t as u32
            } else {
                (rows + i) as u32
            }
        })
        .collect();
    take_or_null(&both, &idx)
}

/// `first_value` / `last_value` / `nth_value(value, n)` over each row's frame.
pub(super) fn frame_value(
    b: &Bounds,
    value: &Vector,
    nth: Option<&Vector>,
    last: bool,
) -> ExecResult<Vector> {
    let idx = match nth {
        None => pick(b, |_| Some(0), last),
        Some(n) => {
            let vals = ints_of(n);
            if (0..vals.len()).any(|i| !n.is_null(i) && vals[i] <= 0) {
                return Err(bad(
                    "22016",
                    "argument of nth_value must be greater than zero",
                ));
            }
            pick(
                b,
                |i| (!n.is_null(i)).then(|| (vals[i] - 1).min(u32::MAX as i128) as u64),
                false,
            )
        }
    };
    Ok(take_or_null(value, &idx))
}
