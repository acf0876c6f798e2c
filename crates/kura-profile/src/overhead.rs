//! The profiler's own overhead (paper 002's future work): the same workload with
//! no profiling, counting only, and sampling at several periods; medians of
//! several runs, the overhead of each mode, and the finest period that stays
//! within the 3 % budget.

use std::sync::Arc;
use std::time::Instant;

use crate::api::Profiler;
use crate::attribution::OperatorObserver;
use crate::counters::PerfSource;
use crate::events::{Event, Pmu};
use crate::report::OverheadRow;
use crate::run::install;
use crate::sampling::{LiveSampler, SampleConfig};
use crate::ProfileError;

/// The overhead budget of the default sampling period, in per cent.
pub const BUDGET_PCT: f64 = 3.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Counting,
    Sampling(u64),
}

impl Mode {
    fn name(self, event: Event) -> String {
        match self {
            Mode::Off => "no profiling".into(),
            Mode::Counting => "counting".into(),
            Mode::Sampling(p) if event.is_time() => {
                format!("sampling {} every {} µs", event.name(), p / 1000)
            }
            Mode::Sampling(p) => format!("sampling {} every {p}", event.name()),
        }
    }
}

/// Median of a non-empty list.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// CPU time of the whole process so far (every thread, user and system), ms.
fn process_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Wall and CPU time of one workload run, ms.
fn timed(workload: &mut dyn FnMut() -> Result<(), String>) -> Result<(f64, f64), ProfileError> {
    let (t, c) = (Instant::now(), process_cpu_ms());
    workload().map_err(|e| ProfileError::Invalid(format!("the workload failed: {e}")))?;
    Ok((t.elapsed().as_secs_f64() * 1e3, process_cpu_ms() - c))
}

/// One timed run of the workload in `mode`; the samples taken, if sampling.
/// Only the workload is timed: opening and closing the counters is a fixed
/// cost per profile, not a slowdown of the profiled code.
fn run_once(
    mode: Mode,
    event: Event,
    pmu: &Pmu,
    workload: &mut dyn FnMut() -> Result<(), String>,
) -> Result<((f64, f64), Option<u64>), ProfileError> {
    match mode {
        Mode::Off => Ok((timed(workload)?, None)),
        Mode::Counting => {
            let group = pmu.counting_group();
            let obs = Arc::new(OperatorObserver::new(
                Some((Arc::new(PerfSource), group.clone())),
                false,
            ));
            let installed = install(obs)?;
            let totals = Profiler::start(&group)?;
            let ms = timed(workload)?;
            totals.stop()?;
            drop(installed);
            Ok((ms, None))
        }
        Mode::Sampling(period) => {
            let obs = Arc::new(OperatorObserver::new(None, true));
            let installed = install(obs)?;
            let cfg = SampleConfig::new(event, period, pmu)?;
            let sampler = LiveSampler::start(cfg, pmu)?;
            let ms = timed(workload)?;
            let drained = sampler.stop()?;
            drop(installed);
            Ok((ms, Some(drained.samples.len() as u64)))
        }
    }
}

/// Runs the workload `runs` times in each mode (modes interleaved, so that drift
/// of a shared machine hits them alike) after one untimed warm-up run. Returns
/// the table and the finest period within [`BUDGET_PCT`].
pub fn measure(
    workload: &mut dyn FnMut() -> Result<(), String>,
    pmu: &Pmu,
    event: Event,
    periods: &[u64],
    runs: usize,
) -> Result<(Vec<OverheadRow>, Option<u64>), ProfileError> {
    if periods.contains(&0) {
        return Err(ProfileError::Invalid(
            "the sampling period must be at least 1 (0 would never sample)".into(),
        ));
    }
    let runs = runs.max(1);
    let mut modes = vec![Mode::Off, Mode::Counting];
    modes.extend(periods.iter().map(|p| Mode::Sampling(*p)));
    run_once(Mode::Off, event, pmu, workload)?;
    let mut times = vec![Vec::new(); modes.len()];
    let mut cpu = vec![Vec::new(); modes.len()];
    let mut samples = vec![Vec::new(); modes.len()];
    for _ in 0..runs {
        for (i, m) in modes.iter().enumerate() {
            let ((ms, cpu_ms), n) = run_once(*m, event, pmu, workload)?;
            times[i].push(ms);
            cpu[i].push(cpu_ms);
            samples[i].extend(n.map(|n| n as f64));
        }
    }
    let base = median(&mut times[0].clone());
    let cpu_base = median(&mut cpu[0].clone());
    let over = |v: f64, base: f64| {
        if base > 0.0 {
            (v / base - 1.0) * 100.0
        } else {
            0.0
        }
    };
    let mut rows = Vec::new();
    let mut chosen = None;
    for (i, m) in modes.iter().enumerate() {
        let med = median(&mut times[i]);
        let pct = over(med, base);
        let cpu_med = median(&mut cpu[i]);
        let cpu_pct = over(cpu_med, cpu_base);
        if let Mode::Sampling(p) = m {
            // The finest period (most samples) within budget, judged on CPU
            // time: wall time on a shared machine moves by more than the budget.
            if cpu_pct <= BUDGET_PCT && chosen.is_none_or(|c| *p < c) {
                chosen = Some(*p);
            }
        }
        rows.push(OverheadRow {
            mode: m.name(event),
            runs,
            median_ms: med,
            overhead_pct: pct,
            samples: (!samples[i].is_empty()).then(|| median(&mut samples[i]) as u64),
            median_cpu_ms: cpu_med,
            cpu_overhead_pct: cpu_pct,
        });
    }
    Ok((rows, chosen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
