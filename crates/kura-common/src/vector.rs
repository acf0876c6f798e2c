//! Column vectors and batches: the unit operators pass to each other (DESIGN.md:
//! batches of ~2,048 rows per column with a selection vector, never row at a time).

use crate::types::{DataType, PhysicalType};
use crate::value::Value;

/// Rows per batch that operators aim for.
pub const BATCH_SIZE: usize = 2048;

/// Variable-length strings: `offsets[i]..offsets[i+1]` is value `i` in `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrVec {
    pub offsets: Vec<u32>,
    pub data: Vec<u8>,
}

impl Default for StrVec {
    fn default() -> Self {
        StrVec {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
}

impl StrVec {
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        StrVec {
            offsets,
            data: Vec::with_capacity(bytes),
        }
    }
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn get_bytes(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
    /// Value `i` as text. Vectors are only filled from `&str`, so this is valid UTF-8.
    pub fn get(&self, i: usize) -> &str {
        std::str::from_utf8(self.get_bytes(i)).unwrap_or("")
    }
    pub fn push(&mut self, s: &[u8]) {
        self.data.extend_from_slice(s);
        self.offsets.push(self.data.len() as u32);
    }
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// The values of one column, by physical type.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    I128(Vec<i128>),
    F64(Vec<f64>),
    Str(StrVec),
}

impl ColumnData {
    pub fn new(pt: PhysicalType, capacity: usize) -> Self {
        match pt {
            PhysicalType::Bool => ColumnData::Bool(Vec::with_capacity(capacity)),
            PhysicalType::I32 => ColumnData::I32(Vec::with_capacity(capacity)),
            PhysicalType::I64 => ColumnData::I64(Vec::with_capacity(capacity)),
            PhysicalType::I128 => ColumnData::I128(Vec::with_capacity(capacity)),
            PhysicalType::F64 => ColumnData::F64(Vec::with_capacity(capacity)),
            PhysicalType::Str => ColumnData::Str(StrVec::with_capacity(capacity, capacity * 16)),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            ColumnData::Bool(v) => v.len(),
            ColumnData::I32(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::I128(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory the values occupy, as (address, bytes) spans: what the memory
    /// profiler's registry names (`memobj`).
    pub fn spans(&self) -> Vec<(usize, usize)> {
        fn span<T>(v: &[T]) -> (usize, usize) {
            (v.as_ptr() as usize, std::mem::size_of_val(v))
        }
        match self {
            ColumnData::Bool(v) => vec![span(v)],
            ColumnData::I32(v) => vec![span(v)],
            ColumnData::I64(v) => vec![span(v)],
            ColumnData::I128(v) => vec![span(v)],
            ColumnData::F64(v) => vec![span(v)],
            ColumnData::Str(v) => vec![span(&v.offsets), span(&v.data)],
        }
    }
}

/// One column of a batch: typed values plus validity (`None` = no NULLs).
/// A NULL slot holds an arbitrary placeholder value (zero / empty string).
#[derive(Debug, Clone, PartialEq)]
pub struct Vector {
    pub data_type: DataType,
    pub data: ColumnData,
    pub validity: Option<Vec<bool>>,
}

impl Vector {
    pub fn new(data_type: DataType, capacity: usize) -> Self {
        Vector {
            data_type,
            data: ColumnData::new(data_type.physical(), capacity),
            validity: None,
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_null(&self, i: usize) -> bool {
        self.validity.as_ref().is_some_and(|v| !v[i])
    }

    pub fn null_count(&self) -> usize {
        self.validity
            .as_ref()
            .map_or(0, |v| v.iter().filter(|b| !**b).count())
    }

    fn mark_valid(&mut self, valid: bool) {
        let n = self.len();
        match (&mut self.validity, valid) {
            (Some(v), _) => v.push(valid),
            (None, true) => {}
            (None, false) => {
                let mut v = vec![true; n];
                v.push(false);
                self.validity = Some(v);
            }
        }
    }

    /// Appends a NULL (placeholder value plus validity bit).
    pub fn push_null(&mut self) {
        self.mark_valid(false);
        match &mut self.data {
            ColumnData::Bool(v) => v.push(false),
            ColumnData::I32(v) => v.push(0),
            ColumnData::I64(v) => v.push(0),
            ColumnData::I128(v) => v.push(0),
            ColumnData::F64(v) => v.push(0.0),
            ColumnData::Str(v) => v.push(b""),
        }
    }

    /// Appends a value, converting between compatible representations (integers to
    /// wider integers, decimals to this vector's scale). Returns false if the value
    /// does not fit this vector's type.
    pub fn push_value(&mut self, value: &Value) -> bool {
        if value.is_null() {
            self.push_null();
            return true;
        }
        let scale = match self.data_type {
            DataType::Decimal { scale, .. } => scale,
            _ => 0,
        };
        let is_interval = self.data_type == DataType::Interval;
        let ok = match (&mut self.data, value) {
            (ColumnData::Bool(v), Value::Boolean(b)) => {
                v.push(*b);
                true
            }
            (ColumnData::I32(v), Value::Integer(x)) | (ColumnData::I32(v), Value::Date(x)) => {
                v.push(*x);
                true
            }
            (ColumnData::I64(v), Value::Integer(x)) if scale == 0 => {
                v.push(*x as i64);
                true
            }
            (ColumnData::I64(v), Value::BigInt(x) | Value::Timestamp(x)) if scale == 0 => {
                v.push(*x);
                true
            }
            (ColumnData::I64(v), Value::Decimal(x, s)) => {
                match crate::decimal::rescale(*x, *s, scale).and_then(|x| i64::try_from(x).ok()) {
                    Some(x) => {
                        v.push(x);
                        true
                    }
                    None => false,
                }
            }
            (ColumnData::I128(v), Value::Interval(x)) if is_interval => {
                v.push(*x);
                true
            }
            (ColumnData::I128(v), Value::Decimal(x, s)) if !is_interval => {
                match crate::decimal::rescale(*x, *s, scale) {
                    Some(x) => {
                        v.push(x);
                        true
                    }
                    None => false,
                }
            }
            (ColumnData::F64(v), Value::Double(x)) => {
                v.push(*x);
                true
            }
            (ColumnData::Str(v), Value::Text(s)) => {
                v.push(s.as_bytes());
                true
            }
            _ => false,
        };
        if ok {
            self.mark_valid(true);
        }
        ok
    }

    /// Value `i` as a [`Value`] (slow path: results, tests, statistics).
    pub fn get_value(&self, i: usize) -> Value {
        if self.is_null(i) {
            return Value::Null;
        }
        match (&self.data, self.data_type) {
            (ColumnData::Bool(v), _) => Value::Boolean(v[i]),
            (ColumnData::I32(v), DataType::Date) => Value::Date(v[i]),
            (ColumnData::I32(v), _) => Value::Integer(v[i]),
            (ColumnData::I64(v), DataType::Decimal { scale, .. }) => {
                Value::Decimal(v[i] as i128, scale)
            }
            (ColumnData::I64(v), DataType::Timestamp) => Value::Timestamp(v[i]),
            (ColumnData::I64(v), _) => Value::BigInt(v[i]),
            (ColumnData::I128(v), DataType::Decimal { scale, .. }) => Value::Decimal(v[i], scale),
            (ColumnData::I128(v), DataType::Interval) => Value::Interval(v[i]),
            (ColumnData::I128(v), _) => Value::Decimal(v[i], 0),
            (ColumnData::F64(v), _) => Value::Double(v[i]),
            (ColumnData::Str(v), _) => Value::Text(v.get(i).to_string()),
        }
    }

    /// Builds a vector from values (tests, constants, small results).
    pub fn from_values(data_type: DataType, values: &[Value]) -> Option<Vector> {
        let mut v = Vector::new(data_type, values.len());
        for x in values {
            if !v.push_value(x) {
                return None;
            }
        }
        Some(v)
    }

    /// Appends all rows of `other` (same type).
    pub fn append(&mut self, other: &Vector) {
        let n = self.len();
        match (&mut self.validity, &other.validity) {
            (Some(a), Some(b)) => a.extend_from_slice(b),
            (Some(a), None) => a.extend(std::iter::repeat_n(true, other.len())),
            (None, Some(b)) => {
                let mut a = vec![true; n];
                a.extend_from_slice(b);
                self.validity = Some(a);
            }
            (None, None) => {}
        }
        match (&mut self.data, &other.data) {
            (ColumnData::Bool(a), ColumnData::Bool(b)) => a.extend_from_slice(b),
            (ColumnData::I32(a), ColumnData::I32(b)) => a.extend_from_slice(b),
            (ColumnData::I64(a), ColumnData::I64(b)) => a.extend_from_slice(b),
            (ColumnData::I128(a), ColumnData::I128(b)) => a.extend_from_slice(b),
            (ColumnData::F64(a), ColumnData::F64(b)) => a.extend_from_slice(b),
            (ColumnData::Str(a), ColumnData::Str(b)) => {
                let base = a.data.len() as u32 - b.offsets[0];
                a.data.extend_from_slice(&b.data[b.offsets[0] as usize..]);
                a.offsets.extend(b.offsets[1..].iter().map(|o| o + base));
            }
            _ => panic!("Vector::append: physical types differ (a planner bug)"),
        }
    }

    /// Appends rows `idx` of `other` (same type) in that order: `take` then
    /// `append` without the vector in between.
    pub fn append_take(&mut self, other: &Vector, idx: &[u32]) {
        let n = self.len();
        match (&mut self.validity, &other.validity) {
            (Some(a), Some(b)) => a.extend(idx.iter().map(|&i| b[i as usize])),
            (Some(a), None) => a.extend(std::iter::repeat_n(true, idx.len())),
            (None, Some(b)) => {
                let mut a = vec![true; n];
                a.extend(idx.iter().map(|&i| b[i as usize]));
                self.validity = Some(a);
            }
            (None, None) => {}
        }
        fn extend<T: Copy>(a: &mut Vec<T>, b: &[T], idx: &[u32]) {
            a.extend(idx.iter().map(|&i| b[i as usize]));
        }
        match (&mut self.data, &other.data) {
            (ColumnData::Bool(a), ColumnData::Bool(b)) => extend(a, b, idx),
            (ColumnData::I32(a), ColumnData::I32(b)) => extend(a, b, idx),
            (ColumnData::I64(a), ColumnData::I64(b)) => extend(a, b, idx),
            (ColumnData::I128(a), ColumnData::I128(b)) => extend(a, b, idx),
            (ColumnData::F64(a), ColumnData::F64(b)) => extend(a, b, idx),
            (ColumnData::Str(a), ColumnData::Str(b)) => {
                for &i in idx {
                    a.push(b.get_bytes(i as usize));
                }
            }
            _ => panic!("Vector::append_take: physical types differ (a planner bug)"),
        }
    }

    /// A new vector holding rows `idx` in that order.
    pub fn take(&self, idx: &[u32]) -> Vector {
        let runs = in_runs(idx);
        let data = match &self.data {
            ColumnData::Bool(v) => ColumnData::Bool(gather(v, idx, runs)),
            ColumnData::I32(v) => ColumnData::I32(gather(v, idx, runs)),
            ColumnData::I64(v) => ColumnData::I64(gather(v, idx, runs)),
            ColumnData::I128(v) => ColumnData::I128(gather(v, idx, runs)),
            ColumnData::F64(v) => ColumnData::F64(gather(v, idx, runs)),
            ColumnData::Str(v) => {
                // Sized exactly: a run of long strings gathered with a guessed
                // size would double its way up to twice what it holds.
                let bytes = idx
                    .iter()
                    .map(|&i| (v.offsets[i as usize + 1] - v.offsets[i as usize]) as usize)
                    .sum();
                let mut out = StrVec::with_capacity(idx.len(), bytes);
                for &i in idx {
                    out.push(v.get_bytes(i as usize));
                }
                ColumnData::Str(out)
            }
        };
        let validity = self.validity.as_ref().map(|v| gather(v, idx, runs));
        Vector {
            data_type: self.data_type,
            data,
            validity,
        }
    }

    /// Rows `start..start+len` as a new vector: a copy of each contiguous run (not a
    /// gather, as `take` is).
    pub fn slice(&self, start: usize, len: usize) -> Vector {
        let r = start..start + len;
        let data = match &self.data {
            ColumnData::Bool(v) => ColumnData::Bool(v[r.clone()].to_vec()),
            ColumnData::I32(v) => ColumnData::I32(v[r.clone()].to_vec()),
            ColumnData::I64(v) => ColumnData::I64(v[r.clone()].to_vec()),
            ColumnData::I128(v) => ColumnData::I128(v[r.clone()].to_vec()),
            ColumnData::F64(v) => ColumnData::F64(v[r.clone()].to_vec()),
            ColumnData::Str(v) => {
                let (a, b) = (v.offsets[start], v.offsets[start + len]);
                ColumnData::Str(StrVec {
                    offsets: v.offsets[start..=start + len]
                        .iter()
                        .map(|&o| o - a)
                        .collect(),
                    data: v.data[a as usize..b as usize].to_vec(),
                })
            }
        };
        Vector {
            data_type: self.data_type,
            data,
            validity: self.validity.as_ref().map(|v| v[r].to_vec()),
        }
    }
}

/// Whether `idx` names mostly runs of consecutive rows (a filter's selection
/// that kept most rows: TPC-H Q1's date filter keeps 98 %), judged from its
/// first 64 entries: [`gather`] then copies runs rather than single rows.
fn in_runs(idx: &[u32]) -> bool {
    const SAMPLE: usize = 64;
    if idx.len() < SAMPLE {
        return false;
    }
    let steps = idx[..SAMPLE]
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count();
    steps >= SAMPLE - SAMPLE / 8
}

/// Rows `idx` of `v` in that order: one copy per run of consecutive rows when
/// `runs` (see [`in_runs`]), else one row at a time.
fn gather<T: Copy>(v: &[T], idx: &[u32], runs: bool) -> Vec<T> {
    if !runs {
        return idx.iter().map(|&i| v[i as usize]).collect();
    }
    let mut out = Vec::with_capacity(idx.len());
    let mut k = 0;
    while k < idx.len() {
        let start = idx[k] as usize;
        let mut end = k + 1;
        while end < idx.len() && idx[end] as usize == start + (end - k) {
            end += 1;
        }
        out.extend_from_slice(&v[start..start + (end - k)]);
        k = end;
    }
    out
}

/// A set of equally long column vectors plus an optional selection vector naming
/// the rows still alive (filters narrow the selection instead of copying).
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub columns: Vec<Vector>,
    /// Indices of live rows, ascending; `None` means all `num_rows` rows.
    pub selection: Option<Vec<u32>>,
    /// Physical row count of every column.
    pub num_rows: usize,
}

impl Batch {
    pub fn new(columns: Vec<Vector>) -> Self {
        let num_rows = columns.first().map_or(0, |c| c.len());
        debug_assert!(columns.iter().all(|c| c.len() == num_rows));
        Batch {
            columns,
            selection: None,
            num_rows,
        }
    }

    /// A batch with rows but no columns (e.g. for `count(*)` over a projection of nothing).
    pub fn with_rows(num_rows: usize) -> Self {
        Batch {
            columns: Vec::new(),
            selection: None,
            num_rows,
        }
    }

    /// Number of live rows.
    pub fn len(&self) -> usize {
        self.selection.as_ref().map_or(self.num_rows, |s| s.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Materialises the selection so every physical row is live.
    pub fn compact(self) -> Batch {
        match self.selection {
            None => self,
            Some(sel) => Batch {
                columns: self.columns.iter().map(|c| c.take(&sel)).collect(),
                num_rows: sel.len(),
                selection: None,
            },
        }
    }

    /// Live row `i` as values (slow path).
    pub fn row(&self, i: usize) -> Vec<Value> {
        let phys = self.selection.as_ref().map_or(i, |s| s[i] as usize);
        self.columns.iter().map(|c| c.get_value(phys)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Copying runs gives what gathering row by row gives, for selections
        /// that keep most rows, few rows, and for orders that are not ascending.
        #[test]
        fn gathering_in_runs_is_gathering_row_by_row(
            keep in proptest::collection::vec(0u8..100, 64..3000),
            percent in 0u8..100,
            reverse_from in proptest::option::of(0usize..3000),
        ) {
            let v: Vec<i64> = (0..keep.len() as i64).map(|i| i * 3 - 7).collect();
            let mut idx: Vec<u32> = keep
                .iter()
                .enumerate()
                .filter(|(_, &k)| k >= percent)
                .map(|(i, _)| i as u32)
                .collect();
            if let Some(r) = reverse_from {
                let r = r.min(idx.len());
                idx[r..].reverse();
            }
            let one_by_one: Vec<i64> = idx.iter().map(|&i| v[i as usize]).collect();
            prop_assert_eq!(gather(&v, &idx, true), one_by_one.clone());
            prop_assert_eq!(gather(&v, &idx, in_runs(&idx)), one_by_one);
        }
    }

    #[test]
    fn append_take_is_append_of_take() {
        let texts = |vals: &[Option<&str>]| {
            let vals: Vec<Value> = vals
                .iter()
                .map(|v| v.map_or(Value::Null, |s| Value::Text(s.into())))
                .collect();
            Vector::from_values(DataType::Varchar(None), &vals).unwrap()
        };
        let ints = |vals: &[Option<i64>]| {
            let vals: Vec<Value> = vals
                .iter()
                .map(|v| v.map_or(Value::Null, Value::BigInt))
                .collect();
            Vector::from_values(DataType::BigInt, &vals).unwrap()
        };
        let idx = [3u32, 0, 3, 1];
        let cases = [
            (
                texts(&[Some("a")]),
                texts(&[Some("x"), None, Some(""), Some("yz")]),
            ),
            (
                texts(&[None]),
                texts(&[Some("x"), Some("w"), Some(""), Some("yz")]),
            ),
            (
                texts(&[Some("a")]),
                texts(&[Some("x"), Some("w"), Some(""), Some("yz")]),
            ),
            (
                ints(&[Some(1), None]),
                ints(&[Some(5), None, Some(6), Some(7)]),
            ),
            (ints(&[Some(1)]), ints(&[Some(5), None, Some(6), Some(7)])),
            (ints(&[]), ints(&[Some(5), Some(8), Some(6), Some(7)])),
        ];
        for (to, from) in cases {
            let mut expected = to.clone();
            expected.append(&from.take(&idx));
            let mut got = to;
            got.append_take(&from, &idx);
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_selection_that_keeps_most_rows_is_copied_in_runs() {
        let dense: Vec<u32> = (0..1000).filter(|i| i % 50 != 7).collect();
        assert!(in_runs(&dense));
        let sparse: Vec<u32> = (0..1000).filter(|i| i % 3 == 0).collect();
        assert!(!in_runs(&sparse));
        let permuted: Vec<u32> = (0..1000).rev().collect();
        assert!(!in_runs(&permuted));
        assert!(!in_runs(&dense[..10]));
    }

    #[test]
    fn slice_is_take_of_a_range() {
        let vals = [
            Value::Text("ab".into()),
            Value::Null,
            Value::Text("héllo".into()),
            Value::Text("".into()),
            Value::Text("z".into()),
        ];
        let v = Vector::from_values(DataType::Varchar(None), &vals).unwrap();
        for (start, len) in [(0, 5), (1, 3), (2, 2), (4, 1), (3, 0)] {
            let idx: Vec<u32> = (start as u32..(start + len) as u32).collect();
            assert_eq!(v.slice(start, len), v.take(&idx), "{start}+{len}");
        }
        let n = Vector::from_values(
            DataType::BigInt,
            &[Value::BigInt(1), Value::Null, Value::BigInt(3)],
        )
        .unwrap();
        assert_eq!(n.slice(1, 2), n.take(&[1, 2]));
    }

    #[test]
    fn push_get_take() {
        let dt = DataType::Decimal {
            precision: 15,
            scale: 2,
        };
        let mut v = Vector::new(dt, 4);
        assert!(v.push_value(&Value::Decimal(12345, 2)));
        assert!(v.push_value(&Value::Null));
        assert!(v.push_value(&Value::Decimal(5, 1)));
        assert_eq!(v.get_value(0), Value::Decimal(12345, 2));
        assert!(v.get_value(1).is_null());
        assert_eq!(v.get_value(2), Value::Decimal(50, 2));
        let t = v.take(&[2, 1]);
        assert_eq!(t.get_value(0), Value::Decimal(50, 2));
        assert!(t.is_null(1));
        let mut s = Vector::new(DataType::Varchar(None), 2);
        s.push_value(&Value::Text("".into()));
        s.push_value(&Value::Text("héllo".into()));
        s.append(&s.clone());
        assert_eq!(s.len(), 4);
        assert_eq!(s.get_value(3), Value::Text("héllo".into()));
        let b = Batch {
            columns: vec![s],
            selection: Some(vec![1, 3]),
            num_rows: 4,
        };
        assert_eq!(b.len(), 2);
        assert_eq!(b.compact().num_rows, 2);
    }
}
