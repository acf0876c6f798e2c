//! Vectorized MIN / MAX accumulators for hash aggregation: typed arrays per group
//! (integers, decimals and dates as i128, doubles as f64) folded in tight loops over
//! a batch; text and booleans keep one value per group and copy a row only when it
//! becomes the new extreme.

use std::cmp::Ordering;

use kura_common::{ColumnData, DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};
use crate::expr::{cast_vector, from_i128_vector};

/// The type a 128-bit aggregate state (an exact sum, an integer extreme) is
/// written as when a spilling aggregation writes its states.
pub(crate) const WIDE_STATE: DataType = DataType::Decimal {
    precision: 38,
    scale: 0,
};

/// The extreme per group, in the representation of the argument's type.
#[derive(Debug)]
enum Slots {
    Int(Vec<i128>),
    Float(Vec<f64>),
    Other(Vec<Value>),
}

/// MIN or MAX of one aggregate call, one slot per group.
#[derive(Debug)]
pub struct MinMaxAcc {
    /// True for MIN, false for MAX.
    min: bool,
    /// Type of the argument (and so of the slots).
    arg_type: DataType,
    slots: Slots,
    /// Whether a group has seen a non-NULL value yet.
    seen: Vec<bool>,
}

impl MinMaxAcc {
    pub fn new(min: bool, arg_type: DataType) -> MinMaxAcc {
        let slots = match arg_type {
            DataType::SmallInt
            | DataType::Integer
            | DataType::BigInt
            | DataType::Decimal { .. }
            | DataType::Date
            | DataType::Timestamp => Slots::Int(Vec::new()),
            DataType::Double => Slots::Float(Vec::new()),
            _ => Slots::Other(Vec::new()),
        };
        MinMaxAcc {
            min,
            arg_type,
            slots,
            seen: Vec::new(),
        }
    }

    /// Whether `o` (new value compared with the current one) replaces the current one.
    fn wins(&self, o: Ordering) -> bool {
        if self.min {
            o.is_lt()
        } else {
            o.is_gt()
        }
    }

    pub fn grow(&mut self, groups: usize) {
        self.seen.resize(groups, false);
        match &mut self.slots {
            Slots::Int(v) => v.resize(groups, 0),
            Slots::Float(v) => v.resize(groups, 0.0),
            Slots::Other(v) => v.resize(groups, Value::Null),
        }
    }

    /// Folds the rows of `a` into groups `g` (row i belongs to group `g[i]`).
    pub fn update(&mut self, g: &[u32], a: &Vector) -> ExecResult<()> {
        let min = self.min;
        let valid = |i: usize| !a.is_null(i);
        match &mut self.slots {
            Slots::Int(slots) => {
                let mut fold = |i: usize, x: i128| {
                    let gi = g[i] as usize;
                    if !self.seen[gi] || (if min { x < slots[gi] } else { x > slots[gi] }) {
                        slots[gi] = x;
                        self.seen[gi] = true;
                    }
                };
                match &a.data {
                    ColumnData::I32(v) => (0..g.len())
                        .filter(|&i| valid(i))
                        .for_each(|i| fold(i, v[i] as i128)),
                    ColumnData::I64(v) => (0..g.len())
                        .filter(|&i| valid(i))
                        .for_each(|i| fold(i, v[i] as i128)),
                    ColumnData::I128(v) => (0..g.len())
                        .filter(|&i| valid(i))
                        .for_each(|i| fold(i, v[i])),
                    _ => return Err(self_mismatch(a)),
                }
            }
            Slots::Float(slots) => {
                let ColumnData::F64(v) = &a.data else {
                    return Err(self_mismatch(a));
                };
                for i in (0..g.len()).filter(|&i| valid(i)) {
                    let gi = g[i] as usize;
                    let o = v[i].total_cmp(&slots[gi]);
                    if !self.seen[gi] || (if min { o.is_lt() } else { o.is_gt() }) {
                        slots[gi] = v[i];
                        self.seen[gi] = true;
                    }
                }
            }
            Slots::Other(slots) => {
                for i in (0..g.len()).filter(|&i| valid(i)) {
                    let gi = g[i] as usize;
                    let better = !self.seen[gi] || {
                        let o = match (&a.data, &slots[gi]) {
                            // Text compares in place; the row is copied only if it wins.
                            (ColumnData::Str(s), Value::Text(cur)) => {
                                s.get_bytes(i).cmp(cur.as_bytes())
                            }
                            _ => a.get_value(i).total_cmp(&slots[gi]),
                        };
                        if min {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    };
                    if better {
                        slots[gi] = a.get_value(i);
                        self.seen[gi] = true;
                    }
                }
            }
        }
        Ok(())
    }

    /// Folds group `from` of `other` into group `to`.
    pub fn merge_group(&mut self, to: usize, other: &MinMaxAcc, from: usize) {
        if !other.seen[from] {
            return;
        }
        let o = match (&self.slots, &other.slots) {
            (Slots::Int(a), Slots::Int(b)) => b[from].cmp(&a[to]),
            (Slots::Float(a), Slots::Float(b)) => b[from].total_cmp(&a[to]),
            (Slots::Other(a), Slots::Other(b)) => b[from].total_cmp(&a[to]),
            _ => return,
        };
        if self.seen[to] && !self.wins(o) {
            return;
        }
        self.seen[to] = true;
        match (&mut self.slots, &other.slots) {
            (Slots::Int(a), Slots::Int(b)) => a[to] = b[from],
            (Slots::Float(a), Slots::Float(b)) => a[to] = b[from],
            (Slots::Other(a), Slots::Other(b)) => a[to] = b[from].clone(),
            _ => {}
        }
    }

    /// Folds group `from` into group `to` of this accumulator.
    pub fn carry(&mut self, from: usize, to: usize) {
        if !self.seen[from] {
            return;
        }
        let o = match &self.slots {
            Slots::Int(a) => a[from].cmp(&a[to]),
            Slots::Float(a) => a[from].total_cmp(&a[to]),
            Slots::Other(a) => a[from].total_cmp(&a[to]),
        };
        if self.seen[to] && !self.wins(o) {
            return;
        }
        self.seen[to] = true;
        match &mut self.slots {
            Slots::Int(a) => a[to] = a[from],
            Slots::Float(a) => a[to] = a[from],
            Slots::Other(a) => a[to] = a[from].clone(),
        }
    }

    /// Groups `from..to`'s extremes as one column a spilled aggregation
    /// writes (NULL where a group saw no value); [`MinMaxAcc::update`] folds
    /// it back. Integer slots keep their 128-bit form: no conversion either way.
    pub fn state(&self, from: usize, to: usize) -> ExecResult<Vector> {
        let validity = Some(self.seen[from..to].to_vec());
        Ok(match &self.slots {
            Slots::Int(v) => Vector {
                data_type: WIDE_STATE,
                data: ColumnData::I128(v[from..to].to_vec()),
                validity,
            },
            Slots::Float(v) => Vector {
                data_type: DataType::Double,
                data: ColumnData::F64(v[from..to].to_vec()),
                validity,
            },
            Slots::Other(v) => {
                Vector::from_values(self.arg_type, &v[from..to]).ok_or_else(|| {
                    ExecError::Internal(format!("min/max values of {}", self.arg_type))
                })?
            }
        })
    }

    /// The extreme of every group (NULL where a group saw no value), as type `out`.
    pub fn finish(&self, groups: usize, out: DataType) -> ExecResult<Vector> {
        let validity = Some(self.seen[..groups].to_vec());
        let v = match &self.slots {
            Slots::Int(v) => from_i128_vector(v[..groups].to_vec(), validity, self.arg_type)?,
            Slots::Float(v) => Vector {
                data_type: DataType::Double,
                data: ColumnData::F64(v[..groups].to_vec()),
                validity,
            },
            Slots::Other(v) => {
                Vector::from_values(self.arg_type, &v[..groups]).ok_or_else(|| {
                    ExecError::Internal(format!("min/max values of {}", self.arg_type))
                })?
            }
        };
        cast_vector(&v, out)
    }
}

fn self_mismatch(a: &Vector) -> ExecError {
    ExecError::Internal(format!("min/max accumulator does not fit {}", a.data_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(vals: &[Option<i32>]) -> Vector {
        let v: Vec<Value> = vals
            .iter()
            .map(|x| x.map_or(Value::Null, Value::Integer))
            .collect();
        Vector::from_values(DataType::Integer, &v).unwrap()
    }

    #[test]
    fn min_and_max_per_group_skip_nulls() {
        let a = ints(&[Some(5), None, Some(-3), Some(7), None]);
        let g = [0, 0, 0, 1, 2];
        let mut min = MinMaxAcc::new(true, DataType::Integer);
        let mut max = MinMaxAcc::new(false, DataType::Integer);
        for acc in [&mut min, &mut max] {
            acc.grow(3);
            acc.update(&g, &a).unwrap();
        }
        let lo = min.finish(3, DataType::Integer).unwrap();
        let hi = max.finish(3, DataType::Integer).unwrap();
        assert_eq!(lo.get_value(0), Value::Integer(-3));
        assert_eq!(hi.get_value(0), Value::Integer(5));
        assert_eq!(hi.get_value(1), Value::Integer(7));
        assert!(lo.is_null(2) && hi.is_null(2));
    }

    #[test]
    fn merging_keeps_the_extreme_and_text_compares_bytes() {
        let t = |s: &[&str]| {
            let v: Vec<Value> = s.iter().map(|x| Value::Text(x.to_string())).collect();
            Vector::from_values(DataType::Varchar(None), &v).unwrap()
        };
        let mut a = MinMaxAcc::new(false, DataType::Varchar(None));
        let mut b = MinMaxAcc::new(false, DataType::Varchar(None));
        a.grow(1);
        b.grow(1);
        a.update(&[0, 0], &t(&["pear", "apple"])).unwrap();
        b.update(&[0], &t(&["plum"])).unwrap();
        a.merge_group(0, &b, 0);
        let out = a.finish(1, DataType::Varchar(None)).unwrap();
        assert_eq!(out.get_value(0), Value::Text("plum".into()));
    }
}
