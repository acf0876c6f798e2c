//! Sampled data addresses → kura's named memory objects (paper 002): the
//! registry's timed log and the load samples are replayed together in time
//! order, so each sample's address names the object that held it at that
//! moment (a frame reused for another page, freed hash-table memory); then
//! loads, L1 and LLC misses and mean latency per object and per (operator, object).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use kura_common::memobj::{self, ObjectKind, TimedEvent, TimedReplay};
use kura_common::probe::Mark;
use serde::{Deserialize, Serialize};

use crate::attribution::OperatorData;
use crate::records::Sample;
use crate::report::DataObjectRow;
use crate::simulated::child::{parse_maps, Mapping};
use crate::simulated::replay::{frame_name, process_region};
use crate::ProfileError;

/// Names a buffer page: its table column or index, and the kind of page.
pub type PageName = Option<(String, Option<String>)>;

/// The registry's log of a run, with what names the memory it does not cover.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectLog {
    /// The timed log, buffer pages named.
    pub events: Vec<TimedEvent>,
    /// The process's memory map when the log was taken (may be empty).
    #[serde(default)]
    pub maps: Vec<Mapping>,
    /// The process's executable (its static data is named so).
    #[serde(default)]
    pub exe: String,
}

impl ObjectLog {
    /// Takes this process's registry log (the registry keeps running), names
    /// buffer pages with `name_page` and reads the process's memory map.
    pub fn take(name_page: Option<&dyn Fn(u64) -> PageName>) -> ObjectLog {
        let mut events = memobj::take_timed_log();
        if let Some(name) = name_page {
            memobj::name_pages(events.iter_mut().map(|t| &mut t.event), name);
        }
        ObjectLog {
            events,
            maps: std::fs::read_to_string("/proc/self/maps")
                .map(|t| parse_maps(&t))
                .unwrap_or_default(),
            exe: std::env::current_exe()
                .and_then(|p| p.canonicalize())
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        }
    }

    pub fn load(path: &Path) -> Result<ObjectLog, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::io(format!("reading {}", path.display()), e))?;
        serde_json::from_str(&text).map_err(|e| {
            ProfileError::Invalid(format!("{} is not a registry log: {e}", path.display()))
        })
    }

    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let text = serde_json::to_string(self)
            .map_err(|e| ProfileError::Invalid(format!("cannot encode the registry log: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| ProfileError::io(format!("writing {}", path.display()), e))
    }

    /// What memory no registration covers is called.
    fn unregistered(&self, addr: u64) -> String {
        if self.maps.is_empty() {
            "unregistered memory".into()
        } else {
            process_region(&self.maps, &self.exe, addr)
        }
    }
}

/// A run recorded for attributing its samples later (offline, or in tests on
/// machines without precise load sampling): the registry's log and what each
/// thread's operators were, by time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedRun {
    pub registry: ObjectLog,
    /// Operator labels by plan node.
    pub names: BTreeMap<u32, String>,
    /// Per thread: (CLOCK_MONOTONIC ns, node, pipeline) at each operator switch.
    pub transitions: BTreeMap<u32, Vec<(u64, u32, u32)>>,
}

impl RecordedRun {
    /// The recorded operator data of `data`'s run with `log`.
    pub fn new(registry: ObjectLog, data: &OperatorData) -> RecordedRun {
        RecordedRun {
            registry,
            names: data.names.clone(),
            transitions: data
                .transitions
                .iter()
                .map(|(tid, log)| {
                    let log = log.iter().map(|(t, m)| (*t, m.node, m.pipeline)).collect();
                    (*tid, log)
                })
                .collect(),
        }
    }

    /// The operators as the attribution reads them.
    pub fn operators(&self) -> OperatorData {
        OperatorData {
            names: self.names.clone(),
            transitions: self
                .transitions
                .iter()
                .map(|(tid, log)| {
                    let log = log
                        .iter()
                        .map(|&(t, n, p)| (t, Mark::new(n as usize, p as usize)))
                        .collect();
                    (*tid, log)
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn load(path: &Path) -> Result<RecordedRun, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::io(format!("reading {}", path.display()), e))?;
        serde_json::from_str(&text).map_err(|e| {
            ProfileError::Invalid(format!("{} is not a recorded run: {e}", path.display()))
        })
    }

    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let text = serde_json::to_string(self)
            .map_err(|e| ProfileError::Invalid(format!("cannot encode the run: {e}")))?;
        std::fs::write(path, text)
            .map_err(|e| ProfileError::io(format!("writing {}", path.display()), e))
    }
}

#[derive(Default)]
struct Tally {
    kind: String,
    loads: u64,
    l1: u64,
    llc: u64,
    latency_sum: u64,
    latency_n: u64,
}

impl Tally {
    fn add(&mut self, s: &Sample) {
        self.loads += 1;
        self.l1 += s.l1_miss() as u64;
        self.llc += s.llc_miss() as u64;
        if let Some(l) = s.latency {
            self.latency_sum += l;
            self.latency_n += 1;
        }
    }

    fn row(self, object: String, operator: Option<String>) -> DataObjectRow {
        DataObjectRow {
            object,
            kind: self.kind,
            operator,
            loads: self.loads,
            l1_misses: self.l1,
            llc_misses: self.llc,
            mean_latency: (self.latency_n > 0)
                .then(|| self.latency_sum as f64 / self.latency_n as f64),
        }
    }
}

/// Most L1 misses first, then most loads, then by name.
fn rank(rows: &mut [DataObjectRow]) {
    rows.sort_by(|a, b| {
        b.l1_misses
            .cmp(&a.l1_misses)
            .then(b.loads.cmp(&a.loads))
            .then(a.operator.cmp(&b.operator))
            .then(a.object.cmp(&b.object))
    });
}

/// Loads, misses and latency per data object and per (operator, object) of the
/// samples with a data address; `operator_of` names the operator a sample's
/// thread ran at its time. Buffer pages are named by their column or index
/// (every page of a column is one object), other objects by their name and
/// owning operator, memory no registration covers by the process region.
pub fn object_tables(
    samples: &[&Sample],
    log: &ObjectLog,
    operator_of: &mut dyn FnMut(&Sample) -> String,
) -> (Vec<DataObjectRow>, Vec<DataObjectRow>) {
    let mut loads: Vec<&Sample> = samples
        .iter()
        .copied()
        .filter(|s| s.addr.is_some())
        .collect();
    // Time order, so the replay only moves forward.
    loads.sort_by_key(|s| s.time);
    let mut replay = TimedReplay::new(&log.events);
    let mut names: HashMap<u32, (String, &'static str)> = HashMap::new();
    let mut objects: HashMap<String, Tally> = HashMap::new();
    let mut pairs: HashMap<(String, String), Tally> = HashMap::new();
    for s in loads {
        let addr = s.addr.unwrap_or(0);
        let (name, kind) = match replay.lookup(s.time, addr) {
            Some(id) => names
                .entry(id)
                .or_insert_with(|| {
                    let o = replay.map().object(id);
                    let name = match o.kind {
                        ObjectKind::BufferFrame => frame_name(o),
                        _ => o.describe(),
                    };
                    (name, o.kind.label())
                })
                .clone(),
            None => (log.unregistered(addr), ObjectKind::Process.label()),
        };
        let o = objects.entry(name.clone()).or_default();
        o.kind = kind.to_string();
        o.add(s);
        let p = pairs.entry((operator_of(s), name)).or_default();
        p.kind = kind.to_string();
        p.add(s);
    }
    let mut by_object: Vec<DataObjectRow> =
        objects.into_iter().map(|(n, t)| t.row(n, None)).collect();
    let mut by_pair: Vec<DataObjectRow> = pairs
        .into_iter()
        .map(|((op, n), t)| t.row(n, Some(op)))
        .collect();
    rank(&mut by_object);
    rank(&mut by_pair);
    (by_object, by_pair)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::memobj::{Event, Object};

    fn load(time: u64, addr: u64, level: &str, latency: u64) -> Sample {
        Sample {
            ip: 0x1000,
            tid: 1,
            time,
            addr: Some(addr),
            level: Some(level.into()),
            latency: Some(latency),
            callchain: vec![],
        }
    }

    /// A frame holds a page of lineitem.l_tax, then (reused) a page of
    /// orders.o_orderkey; a hash table lives at another range until it is freed.
    /// Samples at the same address count for the page held at their time, and
    /// per operator.
    #[test]
    fn samples_count_for_the_object_of_their_time_and_operator() {
        let frame = |page| Event::Map {
            start: 0x10000,
            len: 0x1000,
            object: Object::frame(3, page, None),
        };
        let mut events = vec![
            TimedEvent {
                time: 10,
                event: frame(1),
            },
            TimedEvent {
                time: 20,
                event: Event::Map {
                    start: 0x50000,
                    len: 0x100,
                    object: Object::new(ObjectKind::HashTable, "chain array")
                        .with_operator("hash join build on o_orderkey"),
                },
            },
            TimedEvent {
                time: 30,
                event: frame(2),
            },
            TimedEvent {
                time: 40,
                event: Event::Unmap {
                    start: 0x50000,
                    len: 0x100,
                },
            },
        ];
        memobj::name_pages(events.iter_mut().map(|t| &mut t.event), |p| {
            let n = if p == 1 {
                "lineitem.l_tax"
            } else {
                "orders.o_orderkey"
            };
            Some((n.to_string(), Some("column".into())))
        });
        let log = ObjectLog {
            events,
            ..Default::default()
        };
        let samples = [
            load(35, 0x10040, "L3", 40), // after the reuse: orders
            load(15, 0x10080, "RAM", 300),
            load(25, 0x10000, "L1", 4),
            load(25, 0x50010, "L2", 12),
            load(45, 0x50010, "RAM", 200), // the table is freed by then
            Sample {
                addr: None,
                ..load(25, 0, "L1", 1)
            },
        ];
        let refs: Vec<&Sample> = samples.iter().collect();
        let (objects, pairs) = object_tables(&refs, &log, &mut |s| {
            if s.time < 30 { "#1 scan" } else { "#2 probe" }.to_string()
        });
        let row = |name: &str| objects.iter().find(|r| r.object == name).unwrap();
        let tax = row("lineitem.l_tax (column pages)");
        assert_eq!((tax.loads, tax.l1_misses, tax.llc_misses), (2, 1, 1));
        assert_eq!(tax.mean_latency, Some(152.0));
        assert_eq!(tax.kind, "buffer page");
        let ok = row("orders.o_orderkey (column pages)");
        assert_eq!((ok.loads, ok.l1_misses, ok.llc_misses), (1, 1, 0));
        let ht = row("chain array (hash join build on o_orderkey)");
        assert_eq!(
            (ht.loads, ht.l1_misses, ht.kind.as_str()),
            (1, 1, "hash table")
        );
        let un = row("unregistered memory");
        assert_eq!((un.loads, un.llc_misses), (1, 1));
        assert_eq!(
            objects.len(),
            4,
            "the sample without an address is left out"
        );
        assert_eq!(objects[0].object, "lineitem.l_tax (column pages)");
        let pair = |op: &str, name: &str| {
            pairs
                .iter()
                .find(|r| r.operator.as_deref() == Some(op) && r.object == name)
                .map(|r| r.loads)
        };
        assert_eq!(pair("#1 scan", "lineitem.l_tax (column pages)"), Some(2));
        assert_eq!(
            pair("#2 probe", "orders.o_orderkey (column pages)"),
            Some(1)
        );
        assert_eq!(pair("#2 probe", "unregistered memory"), Some(1));
        assert_eq!(pairs.len(), 4);
    }
}
