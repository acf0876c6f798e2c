//! Decoded pieces of a file kept while the scan works on them: the scan reads a row group
//! column by column and morsel by morsel, so each piece is decoded once and served from here
//! until newer pieces push it out. A piece two workers want at once is decoded by one of
//! them while the other waits.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use kura_common::Vector;

use crate::runtime::AlignedBuf;

use crate::error::ExecResult;

type Cell<V> = Arc<OnceLock<ExecResult<Arc<V>>>>;

/// Decoded pieces by key, the oldest dropped past `capacity`.
pub(crate) struct DecodeCache<K, V> {
    inner: Mutex<Entries<K, V>>,
    capacity: usize,
}

struct Entries<K, V> {
    map: HashMap<K, Cell<V>>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V> DecodeCache<K, V> {
    /// Room for `capacity` pieces (at least one).
    pub fn new(capacity: usize) -> DecodeCache<K, V> {
        DecodeCache {
            inner: Mutex::new(Entries {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            capacity: capacity.max(1),
        }
    }

    /// Whether the piece `key` is here (decoded, or being decoded).
    pub fn contains(&self, key: &K) -> bool {
        let e = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        e.map.contains_key(key)
    }

    /// The piece `key`, decoded by `decode` unless it is here.
    pub fn get(&self, key: K, decode: impl FnOnce() -> ExecResult<V>) -> ExecResult<Arc<V>> {
        let cell = {
            let mut e = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = e.map.get(&key) {
                c.clone()
            } else {
                let c: Cell<V> = Arc::default();
                e.map.insert(key.clone(), c.clone());
                e.order.push_back(key);
                while e.order.len() > self.capacity {
                    if let Some(old) = e.order.pop_front() {
                        e.map.remove(&old);
                    }
                }
                c
            }
        };
        cell.get_or_init(|| decode().map(Arc::new)).clone()
    }
}

/// Pieces of a file the scan read ahead (through io_uring), by key, until they are decoded or
/// the morsel that read them is done.
pub(crate) struct ReadAhead<K>(Mutex<HashMap<K, AlignedBuf>>);

impl<K: Hash + Eq> ReadAhead<K> {
    pub fn new() -> ReadAhead<K> {
        ReadAhead(Mutex::new(HashMap::new()))
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, AlignedBuf>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn put(&self, key: K, data: AlignedBuf) {
        self.lock().insert(key, data);
    }
    /// The bytes read for `key`, taken out (or dropped, when the caller does not use them).
    pub fn take(&self, key: &K) -> Option<AlignedBuf> {
        self.lock().remove(key)
    }
    pub fn holds(&self, key: &K) -> bool {
        self.lock().contains_key(key)
    }
}

/// Pieces the scan can work on at once: a few per worker thread.
pub(crate) fn pieces_in_flight() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) + 2
}

/// Rows `first_row .. first_row + len` (clipped to the table) of a table stored as
/// consecutive `groups` (row ranges, ascending), stitched from the groups' parts:
/// `part(g, offset, len)` is rows `offset .. offset + len` of group `g`.
pub(crate) fn stitch(
    groups: &[Range<u64>],
    first_row: u64,
    len: usize,
    empty: impl FnOnce() -> Vector,
    mut part: impl FnMut(usize, usize, usize) -> ExecResult<Vector>,
) -> ExecResult<Vector> {
    let end = first_row + len as u64;
    let mut out: Option<Vector> = None;
    let mut row = first_row;
    let mut g = groups.partition_point(|r| r.end <= row);
    while row < end && g < groups.len() {
        let rows = &groups[g];
        let stop = end.min(rows.end);
        let piece = part(g, (row - rows.start) as usize, (stop - row) as usize)?;
        match &mut out {
            None => out = Some(piece),
            Some(o) => o.append(&piece),
        }
        row = stop;
        g += 1;
    }
    Ok(out.unwrap_or_else(empty))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::{DataType, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_piece_is_decoded_once_until_pushed_out() {
        let cache: DecodeCache<usize, u64> = DecodeCache::new(2);
        let decoded = AtomicUsize::new(0);
        let get = |k: usize| {
            *cache
                .get(k, || {
                    decoded.fetch_add(1, Ordering::Relaxed);
                    Ok(k as u64 * 10)
                })
                .unwrap()
        };
        assert_eq!((get(1), get(1), get(2)), (10, 10, 20));
        assert_eq!(decoded.load(Ordering::Relaxed), 2);
        get(3); // pushes 1 out
        get(1);
        assert_eq!(decoded.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn ranges_are_stitched_across_groups() {
        let groups = [0..3u64, 3..5, 5..9];
        let part = |g: usize, offset: usize, len: usize| {
            let r = &groups[g];
            let vals: Vec<Value> = (r.start as i64..r.end as i64).map(Value::BigInt).collect();
            Ok(Vector::from_values(DataType::BigInt, &vals)
                .unwrap()
                .slice(offset, len))
        };
        let empty = || Vector::new(DataType::BigInt, 0);
        let v = stitch(&groups, 2, 5, empty, part).unwrap();
        let got: Vec<Value> = (0..v.len()).map(|i| v.get_value(i)).collect();
        assert_eq!(got, (2..7).map(Value::BigInt).collect::<Vec<_>>());
        assert_eq!(stitch(&groups, 8, 10, empty, part).unwrap().len(), 1);
        assert_eq!(stitch(&groups, 9, 10, empty, part).unwrap().len(), 0);
    }
}
