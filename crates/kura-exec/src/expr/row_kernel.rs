//! The kernel of scalar functions evaluated a row at a time: one loop that builds
//! their result vector (the date, text, math, bitwise, binary and interval modules share it).

use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};

/// A vector of `n` values of type `out`, the `r`-th computed by `value(r)`:
/// the kernel of functions evaluated a row at a time.
pub(super) fn row_by_row(
    name: &str,
    out: DataType,
    n: usize,
    mut value: impl FnMut(usize) -> ExecResult<Value>,
) -> ExecResult<Vector> {
    let mut res = Vector::new(out, n);
    for r in 0..n {
        let v = value(r)?;
        if !res.push_value(&v) {
            return Err(ExecError::Internal(format!("{name} gave {v}")));
        }
    }
    Ok(res)
}
