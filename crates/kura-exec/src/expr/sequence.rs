//! Sequence functions in expressions — `nextval`, `currval`, `setval` — over
//! a [`SequenceSource`] the binder looked up. They are volatile: every row
//! draws its own value, so nothing may fold, share or hoist them.

use std::fmt;
use std::sync::Arc;

use kura_common::{Batch, DataType, Value, Vector};

use super::PhysExpr;
use crate::error::{ExecError, ExecResult};

/// A sequence of the database, as a query draws from it.
pub trait SequenceSource: Send + Sync {
    /// Its name (for EXPLAIN and errors).
    fn name(&self) -> &str;
    /// The next `n` values (never given out again, even if the statement fails).
    fn next_values(&self, n: usize) -> ExecResult<Vec<i64>>;
    /// The value `nextval` last returned for it in this session (55000 before).
    fn current(&self) -> ExecResult<i64>;
    /// `setval`: continue after `value` (at `value` when `called` is false).
    fn set(&self, value: i64, called: bool) -> ExecResult<()>;
}

/// A shared handle on a [`SequenceSource`]; two handles are equal only when
/// they are the same binding (two `nextval` calls are two draws).
#[derive(Clone)]
pub struct SeqRef(pub Arc<dyn SequenceSource>);

impl fmt::Debug for SeqRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SeqRef({})", self.0.name())
    }
}

impl PartialEq for SeqRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Which sequence function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOp {
    /// `nextval(s)`
    Next,
    /// `currval(s)`
    Current,
    /// `setval(s, value [, is_called])`: `args` are the value and, when
    /// given, is_called.
    Set,
}

impl SeqOp {
    pub fn name(self) -> &'static str {
        match self {
            SeqOp::Next => "nextval",
            SeqOp::Current => "currval",
            SeqOp::Set => "setval",
        }
    }
}

/// Evaluates a sequence function over `batch` (one value per physical row).
pub(super) fn eval(
    seq: &SeqRef,
    op: SeqOp,
    args: &[PhysExpr],
    batch: &Batch,
) -> ExecResult<Vector> {
    let n = batch.num_rows;
    let values: Vec<Value> = match op {
        SeqOp::Next => seq
            .0
            .next_values(n)?
            .into_iter()
            .map(Value::BigInt)
            .collect(),
        SeqOp::Current => {
            let v = if n == 0 { 0 } else { seq.0.current()? };
            vec![Value::BigInt(v); n]
        }
        SeqOp::Set => {
            let value = args
                .first()
                .ok_or_else(|| ExecError::Internal("setval without a value".into()))?
                .eval(batch)?;
            let called = args.get(1).map(|a| a.eval(batch)).transpose()?;
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let v = match value.get_value(i) {
                    Value::Null => {
                        out.push(Value::Null);
                        continue;
                    }
                    v => v.as_i64().ok_or_else(|| {
                        ExecError::Internal(format!("setval of a non-integer {v}"))
                    })?,
                };
                let is_called = match called.as_ref().map(|c| c.get_value(i)) {
                    None => true,
                    Some(Value::Boolean(b)) => b,
                    Some(Value::Null) => {
                        out.push(Value::Null);
                        continue;
                    }
                    Some(other) => {
                        return Err(ExecError::Internal(format!(
                            "setval's is_called is {other}"
                        )))
                    }
                };
                seq.0.set(v, is_called)?;
                out.push(Value::BigInt(v));
            }
            out
        }
    };
    Vector::from_values(DataType::BigInt, &values)
        .ok_or_else(|| ExecError::Internal("sequence values".into()))
}
