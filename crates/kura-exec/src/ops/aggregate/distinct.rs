//! DISTINCT aggregates (`count(DISTINCT x)`, `sum(DISTINCT x)`, …): one hash set of
//! (group, value) pairs for all groups, not a set per group — a per-group set costs
//! an allocation per group and per value, and its drop and merge walk thousands of
//! small tables (TPC-H Q16: 18,314 groups).

use hashbrown::hash_map::Entry;
use hashbrown::{HashMap, HashSet};

use kura_common::{ColumnData, Value, Vector};

use crate::error::{ExecError, ExecResult};
use crate::keys::encode_row;

use super::group_map::SKIP;

/// The pairs seen, each mapped to its place in `DistinctAcc::vals` (or to
/// `NO_VALUE` when only counts are kept).
enum Seen {
    /// `count(DISTINCT)` of an integer argument whose values so far all fit 32
    /// bits: the group in the high half of one word, the value in the low —
    /// a third of [`Seen::Ints`]' entry, so Q16's 600,000 (group, supplier)
    /// pairs a worker at SF 10 sit in an 8 MB table, not 24 MB. Widened to
    /// `Ints` at the first value that does not fit.
    Packed(HashSet<u64>),
    /// An integer argument (integers, dates, decimals stored in 32 or 64 bits):
    /// the value itself, widened to i64 (equal values compare equal whatever
    /// their width).
    Ints(HashMap<(u32, i64), u32>),
    /// Any other argument: the group number (4 bytes, little-endian) followed by
    /// the bytes `encode_row` writes for the value in the argument's own type, so
    /// merging two workers' states compares the very bytes each update produced
    /// instead of re-encoding values whose physical width depends on a type the
    /// merge no longer knows.
    Bytes(HashMap<Box<[u8]>, u32>),
}

const NO_VALUE: u32 = u32::MAX;

/// Group `g` and a value that fits 32 bits as one word of [`Seen::Packed`].
#[inline]
fn pack(g: u32, v: i64) -> u64 {
    (g as u64) << 32 | v as i32 as u32 as u64
}

/// The group and value of a [`pack`]ed word.
#[inline]
fn unpack(p: u64) -> (u32, i64) {
    ((p >> 32) as u32, p as u32 as i32 as i64)
}

/// The distinct values of one aggregate's argument, per group.
pub(crate) struct DistinctAcc {
    seen: Seen,
    found: Found,
}

/// What is known of the pairs in the set.
struct Found {
    /// Distinct values per group.
    counts: Vec<i64>,
    /// The distinct values with their group, in arrival order; `None` for
    /// `count(DISTINCT)`, which needs only `counts`.
    vals: Option<Vec<(u32, Value)>>,
}

impl Found {
    /// Records a pair the set did not hold (`value` is called only then); its
    /// place in `vals`.
    fn add(&mut self, g: u32, value: impl FnOnce() -> Value) -> u32 {
        self.counts[g as usize] += 1;
        match &mut self.vals {
            Some(vals) => {
                vals.push((g, value()));
                (vals.len() - 1) as u32
            }
            None => NO_VALUE,
        }
    }
}

impl DistinctAcc {
    /// `int_arg`: the argument is stored as 32- or 64-bit integers; `keep_values`:
    /// the aggregate needs the values themselves (all but count).
    pub(crate) fn new(int_arg: bool, keep_values: bool) -> DistinctAcc {
        DistinctAcc {
            seen: if int_arg && !keep_values {
                Seen::Packed(HashSet::new())
            } else if int_arg {
                Seen::Ints(HashMap::new())
            } else {
                Seen::Bytes(HashMap::new())
            },
            found: Found {
                counts: Vec::new(),
                vals: keep_values.then(Vec::new),
            },
        }
    }

    pub(crate) fn grow(&mut self, groups: usize) {
        self.found.counts.resize(groups, 0);
    }

    /// Turns a packed set into a map of (group, value) pairs, for a value
    /// that does not fit 32 bits.
    fn widen(&mut self) {
        if let Seen::Packed(set) = &self.seen {
            let map = set.iter().map(|&p| (unpack(p), NO_VALUE)).collect();
            self.seen = Seen::Ints(map);
        }
    }

    /// Folds the non-NULL rows of `arg` into groups `g`.
    pub(crate) fn update(&mut self, g: &[u32], arg: &Vector) -> ExecResult<()> {
        if let Seen::Packed(set) = &mut self.seen {
            let fits = match &arg.data {
                ColumnData::I32(_) => true,
                ColumnData::I64(x) => x.iter().take(g.len()).all(|&v| v as i32 as i64 == v),
                _ => {
                    return Err(ExecError::Internal(
                        "DISTINCT over integers got other data".into(),
                    ))
                }
            };
            if fits {
                set.reserve(g.len());
                let counts = &mut self.found.counts;
                let mut add = |gi: u32, v: i64| {
                    if set.insert(pack(gi, v)) {
                        counts[gi as usize] += 1;
                    }
                };
                match &arg.data {
                    ColumnData::I32(x) => {
                        for (i, &gi) in g.iter().enumerate() {
                            if !arg.is_null(i) {
                                add(gi, x[i] as i64);
                            }
                        }
                    }
                    ColumnData::I64(x) => {
                        for (i, &gi) in g.iter().enumerate() {
                            if !arg.is_null(i) {
                                add(gi, x[i]);
                            }
                        }
                    }
                    _ => {}
                }
                return Ok(());
            }
            self.widen();
        }
        let found = &mut self.found;
        match &mut self.seen {
            Seen::Ints(m) => {
                let value_of = |i: usize| -> ExecResult<i64> {
                    match &arg.data {
                        ColumnData::I32(x) => Ok(x[i] as i64),
                        ColumnData::I64(x) => Ok(x[i]),
                        _ => Err(ExecError::Internal(
                            "DISTINCT over integers got other data".into(),
                        )),
                    }
                };
                for (i, &gi) in g.iter().enumerate() {
                    if arg.is_null(i) {
                        continue;
                    }
                    if let Entry::Vacant(e) = m.entry((gi, value_of(i)?)) {
                        e.insert(found.add(gi, || arg.get_value(i)));
                    }
                }
            }
            Seen::Bytes(m) => {
                let cols = std::slice::from_ref(arg);
                let mut buf = Vec::new();
                for (i, &gi) in g.iter().enumerate() {
                    buf.clear();
                    buf.extend_from_slice(&gi.to_le_bytes());
                    // Look up by slice first: a repeated value costs no allocation.
                    if encode_row(cols, i, false, &mut buf) && !m.contains_key(buf.as_slice()) {
                        let at = found.add(gi, || arg.get_value(i));
                        m.insert(buf.as_slice().into(), at);
                    }
                }
            }
            Seen::Packed(_) => unreachable!("a packed set was widened above"),
        }
        Ok(())
    }

    /// Folds `other` (another worker's state of the same aggregate) into this one;
    /// `ids[g]` is the group here of `other`'s group `g`, or [`SKIP`] for a
    /// group not folded now (a spilled aggregation's other partitions).
    pub(crate) fn merge(&mut self, other: &DistinctAcc, ids: &[u32]) {
        let value = |at: u32| {
            other
                .found
                .vals
                .as_ref()
                .map_or(Value::Null, |v| v[at as usize].1.clone())
        };
        if matches!(other.seen, Seen::Ints(_)) {
            self.widen();
        }
        let found = &mut self.found;
        match (&mut self.seen, &other.seen) {
            (Seen::Packed(m), Seen::Packed(o)) => {
                m.reserve(o.len());
                for &p in o {
                    let (g, v) = unpack(p);
                    let to = ids[g as usize];
                    if to != SKIP && m.insert(pack(to, v)) {
                        found.counts[to as usize] += 1;
                    }
                }
            }
            (Seen::Ints(m), Seen::Packed(o)) => {
                for &p in o {
                    let (g, v) = unpack(p);
                    let to = ids[g as usize];
                    if to == SKIP {
                        continue;
                    }
                    if let Entry::Vacant(e) = m.entry((to, v)) {
                        e.insert(found.add(to, || Value::Null));
                    }
                }
            }
            (Seen::Ints(m), Seen::Ints(o)) => {
                for (&(g, v), &at) in o {
                    let to = ids[g as usize];
                    if to == SKIP {
                        continue;
                    }
                    if let Entry::Vacant(e) = m.entry((to, v)) {
                        e.insert(found.add(to, || value(at)));
                    }
                }
            }
            (Seen::Bytes(m), Seen::Bytes(o)) => {
                let mut buf = Vec::new();
                for (key, &at) in o {
                    let g = u32::from_le_bytes(key[..4].try_into().expect("group prefix"));
                    let to = ids[g as usize];
                    if to == SKIP {
                        continue;
                    }
                    buf.clear();
                    buf.extend_from_slice(&to.to_le_bytes());
                    buf.extend_from_slice(&key[4..]);
                    if !m.contains_key(buf.as_slice()) {
                        let at = found.add(to, || value(at));
                        m.insert(buf.as_slice().into(), at);
                    }
                }
            }
            // Both states come from the same aggregate call, so of one kind.
            _ => unreachable!("DISTINCT states of different kinds"),
        }
    }

    /// The number of distinct values of each of the first `groups` groups.
    pub(crate) fn counts(&self, groups: usize) -> &[i64] {
        &self.found.counts[..groups]
    }

    /// The distinct values of each of the first `groups` groups, in arrival order.
    pub(crate) fn values_by_group(&self, groups: usize) -> ExecResult<Vec<Vec<Value>>> {
        let vals = self.found.vals.as_ref().ok_or_else(|| {
            ExecError::Internal("DISTINCT values asked of a count-only state".into())
        })?;
        let mut out: Vec<Vec<Value>> = self.found.counts[..groups]
            .iter()
            .map(|&c| Vec::with_capacity(c as usize))
            .collect();
        for (g, v) in vals {
            if let Some(slot) = out.get_mut(*g as usize) {
                slot.push(v.clone());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use kura_common::DataType;

    use super::*;

    fn vector(ty: DataType, values: &[Value]) -> Vector {
        Vector::from_values(ty, values).unwrap()
    }

    /// (count, sorted values) of every group.
    fn contents(d: &DistinctAcc, groups: usize) -> Vec<(i64, Vec<String>)> {
        let vals = d.values_by_group(groups).unwrap();
        d.counts(groups)
            .iter()
            .zip(vals)
            .map(|(&c, v)| {
                let mut v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                v.sort();
                (c, v)
            })
            .collect()
    }

    #[test]
    fn integers_and_text_per_group_across_a_merge() {
        for (ty, vals) in [
            (
                DataType::Integer,
                [1, 2, 1, 3, 2].map(Value::Integer).to_vec(),
            ),
            (
                DataType::Varchar(None),
                ["a", "b", "a", "c", "b"]
                    .map(|s| Value::Text(s.into()))
                    .to_vec(),
            ),
        ] {
            let int_arg = ty == DataType::Integer;
            let mut a = DistinctAcc::new(int_arg, true);
            a.grow(2);
            // Group 0 sees 1, 1 (and a NULL); group 1 sees 2, 3, 2.
            let mut with_null = vals.clone();
            with_null.push(Value::Null);
            a.update(&[0, 1, 0, 1, 1, 0], &vector(ty, &with_null))
                .unwrap();
            // Another worker: its group 0 is group 1 here, its group 1 group 0.
            let mut b = DistinctAcc::new(int_arg, true);
            b.grow(2);
            b.update(&[0, 1], &vector(ty, &[vals[0].clone(), vals[1].clone()]))
                .unwrap();
            a.merge(&b, &[1, 0]);
            let s = |v: &[&Value]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            assert_eq!(
                contents(&a, 2),
                vec![
                    (2, s(&[&vals[0], &vals[1]])),
                    (3, s(&[&vals[0], &vals[1], &vals[3]])),
                ]
            );
        }
    }

    /// Counting in packed words, widened where a value needs 64 bits, and
    /// merged across both kinds, counts what a map of pairs counts.
    #[test]
    fn packed_counts_widen_and_merge_like_pairs() {
        let big = 1i64 << 40;
        let ints = |v: &[i64]| {
            vector(
                DataType::BigInt,
                &v.iter().map(|&x| Value::BigInt(x)).collect::<Vec<_>>(),
            )
        };
        let state = |rows: &[(u32, i64)]| {
            let mut d = DistinctAcc::new(true, false);
            d.grow(3);
            let (g, v): (Vec<u32>, Vec<i64>) = rows.iter().copied().unzip();
            d.update(&g, &ints(&v)).unwrap();
            d
        };
        let a_rows = [
            (0, 1),
            (0, 1),
            (1, -1),
            (2, i32::MAX as i64),
            (2, i32::MIN as i64),
        ];
        let b_rows = [(0, 1), (1, 5), (2, -1)];
        let wide_rows = [(0, big), (0, big + 1), (1, -1), (2, 7)];
        for (x, y) in [
            (&a_rows[..], &b_rows[..]),
            (&a_rows, &wide_rows),
            (&wide_rows, &a_rows),
        ] {
            let mut m = state(x);
            let o = state(y);
            m.merge(&o, &[2, 1, 0]);
            // The same pairs counted one by one.
            let mut pairs: Vec<(u32, i64)> = x.to_vec();
            pairs.extend(y.iter().map(|&(g, v)| ([2, 1, 0][g as usize], v)));
            pairs.sort();
            pairs.dedup();
            let expected: Vec<i64> = (0..3)
                .map(|g| pairs.iter().filter(|p| p.0 == g).count() as i64)
                .collect();
            assert_eq!(m.counts(3), expected.as_slice());
        }
        assert!(matches!(state(&a_rows).seen, Seen::Packed(_)));
        assert!(matches!(state(&wide_rows).seen, Seen::Ints(_)));
    }

    #[test]
    fn counting_keeps_no_values() {
        let mut d = DistinctAcc::new(true, false);
        d.grow(1);
        let v = vector(DataType::BigInt, &[5, 5, 6].map(Value::BigInt));
        d.update(&[0, 0, 0], &v).unwrap();
        assert_eq!(d.counts(1), &[2]);
        assert!(d.values_by_group(1).is_err());
    }
}
