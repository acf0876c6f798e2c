//! Paper 003's I/O ceiling — the device's random-read rate that its "% of the
//! device's IOPS" claims divide by — measured so that it can be trusted: a warm-up
//! first, then a queue-depth sweep (1, 4, 16, 64, 256 by default) repeated with the
//! depths interleaved (so drift hits every depth alike), the median and min–max spread
//! per depth, and the ceiling taken at the depth with the highest median.
//!
//! The measurement is generic over a [`Probe`]: [`DirectProbe`] reads the database
//! file itself, in its page size, with O_DIRECT through the runtime's io_uring workers
//! (the path the queries' reads take); tests use a fake device with a fixed service
//! rate.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kura_exec::runtime::{open_direct, Runtime};

use crate::error::{At, LabError, LabResult};

/// Runs random reads at one queue depth for a while and reports reads per second.
pub trait Probe {
    fn iops(&self, depth: usize, duration: Duration) -> LabResult<f64>;
}

/// How the ceiling is measured.
#[derive(Debug, Clone)]
pub struct Plan {
    pub depths: Vec<usize>,
    /// Reads at the deepest queue before anything counts (device and host caches,
    /// worker threads and the ring settle).
    pub warmup: Duration,
    /// Length of one measurement at one depth.
    pub duration: Duration,
    /// Measurements per depth (the median is reported).
    pub reps: usize,
}

impl Plan {
    /// The sweep paper 003's knee shows on: depths 1 to 256, 1 s each, 5 times.
    pub fn standard(seconds_per_rep: f64, reps: usize) -> Self {
        Plan {
            depths: vec![1, 4, 16, 64, 256],
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs_f64(seconds_per_rep),
            reps: reps.max(1),
        }
    }
}

/// The repeated measurements at one queue depth.
#[derive(Debug, Clone)]
pub struct DepthResult {
    pub depth: usize,
    pub samples: Vec<f64>,
}

impl DepthResult {
    pub fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        if n == 0 {
            return f64::NAN;
        }
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    }

    pub fn min(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }

    pub fn max(&self) -> f64 {
        self.samples
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// The sweep and the ceiling read off it.
#[derive(Debug, Clone)]
pub struct Ceiling {
    pub sweep: Vec<DepthResult>,
    /// Index into `sweep` of the depth with the highest median.
    pub best: usize,
}

impl Ceiling {
    pub fn at_best(&self) -> &DepthResult {
        &self.sweep[self.best]
    }

    /// The ceiling: the highest median over the depths.
    pub fn iops(&self) -> f64 {
        self.at_best().median()
    }

    /// Its spread: the lowest and highest repetition at that depth.
    pub fn spread(&self) -> (f64, f64) {
        (self.at_best().min(), self.at_best().max())
    }

    /// `iops` as a percentage of the ceiling.
    pub fn percent(&self, iops: f64) -> f64 {
        iops / self.iops() * 100.0
    }

    /// The largest percentage a rate at the ceiling can show, given the spread: a
    /// query printed above this is faster than the device measured, i.e. the
    /// ceiling would be wrong.
    pub fn percent_limit(&self) -> f64 {
        self.spread().1 / self.iops() * 100.0
    }

    /// The median at queue depth `depth`, if swept.
    pub fn median_at(&self, depth: usize) -> Option<f64> {
        self.sweep
            .iter()
            .find(|d| d.depth == depth)
            .map(DepthResult::median)
    }

    /// One line per depth: median, spread, and the sweep as CSV.
    pub fn csv(&self) -> String {
        let mut out = String::from("queue_depth,median_iops,min_iops,max_iops,samples\n");
        for d in &self.sweep {
            let samples: Vec<String> = d.samples.iter().map(|s| format!("{s:.0}")).collect();
            out.push_str(&format!(
                "{},{:.0},{:.0},{:.0},{}\n",
                d.depth,
                d.median(),
                d.min(),
                d.max(),
                samples.join(" ")
            ));
        }
        out
    }
}

/// Measures the ceiling by `plan`; `progress(done, total)` follows the measurements.
pub fn measure(
    probe: &dyn Probe,
    plan: &Plan,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<Ceiling> {
    if plan.depths.is_empty() || plan.depths.contains(&0) {
        return Err(LabError::Invalid(
            "the ceiling needs positive queue depths".into(),
        ));
    }
    let deepest = *plan.depths.iter().max().expect("non-empty");
    if !plan.warmup.is_zero() {
        probe.iops(deepest, plan.warmup)?;
    }
    let mut sweep: Vec<DepthResult> = plan
        .depths
        .iter()
        .map(|&depth| DepthResult {
            depth,
            samples: Vec::new(),
        })
        .collect();
    let total = plan.reps * plan.depths.len();
    for rep in 0..plan.reps {
        for (i, d) in sweep.iter_mut().enumerate() {
            d.samples.push(probe.iops(d.depth, plan.duration)?);
            progress(rep * plan.depths.len() + i + 1, total);
        }
    }
    let best = (0..sweep.len())
        .max_by(|&a, &b| sweep[a].median().total_cmp(&sweep[b].median()))
        .expect("non-empty");
    Ok(Ceiling { sweep, best })
}

/// Random page reads over a database file with O_DIRECT on the runtime's io_uring
/// workers — the same reads, in the same unit, as the queries'.
pub struct DirectProbe<'r> {
    runtime: &'r Runtime,
    file: Arc<File>,
    blocks: u64,
    page: usize,
}

impl<'r> DirectProbe<'r> {
    pub fn open(runtime: &'r Runtime, db_path: &Path, page: usize) -> LabResult<Self> {
        let file = Arc::new(open_direct(db_path).at(db_path.display())?);
        let blocks = file.metadata()?.len() / page as u64;
        if blocks == 0 {
            return Err(LabError::Missing(format!("{} is empty", db_path.display())));
        }
        Ok(DirectProbe {
            runtime,
            file,
            blocks,
            page,
        })
    }
}

impl Probe for DirectProbe<'_> {
    fn iops(&self, depth: usize, duration: Duration) -> LabResult<f64> {
        crate::iops::measure(
            self.runtime,
            &self.file,
            self.blocks,
            self.page,
            depth,
            duration,
        )
        .map(|r| r.iops)
    }
}

#[cfg(test)]
mod tests;
