//! Where a text file's records are, found in one pass that decodes nothing (CSV: line ends
//! outside quotes; JSON: objects closing at the top level, one per line or in an array), cut
//! into pieces of a row group's records each. A file is then decoded piece by piece while
//! the statement runs, never held whole in memory.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use kura_storage::loader::parse::QuoteState;

use super::{bad, io_error};
use crate::error::ExecResult;

/// Bytes read at a time.
const READ_BYTES: usize = 1 << 20;
/// A piece ends once it holds this many bytes even when it has fewer records than a row
/// group: wide records would otherwise make pieces whose decoded columns crowd memory.
const PIECE_BYTES: u64 = 8 << 20;

/// How records are written in the files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Syntax {
    /// One record per line; a quoted field may hold line ends (and, after `escape`, the
    /// quote). Each file's first `skip` lines are passed over; then, with `header`, the
    /// first record names the columns and is not a row.
    Csv {
        quote: u8,
        escape: u8,
        header: bool,
        skip: u64,
    },
    /// JSON objects, one after another (newline-delimited) or the elements of one array.
    Json,
}

/// A run of consecutive records of one file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    /// Index of the file among those split.
    pub file: usize,
    /// Where the records are in the file (with the separators between them).
    pub bytes: Range<u64>,
    /// The table's rows they are.
    pub rows: Range<u64>,
    /// The file's record the piece starts with (0 is the first after a header).
    pub record: u64,
    /// The file's line the piece starts on, less one (lines before the piece).
    pub line: u64,
    /// Whether the records are elements of a JSON array (the bytes may hold its brackets and
    /// the commas between elements).
    pub in_array: bool,
}

/// The pieces of `paths`, in file order, each of `group_rows` records (or fewer, past
/// `PIECE_BYTES`), a file's last what is left.
pub(crate) fn split(
    paths: &[PathBuf],
    syntax: Syntax,
    group_rows: usize,
) -> ExecResult<Vec<Piece>> {
    split_until(paths, syntax, group_rows, usize::MAX)
}

/// The first piece of `path` (its first `records` records or fewer), the file read only
/// that far; `None` when it has no record.
pub(crate) fn head(path: &Path, syntax: Syntax, records: usize) -> ExecResult<Option<Piece>> {
    Ok(split_until(&[path.to_path_buf()], syntax, records, 1)?
        .into_iter()
        .next())
}

/// The pieces of `paths`, the reading stopped once there are `enough`.
fn split_until(
    paths: &[PathBuf],
    syntax: Syntax,
    group_rows: usize,
    enough: usize,
) -> ExecResult<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut row = 0u64;
    for (file, path) in paths.iter().enumerate() {
        let mut cutter = Cutter {
            file,
            group_rows: group_rows.max(1) as u64,
            start: 0,
            records: 0,
            row,
            record: 0,
            lines: 0,
            start_line: 0,
            in_array: false,
            enough,
            pieces: &mut pieces,
        };
        match syntax {
            Syntax::Csv {
                quote,
                escape,
                header,
                skip,
            } => csv_records(
                path,
                QuoteState::new(quote, escape),
                header,
                skip,
                &mut cutter,
            )?,
            Syntax::Json => json_records(path, &mut cutter)?,
        }
        row = cutter.row;
        if pieces.len() >= enough {
            pieces.truncate(enough);
            break;
        }
    }
    Ok(pieces)
}

/// Cuts one file's records into pieces as their ends are found.
struct Cutter<'a> {
    file: usize,
    group_rows: u64,
    /// Where the current piece starts.
    start: u64,
    /// Records in the current piece so far.
    records: u64,
    /// The table row the current piece starts at.
    row: u64,
    /// The file's record the current piece starts with.
    record: u64,
    /// Line ends read so far, and before the current piece.
    lines: u64,
    start_line: u64,
    in_array: bool,
    /// Pieces after which the reading may stop.
    enough: usize,
    pieces: &'a mut Vec<Piece>,
}

impl Cutter<'_> {
    /// A record ends just before byte `end`.
    fn record(&mut self, end: u64) {
        self.records += 1;
        if self.records == self.group_rows || end - self.start >= PIECE_BYTES {
            self.cut(end);
        }
    }

    /// Skips the bytes before `at` (a header line): the first piece starts there.
    fn skip_to(&mut self, at: u64) {
        self.start = at;
        self.start_line = self.lines;
    }

    fn cut(&mut self, end: u64) {
        self.pieces.push(Piece {
            file: self.file,
            bytes: self.start..end,
            rows: self.row..self.row + self.records,
            record: self.record,
            line: self.start_line,
            in_array: self.in_array,
        });
        self.row += self.records;
        self.record += self.records;
        self.start = end;
        self.start_line = self.lines;
        self.records = 0;
    }

    /// Whether the pieces wanted are all cut.
    fn done(&self) -> bool {
        self.pieces.len() >= self.enough
    }

    /// The file ends at byte `len`: the records since the last cut are its last piece.
    fn finish(&mut self, len: u64) {
        if self.records > 0 {
            self.cut(len);
        }
    }
}

/// Calls `each(bytes, offset)` for the file's contents, a buffer at a time, until it says
/// to stop (returns false); the bytes read.
fn read_through(path: &Path, mut each: impl FnMut(&[u8], u64) -> bool) -> ExecResult<u64> {
    let mut file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut buf = vec![0u8; READ_BYTES];
    let mut offset = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| io_error(path, e))?;
        if n == 0 {
            return Ok(offset);
        }
        let more = each(&buf[..n], offset);
        offset += n as u64;
        if !more {
            return Ok(offset);
        }
    }
}

/// CSV records: line ends outside quotes (the loader's rules of quotes and escapes), after
/// the lines skipped. Blank lines are not records, as arrow-csv skips them.
fn csv_records(
    path: &Path,
    mut quotes: QuoteState,
    header: bool,
    skip: u64,
    cut: &mut Cutter,
) -> ExecResult<()> {
    // Lines still to pass over, whatever they hold (DuckDB's `skip` counts lines).
    let mut skip_left = skip;
    // Whether the current line has a byte other than `\r`.
    let mut content = false;
    let mut header_pending = header;
    let len = read_through(path, |buf, offset| {
        let mut from = 0;
        while skip_left > 0 {
            let Some(i) = memchr::memchr(b'\n', &buf[from..]) else {
                return true;
            };
            from += i + 1;
            cut.lines += 1;
            skip_left -= 1;
            if skip_left == 0 {
                cut.skip_to(offset + from as u64);
            }
        }
        while let Some(at) = quotes.next_line_end(buf, from) {
            content = content || buf[from..at].iter().any(|&b| b != b'\r');
            // A line end (the record's, when outside quotes) — counted either way, for the
            // line numbers of errors.
            cut.lines += 1;
            if !quotes.in_quotes() && content {
                let end = offset + at as u64 + 1;
                if header_pending {
                    header_pending = false;
                    cut.skip_to(end);
                } else {
                    cut.record(end);
                }
                content = false;
            }
            from = at + 1;
        }
        content = content || buf[from..].iter().any(|&b| b != b'\r');
        !cut.done()
    })?;
    if cut.done() {
        return Ok(());
    }
    if content && !header_pending {
        // A last line without its line end.
        cut.record(len);
    }
    cut.finish(len);
    Ok(())
}

/// JSON records: objects whose closing brace returns to the top level (depth 0, or 1 inside
/// the array a file may be). Anything else at the top level is an error.
fn json_records(path: &Path, cut: &mut Cutter) -> ExecResult<()> {
    let (mut depth, mut base) = (0u32, 0u32);
    let (mut in_string, mut escaped, mut started) = (false, false, false);
    // The line the open record started on (for errors).
    let mut record_line = 1u64;
    let mut stray = None;
    let len = read_through(path, |buf, offset| {
        for (i, &b) in buf.iter().enumerate() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
                continue;
            }
            if b == b'\n' {
                cut.lines += 1;
                continue;
            }
            if depth <= base && !b.is_ascii_whitespace() {
                let allowed = match b {
                    b'{' => depth == base,
                    b'[' => !started,
                    b',' | b']' => base == 1 && depth == 1,
                    _ => false,
                };
                if !allowed {
                    stray.get_or_insert((offset + i as u64, cut.lines + 1));
                    return false;
                }
                if b == b'{' {
                    record_line = cut.lines + 1;
                }
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    if !started {
                        if b == b'[' {
                            // The file is one array: its elements are the records.
                            base = 1;
                            cut.in_array = true;
                        }
                        started = true;
                    }
                    depth += 1;
                }
                b'}' | b']' => {
                    depth -= 1;
                    if b == b'}' && depth == base {
                        cut.record(offset + i as u64 + 1);
                    }
                }
                _ => {}
            }
        }
        !cut.done()
    })?;
    if let Some((at, line)) = stray {
        return Err(bad(
            path,
            format!("line {line} (byte {at}): a record is not a JSON object"),
        ));
    }
    if cut.done() {
        return Ok(());
    }
    if in_string || depth > base || (base == 1 && depth == 1) {
        return Err(bad(
            path,
            format!("the file ends inside a JSON value (the record from line {record_line})"),
        ));
    }
    cut.finish(len);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, syntax: Syntax, group: usize) -> Vec<(String, Range<u64>)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        split(&[path], syntax, group)
            .unwrap()
            .into_iter()
            .map(|p| {
                (
                    text[p.bytes.start as usize..p.bytes.end as usize].to_string(),
                    p.rows,
                )
            })
            .collect()
    }

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
        header: false,
        skip: 0,
    };

    #[test]
    fn csv_lines_are_cut_outside_quotes_and_blank_lines_skipped() {
        let text = "a,\"x\ny\"\n\nb,\"\"\"\"\r\n\r\nc,d";
        assert_eq!(
            pieces(text, CSV, 2),
            [
                ("a,\"x\ny\"\n\nb,\"\"\"\"\r\n".to_string(), 0..2),
                ("\r\nc,d".to_string(), 2..3)
            ]
        );
        let header = Syntax::Csv {
            quote: b'"',
            escape: b'"',
            header: true,
            skip: 0,
        };
        assert_eq!(
            pieces("h\n1\n2\n", header, 10),
            [("1\n2\n".to_string(), 0..2)]
        );
        assert_eq!(pieces("h\n", header, 10), []);
        assert_eq!(pieces("", CSV, 10), []);
    }

    #[test]
    fn json_objects_are_cut_at_the_top_level_in_lines_or_an_array() {
        let text = "{\"a\": \"}{\\\"\"}\n{\"b\": {\"c\": [1]}}\n\n{\"a\": 3}";
        let got = pieces(text, Syntax::Json, 2);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], ("\n\n{\"a\": 3}".to_string(), 2..3));
        let got = pieces("[{\"a\":1},\n {\"a\":2}, {\"a\":3}]\n", Syntax::Json, 2);
        assert_eq!(got[0], ("[{\"a\":1},\n {\"a\":2}".to_string(), 0..2));
        assert_eq!(got[1], (", {\"a\":3}]\n".to_string(), 2..3));
    }

    #[test]
    fn unbalanced_json_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        std::fs::write(&path, "{\"a\": 1}\n{\"a\": ").unwrap();
        let e = split(std::slice::from_ref(&path), Syntax::Json, 10).unwrap_err();
        assert!(e.to_string().contains("ends inside"), "{e}");
        std::fs::write(&path, "{\"a\": 1}}").unwrap();
        assert!(split(std::slice::from_ref(&path), Syntax::Json, 10).is_err());
        std::fs::write(&path, "[{\"a\": 1}, 2]").unwrap();
        let e = split(&[path], Syntax::Json, 10).unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
    }
}
