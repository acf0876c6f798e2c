//! Rows spilled by key: hash-partitioned into temporary files, one per
//! partition, to be processed a partition at a time (a hash aggregation's
//! input rows by group key, a grace hash join's two inputs by join key). A
//! hybrid hash join's build side keeps partitions in memory ("resident")
//! until the memory is needed, then writes the largest out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use kura_common::{Batch, DataType, Vector};

use crate::context::{ExecContext, OwnShare};
use crate::error::ExecResult;
use kura_common::ColumnData;

use crate::keys::encode_row;
use crate::spill::{hash_bytes, hash_int, SpillFile};

/// Partitions per level: enough that a partition's groups fit in what the
/// memory limit leaves (the rest re-partitions a level down), few enough that
/// each partition's pending rows stay small.
pub(crate) const PARTITIONS: usize = 32;

/// Levels of re-partitioning before a partition is aggregated whatever its size
/// (32^5 partitions split any set of groups that is not one group).
pub(crate) const MAX_LEVEL: u32 = 4;

/// A partition's rows are written once this many wait (or [`FLUSH_BYTES`]).
const FLUSH_ROWS: usize = 2048;
const FLUSH_BYTES: u64 = 64 << 10;

/// The partition (below [`PARTITIONS`]) of each of the first `n` rows of `keys`
/// at `level`: the same for a key wherever it is met (a spilled row, a group
/// held in memory, either side of a join), independent between levels.
pub(crate) fn partition_of(level: u32, keys: &[Vector], n: usize) -> Vec<u8> {
    key_hashes(level, keys, n)
        .into_iter()
        .map(partition)
        .collect()
}

/// The hash at `level` of each of the first `n` rows of `keys`, whose top bits
/// are its partition (see [`partition`]). An integer hashes by its value
/// whatever its width, so that equal keys held in vectors of different widths
/// land in the same partition; NULL is a value of its own (it matches NULL in
/// a group and in `IS NOT DISTINCT FROM`).
pub(crate) fn key_hashes(level: u32, keys: &[Vector], n: usize) -> Vec<u64> {
    let seed = 0x6b75_7261_u64 ^ (level as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // One integer key (order keys, part keys): hashed as its value, without
    // encoding each row first (a tenth of a spilled aggregation's time went
    // to encoding and hashing bytes).
    if let [k] = keys {
        match &k.data {
            ColumnData::I32(v) => return int_hashes(seed, k, v, n),
            ColumnData::I64(v) => return int_hashes(seed, k, v, n),
            ColumnData::I128(v) if k.data_type != DataType::Interval => {
                return int_hashes(seed, k, v, n)
            }
            _ => {}
        }
    }
    let mut buf = Vec::new();
    (0..n)
        .map(|row| {
            buf.clear();
            for k in keys {
                let wide = match &k.data {
                    _ if k.is_null(row) => None,
                    ColumnData::I32(v) => Some(v[row] as i128),
                    ColumnData::I64(v) => Some(v[row] as i128),
                    ColumnData::I128(v) if k.data_type != DataType::Interval => Some(v[row]),
                    _ => None,
                };
                match wide {
                    Some(x) => {
                        buf.push(1);
                        buf.extend_from_slice(&x.to_le_bytes());
                    }
                    None => {
                        encode_row(std::slice::from_ref(k), row, true, &mut buf);
                    }
                }
            }
            hash_bytes(seed, &buf)
        })
        .collect()
}

/// The partition of a key hash: its top bits.
pub(crate) fn partition(h: u64) -> u8 {
    ((h as u128 * PARTITIONS as u128) >> 64) as u8
}

/// [`key_hashes`] for one integer key of values `v` (NULLs hash as
/// encoded, as in the general case).
fn int_hashes<T: Copy + Into<i128>>(seed: u64, k: &Vector, v: &[T], n: usize) -> Vec<u64> {
    (0..n)
        .map(|row| {
            if k.is_null(row) {
                let mut buf = Vec::new();
                encode_row(std::slice::from_ref(k), row, true, &mut buf);
                hash_bytes(seed, &buf)
            } else {
                hash_int(seed, v[row].into())
            }
        })
        .collect()
}

/// A row [`Partitions::add_rows`] skips (it belongs to no partition on disk).
pub(crate) const NO_PARTITION: u8 = u8::MAX;

/// The rows one partition is waiting to write, and its file once written to.
#[derive(Default)]
struct Part {
    file: Option<SpillFile>,
    /// The group keys, then the input columns (empty where never read).
    pending: Vec<Vector>,
    rows: usize,
    /// Kept in memory (a hybrid join's build partition not yet evicted): its
    /// rows stay in `pending`, `reserved` bytes of the query's memory.
    resident: bool,
    reserved: u64,
}

/// The spilled rows of one level of partitioning. Workers add rows at once;
/// each partition is locked only while its rows are appended or written.
pub struct Partitions {
    pub level: u32,
    parts: Vec<Mutex<Part>>,
    /// The columns' types (set by the first rows): for an aggregation the key
    /// types, then the input columns' types.
    types: OnceLock<Vec<DataType>>,
    /// The plan node charged with the bytes written.
    node: usize,
    /// The query memory resident partitions' rows hold, and those rows.
    resident: OwnShare,
    resident_rows: AtomicU64,
    /// The most bytes resident partitions may hold together.
    resident_cap: u64,
}

impl Partitions {
    pub fn new(level: u32, node: usize) -> Partitions {
        Partitions {
            level,
            parts: (0..PARTITIONS).map(|_| Mutex::default()).collect(),
            types: OnceLock::new(),
            node,
            resident: OwnShare::default(),
            resident_rows: AtomicU64::new(0),
            resident_cap: u64::MAX,
        }
    }

    /// Partitions that all start resident: rows stay in memory, at most
    /// `cap` bytes of them, until [`Partitions::evict_largest`] writes a
    /// partition out (or a partition's growth does not fit).
    pub fn hybrid(level: u32, node: usize, cap: u64) -> Partitions {
        let mut parts = Partitions::new(level, node);
        parts.resident_cap = cap;
        for part in &parts.parts {
            part.lock().unwrap_or_else(|e| e.into_inner()).resident = true;
        }
        parts
    }

    /// The plan node charged with the rows written.
    pub fn node(&self) -> usize {
        self.node
    }

    /// Bytes of query memory the resident partitions' rows hold.
    pub fn resident_bytes(&self) -> u64 {
        self.resident.held()
    }

    /// Partitions still resident.
    pub fn resident_count(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| p.lock().unwrap_or_else(|e| e.into_inner()).resident)
            .count()
    }

    /// Rows held by resident partitions.
    pub fn resident_rows(&self) -> u64 {
        self.resident_rows.load(Ordering::Relaxed)
    }

    /// Writes the resident partition holding the most memory to its file
    /// (its later rows follow it there) and gives its memory back; false when
    /// none holds any.
    pub fn evict_largest(&self, ctx: &ExecContext) -> ExecResult<bool> {
        let mut largest: Option<(usize, u64)> = None;
        for (p, part) in self.parts.iter().enumerate() {
            let part = part.lock().unwrap_or_else(|e| e.into_inner());
            if part.resident && part.reserved > largest.map_or(0, |l| l.1) {
                largest = Some((p, part.reserved));
            }
        }
        let Some((p, _)) = largest else {
            return Ok(false);
        };
        let mut part = self.parts[p].lock().unwrap_or_else(|e| e.into_inner());
        self.evict(&mut part, ctx)?;
        Ok(true)
    }

    /// Writes a resident partition's rows out, a block of [`FLUSH_ROWS`] at a
    /// time, and makes it one on disk.
    fn evict(&self, part: &mut Part, ctx: &ExecContext) -> ExecResult<()> {
        if !part.resident {
            return Ok(());
        }
        part.resident = false;
        self.resident_rows
            .fetch_sub(part.rows as u64, Ordering::Relaxed);
        let all = std::mem::take(&mut part.pending);
        let rows = std::mem::take(&mut part.rows);
        let reserved = std::mem::take(&mut part.reserved);
        let mut written = Ok(());
        for start in (0..rows).step_by(FLUSH_ROWS) {
            let len = FLUSH_ROWS.min(rows - start);
            part.pending = all
                .iter()
                .map(|c| {
                    if c.is_empty() {
                        c.clone()
                    } else {
                        c.slice(start, len)
                    }
                })
                .collect();
            part.rows = len;
            written = self.write(part, ctx);
            if written.is_err() {
                break;
            }
        }
        drop(all);
        self.resident.release(&ctx.memory, reserved);
        written
    }

    /// Takes the resident partitions' rows out (after every row was added):
    /// which partitions are resident, and their rows, one batch per partition
    /// that has some. The memory they hold passes to the caller
    /// ([`Partitions::take_resident_bytes`]).
    pub fn take_resident(&self) -> (Vec<bool>, Vec<Batch>) {
        let mut resident = Vec::with_capacity(PARTITIONS);
        let mut batches = Vec::new();
        for part in &self.parts {
            let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
            resident.push(part.resident);
            if part.resident && part.rows > 0 {
                batches.push(Batch {
                    columns: std::mem::take(&mut part.pending),
                    num_rows: std::mem::take(&mut part.rows),
                    selection: None,
                });
                part.reserved = 0;
            }
        }
        self.resident_rows.store(0, Ordering::Relaxed);
        (resident, batches)
    }

    /// Hands the bytes resident rows reserved to the caller, who gives them back.
    pub fn take_resident_bytes(&self) -> u64 {
        self.resident.take()
    }

    /// Makes every partition one on disk (after [`Partitions::take_resident`]:
    /// rows added from now on are written).
    pub fn unresident_all(&self) {
        for part in &self.parts {
            part.lock().unwrap_or_else(|e| e.into_inner()).resident = false;
        }
    }

    /// The key types and input types of the rows, once some were added.
    pub fn types(&self) -> Option<&[DataType]> {
        self.types.get().map(|t| t.as_slice())
    }

    /// Adds `n` rows: their group `keys` and the input `columns` (an empty
    /// column stands for one never read).
    pub fn add(
        &self,
        keys: &[Vector],
        columns: &[Vector],
        n: usize,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        if n == 0 {
            return Ok(());
        }
        let part = partition_of(self.level, keys, n);
        let all: Vec<&Vector> = keys.iter().chain(columns).collect();
        self.add_rows(&part, &all, n, ctx)
    }

    /// Adds `n` rows of `columns` (an empty column stands for one never read),
    /// row `i` to partition `part[i]`.
    pub fn add_rows(
        &self,
        part: &[u8],
        columns: &[&Vector],
        n: usize,
        ctx: &ExecContext,
    ) -> ExecResult<()> {
        if n == 0 {
            return Ok(());
        }
        self.types
            .get_or_init(|| columns.iter().map(|c| c.data_type).collect());
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); PARTITIONS];
        for (row, &p) in part.iter().enumerate() {
            if p != NO_PARTITION {
                rows[p as usize].push(row as u32);
            }
        }
        for (p, sel) in rows.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
            let mut part = self.parts[p].lock().unwrap_or_else(|e| e.into_inner());
            let part = &mut *part;
            if part.pending.is_empty() {
                part.pending = columns
                    .iter()
                    .map(|c| Vector::new(c.data_type, 0))
                    .collect();
            }
            for (to, from) in part.pending.iter_mut().zip(columns.iter().copied()) {
                if !from.is_empty() {
                    to.append_take(from, sel);
                }
            }
            part.rows += sel.len();
            let bytes: u64 = part
                .pending
                .iter()
                .map(crate::ops::join::vector_bytes)
                .sum();
            if part.resident {
                self.keep(part, bytes, sel.len(), ctx)?;
            } else if part.rows >= FLUSH_ROWS || bytes >= FLUSH_BYTES {
                self.write(part, ctx)?;
            }
        }
        Ok(())
    }

    /// Counts `rows` more rows kept by a resident partition, now `bytes` in all:
    /// their growth is reserved, and where the resident cap or the memory
    /// limit refuses it the partition is written out instead.
    fn keep(&self, part: &mut Part, bytes: u64, rows: usize, ctx: &ExecContext) -> ExecResult<()> {
        self.resident_rows.fetch_add(rows as u64, Ordering::Relaxed);
        let grown = bytes.saturating_sub(part.reserved);
        let within_cap = self.resident.held().saturating_add(grown) <= self.resident_cap;
        if within_cap && self.resident.try_reserve(&ctx.memory, grown) {
            part.reserved += grown;
            Ok(())
        } else {
            self.evict(part, ctx)
        }
    }

    /// Writes a partition's pending rows to its file (created at its first rows).
    fn write(&self, part: &mut Part, ctx: &ExecContext) -> ExecResult<()> {
        if part.rows == 0 {
            return Ok(());
        }
        let file = match &mut part.file {
            Some(f) => f,
            None => {
                let f = SpillFile::create(&ctx.spill)?;
                ctx.record(self.node, |s| s.spill_files += 1);
                part.file.insert(f)
            }
        };
        let bytes = file.write(&part.pending, part.rows)?;
        ctx.record(self.node, |s| s.spilled_bytes += bytes);
        part.pending.clear();
        part.rows = 0;
        Ok(())
    }

    /// Writes every partition's pending rows (all rows were added) and seals
    /// their files: they wait to be read holding no memory.
    pub fn flush(&self, ctx: &ExecContext) -> ExecResult<()> {
        for part in &self.parts {
            let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
            if part.resident {
                continue;
            }
            self.write(&mut part, ctx)?;
            if let Some(f) = &mut part.file {
                f.seal()?;
            }
        }
        Ok(())
    }

    /// Partition `p`'s file, taken (after [`Partitions::flush`]); `None` when
    /// no row went there.
    pub fn take(&self, p: usize) -> Option<SpillFile> {
        let mut part = self.parts[p].lock().unwrap_or_else(|e| e.into_inner());
        part.file.take()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;
    use kura_common::Value;

    /// `n` rows from `from` on: a BIGINT key and a text of 20 to 40 bytes.
    fn rows(from: i64, n: usize) -> Vec<Vector> {
        let mut keys = Vector::new(DataType::BigInt, n);
        let mut texts = Vector::new(DataType::Varchar(None), n);
        for i in from..from + n as i64 {
            keys.push_value(&Value::BigInt(i));
            texts.push_value(&Value::Text(format!(
                "row {i:>16}{}",
                "x".repeat(i as usize % 21)
            )));
        }
        vec![keys, texts]
    }

    fn ctx(dir: &std::path::Path, limit: u64) -> ExecContext {
        ExecContext::new(Arc::new(AtomicBool::new(false)), limit)
            .with_spill(dir.to_path_buf(), u64::MAX)
    }

    fn add(parts: &Partitions, columns: &[Vector], ctx: &ExecContext) {
        let n = columns[0].len();
        let part = partition_of(parts.level, &columns[..1], n);
        let refs: Vec<&Vector> = columns.iter().collect();
        parts.add_rows(&part, &refs, n, ctx).unwrap();
    }

    /// The keys of every row a partition's file holds.
    fn keys_on_disk(file: &SpillFile) -> Vec<i64> {
        let mut out = Vec::new();
        let mut blocks = file.reader(vec![DataType::BigInt, DataType::Varchar(None)]);
        while let Some((columns, n)) = blocks.next_block().unwrap() {
            out.extend((0..n).map(|i| columns[0].get_value(i).as_i64().unwrap()));
        }
        out
    }

    #[test]
    fn resident_partitions_hold_their_rows_in_counted_memory_until_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path(), 64 << 20);
        let parts = Partitions::hybrid(0, crate::context::NO_NODE, u64::MAX);
        for from in (0..20_000).step_by(2_000) {
            add(&parts, &rows(from, 2_000), &ctx);
        }
        assert_eq!(parts.resident_count(), PARTITIONS);
        assert_eq!(parts.resident_rows(), 20_000);
        assert_eq!(parts.resident_bytes(), ctx.memory.used());
        // Evicting writes the largest partition out and gives its memory back.
        let before = parts.resident_bytes();
        assert!(parts.evict_largest(&ctx).unwrap());
        assert!(parts.evict_largest(&ctx).unwrap());
        assert_eq!(parts.resident_count(), PARTITIONS - 2);
        assert!(parts.resident_bytes() < before);
        assert_eq!(parts.resident_bytes(), ctx.memory.used());
        // Rows of an evicted partition added later follow its rows to disk.
        add(&parts, &rows(20_000, 2_000), &ctx);
        parts.flush(&ctx).unwrap();
        let (resident, batches) = parts.take_resident();
        ctx.memory.release(parts.take_resident_bytes());
        assert_eq!(ctx.memory.used(), 0);
        assert_eq!(resident.iter().filter(|&&r| r).count(), PARTITIONS - 2);
        let mut seen = Vec::new();
        for b in &batches {
            let keys = &b.columns[..1];
            for (i, p) in partition_of(0, keys, b.num_rows).iter().enumerate() {
                assert!(resident[*p as usize], "row {i} of a partition on disk kept");
                seen.push(keys[0].get_value(i).as_i64().unwrap());
            }
        }
        for (p, &kept) in resident.iter().enumerate() {
            match parts.take(p) {
                Some(file) => {
                    assert!(!kept);
                    let keys = keys_on_disk(&file);
                    let column = Vector::from_values(
                        DataType::BigInt,
                        &keys.iter().map(|&k| Value::BigInt(k)).collect::<Vec<_>>(),
                    )
                    .unwrap();
                    let of = partition_of(0, &[column], keys.len());
                    assert!(of.iter().all(|&q| q as usize == p));
                    seen.extend(keys);
                }
                None => assert!(kept, "partition {p} on disk has no file"),
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..22_000).collect::<Vec<i64>>());
    }

    #[test]
    fn a_resident_partition_the_limit_refuses_goes_to_disk_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path(), 64 << 10);
        let parts = Partitions::hybrid(0, crate::context::NO_NODE, u64::MAX);
        for from in (0..20_000).step_by(2_000) {
            add(&parts, &rows(from, 2_000), &ctx);
        }
        assert!(parts.resident_count() < PARTITIONS);
        assert!(ctx.memory.used() <= 64 << 10);
        parts.flush(&ctx).unwrap();
        let (_, batches) = parts.take_resident();
        ctx.memory.release(parts.take_resident_bytes());
        assert_eq!(ctx.memory.used(), 0);
        let kept: usize = batches.iter().map(|b| b.num_rows).sum();
        let written: u64 = (0..PARTITIONS)
            .filter_map(|p| parts.take(p))
            .map(|f| f.rows())
            .sum();
        assert_eq!(kept as u64 + written, 20_000);
    }
}
