//! Order-preserving key encoding for B+tree indexes (paper 003): a composite key of
//! kura values becomes a byte string whose `memcmp` order is SQL order, so nodes
//! compare keys without knowing their types.
//!
//! Per column: one marker byte (`0x00` NULL — NULLs sort first and are indexable —
//! or `0x01` present) followed by the value:
//! - BOOLEAN: one byte 0/1;
//! - INTEGER, DATE: 4 bytes, BIGINT and DECIMAL(p ≤ 18): 8 bytes, DECIMAL(p > 18):
//!   16 bytes — big-endian two's complement with the sign bit flipped;
//! - DOUBLE: the IEEE bits, all flipped for negatives and the sign bit set for
//!   positives, which reproduces `f64::total_cmp` (the order kura compares doubles in);
//! - CHAR/VARCHAR: trailing blanks removed (kura compares text blank-insensitively),
//!   `0x00` escaped as `0x00 0xFF`, terminated by `0x00 0x00` — so a column's bytes
//!   are prefix-free and the next column can follow.
//!
//! An index entry is the key, then the included columns of a covering index
//! (`CREATE INDEX ... INCLUDE (...)`), then the row id (8 bytes big-endian), which
//! makes every entry distinct and lets equal keys sit in row order. Included columns
//! use the same encoding except that text keeps its trailing blanks: they are never
//! searched, only read back, so their decoding must give the stored value exactly.
//!
//! Decoding is exact for every key column type except text (whose trailing blanks
//! the key drops, see [`key_decodes_exactly`]); index-only plans rely on that.

use std::cmp::Ordering;

use kura_common::{ColumnData, DataType, Value, Vector};

use crate::error::{StorageError, StorageResult};

/// Marker byte of a NULL column value.
pub const NULL_MARK: u8 = 0x00;
/// Marker byte of a present column value.
pub const VALUE_MARK: u8 = 0x01;
/// Bytes of the row id suffix of every entry.
pub const ROW_ID_BYTES: usize = 8;

/// Whether `t` can be part of an index key.
pub fn check_key_type(t: DataType) -> StorageResult<()> {
    match t {
        DataType::Decimal { precision, .. } if precision > kura_common::decimal::MAX_PRECISION => {
            Err(StorageError::Invalid(format!("type {t} cannot be indexed")))
        }
        _ => Ok(()),
    }
}

/// True when DECIMAL values of this type are stored in 16 bytes.
fn wide_decimal(t: DataType) -> bool {
    matches!(t, DataType::Decimal { precision, .. } if precision > kura_common::decimal::MAX_I64_PRECISION)
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&((v as u32) ^ (1 << 31)).to_be_bytes());
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn put_i128(out: &mut Vec<u8>, v: i128) {
    out.extend_from_slice(&((v as u128) ^ (1 << 127)).to_be_bytes());
}

fn put_f64(out: &mut Vec<u8>, v: f64) {
    let bits = v.to_bits();
    let key = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    out.extend_from_slice(&key.to_be_bytes());
}

/// Text without trailing blanks: the form kura compares text in.
pub fn trim_blanks(s: &[u8]) -> &[u8] {
    let mut e = s.len();
    while e > 0 && s[e - 1] == b' ' {
        e -= 1;
    }
    &s[..e]
}

/// Escaped text bytes without the terminator (a byte prefix of every encoding of a
/// text starting with `s`).
pub fn put_text_body(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
}

fn put_text(out: &mut Vec<u8>, s: &[u8]) {
    put_text_body(out, trim_blanks(s));
    out.extend_from_slice(&[0, 0]);
}

/// Appends the encoding of row `i` of column vector `v` (whose type is the key
/// column's type).
pub fn encode_vector_value(out: &mut Vec<u8>, v: &Vector, i: usize) {
    if v.is_null(i) {
        out.push(NULL_MARK);
        return;
    }
    out.push(VALUE_MARK);
    match &v.data {
        ColumnData::Bool(x) => out.push(x[i] as u8),
        ColumnData::I32(x) => put_i32(out, x[i]),
        ColumnData::I64(x) => put_i64(out, x[i]),
        ColumnData::I128(x) => put_i128(out, x[i]),
        ColumnData::F64(x) => put_f64(out, x[i]),
        ColumnData::Str(x) => put_text(out, x.get_bytes(i)),
    }
}

/// Appends the lossless encoding of row `i` of `v` for an included column: as
/// [`encode_vector_value`], but text keeps its trailing blanks.
pub fn encode_vector_value_exact(out: &mut Vec<u8>, v: &Vector, i: usize) {
    match &v.data {
        ColumnData::Str(x) if !v.is_null(i) => {
            out.push(VALUE_MARK);
            put_text_body(out, x.get_bytes(i));
            out.extend_from_slice(&[0, 0]);
        }
        _ => encode_vector_value(out, v, i),
    }
}

/// Whether a key column of type `t` decodes to exactly the value that was
/// indexed. Text does not: its key drops trailing blanks, which VARCHAR values
/// keep (and which `length()` or `||` would show).
pub fn key_decodes_exactly(t: DataType) -> bool {
    !t.is_text()
}

/// Decodes one column at the start of `b` into `out` (or only skips it when
/// `out` is `None`), advancing `b`; `None` if the bytes do not follow the
/// encoding.
fn decode_column(t: DataType, b: &mut &[u8], out: Option<&mut Vector>) -> Option<()> {
    let (&mark, rest) = b.split_first()?;
    *b = rest;
    if mark == NULL_MARK {
        if let Some(v) = out {
            v.push_null();
        }
        return Some(());
    }
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (h, r) = (b.get(..n)?, b.get(n..)?);
        *b = r;
        Some(h)
    }
    let fixed = match t {
        DataType::Boolean => 1,
        DataType::SmallInt | DataType::Integer | DataType::Date => 4,
        DataType::Decimal { .. } if wide_decimal(t) => 16,
        DataType::Interval => 16,
        DataType::BigInt | DataType::Timestamp | DataType::Decimal { .. } | DataType::Double => 8,
        DataType::Varchar(_)
        | DataType::Char(_)
        | DataType::Array(_)
        | DataType::Vector(_)
        | DataType::Uuid
        | DataType::Bytea
        | DataType::Json
        | DataType::Jsonb => 0,
    };
    let Some(v) = out else {
        if fixed > 0 {
            take(b, fixed)?;
        } else {
            // Text: up to the unescaped terminator `0x00 0x00`.
            loop {
                let (&c, rest) = b.split_first()?;
                *b = rest;
                if c == 0 {
                    let (&n, rest) = b.split_first()?;
                    *b = rest;
                    match n {
                        0 => break,
                        0xFF => {}
                        _ => return None,
                    }
                }
            }
        }
        return Some(());
    };
    if v.data_type.physical() != t.physical() {
        return None;
    }
    match &mut v.data {
        ColumnData::Bool(x) => x.push(take(b, 1)?[0] != 0),
        ColumnData::I32(x) => {
            x.push((u32::from_be_bytes(take(b, 4)?.try_into().ok()?) ^ (1 << 31)) as i32)
        }
        ColumnData::I64(x) => {
            x.push((u64::from_be_bytes(take(b, 8)?.try_into().ok()?) ^ (1 << 63)) as i64)
        }
        ColumnData::I128(x) => {
            let h = take(b, 16)?;
            x.push(get_i128(h))
        }
        ColumnData::F64(x) => {
            let k = u64::from_be_bytes(take(b, 8)?.try_into().ok()?);
            let bits = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
            x.push(f64::from_bits(bits))
        }
        ColumnData::Str(x) => {
            let mut s = Vec::new();
            loop {
                let (&c, rest) = b.split_first()?;
                *b = rest;
                if c == 0 {
                    let (&n, rest) = b.split_first()?;
                    *b = rest;
                    match n {
                        0 => break,
                        0xFF => s.push(0),
                        _ => return None,
                    }
                } else {
                    s.push(c);
                }
            }
            std::str::from_utf8(&s).ok()?;
            x.push(&s)
        }
    }
    if let Some(valid) = &mut v.validity {
        valid.push(true);
    }
    Some(())
}

/// Decodes the stored columns of an entry (key columns, then included columns,
/// of `types`) into vectors: stored column `i` goes to `outs[wanted[i]]` when
/// `wanted[i]` is set and is skipped otherwise. Each output vector's type must
/// be its column's. `None` if the bytes do not follow the encoding.
pub fn decode_entry_into(
    types: &[DataType],
    wanted: &[Option<usize>],
    mut b: &[u8],
    outs: &mut [Vector],
) -> Option<()> {
    let last = wanted.iter().rposition(|w| w.is_some())?;
    for (i, &t) in types.iter().enumerate().take(last + 1) {
        let out = match wanted.get(i).copied().flatten() {
            Some(o) => Some(outs.get_mut(o)?),
            None => None,
        };
        decode_column(t, &mut b, out)?;
    }
    Some(())
}

/// Bytes of the key columns (of `types`) at the start of an entry, which may go
/// on with included columns and the row id.
pub fn key_len(types: &[DataType], entry: &[u8]) -> Option<usize> {
    let mut b = entry;
    for &t in types {
        decode_column(t, &mut b, None)?;
    }
    Some(entry.len() - b.len())
}

/// A value converted into a key column's domain. Values the column cannot hold
/// exactly (2.5 for an INTEGER column, 1e30 for a BIGINT column, 1.005 for a
/// DECIMAL(15,2) column) have a `floor` (largest column value below it) and a
/// `ceil` (smallest above it); `None` means there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKey {
    Exact(Vec<u8>),
    Between {
        floor: Option<Vec<u8>>,
        ceil: Option<Vec<u8>>,
    },
}

/// An integer-valued column domain: its bounds and how values are written.
struct IntDomain {
    min: i128,
    max: i128,
    width: u8,
}

impl IntDomain {
    fn of(t: DataType) -> Option<IntDomain> {
        match t {
            DataType::SmallInt | DataType::Integer | DataType::Date => Some(IntDomain {
                min: i32::MIN as i128,
                max: i32::MAX as i128,
                width: 4,
            }),
            DataType::BigInt | DataType::Timestamp => Some(IntDomain {
                min: i64::MIN as i128,
                max: i64::MAX as i128,
                width: 8,
            }),
            DataType::Decimal { .. } if wide_decimal(t) => Some(IntDomain {
                min: i128::MIN,
                max: i128::MAX,
                width: 16,
            }),
            DataType::Decimal { .. } => Some(IntDomain {
                min: i64::MIN as i128,
                max: i64::MAX as i128,
                width: 8,
            }),
            _ => None,
        }
    }

    fn bytes(&self, v: i128) -> Vec<u8> {
        let mut out = vec![VALUE_MARK];
        match self.width {
            4 => put_i32(&mut out, v as i32),
            8 => put_i64(&mut out, v as i64),
            _ => put_i128(&mut out, v),
        }
        out
    }

    /// The key for the real number lying between `floor` and `ceil` (equal when exact).
    fn key(&self, floor: i128, ceil: i128) -> ColumnKey {
        if floor == ceil && (self.min..=self.max).contains(&floor) {
            return ColumnKey::Exact(self.bytes(floor));
        }
        let f = if floor < self.min {
            None
        } else {
            Some(self.bytes(floor.min(self.max)))
        };
        let c = if ceil > self.max {
            None
        } else {
            Some(self.bytes(ceil.max(self.min)))
        };
        ColumnKey::Between { floor: f, ceil: c }
    }

    /// The key for an f64 scaled into this domain.
    fn key_f64(&self, x: f64) -> ColumnKey {
        if x.is_nan() {
            // NaN sorts above every number in kura's comparisons.
            return self.key(i128::MAX, i128::MAX);
        }
        let (f, c) = (x.floor(), x.ceil());
        let clamp = |y: f64| -> i128 {
            if y >= i128::MAX as f64 {
                i128::MAX
            } else if y <= i128::MIN as f64 {
                i128::MIN
            } else {
                y as i128
            }
        };
        self.key(clamp(f), clamp(c))
    }
}

/// `v / 10^d` rounded down and up.
fn div_floor_ceil(v: i128, d: u32) -> (i128, i128) {
    let p = 10i128.checked_pow(d);
    match p {
        Some(p) => {
            let f = v.div_euclid(p);
            let c = if v.rem_euclid(p) == 0 { f } else { f + 1 };
            (f, c)
        }
        // Divisor beyond i128: the quotient is between -1 and 1.
        None => match v.cmp(&0) {
            Ordering::Equal => (0, 0),
            Ordering::Greater => (0, 1),
            Ordering::Less => (-1, 0),
        },
    }
}

/// `v * 10^d`, saturating (saturation only moves a value already outside the domain).
fn mul_pow10(v: i128, d: u32) -> i128 {
    match 10i128.checked_pow(d).and_then(|p| v.checked_mul(p)) {
        Some(x) => x,
        None if v >= 0 => i128::MAX,
        None => i128::MIN,
    }
}

fn mismatch(t: DataType, v: &Value) -> StorageError {
    StorageError::Invalid(format!(
        "cannot compare index key of type {t} with value {v:?}"
    ))
}

/// Converts a non-NULL value into the domain of a key column of type `t`.
pub fn column_key(t: DataType, v: &Value) -> StorageResult<ColumnKey> {
    if let Some(dom) = IntDomain::of(t) {
        let s = t.decimal_scale();
        return match (t, v) {
            (DataType::Date, Value::Date(d)) => Ok(dom.key(*d as i128, *d as i128)),
            (DataType::Date, _) | (_, Value::Date(_)) => Err(mismatch(t, v)),
            (DataType::Timestamp, Value::Timestamp(x)) => Ok(dom.key(*x as i128, *x as i128)),
            (DataType::Timestamp, _) | (_, Value::Timestamp(_)) => Err(mismatch(t, v)),
            (_, Value::Integer(x)) => {
                let x = mul_pow10(*x as i128, s as u32);
                Ok(dom.key(x, x))
            }
            (_, Value::BigInt(x)) => {
                let x = mul_pow10(*x as i128, s as u32);
                Ok(dom.key(x, x))
            }
            (_, Value::Decimal(x, vs)) => {
                if *vs <= s {
                    let x = mul_pow10(*x, (s - vs) as u32);
                    Ok(dom.key(x, x))
                } else {
                    let (f, c) = div_floor_ceil(*x, (vs - s) as u32);
                    Ok(dom.key(f, c))
                }
            }
            (_, Value::Double(x)) => Ok(dom.key_f64(x * 10f64.powi(s as i32))),
            _ => Err(mismatch(t, v)),
        };
    }
    let mut out = vec![VALUE_MARK];
    match (t, v) {
        (DataType::Boolean, Value::Boolean(b)) => out.push(*b as u8),
        (DataType::Double, Value::Double(x)) => put_f64(&mut out, *x),
        (DataType::Double, Value::Integer(_) | Value::BigInt(_) | Value::Decimal(..)) => {
            put_f64(&mut out, v.as_f64().unwrap_or(f64::NAN))
        }
        (DataType::Varchar(_) | DataType::Char(_), Value::Text(s)) => {
            put_text(&mut out, s.as_bytes())
        }
        _ => return Err(mismatch(t, v)),
    }
    Ok(ColumnKey::Exact(out))
}

/// Appends the exact encoding of `v` (NULL allowed) for a key column of type `t`;
/// `Ok(false)` when the column cannot hold `v` exactly (no key can equal it).
pub fn encode_exact(out: &mut Vec<u8>, t: DataType, v: &Value) -> StorageResult<bool> {
    if v.is_null() {
        out.push(NULL_MARK);
        return Ok(true);
    }
    match column_key(t, v)? {
        ColumnKey::Exact(b) => {
            out.extend_from_slice(&b);
            Ok(true)
        }
        ColumnKey::Between { .. } => Ok(false),
    }
}

/// Encodes a whole composite key given as values (tests and slow paths).
pub fn encode_values(types: &[DataType], values: &[Value]) -> StorageResult<Vec<u8>> {
    if values.len() != types.len() {
        return Err(StorageError::Invalid(format!(
            "index key has {} columns, got {} values",
            types.len(),
            values.len()
        )));
    }
    let mut out = Vec::new();
    for (t, v) in types.iter().zip(values) {
        if !encode_exact(&mut out, *t, v)? {
            return Err(StorageError::Invalid(format!(
                "value {v} does not fit index key type {t}"
            )));
        }
    }
    Ok(out)
}

/// The smallest byte string greater than every string starting with `b`, or
/// `None` when there is none (all bytes 0xFF).
pub fn prefix_successor(b: &[u8]) -> Option<Vec<u8>> {
    let last = b.iter().rposition(|&x| x != 0xFF)?;
    let mut out = b[..=last].to_vec();
    out[last] += 1;
    Some(out)
}

fn get_i128(b: &[u8]) -> i128 {
    let mut x = [0u8; 16];
    x.copy_from_slice(&b[..16]);
    (u128::from_be_bytes(x) ^ (1 << 127)) as i128
}

/// Decodes the key part of an entry back into values (error messages, tests).
/// Returns `None` if the bytes do not follow the encoding.
pub fn decode_key(types: &[DataType], mut b: &[u8]) -> Option<Vec<Value>> {
    let mut out = Vec::with_capacity(types.len());
    for &t in types {
        let (&mark, rest) = b.split_first()?;
        b = rest;
        if mark == NULL_MARK {
            out.push(Value::Null);
            continue;
        }
        let take = |b: &mut &[u8], n: usize| -> Option<Vec<u8>> {
            let (h, r) = (b.get(..n)?.to_vec(), b.get(n..)?);
            *b = r;
            Some(h)
        };
        let v = match t {
            DataType::Boolean => Value::Boolean(take(&mut b, 1)?[0] != 0),
            DataType::SmallInt | DataType::Integer | DataType::Date => {
                let x = (u32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?) ^ (1 << 31)) as i32;
                if t == DataType::Date {
                    Value::Date(x)
                } else {
                    Value::Integer(x)
                }
            }
            DataType::BigInt => Value::BigInt(
                (u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?) ^ (1 << 63)) as i64,
            ),
            DataType::Timestamp => Value::Timestamp(
                (u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?) ^ (1 << 63)) as i64,
            ),
            DataType::Decimal { scale, .. } if wide_decimal(t) => {
                Value::Decimal(get_i128(&take(&mut b, 16)?), scale)
            }
            DataType::Interval => Value::Interval(get_i128(&take(&mut b, 16)?)),
            DataType::Decimal { scale, .. } => {
                let x = (u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?) ^ (1 << 63)) as i64;
                Value::Decimal(x as i128, scale)
            }
            DataType::Double => {
                let k = u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?);
                let bits = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
                Value::Double(f64::from_bits(bits))
            }
            DataType::Varchar(_)
            | DataType::Char(_)
            | DataType::Array(_)
            | DataType::Vector(_)
            | DataType::Uuid
            | DataType::Bytea
            | DataType::Json
            | DataType::Jsonb => {
                let mut s = Vec::new();
                loop {
                    let (&c, rest) = b.split_first()?;
                    b = rest;
                    if c == 0 {
                        let (&n, rest) = b.split_first()?;
                        b = rest;
                        match n {
                            0 => break,
                            0xFF => s.push(0),
                            _ => return None,
                        }
                    } else {
                        s.push(c);
                    }
                }
                Value::Text(String::from_utf8(s).ok()?)
            }
        };
        out.push(v);
    }
    Some(out)
}

/// The row id of an entry (its last 8 bytes).
#[inline]
pub fn entry_row_id(entry: &[u8]) -> u64 {
    let n = entry.len();
    u64::from_be_bytes(
        entry[n - ROW_ID_BYTES..]
            .try_into()
            .expect("entries end in a row id"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: DataType, v: Value) -> Vec<u8> {
        encode_values(&[t], &[v]).unwrap()
    }

    #[test]
    fn integer_order_and_null_first() {
        let t = DataType::Integer;
        let keys: Vec<Vec<u8>> = [
            Value::Null,
            Value::Integer(i32::MIN),
            Value::Integer(-1),
            Value::Integer(0),
            Value::Integer(7),
            Value::Integer(i32::MAX),
        ]
        .into_iter()
        .map(|v| enc(t, v))
        .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn doubles_follow_total_cmp() {
        let xs = [
            f64::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for a in xs {
            for b in xs {
                let (ka, kb) = (
                    enc(DataType::Double, Value::Double(a)),
                    enc(DataType::Double, Value::Double(b)),
                );
                assert_eq!(ka.cmp(&kb), a.total_cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn text_trailing_blanks_and_nul_bytes() {
        let t = DataType::Char(10);
        assert_eq!(
            enc(t, Value::Text("ab  ".into())),
            enc(t, Value::Text("ab".into()))
        );
        let a = enc(t, Value::Text("a".into()));
        let a0 = enc(t, Value::Text("a\0".into()));
        let ab = enc(t, Value::Text("ab".into()));
        assert!(a < a0 && a0 < ab);
        // Composite: a shorter first column still sorts first whatever follows.
        let types = [DataType::Varchar(None), DataType::Integer];
        let k1 =
            encode_values(&types, &[Value::Text("a".into()), Value::Integer(i32::MAX)]).unwrap();
        let k2 = encode_values(
            &types,
            &[Value::Text("a\u{1}".into()), Value::Integer(i32::MIN)],
        )
        .unwrap();
        assert!(k1 < k2);
    }

    #[test]
    fn decimal_conversions() {
        let t = DataType::Decimal {
            precision: 15,
            scale: 2,
        };
        assert_eq!(
            column_key(t, &Value::Integer(3)).unwrap(),
            ColumnKey::Exact(enc(t, Value::Decimal(300, 2)))
        );
        assert_eq!(
            column_key(t, &Value::Decimal(15, 1)).unwrap(),
            ColumnKey::Exact(enc(t, Value::Decimal(150, 2)))
        );
        match column_key(t, &Value::Decimal(1005, 3)).unwrap() {
            ColumnKey::Between { floor, ceil } => {
                assert_eq!(floor.unwrap(), enc(t, Value::Decimal(100, 2)));
                assert_eq!(ceil.unwrap(), enc(t, Value::Decimal(101, 2)));
            }
            other => panic!("expected an inexact key, got {other:?}"),
        }
        match column_key(DataType::Integer, &Value::BigInt(1 << 40)).unwrap() {
            ColumnKey::Between { floor, ceil } => {
                assert_eq!(
                    floor.unwrap(),
                    enc(DataType::Integer, Value::Integer(i32::MAX))
                );
                assert!(ceil.is_none());
            }
            other => panic!("expected an inexact key, got {other:?}"),
        }
    }

    #[test]
    fn decode_round_trip() {
        let types = [
            DataType::Boolean,
            DataType::Date,
            DataType::Decimal {
                precision: 30,
                scale: 3,
            },
            DataType::Varchar(None),
            DataType::Double,
            DataType::BigInt,
        ];
        let vals = vec![
            Value::Boolean(true),
            Value::Date(-3),
            Value::Decimal(-123456789012345678901234, 3),
            Value::Text("x\0y".into()),
            Value::Double(-1.5),
            Value::Null,
        ];
        let k = encode_values(&types, &vals).unwrap();
        let back = decode_key(&types, &k).unwrap();
        assert_eq!(format!("{back:?}"), format!("{vals:?}"));
    }

    #[test]
    fn entries_decode_into_vectors_and_included_text_keeps_its_blanks() {
        let key_types = [DataType::Varchar(None), DataType::Integer];
        let inc = DataType::Varchar(None);
        let dec = DataType::Decimal {
            precision: 12,
            scale: 2,
        };
        let mut e = encode_values(&key_types, &[Value::Text("ab  ".into()), Value::Null]).unwrap();
        let klen = e.len();
        let text = Vector::from_values(inc, &[Value::Text("ab  ".into())]).unwrap();
        let num = Vector::from_values(dec, &[Value::Decimal(-225, 2)]).unwrap();
        encode_vector_value_exact(&mut e, &text, 0);
        encode_vector_value_exact(&mut e, &num, 0);
        e.extend_from_slice(&42u64.to_be_bytes());
        assert_eq!(key_len(&key_types, &e), Some(klen));
        assert_eq!(entry_row_id(&e), 42);
        let types = [key_types[0], key_types[1], inc, dec];
        // Output 0 ← stored column 3, output 1 ← 2, output 2 ← 1; column 0 skipped.
        let mut outs = vec![
            Vector::new(dec, 0),
            Vector::new(inc, 0),
            Vector::new(DataType::Integer, 0),
        ];
        decode_entry_into(&types, &[None, Some(2), Some(1), Some(0)], &e, &mut outs).unwrap();
        assert_eq!(outs[0].get_value(0), Value::Decimal(-225, 2));
        assert_eq!(outs[1].get_value(0), Value::Text("ab  ".into()));
        assert!(outs[2].is_null(0));
        // The key's text lost its blanks: that is why text keys are not decoded.
        assert!(!key_decodes_exactly(key_types[0]) && key_decodes_exactly(dec));
        let mut k = vec![Vector::new(inc, 0)];
        decode_entry_into(&types, &[Some(0)], &e, &mut k).unwrap();
        assert_eq!(k[0].get_value(0), Value::Text("ab".into()));
        // A vector of the wrong type is refused, not filled with garbage.
        let mut wrong = vec![Vector::new(DataType::Integer, 0)];
        assert!(decode_entry_into(&types, &[None, None, None, Some(0)], &e, &mut wrong).is_none());
    }

    #[test]
    fn successor() {
        assert_eq!(prefix_successor(&[1, 2, 0xFF]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    }
}
