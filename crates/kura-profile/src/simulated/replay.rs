//! Replays a recorded access stream through kura-cache's model of this machine's
//! data caches and attributes every simulated miss: to the instruction (then the
//! function and source line), to the memory object the address belonged to at
//! that moment (the registry log, applied in step with the stream), to the pair of
//! the two, to its 3C class, and to its cache set.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use kura_cache::cpu::{Hierarchy, MissClass};
use kura_common::memobj::{ObjectKind, ObjectMap};

use super::child::{Dump, Mapping};
use super::lackey::TraceAccess;
use crate::error::ProfileError;

/// Most levels a profile reports.
pub const MAX_LEVELS: usize = kura_cache::cpu::hierarchy::MAX_LEVELS;

/// Counts of one instruction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IpCounts {
    pub accesses: u64,
    /// Misses per level.
    pub misses: [u64; MAX_LEVELS],
}

/// One access that missed at least the first level, kept until the registry
/// log is known (it arrives with the program's dump, after the stream).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Miss {
    pub ip: u64,
    pub addr: u64,
    pub epoch: u32,
    /// The level that served it (all above missed); the number of levels = memory.
    pub served_by: u8,
    /// Its 3C class at the last level, if it missed there.
    pub llc_class: u8,
}

fn class_code(c: MissClass) -> u8 {
    match c {
        MissClass::Compulsory => 1,
        MissClass::Capacity => 2,
        MissClass::Conflict => 3,
        MissClass::Unclassified => 0,
    }
}

/// The replay state.
pub struct Replay {
    hier: Hierarchy,
    levels: usize,
    line_size: u64,
    pub(crate) level_names: Vec<String>,
    pub(crate) per_ip: HashMap<u64, IpCounts>,
    pub(crate) misses: Vec<Miss>,
    /// Per level, misses per set.
    pub(crate) set_misses: Vec<Vec<u64>>,
    /// Last-level misses per line (lines missing again and again: capacity).
    pub(crate) line_misses: HashMap<u64, u32>,
    pub(crate) classes: BTreeMap<u16, u64>,
    pub(crate) accesses: u64,
}

impl Replay {
    /// A model of the caches sysfs describes under `root`, classifying misses.
    pub fn new(root: &Path) -> Result<Self, ProfileError> {
        let hier = Hierarchy::from_sysfs(root, true).map_err(|e| {
            ProfileError::Unavailable(format!(
                "cannot read the cache geometry under {}: {e}",
                root.display()
            ))
        })?;
        let levels = hier.levels();
        let line_size = u64::from(hier.level(0).geometry().line_size);
        let level_names = (0..levels)
            .map(|i| {
                let g = hier.level(i).geometry();
                let kind = if i == 0 { "L1d" } else { "" };
                let name = if kind.is_empty() {
                    format!("L{}", g.level)
                } else {
                    kind.to_string()
                };
                if i + 1 == levels && levels > 1 {
                    format!("{name} (LLC)")
                } else {
                    name
                }
            })
            .collect();
        let set_misses = (0..levels)
            .map(|i| vec![0; hier.level(i).geometry().sets as usize])
            .collect();
        Ok(Self {
            hier,
            levels,
            line_size,
            level_names,
            per_ip: HashMap::new(),
            misses: Vec::new(),
            set_misses,
            line_misses: HashMap::new(),
            classes: BTreeMap::new(),
            accesses: 0,
        })
    }

    pub fn levels(&self) -> usize {
        self.levels
    }

    /// The model, e.g. for its per-level geometry and counters.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hier
    }

    /// Feeds accesses in stream order. An access that spans two lines touches both.
    pub fn feed(&mut self, batch: &[TraceAccess]) {
        for a in batch {
            let first = a.addr / self.line_size;
            let last = (a.addr + u64::from(a.size.max(1)) - 1) / self.line_size;
            for line in first..=last {
                self.one(a, line * self.line_size);
            }
        }
    }

    #[inline]
    fn one(&mut self, a: &TraceAccess, addr: u64) {
        self.accesses += 1;
        *self.classes.entry(a.class).or_default() += 1;
        let r = self.hier.access(addr, usize::from(a.class));
        let served = r.served_by.min(self.levels);
        let counts = self.per_ip.entry(a.ip).or_default();
        counts.accesses += 1;
        if served == 0 {
            return;
        }
        for i in 0..served {
            counts.misses[i] += 1;
            let level = self.hier.level(i);
            let set = level.set_of_line(level.line_of(addr));
            self.set_misses[i][set] += 1;
        }
        let llc_class = if served == self.levels {
            *self.line_misses.entry(addr / self.line_size).or_default() += 1;
            class_code(r.misses[self.levels - 1])
        } else {
            0
        };
        self.misses.push(Miss {
            ip: a.ip,
            addr,
            epoch: a.epoch,
            served_by: served as u8,
            llc_class,
        });
    }
}

/// Names memory no registration covers, from the run's final memory map
/// (approximate: the map is the one at the end of the run).
pub(crate) fn process_region(maps: &[Mapping], exe: &str, addr: u64) -> String {
    let at = maps.partition_point(|m| m.start <= addr);
    let Some(m) = at.checked_sub(1).map(|i| &maps[i]).filter(|m| addr < m.end) else {
        return "unregistered: memory unmapped before the run ended (large heap blocks)".into();
    };
    let what = match m.path.as_str() {
        "" => "anonymous memory (heap, thread stacks)".to_string(),
        "[heap]" => "[heap]".into(),
        p if p.starts_with("[stack") => "[stack]".into(),
        p if p == exe => "the executable's static data".into(),
        p => Path::new(p)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.to_string()),
    };
    format!("unregistered: {what}")
}

/// Each kept miss's object (by description) and the kind of object, applying
/// the registry log in step with the misses' epochs.
pub(crate) fn resolve_objects(
    misses: &[Miss],
    dump: &Dump,
) -> Vec<(String, Option<ObjectKind>, Option<String>)> {
    let mut maps = dump.maps.clone();
    maps.sort_by_key(|m| m.start);
    let mut map = ObjectMap::new();
    let mut applied = 0usize;
    let mut cache: HashMap<u32, (String, Option<ObjectKind>, Option<String>)> = HashMap::new();
    misses
        .iter()
        .map(|m| {
            while applied < (m.epoch as usize).min(dump.events.len()) {
                map.apply(&dump.events[applied]);
                applied += 1;
            }
            match map.lookup(m.addr) {
                Some(id) => cache
                    .entry(id)
                    .or_insert_with(|| {
                        let o = map.object(id);
                        let name = match o.kind {
                            ObjectKind::BufferFrame => frame_name(o),
                            _ => o.describe(),
                        };
                        (name, Some(o.kind), o.operator.clone())
                    })
                    .clone(),
                None => (
                    process_region(&maps, &dump.exe, m.addr),
                    Some(ObjectKind::Process),
                    None,
                ),
            }
        })
        .collect()
}

/// A buffer page as its column or index and kind, without the page number:
/// every page of a column is one object of the report.
pub(crate) fn frame_name(o: &kura_common::memobj::Object) -> String {
    let name = if o.name.is_empty() {
        "pages of no table (catalog, free space)".to_string()
    } else {
        o.name.clone()
    };
    match &o.page_kind {
        Some(k) => format!("{name} ({k} pages)"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::memobj::{Event, Object};

    /// A sysfs cache tree: L1d 1 KiB 2-way, L2 4 KiB 4-way, 64-byte lines.
    fn geometry() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (i, (level, kind, size, ways)) in [(1, "Data", "1K", 2), (2, "Unified", "4K", 4)]
            .into_iter()
            .enumerate()
        {
            kura_cache::cpu::geometry::write_sysfs_cache(dir.path(), i, level, kind, size, ways)
                .unwrap();
        }
        dir
    }

    fn access(addr: u64, epoch: u32) -> TraceAccess {
        TraceAccess {
            ip: 0x1000,
            addr,
            size: 8,
            is_write: false,
            class: 0,
            epoch,
        }
    }

    #[test]
    fn misses_go_to_the_object_mapped_at_their_moment() {
        let g = geometry();
        let mut r = Replay::new(g.path()).unwrap();
        assert_eq!(r.levels(), 2);
        // 128 lines (8 KiB, twice the L2) read twice: first touches are
        // compulsory, the second pass misses again for lack of capacity.
        let first: Vec<TraceAccess> = (0..128).map(|i| access(0x10000 + i * 64, 1)).collect();
        let second: Vec<TraceAccess> = (0..128).map(|i| access(0x10000 + i * 64, 2)).collect();
        r.feed(&first);
        r.feed(&second);
        // an access spanning two lines touches both
        r.feed(&[TraceAccess {
            size: 16,
            ..access(0x90000 + 56, 2)
        }]);
        assert_eq!(r.accesses, 258);
        let l2 = r.hierarchy().counters(0)[1];
        assert_eq!((l2.compulsory, l2.capacity), (130, 128));
        // Event 0 maps the range to frame A; event 1 remaps it to frame B.
        let frame = |page| Event::Map {
            start: 0x10000,
            len: 128 * 64,
            object: Object::frame(0, page, None),
        };
        let mut events = vec![frame(7), frame(8)];
        kura_common::memobj::name_pages(&mut events, |p| {
            Some((format!("t.c{p}"), Some("column".into())))
        });
        let dump = Dump {
            events,
            ..Dump::default()
        };
        let objects = resolve_objects(&r.misses, &dump);
        assert_eq!(objects.len(), 258);
        let on = |name: &str| objects.iter().filter(|o| o.0 == name).count();
        assert_eq!(on("t.c7 (column pages)"), 128, "{:?}", &objects[..2]);
        assert_eq!(on("t.c8 (column pages)"), 128);
        assert!(objects[256].0.starts_with("unregistered"));
        assert!(r.line_misses.values().all(|&c| c <= 2));
    }
}
