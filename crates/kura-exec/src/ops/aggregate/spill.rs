//! A hash aggregation's spilled input rows: hash-partitioned by group key into
//! temporary files, one per partition, to be aggregated a partition at a time.

use std::sync::{Mutex, OnceLock};

use kura_common::{DataType, Vector};

use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::keys::encode_row;
use crate::spill::{hash_bytes, SpillFile};

/// Partitions per level: enough that a partition's groups fit in what the
/// memory limit leaves (the rest re-partitions a level down), few enough that
/// each partition's pending rows stay small.
pub(super) const PARTITIONS: usize = 32;

/// Levels of re-partitioning before a partition is aggregated whatever its size
/// (32^5 partitions split any set of groups that is not one group).
pub(super) const MAX_LEVEL: u32 = 4;

/// A partition's rows are written once this many wait (or [`FLUSH_BYTES`]).
const FLUSH_ROWS: usize = 2048;
const FLUSH_BYTES: u64 = 64 << 10;

/// The partition (below [`PARTITIONS`]) of each of the first `n` rows of `keys`
/// at `level`: the same for a group's key wherever it is met (a spilled row, a
/// group held in memory), independent between levels.
pub(super) fn partition_of(level: u32, keys: &[Vector], n: usize) -> Vec<u8> {
    let seed = 0x6b75_7261_u64 ^ (level as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut buf = Vec::new();
    (0..n)
        .map(|row| {
            buf.clear();
            encode_row(keys, row, true, &mut buf);
            let h = hash_bytes(seed, &buf);
            ((h as u128 * PARTITIONS as u128) >> 64) as u8
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
pub(super) struct Partitions {
    pub level: u32,
    parts: Vec<Mutex<Part>>,
    /// The key types, then the input columns' types (set by the first rows).
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
        self.types
            .get_or_init(|| keys.iter().chain(columns).map(|c| c.data_type).collect());
        let part = partition_of(self.level, keys, n);
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); PARTITIONS];
        for (row, &p) in part.iter().enumerate() {
            rows[p as usize].push(row as u32);
        }
        for (p, sel) in rows.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
            let mut part = self.parts[p].lock().unwrap_or_else(|e| e.into_inner());
            let part = &mut *part;
            if part.pending.is_empty() {
                part.pending = keys
                    .iter()
                    .chain(columns)
                    .map(|c| Vector::new(c.data_type, 0))
                    .collect();
            }
            for (to, from) in part.pending.iter_mut().zip(keys.iter().chain(columns)) {
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

    /// Writes every partition's pending rows (all rows were added).
    pub fn flush(&self, ctx: &ExecContext) -> ExecResult<()> {
        for part in &self.parts {
            let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
            self.write(&mut part, ctx)?;
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
