//! libCacheSim's `oracleGeneral` binary traces: little-endian packed records of 24
//! bytes — `u32` timestamp, `u64` object id, `u32` object size, `i64` next access
//! (virtual time). Each record is one request for its object id. Compressed
//! (`.zst`) files must be decompressed first.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

use super::text::io_error;
use super::Trace;
use crate::error::CacheError;
use crate::policy::BlockId;

pub const RECORD_BYTES: usize = 24;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Reads an `oracleGeneral` trace; `block_size` is the bytes one object stands for
/// when reporting reuse distances in bytes.
pub fn read(path: &Path, block_size: u64) -> Result<Trace, CacheError> {
    let file = File::open(path).map_err(|source| io_error(path, source))?;
    let requests = parse(BufReader::new(file), path)?;
    Ok(Trace::new(path.display().to_string(), requests, block_size))
}

/// Parses records; errors name the file and the 1-based record number.
pub fn parse(mut reader: impl Read, path: &Path) -> Result<Vec<BlockId>, CacheError> {
    let mut ids = Vec::new();
    let mut record = [0u8; RECORD_BYTES];
    let mut n: u64 = 0;
    loop {
        let got = read_full(&mut reader, &mut record).map_err(|source| io_error(path, source))?;
        if got == 0 {
            return Ok(ids);
        }
        n += 1;
        if n == 1 && record[..4] == ZSTD_MAGIC {
            return Err(CacheError::TraceParse {
                path: path.to_path_buf(),
                line: 1,
                message: "zstd-compressed trace; decompress it first (zstd -d)".into(),
            });
        }
        if got < RECORD_BYTES {
            return Err(CacheError::TraceParse {
                path: path.to_path_buf(),
                line: n,
                message: format!("truncated oracleGeneral record: {got} of {RECORD_BYTES} bytes"),
            });
        }
        let id = u64::from_le_bytes(record[4..12].try_into().expect("8 bytes"));
        ids.push(id);
    }
}

/// Fills `buf` unless the input ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Encodes requests as `oracleGeneral` records (size 4096, next access computed),
/// so kura's synthetic traces can be replayed by libCacheSim too.
pub fn encode(ids: &[BlockId]) -> Vec<u8> {
    let mut next = vec![-1i64; ids.len()];
    let mut last = crate::util::idmap::id_map_with_capacity::<usize>(0);
    for (i, &id) in ids.iter().enumerate().rev() {
        if let Some(&j) = last.get(&id) {
            next[i] = j as i64;
        }
        last.insert(id, i);
    }
    let mut out = Vec::with_capacity(ids.len() * RECORD_BYTES);
    for (i, &id) in ids.iter().enumerate() {
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&4096u32.to_le_bytes());
        out.extend_from_slice(&next[i].to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_truncation() {
        let ids = vec![5, u64::MAX - 1, 5, 0];
        let bytes = encode(&ids);
        assert_eq!(bytes.len(), 4 * RECORD_BYTES);
        // the next-access field of the first record points at request 2
        assert_eq!(i64::from_le_bytes(bytes[16..24].try_into().unwrap()), 2);
        assert_eq!(parse(&bytes[..], Path::new("t.bin")).unwrap(), ids);
        let err = parse(&bytes[..bytes.len() - 3], Path::new("t.bin")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.bin:4: truncated oracleGeneral record: 21 of 24 bytes"
        );
        let mut zst = ZSTD_MAGIC.to_vec();
        zst.resize(40, 0);
        assert!(parse(&zst[..], Path::new("t.zst"))
            .unwrap_err()
            .to_string()
            .contains("zstd"));
    }
}
