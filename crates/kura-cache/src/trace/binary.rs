//! kura's binary trace format for fast replay: a 32-byte header — magic `KURABT01`,
//! then little-endian `u64` block size, request count and id universe — followed by
//! one little-endian `u32` dense block id per request. Opened by mmap, the ids are
//! replayed in place without parsing or copying.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::text::io_error;
use crate::error::CacheError;
use crate::fast::DenseTrace;

pub const MAGIC: &[u8; 8] = b"KURABT01";
pub const HEADER_BYTES: usize = 32;

/// Writes `trace` (dense ids) with the block size they stand for.
pub fn write(path: &Path, trace: &DenseTrace<'_>, block_size: u64) -> Result<(), CacheError> {
    let file = File::create(path).map_err(|e| io_error(path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    for field in [block_size, trace.len() as u64, trace.universe() as u64] {
        header.extend_from_slice(&field.to_le_bytes());
    }
    out.write_all(&header).map_err(|e| io_error(path, e))?;
    for &id in trace.ids() {
        out.write_all(&id.to_le_bytes())
            .map_err(|e| io_error(path, e))?;
    }
    out.flush().map_err(|e| io_error(path, e))
}

/// An opened binary trace: the file mapped read-only.
pub struct MappedTrace {
    path: PathBuf,
    map: memmap2::Mmap,
    pub block_size: u64,
    pub universe: usize,
}

fn bad(path: &Path, message: impl Into<String>) -> CacheError {
    CacheError::BadTrace {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Maps a binary trace and checks its header against the file's length.
pub fn open(path: &Path) -> Result<MappedTrace, CacheError> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    // SAFETY: the map is read-only; kura never writes a trace it is replaying, and
    // a file truncated underneath would be a user error outside this process.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_error(path, e))?;
    if map.len() < HEADER_BYTES || &map[..8] != MAGIC {
        return Err(bad(path, "not a kura binary trace (no KURABT01 header)"));
    }
    let field = |i: usize| u64::from_le_bytes(map[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    let (block_size, count, universe) = (field(1), field(2), field(3));
    let expected = (count as u128) * 4 + HEADER_BYTES as u128;
    if expected != map.len() as u128 {
        return Err(bad(
            path,
            format!(
                "header says {count} requests ({expected} bytes) but the file has {} bytes",
                map.len()
            ),
        ));
    }
    if block_size == 0 || universe > u64::from(u32::MAX) {
        return Err(bad(
            path,
            "header has a zero block size or an id range beyond u32",
        ));
    }
    Ok(MappedTrace {
        path: path.to_path_buf(),
        map,
        block_size,
        universe: universe as usize,
    })
}

impl MappedTrace {
    /// The ids, borrowed from the mapping where the platform allows (little-endian,
    /// aligned), and checked to lie below the declared universe.
    pub fn dense(&self) -> Result<DenseTrace<'_>, CacheError> {
        let bytes = &self.map[HEADER_BYTES..];
        let ids: Cow<'_, [u32]> = if cfg!(target_endian = "little")
            && bytes.as_ptr().align_offset(std::mem::align_of::<u32>()) == 0
        {
            // SAFETY: aligned, in bounds (length checked at open), and every bit
            // pattern is a valid u32.
            Cow::Borrowed(unsafe {
                std::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4)
            })
        } else {
            Cow::Owned(
                bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            )
        };
        DenseTrace::from_dense(ids, self.universe).map_err(|m| bad(&self.path, m))
    }

    pub fn len(&self) -> usize {
        (self.map.len() - HEADER_BYTES) / 4
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.kbt");
        let trace = DenseTrace::from_ids(&[7, 1 << 50, 7, 3]);
        write(&path, &trace, 8192).unwrap();
        let mapped = open(&path).unwrap();
        assert_eq!(
            (mapped.block_size, mapped.universe, mapped.len()),
            (8192, 3, 4)
        );
        assert_eq!(mapped.dense().unwrap().ids(), trace.ids());

        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 2);
        std::fs::write(&path, &bytes).unwrap();
        let err = open(&path).err().unwrap().to_string();
        assert!(err.contains("header says 4 requests"), "{err}");
        std::fs::write(&path, b"hello").unwrap();
        assert!(open(&path)
            .err()
            .unwrap()
            .to_string()
            .contains("not a kura binary trace"));
        // an id outside the declared range
        let mut bytes = std::fs::read(dir.path().join("t.kbt")).unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(MAGIC);
        for f in [4096u64, 1, 2] {
            bytes.extend_from_slice(&f.to_le_bytes());
        }
        bytes.extend_from_slice(&5u32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        assert!(open(&path).unwrap().dense().is_err());
        assert!(open(&dir.path().join("missing")).is_err());
    }
}
