//! The traced program's side of a recording: announce the marker page to the
//! recorder and wait for its go-ahead, and at the end dump the registry log and
//! the program's memory map (for symbolizing instruction addresses and naming
//! unregistered memory) to a JSON file.

use std::io::{BufRead, Write};
use std::path::Path;

use kura_common::memobj::{self, Event};
use serde::{Deserialize, Serialize};

use crate::error::ProfileError;

/// What the traced program's stdout says first: this prefix, then the marker
/// page's address in hex.
pub const MARKER_LINE: &str = "kura-trace-marker ";

/// One line of `/proc/self/maps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// Offset in the mapped file.
    pub offset: u64,
    pub perms: String,
    /// The file, or `[heap]`, `[stack]`, empty for anonymous memory.
    pub path: String,
}

/// What the traced program leaves for the recorder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dump {
    pub marker: u64,
    /// The registry log, buffer pages named.
    pub events: Vec<Event>,
    /// The program's memory map at the end of the run.
    pub maps: Vec<Mapping>,
    /// The program's executable.
    pub exe: String,
}

/// Parses `/proc/<pid>/maps` text.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_ascii_whitespace();
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let (_dev, _inode) = (f.next()?, f.next()?);
            let path = f.collect::<Vec<_>>().join(" ");
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                perms: perms.to_string(),
                path,
            })
        })
        .collect()
}

/// Tells the recorder where the marker page is (one line on stdout) and waits for
/// its answer on stdin, so that it knows the address before the region starts.
/// Turns the registry on.
pub fn handshake() -> Result<(), ProfileError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARKER_LINE}{:x}", memobj::marker_base())
        .and_then(|_| out.flush())
        .map_err(|e| ProfileError::io("telling the recorder the marker address", e))?;
    let mut ack = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut ack)
        .map_err(|e| ProfileError::io("waiting for the recorder", e))?;
    memobj::enable(true);
    Ok(())
}

/// Turns the registry off and writes the dump: the log (buffer pages named by
/// `name_page`: their column or index, and kind of page), this process's maps
/// and executable.
pub fn write_dump(
    path: &Path,
    name_page: impl Fn(u64) -> Option<(String, Option<String>)>,
) -> Result<(), ProfileError> {
    memobj::enable(false);
    let mut events = memobj::take_log();
    memobj::name_pages(&mut events, name_page);
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map(|t| parse_maps(&t))
        .unwrap_or_default();
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let dump = Dump {
        marker: memobj::marker_base(),
        events,
        maps,
        exe,
    };
    let file = std::fs::File::create(path)
        .map_err(|e| ProfileError::io(format!("creating {}", path.display()), e))?;
    serde_json::to_writer(std::io::BufWriter::new(file), &dump)
        .map_err(|e| ProfileError::io(format!("writing {}", path.display()), e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_parse_with_and_without_paths() {
        let maps = parse_maps(
            "00108000-0010a000 r-xp 00001000 08:01 123   /usr/bin/kura db\n\
             1ffeffd000-1fff001000 rw-p 00000000 00:00 0          [stack]\n\
             5000-6000 rw-p 00000000 00:00 0\n\
             bad line\n",
        );
        assert_eq!(maps.len(), 3);
        assert_eq!(
            maps[0],
            Mapping {
                start: 0x108000,
                end: 0x10a000,
                offset: 0x1000,
                perms: "r-xp".into(),
                path: "/usr/bin/kura db".into()
            }
        );
        assert_eq!(maps[1].path, "[stack]");
        assert_eq!(maps[2].path, "");
    }
}
