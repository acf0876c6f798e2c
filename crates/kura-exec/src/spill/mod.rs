//! Temporary files for operators that spill to disk: where they go, a compact
//! lz4-compressed block format for column vectors, and files that remove themselves.

pub mod key_set;
pub mod partitions;
pub mod result;
mod writer;

use std::fs::{File, OpenOptions};
#[cfg(not(unix))]
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kura_common::{ColumnData, DataType, StrVec, Vector};

use crate::error::{ExecError, ExecResult};
use crate::runtime::io::buf::{round_up, AlignedBuf, IO_ALIGN};
use writer::Flight;

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

/// Bytes a temporary file gathers before it writes them: whole pages, so
/// that they go to the device with O_DIRECT, in writes large enough that a
/// spilling operator does not wait on one per block.
const WRITE_BYTES: usize = 128 << 10;

/// Whether this process said already that a temporary directory refuses
/// O_DIRECT (said once, not once per file).
static SAID_BUFFERED: std::sync::Once = std::sync::Once::new();

/// A temporary file of blocks of column vectors. On Unix its name is removed
/// as soon as it is open, so nothing is left behind whatever ends the query
/// (error, cancel, crash); elsewhere dropping it removes it.
///
/// Written and read with direct I/O (O_DIRECT) through the runtime's aligned
/// buffers: spilled data is the level of the memory hierarchy below the
/// query's memory, and going through the OS page cache would hold it in memory
/// after all, unbounded and uncounted. The bytes past the last whole
/// [`WRITE_BYTES`] stay in memory until more follow (or the file is dropped);
/// reads take them from there. A file system that refuses O_DIRECT (tmpfs)
/// gets the same aligned writes through its page cache.
pub struct SpillFile {
    file: Arc<File>,
    /// The write in flight (see [`writer`]).
    flight: Arc<Flight>,
    path: Option<PathBuf>,
    bytes: u64,
    blocks: u64,
    rows: u64,
    /// Where each block starts, for reading one block at a time by number.
    starts: Vec<u64>,
    /// The bytes from `on_disk` on, not written yet (fewer than its capacity).
    pending: AlignedBuf,
    /// Bytes on disk: a multiple of the write size, where `pending` starts.
    on_disk: u64,
    /// Set once every byte is on disk (the last page padded): no more writes.
    sealed: bool,
    /// Whether the file was opened with O_DIRECT.
    direct: bool,
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
        let (file, direct) = open_temp(&path).map_err(write_error)?;
        let mut path = Some(path);
        if cfg!(unix) {
            if let Some(p) = path.take() {
                // The open handle keeps the data; no name means no leftovers.
                let _ = std::fs::remove_file(p);
            }
        }
        let mut pending = AlignedBuf::new(WRITE_BYTES);
        pending.set_len(0);
        Ok(SpillFile {
            file: Arc::new(file),
            flight: Arc::default(),
            path,
            bytes: 0,
            blocks: 0,
            rows: 0,
            starts: Vec::new(),
            pending,
            on_disk: 0,
            sealed: false,
            direct,
            config: config.clone(),
        })
    }

    /// Whether reads and writes bypass the OS page cache (O_DIRECT).
    pub fn is_direct(&self) -> bool {
        self.direct
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
        let len = (packed.len() + 8) as u64;
        let total = self.config.written.fetch_add(len, Ordering::Relaxed) + len;
        self.bytes += len;
        if total > self.config.max_bytes {
            return Err(ExecError::DiskFull(format!(
                "temporary files would pass max_temp_directory_size ({} bytes)",
                self.config.max_bytes
            )));
        }
        self.append(&(packed.len() as u32).to_le_bytes())?;
        self.append(&(raw.len() as u32).to_le_bytes())?;
        self.append(&packed)?;
        self.starts.push(self.bytes - len);
        self.blocks += 1;
        self.rows += rows as u64;
        Ok(len)
    }

    /// Adds `data` to the pending bytes, writing them out each time they
    /// fill the buffer.
    fn append(&mut self, mut data: &[u8]) -> ExecResult<()> {
        if self.sealed {
            return Err(ExecError::Internal(
                "temporary file written after it was sealed".into(),
            ));
        }
        while !data.is_empty() {
            let at = self.pending.len();
            let n = data.len().min(self.pending.capacity() - at);
            self.pending.set_len(at + n);
            self.pending[at..].copy_from_slice(&data[..n]);
            data = &data[n..];
            if self.pending.len() == self.pending.capacity() {
                let full = std::mem::replace(&mut self.pending, AlignedBuf::new(0));
                let len = full.len() as u64;
                self.pending = self
                    .flight
                    .submit(&self.file, self.on_disk, full)
                    .map_err(write_error)?;
                self.on_disk += len;
            }
        }
        Ok(())
    }

    /// Writes the pending bytes out (the last page padded) and gives back
    /// their buffer: called once the file is complete, so that a file waiting
    /// to be read (a sort's run, a join's partition) holds no memory. Writing
    /// on afterwards is a bug.
    pub fn seal(&mut self) -> ExecResult<()> {
        if self.sealed {
            return Ok(());
        }
        self.sealed = true;
        self.flight.wait().map_err(write_error)?;
        self.flight.release_spare();
        let len = self.pending.len();
        if len > 0 {
            let padded = round_up(len);
            self.pending.set_len(padded);
            self.pending[len..].fill(0);
            write_all_at(&self.file, &self.pending, self.on_disk).map_err(write_error)?;
            self.on_disk += padded as u64;
        }
        self.pending = AlignedBuf::new(0);
        self.pending.set_len(0);
        Ok(())
    }

    /// The whole pages holding bytes `start..end` (all on disk), read with one
    /// direct read into `reuse` when it is large enough; and where they start.
    fn read_pages(
        &self,
        start: u64,
        end: u64,
        reuse: Option<AlignedBuf>,
    ) -> ExecResult<(AlignedBuf, u64)> {
        let page = IO_ALIGN as u64;
        let first = start / page * page;
        let len = (end.div_ceil(page) * page - first) as usize;
        let mut buf = match reuse {
            Some(b) if b.capacity() >= len => b,
            _ => AlignedBuf::new(len),
        };
        buf.set_len(len);
        self.flight.wait().map_err(write_error)?;
        read_exact_at(&self.file, &mut buf, first).map_err(read_error)?;
        Ok((buf, first))
    }

    /// Bytes `start..end` of the file: from disk with an aligned read of the
    /// pages holding those below `on_disk`, the rest from `pending`.
    fn read_range(&self, start: u64, end: u64) -> ExecResult<Vec<u8>> {
        let mut out = Vec::with_capacity((end - start) as usize);
        if start < self.on_disk {
            let disk_end = end.min(self.on_disk);
            let (buf, first) = self.read_pages(start, disk_end, None)?;
            out.extend_from_slice(&buf[(start - first) as usize..(disk_end - first) as usize]);
        }
        if end > self.on_disk {
            let from = start.max(self.on_disk) - self.on_disk;
            let to = end - self.on_disk;
            let held = self
                .pending
                .get(from as usize..to as usize)
                .ok_or_else(|| corrupt("block past the end"))?;
            out.extend_from_slice(held);
        }
        Ok(out)
    }

    /// Reads block `i` (below [`SpillFile::blocks`]) as vectors of `types`,
    /// with one positioned read: several threads may read one file at once.
    pub fn read_block(&self, i: usize, types: &[DataType]) -> ExecResult<(Vec<Vector>, usize)> {
        let start = *self
            .starts
            .get(i)
            .ok_or_else(|| corrupt("block number past the end"))?;
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes);
        let block = self.read_range(start, end)?;
        decode_stored(&block, types)
    }

    /// Reads the blocks back from the start, as vectors of `types`.
    pub fn reader(&self, types: Vec<DataType>) -> SpillReader<'_> {
        SpillReader {
            file: self,
            next: 0,
            types,
            window: None,
            window_start: 0,
        }
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

/// Creates a temporary file for direct I/O, or for buffered I/O where the file
/// system refuses O_DIRECT (said once); true when direct.
fn open_temp(path: &Path) -> std::io::Result<(File, bool)> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut direct = options.clone();
        direct.custom_flags(libc::O_DIRECT);
        match direct.open(path) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let _ = std::fs::remove_file(path);
                SAID_BUFFERED.call_once(|| {
                    tracing::info!(
                        "the file system of {} refuses O_DIRECT: temporary files go through \
                         the page cache",
                        path.parent().unwrap_or(path).display()
                    )
                });
            }
            r => return r.map(|f| (f, true)),
        }
    }
    options.open(path).map(|f| (f, false))
}

/// Writes `buf` (whole pages) to `file` at `offset`.
#[cfg(unix)]
pub(super) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(not(unix))]
pub(super) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(buf)
}

/// Fills `buf` from `file` at `offset` without moving a shared file position.
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    // A cloned handle may share the position, so reads of one file must not
    // overlap here.
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// The blocks of a [`SpillFile`], in the order written, read ahead
/// [`READ_AHEAD`] bytes at a time: one direct read per block would wait on
/// the device once per few dozen KiB.
pub struct SpillReader<'a> {
    file: &'a SpillFile,
    next: usize,
    types: Vec<DataType>,
    /// File bytes `window_start..window_start + window.len()`, read ahead.
    window: Option<AlignedBuf>,
    window_start: u64,
}

/// Bytes a [`SpillReader`] reads at once.
pub const READ_AHEAD: usize = 256 << 10;

impl SpillReader<'_> {
    /// The next block's columns and row count; `None` after the last.
    pub fn next_block(&mut self) -> ExecResult<Option<(Vec<Vector>, usize)>> {
        let f = self.file;
        let i = self.next;
        if i as u64 >= f.blocks {
            return Ok(None);
        }
        self.next += 1;
        let start = f.starts[i];
        let end = f.starts.get(i + 1).copied().unwrap_or(f.bytes);
        if end > f.on_disk {
            // Not written yet: from memory.
            self.window = None;
            return f.read_block(i, &self.types).map(Some);
        }
        let held = |w: &AlignedBuf| {
            start >= self.window_start && end <= self.window_start + w.len() as u64
        };
        if !self.window.as_ref().is_some_and(held) {
            let ahead = end.max(start + READ_AHEAD as u64).min(f.on_disk);
            let (buf, first) = f.read_pages(start, ahead, self.window.take())?;
            self.window = Some(buf);
            self.window_start = first;
        }
        let w = self.window.as_ref().ok_or_else(|| corrupt("no window"))?;
        let block = &w[(start - self.window_start) as usize..(end - self.window_start) as usize];
        decode_stored(block, &self.types).map(Some)
    }
}

/// A block as stored (packed length, raw length, lz4 bytes) decoded.
fn decode_stored(block: &[u8], types: &[DataType]) -> ExecResult<(Vec<Vector>, usize)> {
    if block.len() < 8 {
        return Err(corrupt("block ends early"));
    }
    let raw_len = u32::from_le_bytes(block[4..8].try_into().unwrap_or_default()) as usize;
    let raw = lz4_flex::block::decompress(&block[8..], raw_len)
        .map_err(|e| corrupt(&format!("block does not decompress: {e}")))?;
    decode_block(&raw, types)
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
    fn blocks_across_write_buffers_read_back_before_and_after_sealing() {
        let dir = tempfile::tempdir().unwrap();
        let config = Arc::new(SpillConfig::new(dir.path().to_path_buf(), u64::MAX));
        let mut f = SpillFile::create(&config).unwrap();
        // Text that lz4 cannot shrink much, so the blocks fill several write
        // buffers and some end halfway through one.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut word = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Value::Text(format!("{x:016x}{:x}", x.rotate_left(29)))
        };
        let blocks: Vec<Vector> = (0..60)
            .map(|b| {
                vector(
                    DataType::Varchar(None),
                    &(0..100 + b * 7).map(|_| word()).collect::<Vec<_>>(),
                )
            })
            .collect();
        for v in &blocks {
            f.write(std::slice::from_ref(v), v.len()).unwrap();
        }
        assert!(f.bytes() > 2 * WRITE_BYTES as u64, "{} bytes", f.bytes());
        let types = [DataType::Varchar(None)];
        // Block by block (last first), and in order through the reader's
        // read-ahead window.
        let check = |f: &SpillFile| {
            for (i, v) in blocks.iter().enumerate().rev() {
                let (got, rows) = f.read_block(i, &types).unwrap();
                assert_eq!(rows, v.len());
                same(&got[0], v);
            }
            let mut r = f.reader(types.to_vec());
            for v in &blocks {
                same(&r.next_block().unwrap().unwrap().0[0], v);
            }
            assert!(r.next_block().unwrap().is_none());
        };
        check(&f);
        f.seal().unwrap();
        check(&f);
        assert!(f
            .write(std::slice::from_ref(&blocks[0]), blocks[0].len())
            .is_err());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn spill_files_bypass_the_page_cache_where_the_file_system_allows() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        let allows = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok();
        let _ = std::fs::remove_file(&probe);
        let config = Arc::new(SpillConfig::new(dir.path().to_path_buf(), u64::MAX));
        let f = SpillFile::create(&config).unwrap();
        assert_eq!(f.is_direct(), allows);
        // The kernel's view of the open file, not ours.
        use std::os::fd::AsRawFd;
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{}", f.file.as_raw_fd())).unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|v| u64::from_str_radix(v.trim(), 8).unwrap())
            .unwrap();
        assert_eq!(flags & libc::O_DIRECT as u64 != 0, allows, "{info}");
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
            let mut r = f.reader(types);
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
