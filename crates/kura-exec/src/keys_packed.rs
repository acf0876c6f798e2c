//! Group keys packed into one `u128`: for GROUP BY on a few small columns (flags,
//! statuses, modes, short codes, dates), a row's key is built column by column into
//! 16 bytes and hashed as one integer, instead of being encoded into a byte string
//! that is hashed and compared byte by byte (TPC-H Q1, Q4, Q12, Q22).
//!
//! The layout is fixed for an aggregation from its key types, so equal keys pack
//! equally in every batch and every worker. Each column gets a tag byte (0 = NULL)
//! and a fixed number of value bytes; text gets the bytes left over, its tag being
//! its length + 1. A string longer than its share makes the batch unpackable, and
//! the aggregation falls back to byte strings for good.

use kura_common::types::PhysicalType;
use kura_common::{ColumnData, DataType, Vector};

/// Bytes of a packed key.
const WIDTH: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Bool,
    I32,
    I64,
    /// Text of at most this many bytes (after CHAR's trailing blanks are trimmed).
    Text(usize),
}

impl Slot {
    fn bytes(self) -> usize {
        1 + match self {
            Slot::Bool => 1,
            Slot::I32 => 4,
            Slot::I64 => 8,
            Slot::Text(n) => n,
        }
    }
}

/// Where each key column goes in the 16 bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedLayout {
    slots: Vec<(Slot, usize)>,
}

impl PackedLayout {
    /// The layout for keys of these types, or `None` when they cannot fit 16 bytes
    /// (wide decimals, doubles, too many columns) or are a single integer (which
    /// has its own map).
    pub fn new(types: &[DataType]) -> Option<PackedLayout> {
        if types.len() < 2 && types.iter().all(|t| t.physical() != PhysicalType::Str) {
            return None;
        }
        let mut kinds = Vec::with_capacity(types.len());
        for t in types {
            kinds.push(match t.physical() {
                PhysicalType::Bool => Some(Slot::Bool),
                PhysicalType::I32 => Some(Slot::I32),
                PhysicalType::I64 if *t != DataType::Double => Some(Slot::I64),
                PhysicalType::Str => None,
                _ => return None,
            });
        }
        let fixed: usize = kinds.iter().flatten().map(|s| s.bytes()).sum();
        let texts = kinds.iter().filter(|k| k.is_none()).count();
        let left = WIDTH.checked_sub(fixed)?;
        let share = left.checked_div(texts).unwrap_or(0);
        if texts > 0 && share < 2 {
            return None;
        }
        let mut at = 0;
        let mut slots = Vec::with_capacity(kinds.len());
        for k in kinds {
            let slot = k.unwrap_or_else(|| Slot::Text(share - 1));
            slots.push((slot, at));
            at += slot.bytes();
        }
        Some(PackedLayout { slots })
    }

    /// The packed key of each of the first `n` rows, or `None` if a text value is
    /// longer than its share (or a column's data is not what the types promised).
    pub fn pack(&self, keys: &[Vector], n: usize) -> Option<Vec<u128>> {
        let keys: Vec<&Vector> = keys.iter().collect();
        self.pack_at(&keys, n, None)
    }

    /// [`PackedLayout::pack`] of the `selected` rows of `keys` (the first `n`
    /// when `None`): a scan's selection is packed where it lies, without copying
    /// the key columns' selected rows first.
    pub fn pack_at(
        &self,
        keys: &[&Vector],
        n: usize,
        selected: Option<&[u32]>,
    ) -> Option<Vec<u128>> {
        // One loop per case, so that the per-row index needs no branch.
        match selected {
            Some(sel) => self.pack_rows(keys, sel.len(), |i| sel[i] as usize),
            None => self.pack_rows(keys, n, |i| i),
        }
    }

    #[inline(always)]
    fn pack_rows(
        &self,
        keys: &[&Vector],
        n: usize,
        row: impl Fn(usize) -> usize + Copy,
    ) -> Option<Vec<u128>> {
        // Built as integers (byte `b` of the key is bits 8b..8b+7, as
        // `u128::from_le_bytes` reads it): no per-row copy of a few bytes.
        let mut rows = vec![0u128; n];
        for ((slot, at), k) in self.slots.iter().zip(keys) {
            let shift = (*at * 8) as u32;
            let tag = 1u128 << shift;
            match (&k.data, *slot) {
                (ColumnData::Bool(v), Slot::Bool) => {
                    for (i, r) in rows.iter_mut().enumerate() {
                        *r |= tag | (*v.get(row(i))? as u128) << (shift + 8);
                    }
                }
                (ColumnData::I32(v), Slot::I32) => {
                    for (i, r) in rows.iter_mut().enumerate() {
                        *r |= tag | (*v.get(row(i))? as u32 as u128) << (shift + 8);
                    }
                }
                (ColumnData::I64(v), Slot::I64) => {
                    for (i, r) in rows.iter_mut().enumerate() {
                        *r |= tag | (*v.get(row(i))? as u64 as u128) << (shift + 8);
                    }
                }
                (ColumnData::Str(s), Slot::Text(cap)) if cap < 8 => {
                    let char_type = matches!(k.data_type, DataType::Char(_));
                    pack_short_text(&mut rows, s, cap, char_type, shift, row)?;
                }
                (ColumnData::Str(s), Slot::Text(cap)) => {
                    let char_type = matches!(k.data_type, DataType::Char(_));
                    for (i, r) in rows.iter_mut().enumerate() {
                        let (from, to) = text_bounds(s, row(i), char_type)?;
                        let len = to - from;
                        if len > cap {
                            return None;
                        }
                        // Tag and bytes gathered in 64 bits while they fit (the
                        // flags of TPC-H Q1: up to 7 bytes), then shifted once.
                        let mut word = len as u64 + 1;
                        let mut high = 0u128;
                        for (j, &b) in s.data[from..to].iter().enumerate() {
                            if j < 7 {
                                word |= (b as u64) << (8 + 8 * j);
                            } else {
                                high |= (b as u128) << (8 * j as u32);
                            }
                        }
                        *r |= ((word as u128) | (high << 8)) << shift;
                    }
                }
                _ => return None,
            }
            if let Some(valid) = &k.validity {
                let bits = slot.bytes() * 8;
                let mask = if bits >= 128 {
                    u128::MAX
                } else {
                    ((1u128 << bits) - 1) << shift
                };
                for (i, r) in rows.iter_mut().enumerate() {
                    if !*valid.get(row(i))? {
                        *r &= !mask;
                    }
                }
            }
        }
        Some(rows)
    }
}

/// Where row `x`'s text lies in `s.data`, CHAR(n)'s trailing blanks left out
/// (as the byte encoding ignores them); `None` past the vector's end.
#[inline(always)]
fn text_bounds(s: &kura_common::StrVec, x: usize, char_type: bool) -> Option<(usize, usize)> {
    let (from, mut to) = (*s.offsets.get(x)? as usize, *s.offsets.get(x + 1)? as usize);
    if char_type {
        while to > from && s.data[to - 1] == b' ' {
            to -= 1;
        }
    }
    Some((from, to))
}

/// Text of at most 7 bytes into its slot at bit `shift` of `rows`: the tag
/// (length + 1) and the bytes form one 64-bit word, the bytes read as one
/// unaligned load and masked to the length where the data has 8 bytes left.
/// Same words as the general loop of `pack_rows`, without a loop per byte.
#[inline(always)]
fn pack_short_text(
    rows: &mut [u128],
    s: &kura_common::StrVec,
    cap: usize,
    char_type: bool,
    shift: u32,
    row: impl Fn(usize) -> usize,
) -> Option<()> {
    let data = &s.data;
    // Every value one byte (flags, statuses: TPC-H Q1's two CHAR(1) keys): the
    // bytes are the values, read without their offsets.
    // (A fold without an early exit: the test runs as vector compares.)
    let one_byte = data.len() + 1 == s.offsets.len()
        && s.offsets
            .iter()
            .zip(0u32..)
            .fold(true, |all, (&o, i)| all & (o == i));
    if one_byte {
        // The slot's bits of each byte value, shifted into place once: a u128
        // shift per row costs more than the table look-up.
        let words: [u128; 256] = std::array::from_fn(|b| {
            // CHAR's trailing blank trimmed: a lone blank is the empty string.
            let word = if char_type && b == b' ' as usize {
                1
            } else {
                2 | (b as u128) << 8
            };
            word << shift
        });
        for (i, r) in rows.iter_mut().enumerate() {
            *r |= words[*data.get(row(i))? as usize];
        }
        return Some(());
    }
    for (i, r) in rows.iter_mut().enumerate() {
        let (from, to) = text_bounds(s, row(i), char_type)?;
        let len = to - from;
        if len > cap {
            return None;
        }
        let bytes = match data.get(from..from + 8) {
            Some(b) => {
                u64::from_le_bytes(b.try_into().expect("8 bytes")) & ((1u64 << (8 * len)) - 1)
            }
            None => data[from..to]
                .iter()
                .enumerate()
                .fold(0u64, |w, (j, &b)| w | (b as u64) << (8 * j)),
        };
        *r |= (((len as u64 + 1) | bytes << 8) as u128) << shift;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::Value;

    fn text(dt: DataType, vals: &[Option<&str>]) -> Vector {
        let vals: Vec<Value> = vals
            .iter()
            .map(|v| v.map_or(Value::Null, |s| Value::Text(s.into())))
            .collect();
        Vector::from_values(dt, &vals).unwrap()
    }

    #[test]
    fn layouts() {
        // Q1: two CHAR(1) flags; up to 7 bytes each.
        let l = PackedLayout::new(&[DataType::Char(1), DataType::Char(1)]).unwrap();
        assert_eq!(l.slots, vec![(Slot::Text(7), 0), (Slot::Text(7), 8)]);
        // One text column gets all 16 bytes.
        let l = PackedLayout::new(&[DataType::Varchar(Some(15))]).unwrap();
        assert_eq!(l.slots, vec![(Slot::Text(15), 0)]);
        // A single integer has its own map; two fit; a wide decimal or double does not.
        assert!(PackedLayout::new(&[DataType::Integer]).is_none());
        assert!(PackedLayout::new(&[DataType::Integer, DataType::BigInt]).is_some());
        assert!(PackedLayout::new(&[DataType::Double, DataType::Integer]).is_none());
        let wide = DataType::Decimal {
            precision: 30,
            scale: 2,
        };
        assert!(PackedLayout::new(&[wide, DataType::Integer]).is_none());
        assert!(PackedLayout::new(&[DataType::BigInt, DataType::BigInt]).is_none());
    }

    #[test]
    fn equal_keys_pack_equally_and_distinct_keys_differently() {
        let types = [DataType::Char(3), DataType::Varchar(Some(5))];
        let l = PackedLayout::new(&types).unwrap();
        let a = text(
            types[0],
            &[Some("A"), Some("A  "), None, Some(""), Some("A")],
        );
        let b = text(
            types[1],
            &[Some("x"), Some("x"), Some("x"), Some("x"), Some("x ")],
        );
        let p = l.pack(&[a, b], 5).unwrap();
        // CHAR ignores trailing blanks; VARCHAR keeps them.
        assert_eq!(p[0], p[1]);
        assert_ne!(p[0], p[4]);
        // NULL differs from the empty string.
        assert_ne!(p[2], p[3]);
        // Too long for its share: not packable.
        let long = text(types[0], &[Some("ABCDEFGHIJ")]);
        let b = text(types[1], &[Some("x")]);
        assert!(l.pack(&[long, b], 1).is_none());
    }

    #[test]
    fn short_text_packs_its_length_and_bytes_wherever_it_lies() {
        // Two texts of up to 7 bytes (the word load); values of every length,
        // the last ones with fewer than 8 bytes of data after them (the gather).
        let types = [DataType::Varchar(Some(7)), DataType::Char(7)];
        let l = PackedLayout::new(&types).unwrap();
        assert_eq!(l.slots, vec![(Slot::Text(7), 0), (Slot::Text(7), 8)]);
        let vals = ["", "a", "bc", "def", "ghij", "klmno", "pqrstu", "vwxyz12"];
        let mut a: Vec<Option<&str>> = vals.iter().map(|v| Some(*v)).collect();
        a.extend(vals.iter().rev().map(|v| Some(*v)));
        let b: Vec<Option<&str>> = a.iter().map(|v| v.map(|t| t.trim_end())).collect();
        let n = a.len();
        let p = l
            .pack(&[text(types[0], &a), text(types[1], &b)], n)
            .unwrap();
        let word = |t: &str| {
            let bytes = t.bytes().enumerate();
            bytes.fold(t.len() as u128 + 1, |w, (j, c)| {
                w | (c as u128) << (8 + 8 * j)
            })
        };
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(p[i], word(x.unwrap()) | word(y.unwrap()) << 64, "row {i}");
        }
        // CHAR's trailing blanks are ignored on both paths.
        let c = text(types[1], &[Some("ab   "), Some("ab")]);
        let p = l
            .pack(&[text(types[0], &[Some(""), Some("")]), c], 2)
            .unwrap();
        assert_eq!(p[0], p[1]);
    }

    #[test]
    fn one_byte_values_pack_as_the_general_path_packs_them() {
        // Q1's flags: every value one byte, read without offsets; a CHAR blank
        // is the empty string, a VARCHAR blank is not.
        let types = [DataType::Char(1), DataType::Varchar(Some(1))];
        let l = PackedLayout::new(&types).unwrap();
        let a = [Some("A"), Some("N"), Some(" "), Some("R"), Some("A")];
        let b = [Some("F"), Some(" "), Some("O"), Some("F"), Some("F")];
        let p = l
            .pack(&[text(types[0], &a), text(types[1], &b)], 5)
            .unwrap();
        // A value of two bytes (or a NULL, stored empty) sends the same rows
        // down the general path.
        for extra in [Some("XY"), None] {
            let (mut wa, mut wb) = (a.to_vec(), b.to_vec());
            wa.push(extra);
            wb.push(Some("F"));
            let q = l
                .pack(&[text(types[0], &wa), text(types[1], &wb)], 6)
                .unwrap();
            assert_eq!(p[..], q[..5]);
        }
        assert_eq!(p[0], p[4]);
        let blank = text(types[0], &[Some("")]);
        let o = text(types[1], &[Some("O")]);
        assert_eq!(p[2], l.pack(&[blank, o], 1).unwrap()[0]);
    }

    #[test]
    fn null_integers_pack_apart_from_zero() {
        let types = [DataType::Integer, DataType::Date];
        let l = PackedLayout::new(&types).unwrap();
        let a = Vector::from_values(types[0], &[Value::Integer(0), Value::Null]).unwrap();
        let b = Vector::from_values(types[1], &[Value::Null, Value::Null]).unwrap();
        let p = l.pack(&[a, b], 2).unwrap();
        assert_ne!(p[0], p[1]);
    }

    #[test]
    fn every_byte_of_a_long_text_counts() {
        let t = DataType::Varchar(Some(15));
        let l = PackedLayout::new(&[t]).unwrap();
        let v = text(
            t,
            &[
                Some("abcdefghijklmno"),
                Some("abcdefghijklmnp"),
                Some("abcdefgXijklmno"),
                Some("abcdefghijklmno"),
                Some("abcdefghijklmn"),
            ],
        );
        let p = l.pack(&[v], 5).unwrap();
        assert_eq!(p[0], p[3]);
        for other in [p[1], p[2], p[4]] {
            assert_ne!(p[0], other);
        }
    }

    #[test]
    fn packing_at_a_selection_equals_packing_the_selected_rows() {
        let types = [DataType::Char(2), DataType::Integer, DataType::Boolean];
        let l = PackedLayout::new(&types).unwrap();
        let a = text(
            types[0],
            &[Some("A"), None, Some("B "), Some(""), Some("A ")],
        );
        let b = Vector::from_values(
            types[1],
            &[
                Value::Integer(7),
                Value::Null,
                Value::Integer(-1),
                Value::Integer(7),
                Value::Integer(0),
            ],
        )
        .unwrap();
        let c = Vector::from_values(
            types[2],
            &[
                Value::Boolean(true),
                Value::Boolean(false),
                Value::Null,
                Value::Boolean(true),
                Value::Boolean(false),
            ],
        )
        .unwrap();
        let sel = [1u32, 2, 4];
        let at = l.pack_at(&[&a, &b, &c], 5, Some(&sel)).unwrap();
        let taken = [a.take(&sel), b.take(&sel), c.take(&sel)];
        assert_eq!(at, l.pack(&taken, 3).unwrap());
        // A long text at a selected row makes it unpackable; at a dropped one, not.
        let long = text(types[0], &[Some("ABCDEFGHIJKLMNOPQ"), Some("A"), Some("B")]);
        let b3 = b.take(&[0, 1, 2]);
        let c3 = c.take(&[0, 1, 2]);
        assert!(l.pack_at(&[&long, &b3, &c3], 3, Some(&[0, 2])).is_none());
        assert!(l.pack_at(&[&long, &b3, &c3], 3, Some(&[1, 2])).is_some());
    }
}
