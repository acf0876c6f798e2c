//! Encoding of key columns (join keys, group keys, DISTINCT values) into hashable
//! form: a single integer for the common one-integer-key case, bytes otherwise.
//! Text is encoded without trailing blanks so CHAR(n) equality ignores padding.

use kura_common::{ColumnData, DataType, Vector};

use crate::expr::compare_trim;

/// Whether keys fit one i64 (one integer-like column).
pub fn single_int_key(keys: &[Vector]) -> bool {
    keys.len() == 1 && matches!(keys[0].data, ColumnData::I32(_) | ColumnData::I64(_))
}

/// Key `row` of a one-integer-column key, `None` if NULL.
#[inline]
pub fn int_key(key: &Vector, row: usize) -> Option<i64> {
    if key.is_null(row) {
        return None;
    }
    match &key.data {
        ColumnData::I32(v) => Some(v[row] as i64),
        ColumnData::I64(v) => Some(v[row]),
        _ => None,
    }
}

/// Whether keys are exactly two integer-like columns (packed by [`pair_key`]).
pub fn pair_int_key(keys: &[Vector]) -> bool {
    keys.len() == 2
        && keys
            .iter()
            .all(|k| matches!(k.data, ColumnData::I32(_) | ColumnData::I64(_)))
}

/// Key `row` of a two-integer-column key packed into one u128, `None` if either is
/// NULL. Both widths widen to i64 first, so equal values pack equally whatever the
/// column types; only for equality lookups (NULL never matches).
#[inline]
pub fn pair_key(keys: &[Vector], row: usize) -> Option<u128> {
    let a = int_key(&keys[0], row)? as u64 as u128;
    let b = int_key(&keys[1], row)? as u64 as u128;
    Some(a << 64 | b)
}

/// Appends the encoding of row `row` of `keys` to `out`; false if any key is NULL
/// (and `nulls_equal` is false — SQL equality never matches NULL; GROUP BY does).
pub fn encode_row(keys: &[Vector], row: usize, nulls_equal: bool, out: &mut Vec<u8>) -> bool {
    keys.iter().all(|k| encode_key(k, row, nulls_equal, out))
}

/// Like [`encode_row`] with a NULL rule per key: join keys from `IS NOT DISTINCT FROM`
/// (`null_safe[i]`, missing entries false) match NULL with NULL, plain equalities never.
pub fn encode_join_row(keys: &[Vector], row: usize, null_safe: &[bool], out: &mut Vec<u8>) -> bool {
    keys.iter()
        .enumerate()
        .all(|(i, k)| encode_key(k, row, null_safe.get(i).copied().unwrap_or(false), out))
}

fn encode_key(k: &Vector, row: usize, nulls_equal: bool, out: &mut Vec<u8>) -> bool {
    if k.is_null(row) {
        if !nulls_equal {
            return false;
        }
        out.push(0);
        return true;
    }
    out.push(1);
    match &k.data {
        ColumnData::Bool(v) => out.push(v[row] as u8),
        ColumnData::I32(v) => out.extend_from_slice(&v[row].to_le_bytes()),
        ColumnData::I64(v) => out.extend_from_slice(&v[row].to_le_bytes()),
        // Intervals are equal by span (`1 mon` = `30 days`): the group keeps
        // the first value met, as PostgreSQL's does.
        ColumnData::I128(v) if k.data_type == DataType::Interval => out
            .extend_from_slice(&kura_common::interval::Interval::packed_span(v[row]).to_le_bytes()),
        ColumnData::I128(v) => out.extend_from_slice(&v[row].to_le_bytes()),
        ColumnData::F64(v) => {
            // -0.0 and 0.0 are equal in SQL.
            let x = if v[row] == 0.0 { 0.0 } else { v[row] };
            out.extend_from_slice(&x.to_bits().to_le_bytes())
        }
        ColumnData::Str(s) => {
            // CHAR(n) ignores trailing blanks; for VARCHAR they are part of the value.
            let b = if matches!(k.data_type, DataType::Char(_)) {
                compare_trim(s.get_bytes(row))
            } else {
                s.get_bytes(row)
            };
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
    }
    true
}
