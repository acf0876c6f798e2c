//! A streaming parser of Valgrind lackey's `--trace-mem=yes` output: instruction
//! lines set the current instruction address, data lines become accesses, and
//! stores to the marker page (`kura_common::memobj`) open and close the profiled
//! region, switch the access class and count registry events.

use kura_common::memobj::{
    MARKER_BYTES, MARK_CLASS_BASE, MARK_EVENT, MARK_START, MARK_STOP, MAX_CLASSES,
};
use serde::{Deserialize, Serialize};

/// One data access of the traced program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceAccess {
    /// Address of the instruction that made it.
    pub ip: u64,
    pub addr: u64,
    pub size: u32,
    /// A store or a read-modify-write (lackey's `S` and `M`).
    pub is_write: bool,
    /// The class the program last switched to (`memobj::set_class`), 0 before any.
    pub class: u16,
    /// Registry events seen before this access: the first `epoch` entries of the
    /// program's registry log are in force for it.
    pub epoch: u32,
}

/// What a parse saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseStats {
    /// Lines read (all of them).
    pub lines: u64,
    /// Instructions executed inside the region.
    pub instructions: u64,
    /// Data accesses inside the region (marker stores excluded).
    pub accesses: u64,
    /// Registry events (anywhere in the run).
    pub events: u64,
    /// Regions opened.
    pub regions: u64,
    /// Class switches.
    pub class_switches: u64,
    /// Lines that are neither lackey records nor Valgrind messages.
    pub malformed: u64,
}

pub struct Parser {
    /// The marker page's address, once the program has said it; without it every
    /// access counts and no marker is recognised.
    marker: Option<u64>,
    in_region: bool,
    ip: u64,
    class: u16,
    epoch: u32,
    stats: ParseStats,
}

fn hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = v << 4 | u64::from(d);
    }
    Some(v)
}

fn dec(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    s.iter().try_fold(0u32, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + u32::from(c - b'0'))
    })
}

/// `addr,size` → both.
fn addr_size(s: &[u8]) -> Option<(u64, u32)> {
    let comma = s.iter().position(|&c| c == b',')?;
    let size = s[comma + 1..].trim_ascii_end();
    Some((hex(&s[..comma])?, dec(size)?))
}

impl Parser {
    /// A parser for a program whose marker page is at `marker`: accesses count
    /// only between its start and stop stores.
    pub fn new(marker: u64) -> Self {
        Self {
            marker: Some(marker),
            in_region: false,
            ip: 0,
            class: 0,
            epoch: 0,
            stats: ParseStats::default(),
        }
    }

    /// A parser that counts every access (a trace taken without markers).
    pub fn whole_trace() -> Self {
        Self {
            marker: None,
            in_region: true,
            ..Self::new(0)
        }
    }

    /// Learns the marker page's address (before the region starts).
    pub fn set_marker(&mut self, marker: u64) {
        if self.marker.is_none() {
            self.marker = Some(marker);
            self.in_region = false;
        }
    }

    pub fn marker(&self) -> Option<u64> {
        self.marker
    }

    pub fn stats(&self) -> &ParseStats {
        &self.stats
    }

    /// Parses one line (with or without its newline); an access inside the region
    /// comes back.
    #[inline]
    pub fn line(&mut self, line: &[u8]) -> Option<TraceAccess> {
        self.stats.lines += 1;
        let (kind, rest) = match line {
            [b'I', b' ', rest @ ..] => (b'I', rest),
            [b' ', k @ (b'L' | b'S' | b'M'), b' ', rest @ ..] => (*k, rest),
            [b'=', b'=', ..] | [] | [b'\n'] => return None,
            _ => {
                self.stats.malformed += 1;
                return None;
            }
        };
        let Some((addr, size)) = addr_size(rest.trim_ascii_start()) else {
            self.stats.malformed += 1;
            return None;
        };
        if kind == b'I' {
            self.ip = addr;
            self.stats.instructions += u64::from(self.in_region);
            return None;
        }
        if let Some(m) = self.marker {
            if addr.wrapping_sub(m) < MARKER_BYTES as u64 && kind != b'L' {
                self.marked((addr - m) as usize);
                return None;
            }
        }
        if !self.in_region {
            return None;
        }
        self.stats.accesses += 1;
        Some(TraceAccess {
            ip: self.ip,
            addr,
            size,
            is_write: kind != b'L',
            class: self.class,
            epoch: self.epoch,
        })
    }

    fn marked(&mut self, offset: usize) {
        match offset {
            MARK_START => {
                self.in_region = true;
                self.stats.regions += 1;
            }
            MARK_STOP => self.in_region = false,
            MARK_EVENT => {
                self.epoch += 1;
                self.stats.events += 1;
            }
            o if (MARK_CLASS_BASE..MARK_CLASS_BASE + MAX_CLASSES).contains(&o) => {
                self.class = (o - MARK_CLASS_BASE) as u16;
                self.stats.class_switches += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_accesses_of_the_last_instruction() {
        let mut p = Parser::whole_trace();
        assert_eq!(
            p.line(b"==16445== Lackey, an example Valgrind tool\n"),
            None
        );
        assert_eq!(p.line(b"I  0401ab70,3\n"), None);
        let a = p.line(b" S 1fff000768,8\n").unwrap();
        assert_eq!(
            (a.ip, a.addr, a.size, a.is_write),
            (0x401ab70, 0x1fff000768, 8, true)
        );
        let l = p.line(b" L 04030e30,16").unwrap();
        assert_eq!(
            (l.ip, l.addr, l.size, l.is_write),
            (0x401ab70, 0x4030e30, 16, false)
        );
        assert!(p.line(b" M 04031fa0,4\n").unwrap().is_write);
        assert_eq!(p.line(b"garbage\n"), None);
        assert_eq!(p.line(b" L zz,4\n"), None);
        assert_eq!(p.stats().malformed, 2);
        assert_eq!(p.stats().accesses, 3);
        assert_eq!(p.stats().instructions, 1);
    }

    #[test]
    fn markers_open_the_region_switch_classes_and_count_events() {
        let m = 0x5000u64;
        let mut p = Parser::new(m);
        let store = |off: usize| format!(" S {:x},1\n", m + off as u64);
        assert_eq!(p.line(b" L 100,8\n"), None, "before the region");
        assert_eq!(p.line(store(MARK_EVENT).as_bytes()), None);
        assert_eq!(p.line(store(MARK_START).as_bytes()), None);
        assert_eq!(p.line(b" L 100,8\n").unwrap().epoch, 1);
        assert_eq!(p.line(store(MARK_CLASS_BASE + 3).as_bytes()), None);
        assert_eq!(p.line(store(MARK_EVENT).as_bytes()), None);
        let a = p.line(b" S 200,4\n").unwrap();
        assert_eq!((a.class, a.epoch), (3, 2));
        // a load of the marker page is not a marker (nobody reads it on purpose)
        assert!(p.line(format!(" L {:x},1\n", m).as_bytes()).is_some());
        assert_eq!(p.line(store(MARK_STOP).as_bytes()), None);
        assert_eq!(p.line(b" L 100,8\n"), None, "after the region");
        let s = p.stats();
        assert_eq!(
            (s.accesses, s.events, s.regions, s.class_switches),
            (3, 2, 1, 1)
        );
    }
}
