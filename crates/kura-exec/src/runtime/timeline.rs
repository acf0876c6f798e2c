//! Timeline recorder (paper 003, figures 2 and 3): per interval, CPU busy %
//! summed over the runtime's threads (100 % = one core) and page reads per
//! second (a read-ahead request for a run of pages counts each page, as the
//! buffer manager's read count and the page-read ceiling do); exported as CSV.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use super::fix_stats::reads_in_flight;

/// One interval of a timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelineSample {
    /// End of the interval, from the start of recording.
    pub at: Duration,
    /// CPU time of all runtime threads in the interval, as % of one core.
    pub cpu_busy_pct: f64,
    /// Page reads per second in the interval (a run read with one request
    /// counts each of its pages).
    pub iops: f64,
    /// Asynchronous page reads in flight at the end of the interval (queue depth).
    pub in_flight: u64,
}

/// A recorded timeline.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Nominal sampling interval.
    pub interval: Duration,
    /// Worker threads of the runtime (the maximum busy % is 100 × workers,
    /// plus the query's caller thread: serial pipelines and merges).
    pub workers: usize,
    pub samples: Vec<TimelineSample>,
}

impl Timeline {
    /// `seconds,cpu_busy_pct,iops,in_flight` with a header line.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("seconds,cpu_busy_pct,iops,in_flight\n");
        for s in &self.samples {
            out.push_str(&format!(
                "{:.3},{:.1},{:.0},{}\n",
                s.at.as_secs_f64(),
                s.cpu_busy_pct,
                s.iops,
                s.in_flight
            ));
        }
        out
    }

    /// Writes [`Timeline::to_csv`] to a file.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        std::fs::File::create(path)?.write_all(self.to_csv().as_bytes())
    }

    /// Mean IOPS over the whole recording (time-weighted).
    pub fn mean_iops(&self) -> f64 {
        self.weighted_mean(|s| s.iops)
    }

    /// Mean CPU busy % over the whole recording (time-weighted).
    pub fn mean_cpu_busy_pct(&self) -> f64 {
        self.weighted_mean(|s| s.cpu_busy_pct)
    }

    fn weighted_mean(&self, value: impl Fn(&TimelineSample) -> f64) -> f64 {
        let mut previous = Duration::ZERO;
        let (mut sum, mut total) = (0.0, 0.0);
        for s in &self.samples {
            let width = (s.at - previous).as_secs_f64();
            sum += value(s) * width;
            total += width;
            previous = s.at;
        }
        if total > 0.0 {
            sum / total
        } else {
            0.0
        }
    }
}

/// Live recording state, sampled by the monitor thread.
pub(crate) struct TimelineRecorder {
    start: Instant,
    last: Instant,
    interval: Duration,
    /// CPU ns of all slots at the last sample.
    last_cpu_ns: u64,
    last_completed: u64,
    samples: Vec<TimelineSample>,
}

/// The running totals of a runtime that a recorder samples. The runtime's
/// shared state provides them, which also holds the recorder: a trait, so that
/// this file need not name that state.
pub(crate) trait Totals {
    /// CPU nanoseconds used so far by all the runtime's threads (monotonic).
    fn cpu_ns(&self) -> u64;
    /// Page reads so far, by every thread of the runtime.
    fn pages_read(&self) -> u64;
    /// Worker threads of the runtime.
    fn workers(&self) -> usize;
}

impl TimelineRecorder {
    pub(crate) fn start(totals: &impl Totals, interval: Duration) -> TimelineRecorder {
        let now = Instant::now();
        TimelineRecorder {
            start: now,
            last: now,
            interval: interval.max(Duration::from_millis(1)),
            last_cpu_ns: totals.cpu_ns(),
            last_completed: totals.pages_read(),
            samples: Vec::new(),
        }
    }

    pub(crate) fn next_due(&self) -> Instant {
        self.last + self.interval
    }

    pub(crate) fn sample_if_due(&mut self, totals: &impl Totals, now: Instant) {
        if now >= self.next_due() {
            self.sample(totals, now);
        }
    }

    fn sample(&mut self, totals: &impl Totals, now: Instant) {
        let width = now.duration_since(self.last).as_secs_f64();
        if width <= 0.0 {
            return;
        }
        let cpu = totals.cpu_ns();
        let used = cpu.saturating_sub(self.last_cpu_ns);
        let done = totals.pages_read();
        self.samples.push(TimelineSample {
            at: now.duration_since(self.start),
            cpu_busy_pct: used as f64 / 1e9 / width * 100.0,
            iops: done.saturating_sub(self.last_completed) as f64 / width,
            in_flight: reads_in_flight(),
        });
        self.last = now;
        self.last_cpu_ns = cpu;
        self.last_completed = done;
    }

    pub(crate) fn finish(mut self, totals: &impl Totals) -> Timeline {
        let now = Instant::now();
        if now.duration_since(self.last) >= Duration::from_millis(1) || self.samples.is_empty() {
            self.sample(totals, now.max(self.last + Duration::from_nanos(1)));
        }
        Timeline {
            interval: self.interval,
            workers: totals.workers(),
            samples: self.samples,
        }
    }
}
