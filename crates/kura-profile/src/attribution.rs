//! Attribution to operators: an observer of kura-exec's operator marks that reads a
//! per-thread counter group at every operator boundary (charging the difference
//! to the operator the thread leaves) and, for sampling, logs each thread's
//! (time, operator) transitions so that a sample's thread and time name its operator.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kura_common::probe::{Mark, Observer};

use crate::counters::{CounterSource, Counts, GroupReader};
use crate::events::Event;
use crate::threads::current_tid;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A thread's counter group, tagged with the observer that opened it (a later
/// profile on the same long-lived worker opens its own).
struct ThreadGroup {
    observer: u64,
    reader: Option<Box<dyn GroupReader>>,
    last: Vec<u64>,
}

/// A thread's transition log, shared with the observer that reads it: each
/// thread appends to its own (uncontended) log rather than to one for all.
type Log = Arc<Mutex<Vec<(u64, Mark)>>>;

thread_local! {
    static GROUP: RefCell<Option<ThreadGroup>> = const { RefCell::new(None) };
    static LOG: RefCell<Option<(u64, Log)>> = const { RefCell::new(None) };
}

/// CLOCK_MONOTONIC in nanoseconds: the clock perf samples are stamped with
/// (the sampler asks for it) and the memory-object registry's clock, so log
/// entries, registry events and samples compare.
pub use kura_common::memobj::monotonic_ns;

/// What one query's operators did: counts per mark, names per node, transitions
/// per thread.
#[derive(Debug, Default, Clone)]
pub struct OperatorData {
    pub counts: HashMap<Mark, Counts>,
    pub names: BTreeMap<u32, String>,
    pub transitions: HashMap<u32, Vec<(u64, Mark)>>,
    /// The first failure to open or read a group (the profile says so).
    pub error: Option<String>,
}

impl OperatorData {
    /// The operator thread `tid` ran at `time` (monotonic ns): the last
    /// transition at or before it; idle before the first.
    pub fn mark_at(&self, tid: u32, time: u64) -> Mark {
        let Some(log) = self.transitions.get(&tid) else {
            return Mark::IDLE;
        };
        match log.partition_point(|(t, _)| *t <= time) {
            0 => Mark::IDLE,
            i => log[i - 1].1,
        }
    }

    /// "node 3 Filter: ..." for a node, or "(outside operators)".
    pub fn label(&self, node: u32) -> String {
        if node == u32::MAX {
            return "(outside operators)".into();
        }
        match self.names.get(&node) {
            Some(l) => format!("#{node} {l}"),
            None => format!("#{node}"),
        }
    }
}

/// The observer; install it with `kura_common::probe::install`.
pub struct OperatorObserver {
    id: u64,
    counting: Option<(Arc<dyn CounterSource>, Vec<Event>)>,
    log_transitions: bool,
    data: Mutex<OperatorData>,
    /// Every thread's log, by thread id.
    logs: Mutex<HashMap<u32, Log>>,
}

impl OperatorObserver {
    /// Counts `events` per operator with groups from `source` (if given) and logs
    /// transitions (if asked).
    pub fn new(
        counting: Option<(Arc<dyn CounterSource>, Vec<Event>)>,
        log_transitions: bool,
    ) -> OperatorObserver {
        OperatorObserver {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            counting,
            log_transitions,
            data: Mutex::new(OperatorData::default()),
            logs: Mutex::new(HashMap::new()),
        }
    }

    /// Hands over what was gathered since the last take and starts afresh (one
    /// take per query).
    pub fn take(&self) -> OperatorData {
        let mut d = std::mem::take(&mut *self.data.lock().unwrap_or_else(|p| p.into_inner()));
        for (tid, log) in self.logs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let entries = std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner()));
            if !entries.is_empty() {
                d.transitions.insert(*tid, entries);
            }
        }
        d
    }

    /// Appends to the calling thread's log (registering it on first use).
    fn log(&self, to: Mark) {
        let now = monotonic_ns();
        LOG.with(|l| {
            let mut l = l.borrow_mut();
            if l.as_ref().is_none_or(|(id, _)| *id != self.id) {
                let log = Log::default();
                self.logs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(current_tid(), log.clone());
                *l = Some((self.id, log));
            }
            if let Some((_, log)) = l.as_ref() {
                log.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((now, to));
            }
        });
    }

    fn note_error(&self, e: String) {
        let mut d = self.data.lock().unwrap_or_else(|p| p.into_inner());
        d.error.get_or_insert(e);
    }

    /// Reads the thread's group; the difference since its last read goes to `from`.
    fn charge(&self, from: Mark) {
        let Some((source, events)) = &self.counting else {
            return;
        };
        let delta = GROUP.with(|g| {
            let mut g = g.borrow_mut();
            if g.as_ref().is_none_or(|t| t.observer != self.id) {
                let (reader, last) = match source.open_group(events) {
                    Ok(mut r) => match r.read() {
                        Ok(v) => (Some(r), v),
                        Err(e) => {
                            self.note_error(e.to_string());
                            (None, Vec::new())
                        }
                    },
                    Err(e) => {
                        self.note_error(e.to_string());
                        (None, Vec::new())
                    }
                };
                *g = Some(ThreadGroup {
                    observer: self.id,
                    reader,
                    last,
                });
                return None;
            }
            let t = g.as_mut()?;
            let now = match t.reader.as_mut()?.read() {
                Ok(v) => v,
                Err(e) => {
                    self.note_error(e.to_string());
                    return None;
                }
            };
            let delta: Vec<u64> = now
                .iter()
                .zip(&t.last)
                .map(|(n, l)| n.saturating_sub(*l))
                .collect();
            t.last = now;
            Some(delta)
        });
        if let Some(delta) = delta {
            let c = Counts::from_values(events, &delta);
            let mut d = self.data.lock().unwrap_or_else(|p| p.into_inner());
            d.counts.entry(from).or_default().add(&c);
        }
    }
}

impl Observer for OperatorObserver {
    fn switch(&self, from: Mark, to: Mark) {
        self.charge(from);
        if self.log_transitions {
            self.log(to);
        }
    }

    fn name(&self, node: u32, label: &str) {
        let mut d = self.data.lock().unwrap_or_else(|p| p.into_inner());
        d.names.insert(node, label.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::FakeSource;
    use kura_common::probe;

    /// Marks entered on a thread charge each operator the counter difference
    /// of its own turns, with recorded (fake) hardware values.
    #[test]
    fn counts_are_charged_to_the_operator_left() {
        let events = vec![Event::Cycles, Event::Instructions];
        // Reads: open, then at each of the four switches below.
        let rows = vec![
            vec![100, 100],
            vec![1_100, 2_100],
            vec![1_600, 2_600],
            vec![2_600, 4_600],
            vec![2_700, 4_700],
        ];
        let src: Arc<dyn CounterSource> = Arc::new(FakeSource::new(rows));
        let obs = Arc::new(OperatorObserver::new(Some((src, events)), true));
        // Run on a fresh thread: its thread-local group is this observer's.
        let o = obs.clone();
        std::thread::spawn(move || {
            let installed = probe::install(o).expect("no other observer in this test binary");
            probe::name(1, "Scan: lineitem");
            {
                let _scan = probe::enter(1, 5); // open (idle → 1)
                {
                    let _filter = probe::enter(2, 5); // 1 charged 1000/2000
                } // 2 charged 500/500
            } // 1 charged 1000/2000
            drop(installed);
        })
        .join()
        .unwrap();
        let d = obs.take();
        assert!(d.error.is_none(), "{:?}", d.error);
        let scan = &d.counts[&Mark::new(1, 5)];
        assert_eq!(scan.get(Event::Cycles), Some(2_000));
        assert_eq!(scan.get(Event::Instructions), Some(4_000));
        let filter = &d.counts[&Mark::new(2, 5)];
        assert_eq!(filter.get(Event::Cycles), Some(500));
        assert!((filter.metrics().ipc.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(d.label(1), "#1 Scan: lineitem");
        // The log names the operator at any time between transitions.
        let (&tid, log) = d.transitions.iter().next().unwrap();
        assert_eq!(log.len(), 4);
        assert_eq!(d.mark_at(tid, log[1].0), Mark::new(2, 5));
        assert_eq!(d.mark_at(tid, log[0].0.saturating_sub(1)), Mark::IDLE);
        assert_eq!(d.mark_at(tid, log[3].0 + 1_000_000), Mark::IDLE);
        assert_eq!(d.mark_at(tid + 1, log[1].0), Mark::IDLE);
        // Taking empties it for the next query.
        assert!(obs.take().counts.is_empty());
    }
}
