//! Profiling a workload: named steps (queries) run one after the other while the
//! operator observer counts per operator (counting mode) or logs transitions for
//! the live sampler (sampling mode); the result is a [`Profile`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use kura_common::memobj;
use kura_common::probe::{self, Mark};

use crate::analyze;
use crate::attribution::{monotonic_ns, OperatorData, OperatorObserver};
use crate::counters::{CounterSource, Counts};
use crate::events::{Event, Pmu};
use crate::objects::{object_tables, ObjectLog, PageName};
use crate::records::Sample;
use crate::report::{OperatorRow, Profile, QueryProfile, FORMAT_VERSION};
use crate::sampling::{LiveSampler, SampleConfig, CLOCK_REFUSED};
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
    /// Load sampling: builds, at the end of the run, what names buffer pages
    /// (their column or index; the caller knows the database). Without it
    /// pages are named by number.
    pub page_names: Option<PageNamer>,
}

/// Builds a page namer (see [`Options::page_names`]).
pub type PageNamer = Box<dyn Fn() -> Result<Box<dyn Fn(u64) -> PageName>, String>>;

/// Keeps the memory-object registry on while a load-sampling profile runs,
/// and turns it off however the run ends.
struct RegistryOn;

impl RegistryOn {
    /// A caller that turned the registry on already (to see the registrations
    /// of a warm-up run: pages it brought into the pool stay there) keeps its
    /// log; otherwise what an earlier run left is dropped.
    fn start() -> RegistryOn {
        if !memobj::enabled() {
            memobj::take_timed_log();
            memobj::enable(true);
        }
        RegistryOn
    }
}

impl Drop for RegistryOn {
    fn drop(&mut self) {
        memobj::enable(false);
    }
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
    // Only precise load samples carry data addresses worth naming.
    let registry = opts
        .sample
        .is_some_and(|c| c.event == Event::MemLoads)
        .then(RegistryOn::start);
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
    let object_log = registry.map(|r| {
        drop(r);
        let namer = opts.page_names.as_ref().map(|build| build());
        let log = match &namer {
            Some(Ok(name)) => ObjectLog::take(Some(name.as_ref())),
            _ => ObjectLog::take(None),
        };
        (log, namer.and_then(|n| n.err()))
    });
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
        if !drained.monotonic {
            // Times on the kernel's own clock say nothing about queries,
            // operators or registry events: only the whole-run tables (the
            // report prints the note).
            profile.objects_note = Some(CLOCK_REFUSED.into());
            fill_sample_tables(&mut profile, &drained.samples, cfg, &mut sym, opts);
            return Ok(profile);
        }
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
        if let Some((log, naming_error)) = object_log {
            let names: Vec<String> = profile.queries.iter().map(|q| q.name.clone()).collect();
            fill_object_tables(&mut profile, &in_steps, &log, &windows_of(&windows, &names));
            if let Some(e) = naming_error {
                profile.objects_note = Some(format!("buffer pages are not named: {e}"));
            }
        }
    }
    Ok(profile)
}

/// A query's time window, its name and what its operators did.
pub struct Window<'a> {
    pub start: u64,
    pub end: u64,
    pub query: &'a str,
    pub operators: &'a OperatorData,
}

fn windows_of<'a>(windows: &'a [(u64, u64, OperatorData)], names: &'a [String]) -> Vec<Window<'a>> {
    windows
        .iter()
        .zip(names)
        .map(|((start, end, operators), query)| Window {
            start: *start,
            end: *end,
            query,
            operators,
        })
        .collect()
}

/// The per-object tables of load samples: each sample's data address named by
/// the registry `log` at its time, its operator by the query window it fell in
/// (prefixed by the query's name when there are several).
pub fn fill_object_tables(
    profile: &mut Profile,
    samples: &[Sample],
    log: &ObjectLog,
    windows: &[Window<'_>],
) {
    let several = windows.len() > 1;
    let refs: Vec<&Sample> = samples.iter().collect();
    (profile.objects, profile.operator_objects) = object_tables(&refs, log, &mut |s| match windows
        .iter()
        .find(|w| s.time >= w.start && s.time <= w.end)
    {
        Some(w) => {
            let label = w.operators.label(w.operators.mark_at(s.tid, s.time).node);
            if several {
                format!("{}: {label}", w.query)
            } else {
                label
            }
        }
        None => "(outside queries)".into(),
    });
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
    // Classes need the addresses of load samples and this machine's geometry.
    if samples
        .iter()
        .any(|s| s.addr.is_some() && s.level.is_some())
    {
        let root = std::path::Path::new(kura_cache::cpu::SYSFS_CACHE_DIR);
        match kura_cache::cpu::read_sysfs(root) {
            Ok(caches) => {
                let levels = kura_cache::cpu::geometry::data_hierarchy(&caches);
                profile.miss_classes = crate::missclass::classify(samples, &levels, opts.top);
            }
            Err(e) => {
                profile.objects_note.get_or_insert(format!(
                    "no miss classes: the cache geometry is unreadable ({e})"
                ));
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use kura_common::memobj::{Object, ObjectKind};

    /// The registry is on for the run and off after it; a log the caller began
    /// (a warm-up's registrations) is kept, one left from before is dropped,
    /// and taking it names buffer pages. (The only unit test of this crate that
    /// turns the process-wide registry on.)
    #[test]
    fn the_registry_runs_with_the_profile_and_keeps_a_warm_up_log() {
        let mine = |log: &ObjectLog, start: u64| {
            log.events
                .iter()
                .filter(|t| matches!(&t.event, memobj::Event::Map { start: s, .. } if *s == start))
                .count()
        };
        memobj::enable(true);
        memobj::register(0x1000, 64, || Object::frame(0, 7, None));
        memobj::enable(false);
        // Left from before and the registry is off: dropped at the start.
        let on = RegistryOn::start();
        assert!(memobj::enabled());
        memobj::register(0x2000, 64, || {
            Object::new(ObjectKind::HashTable, "chain array").with_operator("hash join build on k")
        });
        drop(on);
        assert!(!memobj::enabled());
        let log = ObjectLog::take(None);
        assert_eq!((mine(&log, 0x1000), mine(&log, 0x2000)), (0, 1));
        // Turned on by the caller before a warm-up: kept, and pages named.
        memobj::enable(true);
        memobj::register(0x3000, 64, || Object::frame(0, 7, None));
        let on = RegistryOn::start();
        drop(on);
        let name: &dyn Fn(u64) -> PageName =
            &|p| (p == 7).then(|| ("lineitem.l_tax".to_string(), Some("column".to_string())));
        let log = ObjectLog::take(Some(name));
        assert_eq!(mine(&log, 0x3000), 1);
        assert!(log.events.iter().any(|t| matches!(&t.event,
            memobj::Event::Map { object, .. } if object.name == "lineitem.l_tax")));
        assert!(!log.maps.is_empty(), "this process's map is read");
    }
}
