//! Frame-of-reference bit packing of integer column pages (format 5): a page's
//! values are stored as their offsets from the page's minimum, each in as many
//! bits as the page's range needs. TPC-H lineitem's quantities take 6 bits
//! instead of 64, its dates 12 instead of 32, its order keys (stored in order)
//! a few bits per page: fewer bytes per row through the whole memory
//! hierarchy, and more rows in a buffer pool of a given size.
//!
//! Layout after the page head (and NULL bitmap): the base (i64), the width in
//! bits (u8), 7 reserved bytes, then the offsets little-endian, value `i` at bit
//! `i * bits`, and 8 bytes of padding so every value is read with one unaligned
//! 8-byte load. A NULL row stores offset 0.

use kura_common::ColumnData;
use kura_common::Vector;

/// Bytes before the packed offsets: base (8), width (1), reserved (7).
pub const PACK_HEAD: usize = 16;
/// Zero bytes after the packed offsets, so the last value's 8-byte load stays
/// inside the page.
const PAD: usize = 8;
/// Widest offset packed: a value and its bit shift must fit one 8-byte load.
const MAX_BITS: u32 = 56;
/// Most rows on one packed page: a constant column packs into zero bits, and a
/// page of unbounded rows would make a single-row fetch decode a long run.
pub const MAX_PACKED_ROWS: usize = 1 << 16;

/// How a run of values is packed: its minimum and the bits per offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing {
    pub base: i64,
    pub bits: u32,
}

/// Bits needed for offsets up to `range`.
fn bits_for(range: u64) -> u32 {
    64 - range.leading_zeros()
}

/// Bits per offset for values in `[lo, hi]`; 0 when there are none (`lo > hi`:
/// all NULL).
fn bits_between(lo: i64, hi: i64) -> u32 {
    if lo > hi {
        0
    } else {
        bits_for(hi.wrapping_sub(lo) as u64)
    }
}

/// The integer values of a vector (`None` for other types), widened to i64.
fn int_at(v: &Vector) -> Option<impl Fn(usize) -> i64 + '_> {
    let ok = matches!(v.data, ColumnData::I32(_) | ColumnData::I64(_));
    ok.then_some(move |i: usize| match &v.data {
        ColumnData::I32(x) => x[i] as i64,
        ColumnData::I64(x) => x[i],
        _ => unreachable!("integer vector"),
    })
}

fn valid(v: &Vector, i: usize) -> bool {
    v.validity.as_ref().is_none_or(|b| b[i])
}

/// Bytes of a packed page of `n` rows of `bits` bits after its head and bitmap.
pub fn packed_bytes(n: usize, bits: u32) -> usize {
    PACK_HEAD + (n * bits as usize).div_ceil(8) + PAD
}

/// How rows `start..start + n` of `v` pack, if they are integers whose range
/// fits fewer bits than their stored width (`width` bytes).
pub fn plan(v: &Vector, start: usize, n: usize, width: usize) -> Option<Packing> {
    let at = int_at(v)?;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in start..start + n {
        if valid(v, i) {
            let x = at(i);
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let bits = bits_between(lo, hi);
    // All NULL (`lo > hi`): nothing to store, base 0.
    let base = if lo > hi { 0 } else { lo };
    (bits <= MAX_BITS && (bits as usize) < 8 * width).then_some(Packing { base, bits })
}

/// How many rows from `start` fit `space` bytes (after the page head and a
/// bitmap of at most `bitmap(n)` bytes) packed, at most `remaining`; 0 when the
/// values do not pack.
pub fn rows_that_fit(
    v: &Vector,
    start: usize,
    remaining: usize,
    space: usize,
    width: usize,
    bitmap: impl Fn(usize) -> usize,
) -> usize {
    let Some(at) = int_at(v) else {
        return 0;
    };
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let mut n = 0;
    while n < remaining.min(MAX_PACKED_ROWS) {
        let i = start + n;
        let (mut l, mut h) = (lo, hi);
        if valid(v, i) {
            let x = at(i);
            l = l.min(x);
            h = h.max(x);
        }
        let bits = bits_between(l, h);
        if bits > MAX_BITS || bits as usize >= 8 * width {
            return 0;
        }
        if bitmap(n + 1) + packed_bytes(n + 1, bits) > space {
            break;
        }
        (lo, hi) = (l, h);
        n += 1;
    }
    n
}

/// Writes rows `start..start + n` of `v` packed as `p` into `out` (the space
/// after the page head and bitmap, zeroed).
pub fn encode(v: &Vector, start: usize, n: usize, p: Packing, out: &mut [u8]) {
    let at = int_at(v).expect("only integer vectors are packed");
    let offsets = (start..start + n).map(|i| {
        if valid(v, i) {
            at(i).wrapping_sub(p.base) as u64
        } else {
            0
        }
    });
    encode_offsets(offsets, p, out);
}

/// Writes a packed body of `p` holding `offsets` (each below `2^p.bits`) into
/// `out` (zeroed, at least [`packed_bytes`] long).
pub fn encode_offsets(offsets: impl Iterator<Item = u64>, p: Packing, out: &mut [u8]) {
    out[0..8].copy_from_slice(&p.base.to_le_bytes());
    out[8] = p.bits as u8;
    if p.bits == 0 {
        return;
    }
    let data = &mut out[PACK_HEAD..];
    for (k, off) in offsets.enumerate() {
        let bit = k * p.bits as usize;
        let (byte, shift) = (bit / 8, bit % 8);
        let word = u64::from_le_bytes(data[byte..byte + 8].try_into().unwrap());
        let word = word | off << shift;
        data[byte..byte + 8].copy_from_slice(&word.to_le_bytes());
    }
}

/// The packing of a packed page body (`body` starts after the head and bitmap)
/// holding `n` rows, checked against the body's length.
pub fn read_packing(body: &[u8], n: usize) -> Result<Packing, String> {
    let head = body
        .get(..PACK_HEAD)
        .ok_or("packed column page too short for its packing")?;
    let base = i64::from_le_bytes(head[0..8].try_into().unwrap());
    let bits = head[8] as u32;
    if bits > MAX_BITS {
        return Err(format!("packed column page claims {bits}-bit values"));
    }
    if body.len() < packed_bytes(n, bits) {
        return Err(format!(
            "packed column page too short for {n} values of {bits} bits"
        ));
    }
    Ok(Packing { base, bits })
}

/// Appends rows `from..to` of a packed body (checked by [`read_packing`] for at
/// least `to` rows) to `out`, each converted by `conv`.
pub fn decode<T>(
    body: &[u8],
    p: Packing,
    from: usize,
    to: usize,
    out: &mut Vec<T>,
    conv: impl Fn(i64) -> T,
) {
    out.reserve(to - from);
    if p.bits == 0 {
        out.extend((from..to).map(|_| conv(p.base)));
        return;
    }
    let data = &body[PACK_HEAD..];
    let bits = p.bits as usize;
    let mask = (1u64 << p.bits) - 1;
    // `read_packing` checked that the body holds `packed_bytes(to, bits)`:
    // value `i < to` starts at byte `i * bits / 8`, and its 8-byte load ends
    // before `(to * bits).div_ceil(8) + PAD`.
    assert!(data.len() >= (to * bits).div_ceil(8) + PAD);
    let ptr = data.as_ptr();
    let value = |i: usize| {
        let bit = i * bits;
        // SAFETY: `bit / 8 + 8 <= (to * bits).div_ceil(8) + PAD <= data.len()`
        // for every `i < to` (asserted above): the load reads inside `data`.
        let word = unsafe { ptr.add(bit / 8).cast::<u64>().read_unaligned() };
        conv(
            p.base
                .wrapping_add((u64::from_le(word) >> (bit % 8) & mask) as i64),
        )
    };
    // Eight values start on a byte boundary (`8 * bits` bits). The groups of
    // eight between the head and the tail are unpacked by a loop compiled for
    // the page's width: each value's byte and shift in its group are constants.
    let head_end = from.next_multiple_of(8).min(to);
    out.extend((from..head_end).map(value));
    let groups = (to - head_end) / 8;
    let len = out.len();
    let slots = &mut out.spare_capacity_mut()[..8 * groups];
    // SAFETY (for `groups_of`): the values `head_end..head_end + 8 * groups`
    // are below `to`, so their loads stay inside `data` as for `value`.
    let first = unsafe { ptr.add(head_end * bits / 8) };
    macro_rules! by_width {
        ($($b:literal),*) => {
            match bits {
                $($b => groups_of::<T, $b>(first, p.base, slots, &conv),)*
                _ => unreachable!("widths 1 to {MAX_BITS}"),
            }
        };
    }
    by_width!(
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
        26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
        49, 50, 51, 52, 53, 54, 55, 56
    );
    // SAFETY: `groups_of` wrote all `8 * groups` slots after `len`.
    unsafe { out.set_len(len + 8 * groups) };
    out.extend((head_end + 8 * groups..to).map(value));
}

/// Appends the values at page rows `rows` (each below the row count
/// [`read_packing`] checked) of a packed body to `out`, each with one 8-byte
/// load: a filtered scan's other columns, decoded only where rows survive.
pub fn decode_at<T>(
    body: &[u8],
    p: Packing,
    rows: &[u32],
    out: &mut Vec<T>,
    conv: impl Fn(i64) -> T,
) {
    out.reserve(rows.len());
    if p.bits == 0 {
        out.extend(rows.iter().map(|_| conv(p.base)));
        return;
    }
    let data = &body[PACK_HEAD..];
    let bits = p.bits as usize;
    let mask = (1u64 << p.bits) - 1;
    let top = rows.iter().map(|&r| r as usize + 1).max().unwrap_or(0);
    // As in `decode`: every row below `top` has its 8-byte load inside `data`.
    assert!(data.len() >= (top * bits).div_ceil(8) + PAD);
    let ptr = data.as_ptr();
    out.extend(rows.iter().map(|&r| {
        let bit = r as usize * bits;
        // SAFETY: `r < top`, so `bit / 8 + 8 <= data.len()` (asserted above).
        let word = unsafe { ptr.add(bit / 8).cast::<u64>().read_unaligned() };
        conv(
            p.base
                .wrapping_add((u64::from_le(word) >> (bit % 8) & mask) as i64),
        )
    }));
}

/// Unpacks `slots.len() / 8` groups of eight `B`-bit offsets starting at the
/// byte `first` into `slots`, as `conv(base + offset)`. The caller guarantees
/// that `first + slots.len() * B / 8 + 8` bytes are readable.
#[inline(always)]
fn groups_of<T, const B: usize>(
    first: *const u8,
    base: i64,
    slots: &mut [std::mem::MaybeUninit<T>],
    conv: &impl Fn(i64) -> T,
) {
    let mask = (1u64 << B) - 1;
    for (g, group) in slots.chunks_exact_mut(8).enumerate() {
        // SAFETY: group `g` starts `g * B` bytes after `first`, and its last
        // load ends 8 bytes after byte `(8 * g + 7) * B / 8`: within what the
        // caller guarantees readable.
        let at = unsafe { first.add(g * B) };
        for (j, slot) in group.iter_mut().enumerate() {
            let word = unsafe { at.add(j * B / 8).cast::<u64>().read_unaligned() };
            let off = u64::from_le(word) >> (j * B % 8) & mask;
            slot.write(conv(base.wrapping_add(off as i64)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::{DataType, Value};

    fn round_trip(dt: DataType, vals: &[Value]) {
        let v = Vector::from_values(dt, vals).unwrap();
        let n = vals.len();
        let width = dt.fixed_width().unwrap();
        let p = plan(&v, 0, n, width).expect("packs");
        let mut body = vec![0u8; packed_bytes(n, p.bits)];
        encode(&v, 0, n, p, &mut body);
        assert_eq!(read_packing(&body, n).unwrap(), p);
        for (from, to) in [(0, n), (1, n), (n / 2, n), (0, 0)] {
            let mut out = Vec::new();
            decode(&body, p, from, to, &mut out, |x| x);
            for (k, x) in out.iter().enumerate() {
                let i = from + k;
                if !v.is_null(i) {
                    let want = match v.get_value(i) {
                        Value::Integer(y) | Value::Date(y) => y as i64,
                        Value::BigInt(y) => y,
                        other => panic!("{other:?}"),
                    };
                    assert_eq!(*x, want, "row {i}");
                }
            }
        }
        // Selected rows, one load each, equal the same rows decoded in a run.
        let mut all = Vec::new();
        decode(&body, p, 0, n, &mut all, |x| x);
        for step in [1, 3, 7, 64] {
            let rows: Vec<u32> = (0..n as u32).step_by(step).chain([n as u32 - 1]).collect();
            let mut got = Vec::new();
            decode_at(&body, p, &rows, &mut got, |x| x);
            let want: Vec<i64> = rows.iter().map(|&r| all[r as usize]).collect();
            assert_eq!(got, want, "every {step}th row");
        }
    }

    #[test]
    fn values_round_trip_at_every_width() {
        for bits in [1u32, 3, 7, 8, 13, 31, 32, 33, 55, 56] {
            let top = (1u64 << bits) - 1;
            let mut vals: Vec<Value> = (0..300u64)
                .map(|i| {
                    Value::BigInt(-5 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (top + 1)) as i64)
                })
                .collect();
            vals[0] = Value::BigInt(-5);
            vals[1] = Value::BigInt(-5 + top as i64);
            let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
            assert_eq!(plan(&v, 0, vals.len(), 8).unwrap().bits, bits);
            round_trip(DataType::BigInt, &vals);
        }
        let ints: Vec<Value> = (0..1000)
            .map(|i| Value::Integer(i32::MIN + i * 3))
            .collect();
        round_trip(DataType::Integer, &ints);
    }

    #[test]
    fn nulls_and_constants() {
        let vals = vec![
            Value::Null,
            Value::BigInt(42),
            Value::Null,
            Value::BigInt(42),
        ];
        let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
        assert_eq!(plan(&v, 0, 4, 8), Some(Packing { base: 42, bits: 0 }));
        round_trip(DataType::BigInt, &vals);
        let nulls = vec![Value::Null; 5];
        let v = Vector::from_values(DataType::BigInt, &nulls).unwrap();
        assert_eq!(plan(&v, 0, 5, 8), Some(Packing { base: 0, bits: 0 }));
    }

    #[test]
    fn full_range_does_not_pack() {
        let vals = vec![Value::BigInt(i64::MIN), Value::BigInt(i64::MAX)];
        let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
        assert_eq!(plan(&v, 0, 2, 8), None);
        assert_eq!(rows_that_fit(&v, 0, 2, 1000, 8, |_| 0), 0);
        let vals = vec![Value::Integer(i32::MIN), Value::Integer(i32::MAX)];
        let v = Vector::from_values(DataType::Integer, &vals).unwrap();
        assert_eq!(plan(&v, 0, 2, 4), None);
    }

    #[test]
    fn fit_grows_with_the_range() {
        // 0..4096: 12 bits at most; 1,000 bytes hold (1000 - 24) * 8 / 12 rows.
        let vals: Vec<Value> = (0..4096).map(Value::BigInt).collect();
        let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
        let n = rows_that_fit(&v, 0, 4096, 1000, 8, |_| 0);
        let bits = bits_for(n as u64 - 1);
        assert!(packed_bytes(n, bits) <= 1000);
        assert!(packed_bytes(n + 1, bits_for(n as u64)) > 1000);
    }
}
