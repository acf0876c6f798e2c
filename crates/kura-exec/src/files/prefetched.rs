//! A Parquet file as the Parquet reader reads it: a column chunk already read into memory
//! (by the out-of-order scan, through the worker's io_uring) is served from there, anything
//! else by positioned reads of the one open file — never a seek, since workers share it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use parquet::errors::{ParquetError, Result};
use parquet::file::reader::{ChunkReader, Length};

use crate::runtime::AlignedBuf;

/// The buffer a read filled, as the owner of the bytes the reader slices.
struct Owned(AlignedBuf);

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The open `file`, with `bytes` of it from offset `start` on already in memory.
pub(crate) struct Prefetched {
    file: Arc<File>,
    start: u64,
    bytes: Bytes,
}

impl Prefetched {
    pub fn new(file: Arc<File>, start: u64, data: AlignedBuf) -> Prefetched {
        Prefetched {
            file,
            start,
            bytes: Bytes::from_owner(Owned(data)),
        }
    }

    /// The file with nothing in memory.
    pub fn unread(file: Arc<File>) -> Prefetched {
        Prefetched {
            file,
            start: 0,
            bytes: Bytes::new(),
        }
    }

    /// The in-memory part covering `start .. start + len`, when it does.
    fn inside(&self, start: u64, len: usize) -> Option<Bytes> {
        let from = usize::try_from(start.checked_sub(self.start)?).ok()?;
        (from.checked_add(len)? <= self.bytes.len()).then(|| self.bytes.slice(from..from + len))
    }
}

impl Length for Prefetched {
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl ChunkReader for Prefetched {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> Result<Self::T> {
        match self.inside(start, 0) {
            Some(_) => {
                let from = (start - self.start) as usize;
                Ok(Box::new(self.bytes.slice(from..).reader()))
            }
            None => Ok(Box::new(std::io::BufReader::new(Positioned {
                file: self.file.clone(),
                at: start,
            }))),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        if let Some(b) = self.inside(start, length) {
            return Ok(b);
        }
        let mut buf = vec![0; length];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(buf.into())
    }
}

/// Reads `file` from `at` on with positioned reads (the file's own offset is shared by
/// every worker and stays untouched).
struct Positioned {
    file: Arc<File>,
    at: u64,
}

impl Read for Positioned {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_inside_come_from_memory_and_others_from_the_file() {
        let dir = std::env::temp_dir().join(format!("kura-prefetched-{}", std::process::id()));
        let mut f = File::create(&dir).unwrap();
        f.write_all(b"0123456789abcdef").unwrap();
        let file = Arc::new(File::open(&dir).unwrap());
        // Memory says something else than the file for bytes 4..8, to see where reads go.
        let mut data = AlignedBuf::new(4);
        data.copy_from_slice(b"WXYZ");
        let p = Prefetched::new(file, 4, data);
        assert_eq!(p.len(), 16);
        assert_eq!(&p.get_bytes(5, 2).unwrap()[..], b"XY");
        assert_eq!(&p.get_bytes(2, 4).unwrap()[..], b"2345");
        let mut rest = String::new();
        p.get_read(6).unwrap().read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "YZ");
        let mut rest = String::new();
        p.get_read(12).unwrap().read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "cdef");
        let unread = Prefetched::unread(p.file.clone());
        assert_eq!(&unread.get_bytes(4, 4).unwrap()[..], b"4567");
        std::fs::remove_file(&dir).unwrap();
    }
}
