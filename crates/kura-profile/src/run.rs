//! Profiling a workload: named steps (queries) run one after the other while the
//! operator observer counts per operator (counting mode) or logs transitions for
//! the live sampler (sampling mode); the result is a [`Profile`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use kura_common::probe::{self, Mark};

use crate::analyze;
use crate::attribution::{monotonic_ns, OperatorData, OperatorObserver};
use crate::counters::{CounterSource, Counts};
use crate::events::{Event, Pmu};
use crate::records::Sample;
use crate::report::{OperatorRow, Profile, QueryProfile, FORMAT_VERSION};
use crate::sampling::{LiveSampler, SampleConfig};
use crate::symbolize::{ProcessSymbolizer, Symbolize};
use crate::ProfileError;

/// One unit of the workload: a query, run by the caller's closure.
pub struct Step<'a> {
    pub name: String,
    pub run: Box<dyn FnMut() -> Result<(), String> + 'a>,
}

/// How to profile.
pub struct Options {
    pub pmu: Pmu,
    /// Sampling mode with this event and period; counting mode without.
    pub sample: Option<SampleConfig>,
    /// Where counter groups come from (the kernel, or recorded values in tests).
    pub source: Arc<dyn CounterSource>,
    /// Rows per table.
    pub top: usize,
    /// The workspace, to print the text of hot source lines.
    pub source_root: Option<PathBuf>,
}

/// Keeps the observer installed while the workload runs.
pub(crate) fn install(obs: Arc<OperatorObserver>) -> Result<probe::Installed, ProfileError> {
    probe::install(obs).ok_or_else(|| {
        ProfileError::Unavailable("another profile is already running in this process".into())
    })
}

/// Runs the steps under the profiler.
pub fn profile(steps: &mut [Step<'_>], opts: &Options) -> Result<Profile, ProfileError> {
    let group = opts.pmu.counting_group();
    let counting = opts.sample.is_none();
    let observer = Arc::new(OperatorObserver::new(
        counting.then(|| (opts.source.clone(), group.clone())),
        !counting,
    ));
    let installed = install(observer.clone())?;
    let sampler = match opts.sample {
        Some(cfg) => Some(LiveSampler::start(cfg, &opts.pmu)?),
        None => None,
    };
    let mut queries = Vec::new();
    let mut windows: Vec<(u64, u64, OperatorData)> = Vec::new();
    for step in steps.iter_mut() {
        observer.take();
        let mut process = opts.source.open_process(&group)?;
        let before = process.read()?;
        let (t0, clock) = (monotonic_ns(), Instant::now());
        (step.run)().map_err(|e| ProfileError::Invalid(format!("{}: {e}", step.name)))?;
        let wall_ms = clock.elapsed().as_secs_f64() * 1e3;
        let t1 = monotonic_ns();
        let after = process.read()?;
        let delta: Vec<u64> = after
            .iter()
            .zip(&before)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let totals = Counts::from_values(&group, &delta);
        let data = observer.take();
        if let Some(e) = &data.error {
            return Err(ProfileError::Unavailable(e.clone()));
        }
        let (operators, pipelines) = count_rows(&data);
        queries.push(QueryProfile {
            name: step.name.clone(),
            wall_ms,
            totals,
            operators,
            pipelines,
            samples: 0,
        });
        windows.push((t0, t1, data));
    }
    drop(installed);
    let mut profile = Profile {
        version: FORMAT_VERSION,
        mode: if counting { "counting" } else { "sampling" }.into(),
        events: match opts.sample {
            Some(cfg) => vec![cfg.event],
            None => group,
        },
        period: opts.sample.map(|c| c.period),
        note: opts.pmu.note(),
        queries,
        ..Default::default()
    };
    if let (Some(sampler), Some(cfg)) = (sampler, opts.sample) {
        let drained = sampler.stop()?;
        profile.lost_samples = drained.lost;
        let mut sym = ProcessSymbolizer::default();
        let in_steps: Vec<Sample> = drained
            .samples
            .into_iter()
            .filter(|s| windows.iter().any(|(a, b, _)| s.time >= *a && s.time <= *b))
            .collect();
        for (q, (t0, t1, data)) in profile.queries.iter_mut().zip(&windows) {
            let mine: Vec<&Sample> = in_steps
                .iter()
                .filter(|s| s.time >= *t0 && s.time <= *t1)
                .collect();
            q.samples = mine.len() as u64;
            (q.operators, q.pipelines) = analyze::operator_rows(&mine, data, &mut sym);
        }
        fill_sample_tables(&mut profile, &in_steps, cfg, &mut sym, opts);
    }
    Ok(profile)
}

/// Functions, lines and miss sites of the samples.
pub fn fill_sample_tables(
    profile: &mut Profile,
    samples: &[Sample],
    cfg: SampleConfig,
    sym: &mut dyn Symbolize,
    opts: &Options,
) {
    profile.samples = samples.len() as u64;
    let ns = cfg.event.is_time().then_some(cfg.period);
    profile.functions = analyze::functions(samples, sym, ns);
    let root = opts.source_root.clone();
    profile.lines = analyze::lines(
        samples,
        sym,
        &mut |place| root.as_deref().and_then(|r| analyze::source_line(r, place)),
        opts.top,
    );
    profile.miss_sites = analyze::miss_sites(samples, sym);
}

/// Operator and pipeline rows from counts per mark, most CPU first.
fn count_rows(data: &OperatorData) -> (Vec<OperatorRow>, Vec<OperatorRow>) {
    let mut ops: HashMap<u32, Counts> = HashMap::new();
    let mut pipes: HashMap<u32, Counts> = HashMap::new();
    for (mark, c) in &data.counts {
        ops.entry(mark.node).or_default().add(c);
        pipes.entry(mark.pipeline).or_default().add(c);
    }
    let weight = |c: &Counts| {
        c.get(Event::Cycles)
            .or(c.get(Event::TaskClock))
            .unwrap_or(0)
    };
    let rows = |m: HashMap<u32, Counts>, pipeline: bool| {
        let mut v: Vec<OperatorRow> = m
            .into_iter()
            .map(|(node, counts)| OperatorRow {
                node: (node != Mark::IDLE.node).then_some(node),
                label: if pipeline && node != Mark::IDLE.node {
                    format!("pipeline into {}", data.label(node))
                } else {
                    data.label(node)
                },
                counts,
                samples: 0,
            })
            .collect();
        v.sort_by(|a, b| {
            weight(&b.counts)
                .cmp(&weight(&a.counts))
                .then(a.label.cmp(&b.label))
        });
        v
    };
    (rows(ops, false), rows(pipes, true))
}
