//! Counter groups: opening one per thread through perf_event_open (or a fake source
//! that replays recorded values, so the hardware path is tested on machines
//! without PMU), reading them, and the derived figures (IPC, misses per 1,000
//! instructions, miss rates).

use std::collections::BTreeMap;
use std::sync::Mutex;

use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::group::CounterGroup;
use perf_event_open::count::Counter;
use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::ProfileError;

/// An open group of counters on one thread; `read` returns one running total per
/// event, in the order the group was opened with.
pub trait GroupReader {
    fn read(&mut self) -> Result<Vec<u64>, ProfileError>;
}

/// Opens counter groups. `open_group` runs on the thread to be counted.
pub trait CounterSource: Send + Sync {
    fn open_group(&self, events: &[Event]) -> Result<Box<dyn GroupReader>, ProfileError>;
    /// Counters of the whole process (every thread, and threads started later).
    fn open_process(&self, events: &[Event]) -> Result<Box<dyn GroupReader>, ProfileError>;
}

/// The kernel's counters, through the perf-event-open crate.
#[derive(Debug, Default, Clone, Copy)]
pub struct PerfSource;

/// Calls `$open` with the perf-event-open event for one of ours (the crate takes
/// each kind of event as its own type).
macro_rules! with_perf_event {
    ($event:expr, $ibs_op:expr, |$e:ident| $open:expr) => {{
        use perf_event_open::event::dp::DynamicPmu;
        use perf_event_open::event::hw::{Hardware, Op, OpResult, Type};
        use perf_event_open::event::raw::Raw;
        use perf_event_open::event::sw::Software;
        use $crate::events::Event;
        match $event {
            Event::Cycles => {
                let $e = Hardware::CpuCycle;
                $open
            }
            Event::Instructions => {
                let $e = Hardware::Instr;
                $open
            }
            Event::CacheReferences => {
                let $e = Hardware::CacheAccess;
                $open
            }
            Event::CacheMisses => {
                let $e = Hardware::CacheMiss;
                $open
            }
            Event::L1dReadMisses => {
                let $e = Hardware::Cache(Type::L1d, Op::Read, OpResult::Miss);
                $open
            }
            Event::LlcMisses => {
                let $e = Hardware::Cache(Type::Ll, Op::Read, OpResult::Miss);
                $open
            }
            Event::DtlbMisses => {
                let $e = Hardware::Cache(Type::Dtlb, Op::Read, OpResult::Miss);
                $open
            }
            Event::BranchMisses => {
                let $e = Hardware::BranchMiss;
                $open
            }
            // AMD: an IBS op sample; Intel: MEM_TRANS_RETIRED.LOAD_LATENCY (event
            // 0xcd, umask 0x01) with a latency threshold of 30 cycles in config1.
            Event::MemLoads => match $ibs_op {
                Some(ty) => {
                    let $e = DynamicPmu {
                        ty,
                        config: 0,
                        config1: 0,
                        config2: 0,
                        config3: 0,
                    };
                    $open
                }
                None => {
                    let $e = Raw {
                        config: 0x01cd,
                        config1: 30,
                        config2: 0,
                        config3: 0,
                    };
                    $open
                }
            },
            Event::TaskClock => {
                let $e = Software::TaskClock;
                $open
            }
            Event::CpuClock => {
                let $e = Software::CpuClock;
                $open
            }
            Event::PageFaults => {
                let $e = Software::PageFault;
                $open
            }
            Event::ContextSwitches => {
                let $e = Software::CtxSwitch;
                $open
            }
            Event::CpuMigrations => {
                let $e = Software::CpuMigration;
                $open
            }
        }
    }};
}
pub(crate) use with_perf_event;

/// Why an event could not be opened, in one line.
pub(crate) fn open_error(event: Event, e: std::io::Error) -> ProfileError {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => ProfileError::Unavailable(format!(
            "perf events are disabled for this process ({}: {e}); see kernel.perf_event_paranoid",
            event.name()
        )),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            ProfileError::Unavailable(format!(
                "event {} is not supported here (no hardware PMU?): {e}",
                event.name()
            ))
        }
        _ => ProfileError::Unavailable(format!("cannot open event {}: {e}", event.name())),
    }
}

struct PerfGroup {
    group: CounterGroup,
}

impl GroupReader for PerfGroup {
    fn read(&mut self) -> Result<Vec<u64>, ProfileError> {
        // An inherited group is refused with ECHILD while a thread's copy of
        // it is still being built or torn down (the kernel will not sum groups
        // of different shapes); a starting or joined thread can be in that
        // state for a moment, longer on a loaded machine, so the read is
        // retried for up to a second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let stat = loop {
            match self.group.leader().stat() {
                Ok(stat) => break stat,
                Err(e)
                    if e.raw_os_error() == Some(libc::ECHILD)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_micros(250));
                }
                Err(e) => return Err(ProfileError::io("reading a counter group", e)),
            }
        };
        let mut out = vec![stat.count];
        out.extend(stat.siblings.iter().map(|s| s.count));
        Ok(out)
    }
}

/// Whether counts may include kernel mode (the paper measures both): for root,
/// or where `kernel.perf_event_paranoid` is below 2; otherwise the kernel
/// refuses such events and kura counts user mode only.
pub(crate) fn kernel_allowed() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(2);
    root || level < 2
}

/// Opens a group of `events` on thread `tid` (0: the calling thread); with
/// `inherit`, threads it creates later count into it.
pub(crate) fn open_perf_group(
    events: &[Event],
    tid: u32,
    inherit: bool,
) -> Result<Box<dyn GroupReader>, ProfileError> {
    let (first, rest) = events
        .split_first()
        .ok_or_else(|| ProfileError::Invalid("an empty counter group".into()))?;
    let mut opts = Opts::default();
    opts.stat_format.siblings = true;
    opts.exclude.kernel = !kernel_allowed();
    if inherit {
        opts.inherit = Some(perf_event_open::config::Inherit::NewChild);
    }
    let leader = with_perf_event!(*first, None::<u32>, |ev| Counter::new(
        ev,
        (Proc(tid), Cpu::ALL),
        &opts
    ))
    .map_err(|e| open_error(*first, e))?;
    let mut group = CounterGroup::from(leader);
    for e in rest {
        let mut sibling = perf_event_open::config::sibling::Opts::default();
        sibling.exclude.kernel = opts.exclude.kernel;
        // The kernel wants every member of an inherited group inherited too.
        if inherit {
            sibling.inherit = Some(perf_event_open::config::Inherit::NewChild);
        }
        with_perf_event!(*e, None::<u32>, |ev| group.add(ev, &sibling))
            .map_err(|err| open_error(*e, err))?;
    }
    group
        .enable()
        .map_err(|e| ProfileError::io("enabling a counter group", e))?;
    Ok(Box::new(PerfGroup { group }))
}

/// A source that hands out recorded counter values: each group it opens returns
/// the next row of `reads` at each read (the last row again once they run out).
/// Tests drive the hardware path with it on machines without PMU.
pub struct FakeSource {
    reads: Mutex<Vec<Vec<u64>>>,
    /// Opening fails with this message (to test what a refused event gives).
    pub fail: Option<String>,
}

impl FakeSource {
    pub fn new(reads: Vec<Vec<u64>>) -> FakeSource {
        FakeSource {
            reads: Mutex::new(reads),
            fail: None,
        }
    }
}

struct FakeGroup {
    rows: Vec<Vec<u64>>,
    next: usize,
    width: usize,
}

impl GroupReader for FakeGroup {
    fn read(&mut self) -> Result<Vec<u64>, ProfileError> {
        let row = self
            .rows
            .get(self.next.min(self.rows.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(|| vec![0; self.width]);
        self.next += 1;
        Ok(row)
    }
}

impl CounterSource for FakeSource {
    fn open_process(&self, events: &[Event]) -> Result<Box<dyn GroupReader>, ProfileError> {
        self.open_group(events)
    }

    fn open_group(&self, events: &[Event]) -> Result<Box<dyn GroupReader>, ProfileError> {
        if let Some(msg) = &self.fail {
            return Err(ProfileError::Unavailable(msg.clone()));
        }
        let rows = self.reads.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if rows.iter().any(|r| r.len() != events.len()) {
            return Err(ProfileError::Invalid(
                "recorded counter rows do not match the group".into(),
            ));
        }
        Ok(Box::new(FakeGroup {
            rows,
            next: 0,
            width: events.len(),
        }))
    }
}

/// Counts of a group of events (event name → count), added up over threads or
/// operators.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts(pub BTreeMap<Event, u64>);

impl Counts {
    pub fn from_values(events: &[Event], values: &[u64]) -> Counts {
        Counts(events.iter().copied().zip(values.iter().copied()).collect())
    }

    pub fn add(&mut self, other: &Counts) {
        for (e, v) in &other.0 {
            *self.0.entry(*e).or_default() += v;
        }
    }

    pub fn get(&self, e: Event) -> Option<u64> {
        self.0.get(&e).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.values().all(|v| *v == 0)
    }

    /// The derived figures that these counts allow (absent events give none).
    pub fn metrics(&self) -> Metrics {
        let ratio = |a: Option<u64>, b: Option<u64>, scale: f64| match (a, b) {
            (Some(a), Some(b)) if b > 0 => Some(a as f64 * scale / b as f64),
            _ => None,
        };
        let instr = self.get(Event::Instructions);
        let mut mpki = BTreeMap::new();
        for e in [
            Event::CacheMisses,
            Event::L1dReadMisses,
            Event::LlcMisses,
            Event::DtlbMisses,
            Event::BranchMisses,
        ] {
            if let Some(v) = ratio(self.get(e), instr, 1000.0) {
                mpki.insert(e, v);
            }
        }
        Metrics {
            ipc: ratio(instr, self.get(Event::Cycles), 1.0),
            mpki,
            cache_miss_rate: ratio(
                self.get(Event::CacheMisses),
                self.get(Event::CacheReferences),
                1.0,
            ),
            branch_misses_per_kinstr: ratio(self.get(Event::BranchMisses), instr, 1000.0),
            cpu_ms: self
                .get(Event::TaskClock)
                .or(self.get(Event::CpuClock))
                .map(|ns| ns as f64 / 1e6),
            faults_per_ms: ratio(self.get(Event::PageFaults), self.get(Event::TaskClock), 1e6),
        }
    }
}

/// What counts mean: instructions per cycle, misses per 1,000 instructions, miss
/// rates; on the software path CPU time and page faults per CPU millisecond.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub ipc: Option<f64>,
    pub mpki: BTreeMap<Event, f64>,
    /// Cache misses / cache references.
    pub cache_miss_rate: Option<f64>,
    pub branch_misses_per_kinstr: Option<f64>,
    pub cpu_ms: Option<f64>,
    pub faults_per_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_hardware_counts_give_ipc_mpki_and_miss_rate() {
        let events = Event::HARDWARE_GROUP;
        // cycles, instr, cache refs, cache misses, L1D, LLC, dTLB, branch misses
        let c = Counts::from_values(
            &events,
            &[
                2_000_000, 3_000_000, 60_000, 15_000, 45_000, 6_000, 300, 9_000,
            ],
        );
        let m = c.metrics();
        assert!((m.ipc.unwrap() - 1.5).abs() < 1e-9);
        assert!((m.mpki[&Event::L1dReadMisses] - 15.0).abs() < 1e-9);
        assert!((m.mpki[&Event::LlcMisses] - 2.0).abs() < 1e-9);
        assert!((m.cache_miss_rate.unwrap() - 0.25).abs() < 1e-9);
        assert!((m.branch_misses_per_kinstr.unwrap() - 3.0).abs() < 1e-9);
        assert!(m.cpu_ms.is_none());
        // Without instructions there is no per-instruction figure, not a division by 0.
        let sw = Counts::from_values(&Event::SOFTWARE_GROUP, &[4_000_000, 80, 2, 0]);
        let m = sw.metrics();
        assert!(m.ipc.is_none() && m.mpki.is_empty());
        assert!((m.cpu_ms.unwrap() - 4.0).abs() < 1e-9);
        assert!((m.faults_per_ms.unwrap() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn fake_groups_replay_rows_and_check_their_width() {
        let src = FakeSource::new(vec![vec![1, 2], vec![5, 9]]);
        let mut g = src
            .open_group(&[Event::Cycles, Event::Instructions])
            .unwrap();
        assert_eq!(g.read().unwrap(), vec![1, 2]);
        assert_eq!(g.read().unwrap(), vec![5, 9]);
        assert_eq!(g.read().unwrap(), vec![5, 9]);
        assert!(src.open_group(&[Event::Cycles]).is_err());
    }

    /// The software group opens and counts on this machine (no PMU needed).
    #[test]
    fn software_group_counts_task_clock_here() {
        let mut g = match PerfSource.open_group(&Event::SOFTWARE_GROUP) {
            Ok(g) => g,
            Err(e) => panic!("software counters must open: {e}"),
        };
        let a = g.read().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let b = g.read().unwrap();
        assert_eq!(a.len(), 4);
        assert!(b[0] > a[0], "task-clock did not advance: {a:?} → {b:?}");
    }
}
