//! Dictionary coding of text column pages (format 6, flag `DICT` in
//! [`super::encode`]): a page whose values repeat (flags, statuses, modes,
//! priorities, brands, containers) stores each distinct value once and, per
//! row, the value's number bit-packed in as few bits as the page's dictionary
//! needs. TPC-H lineitem's `l_returnflag` took 5 bytes a row (its byte and a
//! 4-byte offset) and takes 2 bits: more rows per page, fewer bytes through the
//! memory hierarchy and in a buffer pool of a given size. A row still costs one
//! page.
//!
//! Layout after the page head and NULL bitmap: the dictionary's size `d` (u32),
//! 4 reserved bytes, `d + 1` ascending u32 offsets into the dictionary's bytes,
//! those bytes, then the codes as a packed body of base 0 ([`packed`]). Every
//! row has a code, a NULL row the one of the bytes its vector held, so a page
//! decodes to exactly the vector it was written from.

use hashbrown::{HashMap, HashSet};
use kura_common::vector::StrVec;

use super::packed::{self, Packing};

/// What a vector of text can hold at most (its offsets are 32-bit).
pub const TOO_MUCH_TEXT: &str =
    "more than 4 GiB of text in one batch of rows (a vector's limit); read fewer rows at a time";

/// Bytes before the dictionary's offsets: its size (4), reserved (4).
const DICT_HEAD: usize = 8;
/// Rows looked at before a page whose values mostly differ gives up on a
/// dictionary (comments, names): the look costs a hash per row.
const TRIAL_ROWS: usize = 256;

/// A value as a dictionary's key: equal when the bytes are, compared without a call to
/// `memcmp` when short (flags, modes, instructions: a call per row was the largest cost of
/// writing lineitem's text columns — each row is looked up once to size the page and once
/// to code it).
#[derive(Clone, Copy)]
struct Key<'a>(&'a [u8]);

impl PartialEq for Key<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0, other.0);
        if a.len() != b.len() {
            return false;
        }
        let n = a.len();
        let word = |x: &[u8], at: usize| u64::from_le_bytes(x[at..at + 8].try_into().unwrap());
        match n {
            0 => true,
            1..=7 => a.iter().zip(b).all(|(x, y)| x == y),
            // Two words, overlapping when shorter than 16: every byte is in one.
            8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
            _ => a == b,
        }
    }
}

impl Eq for Key<'_> {}

impl std::hash::Hash for Key<'_> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

/// Bits per code of a dictionary of `d` values.
fn code_bits(d: usize) -> u32 {
    if d <= 1 {
        0
    } else {
        usize::BITS - (d - 1).leading_zeros()
    }
}

/// Bytes after the page head and bitmap of a dictionary page of `n` rows, `d`
/// distinct values and `bytes` bytes of them.
fn body_bytes(n: usize, d: usize, bytes: usize) -> usize {
    DICT_HEAD + 4 * (d + 1) + bytes + packed::packed_bytes(n, code_bits(d))
}

/// How many rows from `start` (at most `remaining`) fit `space` bytes after
/// the page head as a dictionary page, with a bitmap of at most `bitmap(n)`
/// bytes; 0 when the values mostly differ.
pub fn rows_that_fit(
    s: &StrVec,
    start: usize,
    remaining: usize,
    space: usize,
    bitmap: impl Fn(usize) -> usize,
) -> usize {
    let mut seen: HashSet<Key> = HashSet::new();
    let mut bytes = 0;
    let mut n = 0;
    while n < remaining.min(packed::MAX_PACKED_ROWS) {
        let value = s.get_bytes(start + n);
        let new = !seen.contains(&Key(value));
        let (d, b) = if new {
            (seen.len() + 1, bytes + value.len())
        } else {
            (seen.len(), bytes)
        };
        if bitmap(n + 1) + body_bytes(n + 1, d, b) > space {
            break;
        }
        if new {
            seen.insert(Key(value));
            bytes = b;
        }
        n += 1;
        if n == TRIAL_ROWS && 4 * seen.len() > 3 * n {
            return 0;
        }
    }
    n
}

/// Writes rows `start..start + n` of `s` as a dictionary page body into `out`
/// (the space after the page head and bitmap, zeroed; `rows_that_fit` said
/// they fit).
pub fn encode(s: &StrVec, start: usize, n: usize, out: &mut [u8]) {
    let mut numbers: HashMap<Key, u32> = HashMap::new();
    let mut values: Vec<&[u8]> = Vec::new();
    let codes: Vec<u64> = (start..start + n)
        .map(|i| {
            let value = s.get_bytes(i);
            *numbers.entry(Key(value)).or_insert_with(|| {
                values.push(value);
                values.len() as u32 - 1
            }) as u64
        })
        .collect();
    let d = values.len();
    out[0..4].copy_from_slice(&(d as u32).to_le_bytes());
    let mut at = DICT_HEAD + 4 * (d + 1);
    let mut off = 0u32;
    for (k, value) in values.iter().enumerate() {
        out[DICT_HEAD + 4 * k..DICT_HEAD + 4 * k + 4].copy_from_slice(&off.to_le_bytes());
        out[at..at + value.len()].copy_from_slice(value);
        at += value.len();
        off += value.len() as u32;
    }
    out[DICT_HEAD + 4 * d..DICT_HEAD + 4 * d + 4].copy_from_slice(&off.to_le_bytes());
    let p = Packing {
        base: 0,
        bits: code_bits(d),
    };
    packed::encode_offsets(codes.into_iter(), p, &mut out[at..]);
}

/// A dictionary page body, checked: its values and its codes' packing.
pub struct Page<'a> {
    /// `d + 1` ascending offsets into `bytes`.
    offsets: Vec<u32>,
    bytes: &'a [u8],
    /// The packed codes (head included).
    codes: &'a [u8],
    packing: Packing,
}

impl<'a> Page<'a> {
    /// Reads the body of a dictionary page of `n` rows (`body` starts after the
    /// page head and bitmap).
    pub fn parse(body: &'a [u8], n: usize) -> Result<Page<'a>, String> {
        let word = |at: usize| -> Option<u32> {
            body.get(at..at + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        };
        let d = word(0).ok_or("dictionary page too short for its size")? as usize;
        if d > n.max(1) {
            return Err(format!("dictionary page of {n} rows claims {d} values"));
        }
        let offsets: Vec<u32> = (0..=d)
            .map(|k| word(DICT_HEAD + 4 * k))
            .collect::<Option<_>>()
            .ok_or("dictionary page too short for its offsets")?;
        if offsets[0] != 0 || offsets.windows(2).any(|w| w[1] < w[0]) {
            return Err("dictionary page offsets descend".into());
        }
        let bytes_at = DICT_HEAD + 4 * (d + 1);
        let bytes = body
            .get(bytes_at..bytes_at + offsets[d] as usize)
            .ok_or("dictionary page too short for its values")?;
        let codes = &body[bytes_at + bytes.len()..];
        let packing = packed::read_packing(codes, n)?;
        if packing.base != 0 || packing.bits != code_bits(d) {
            return Err(format!(
                "dictionary page of {d} values has codes of {} bits from {}",
                packing.bits, packing.base
            ));
        }
        Ok(Page {
            offsets,
            bytes,
            codes,
            packing,
        })
    }

    /// The codes of rows `from..to` (below the page's row count), each checked
    /// against the dictionary's size.
    pub fn codes_of_range(&self, from: usize, to: usize) -> Result<Vec<u32>, String> {
        let mut codes = Vec::new();
        packed::decode(self.codes, self.packing, from, to, &mut codes, |x| x as u32);
        self.checked(codes)
    }

    /// The codes of page rows `rows` (each below the page's row count).
    pub fn codes_at(&self, rows: &[u32]) -> Result<Vec<u32>, String> {
        let mut codes = Vec::new();
        packed::decode_at(self.codes, self.packing, rows, &mut codes, |x| x as u32);
        self.checked(codes)
    }

    /// `codes`, if each names a value (`bits` covers values up to the next
    /// power of two).
    fn checked(&self, codes: Vec<u32>) -> Result<Vec<u32>, String> {
        let d = self.offsets.len() - 1;
        match codes.iter().all(|&c| (c as usize) < d) {
            true => Ok(codes),
            false => Err(format!("dictionary page code beyond its {d} values")),
        }
    }

    /// Appends the values of `codes` (checked) to `out`; on error (more text
    /// than a vector holds) `out` is unchanged.
    pub fn append(&self, codes: &[u32], out: &mut StrVec) -> Result<(), String> {
        let lens: Vec<u32> = self.offsets.windows(2).map(|w| w[1] - w[0]).collect();
        let longest = lens.iter().copied().max().unwrap_or(0);
        let bound = codes.len() as u64 * longest as u64;
        if out.data.len() as u64 + bound > u32::MAX as u64 {
            // The bound is only a bound: the exact length decides.
            let total: u64 = codes.iter().map(|&c| lens[c as usize] as u64).sum();
            if out.data.len() as u64 + total > u32::MAX as u64 {
                return Err(TOO_MUCH_TEXT.to_string());
            }
        }
        match longest {
            1 if lens.iter().all(|&l| l == 1) && self.bytes.len() <= 256 => {
                // One byte a value (flags, statuses): a byte table, counted offsets.
                let mut table = [0u8; 256];
                table[..self.bytes.len()].copy_from_slice(self.bytes);
                let base = out.data.len() as u32;
                out.data
                    .extend(codes.iter().map(|&c| table[c as u8 as usize]));
                out.offsets
                    .extend((1..=codes.len() as u32).map(|i| base + i));
            }
            0..=8 => self.gather::<8>(codes, &lens, out),
            9..=16 => self.gather::<16>(codes, &lens, out),
            17..=32 => self.gather::<32>(codes, &lens, out),
            _ => {
                for &c in codes {
                    let c = c as usize;
                    let value = &self.bytes[self.offsets[c] as usize..self.offsets[c + 1] as usize];
                    out.data.extend_from_slice(value);
                    out.offsets.push(out.data.len() as u32);
                }
            }
        }
        Ok(())
    }

    /// Appends values of at most `W` bytes (`lens`, one a value) with one
    /// `W`-byte copy each: a copy of a length known only at run time is a call
    /// into memmove per value. Each copy's bytes past its value are overwritten
    /// by the next one's or lie past the vector's end.
    fn gather<const W: usize>(&self, codes: &[u32], lens: &[u32], out: &mut StrVec) {
        // The dictionary padded so a `W`-byte read from any value stays inside.
        let mut padded = Vec::with_capacity(self.bytes.len() + W);
        padded.extend_from_slice(self.bytes);
        padded.resize(self.bytes.len() + W, 0);
        out.data.reserve(codes.len() * W + W);
        out.offsets.reserve(codes.len());
        let (mut len, first_offset) = (out.data.len(), out.offsets.len());
        let dst = out.data.as_mut_ptr();
        let offsets = out.offsets.spare_capacity_mut();
        for (slot, &c) in offsets.iter_mut().zip(codes) {
            let c = c as usize;
            // SAFETY: `checked` made every code below the dictionary's size,
            // the length of `lens` and one less than that of `self.offsets`.
            // A value starts at most at `bytes.len()`, so its `W` bytes lie in
            // `padded`; each value is at most `W` bytes, so `len` grows by at
            // most `W` a code and the copy ends within the `codes.len() * W +
            // W` bytes reserved. Source and destination are different
            // allocations.
            unsafe {
                let at = *self.offsets.get_unchecked(c) as usize;
                std::ptr::copy_nonoverlapping(padded.as_ptr().add(at), dst.add(len), W);
                len += *lens.get_unchecked(c) as usize;
            }
            slot.write(len as u32);
        }
        // SAFETY: every byte below `len` was written by a copy above (or was
        // there before), and one offset for each code.
        unsafe {
            out.data.set_len(len);
            out.offsets.set_len(first_offset + codes.len());
        }
    }
}

/// Appends rows `from..to` of a dictionary page body (`body` starts after the
/// page head and bitmap; the page holds `n` rows) to `out`. Everything is
/// checked before `out` changes, so a damaged page leaves it as it was.
pub fn decode(
    body: &[u8],
    n: usize,
    from: usize,
    to: usize,
    out: &mut StrVec,
) -> Result<(), String> {
    let page = Page::parse(body, n)?;
    let codes = page.codes_of_range(from, to)?;
    page.append(&codes, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> StrVec {
        let mut s = StrVec::default();
        for v in values {
            s.push(v.as_bytes());
        }
        s
    }

    #[test]
    fn code_widths_cover_the_dictionary() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 256, 257].map(code_bits),
            [0, 0, 1, 2, 2, 3, 8, 9]
        );
    }

    #[test]
    fn repeated_values_round_trip_in_any_range() {
        let values: Vec<&str> = (0..3000)
            .map(|i| ["N", "R", "A", "", "TAKE BACK RETURN"][i * 7 % 5])
            .collect();
        let s = strings(&values);
        let n = rows_that_fit(&s, 0, s.len(), 16_000, |_| 0);
        assert_eq!(n, 3000);
        let mut page = vec![0u8; 16_000];
        encode(&s, 0, n, &mut page);
        for (from, to) in [(0, n), (1, 9), (17, 2999), (5, 5)] {
            let mut out = StrVec::default();
            out.push(b"before");
            decode(&page, n, from, to, &mut out).unwrap();
            assert_eq!(out.get(0), "before");
            for (i, want) in values.iter().enumerate().take(to).skip(from) {
                assert_eq!(out.get(1 + i - from), *want, "row {i}");
            }
        }
    }

    #[test]
    fn one_byte_values_take_the_byte_table() {
        let values: Vec<&str> = (0..70_000).map(|i| ["A", "F", "N", "R"][i % 4]).collect();
        let s = strings(&values);
        let n = rows_that_fit(&s, 0, s.len(), 16_000, |_| 0);
        // 2 bits a row after 56 bytes of heads and dictionary: 4 rows a byte.
        assert_eq!(n, (16_000 - 56) * 4);
        let mut page = vec![0u8; 16_000];
        encode(&s, 0, n, &mut page);
        let mut out = StrVec::default();
        decode(&page, n, 3, n, &mut out).unwrap();
        assert_eq!(out.len(), n - 3);
        assert!((0..n - 3).all(|i| out.get(i) == values[i + 3]));
    }

    #[test]
    fn distinct_values_give_up_after_the_trial() {
        let values: Vec<String> = (0..1000).map(|i| format!("comment {i}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let s = strings(&refs);
        assert_eq!(rows_that_fit(&s, 0, s.len(), 1 << 20, |_| 0), 0);
        // Fewer rows than the trial: whatever fits.
        assert_eq!(rows_that_fit(&s, 0, 10, 1 << 20, |_| 0), 10);
    }

    #[test]
    fn damaged_pages_are_refused_and_leave_the_vector() {
        let values: Vec<&str> = (0..100).map(|i| ["x", "yy", "zzz"][i % 3]).collect();
        let s = strings(&values);
        let mut page = vec![0u8; 4096];
        encode(&s, 0, 100, &mut page);
        let check = |page: &[u8]| {
            let mut out = StrVec::default();
            out.push(b"kept");
            let r = decode(page, 100, 0, 100, &mut out);
            if r.is_err() {
                assert_eq!(out, strings(&["kept"]));
            }
            r
        };
        assert!(check(&page).is_ok());
        let mut bad = page.clone();
        bad[0] = 200; // more values than rows
        assert!(check(&bad).is_err());
        let mut bad = page.clone();
        bad[DICT_HEAD + 4] = 9; // an offset past the next one
        assert!(check(&bad).is_err());
        let mut bad = page.clone();
        // Code 3 where the dictionary has 3 values (0 to 2), in 2 bits.
        let codes_at = DICT_HEAD + 4 * 4 + 6 + packed::PACK_HEAD;
        bad[codes_at] = 0b11;
        assert!(check(&bad).is_err());
        assert!(check(&page[..20]).is_err());
    }

    #[test]
    fn keys_are_equal_exactly_when_their_bytes_are() {
        for len in 0..40usize {
            let a: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(Key(&a) == Key(&a.clone()));
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 1;
                assert!(Key(&a) != Key(&b), "len {len}, byte {at}");
            }
            let longer = [a.as_slice(), b"x"].concat();
            assert!(Key(&a) != Key(&longer));
        }
    }
}
