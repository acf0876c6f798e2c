//! Perfect-hash group numbers for keys of one or two one-byte texts (flags and
//! statuses: TPC-H Q1's `l_returnflag, l_linestatus`): a row's bytes are an index
//! into a table of 65,536 group numbers, one load per row instead of
//! packing a 16-byte key and hashing it. The table only caches what the packed map decides:
//! a code met for the first time is looked up there, so a key gets the same
//! group whichever path saw it.

use kura_common::{ColumnData, Vector};

/// A code without a group yet.
const UNKNOWN: u32 = u32::MAX;

/// Codes: the first key's byte, then the second's (zero for one key).
const CODES: usize = 1 << 16;

/// Group numbers by key code.
pub(super) struct ByteCodes {
    /// A fixed size, so that a 16-bit code indexes it without a bounds check.
    groups: Box<[u32; CODES]>,
}

impl ByteCodes {
    /// Bytes a table takes.
    pub(super) const BYTES: u64 = (CODES * std::mem::size_of::<u32>()) as u64;

    pub(super) fn new() -> ByteCodes {
        let groups: Box<[u32]> = vec![UNKNOWN; CODES].into_boxed_slice();
        ByteCodes {
            groups: groups.try_into().expect("CODES entries"),
        }
    }

    /// Bytes the table takes.
    pub(super) fn bytes(&self) -> u64 {
        std::mem::size_of_val(&*self.groups) as u64
    }

    /// The group of each row of `rows` (rows of `codes`), asking
    /// `resolve(position in rows)` for the group of a code not seen before.
    pub(super) fn group_ids<E>(
        &mut self,
        codes: &OneByteKeys<'_>,
        rows: impl ExactSizeIterator<Item = usize>,
        ids: &mut Vec<u32>,
        mut resolve: impl FnMut(usize) -> Result<u32, E>,
    ) -> Result<(), E> {
        let start = ids.len();
        ids.resize(start + rows.len(), 0);
        for ((pos, row), id) in rows.enumerate().zip(&mut ids[start..]) {
            let code = codes.code(row) as usize;
            let mut g = self.groups[code];
            if g == UNKNOWN {
                g = resolve(pos)?;
                self.groups[code] = g;
            }
            *id = g;
        }
        Ok(())
    }
}

/// The bytes of a batch's key columns when every key is text of exactly one
/// byte in every row, without NULLs (CHAR(1) flags); at most two keys.
pub(super) struct OneByteKeys<'a> {
    first: &'a [u8],
    second: Option<&'a [u8]>,
}

impl<'a> OneByteKeys<'a> {
    pub(super) fn of(keys: &[&'a Vector]) -> Option<OneByteKeys<'a>> {
        let bytes = |v: &'a Vector| -> Option<&'a [u8]> {
            let ColumnData::Str(s) = &v.data else {
                return None;
            };
            // A fold without an early exit: the test runs as vector compares.
            let one_byte = v.validity.is_none()
                && s.data.len() + 1 == s.offsets.len()
                && s.offsets
                    .iter()
                    .zip(0u32..)
                    .fold(true, |all, (&o, i)| all & (o == i));
            one_byte.then_some(s.data.as_slice())
        };
        match keys {
            [a] => Some(OneByteKeys {
                first: bytes(a)?,
                second: None,
            }),
            [a, b] => Some(OneByteKeys {
                first: bytes(a)?,
                second: Some(bytes(b)?),
            }),
            _ => None,
        }
    }

    /// Row `row`'s code, an index of [`ByteCodes`]' table.
    #[inline(always)]
    fn code(&self, row: usize) -> u16 {
        let a = self.first[row] as u16;
        match self.second {
            Some(b) => a | (b[row] as u16) << 8,
            None => a,
        }
    }

    /// Rows in the batch.
    pub(super) fn len(&self) -> usize {
        self.first.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::{DataType, Value};

    fn text(vals: &[Option<&str>]) -> Vector {
        let vals: Vec<Value> = vals
            .iter()
            .map(|v| v.map_or(Value::Null, |s| Value::Text(s.into())))
            .collect();
        Vector::from_values(DataType::Char(1), &vals).unwrap()
    }

    #[test]
    fn only_one_byte_texts_without_nulls_have_codes() {
        let flags = text(&[Some("A"), Some("N"), Some("R")]);
        let status = text(&[Some("F"), Some("O"), Some("F")]);
        let longer = text(&[Some("A"), Some("NO"), Some("R")]);
        let empty = text(&[Some("A"), Some(""), Some("R")]);
        let null = text(&[Some("A"), None, Some("R")]);
        assert!(OneByteKeys::of(&[&flags, &status]).is_some());
        assert!(OneByteKeys::of(&[&flags]).is_some());
        assert!(OneByteKeys::of(&[&flags, &longer]).is_none());
        assert!(OneByteKeys::of(&[&empty]).is_none());
        assert!(OneByteKeys::of(&[&null, &flags]).is_none());
        assert!(OneByteKeys::of(&[&flags, &status, &flags]).is_none());
        let ints = Vector::from_values(DataType::Integer, &[Value::Integer(1)]).unwrap();
        assert!(OneByteKeys::of(&[&ints]).is_none());
    }

    #[test]
    fn a_code_is_resolved_once_and_then_looked_up() {
        let flags = text(&[Some("A"), Some("N"), Some("A"), Some("R"), Some("N")]);
        let status = text(&[Some("F"), Some("O"), Some("F"), Some("F"), Some("F")]);
        let keys = OneByteKeys::of(&[&flags, &status]).unwrap();
        let mut table = ByteCodes::new();
        let mut asked = Vec::new();
        let mut ids = Vec::new();
        table
            .group_ids(&keys, 0..keys.len(), &mut ids, |pos| {
                asked.push(pos);
                Ok::<u32, ()>(asked.len() as u32 - 1)
            })
            .unwrap();
        // (A,F) (N,O) (A,F) (R,F) (N,F): four distinct pairs, asked for once each.
        assert_eq!(ids, vec![0, 1, 0, 2, 3]);
        assert_eq!(asked, vec![0, 1, 3, 4]);
        // A later batch finds them without asking; positions follow the rows given.
        let mut again = Vec::new();
        table
            .group_ids(&keys, [4usize, 2].into_iter(), &mut again, |_| {
                Err("known codes are not resolved again")
            })
            .unwrap();
        assert_eq!(again, vec![3, 0]);
    }
}
