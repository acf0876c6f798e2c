//! Hash join index: a hash table from key to the first build row with that key,
//! plus a chain array linking rows with equal keys (paper 003's join operator).

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU32, Ordering};

use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use kura_common::Vector;

use super::{BuildSide, JoinAlgorithm, JoinIndex};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::keys::{encode_join_row, int_key, pair_int_key, pair_key, single_int_key};
use crate::ops::parallel::{helper_threads, run_parts};
use crate::ops::NO_ROW;

/// Builds hash tables; probing costs one lookup per probe row.
pub struct HashJoin;

enum Table {
    /// One integer key over a span not much wider than the build rows (keys
    /// of dimension tables, orders' keys): the first row of key `k` at
    /// `first[k - min]`, so a probe is one array load and no hash.
    Direct {
        min: i64,
        first: Vec<u32>,
    },
    Int(Parts<i64>),
    /// Two integer columns (composite foreign keys such as partsupp's): one
    /// fixed-width key instead of an allocated byte string per build row.
    Pair(Parts<u128>),
    Bytes(Parts<Box<[u8]>>),
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
        let any_null_safe = build.null_safe.iter().any(|&x| x);
        let direct = (single_int_key(&build.keys) && !any_null_safe)
            .then(|| direct_span(&build.keys[0], n, direct_floor(ctx)))
            .flatten();
        let (table, next) = if let Some((min, span)) = direct {
            let key = &build.keys[0];
            let mut next = vec![NO_ROW; n];
            let mut first = vec![NO_ROW; span];
            // In reverse, so that each chain lists its rows in ascending order.
            for row in (0..n).rev() {
                if row % 65536 == 0 {
                    ctx.check_cancel()?;
                }
                if let Some(k) = int_key(key, row) {
                    let slot = &mut first[(k - min) as usize];
                    next[row] = *slot;
                    *slot = row as u32;
                }
            }
            (Table::Direct { min, first }, next)
        } else {
            let threads = helper_threads(n, ctx);
            let next: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(NO_ROW)).collect();
            let table = if single_int_key(&build.keys) && !any_null_safe {
                let key = &build.keys[0];
                Table::Int(Parts::build(n, threads, &next, ctx, |row| {
                    int_key(key, row)
                })?)
            } else if pair_int_key(&build.keys) && !any_null_safe {
                Table::Pair(Parts::build(n, threads, &next, ctx, |row| {
                    pair_key(&build.keys, row)
                })?)
            } else {
                // One thread: each would encode every row's key to find its part.
                Table::Bytes(Parts::build(n, 1, &next, ctx, |row| {
                    let mut buf = Vec::new();
                    encode_join_row(&build.keys, row, &build.null_safe, &mut buf)
                        .then(|| buf.into_boxed_slice())
                })?)
            };
            (table, next.into_iter().map(AtomicU32::into_inner).collect())
        };
        Ok(Box::new(HashIndex {
            table,
            next,
            null_safe: build.null_safe.clone(),
        }))
    }
}

/// Hash tables from key to the first build row of the key, split by a range
/// of the key's hash bits that a table's own bucket choice and tags do not
/// use: each is built by one thread, and a probe finds its table from the
/// same hash it then looks the key up with (hashed once).
struct Parts<K> {
    tables: Vec<HashTable<(K, u32)>>,
    hasher: DefaultHashBuilder,
}

/// The table of a key's `hash` among `parts`, a power of two (bits 32–47:
/// a table's bucket index uses the low bits and its tags the top seven; a
/// mask, not a division, on every probe).
#[inline]
fn part_of(hash: u64, parts: usize) -> usize {
    (hash >> 32) as usize & (parts - 1)
}

impl<K: Hash + Eq + Send> Parts<K> {
    /// The tables of the `rows` build rows whose `key_of` is not `None`, with
    /// the rows of equal keys chained in `next` in ascending order; built by
    /// `threads` threads, each over every row for the keys of its own tables
    /// (so each row's `next` is written by one thread); a power of two of
    /// tables, the `t`-th filled by thread `t % threads`.
    fn build(
        rows: usize,
        threads: usize,
        next: &[AtomicU32],
        ctx: &ExecContext,
        key_of: impl Fn(usize) -> Option<K> + Sync,
    ) -> ExecResult<Parts<K>> {
        let hasher = DefaultHashBuilder::default();
        let hash = |k: &K| hasher.hash_one(k);
        let tables = threads.next_power_of_two();
        // The tables of one thread (those `t` with `t % threads == thread`).
        let fill = |thread: usize| -> ExecResult<Vec<HashTable<(K, u32)>>> {
            let mine = (thread..tables).step_by(threads).count();
            let mut own: Vec<HashTable<(K, u32)>> = (0..mine)
                .map(|_| HashTable::with_capacity(rows / tables + rows / tables / 16))
                .collect();
            // In reverse so each chain lists rows in ascending order. A run of
            // equal keys (lineitem's rows of one order) is chained as it is
            // met and enters its table once, at its end.
            let mut run: Option<(K, u64, u32, u32)> = None; // key, hash, first row, last row
            let flush = |own: &mut [HashTable<(K, u32)>], run: Option<(K, u64, u32, u32)>| {
                if let Some((k, h, first, last)) = run {
                    let t = &mut own[part_of(h, tables) / threads];
                    match t.entry(h, |e| e.0 == k, |e| hash(&e.0)) {
                        Entry::Occupied(mut o) => {
                            let prev = std::mem::replace(&mut o.get_mut().1, first);
                            next[last as usize].store(prev, Ordering::Relaxed);
                        }
                        Entry::Vacant(v) => {
                            v.insert((k, first));
                        }
                    }
                }
            };
            for row in (0..rows).rev() {
                if row % 65536 == 0 {
                    ctx.check_cancel()?;
                }
                let Some(k) = key_of(row) else {
                    continue;
                };
                match &mut run {
                    Some((rk, _, first, _)) if *rk == k => {
                        next[row].store(*first, Ordering::Relaxed);
                        *first = row as u32;
                    }
                    _ => {
                        let h = hash(&k);
                        if part_of(h, tables) % threads != thread {
                            continue;
                        }
                        flush(&mut own, run.take());
                        run = Some((k, h, row as u32, row as u32));
                    }
                }
            }
            flush(&mut own, run);
            Ok(own)
        };
        let by_thread = run_parts(threads, fill)?;
        // Table `t` is the `t / threads`-th of thread `t % threads`.
        let mut iters: Vec<_> = by_thread.into_iter().map(|v| v.into_iter()).collect();
        let tables = (0..tables)
            .map(|t| iters[t % threads].next().expect("a thread's table"))
            .collect();
        Ok(Parts { tables, hasher })
    }
}

impl<K: Hash + Eq> Parts<K> {
    /// The first build row of key `k`.
    #[inline]
    fn get<Q>(&self, k: &Q) -> Option<u32>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.hasher.hash_one(k);
        let t = match self.tables.as_slice() {
            [one] => one,
            tables => &tables[part_of(h, tables.len())],
        };
        t.find(h, |e| e.0.borrow() == k).map(|e| e.1)
    }

    #[inline]
    fn contains_key<Q>(&self, k: &Q) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(k).is_some()
    }

    fn capacity(&self) -> usize {
        self.tables.iter().map(|t| t.capacity()).sum()
    }

    fn keys(&self) -> impl Iterator<Item = &K> {
        self.tables.iter().flat_map(|t| t.iter().map(|e| &e.0))
    }

    /// Each table's memory, approximately (see [`table_span`]).
    fn spans(&self) -> Vec<(usize, usize)> {
        self.tables
            .iter()
            .filter_map(|t| {
                let entries = t.iter().map(|e| {
                    (
                        e as *const (K, u32) as usize,
                        std::mem::size_of::<(K, u32)>(),
                    )
                });
                table_span(entries, t.capacity())
            })
            .collect()
    }
}

/// Keys spanning no more 4-byte slots than a hash table of the build rows
/// would take bytes (and a floor for small builds) are indexed by an array:
/// a probe is then one load instead of a hash and a search. (TPC-H Q3's
/// 300,000 customers of one segment span 1.5 M keys: 6 MB as an array, 8.9
/// MB as a table; four slots a row, the bound before, sent them to the table.)
const DIRECT_MIN_SLOTS: usize = 1 << 16;

/// Bytes of a hash table of `rows` one-integer keys: hashbrown's buckets (a
/// power of two, at most 7/8 full), each a 16-byte entry and a control byte.
fn int_table_bytes(rows: usize) -> usize {
    (rows.saturating_mul(8) / 7 + 1)
        .checked_next_power_of_two()
        .map_or(usize::MAX, |b| b.saturating_mul(17))
}

/// The floor of slots for small builds: [`DIRECT_MIN_SLOTS`], unless an
/// eighth of the memory the query has left is less (a partition of a spilled
/// join: few rows, keys spread over the whole range).
fn direct_floor(ctx: &ExecContext) -> usize {
    let room_slots = ctx.memory.room() / 8 / std::mem::size_of::<u32>() as u64;
    DIRECT_MIN_SLOTS.min(room_slots.min(usize::MAX as u64) as usize)
}

/// `(min, span)` of a one-integer build key when it is dense enough for
/// [`Table::Direct`]; `None` for an empty or all-NULL key or a wide span.
fn direct_span(key: &Vector, rows: usize, floor: usize) -> Option<(i64, usize)> {
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for row in 0..rows {
        if let Some(k) = int_key(key, row) {
            min = min.min(k);
            max = max.max(k);
        }
    }
    if min > max {
        return None;
    }
    let span = (max as i128 - min as i128 + 1) as u128;
    let limit = (int_table_bytes(rows) / std::mem::size_of::<u32>()).max(floor);
    (span <= limit as u128).then_some((min, span as usize))
}

/// The slot of `k` in a direct table, if inside its span.
#[inline]
fn direct_slot(min: i64, len: usize, k: i64) -> Option<usize> {
    let at = (k as i128 - min as i128) as u128;
    (at < len as u128).then_some(at as usize)
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
        let mut walk = |p: usize, first: Option<u32>| {
            let mut b = first.unwrap_or(NO_ROW);
            while b != NO_ROW {
                out.push((p as u32, b));
                b = self.next[b as usize];
            }
        };
        match &self.table {
            Table::Direct { min, first } if single_int_key(probe_keys) => {
                for p in 0..rows {
                    if let Some(k) = int_key(&probe_keys[0], p) {
                        walk(p, direct_slot(*min, first.len(), k).map(|s| first[s]));
                    }
                }
            }
            Table::Direct { .. } => {}
            Table::Int(m) if single_int_key(probe_keys) => {
                let mut first_of = RunLookup::new(|k| m.get(&k));
                for p in 0..rows {
                    if let Some(k) = int_key(&probe_keys[0], p) {
                        walk(p, first_of.get(k));
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
            Table::Direct { min, first } => {
                if single_int_key(probe_keys) {
                    out.extend((0..rows as u32).filter(|&p| {
                        int_key(&probe_keys[0], p as usize).is_some_and(|k| {
                            direct_slot(*min, first.len(), k).is_some_and(|s| first[s] != NO_ROW)
                        })
                    }));
                }
            }
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
            Table::Direct { first, .. } => Some((
                first.as_ptr() as usize,
                std::mem::size_of_val(first.as_slice()),
            ))
            .filter(|r| r.1 > 0)
            .into_iter()
            .collect(),
            Table::Int(m) => m.spans(),
            Table::Pair(m) => m.spans(),
            Table::Bytes(m) => m.spans(),
        };
        let next = (
            self.next.as_ptr() as usize,
            std::mem::size_of_val(self.next.as_slice()),
            "chain array",
        );
        table
            .into_iter()
            .map(|(s, l)| (s, l, "hash table"))
            .chain((next.1 > 0).then_some(next))
            .collect()
    }

    fn bytes(&self) -> u64 {
        let entries = match &self.table {
            Table::Direct { first, .. } => first.len() * 4,
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
    let entries = m.iter().flat_map(|(k, v)| {
        [
            (k as *const K as usize, std::mem::size_of::<K>()),
            (v as *const V as usize, std::mem::size_of::<V>()),
        ]
    });
    table_span(entries, m.capacity())
}

/// The span of a hashbrown table holding entries at these (address, size)
/// pairs, with `capacity`: its slots, then one control byte per bucket and a
/// group more.
pub(crate) fn table_span(
    entries: impl Iterator<Item = (usize, usize)>,
    capacity: usize,
) -> Option<(usize, usize)> {
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for (at, size) in entries {
        lo = lo.min(at);
        hi = hi.max(at + size);
    }
    if lo >= hi {
        return None;
    }
    let buckets = (capacity * 8 / 7 + 1).next_power_of_two();
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

    /// Maps built by several threads, each for its part of the keys, chain and
    /// find the same rows as one map built by one thread.
    #[test]
    fn a_table_built_by_threads_finds_what_one_thread_builds() {
        // Runs of equal keys, keys met again later, NULLs.
        let keys: Vec<Option<i64>> = (0..50_000i64)
            .map(|i| (i % 7 != 0).then_some((i / 3) * 1_000_003 % 9_973))
            .collect();
        let key = ints(&keys);
        let ctx = ExecContext::unbounded();
        let chains = |threads: usize| {
            let next: Vec<AtomicU32> = (0..keys.len()).map(|_| AtomicU32::new(NO_ROW)).collect();
            let parts =
                Parts::build(keys.len(), threads, &next, &ctx, |r| int_key(&key, r)).unwrap();
            assert_eq!(parts.tables.len(), threads.next_power_of_two());
            let next: Vec<u32> = next.into_iter().map(AtomicU32::into_inner).collect();
            (0..10_000i64)
                .map(|k| {
                    let mut rows = Vec::new();
                    let mut at = parts.get(&k).unwrap_or(NO_ROW);
                    while at != NO_ROW {
                        rows.push(at);
                        at = next[at as usize];
                    }
                    assert_eq!(parts.contains_key(&k), !rows.is_empty());
                    rows
                })
                .collect::<Vec<_>>()
        };
        let one = chains(1);
        assert!(
            one.iter().filter(|r| r.len() > 1).count() > 1000,
            "chains of several rows"
        );
        for threads in [2, 3, 8] {
            assert_eq!(chains(threads), one, "{threads} threads");
        }
    }

    proptest! {
        // Runs of equal keys on either side (build chained per run, probe looked
        // up once per run) find exactly the nested loop's pairs, in its order —
        // with keys dense enough for the direct table (scale 1) and too sparse
        // for it (the hash table), around zero and at the ends of i64 (a probe
        // key outside the direct span must not wrap into it).
        #[test]
        fn runs_of_keys_join_like_a_nested_loop(
            build in proptest::collection::vec(proptest::option::weighted(0.9, 0i64..6), 0..40),
            probe in proptest::collection::vec(proptest::option::weighted(0.9, 0i64..8), 0..40),
            scale in prop_oneof![Just(1i64), Just(1_000_003i64)],
            offset in prop_oneof![Just(0i64), Just(-3i64), Just(i64::MIN / 2)],
            extreme in proptest::option::of(prop_oneof![Just(i64::MIN), Just(i64::MAX)]),
        ) {
            let at = |v: &Option<i64>| v.map(|k| k * scale + offset);
            let build: Vec<Option<i64>> = build.iter().map(at).collect();
            let mut probe: Vec<Option<i64>> = probe.iter().map(at).collect();
            probe.extend(extreme.map(Some));
            let direct = direct_span(&ints(&build), build.len(), DIRECT_MIN_SLOTS).is_some();
            let keys: Vec<i128> = build.iter().flatten().map(|&k| k as i128).collect();
            let dense = match (keys.iter().min(), keys.iter().max()) {
                (Some(lo), Some(hi)) => hi - lo < DIRECT_MIN_SLOTS as i128,
                _ => false,
            };
            prop_assert_eq!(direct, dense, "direct table for dense keys only");
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
