//! Hash join index: a hash table from key to the first build row with that key,
//! plus a chain array linking rows with equal keys (paper 003's join operator).

use hashbrown::HashMap;

use kura_common::Vector;

use super::{BuildSide, JoinAlgorithm, JoinIndex};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::keys::{encode_join_row, int_key, pair_int_key, pair_key, single_int_key};
use crate::ops::NO_ROW;

/// Builds hash tables; probing costs one lookup per probe row.
pub struct HashJoin;

enum Table {
    Int(HashMap<i64, u32>),
    /// Two integer columns (composite foreign keys such as partsupp's): one
    /// fixed-width key instead of an allocated byte string per build row.
    Pair(HashMap<u128, u32>),
    Bytes(HashMap<Box<[u8]>, u32>),
}

struct HashIndex {
    table: Table,
    /// `next[row]`: the next build row with the same key.
    next: Vec<u32>,
    /// Per key: NULL matches NULL (`IS NOT DISTINCT FROM`); such keys use the byte table.
    null_safe: Vec<bool>,
}

impl JoinAlgorithm for HashJoin {
    fn index(&self, build: &BuildSide, ctx: &ExecContext) -> ExecResult<Box<dyn JoinIndex>> {
        let n = build.rows;
        let mut next = vec![NO_ROW; n];
        let any_null_safe = build.null_safe.iter().any(|&x| x);
        let table = if single_int_key(&build.keys) && !any_null_safe {
            let mut m: HashMap<i64, u32> = HashMap::with_capacity(n);
            // Insert in reverse so each chain lists rows in ascending order. A run
            // of equal keys (lineitem's rows of one order) is chained as it is
            // met and enters the map once, at its end.
            let mut run: Option<(i64, u32, u32)> = None; // key, first row, last row
            let flush = |m: &mut HashMap<i64, u32>, next: &mut [u32], run| {
                if let Some((k, first, last)) = run {
                    if let Some(prev) = m.insert(k, first) {
                        next[last as usize] = prev;
                    }
                }
            };
            for row in (0..n).rev() {
                if row % 65536 == 0 {
                    ctx.check_cancel()?;
                }
                let Some(k) = int_key(&build.keys[0], row) else {
                    continue;
                };
                match &mut run {
                    Some((rk, first, _)) if *rk == k => {
                        next[row] = *first;
                        *first = row as u32;
                    }
                    _ => {
                        flush(&mut m, &mut next, run);
                        run = Some((k, row as u32, row as u32));
                    }
                }
            }
            flush(&mut m, &mut next, run);
            Table::Int(m)
        } else if pair_int_key(&build.keys) && !any_null_safe {
            let mut m: HashMap<u128, u32> = HashMap::with_capacity(n);
            for row in (0..n).rev() {
                if row % 65536 == 0 {
                    ctx.check_cancel()?;
                }
                if let Some(k) = pair_key(&build.keys, row) {
                    if let Some(prev) = m.insert(k, row as u32) {
                        next[row] = prev;
                    }
                }
            }
            Table::Pair(m)
        } else {
            let mut m: HashMap<Box<[u8]>, u32> = HashMap::with_capacity(n);
            let mut buf = Vec::new();
            for row in (0..n).rev() {
                if row % 65536 == 0 {
                    ctx.check_cancel()?;
                }
                buf.clear();
                if encode_join_row(&build.keys, row, &build.null_safe, &mut buf) {
                    if let Some(prev) = m.insert(buf.clone().into_boxed_slice(), row as u32) {
                        next[row] = prev;
                    }
                }
            }
            Table::Bytes(m)
        };
        Ok(Box::new(HashIndex {
            table,
            next,
            null_safe: build.null_safe.clone(),
        }))
    }
}

/// A look-up that remembers the last key and its answer: a run of equal probe
/// keys (lineitem, stored by order) looks up once.
struct RunLookup<V, F> {
    look_up: F,
    last: Option<(i64, V)>,
}

impl<V: Copy, F: FnMut(i64) -> V> RunLookup<V, F> {
    fn new(look_up: F) -> Self {
        RunLookup {
            look_up,
            last: None,
        }
    }

    #[inline]
    fn get(&mut self, k: i64) -> V {
        match self.last {
            Some((lk, v)) if lk == k => v,
            _ => {
                let v = (self.look_up)(k);
                self.last = Some((k, v));
                v
            }
        }
    }
}

impl JoinIndex for HashIndex {
    fn candidates(
        &self,
        probe_keys: &[Vector],
        rows: usize,
        out: &mut Vec<(u32, u32)>,
    ) -> ExecResult<()> {
        let mut walk = |p: usize, first: Option<&u32>| {
            let mut b = first.copied().unwrap_or(NO_ROW);
            while b != NO_ROW {
                out.push((p as u32, b));
                b = self.next[b as usize];
            }
        };
        match &self.table {
            Table::Int(m) if single_int_key(probe_keys) => {
                let mut first_of = RunLookup::new(|k| m.get(&k).copied());
                for p in 0..rows {
                    if let Some(k) = int_key(&probe_keys[0], p) {
                        walk(p, first_of.get(k).as_ref());
                    }
                }
            }
            Table::Int(_) => {}
            Table::Pair(m) if pair_int_key(probe_keys) => {
                for p in 0..rows {
                    if let Some(k) = pair_key(probe_keys, p) {
                        walk(p, m.get(&k));
                    }
                }
            }
            Table::Pair(_) => {}
            Table::Bytes(m) => {
                let mut buf = Vec::new();
                for p in 0..rows {
                    buf.clear();
                    if encode_join_row(probe_keys, p, &self.null_safe, &mut buf) {
                        walk(p, m.get(buf.as_slice()));
                    }
                }
            }
        }
        Ok(())
    }

    fn matching_rows(
        &self,
        probe_keys: &[Vector],
        rows: usize,
        out: &mut Vec<u32>,
    ) -> ExecResult<()> {
        // As in `candidates`: keys of another shape than the table's match nothing.
        match &self.table {
            Table::Int(m) => {
                if single_int_key(probe_keys) {
                    let mut has = RunLookup::new(|k| m.contains_key(&k));
                    out.extend((0..rows as u32).filter(|&p| {
                        int_key(&probe_keys[0], p as usize).is_some_and(|k| has.get(k))
                    }));
                }
            }
            Table::Pair(m) => {
                if pair_int_key(probe_keys) {
                    out.extend((0..rows as u32).filter(|&p| {
                        pair_key(probe_keys, p as usize).is_some_and(|k| m.contains_key(&k))
                    }));
                }
            }
            Table::Bytes(m) => {
                let mut buf = Vec::new();
                for p in 0..rows {
                    buf.clear();
                    if encode_join_row(probe_keys, p, &self.null_safe, &mut buf)
                        && m.contains_key(buf.as_slice())
                    {
                        out.push(p as u32);
                    }
                }
            }
        }
        Ok(())
    }

    fn regions(&self) -> Vec<(usize, usize, &'static str)> {
        let table = match &self.table {
            Table::Int(m) => map_span(m),
            Table::Pair(m) => map_span(m),
            Table::Bytes(m) => map_span(m),
        };
        let next = (
            self.next.as_ptr() as usize,
            std::mem::size_of_val(self.next.as_slice()),
            "chain array",
        );
        table
            .map(|(s, l)| (s, l, "hash table"))
            .into_iter()
            .chain((next.1 > 0).then_some(next))
            .collect()
    }

    fn bytes(&self) -> u64 {
        let entries = match &self.table {
            Table::Int(m) => m.capacity() * 16,
            Table::Pair(m) => m.capacity() * 32,
            Table::Bytes(m) => m.capacity() * 24 + m.keys().map(|k| k.len()).sum::<usize>(),
        };
        (entries + self.next.len() * 4) as u64
    }
}

/// The memory of a hashbrown map, approximately: hashbrown does not expose its
/// allocation, so this spans its lowest to its highest entry, plus the control
/// bytes that follow the entries (one per bucket and a group's width).
pub(crate) fn map_span<K, V>(m: &HashMap<K, V>) -> Option<(usize, usize)> {
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for (k, v) in m {
        let k = k as *const K as usize;
        let v = v as *const V as usize;
        lo = lo.min(k).min(v);
        hi = hi
            .max(k + std::mem::size_of::<K>())
            .max(v + std::mem::size_of::<V>());
    }
    if lo >= hi {
        return None;
    }
    let buckets = (m.capacity() * 8 / 7 + 1).next_power_of_two();
    Some((lo, hi - lo + buckets + 16))
}

#[cfg(test)]
mod tests {
    use kura_common::{DataType, Value};
    use proptest::prelude::*;

    use super::*;

    fn ints(values: &[Option<i64>]) -> Vector {
        let v: Vec<Value> = values
            .iter()
            .map(|v| v.map_or(Value::Null, Value::BigInt))
            .collect();
        Vector::from_values(DataType::BigInt, &v).unwrap()
    }

    /// The pairs a nested loop finds: every (probe, build) with equal non-NULL keys,
    /// in probe order and then build order.
    fn nested_loop(probe: &[Option<i64>], build: &[Option<i64>]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (p, pk) in probe.iter().enumerate() {
            for (b, bk) in build.iter().enumerate() {
                if pk.is_some() && pk == bk {
                    out.push((p as u32, b as u32));
                }
            }
        }
        out
    }

    proptest! {
        // Runs of equal keys on either side (build chained per run, probe looked
        // up once per run) find exactly the nested loop's pairs, in its order.
        #[test]
        fn runs_of_keys_join_like_a_nested_loop(
            build in proptest::collection::vec(proptest::option::weighted(0.9, 0i64..6), 0..40),
            probe in proptest::collection::vec(proptest::option::weighted(0.9, 0i64..8), 0..40),
        ) {
            let key = ints(&build);
            let side = BuildSide {
                columns: vec![key.clone()],
                keys: vec![key],
                rows: build.len(),
                has_null_key: false,
                null_safe: vec![false],
            };
            let index = HashJoin.index(&side, &ExecContext::unbounded()).unwrap();
            let mut got = Vec::new();
            index.candidates(&[ints(&probe)], probe.len(), &mut got).unwrap();
            let expect = nested_loop(&probe, &build);
            prop_assert_eq!(got, expect.clone());
            // Existence alone (semi and anti joins): the probe rows with a pair.
            let mut rows = Vec::new();
            index.matching_rows(&[ints(&probe)], probe.len(), &mut rows).unwrap();
            let mut with_pair: Vec<u32> = expect.iter().map(|p| p.0).collect();
            with_pair.dedup();
            prop_assert_eq!(rows, with_pair);
        }
    }
}
