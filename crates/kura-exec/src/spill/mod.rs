//! Temporary files for operators that spill to disk: where they go, a compact
//! lz4-compressed block format for column vectors, and files that remove themselves.

pub mod partitions;
pub mod result;

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use kura_common::{ColumnData, DataType, StrVec, Vector};

use crate::error::{ExecError, ExecResult};

/// Every spill file's name starts so; the files left by a crash are found by it.
pub const FILE_PREFIX: &str = "kura-spill-";

/// Where one query's operators spill and how much they may write there (the
/// settings `temp_directory` and `max_temp_directory_size`).
#[derive(Debug)]
pub struct SpillConfig {
    pub dir: PathBuf,
    /// Bytes the query may have written to temporary files at once.
    pub max_bytes: u64,
    /// Bytes the query's temporary files hold now.
    written: AtomicU64,
}

impl Default for SpillConfig {
    fn default() -> Self {
        SpillConfig::new(std::env::temp_dir(), u64::MAX)
    }
}

impl SpillConfig {
    pub fn new(dir: PathBuf, max_bytes: u64) -> Self {
        SpillConfig {
            dir,
            max_bytes,
            written: AtomicU64::new(0),
        }
    }

    /// Bytes this query's temporary files hold now.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// Removes the spill files a crashed process left in `dir` (a database's own
/// temporary directory, which no other process writes to). Errors are ignored:
/// a file that stays is only wasted space.
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(FILE_PREFIX) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    // Gone when empty: a database that spilled once leaves nothing beside it.
    let _ = std::fs::remove_dir(dir);
}

/// The error of a failed temporary-file write: a full disk (or the
/// `max_temp_directory_size` bound) is 53100, anything else an I/O error.
fn write_error(e: std::io::Error) -> ExecError {
    // ENOSPC and EDQUOT.
    if e.kind() == std::io::ErrorKind::StorageFull || matches!(e.raw_os_error(), Some(28 | 122)) {
        ExecError::DiskFull(format!("could not write to temporary file: {e}"))
    } else {
        ExecError::Storage(format!("could not write to temporary file: {e}"))
    }
}

fn read_error(e: std::io::Error) -> ExecError {
    ExecError::Storage(format!("could not read temporary file: {e}"))
}

/// A temporary file of blocks of column vectors. On Unix its name is removed
/// as soon as it is open, so nothing is left behind whatever ends the query
/// (error, cancel, crash); elsewhere dropping it removes it.
pub struct SpillFile {
    file: File,
    path: Option<PathBuf>,
    bytes: u64,
    blocks: u64,
    rows: u64,
    /// Where each block starts, for reading one block at a time by number.
    starts: Vec<u64>,
    config: std::sync::Arc<SpillConfig>,
}

impl SpillFile {
    pub fn create(config: &std::sync::Arc<SpillConfig>) -> ExecResult<SpillFile> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&config.dir).map_err(write_error)?;
        let name = format!(
            "{FILE_PREFIX}{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = config.dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(write_error)?;
        let mut path = Some(path);
        if cfg!(unix) {
            if let Some(p) = path.take() {
                // The open handle keeps the data; no name means no leftovers.
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(SpillFile {
            file,
            path,
            bytes: 0,
            blocks: 0,
            rows: 0,
            starts: Vec::new(),
            config: config.clone(),
        })
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Blocks written so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Appends one block of `columns` (`rows` rows; a column may be empty,
    /// standing for one never read); returns the bytes written.
    pub fn write(&mut self, columns: &[Vector], rows: usize) -> ExecResult<u64> {
        let mut raw = Vec::new();
        encode_block(columns, rows, &mut raw);
        let packed = lz4_flex::block::compress(&raw);
        let mut block = Vec::with_capacity(packed.len() + 8);
        block.extend_from_slice(&(packed.len() as u32).to_le_bytes());
        block.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        block.extend_from_slice(&packed);
        let len = block.len() as u64;
        let total = self.config.written.fetch_add(len, Ordering::Relaxed) + len;
        self.bytes += len;
        if total > self.config.max_bytes {
            return Err(ExecError::DiskFull(format!(
                "temporary files would pass max_temp_directory_size ({} bytes)",
                self.config.max_bytes
            )));
        }
        self.file.write_all(&block).map_err(write_error)?;
        self.starts.push(self.bytes - len);
        self.blocks += 1;
        self.rows += rows as u64;
        Ok(len)
    }

    /// Reads block `i` (below [`SpillFile::blocks`]) as vectors of `types`,
    /// with one positioned read: several threads may read one file at once.
    pub fn read_block(&self, i: usize, types: &[DataType]) -> ExecResult<(Vec<Vector>, usize)> {
        let start = *self
            .starts
            .get(i)
            .ok_or_else(|| corrupt("block number past the end"))?;
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes);
        let mut block = vec![0u8; (end - start) as usize];
        read_at(&self.file, &mut block, start).map_err(read_error)?;
        if block.len() < 8 {
            return Err(corrupt("block ends early"));
        }
        let raw_len = u32::from_le_bytes(block[4..8].try_into().unwrap_or_default()) as usize;
        let raw = lz4_flex::block::decompress(&block[8..], raw_len)
            .map_err(|e| corrupt(&format!("block does not decompress: {e}")))?;
        decode_block(&raw, types)
    }

    /// Reads the blocks back from the start, as vectors of `types`.
    pub fn reader(&mut self, types: Vec<DataType>) -> ExecResult<SpillReader<'_>> {
        self.file.flush().map_err(write_error)?;
        self.file.seek(SeekFrom::Start(0)).map_err(read_error)?;
        Ok(SpillReader {
            input: BufReader::with_capacity(1 << 16, &self.file),
            left: self.blocks,
            types,
        })
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let held = self.bytes;
        let _ = self
            .config
            .written
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some(w.saturating_sub(held))
            });
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Fills `buf` from `file` at `offset` without moving a shared file position.
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    // Written blocks are flushed (no user-space buffer); a cloned handle may
    // share the position, so reads of one file must not overlap here.
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// The blocks of a [`SpillFile`], in the order written.
pub struct SpillReader<'a> {
    input: BufReader<&'a File>,
    left: u64,
    types: Vec<DataType>,
}

impl SpillReader<'_> {
    /// The next block's columns and row count; `None` after the last.
    pub fn next_block(&mut self) -> ExecResult<Option<(Vec<Vector>, usize)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut head = [0u8; 8];
        self.input.read_exact(&mut head).map_err(read_error)?;
        let packed_len = u32::from_le_bytes(head[..4].try_into().unwrap_or_default()) as usize;
        let raw_len = u32::from_le_bytes(head[4..].try_into().unwrap_or_default()) as usize;
        let mut packed = vec![0u8; packed_len];
        self.input.read_exact(&mut packed).map_err(read_error)?;
        let raw = lz4_flex::block::decompress(&packed, raw_len)
            .map_err(|e| corrupt(&format!("block does not decompress: {e}")))?;
        decode_block(&raw, &self.types).map(Some)
    }
}

fn corrupt(what: &str) -> ExecError {
    ExecError::Internal(format!("temporary file: {what}"))
}

/// Writes `columns` (each of `rows` values, or empty) as: row count, column
/// count, then per column its length, validity (a flag, then bits) and values
/// (fixed-width little-endian; text as offsets then bytes).
pub fn encode_block(columns: &[Vector], rows: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(rows as u32).to_le_bytes());
    out.extend_from_slice(&(columns.len() as u32).to_le_bytes());
    for c in columns {
        let len = c.len();
        out.extend_from_slice(&(len as u32).to_le_bytes());
        match &c.validity {
            Some(valid) if valid.iter().take(len).any(|v| !v) => {
                out.push(1);
                let mut bits = vec![0u8; len.div_ceil(8)];
                for (i, _) in valid.iter().take(len).enumerate().filter(|(_, v)| **v) {
                    bits[i / 8] |= 1 << (i % 8);
                }
                out.extend_from_slice(&bits);
            }
            _ => out.push(0),
        }
        match &c.data {
            ColumnData::Bool(v) => out.extend(v.iter().map(|&b| b as u8)),
            ColumnData::I32(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            ColumnData::I64(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            ColumnData::I128(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
            ColumnData::F64(v) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_bits().to_le_bytes())),
            ColumnData::Str(s) => {
                let base = s.offsets.first().copied().unwrap_or(0);
                let end = s.offsets.get(len).copied().unwrap_or(base);
                for &o in &s.offsets[..=len.min(s.offsets.len().saturating_sub(1))] {
                    out.extend_from_slice(&(o - base).to_le_bytes());
                }
                out.extend_from_slice(&s.data[base as usize..end as usize]);
            }
        }
    }
}

/// Reads what [`encode_block`] wrote, the columns typed `types`.
pub fn decode_block(raw: &[u8], types: &[DataType]) -> ExecResult<(Vec<Vector>, usize)> {
    let mut r = Cursor { raw, at: 0 };
    let rows = r.u32()? as usize;
    let ncols = r.u32()? as usize;
    if ncols != types.len() {
        return Err(corrupt("column count"));
    }
    let mut columns = Vec::with_capacity(ncols);
    for &ty in types {
        let len = r.u32()? as usize;
        let validity = match r.bytes(1)?[0] {
            0 => None,
            _ => {
                let bits = r.bytes(len.div_ceil(8))?;
                Some(
                    (0..len)
                        .map(|i| bits[i / 8] & (1 << (i % 8)) != 0)
                        .collect(),
                )
            }
        };
        let mut v = Vector::new(ty, 0);
        v.data = match v.data {
            ColumnData::Bool(_) => {
                ColumnData::Bool(r.bytes(len)?.iter().map(|&b| b != 0).collect())
            }
            ColumnData::I32(_) => ColumnData::I32(r.fixed(len, i32::from_le_bytes)?),
            ColumnData::I64(_) => ColumnData::I64(r.fixed(len, i64::from_le_bytes)?),
            ColumnData::I128(_) => ColumnData::I128(r.fixed(len, i128::from_le_bytes)?),
            ColumnData::F64(_) => {
                ColumnData::F64(r.fixed(len, |b| f64::from_bits(u64::from_le_bytes(b)))?)
            }
            ColumnData::Str(_) => {
                let offsets = r.fixed(len + 1, u32::from_le_bytes)?;
                let data = r.bytes(offsets[len] as usize)?.to_vec();
                ColumnData::Str(StrVec { offsets, data })
            }
        };
        v.validity = validity;
        columns.push(v);
    }
    Ok((columns, rows))
}

struct Cursor<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&mut self, n: usize) -> ExecResult<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.raw.len());
        let end = end.ok_or_else(|| corrupt("block ends early"))?;
        let b = &self.raw[self.at..end];
        self.at = end;
        Ok(b)
    }

    fn u32(&mut self) -> ExecResult<u32> {
        Ok(self.fixed(1, u32::from_le_bytes)?[0])
    }

    fn fixed<T, const N: usize>(
        &mut self,
        n: usize,
        f: impl Fn([u8; N]) -> T,
    ) -> ExecResult<Vec<T>> {
        let b = self.bytes(n * N)?;
        Ok(b.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect())
    }
}

/// A deterministic 64-bit hash of an integer key under `seed` (see
/// [`hash_bytes`]): the same for a value whatever the width it is held in.
pub fn hash_int(seed: u64, x: i128) -> u64 {
    let mut h =
        seed ^ (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((x >> 64) as u64).rotate_left(29);
    // fmix64: every input bit reaches every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A deterministic 64-bit hash of `bytes` (an encoded key) under `seed`:
/// the same key lands in the same partition whichever worker wrote it, and
/// each level of re-partitioning uses a seed of its own.
pub fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K);
    let chunks = bytes.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(31);
    }
    let mut last = [0u8; 8];
    last[..tail.len()].copy_from_slice(tail);
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    // fmix64: every input bit reaches every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::Value;
    use std::sync::Arc;

    fn vector(ty: DataType, values: &[Value]) -> Vector {
        let mut v = Vector::new(ty, values.len());
        for x in values {
            assert!(v.push_value(x), "{x:?} into {ty:?}");
        }
        v
    }

    fn samples() -> Vec<Vector> {
        use Value::*;
        vec![
            vector(
                DataType::Boolean,
                &[Boolean(true), Null, Boolean(false), Boolean(true)],
            ),
            vector(
                DataType::Integer,
                &[Integer(1), Integer(-7), Null, Integer(i32::MAX)],
            ),
            vector(
                DataType::BigInt,
                &[Null, BigInt(i64::MIN), BigInt(0), BigInt(42)],
            ),
            vector(
                DataType::Decimal {
                    precision: 30,
                    scale: 2,
                },
                &[
                    Decimal(12345, 2),
                    Null,
                    Decimal(-1, 2),
                    Decimal(i128::MAX / 7, 2),
                ],
            ),
            vector(
                DataType::Double,
                &[Double(-0.0), Double(f64::NAN), Null, Double(1.5)],
            ),
            vector(
                DataType::Varchar(None),
                &[
                    Text("".into()),
                    Null,
                    Text("héllo".into()),
                    Text("x".repeat(300)),
                ],
            ),
        ]
    }

    fn same(a: &Vector, b: &Vector) {
        assert_eq!(a.len(), b.len());
        for i in 0..a.len() {
            let (x, y) = (a.get_value(i), b.get_value(i));
            assert_eq!(format!("{x:?}"), format!("{y:?}"), "row {i}");
        }
    }

    #[test]
    fn blocks_round_trip_every_kind_with_nulls() {
        let cols = samples();
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type).collect();
        let mut raw = Vec::new();
        encode_block(&cols, 4, &mut raw);
        let (back, rows) = decode_block(&raw, &types).unwrap();
        assert_eq!(rows, 4);
        for (a, b) in cols.iter().zip(&back) {
            same(a, b);
        }
        // A taken slice of text starts at a nonzero offset in the original.
        let taken: Vec<Vector> = cols.iter().map(|c| c.take(&[3, 2])).collect();
        let mut raw = Vec::new();
        encode_block(&taken, 2, &mut raw);
        let (back, _) = decode_block(&raw, &types).unwrap();
        for (a, b) in taken.iter().zip(&back) {
            same(a, b);
        }
    }

    #[test]
    fn files_keep_blocks_in_order_and_empty_columns() {
        let dir = std::env::temp_dir().join(format!("kura-spill-test-{}", std::process::id()));
        let config = Arc::new(SpillConfig::new(dir.clone(), u64::MAX));
        let cols = samples();
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type).collect();
        let mut f = SpillFile::create(&config).unwrap();
        f.write(&cols, 4).unwrap();
        let mut sparse = cols.clone();
        sparse[1] = Vector::new(DataType::Integer, 0);
        f.write(&sparse, 4).unwrap();
        assert!(config.written() > 0);
        {
            let mut r = f.reader(types).unwrap();
            let (a, _) = r.next_block().unwrap().unwrap();
            same(&a[5], &cols[5]);
            let (b, rows) = r.next_block().unwrap().unwrap();
            assert_eq!((rows, b[1].len()), (4, 0));
            same(&b[0], &cols[0]);
            assert!(r.next_block().unwrap().is_none());
        }
        drop(f);
        assert_eq!(config.written(), 0);
        // No name stays behind in the directory.
        let left = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0);
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn the_size_bound_is_disk_full() {
        let config = Arc::new(SpillConfig::new(std::env::temp_dir(), 10));
        let mut f = SpillFile::create(&config).unwrap();
        let e = f.write(&samples(), 4).unwrap_err();
        assert_eq!(e.sqlstate(), "53100");
    }

    #[test]
    fn stale_files_are_removed() {
        let dir = std::env::temp_dir().join(format!("kura-stale-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{FILE_PREFIX}1-1.tmp")), b"x").unwrap();
        std::fs::write(dir.join("other"), b"y").unwrap();
        remove_stale(&dir);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("other")]);
        std::fs::remove_file(dir.join("other")).unwrap();
        remove_stale(&dir);
        assert!(!dir.exists());
    }

    #[test]
    fn hashes_depend_on_the_seed() {
        let a = hash_bytes(1, b"key");
        assert_eq!(a, hash_bytes(1, b"key"));
        assert_ne!(a, hash_bytes(2, b"key"));
        assert_ne!(a, hash_bytes(1, b"kez"));
    }
}
