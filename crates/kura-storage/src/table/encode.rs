//! Column-page encoding: a page holds a run of one column's values — row count,
//! flags, optional validity bitmap, then fixed-width little-endian values,
//! bit-packed integer offsets (format 5, flag [`PACKED`], see [`packed`]),
//! (offsets, bytes) for text, or a dictionary and bit-packed codes for text
//! whose values repeat (format 6, flag [`DICT`], see [`dict`]). Decoding
//! appends a row sub-range of a page to a vector, so a single row costs one
//! page.
//!
//! A text value too long for a page of its own (format 3) is a *long-value page*:
//! one row, flag [`LONG`], the value's length, the first of its overflow pages and
//! as many of its bytes as fit; the rest follows in a chain of overflow pages
//! (next page, bytes used, bytes), each checksummed like every page. The flag is
//! per page, so decoding ordinary pages pays one test per page, none per value.

use kura_common::types::PhysicalType;
use kura_common::{ColumnData, DataType, Vector};

use super::{dict, packed};
use crate::file::PageId;

/// Bytes before the bitmap: row count (4), flags (1), reserved (3).
const HEAD: usize = 8;
const HAS_NULLS: u8 = 1;
/// The page holds one long text value whose tail is in overflow pages.
const LONG: u8 = 2;
/// After [`HEAD`] on a long-value page: the value's length (8), first overflow page (8).
const LONG_HEAD: usize = 16;
/// The page's integer values are bit-packed offsets from a base (format 5,
/// [`packed`]).
const PACKED: u8 = 4;
/// The page's text values are a dictionary and bit-packed codes (format 6,
/// [`dict`]).
const DICT: u8 = 8;
/// Before the bytes of an overflow page: next page (8, 0 = last), bytes used (4).
pub const OVERFLOW_LINK: usize = 12;

/// Whether a column page payload is a long-value page.
pub fn is_long(page: &[u8]) -> bool {
    page.get(4).is_some_and(|f| f & LONG != 0)
}

/// Bytes of a long value kept on its column page.
pub fn long_inline_bytes(payload: usize) -> usize {
    payload - HEAD - LONG_HEAD
}

/// Overflow pages a long value of `len` bytes needs.
pub fn overflow_pages_for(payload: usize, len: usize) -> usize {
    len.saturating_sub(long_inline_bytes(payload))
        .div_ceil(payload - OVERFLOW_LINK)
}

/// Writes the column page of a long value (`bytes` whole; only its head is
/// stored here) whose tail starts at overflow page `first_overflow`.
pub fn encode_long(bytes: &[u8], first_overflow: PageId, out: &mut [u8]) {
    out[0..4].copy_from_slice(&1u32.to_le_bytes());
    out[4] = LONG;
    out[HEAD..HEAD + 8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    out[HEAD + 8..HEAD + 16].copy_from_slice(&first_overflow.to_le_bytes());
    let inline = long_inline_bytes(out.len()).min(bytes.len());
    out[HEAD + LONG_HEAD..HEAD + LONG_HEAD + inline].copy_from_slice(&bytes[..inline]);
}

/// Writes one overflow page: `chunk` (at most payload - 12 bytes), then `next`.
pub fn encode_overflow(chunk: &[u8], next: PageId, out: &mut [u8]) {
    out[0..8].copy_from_slice(&next.to_le_bytes());
    out[8..12].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
    out[OVERFLOW_LINK..OVERFLOW_LINK + chunk.len()].copy_from_slice(chunk);
}

/// A long-value page: the value's length, its first overflow page (0 if none)
/// and the bytes stored inline.
pub fn decode_long(page: &[u8]) -> Result<(usize, PageId, &[u8]), String> {
    if page.len() < HEAD + LONG_HEAD || row_count(page) != 1 {
        return Err("long-value page does not hold exactly one row".into());
    }
    let len = u64::from_le_bytes(page[HEAD..HEAD + 8].try_into().unwrap());
    let next = u64::from_le_bytes(page[HEAD + 8..HEAD + 16].try_into().unwrap());
    let inline = long_inline_bytes(page.len());
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= kura_common::MAX_VALUE_BYTES && l > inline)
        .ok_or_else(|| format!("long-value page claims a value of {len} bytes"))?;
    if next == 0 {
        return Err("long-value page names no overflow page".into());
    }
    Ok((len, next, &page[HEAD + LONG_HEAD..]))
}

/// An overflow page: the next page of the chain (0 = last) and its bytes.
pub fn decode_overflow(page: &[u8]) -> Result<(PageId, &[u8]), String> {
    if page.len() < OVERFLOW_LINK {
        return Err("overflow page too short".into());
    }
    let next = u64::from_le_bytes(page[0..8].try_into().unwrap());
    let used = u32::from_le_bytes(page[8..12].try_into().unwrap()) as usize;
    let bytes = page
        .get(OVERFLOW_LINK..OVERFLOW_LINK + used)
        .ok_or_else(|| format!("overflow page claims {used} bytes"))?;
    Ok((next, bytes))
}

fn bitmap_len(n: usize) -> usize {
    n.div_ceil(8)
}

/// How many rows starting at `start` fit one page of `payload` bytes.
pub fn rows_that_fit(v: &Vector, start: usize, payload: usize) -> usize {
    let remaining = v.len() - start;
    match v.data_type.fixed_width() {
        Some(w) => {
            let plain = ((payload - HEAD) * 8 / (8 * w + 1)).min(remaining);
            let bitmap = |n| {
                if v.validity.is_some() {
                    bitmap_len(n)
                } else {
                    0
                }
            };
            let packed = packed::rows_that_fit(v, start, remaining, payload - HEAD, w, bitmap);
            plain.max(packed)
        }
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
            // A dictionary page when it holds more rows (`encode` tells the
            // two apart by whether the plain page fits).
            n.max(dict::rows_that_fit(
                s,
                start,
                remaining,
                payload - HEAD,
                bitmap_len,
            ))
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
    if let (ColumnData::I32(_) | ColumnData::I64(_), Some(w)) = (&v.data, v.data_type.fixed_width())
    {
        // Packed when the values' range needs fewer bits and the packed page
        // fits (`rows_that_fit` counted rows either packed or plain).
        if let Some(p) = packed::plan(v, start, n, w) {
            if pos + packed::packed_bytes(n, p.bits) <= out.len() {
                out[4] |= PACKED;
                packed::encode(v, start, n, p, &mut out[pos..]);
                return;
            }
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
            let bytes = (s.offsets[start + n] - base) as usize;
            if pos + 4 * (n + 1) + bytes > out.len() {
                out[4] |= DICT;
                dict::encode(s, start, n, &mut out[pos..]);
                return;
            }
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

/// Rows recorded in a column page payload (0 for a payload too short to say).
pub fn row_count(page: &[u8]) -> usize {
    page.get(0..4)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
}

/// Appends the values at page rows `rows` (ascending) of a fixed-width or a
/// dictionary column page to `out`: packed pages load each value (or code)
/// where it lies, plain ones copy it. `Ok(false)`, with `out` unchanged, for
/// pages this cannot serve (plain text, long values, booleans): the caller
/// decodes the range and takes the rows.
pub fn decode_rows_into(
    page: &[u8],
    dt: DataType,
    rows: &[u32],
    out: &mut Vector,
) -> Result<bool, String> {
    let n = row_count(page);
    if page.len() < HEAD {
        return Err("column page too short for its header".into());
    }
    if rows.last().is_some_and(|&r| r as usize >= n) {
        return Err(format!(
            "column page holds {n} rows, asked for row {}",
            rows[rows.len() - 1]
        ));
    }
    let flags = page[4];
    let dictionary = flags & DICT != 0 && dt.physical() == PhysicalType::Str;
    if flags & LONG != 0
        || !(dictionary
            || matches!(
                dt.physical(),
                PhysicalType::I32 | PhysicalType::I64 | PhysicalType::I128 | PhysicalType::F64
            ))
    {
        return Ok(false);
    }
    let mut pos = HEAD;
    let bitmap = if flags & HAS_NULLS != 0 {
        let bm = page
            .get(pos..pos + bitmap_len(n))
            .ok_or_else(|| format!("column page too short for the NULL bitmap of {n} rows"))?;
        pos += bitmap_len(n);
        Some(bm)
    } else {
        None
    };
    if dictionary {
        let ColumnData::Str(s) = &mut out.data else {
            return Err(format!("vector of the wrong type for {dt}"));
        };
        let before = s.len();
        // Everything that can fail comes before the values change.
        let dict = dict::Page::parse(&page[pos..], n)?;
        dict.append(&dict.codes_at(rows)?, s)?;
        extend_validity(out, before, bitmap, rows);
        return Ok(true);
    }
    let packing = if flags & PACKED != 0 {
        if !matches!(dt.physical(), PhysicalType::I32 | PhysicalType::I64) {
            return Err(format!("a packed column page read as {dt}"));
        }
        Some(packed::read_packing(&page[pos..], n)?)
    } else {
        let width = match dt.physical() {
            PhysicalType::I32 => 4,
            PhysicalType::I128 => 16,
            _ => 8,
        };
        if page.len() < pos + n * width {
            return Err(format!("column page too short for {n} values"));
        }
        None
    };
    // Checked above: nothing below fails, so `out` changes only on success.
    extend_validity(out, out.len(), bitmap, rows);
    let body = &page[pos..];
    macro_rules! plain {
        ($vec:expr, $t:ty, $w:expr) => {
            $vec.extend(rows.iter().map(|&i| {
                let at = i as usize * $w;
                <$t>::from_le_bytes(body[at..at + $w].try_into().unwrap())
            }))
        };
    }
    match (&mut out.data, packing) {
        (ColumnData::I32(v), Some(p)) => packed::decode_at(body, p, rows, v, |x| x as i32),
        (ColumnData::I64(v), Some(p)) => packed::decode_at(body, p, rows, v, |x| x),
        (ColumnData::I32(v), None) => plain!(v, i32, 4),
        (ColumnData::I64(v), None) => plain!(v, i64, 8),
        (ColumnData::I128(v), None) => plain!(v, i128, 16),
        (ColumnData::F64(v), None) => plain!(v, f64, 8),
        _ => return Err(format!("vector of the wrong type for {dt}")),
    }
    Ok(true)
}

/// Appends the NULL flags of page rows `rows` (from the page's bitmap, if it
/// has one) to `out`, which held `before` rows before their values.
fn extend_validity(out: &mut Vector, before: usize, bitmap: Option<&[u8]>, rows: &[u32]) {
    if let Some(bm) = bitmap {
        let validity = out.validity.get_or_insert_with(|| vec![true; before]);
        validity.extend(
            rows.iter()
                .map(|&i| bm[i as usize / 8] & (1 << (i % 8)) != 0),
        );
    } else if let Some(validity) = &mut out.validity {
        validity.extend(std::iter::repeat_n(true, rows.len()));
    }
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
    if page.len() < HEAD {
        return Err("column page too short for its header".into());
    }
    let flags = page[4];
    if flags & LONG != 0 {
        return Err("a long-value page read without its overflow pages".into());
    }
    // Everything that can fail is checked before `out` changes, so a damaged
    // page leaves the vector as it was.
    let mut pos = HEAD;
    let bitmap = if flags & HAS_NULLS != 0 {
        let bm = page
            .get(pos..pos + bitmap_len(n))
            .ok_or_else(|| format!("column page too short for the NULL bitmap of {n} rows"))?;
        pos += bitmap_len(n);
        Some(bm)
    } else {
        None
    };
    let dictionary = flags & DICT != 0;
    if dictionary && dt.physical() != PhysicalType::Str {
        return Err(format!("a dictionary column page read as {dt}"));
    }
    let text = match dt.physical() {
        PhysicalType::Str if !dictionary => Some(text_span(page, pos, n, from, to)?),
        _ => None,
    };
    let packing = if flags & PACKED != 0 {
        if !matches!(dt.physical(), PhysicalType::I32 | PhysicalType::I64) {
            return Err(format!("a packed column page read as {dt}"));
        }
        Some(packed::read_packing(&page[pos..], n)?)
    } else {
        None
    };
    let before = out.len();
    let validity_before = out.validity.as_ref().map(Vec::len);
    let undo_validity = |out: &mut Vector| match validity_before {
        Some(l) => {
            if let Some(v) = &mut out.validity {
                v.truncate(l);
            }
        }
        None => out.validity = None,
    };
    if let Some(bm) = bitmap {
        let validity = out.validity.get_or_insert_with(|| vec![true; before]);
        validity.extend((from..to).map(|i| bm[i / 8] & (1 << (i % 8)) != 0));
    } else if let Some(validity) = &mut out.validity {
        validity.extend(std::iter::repeat_n(true, to - from));
    }
    macro_rules! get {
        ($vec:expr, $t:ty, $w:expr) => {{
            match page.get(pos + from * $w..pos + to * $w) {
                Some(src) => {
                    append_le::<$t, $w>($vec, src);
                    Ok(())
                }
                None => Err(format!("column page too short for {n} values")),
            }
        }};
    }
    let done = match (&mut out.data, dt.physical()) {
        (ColumnData::I32(v), PhysicalType::I32) if packing.is_some() => {
            let p = packing.expect("tested");
            // Offsets from an i32 base within the page's i32 range.
            packed::decode(&page[pos..], p, from, to, v, |x| x as i32);
            Ok(())
        }
        (ColumnData::I64(v), PhysicalType::I64) if packing.is_some() => {
            let p = packing.expect("tested");
            packed::decode(&page[pos..], p, from, to, v, |x| x);
            Ok(())
        }
        (ColumnData::Bool(v), PhysicalType::Bool) => match page.get(pos + from..pos + to) {
            Some(src) => {
                v.extend(src.iter().map(|b| *b != 0));
                Ok(())
            }
            None => Err(format!("column page too short for {n} values")),
        },
        (ColumnData::I32(v), PhysicalType::I32) => get!(v, i32, 4),
        (ColumnData::I64(v), PhysicalType::I64) => get!(v, i64, 8),
        (ColumnData::I128(v), PhysicalType::I128) => get!(v, i128, 16),
        (ColumnData::F64(v), PhysicalType::F64) => get!(v, f64, 8),
        (ColumnData::Str(s), PhysicalType::Str) if dictionary => {
            dict::decode(&page[pos..], n, from, to, s)
        }
        (ColumnData::Str(s), PhysicalType::Str) => {
            let (offsets_at, a, bytes) = text.expect("text span checked above");
            if s.data.len() + bytes.len() > u32::MAX as usize {
                Err(dict::TOO_MUCH_TEXT.to_string())
            } else {
                let (data_before, offsets_before) = (s.data.len(), s.offsets.len());
                let base = data_before as u32;
                s.data.extend_from_slice(bytes);
                // Offsets ascending from `a` end at `b` (checked by text_span), so
                // every row lies inside the bytes copied; a descending one is damage.
                // Rebased in one pass and checked in another: both vectorize.
                let stored = &page[offsets_at + 4 * (from + 1)..offsets_at + 4 * (to + 1)];
                s.offsets.extend(stored.chunks_exact(4).map(|c| {
                    let off = u32::from_le_bytes(c.try_into().unwrap());
                    base.wrapping_add(off.wrapping_sub(a))
                }));
                let added = &s.offsets[offsets_before - 1..];
                let ok = added.windows(2).fold(true, |ok, w| ok & (w[1] >= w[0]));
                if ok {
                    Ok(())
                } else {
                    s.data.truncate(data_before);
                    s.offsets.truncate(offsets_before);
                    Err("column page text offsets descend".to_string())
                }
            }
        }
        _ => Err(format!("vector of the wrong type for {dt}")),
    };
    if done.is_err() {
        undo_validity(out);
    }
    done
}

/// A fixed-width number stored little-endian in `W` bytes.
trait LeBytes<const W: usize>: Copy {
    fn from_le(bytes: [u8; W]) -> Self;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes<{ std::mem::size_of::<$t>() }> for $t {
            fn from_le(bytes: [u8; std::mem::size_of::<$t>()]) -> Self {
                <$t>::from_le_bytes(bytes)
            }
        }
    )*};
}
le_bytes!(i32, i64, i128, f64);

/// Appends the values stored little-endian in `src` (a multiple of `W` bytes).
/// On a little-endian machine the page bytes are the values' own bytes: one
/// copy, not a load and store per value (the scan's largest cost after the
/// filters, TPC-H Q6).
fn append_le<T: LeBytes<W>, const W: usize>(out: &mut Vec<T>, src: &[u8]) {
    debug_assert_eq!(src.len() % W, 0);
    let count = src.len() / W;
    if cfg!(target_endian = "little") {
        out.reserve(count);
        let len = out.len();
        // SAFETY: `reserve` made room for `count` more values after `len`;
        // `src` holds exactly `count * W` bytes, every bit pattern is a valid
        // value of these number types, and on a little-endian machine their
        // memory layout is the stored bytes. The destination is a typed
        // allocation, so the (unaligned) source is copied bytewise.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr(),
                out.as_mut_ptr().add(len).cast::<u8>(),
                count * W,
            );
            out.set_len(len + count);
        }
    } else {
        out.extend(
            src.chunks_exact(W)
                .map(|c| T::from_le(c.try_into().expect("chunks of W bytes"))),
        );
    }
}

/// Checks that the offsets of a text page lie inside it and that rows
/// `from..to` span bytes inside it, and returns where the offsets start, the first offset, and the bytes
/// of rows `from..to`.
fn text_span(
    page: &[u8],
    pos: usize,
    n: usize,
    from: usize,
    to: usize,
) -> Result<(usize, u32, &[u8]), String> {
    let data_at = n
        .checked_add(1)
        .and_then(|k| k.checked_mul(4))
        .and_then(|k| k.checked_add(pos))
        .filter(|&d| d <= page.len())
        .ok_or_else(|| format!("column page too short for the offsets of {n} rows"))?;
    let off = |i: usize| u32::from_le_bytes(page[pos + 4 * i..pos + 4 * i + 4].try_into().unwrap());
    let (a, b) = (off(from), off(to));
    if b < a {
        return Err("column page text offsets descend".into());
    }
    let bytes = page
        .get(data_at + a as usize..data_at + b as usize)
        .ok_or_else(|| "column page text truncated".to_string())?;
    Ok((pos, a, bytes))
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
    fn repeating_text_takes_a_dictionary_page_and_distinct_text_does_not() {
        // Ship modes with NULLs: a dictionary page holds many times the rows.
        let modes = ["AIR", "REG AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "FOB"];
        let vals: Vec<Value> = (0..20_000)
            .map(|i| match i % 13 {
                0 => Value::Null,
                _ => Value::Text(modes[i % 7].into()),
            })
            .collect();
        let dt = DataType::Varchar(None);
        let v = Vector::from_values(dt, &vals).unwrap();
        let plain_rows = 16368 / 9;
        let n = rows_that_fit(&v, 0, 16368);
        assert!(n > 10 * plain_rows, "{n} rows");
        let mut page = vec![0u8; 16368];
        encode(&v, 0, n, &mut page);
        assert_eq!(page[4], HAS_NULLS | DICT);
        let mut out = Vector::new(dt, 0);
        decode_into(&page, dt, 5, n, &mut out).unwrap();
        for (i, want) in vals.iter().enumerate().take(n).skip(5) {
            assert_eq!(&out.get_value(i - 5), want, "row {i}");
        }
        // Read as another type, it is refused.
        assert!(decode_into(
            &page,
            DataType::BigInt,
            0,
            1,
            &mut Vector::new(DataType::BigInt, 0)
        )
        .is_err());
        // Distinct values stay plain.
        let vals: Vec<Value> = (0..2000).map(|i| Value::Text(format!("c{i}"))).collect();
        let v = Vector::from_values(dt, &vals).unwrap();
        let n = rows_that_fit(&v, 0, 16368);
        let mut page = vec![0u8; 16368];
        encode(&v, 0, n, &mut page);
        assert_eq!(page[4] & DICT, 0);
    }

    #[test]
    fn dictionary_pages_of_every_value_width_decode_ranges_and_rows() {
        let dt = DataType::Varchar(None);
        // Values up to 8, 16, 32 bytes and longer: each copy width and the
        // general path, with an empty value and NULLs among them.
        for longest in [8, 16, 32, 40] {
            let words: Vec<String> = (0..=longest)
                .map(|k| "é".repeat(k / 2) + &"w".repeat(k % 2))
                .collect();
            let vals: Vec<Value> = (0..5000)
                .map(|i| match i % 11 {
                    0 => Value::Null,
                    _ => Value::Text(words[i * 7 % words.len()].clone()),
                })
                .collect();
            let v = Vector::from_values(dt, &vals).unwrap();
            let n = rows_that_fit(&v, 0, 16368);
            let mut page = vec![0u8; 16368];
            encode(&v, 0, n, &mut page);
            assert_eq!(page[4] & DICT, DICT, "longest {longest}");
            let mut out = Vector::from_values(dt, &[Value::Text("first".into())]).unwrap();
            decode_into(&page, dt, 2, n, &mut out).unwrap();
            for (i, want) in vals.iter().enumerate().take(n).skip(2) {
                assert_eq!(&out.get_value(i - 1), want, "longest {longest} row {i}");
            }
            let rows: Vec<u32> = (0..n as u32).filter(|r| r % 3 == 1).collect();
            // A vector without NULLs so far: the page's NULLs start its bitmap.
            let mut out = Vector::from_values(dt, &[Value::Text("x".into())]).unwrap();
            assert!(decode_rows_into(&page, dt, &rows, &mut out).unwrap());
            assert_eq!(out.get_value(0), Value::Text("x".into()));
            assert_eq!(out.len(), 1 + rows.len());
            for (k, &r) in rows.iter().enumerate() {
                assert_eq!(
                    out.get_value(1 + k),
                    vals[r as usize],
                    "longest {longest} row {r}"
                );
            }
            let mut wrong = Vector::new(DataType::BigInt, 0);
            assert!(decode_rows_into(&page, dt, &rows, &mut wrong).is_err());
            assert_eq!(wrong.len(), 0);
        }
    }

    #[test]
    fn fixed_capacity_respects_payload() {
        // Values spanning all 64 bits: stored plain.
        let vals: Vec<Value> = (0..5000)
            .map(|i| Value::BigInt(if i % 2 == 0 { i64::MIN } else { i64::MAX }))
            .collect();
        let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
        let n = rows_that_fit(&v, 0, 16368);
        assert!(n < 5000 && 8 + n.div_ceil(8) + n * 8 <= 16368);
        let mut page = vec![0u8; 16368];
        encode(&v, 0, n, &mut page);
        let mut out = Vector::new(DataType::BigInt, n);
        decode_into(&page, DataType::BigInt, 0, n, &mut out).unwrap();
        assert_eq!(out.len(), n);
        assert!(decode_into(&page, DataType::BigInt, 0, n + 1, &mut out).is_err());
    }

    #[test]
    fn narrow_integers_pack_more_rows_per_page() {
        // Quantities 1..=50 with NULLs: 6 bits per value instead of 64.
        let vals: Vec<Value> = (0..100_000)
            .map(|i| {
                if i % 97 == 0 {
                    Value::Null
                } else {
                    Value::BigInt(1 + i % 50)
                }
            })
            .collect();
        let v = Vector::from_values(DataType::BigInt, &vals).unwrap();
        let n = rows_that_fit(&v, 0, 16368);
        assert!(n > 16368 * 8 / 8, "{n} rows");
        let mut page = vec![0u8; 16368];
        encode(&v, 0, n, &mut page);
        assert_eq!(page[4] & PACKED, PACKED);
        let mut out = Vector::new(DataType::BigInt, n);
        decode_into(&page, DataType::BigInt, 3, n, &mut out).unwrap();
        for (i, want) in vals.iter().enumerate().take(n).skip(3) {
            assert_eq!(&out.get_value(i - 3), want, "row {i}");
        }
        // A damaged width is refused, not read past the page.
        page[HEAD + bitmap_len(n) + 8] = 57;
        assert!(decode_into(&page, DataType::BigInt, 0, n, &mut out).is_err());
    }
}
