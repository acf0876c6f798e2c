//! Column-page encoding: a page holds a run of one column's values — row count,
//! optional validity bitmap, then fixed-width little-endian values or (offsets,
//! bytes) for text. Decoding appends a row sub-range of a page to a vector, so a
//! single row costs one page.

use kura_common::types::PhysicalType;
use kura_common::{ColumnData, DataType, Vector};

/// Bytes before the bitmap: row count (4), flags (1), reserved (3).
const HEAD: usize = 8;
const HAS_NULLS: u8 = 1;

fn bitmap_len(n: usize) -> usize {
    n.div_ceil(8)
}

/// How many rows starting at `start` fit one page of `payload` bytes.
pub fn rows_that_fit(v: &Vector, start: usize, payload: usize) -> usize {
    let remaining = v.len() - start;
    match v.data_type.fixed_width() {
        Some(w) => ((payload - HEAD) * 8 / (8 * w + 1)).min(remaining),
        None => {
            let ColumnData::Str(s) = &v.data else {
                unreachable!("text vector")
            };
            let mut n = 0;
            let base = s.offsets[start] as usize;
            while n < remaining {
                let bytes = s.offsets[start + n + 1] as usize - base;
                let need = HEAD + bitmap_len(n + 1) + 4 * (n + 2) + bytes;
                if need > payload {
                    break;
                }
                n += 1;
            }
            n
        }
    }
}

/// Encodes rows `start..start+n` of `v` into `out` (the page payload, zeroed).
pub fn encode(v: &Vector, start: usize, n: usize, out: &mut [u8]) {
    out[0..4].copy_from_slice(&(n as u32).to_le_bytes());
    let mut pos = HEAD;
    if let Some(valid) = &v.validity {
        let slice = &valid[start..start + n];
        if slice.iter().any(|b| !b) {
            out[4] = HAS_NULLS;
            let bm = &mut out[pos..pos + bitmap_len(n)];
            for (i, ok) in slice.iter().enumerate() {
                if *ok {
                    bm[i / 8] |= 1 << (i % 8);
                }
            }
            pos += bitmap_len(n);
        }
    }
    macro_rules! put {
        ($vals:expr, $w:expr) => {
            for (i, x) in $vals[start..start + n].iter().enumerate() {
                out[pos + i * $w..pos + (i + 1) * $w].copy_from_slice(&x.to_le_bytes());
            }
        };
    }
    match &v.data {
        ColumnData::Bool(b) => {
            for (i, x) in b[start..start + n].iter().enumerate() {
                out[pos + i] = *x as u8;
            }
        }
        ColumnData::I32(x) => put!(x, 4),
        ColumnData::I64(x) => put!(x, 8),
        ColumnData::I128(x) => put!(x, 16),
        ColumnData::F64(x) => put!(x, 8),
        ColumnData::Str(s) => {
            let base = s.offsets[start];
            for i in 0..=n {
                let off = s.offsets[start + i] - base;
                out[pos + 4 * i..pos + 4 * i + 4].copy_from_slice(&off.to_le_bytes());
            }
            let data_at = pos + 4 * (n + 1);
            let bytes = &s.data[base as usize..s.offsets[start + n] as usize];
            out[data_at..data_at + bytes.len()].copy_from_slice(bytes);
        }
    }
}

/// Rows recorded in a column page payload.
pub fn row_count(page: &[u8]) -> usize {
    u32::from_le_bytes(page[0..4].try_into().unwrap()) as usize
}

/// Appends rows `from..to` of the page to `out` (whose type is `dt`).
/// Returns an error text if the page's structure is inconsistent.
pub fn decode_into(
    page: &[u8],
    dt: DataType,
    from: usize,
    to: usize,
    out: &mut Vector,
) -> Result<(), String> {
    let n = row_count(page);
    if to > n || from > to {
        return Err(format!(
            "column page holds {n} rows, asked for {from}..{to}"
        ));
    }
    let mut pos = HEAD;
    let before = out.len();
    if page[4] & HAS_NULLS != 0 {
        let bm = &page[pos..pos + bitmap_len(n)];
        let validity = out.validity.get_or_insert_with(|| vec![true; before]);
        validity.extend((from..to).map(|i| bm[i / 8] & (1 << (i % 8)) != 0));
        pos += bitmap_len(n);
    } else if let Some(validity) = &mut out.validity {
        validity.extend(std::iter::repeat_n(true, to - from));
    }
    macro_rules! get {
        ($vec:expr, $t:ty, $w:expr) => {{
            let src = page
                .get(pos + from * $w..pos + to * $w)
                .ok_or_else(|| format!("column page too short for {n} values"))?;
            $vec.extend(
                src.chunks_exact($w)
                    .map(|c| <$t>::from_le_bytes(c.try_into().unwrap())),
            );
        }};
    }
    match (&mut out.data, dt.physical()) {
        (ColumnData::Bool(v), PhysicalType::Bool) => {
            v.extend(page[pos + from..pos + to].iter().map(|b| *b != 0));
        }
        (ColumnData::I32(v), PhysicalType::I32) => get!(v, i32, 4),
        (ColumnData::I64(v), PhysicalType::I64) => get!(v, i64, 8),
        (ColumnData::I128(v), PhysicalType::I128) => get!(v, i128, 16),
        (ColumnData::F64(v), PhysicalType::F64) => get!(v, f64, 8),
        (ColumnData::Str(s), PhysicalType::Str) => {
            let off = |i: usize| -> Result<usize, String> {
                page.get(pos + 4 * i..pos + 4 * i + 4)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
                    .ok_or_else(|| "column page offsets truncated".to_string())
            };
            let data_at = pos + 4 * (n + 1);
            let (a, b) = (off(from)?, off(to)?);
            let bytes = page
                .get(data_at + a..data_at + b)
                .ok_or_else(|| "column page text truncated".to_string())?;
            let base = s.data.len() as u32;
            s.data.extend_from_slice(bytes);
            for i in from + 1..=to {
                s.offsets.push(base + (off(i)? - a) as u32);
            }
        }
        _ => return Err(format!("vector of the wrong type for {dt}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::Value;

    #[test]
    fn round_trip_text_with_nulls() {
        let vals = vec![
            Value::Text("a".into()),
            Value::Null,
            Value::Text("".into()),
            Value::Text("xyz".into()),
        ];
        let v = Vector::from_values(DataType::Varchar(None), &vals).unwrap();
        let n = rows_that_fit(&v, 0, 1000);
        assert_eq!(n, 4);
        let mut page = vec![0u8; 1000];
        encode(&v, 0, n, &mut page);
        let mut out = Vector::new(DataType::Varchar(None), 4);
        decode_into(&page, DataType::Varchar(None), 1, 4, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        assert!(out.is_null(0));
        assert_eq!(out.get_value(1), Value::Text("".into()));
        assert_eq!(out.get_value(2), Value::Text("xyz".into()));
    }

    #[test]
    fn fixed_capacity_respects_payload() {
        let v = Vector::from_values(DataType::BigInt, &vec![Value::BigInt(7); 5000]).unwrap();
        let n = rows_that_fit(&v, 0, 16368);
        assert!(n < 5000 && 8 + n.div_ceil(8) + n * 8 <= 16368);
        let mut page = vec![0u8; 16368];
        encode(&v, 0, n, &mut page);
        let mut out = Vector::new(DataType::BigInt, n);
        decode_into(&page, DataType::BigInt, 0, n, &mut out).unwrap();
        assert_eq!(out.len(), n);
        assert!(decode_into(&page, DataType::BigInt, 0, n + 1, &mut out).is_err());
    }
}
