//! Rows spilled by key: hash-partitioned into temporary files, one per
//! partition, to be processed a partition at a time (a hash aggregation's
//! input rows by group key, a grace hash join's two inputs by join key).

use std::sync::{Mutex, OnceLock};

use kura_common::{DataType, Vector};

use crate::context::ExecContext;
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
/// held in memory, either side of a join), independent between levels. An
/// integer hashes by its value whatever its width, so that equal keys held
/// in vectors of different widths land in the same partition; NULL is a
/// value of its own (it matches NULL in a group and in `IS NOT DISTINCT FROM`).
pub(crate) fn partition_of(level: u32, keys: &[Vector], n: usize) -> Vec<u8> {
    let seed = 0x6b75_7261_u64 ^ (level as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // One integer key (order keys, part keys): hashed as its value, without
    // encoding each row first (a tenth of a spilled aggregation's time went
    // to encoding and hashing bytes).
    if let [k] = keys {
        match &k.data {
            ColumnData::I32(v) => return int_partitions(seed, k, v, n),
            ColumnData::I64(v) => return int_partitions(seed, k, v, n),
            ColumnData::I128(v) if k.data_type != DataType::Interval => {
                return int_partitions(seed, k, v, n)
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
            of(hash_bytes(seed, &buf))
        })
        .collect()
}

/// The partition of a hash.
fn of(h: u64) -> u8 {
    ((h as u128 * PARTITIONS as u128) >> 64) as u8
}

/// [`partition_of`] for one integer key of values `v` (NULLs hash as
/// encoded, as in the general case).
fn int_partitions<T: Copy + Into<i128>>(seed: u64, k: &Vector, v: &[T], n: usize) -> Vec<u8> {
    (0..n)
        .map(|row| {
            if k.is_null(row) {
                let mut buf = Vec::new();
                encode_row(std::slice::from_ref(k), row, true, &mut buf);
                of(hash_bytes(seed, &buf))
            } else {
                of(hash_int(seed, v[row].into()))
            }
        })
        .collect()
}

/// The rows one partition is waiting to write, and its file once written to.
#[derive(Default)]
struct Part {
    file: Option<SpillFile>,
    /// The group keys, then the input columns (empty where never read).
    pending: Vec<Vector>,
    rows: usize,
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
}

impl Partitions {
    pub fn new(level: u32, node: usize) -> Partitions {
        Partitions {
            level,
            parts: (0..PARTITIONS).map(|_| Mutex::default()).collect(),
            types: OnceLock::new(),
            node,
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
            rows[p as usize].push(row as u32);
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
                    to.append(&from.take(sel));
                }
            }
            part.rows += sel.len();
            let bytes: u64 = part
                .pending
                .iter()
                .map(crate::ops::join::vector_bytes)
                .sum();
            if part.rows >= FLUSH_ROWS || bytes >= FLUSH_BYTES {
                self.write(part, ctx)?;
            }
        }
        Ok(())
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
