//! Pipelines: a source, a linear list of streaming transforms, and a breaker sink
//! (hash build, aggregation, sort, result). Sources split their input into morsels
//! (a row group, a run) and sinks keep per-worker local state merged at the end.
//! A pipeline runs in the context's execution mode (paper 003): `serial` runs every
//! morsel on the calling thread; `static` splits the morsels into one contiguous
//! part per worker before starting; `ooo` spawns a task per morsel on the shared
//! runtime, and a scan task first fixes its pages asynchronously (many reads in
//! flight) before decoding them. Local states are merged in morsel order, so every
//! mode hands the sink the same rows in the same order.
//!
//! With `SET prefetch = on` (the default) an out-of-order scan task also starts the
//! reads of a morsel further ahead (sequential read-ahead) without waiting for them,
//! so the disk keeps work queued beyond what the tasks holding pins ask for; the
//! buffer manager shares each such read with the fix that later needs the page.
//! Serial and static mode read ahead synchronously, as paper 001's DBMS did: before
//! a morsel whose pages were not read ahead, the running thread reads that
//! morsel's pages and those of the following morsels up to `prefetch_window` pages,
//! each run of consecutive pages with one large `pread`, and then decodes them
//! from the pool. No runtime ring is involved, so they stay the synchronous
//! baselines of paper 003 — with fewer, larger reads.

use std::any::Any;
use std::collections::VecDeque;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Instant;

use kura_common::{probe, Batch};
use kura_storage::{BufferManager, PageGuard, PageId, StorageResult};

use crate::cache_class::{classify, flush_lines, CacheClass, Footprint, ScanPolicy};
use crate::context::{ExecContext, ExecutionMode};
use crate::error::{ExecError, ExecResult};
use crate::expr::budget::ValueScope;
use crate::runtime::{self, BoxError, RuntimeError};

/// Receives batches from a source; returns `false` to ask the source to stop early.
pub type Emit<'a> = dyn FnMut(Batch) -> ExecResult<bool> + 'a;

/// Produces the batches of a pipeline, morsel by morsel.
pub trait Source: Send + Sync {
    /// Number of independent units of work.
    fn morsels(&self) -> usize;
    /// Emits the batches of one morsel.
    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()>;
    /// The pages `produce(morsel)` will fix, and their buffer manager, when the
    /// source reads pages: the out-of-order mode fixes them asynchronously first.
    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let _ = morsel;
        None
    }
    /// Whether [`Source::pages_for`] is cheap and names pages read in order (a
    /// table scan's column runs, an index range's leaves): serial and static
    /// mode read such sources ahead. An index join's pages need index searches
    /// to be known, and are random anyway.
    fn sequential(&self) -> bool {
        false
    }
    /// Further pages of `morsel`, known only once the pages of the rounds before
    /// are resident (an index search: first the leaves, then the rows the leaves
    /// name). Called for round 1, 2, ... after [`Source::pages_for`]'s pages are
    /// fixed, until it returns `None`. A source reads what it needs of a round's
    /// pages by the time it names the next round's: only the last round's pages
    /// stay pinned until the morsel has run, and the earlier ones are unpinned
    /// while its task waits for pin budget.
    fn more_pages(
        &self,
        morsel: usize,
        round: usize,
    ) -> ExecResult<Option<(Arc<BufferManager>, Vec<PageId>)>> {
        let _ = (morsel, round);
        Ok(None)
    }
    /// File ranges `produce(morsel)` will read (see [`crate::source::TableSource::file_reads`]):
    /// the out-of-order mode reads them asynchronously first and hands them back with
    /// [`Source::supply`].
    fn file_reads(&self, morsel: usize) -> Vec<crate::source::FileRead> {
        let _ = morsel;
        Vec::new()
    }
    /// The bytes of one of [`Source::file_reads`]' ranges, read.
    fn supply(&self, read: &crate::source::FileRead, data: runtime::AlignedBuf) {
        let _ = (read, data);
    }
    /// Drops a supplied range the morsel has not used.
    fn discard(&self, read: &crate::source::FileRead) {
        let _ = read;
    }
    /// Bytes of a structure every morsel probes again (an index's nodes): what a
    /// cache-sensitive pipeline would keep in the LLC.
    fn reused_bytes(&self) -> u64 {
        0
    }
}

/// A streaming operator: one batch in, one (possibly empty) batch out. `None` means
/// no further input is needed (LIMIT reached).
pub trait Transform: Send + Sync {
    /// One output batch for one input batch; `None` when no more input is wanted
    /// (a LIMIT that is satisfied).
    fn apply(&self, batch: Batch, ctx: &ExecContext) -> ExecResult<Option<Batch>>;

    /// Hands the output of one input batch to `out` in as many batches as it
    /// likes: a transform whose output can be far larger than its input (a cross
    /// join) emits it in pieces, so memory stays bounded and a LIMIT above it
    /// stops the work. `out` answers false when no more is wanted; so does this.
    fn apply_each(
        &self,
        batch: Batch,
        ctx: &ExecContext,
        out: &mut dyn FnMut(Batch) -> ExecResult<bool>,
    ) -> ExecResult<bool> {
        match self.apply(batch, ctx)? {
            Some(b) => out(b),
            None => Ok(false),
        }
    }

    /// Bytes of a structure every batch probes (a join's hash table).
    fn reused_bytes(&self) -> u64 {
        0
    }

    /// The most output rows one input row can make, when that is more than
    /// one and not bounded by keys (a cross or nested-loop join: the build
    /// side's rows): a streamed result then runs a morsel at a time and
    /// passes its rows on as they come.
    fn fan_out(&self) -> usize {
        1
    }

    /// Whether its output depends on seeing the morsels in order (an OFFSET,
    /// a LIMIT of sorted rows): the pipeline then runs them one after the
    /// other in every mode — workers taking morsels as they come would skip
    /// or keep the wrong rows.
    fn needs_morsel_order(&self) -> bool {
        false
    }

    /// Rows emitted once every input batch has passed, from every worker (the
    /// build rows a FULL or RIGHT join matched with no probe row); they flow
    /// through the transforms after this one into the sink. A transform that
    /// wrote rows aside (a hybrid hash join's probe rows of partitions on
    /// disk) finishes writing them here.
    fn tail(&self, ctx: &ExecContext) -> ExecResult<Option<Batch>> {
        let _ = ctx;
        Ok(None)
    }
}

/// Per-worker state of a sink.
pub type LocalState = Box<dyn Any + Send>;

/// The breaker that ends a pipeline.
pub trait Sink: Send + Sync {
    fn local(&self) -> LocalState;
    fn consume(&self, local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()>;
    /// Folds one worker's local state into the shared state.
    fn merge(&self, local: LocalState, ctx: &ExecContext) -> ExecResult<()>;
    /// Called once after every local state is merged.
    fn finish(&self, ctx: &ExecContext) -> ExecResult<()>;
    /// Whether one local state may take every morsel its worker runs, in any
    /// order (what the sink produces does not depend on how morsels were split
    /// among states). In out-of-order mode the caller then merges a state per
    /// worker, not one per morsel.
    fn local_per_worker(&self) -> bool {
        false
    }
}

/// One pipeline, with the plan node ids its parts report statistics to.
pub struct Pipeline {
    pub source: Arc<dyn Source>,
    pub source_node: usize,
    pub transforms: Vec<(usize, Arc<dyn Transform>)>,
    /// Sources whose morsels run after those before them, each feeding the
    /// transforms from its own on (see [`Phase`]); in the order they run.
    pub phases: Vec<Phase>,
    /// The transforms (the first this many) whose tails this pipeline runs
    /// (`None`: all) — a phase of a pipeline leaves the later transforms'
    /// tails to the phase after it.
    pub tails_to: Option<usize>,
}

/// A later source of a pipeline: a hybrid hash join probes the partitions it
/// kept in memory as its probe rows pass and writes the others' rows to disk;
/// once every probe row has passed (and the join's tail ran), the partitions
/// on disk are joined by this source, whose rows go on through the
/// transforms after the join's, into the same sink.
pub struct Phase {
    pub source: Arc<dyn Source>,
    pub source_node: usize,
    /// The first transform its rows pass through.
    pub from: usize,
}

/// Everything a morsel needs, shared by the tasks of one pipeline run.
struct Run {
    source: Arc<dyn Source>,
    source_node: usize,
    transforms: Vec<(usize, Arc<dyn Transform>)>,
    /// Tails run for the first this many transforms (see [`Pipeline::tails_to`]).
    tails_to: usize,
    sink: Arc<dyn Sink>,
    sink_node: usize,
    ctx: ExecContext,
    /// Set when a transform needs no more input (LIMIT): later morsels are skipped.
    stopped: AtomicBool,
    /// The first operator error, kept so the caller sees it rather than its text.
    error: Mutex<Option<ExecError>>,
    /// How many morsels ahead a scan task reads ahead (0: no read-ahead).
    read_ahead: AtomicUsize,
    /// Morsels whose file ranges are read ahead and not yet decoded (see
    /// [`Run::take_file_slot`]).
    file_morsels: AtomicUsize,
    /// The pipeline's cache class, when classes or the scan policy are on.
    class: Option<CacheClass>,
    /// Out-of-order mode, for a sink with [`Sink::local_per_worker`]: each
    /// worker's local state, taken by the morsels it runs.
    worker_locals: Mutex<Vec<Option<LocalState>>>,
}

/// Runs a pipeline's merge (the argument) and may do other work beside it.
pub type AroundMerge<'a> = dyn Fn(&mut dyn FnMut() -> ExecResult<()>) -> ExecResult<()> + 'a;

impl Pipeline {
    /// A pipeline of `source` alone (its node `source_node`).
    pub fn of(source: Arc<dyn Source>, source_node: usize) -> Pipeline {
        Pipeline {
            source,
            source_node,
            transforms: Vec::new(),
            phases: Vec::new(),
            tails_to: None,
        }
    }

    /// The pipeline as its phases, each one of a single source that runs its
    /// transforms' tails only up to the next phase's (the last runs the rest).
    pub fn split_phases(&self) -> Vec<Pipeline> {
        let mut starts = vec![(self.source.clone(), self.source_node, 0)];
        starts.extend(
            self.phases
                .iter()
                .map(|p| (p.source.clone(), p.source_node, p.from)),
        );
        let ends: Vec<Option<usize>> = starts
            .iter()
            .skip(1)
            .map(|&(_, _, from)| Some(from))
            .chain([self.tails_to])
            .collect();
        starts
            .into_iter()
            .zip(ends)
            .map(|((source, source_node, from), end)| Pipeline {
                source,
                source_node,
                transforms: self.transforms[from..].to_vec(),
                phases: Vec::new(),
                tails_to: end.map(|e| e - from),
            })
            .collect()
    }

    /// The product of its transforms' [`Transform::fan_out`].
    pub fn fan_out(&self) -> usize {
        self.transforms
            .iter()
            .fold(1usize, |f, (_, t)| f.saturating_mul(t.fan_out()))
    }

    /// What the pipeline will touch: the pages its source reads in order (when
    /// it names them cheaply) and the structures it probes.
    pub fn footprint(&self) -> Footprint {
        let mut streamed = 0u64;
        if self.source.sequential() {
            for m in 0..self.source.morsels() {
                if let Some((bm, pages)) = self.source.pages_for(m) {
                    streamed += (pages.len() * bm.page_size()) as u64;
                }
            }
        }
        let reused = self.source.reused_bytes()
            + self
                .transforms
                .iter()
                .map(|(_, t)| t.reused_bytes())
                .sum::<u64>();
        Footprint { streamed, reused }
    }

    /// The pipeline's class, if the context asks for classes.
    pub fn cache_class(&self, ctx: &ExecContext) -> Option<CacheClass> {
        ctx.cache
            .active()
            .then(|| classify(self.footprint(), ctx.cache.llc_bytes))
    }

    /// Runs every morsel through the transforms into `sink`, in the context's mode.
    pub fn run(&self, sink: Arc<dyn Sink>, sink_node: usize, ctx: &ExecContext) -> ExecResult<()> {
        self.run_range(sink, sink_node, ctx, 0..self.source.morsels())
            .map(|_| ())
    }

    /// [`Pipeline::run`], with the merge of the workers' results (and the sink's
    /// finish) run inside `around_merge`, which may start other work beside it —
    /// the executor reads the next pipeline's first pages there.
    pub fn run_around_merge(
        &self,
        sink: Arc<dyn Sink>,
        sink_node: usize,
        ctx: &ExecContext,
        around_merge: &AroundMerge,
    ) -> ExecResult<()> {
        self.run_range_around(
            sink,
            sink_node,
            ctx,
            0..self.source.morsels(),
            Some(around_merge),
        )
        .map(|_| ())
    }

    /// Runs the morsels of `range` into `sink` (merged and finished as a whole);
    /// true when a transform wants no more input (a LIMIT is satisfied), so
    /// later morsels need not run. Streaming a result runs one window of
    /// morsels after the other this way.
    pub fn run_range(
        &self,
        sink: Arc<dyn Sink>,
        sink_node: usize,
        ctx: &ExecContext,
        range: Range<usize>,
    ) -> ExecResult<bool> {
        self.run_range_around(sink, sink_node, ctx, range, None)
    }

    fn run_range_around(
        &self,
        sink: Arc<dyn Sink>,
        sink_node: usize,
        ctx: &ExecContext,
        range: Range<usize>,
        around_merge: Option<&AroundMerge>,
    ) -> ExecResult<bool> {
        if !self.phases.is_empty() {
            return self.run_phases(sink, sink_node, ctx, around_merge);
        }
        let mut stopped = false;
        let work = || -> ExecResult<()> {
            let locals = self.run_locals(&sink, sink_node, ctx, range.clone(), &mut stopped)?;
            merge_into(&sink, sink_node, ctx, locals, around_merge)
        };
        on_caller(work)?;
        Ok(stopped)
    }

    /// Runs every phase (see [`Phase`]) one after the other into `sink`, whose
    /// merge and finish follow the last: a later phase starts only once the
    /// one before has run every morsel and its tails.
    fn run_phases(
        &self,
        sink: Arc<dyn Sink>,
        sink_node: usize,
        ctx: &ExecContext,
        around_merge: Option<&AroundMerge>,
    ) -> ExecResult<bool> {
        let mut stopped = false;
        let work = || -> ExecResult<()> {
            let mut locals = Vec::new();
            for phase in self.split_phases() {
                let all = 0..phase.source.morsels();
                locals.extend(phase.run_locals(&sink, sink_node, ctx, all, &mut stopped)?);
                if stopped {
                    break;
                }
            }
            merge_into(&sink, sink_node, ctx, locals, around_merge)
        };
        on_caller(work)?;
        Ok(stopped)
    }

    /// Runs the morsels of `range` — and after the last morsel, the tails — into
    /// local states of `sink`; sets `stopped` when a transform wants no more input.
    fn run_locals(
        &self,
        sink: &Arc<dyn Sink>,
        sink_node: usize,
        ctx: &ExecContext,
        range: Range<usize>,
        stopped: &mut bool,
    ) -> ExecResult<Vec<LocalState>> {
        let morsels = range.len();
        let class = self.cache_class(ctx);
        if let Some(class) = class {
            ctx.cache.count(class);
        }
        let run = Arc::new(Run {
            source: self.source.clone(),
            source_node: self.source_node,
            transforms: self.transforms.clone(),
            tails_to: self.tails_to.unwrap_or(self.transforms.len()),
            sink: sink.clone(),
            sink_node,
            ctx: ctx.clone(),
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
            read_ahead: AtomicUsize::new(0),
            file_morsels: AtomicUsize::new(0),
            class,
            worker_locals: Mutex::new(Vec::new()),
        });
        // Inside a runtime task (a nested query) the runtime cannot be re-entered.
        let on_worker = runtime::current_worker().is_some();
        // One morsel still runs as a task when it reads pages: its fixes are
        // then all in flight at once (an index join over a few probe keys)
        // instead of one synchronous read after the other.
        let single_without_reads = morsels == 1 && self.source.pages_for(range.start).is_none();
        let ordered = self.transforms.iter().any(|(_, t)| t.needs_morsel_order());
        let mode = if morsels == 0 || single_without_reads || on_worker || ordered {
            ExecutionMode::Serial
        } else {
            ctx.mode
        };
        let mut locals = match mode {
            ExecutionMode::Serial => vec![run.part(range.clone())?],
            ExecutionMode::Static => run_static(&run, range.clone())?,
            ExecutionMode::OutOfOrder => run_out_of_order(&run, range.clone())?,
        };
        if range.end == self.source.morsels() && !run.stopped.load(Ordering::Relaxed) {
            locals.extend(run.tails()?);
        }
        *stopped = run.stopped.load(Ordering::Relaxed);
        Ok(locals)
    }
}

/// Merges the workers' `locals` into `sink` and finishes it, inside
/// `around_merge` when given.
fn merge_into(
    sink: &Arc<dyn Sink>,
    sink_node: usize,
    ctx: &ExecContext,
    locals: Vec<LocalState>,
    around_merge: Option<&AroundMerge>,
) -> ExecResult<()> {
    let t0 = Instant::now();
    let _mark = probe::enter(sink_node, sink_node);
    let mut locals = Some(locals);
    let mut merge = || -> ExecResult<()> {
        for local in locals.take().unwrap_or_default() {
            sink.merge(local, ctx)?;
        }
        sink.finish(ctx)
    };
    match around_merge {
        Some(around) => around(&mut merge)?,
        None => merge()?,
    }
    ctx.record(sink_node, |s| s.nanos += t0.elapsed().as_nanos() as u64);
    Ok(())
}

/// Runs `work` on the caller's thread. The caller's thread runs serial
/// pipelines and every merge: its CPU time is counted in the runtime's caller
/// slot (if the runtime runs) so that timelines show that work too, not only
/// the workers'.
fn on_caller(work: impl FnOnce() -> ExecResult<()>) -> ExecResult<()> {
    let on_worker = runtime::current_worker().is_some();
    match runtime::started_shared_runtime() {
        Some(rt) if !on_worker => rt.account_caller(work),
        _ => work(),
    }
}

/// Static mode: contiguous, equal parts of the morsels, one per worker.
fn run_static(run: &Arc<Run>, morsels: Range<usize>) -> ExecResult<Vec<LocalState>> {
    let rt = run.ctx.runtime()?;
    let first = morsels.start;
    let parts: Vec<_> = split_even(morsels.len(), rt.workers())
        .into_iter()
        .map(|r| r.start + first..r.end + first)
        .map(|range| {
            let run = run.clone();
            move || run.part(range).map_err(|e| run.keep(e))
        })
        .collect();
    match rt.run_static(parts) {
        Ok(done) => Ok(done.outputs),
        Err(e) => Err(run.error_of(e)),
    }
}

/// Out-of-order mode: a task per morsel; each keeps its own local state.
/// Morsel tasks spawned at once: a source of a hundred million morsels (a
/// `generate_series` of a trillion rows) runs them a window after the other
/// instead of holding a task and a result slot for each (gigabytes before
/// the first row). A window is long enough that its end costs nothing.
const TASK_WINDOW: usize = 1 << 16;

fn run_out_of_order(run: &Arc<Run>, morsels: Range<usize>) -> ExecResult<Vec<LocalState>> {
    if run.ctx.prefetch {
        run.read_ahead
            .store(read_ahead_distance(run.source.as_ref()), Ordering::Relaxed);
    }
    let mut locals = Vec::new();
    let mut start = morsels.start;
    while start < morsels.end {
        let end = morsels.end.min(start + TASK_WINDOW);
        locals.extend(run_window(run, start..end)?);
        if run.stopped.load(Ordering::Relaxed) {
            break;
        }
        start = end;
    }
    let per_worker =
        std::mem::take(&mut *run.worker_locals.lock().unwrap_or_else(|p| p.into_inner()));
    locals.extend(per_worker.into_iter().flatten());
    Ok(locals)
}

/// One task per morsel of `morsels` on the runtime; their local states in
/// morsel order.
fn run_window(run: &Arc<Run>, morsels: Range<usize>) -> ExecResult<Vec<LocalState>> {
    let rt = run.ctx.runtime()?;
    let first = morsels.start;
    let slots: Arc<Vec<Mutex<Option<LocalState>>>> =
        Arc::new(morsels.clone().map(|_| Mutex::new(None)).collect());
    let (root_run, root_slots) = (run.clone(), slots.clone());
    let result = rt.block_on(async move {
        for morsel in morsels {
            let (run, slots) = (root_run.clone(), root_slots.clone());
            runtime::spawn(async move {
                let local = run
                    .clone()
                    .morsel_task(morsel)
                    .await
                    .map_err(|e| run.keep(e))?;
                *slots[morsel - first]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = local;
                Ok::<(), BoxError>(())
            });
        }
        Ok::<(), BoxError>(())
    });
    if let Err(e) = result {
        return Err(run.error_of(e));
    }
    let slots = Arc::try_unwrap(slots)
        .map_err(|_| ExecError::Internal("a morsel task outlived its pipeline".into()))?;
    Ok(slots
        .into_iter()
        .filter_map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect())
}

/// `count` items as `parts` contiguous ranges whose sizes differ by at most one.
pub fn split_even(count: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1).min(count.max(1));
    let (base, extra) = (count / parts, count % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

impl Run {
    /// Keeps the first operator error for the caller; returns it as the task's error.
    fn keep(&self, e: ExecError) -> BoxError {
        let text = e.to_string();
        let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(e);
        }
        text.into()
    }

    /// The operator error behind a failed run, or the runtime's own (a panic).
    fn error_of(&self, e: RuntimeError) -> ExecError {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(first) => first,
            None => ExecError::Internal(format!("parallel pipeline failed: {e}")),
        }
    }

    /// Runs `morsels` one after the other into one local state, reading ahead
    /// synchronously when `prefetch` is on.
    fn part(&self, morsels: Range<usize>) -> ExecResult<LocalState> {
        let mut local = self.sink.local();
        let window = if self.ctx.prefetch && self.source.sequential() {
            self.ctx.prefetch_window
        } else {
            0
        };
        // Morsels before this one have had their pages read ahead.
        let mut ahead_until = morsels.start;
        for morsel in morsels.clone() {
            if self.stopped.load(Ordering::Relaxed) {
                break;
            }
            if window > 0 && morsel >= ahead_until {
                ahead_until = self.charged(|| self.read_ahead_sync(morsel, morsels.end, window));
            }
            self.morsel(morsel, &mut local)?;
            if self.flushes() {
                self.flush_morsel(morsel);
            }
        }
        Ok(local)
    }

    /// The software policy where CAT is absent: a streaming pipeline's pages leave
    /// the caches as soon as their morsel is decoded.
    fn flushes(&self) -> bool {
        self.class == Some(CacheClass::Streaming) && self.ctx.cache.scan_policy == ScanPolicy::Flush
    }

    fn count_flushed(&self, bytes: usize) {
        self.ctx
            .cache
            .counters
            .flushed_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Flushes the pages of a morsel just run on this thread (they are still
    /// resident: fixing them again is a hit).
    fn flush_morsel(&self, morsel: usize) {
        let Some((bm, pages)) = self.source.pages_for(morsel) else {
            return;
        };
        for page in pages {
            if let Ok(g) = bm.fix(page) {
                flush_lines(&g);
                self.count_flushed(g.len());
            }
        }
    }

    /// Runs `work` (synchronous: it does not suspend) and charges the pages this
    /// thread fixed and read meanwhile to the source: the index searches that name
    /// a morsel's pages, and synchronous read-ahead, happen outside `produce`.
    fn charged<T>(&self, work: impl FnOnce() -> T) -> T {
        let io0 = self.ctx.io_counters();
        let out = work();
        self.ctx.charge_io(self.source_node, io0);
        out
    }

    /// Reads the pages of `from` and of the morsels after it (before `end`), up to
    /// `window` pages beyond `from`'s own, with coalesced synchronous reads;
    /// returns the first morsel not covered. The window is capped at an eighth of
    /// the frames queries may use, so read-ahead does not evict its own pages
    /// before they are decoded.
    fn read_ahead_sync(&self, from: usize, end: usize, window: usize) -> usize {
        let mut pages = Vec::new();
        let mut pool = None;
        let mut next = from;
        let mut own = 0;
        while next < end {
            let Some((bm, more)) = self.source.pages_for(next) else {
                break;
            };
            let window = window.min((bm.available_frames() / 8).max(1));
            if next > from && pages.len() + more.len() > own + window {
                break;
            }
            pages.extend(more);
            if next == from {
                own = pages.len();
            }
            pool = Some(bm);
            next += 1;
        }
        if let Some(bm) = pool {
            // Counted by the buffer manager as prefetch reads.
            bm.prefetch_sync(&pages);
        }
        next.max(from + 1)
    }

    /// A place among the few morsels whose file ranges may be read ahead at once (a few
    /// per worker), held until the morsel has run: every morsel's task starts at once, and
    /// unbounded, their reads would bring the whole file into memory before any is
    /// decoded. `None` when all are taken: the morsel then reads as it decodes.
    fn take_file_slot(&self) -> Option<FileSlot<'_>> {
        let limit = std::thread::available_parallelism().map_or(2, |n| n.get()) * 2;
        let taken = self.file_morsels.fetch_add(1, Ordering::AcqRel);
        let slot = FileSlot(&self.file_morsels);
        (taken < limit).then_some(slot)
    }

    /// One morsel as a task: fixes its pages asynchronously (all at once, so its
    /// reads are in flight together), then runs it over the now resident pages.
    /// With read-ahead on, it first starts the reads of the morsel `read_ahead`
    /// further on, which no task pins yet.
    async fn morsel_task(self: Arc<Self>, morsel: usize) -> ExecResult<Option<LocalState>> {
        if self.stopped.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let ahead = self.read_ahead.load(Ordering::Relaxed);
        if ahead > 0 && morsel + ahead < self.source.morsels() {
            if let Some((bm, pages)) = self.charged(|| self.source.pages_for(morsel + ahead)) {
                read_ahead(bm, pages, self.clone());
            }
        }
        let reads = self.charged(|| self.source.file_reads(morsel));
        let _file_slot = match reads.is_empty() {
            false => self.take_file_slot(),
            true => None,
        };
        if _file_slot.is_some() {
            read_files(self.source.as_ref(), &reads).await?;
        }
        let mut pinned = Vec::new();
        let mut next = self.charged(|| self.source.pages_for(morsel));
        let mut round = 0;
        loop {
            if let Some((bm, mut pages)) = next.take().filter(|(_, p)| !p.is_empty()) {
                let claim = if round == 0 {
                    PinBudget::claim(&bm, pages.len()).await
                } else {
                    // The source is done with the earlier rounds' pages (see
                    // `Source::more_pages`): unpinned, they do not hold budget
                    // while this task waits for its own, so tasks cannot wait
                    // for each other. A round larger than the whole budget pins
                    // what the budget allows and only reads the rest ahead,
                    // which the morsel then fixes as it runs.
                    pinned.clear();
                    let limit = pin_limit(&bm);
                    let claim = PinBudget::claim(&bm, pages.len().min(limit)).await;
                    let rest = pages.split_off(claim.pages);
                    if !rest.is_empty() {
                        read_ahead(bm.clone(), rest, self.clone());
                    }
                    claim
                };
                let (guards, read) = fix_all(&bm, &pages).await.map_err(ExecError::from)?;
                // Reads happen here, before the morsel runs, so EXPLAIN ANALYZE
                // counts them here: `produce` sees the pages already resident.
                self.ctx.record(self.source_node, |s| {
                    s.pages_fixed += guards.len() as u64;
                    s.pages_read += read;
                });
                pinned.push((claim, guards));
            }
            round += 1;
            match self.charged(|| self.source.more_pages(morsel, round))? {
                Some(more) => next = Some(more),
                None => break,
            }
        }
        // The worker's own state when the sink allows one per worker: the
        // morsel runs without suspending, so no other task of this worker
        // touches the state meanwhile.
        let worker = runtime::current_worker().filter(|_| self.sink.local_per_worker());
        let mut local = match worker {
            Some(w) => self.take_worker_local(w),
            None => self.sink.local(),
        };
        let ran = self.morsel(morsel, &mut local);
        if _file_slot.is_some() {
            // What the morsel did not decode (a filter rejected every row before a column
            // was needed) is not kept for later.
            for r in &reads {
                self.source.discard(r);
            }
        }
        let local = match worker {
            Some(w) => {
                self.put_worker_local(w, local);
                None
            }
            None => Some(local),
        };
        ran?;
        if self.flushes() {
            for (_, guards) in &pinned {
                for g in guards {
                    flush_lines(g);
                    self.count_flushed(g.len());
                }
            }
        }
        drop(pinned);
        Ok(local)
    }

    fn take_worker_local(&self, worker: usize) -> LocalState {
        let mut locals = self.worker_locals.lock().unwrap_or_else(|p| p.into_inner());
        locals
            .get_mut(worker)
            .and_then(Option::take)
            .unwrap_or_else(|| self.sink.local())
    }

    fn put_worker_local(&self, worker: usize, local: LocalState) {
        let mut locals = self.worker_locals.lock().unwrap_or_else(|p| p.into_inner());
        if locals.len() <= worker {
            locals.resize_with(worker + 1, || None);
        }
        locals[worker] = Some(local);
    }

    /// Runs one morsel's batches through the transforms into `local`.
    fn morsel(&self, morsel: usize, local: &mut LocalState) -> ExecResult<()> {
        let ctx = &self.ctx;
        if let Some(class) = self.class {
            ctx.cache.enter(class);
        }
        let mut started = Instant::now();
        let mut emit = |batch: Batch| -> ExecResult<bool> {
            ctx.check_cancel()?;
            let src_ns = started.elapsed().as_nanos() as u64;
            ctx.record(self.source_node, |s| {
                s.rows_out += batch.len() as u64;
                s.nanos += src_ns;
            });
            let more = {
                let _values = ValueScope::enter(&ctx.memory);
                self.push(0, batch, local)?
            };
            if !more {
                // Only a transform says "no more" (the sink takes everything).
                self.stopped.store(true, Ordering::Relaxed);
            }
            started = Instant::now();
            Ok(more)
        };
        let _mark = probe::enter(self.source_node, self.sink_node);
        // Filters a source evaluates itself build values too; a morsel is a
        // few batches, so counting them for its whole length is a small excess.
        let _values = ValueScope::enter(&ctx.memory);
        self.source.produce(morsel, ctx, &mut emit)
    }

    /// After the last morsel: each transform's tail rows, in pipeline order,
    /// pushed through the transforms after it (a later transform's tail then
    /// knows of an earlier one's rows), into one more local state.
    fn tails(&self) -> ExecResult<Option<LocalState>> {
        let mut local = None;
        for (i, (node, t)) in self.transforms.iter().enumerate().take(self.tails_to) {
            let Some(batch) = t.tail(&self.ctx)? else {
                continue;
            };
            self.ctx.record(*node, |s| s.rows_out += batch.len() as u64);
            let local = local.get_or_insert_with(|| self.sink.local());
            let _mark = probe::enter(*node, self.sink_node);
            // A tail can be large (every unmatched row of a FULL join's build
            // side): the transforms after it take it a batch at a time, as
            // they take a morsel's rows, so what they build stays bounded.
            let mut more = true;
            for piece in crate::ops::split(batch) {
                let _values = ValueScope::enter(&self.ctx.memory);
                if !self.push(i + 1, piece, local)? {
                    more = false;
                    break;
                }
            }
            if !more {
                self.stopped.store(true, Ordering::Relaxed);
                break;
            }
        }
        Ok(local)
    }

    /// Pushes a batch through transforms `i..` into the sink; false when no
    /// more input is wanted. Each transform is charged its own time, not that
    /// of the operators it feeds.
    fn push(&self, i: usize, batch: Batch, local: &mut LocalState) -> ExecResult<bool> {
        let ctx = &self.ctx;
        let Some((node, t)) = self.transforms.get(i) else {
            let t0 = Instant::now();
            let _mark = probe::enter(self.sink_node, self.sink_node);
            self.sink.consume(local, batch, ctx)?;
            let ns = t0.elapsed().as_nanos() as u64;
            ctx.record(self.sink_node, |s| s.nanos += ns);
            return Ok(true);
        };
        let t0 = Instant::now();
        let mut downstream_ns = 0u64;
        let _mark = probe::enter(*node, self.sink_node);
        let more = t.apply_each(batch, ctx, &mut |b: Batch| {
            ctx.record(*node, |s| s.rows_out += b.len() as u64);
            if b.is_empty() {
                return Ok(true);
            }
            let d0 = Instant::now();
            let more = self.push(i + 1, b, local);
            downstream_ns += d0.elapsed().as_nanos() as u64;
            more
        })?;
        let ns = (t0.elapsed().as_nanos() as u64).saturating_sub(downstream_ns);
        ctx.record(*node, |s| s.nanos += ns);
        Ok(more)
    }
}

/// A morsel's place among those reading file ranges ahead; given back when dropped.
struct FileSlot<'a>(&'a AtomicUsize);

impl Drop for FileSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A boxed future giving a result.
type BoxedResult<'a, T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'a>>;

/// Polls every future from one task until all are done (on a worker, every read is
/// submitted before the task first suspends), their results in order; the first error ends
/// it.
async fn all_of<T, E>(futures: Vec<BoxedResult<'_, T, E>>) -> Result<Vec<T>, E> {
    let mut pending: Vec<_> = futures.into_iter().map(Some).collect();
    let mut done: Vec<Option<T>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(fut) = slot {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(Ok(v)) => {
                        done[i] = Some(v);
                        *slot = None;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(Ok(()))
        }
    })
    .await?;
    Ok(done.into_iter().flatten().collect())
}

/// Reads every range concurrently and hands each to the source.
async fn read_files(source: &dyn Source, reads: &[crate::source::FileRead]) -> ExecResult<()> {
    let futures = reads
        .iter()
        .map(|r| {
            let buf = runtime::AlignedBuf::new(r.len);
            Box::pin(runtime::read_exact_at(r.fd, r.offset, buf)) as BoxedResult<'_, _, _>
        })
        .collect();
    let data = all_of(futures).await.map_err(|e| ExecError::File {
        code: "58030",
        message: format!("could not read file: {e}"),
    })?;
    for (r, d) in reads.iter().zip(data) {
        source.supply(r, d);
    }
    Ok(())
}

/// Fixes every page concurrently from one task: all misses are submitted before
/// the task suspends, and it resumes as their reads complete.
async fn fix_all(
    bm: &Arc<BufferManager>,
    pages: &[PageId],
) -> StorageResult<(Vec<PageGuard>, u64)> {
    let read = Arc::new(AtomicU64::new(0));
    let futures = pages
        .iter()
        .map(|&page| {
            let (bm, read) = (bm.clone(), read.clone());
            Box::pin(async move {
                let (guard, was_read) = runtime::fix_async_reading(&bm, page).await?;
                read.fetch_add(u64::from(was_read), Ordering::Relaxed);
                Ok(guard)
            }) as BoxedResult<'_, _, _>
        })
        .collect();
    let guards = all_of(futures).await?;
    Ok((guards, read.load(Ordering::Relaxed)))
}

/// How many morsels ahead of itself a scan task reads ahead: past the morsels
/// whose tasks already hold pins (the pin budget's worth), so that read-ahead adds
/// reads the disk would not otherwise have queued. `0` when the source reads no pages.
fn read_ahead_distance(source: &dyn Source) -> usize {
    match source.pages_for(0) {
        Some((bm, pages)) if !pages.is_empty() => (pin_limit(&bm) / pages.len()).max(1),
        _ => 0,
    }
}

/// Pages being read ahead by out-of-order scans, across the process.
static READING_AHEAD: AtomicUsize = AtomicUsize::new(0);

/// Starts asynchronous reads of `pages` in a child task and returns at once. The
/// pages read ahead are bounded (an eighth of the buffer), so read-ahead neither
/// takes the frames real fixes need nor evicts what it read before it is used;
/// pages past the bound are not read ahead (their own task reads them).
/// The reads it issues count as the pipeline source's reads in EXPLAIN ANALYZE.
fn read_ahead(bm: Arc<BufferManager>, mut pages: Vec<PageId>, run: Arc<Run>) {
    let limit = (bm.available_frames() / 8).max(1);
    let mut n = 0;
    let claimed = READING_AHEAD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
        n = pages.len().min(limit.saturating_sub(now));
        (n > 0).then_some(now + n)
    });
    if claimed.is_err() {
        return;
    }
    pages.truncate(n);
    runtime::spawn(async move {
        struct Release(usize);
        impl Drop for Release {
            fn drop(&mut self) {
                READING_AHEAD.fetch_sub(self.0, Ordering::AcqRel);
            }
        }
        let _release = Release(n);
        let mut pending: Vec<Option<PrefetchFuture>> = pages
            .into_iter()
            .map(|page| {
                let (bm, run) = (bm.clone(), run.clone());
                Some(Box::pin(async move {
                    if runtime::prefetch_async(&bm, page).await {
                        run.ctx.record(run.source_node, |s| s.pages_read += 1);
                    }
                }) as PrefetchFuture)
            })
            .collect();
        // All reads are submitted before the task first suspends.
        std::future::poll_fn(|cx| {
            let mut waiting = false;
            for slot in pending.iter_mut() {
                if let Some(fut) = slot {
                    match fut.as_mut().poll(cx) {
                        Poll::Ready(()) => *slot = None,
                        Poll::Pending => waiting = true,
                    }
                }
            }
            if waiting {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        Ok::<(), BoxError>(())
    });
}

type PrefetchFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Table pages one morsel of an index fetch (an index scan's slice of rows, an
/// index join's batch of probe keys) should need at most: a quarter of the pin
/// budget, so several morsels have their reads in flight at once. A morsel
/// needing more than its task can pin reads the rest synchronously when it runs,
/// one page after the other, which is what this bound avoids.
pub(crate) fn morsel_page_target(bm: &BufferManager) -> usize {
    (pin_limit(bm) / 4).max(64)
}

/// Frames out-of-order scans may keep pinned ahead of decoding in `bm`.
fn pin_limit(bm: &BufferManager) -> usize {
    // Resident index pages are pinned for good: only the other frames count.
    (bm.available_frames() / 2).max(1)
}

/// Pages pinned by out-of-order scans ahead of decoding, across the process.
static PINNED_AHEAD: AtomicUsize = AtomicUsize::new(0);

/// Tasks waiting for pin budget. They sleep rather than spin, so a worker's CPU
/// goes to tasks whose reads are in, and timelines show real work.
static BUDGET_WAITERS: Mutex<VecDeque<Waker>> = Mutex::new(VecDeque::new());

/// Waiters woken per returned budget: about the morsels the returned pages admit.
const WAKE_PER_RELEASE: usize = 2;

/// A share of the buffer pool a morsel task may keep pinned while its reads are
/// in flight. Bounding the share keeps frames free for eviction: without it, a
/// small buffer would fill with pinned pages of waiting tasks and fixes would fail.
struct PinBudget {
    pages: usize,
}

impl PinBudget {
    async fn claim(bm: &BufferManager, pages: usize) -> PinBudget {
        let limit = pin_limit(bm);
        let mut woken = false;
        std::future::poll_fn(|cx| {
            if Self::try_claim(limit, pages) {
                return Poll::Ready(());
            }
            // A task woken from the front that still does not fit goes back to the
            // front: sent to the back, its morsel would run thousands of morsels
            // late, and the pages it shares with its neighbours (a narrow column's
            // page spans several morsels) would be evicted and read again.
            let again = std::mem::replace(&mut woken, true);
            wait_in_line(&mut lock(&BUDGET_WAITERS), cx.waker().clone(), again);
            // Budget returned since the failed claim woke someone else: try again.
            if Self::try_claim(limit, pages) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        PinBudget { pages }
    }

    fn try_claim(limit: usize, pages: usize) -> bool {
        PINNED_AHEAD
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                // A morsel larger than the whole budget still runs, alone.
                (now + pages <= limit || now == 0).then_some(now + pages)
            })
            .is_ok()
    }
}

impl Drop for PinBudget {
    fn drop(&mut self) {
        let left = PINNED_AHEAD.fetch_sub(self.pages, Ordering::AcqRel) - self.pages;
        // A woken waiter may have claimed already (a stale waker) and waste its wake;
        // when the budget runs empty every waiter is woken, so none sleeps forever.
        let woken: Vec<Waker> = {
            let mut waiters = lock(&BUDGET_WAITERS);
            let n = if left == 0 {
                waiters.len()
            } else {
                WAKE_PER_RELEASE.min(waiters.len())
            };
            waiters.drain(..n).collect()
        };
        for waker in woken {
            waker.wake();
        }
    }
}

/// Queues a task waiting for pin budget: a newcomer at the back, a task that was
/// woken and still does not fit at the front, so tasks claim budget in the order
/// they first asked (see [`PinBudget::claim`]).
fn wait_in_line(waiters: &mut VecDeque<Waker>, waker: Waker, woken_before: bool) {
    match woken_before {
        true => waiters.push_front(waker),
        false => waiters.push_back(waker),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{split_even, wait_in_line};
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// A waker standing for one task (told apart by its allocation).
    struct Named;
    impl Wake for Named {
        fn wake(self: Arc<Self>) {}
    }

    fn names(line: &VecDeque<Waker>, tasks: &[Waker]) -> Vec<usize> {
        line.iter()
            .map(|w| tasks.iter().position(|t| t.will_wake(w)).unwrap())
            .collect()
    }

    #[test]
    fn a_woken_task_that_still_does_not_fit_keeps_its_place() {
        let tasks: Vec<Waker> = (0..4).map(|_| Waker::from(Arc::new(Named))).collect();
        let mut line = VecDeque::new();
        for t in &tasks {
            wait_in_line(&mut line, t.clone(), false);
        }
        // Budget came back: the first two are woken; task 0 still does not fit,
        // task 1 does, and a newcomer (task 3 again, as a stand-in) arrives.
        let first = line.pop_front().unwrap();
        line.pop_front();
        wait_in_line(&mut line, first, true);
        wait_in_line(&mut line, tasks[3].clone(), false);
        assert_eq!(names(&line, &tasks), vec![0, 2, 3, 3]);
    }

    #[test]
    fn even_split_is_contiguous_and_balanced() {
        let parts = split_even(10, 3);
        assert_eq!(parts, vec![0..4, 4..7, 7..10]);
        assert_eq!(split_even(2, 4), vec![0..1, 1..2]);
        assert_eq!(split_even(0, 2), vec![0..0]);
    }
}
