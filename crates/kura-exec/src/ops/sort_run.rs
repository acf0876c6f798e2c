//! The order a sort keeps: values and rows compared key by key (NULLs first or
//! last per key, CHAR without its padding), and a sorted run with its evaluated keys.

use std::cmp::Ordering;

use kura_common::{Batch, ColumnData, DataType, Vector};

use crate::expr::compare_trim;
use crate::plan::SortKey;

/// Compares value `i` of `a` with value `j` of `b` (same type), NULLs last.
pub fn cmp_values(a: &Vector, i: usize, b: &Vector, j: usize) -> Ordering {
    match (a.is_null(i), b.is_null(j)) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    match (&a.data, &b.data) {
        (ColumnData::Bool(x), ColumnData::Bool(y)) => x[i].cmp(&y[j]),
        (ColumnData::I32(x), ColumnData::I32(y)) => x[i].cmp(&y[j]),
        (ColumnData::I64(x), ColumnData::I64(y)) => x[i].cmp(&y[j]),
        // Intervals order by span; equal spans (`1 mon`, `30 days`) are peers.
        (ColumnData::I128(x), ColumnData::I128(y)) if a.data_type == DataType::Interval => {
            (x[i] >> 64).cmp(&(y[j] >> 64))
        }
        (ColumnData::I128(x), ColumnData::I128(y)) => x[i].cmp(&y[j]),
        (ColumnData::F64(x), ColumnData::F64(y)) => x[i].total_cmp(&y[j]),
        (ColumnData::Str(x), ColumnData::Str(y)) => {
            // CHAR(n) ignores trailing blanks; for VARCHAR they are part of the value.
            if matches!(a.data_type, DataType::Char(_)) || matches!(b.data_type, DataType::Char(_))
            {
                compare_trim(x.get_bytes(i)).cmp(compare_trim(y.get_bytes(j)))
            } else {
                x.get_bytes(i).cmp(y.get_bytes(j))
            }
        }
        _ => a.get_value(i).total_cmp(&b.get_value(j)),
    }
}

pub(crate) fn cmp_rows(
    keys: &[SortKey],
    a: &[Vector],
    i: usize,
    b: &[Vector],
    j: usize,
) -> Ordering {
    for (k, key) in keys.iter().enumerate() {
        let (an, bn) = (a[k].is_null(i), b[k].is_null(j));
        let o = if an || bn {
            match (an, bn) {
                (true, true) => Ordering::Equal,
                (true, false) if key.nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, _) if key.nulls_first => Ordering::Greater,
                _ => Ordering::Less,
            }
        } else {
            let o = cmp_values(&a[k], i, &b[k], j);
            if key.descending {
                o.reverse()
            } else {
                o
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A sorted run: the rows and their evaluated sort keys.
pub(super) struct Run {
    pub rows: Batch,
    pub keys: Vec<Vector>,
    /// The first key's order-preserving integers (see `sort::int_prefix`), in the
    /// run's order, when it has them: the merge compares these first.
    pub prefix: Option<Vec<u64>>,
}

impl Run {
    /// Orders row `i` of this run against row `j` of `other`.
    pub(super) fn cmp_row(&self, i: usize, other: &Run, j: usize, keys: &[SortKey]) -> Ordering {
        match (&self.prefix, &other.prefix) {
            (Some(a), Some(b)) => a[i]
                .cmp(&b[j])
                .then_with(|| cmp_rows(&keys[1..], &self.keys[1..], i, &other.keys[1..], j)),
            _ => cmp_rows(keys, &self.keys, i, &other.keys, j),
        }
    }
}
