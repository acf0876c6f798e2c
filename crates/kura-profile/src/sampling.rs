//! Live sampling: one perf_event_open sampler per thread of this process (threads
//! created later inherit it), read from the mmap ring buffers by a drain thread
//! while the workload runs. Samples carry IP, thread, CLOCK_MONOTONIC time, the
//! user call chain and, where the event offers them, data address, data source
//! and load latency.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use perf_event_open::config::{CallChain, Clock, Cpu, Opts, Proc, SampleOn, SampleSkid};
use perf_event_open::count::Counter;
use perf_event_open::sample::record::sample::Weight;
use perf_event_open::sample::record::Record;
use perf_event_open::sample::Sampler;

use crate::counters::{open_error, with_perf_event};
use crate::events::{Event, Pmu};
use crate::records::{parse_ibs_op, Sample};
use crate::threads::{current_tid, own_threads, thread_ending};
pub use crate::threads::{process_of, threads_of};
use crate::ProfileError;

/// How often the drain thread empties the ring buffers and looks for new threads.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleConfig {
    pub event: Event,
    /// Events between samples; for the clocks, nanoseconds.
    pub period: u64,
}

/// The default period of an event: cpu-clock every 4 ms of CPU time (the
/// overhead measurement, in CPU time, put 1 ms at about 5 % and 4 ms at 3 % for
/// TPC-H Q1 and Q6 at SF 0.1), hardware events every 100,000 events, precise
/// loads every 10,000 (the paper's figure).
pub fn default_period(event: Event) -> u64 {
    match event {
        Event::CpuClock | Event::TaskClock => 4_000_000,
        Event::MemLoads => 10_000,
        _ => 100_000,
    }
}

impl SampleConfig {
    /// Checks the event against the machine and the period against 0.
    pub fn new(event: Event, period: u64, pmu: &Pmu) -> Result<SampleConfig, ProfileError> {
        if period == 0 {
            return Err(ProfileError::Invalid(
                "the sampling period must be at least 1 (0 would never sample)".into(),
            ));
        }
        pmu.check(event)?;
        Ok(SampleConfig { event, period })
    }
}

fn opts(cfg: &SampleConfig, pmu: &Pmu) -> Opts {
    let mut o = Opts {
        sample_on: SampleOn::Count(cfg.period),
        ..Opts::default()
    };
    o.exclude.kernel = true;
    o.exclude.hv = true;
    o.timer = Some(Clock::Monotonic);
    o.record_id_format.task = true;
    o.record_id_format.time = true;
    o.sample_format.code_addr = true;
    o.sample_format.call_chain = Some(CallChain {
        exclude_user: false,
        exclude_kernel: true,
        defer_user: false,
        max_stack_frames: 16,
    });
    if cfg.event == Event::MemLoads {
        if pmu.ibs_op.is_some() {
            o.sample_format.raw = true;
        } else {
            o.sample_skid = SampleSkid::ReqZero;
            o.sample_format.data_addr = true;
            o.sample_format.data_source = true;
            o.sample_format.weight = Some(perf_event_open::config::Repr::Full);
        }
    }
    o
}

/// The level name of a live sample's data source (as `records::data_src_level`).
fn live_level(ds: &perf_event_open::sample::record::sample::DataSource) -> Option<String> {
    let l = &ds.level;
    let name = if l.rem_cce1 || l.rem_cce2 {
        "remote cache"
    } else if l.rem_ram1 || l.rem_ram2 {
        "remote RAM"
    } else if l.loc_ram {
        "RAM"
    } else if l.l3 {
        "L3"
    } else if l.l2 {
        "L2"
    } else if l.lfb {
        "LFB"
    } else if l.l1 {
        "L1"
    } else {
        return None;
    };
    Some(name.into())
}

fn convert(s: &perf_event_open::sample::record::sample::Sample, ibs: bool) -> Option<Sample> {
    use perf_event_open::sample::record::sample::CallChain as Chain;
    let mut out = Sample {
        ip: s.code_addr.map(|(ip, _)| ip)?,
        tid: s.record_id.task.as_ref().map(|t| t.tid).unwrap_or(0),
        time: s.record_id.time.unwrap_or(0),
        addr: s.data_addr,
        level: s.data_source.as_ref().and_then(live_level),
        latency: match &s.weight {
            Some(Weight::Full(w)) if *w > 0 => Some(*w),
            Some(Weight::Vars { var1, .. }) if *var1 > 0 => Some(*var1 as u64),
            _ => None,
        },
        callchain: Vec::new(),
    };
    for c in s.call_chain.iter().flatten() {
        if let Chain::User(ips) = c {
            out.callchain
                .extend(ips.iter().copied().filter(|ip| *ip != out.ip));
        }
    }
    if ibs {
        if let Some(raw) = &s.raw {
            let op = parse_ibs_op(raw).ok()?;
            op.fill(&mut out);
        }
    }
    Some(out)
}

/// Samples being taken; [`LiveSampler::stop`] returns them.
pub struct LiveSampler {
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<Result<Drained, ProfileError>>>,
}

/// What the drain thread gathered.
#[derive(Debug, Default)]
pub struct Drained {
    pub samples: Vec<Sample>,
    /// Samples the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Sample times are CLOCK_MONOTONIC (the kernel took the clock option).
    pub monotonic: bool,
}

/// The one line a profile prints when sample times are not on CLOCK_MONOTONIC.
pub const CLOCK_REFUSED: &str =
    "the kernel refused CLOCK_MONOTONIC sample times (perf use_clockid): \
     samples are not attributed to queries, operators or data objects";

/// Opens with `opts`; if that fails in a way a kernel without `use_clockid`
/// (before Linux 4.1) or without this clock answers (EINVAL, E2BIG), tries again
/// without asking for the clock, and on success drops the clock from `opts` for
/// every later open and returns `true` (sample times are then the kernel's own
/// clock, which nothing else here can compare with).
fn open_clock_or_not<T>(
    opts: &mut Opts,
    mut open: impl FnMut(&Opts) -> std::io::Result<T>,
) -> (std::io::Result<T>, bool) {
    match open(opts) {
        Err(e)
            if opts.timer.is_some()
                && matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::E2BIG)) =>
        {
            let mut plain = opts.clone();
            plain.timer = None;
            match open(&plain) {
                Ok(t) => {
                    *opts = plain;
                    (Ok(t), true)
                }
                // Not the clock: report the first error.
                Err(_) => (Err(e), false),
            }
        }
        r => (r, false),
    }
}

/// Opens and enables a sampler on thread `tid`; `None` if the thread is gone.
fn open_on(
    tid: u32,
    cfg: &SampleConfig,
    pmu: &Pmu,
    opts: &Opts,
) -> Result<Option<(Counter, Sampler)>, ProfileError> {
    let opened = with_perf_event!(cfg.event, pmu.ibs_op, |ev| Counter::new(
        ev,
        (Proc(tid), Cpu::ALL),
        opts
    ));
    enable_sampler(opened, tid, cfg)
}

/// Maps and enables an opened counter's ring buffer; `None` if its thread is gone.
fn enable_sampler(
    opened: std::io::Result<Counter>,
    tid: u32,
    cfg: &SampleConfig,
) -> Result<Option<(Counter, Sampler)>, ProfileError> {
    let counter = match opened {
        Ok(c) => c,
        // The thread ended between listing and opening.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) || thread_ending(tid) => return Ok(None),
        Err(e) => return Err(open_error(cfg.event, e)),
    };
    // 2^6 pages (256 KiB) per thread: ~1,000 samples with call chains,
    // drained every 20 ms.
    let sampler = counter
        .sampler(6)
        .map_err(|e| ProfileError::io("mapping a sample ring buffer", e))?;
    counter
        .enable()
        .map_err(|e| ProfileError::io("enabling a sampler", e))?;
    Ok(Some((counter, sampler)))
}

impl LiveSampler {
    /// Opens a sampler on every thread of the process and starts them. The
    /// kernel does not let a per-thread sampler with a ring buffer be inherited,
    /// so the drain thread looks for new threads every 20 ms and samples them too.
    pub fn start(cfg: SampleConfig, pmu: &Pmu) -> Result<LiveSampler, ProfileError> {
        Self::start_listing(cfg, pmu, own_threads)
    }

    /// Samples the threads of other processes (`pids`), new threads included,
    /// until stopped. Samples carry the thread id; [`process_of`] names the
    /// process.
    pub fn start_on_processes(
        cfg: SampleConfig,
        pmu: &Pmu,
        pids: Vec<u32>,
    ) -> Result<LiveSampler, ProfileError> {
        for &pid in &pids {
            if threads_of(pid).is_empty() {
                return Err(ProfileError::Invalid(format!(
                    "no process {pid} (or no permission to see its threads)"
                )));
            }
        }
        Self::start_listing(cfg, pmu, move || {
            Ok(pids.iter().flat_map(|&p| threads_of(p)).collect())
        })
    }

    fn start_listing(
        cfg: SampleConfig,
        pmu: &Pmu,
        list: impl Fn() -> Result<Vec<u32>, ProfileError> + Send + 'static,
    ) -> Result<LiveSampler, ProfileError> {
        let mut opts = opts(&cfg, pmu);
        let mut samplers = HashMap::new();
        let mut clock_refused = false;
        for tid in list()? {
            // The first open settles whether the kernel takes the clock option.
            let opened = if samplers.is_empty() && !clock_refused {
                let (r, refused) = open_clock_or_not(&mut opts, |o| {
                    with_perf_event!(cfg.event, pmu.ibs_op, |ev| Counter::new(
                        ev,
                        (Proc(tid), Cpu::ALL),
                        o
                    ))
                });
                clock_refused = refused;
                enable_sampler(r, tid, &cfg)?
            } else {
                open_on(tid, &cfg, pmu, &opts)?
            };
            if let Some(s) = opened {
                samplers.insert(tid, s);
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let ibs = cfg.event == Event::MemLoads && pmu.ibs_op.is_some();
        let pmu = pmu.clone();
        let drain = std::thread::Builder::new()
            .name("kura-profile-drain".into())
            .spawn(move || {
                let me = current_tid();
                let mut out = Drained {
                    monotonic: !clock_refused,
                    ..Drained::default()
                };
                loop {
                    let last = flag.load(Ordering::Acquire);
                    for (_, s) in samplers.values() {
                        let Some(iter) = s.iter() else { continue };
                        for (_, rec) in iter {
                            match rec {
                                Record::Sample(s) => out.samples.extend(convert(&s, ibs)),
                                Record::LostRecords(l) => out.lost += l.lost_records,
                                _ => {}
                            }
                        }
                    }
                    if last {
                        break;
                    }
                    // Woken early by stop(); otherwise every 20 ms, well before
                    // a ring buffer fills (~10,000 samples/s fill one in ~100 ms),
                    // and seldom enough not to compete with the workload.
                    std::thread::park_timeout(DRAIN_EVERY);
                    for tid in list()? {
                        if tid != me && !samplers.contains_key(&tid) {
                            if let Some(s) = open_on(tid, &cfg, &pmu, &opts)? {
                                samplers.insert(tid, s);
                            }
                        }
                    }
                }
                for (c, _) in samplers.values() {
                    let _ = c.disable();
                }
                Ok(out)
            })
            .map_err(|e| ProfileError::io("starting the sample drain thread", e))?;
        Ok(LiveSampler {
            stop,
            drain: Some(drain),
        })
    }

    /// Stops sampling and returns the samples.
    pub fn stop(mut self) -> Result<Drained, ProfileError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Drained, ProfileError> {
        self.stop.store(true, Ordering::Release);
        match self.drain.take() {
            Some(h) => {
                h.thread().unpark();
                h.join().map_err(|_| {
                    ProfileError::Unavailable("the sample drain thread panicked".into())
                })?
            }
            None => Ok(Drained::default()),
        }
    }
}

impl Drop for LiveSampler {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_zero_and_hardware_events_without_pmu_are_refused() {
        let none = Pmu {
            hardware: false,
            ibs_op: None,
        };
        let e = SampleConfig::new(Event::CpuClock, 0, &none).unwrap_err();
        assert!(e.to_string().contains("at least 1"));
        assert!(SampleConfig::new(Event::LlcMisses, 1000, &none).is_err());
        assert!(SampleConfig::new(Event::CpuClock, 1000, &none).is_ok());
    }

    /// A kernel that refuses the clock option (EINVAL while it is set) is asked
    /// again without it, and every later open goes without it; other failures
    /// stay failures.
    #[test]
    fn a_refused_clock_falls_back_once_and_is_reported() {
        let einval = || std::io::Error::from_raw_os_error(libc::EINVAL);
        let mut o = opts(
            &SampleConfig {
                event: Event::CpuClock,
                period: 1000,
            },
            &Pmu::this_machine(),
        );
        assert!(o.timer.is_some());
        let mut tries = Vec::new();
        let (r, refused) = open_clock_or_not(&mut o, |o| {
            tries.push(o.timer.is_some());
            if o.timer.is_some() {
                Err(einval())
            } else {
                Ok(7)
            }
        });
        assert_eq!((r.unwrap(), refused, tries), (7, true, vec![true, false]));
        assert!(o.timer.is_none(), "later opens go without the clock");
        // A kernel that takes the clock: one try, nothing refused.
        let mut o2 = opts(
            &SampleConfig {
                event: Event::CpuClock,
                period: 1000,
            },
            &Pmu::this_machine(),
        );
        let (r, refused) = open_clock_or_not(&mut o2, |_| Ok(1));
        assert_eq!((r.unwrap(), refused), (1, false));
        assert!(o2.timer.is_some());
        // EINVAL with and without the clock: not the clock's fault.
        let (r, refused) = open_clock_or_not(&mut o2, |_| Err::<u8, _>(einval()));
        assert!(r.is_err() && !refused && o2.timer.is_some());
        // Permission errors are not retried.
        let mut n = 0;
        let (r, _) = open_clock_or_not(&mut o2, |_| {
            n += 1;
            Err::<u8, _>(std::io::Error::from_raw_os_error(libc::EACCES))
        });
        assert!(r.is_err() && n == 1);
    }

    /// cpu-clock sampling works in virtual machines: a spinning thread started
    /// after the sampler is sampled too, with times on the monotonic clock.
    #[test]
    fn cpu_clock_samples_a_busy_thread() {
        let cfg = SampleConfig::new(Event::CpuClock, 100_000, &Pmu::this_machine()).unwrap();
        let t0 = crate::attribution::monotonic_ns();
        let s = LiveSampler::start(cfg, &Pmu::this_machine()).expect("cpu-clock opens");
        let worker = std::thread::spawn(|| {
            let end = std::time::Instant::now() + Duration::from_millis(150);
            let mut x = 0u64;
            while std::time::Instant::now() < end {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            current_tid()
        });
        let tid = worker.join().unwrap();
        let got = s.stop().unwrap();
        assert!(got.monotonic, "this kernel takes CLOCK_MONOTONIC");
        let t1 = crate::attribution::monotonic_ns();
        let mine: Vec<_> = got.samples.iter().filter(|s| s.tid == tid).collect();
        assert!(mine.len() > 50, "{} samples of the busy thread", mine.len());
        assert!(mine
            .iter()
            .all(|s| s.time >= t0 && s.time <= t1 && s.ip != 0));
    }
}
