//! Normalized sort keys: every sort key of a row encoded into one byte string
//! that compares, byte by byte, as the row compares key by key (NULLs first or
//! last per key, descending keys inverted, CHAR without its padding). Sorting
//! by them compares two byte strings instead of dispatching on each key's type
//! per comparison: TPC-H Q16's 18,314 rows by a count then three text keys.

use std::cmp::Ordering;

use kura_common::{ColumnData, DataType, Vector};

use crate::expr::compare_trim;
use crate::plan::SortKey;

/// Above this many bytes of encoded keys the rows are compared key by key:
/// the encoding is a copy of the keys beside them that the query's memory
/// does not count, so it is kept to what a result-sized sort needs (Q16 SF 10:
/// 27,840 rows, about 2 MB). A large run — a window over a cross product
/// sorted by two text columns — encoded whole raised a server's peak RSS by
/// some 100 MB past its `--max-memory`.
const MAX_BYTES: usize = 4 << 20;

/// The rows' encoded keys: row `r`'s are `bytes[offsets[r]..offsets[r + 1]]`,
/// and `heads[r]` their first eight bytes (zero-padded), which decide most
/// comparisons from one array.
pub(super) struct Normalized {
    bytes: Vec<u8>,
    offsets: Vec<u32>,
    heads: Vec<u64>,
}

impl Normalized {
    /// Encodes `keys` (evaluated, one vector per sort key, `rows` rows), or
    /// `None` when a key's type has no encoding here (arrays, JSON, other
    /// values compared as values) or the encoding would be too large.
    pub(super) fn new(sort_keys: &[SortKey], keys: &[Vector], rows: usize) -> Option<Normalized> {
        let mut width = 0usize;
        for v in keys {
            width += match &v.data {
                ColumnData::Bool(_) => rows * 2,
                ColumnData::I32(_) => rows * 5,
                ColumnData::I64(_) => rows * 9,
                ColumnData::I128(_) if v.data_type == DataType::Interval => rows * 9,
                ColumnData::I128(_) => rows * 17,
                ColumnData::F64(_) => rows * 9,
                // Each byte may be escaped, plus the marker and the terminator.
                ColumnData::Str(s) => s.data.len() * 2 + rows * 3,
            };
        }
        if width > MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::with_capacity(width);
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0u32);
        for r in 0..rows {
            for (key, v) in sort_keys.iter().zip(keys) {
                encode(&mut bytes, key, v, r);
            }
            offsets.push(bytes.len() as u32);
        }
        let heads = offsets
            .windows(2)
            .map(|w| {
                let s = &bytes[w[0] as usize..w[1] as usize];
                let mut head = [0u8; 8];
                let n = s.len().min(8);
                head[..n].copy_from_slice(&s[..n]);
                u64::from_be_bytes(head)
            })
            .collect();
        Some(Normalized {
            bytes,
            offsets,
            heads,
        })
    }

    fn row(&self, r: u32) -> &[u8] {
        let r = r as usize;
        &self.bytes[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// Row `x` against row `y` in the sort's order (equal rows are equal).
    pub(super) fn cmp(&self, x: u32, y: u32) -> Ordering {
        self.heads[x as usize]
            .cmp(&self.heads[y as usize])
            .then_with(|| self.row(x).cmp(self.row(y)))
    }
}

/// Appends value `r` of `v` as key `key` orders it: a marker byte that puts a
/// NULL first or last, then (not for a NULL) the value's bytes, inverted for a
/// descending key. Each value's bytes are prefix-free, so what follows them
/// (the next key) never decides against them.
fn encode(out: &mut Vec<u8>, key: &SortKey, v: &Vector, r: usize) {
    if v.is_null(r) {
        out.push(if key.nulls_first { 0 } else { 2 });
        return;
    }
    out.push(1);
    let start = out.len();
    match &v.data {
        ColumnData::Bool(x) => out.push(x[r] as u8),
        ColumnData::I32(x) => out.extend_from_slice(&((x[r] as u32) ^ 1 << 31).to_be_bytes()),
        ColumnData::I64(x) => out.extend_from_slice(&((x[r] as u64) ^ 1 << 63).to_be_bytes()),
        // Intervals order by span (see `cmp_values`).
        ColumnData::I128(x) if v.data_type == DataType::Interval => {
            let span = (x[r] >> 64) as i64;
            out.extend_from_slice(&((span as u64) ^ 1 << 63).to_be_bytes())
        }
        ColumnData::I128(x) => out.extend_from_slice(&((x[r] as u128) ^ 1 << 127).to_be_bytes()),
        ColumnData::F64(x) => {
            // `f64::total_cmp`'s order as unsigned integers.
            let b = x[r].to_bits();
            let image = if b >> 63 == 1 { !b } else { b | 1 << 63 };
            out.extend_from_slice(&image.to_be_bytes())
        }
        ColumnData::Str(s) => {
            let b = s.get_bytes(r);
            let b = if matches!(v.data_type, DataType::Char(_)) {
                compare_trim(b)
            } else {
                b
            };
            // A zero byte becomes 0 255 and the value ends in 0 0: shorter
            // values sort before their extensions, bytes compare as bytes.
            for &c in b {
                out.push(c);
                if c == 0 {
                    out.push(255);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
    }
    if key.descending {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::PhysExpr;
    use crate::ops::sort_run::cmp_rows;
    use kura_common::Value;
    use proptest::prelude::*;

    fn key(descending: bool, nulls_first: bool) -> SortKey {
        SortKey {
            expr: PhysExpr::Literal {
                value: Value::Null,
                data_type: DataType::Integer,
            },
            descending,
            nulls_first,
        }
    }

    fn vector(dt: DataType, values: Vec<Value>) -> Vector {
        let mut v = Vector::new(dt, values.len());
        for x in &values {
            v.push_value(x);
        }
        v
    }

    proptest! {
        /// Normalized keys order rows as comparing them key by key does, for
        /// text with zero bytes and blanks, CHAR, integers, doubles (NaN,
        /// -0.0, infinities), intervals and NULLs, in both directions.
        #[test]
        fn normalized_keys_order_rows_as_the_keys_do(
            rows in proptest::collection::vec(
                (
                    proptest::option::of(prop_oneof![
                        Just(String::new()), Just("a".to_string()), Just("a\0".to_string()),
                        Just("a\0b".to_string()), Just("ab".to_string()), Just("a ".to_string()),
                        "[a-c\0 ]{0,4}",
                    ]),
                    proptest::option::of(-3i64..3),
                    proptest::option::of(prop_oneof![
                        Just(f64::NAN), Just(-0.0), Just(0.0), Just(f64::INFINITY),
                        Just(f64::NEG_INFINITY), -2.0f64..2.0,
                    ]),
                    proptest::option::of(-2i32..2),
                    proptest::option::of(any::<bool>()),
                    proptest::option::of(-1i128..1),
                ),
                1..40,
            ),
            flags in proptest::collection::vec((any::<bool>(), any::<bool>()), 7),
            char_type in any::<bool>(),
        ) {
            let text = if char_type { DataType::Char(4) } else { DataType::Varchar(None) };
            let col = |dt: DataType, f: &dyn Fn(usize) -> Value| {
                vector(dt, (0..rows.len()).map(f).collect())
            };
            let keys = vec![
                col(text, &|i| rows[i].0.clone().map_or(Value::Null, Value::Text)),
                col(DataType::BigInt, &|i| rows[i].1.map_or(Value::Null, Value::BigInt)),
                col(DataType::Double, &|i| rows[i].2.map_or(Value::Null, Value::Double)),
                col(DataType::Integer, &|i| rows[i].3.map_or(Value::Null, Value::Integer)),
                col(DataType::Boolean, &|i| rows[i].4.map_or(Value::Null, Value::Boolean)),
                col(DataType::Interval, &|i| rows[i].5.map_or(Value::Null, |x| {
                    Value::Interval(x << 64 | (i as i128 & 3))
                })),
                col(DataType::Varchar(None), &|i| Value::Text(format!("{}", i % 3))),
            ];
            let sort_keys: Vec<SortKey> = flags.iter().map(|&(d, n)| key(d, n)).collect();
            let norm = Normalized::new(&sort_keys, &keys, rows.len()).unwrap();
            for x in 0..rows.len() {
                for y in 0..rows.len() {
                    prop_assert_eq!(
                        norm.cmp(x as u32, y as u32),
                        cmp_rows(&sort_keys, &keys, x, &keys, y),
                        "rows {} and {}", x, y
                    );
                }
            }
        }
    }
}
