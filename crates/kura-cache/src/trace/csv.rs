//! Delimited-text traces with chosen columns: either a column holding a block/object
//! id, or byte offset and size columns (MSR-Cambridge style:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`) split into
//! fixed-size blocks, so a 12 KiB read at offset 4096 becomes blocks 1, 2 and 3.
//! An optional column filter keeps e.g. only `Type == Read` rows.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::text::{io_error, parse_id};
use super::Trace;
use crate::error::CacheError;
use crate::policy::BlockId;

/// Which columns (0-based) make a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Columns {
    /// The column holds the id itself.
    Id(usize),
    /// Byte offset and size columns; the request covers every block they touch.
    OffsetSize { offset: usize, size: usize },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    pub columns: Columns,
    pub delimiter: char,
    /// Leading lines to skip (a header).
    pub skip_lines: usize,
    /// Keep only rows whose column equals this text (case-insensitive).
    pub filter: Option<(usize, String)>,
    /// Block size in bytes, for offset/size splitting and reuse distances.
    pub block_size: u64,
}

impl CsvSpec {
    /// MSR-Cambridge block traces: offset column 5, size column 6 (1-based), no header.
    pub fn msr() -> Self {
        Self {
            columns: Columns::OffsetSize { offset: 4, size: 5 },
            delimiter: ',',
            skip_lines: 0,
            filter: None,
            block_size: super::DEFAULT_BLOCK_SIZE,
        }
    }
}

pub fn read(path: &Path, spec: &CsvSpec) -> Result<Trace, CacheError> {
    let file = File::open(path).map_err(|source| io_error(path, source))?;
    let requests = parse(BufReader::new(file), path, spec)?;
    Ok(Trace::new(
        path.display().to_string(),
        requests,
        spec.block_size,
    ))
}

pub fn parse(
    reader: impl BufRead,
    path: &Path,
    spec: &CsvSpec,
) -> Result<Vec<BlockId>, CacheError> {
    if spec.block_size == 0 {
        return Err(CacheError::InvalidConfig(
            "block size must be positive".into(),
        ));
    }
    let mut ids = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line_no = n as u64 + 1;
        let line = line.map_err(|source| io_error(path, source))?;
        if n < spec.skip_lines || line.trim().is_empty() {
            continue;
        }
        let err = |message: String| CacheError::TraceParse {
            path: path.to_path_buf(),
            line: line_no,
            message,
        };
        let fields: Vec<&str> = line.split(spec.delimiter).map(str::trim).collect();
        let field = |i: usize| {
            fields.get(i).copied().ok_or_else(|| {
                err(format!(
                    "expected at least {} columns, found {}",
                    i + 1,
                    fields.len()
                ))
            })
        };
        if let Some((col, want)) = &spec.filter {
            if !field(*col)?.eq_ignore_ascii_case(want) {
                continue;
            }
        }
        let number = |i: usize, what: &str| {
            let text = field(i)?;
            parse_id(text).ok_or_else(|| {
                err(format!(
                    "column {}: expected {what} (an unsigned integer), found '{text}'",
                    i + 1
                ))
            })
        };
        match spec.columns {
            Columns::Id(col) => ids.push(number(col, "an id")?),
            Columns::OffsetSize { offset, size } => {
                let offset = number(offset, "a byte offset")?;
                let size = number(size, "a size in bytes")?.max(1);
                let first = offset / spec.block_size;
                let last = offset.saturating_add(size - 1) / spec.block_size;
                ids.extend(first..=last);
            }
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSR: &str = "\
128166372003061629,web,0,Read,4096,12288,1331
128166372016382155,web,0,Write,0,512,900
128166372026382245,web,0,Read,8191,2,100
";

    #[test]
    fn msr_offsets_split_into_4k_blocks() {
        let ids = parse(MSR.as_bytes(), Path::new("web_0.csv"), &CsvSpec::msr()).unwrap();
        // 4096+12288 covers blocks 1..=3; 0+512 is block 0; 8191+2 straddles 1 and 2.
        assert_eq!(ids, vec![1, 2, 3, 0, 1, 2]);
        let reads = CsvSpec {
            filter: Some((3, "read".into())),
            ..CsvSpec::msr()
        };
        let ids = parse(MSR.as_bytes(), Path::new("web_0.csv"), &reads).unwrap();
        assert_eq!(ids, vec![1, 2, 3, 1, 2]);
    }

    #[test]
    fn id_column_with_header_and_other_delimiter() {
        let spec = CsvSpec {
            columns: Columns::Id(1),
            delimiter: ';',
            skip_lines: 1,
            filter: None,
            block_size: 4096,
        };
        let text = "time;key\n1;42\n2;0x2a\n";
        assert_eq!(
            parse(text.as_bytes(), Path::new("k.csv"), &spec).unwrap(),
            vec![42, 42]
        );
        let err = parse("time;key\n1;x\n".as_bytes(), Path::new("k.csv"), &spec).unwrap_err();
        assert_eq!(
            err.to_string(),
            "k.csv:2: column 2: expected an id (an unsigned integer), found 'x'"
        );
        let err = parse("time;key\n1\n".as_bytes(), Path::new("k.csv"), &spec).unwrap_err();
        assert_eq!(
            err.to_string(),
            "k.csv:2: expected at least 2 columns, found 1"
        );
    }
}
