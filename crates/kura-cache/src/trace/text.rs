//! Plain-text traces: one block id per line (decimal, or hexadecimal with `0x`),
//! blank lines and `#` comment lines ignored. This is also the format of kura's own
//! page-access traces written by the buffer manager.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::Trace;
use crate::error::CacheError;
use crate::policy::BlockId;

/// Reads a plain-text trace; `block_size` is the bytes one id stands for.
pub fn read(path: &Path, block_size: u64) -> Result<Trace, CacheError> {
    let file = File::open(path).map_err(|source| io_error(path, source))?;
    let requests = parse(BufReader::new(file), path)?;
    Ok(Trace::new(path.display().to_string(), requests, block_size))
}

/// Parses plain-text trace lines; `path` only names the source in errors.
pub fn parse(reader: impl BufRead, path: &Path) -> Result<Vec<BlockId>, CacheError> {
    let mut ids = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line_no = n as u64 + 1;
        let line = line.map_err(|source| io_error(path, source))?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let id = parse_id(text).ok_or_else(|| CacheError::TraceParse {
            path: path.to_path_buf(),
            line: line_no,
            message: format!("expected a block id (an unsigned integer), found '{text}'"),
        })?;
        ids.push(id);
    }
    Ok(ids)
}

/// An unsigned integer in decimal or `0x` hexadecimal.
pub(crate) fn parse_id(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ids_skipping_comments_and_blank_lines() {
        let text = "# kura page trace\n12\n\n0x10\n  7  \n# end\n";
        let ids = parse(text.as_bytes(), Path::new("t.txt")).unwrap();
        assert_eq!(ids, vec![12, 16, 7]);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let err = parse("1\n2\nthree\n".as_bytes(), Path::new("t.txt")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.txt:3: expected a block id (an unsigned integer), found 'three'"
        );
    }
}
