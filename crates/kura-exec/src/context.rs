//! Per-query execution context: the cancel flag, the memory budget that hash tables
//! and sorts are counted against, per-operator statistics for EXPLAIN ANALYZE, and
//! the execution mode (serial, static, out-of-order — paper 003) with the shared
//! task runtime the parallel modes run on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{ExecError, ExecResult};

/// Bytes that memory-hungry operators (hash tables, aggregation, sort, collected
/// results) have reserved. A query's tracker may have a parent shared by every
/// query of the process (the server-wide budget): a reservation counts against
/// both, and what a query holds goes back to the parent when its tracker drops.
#[derive(Debug)]
pub struct MemoryTracker {
    limit: u64,
    used: AtomicU64,
    peak: AtomicU64,
    parent: Option<Arc<MemoryTracker>>,
}

impl MemoryTracker {
    pub fn new(limit: u64) -> Self {
        MemoryTracker {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            parent: None,
        }
    }

    /// A query's tracker whose reservations also count against `parent`.
    pub fn with_parent(limit: u64, parent: Arc<MemoryTracker>) -> Self {
        MemoryTracker {
            limit,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            parent: Some(parent),
        }
    }

    /// Reserves `bytes` for `what`, failing once the query's total passes its
    /// limit or the shared total passes the shared limit.
    pub fn reserve(&self, bytes: u64, what: &'static str) -> ExecResult<()> {
        let now = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        // The parent is charged even when this query is over its own limit, so
        // that dropping this tracker gives back exactly what it counted.
        let shared = self.parent.as_ref().map(|p| p.add(bytes));
        if now > self.limit {
            return Err(ExecError::OutOfMemory {
                what,
                limit: self.limit,
            });
        }
        if let (Some(p), Some(total)) = (&self.parent, shared) {
            if total > p.limit {
                return Err(ExecError::OutOfSharedMemory {
                    what,
                    limit: p.limit,
                });
            }
        }
        Ok(())
    }

    /// Fails if `bytes` more would pass the query's or the shared limit, without
    /// reserving them: asked before allocating something whose size is known.
    pub fn check_room(&self, bytes: u64, what: &'static str) -> ExecResult<()> {
        if self.used().saturating_add(bytes) > self.limit {
            return Err(ExecError::OutOfMemory {
                what,
                limit: self.limit,
            });
        }
        if let Some(p) = &self.parent {
            if p.used().saturating_add(bytes) > p.limit {
                return Err(ExecError::OutOfSharedMemory {
                    what,
                    limit: p.limit,
                });
            }
        }
        Ok(())
    }

    /// Bytes that may still be reserved before the query's or the shared
    /// limit is reached.
    pub fn room(&self) -> u64 {
        let own = self.limit.saturating_sub(self.used());
        match &self.parent {
            Some(p) => own.min(p.limit.saturating_sub(p.used())),
            None => own,
        }
    }

    /// Reserves `bytes` only if they fit under the query's and the shared
    /// limit, counting nothing when they do not. For operators that spill
    /// instead of failing: a reservation refused after being counted (as
    /// [`MemoryTracker::reserve`] does) pushes the total past the limit for
    /// a moment, and a reservation another worker makes in that moment
    /// fails for memory nobody holds.
    pub fn try_reserve(&self, bytes: u64) -> bool {
        if !Self::add_within(&self.used, bytes, self.limit) {
            return false;
        }
        if let Some(p) = &self.parent {
            if !Self::add_within(&p.used, bytes, p.limit) {
                self.release_own(bytes);
                return false;
            }
            p.peak.fetch_max(p.used(), Ordering::Relaxed);
        }
        self.peak.fetch_max(self.used(), Ordering::Relaxed);
        true
    }

    /// Adds `bytes` to `used` if the sum stays within `limit`.
    fn add_within(used: &AtomicU64, bytes: u64, limit: u64) -> bool {
        used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
            u.checked_add(bytes).filter(|&now| now <= limit)
        })
        .is_ok()
    }

    fn release_own(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    /// Counts `bytes` already allocated, even past the limit: what is held
    /// then makes the next reservation fail, not this one.
    pub fn charge(&self, bytes: u64) {
        self.add(bytes);
        if let Some(p) = &self.parent {
            p.add(bytes);
        }
    }

    fn add(&self, bytes: u64) -> u64 {
        let now = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        now
    }

    pub fn release(&self, bytes: u64) {
        let mut released = 0;
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                released = u.min(bytes);
                Some(u - released)
            });
        if let Some(p) = &self.parent {
            p.release(released);
        }
    }

    /// The most this query may hold: its own limit, or the shared one when
    /// that is smaller (a query under `1TB` on a server of `256MB`).
    pub fn limit(&self) -> u64 {
        match &self.parent {
            Some(p) => self.limit.min(p.limit),
            None => self.limit,
        }
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// What one spilling operator (a hash join's build side, an aggregation, a
/// sort, a window) holds of its query's memory. It spills past a share of what
/// the query leaves *it* — its own bytes plus the room left — not past a share
/// of what the whole query holds: another operator's table is not its to free,
/// and counting it made operators spill while they held little.
#[derive(Debug, Default)]
pub struct OwnShare {
    held: AtomicU64,
}

impl OwnShare {
    /// Reserves `bytes` from `memory` as this operator's (counted here even
    /// when the reservation fails: the tracker keeps them too).
    pub fn reserve(
        &self,
        memory: &MemoryTracker,
        bytes: u64,
        what: &'static str,
    ) -> ExecResult<()> {
        self.counted(bytes);
        memory.reserve(bytes, what)
    }

    /// Reserves `bytes` as this operator's only if they fit (see
    /// [`MemoryTracker::try_reserve`]); nothing is counted when they do not.
    pub fn try_reserve(&self, memory: &MemoryTracker, bytes: u64) -> bool {
        let fits = memory.try_reserve(bytes);
        if fits {
            self.counted(bytes);
        }
        fits
    }

    /// Gives `bytes` of this operator's back to `memory`.
    pub fn release(&self, memory: &MemoryTracker, bytes: u64) {
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                Some(h.saturating_sub(bytes))
            });
        memory.release(bytes);
    }

    /// Counts `bytes` the operator reserved from the tracker itself.
    pub fn counted(&self, bytes: u64) {
        self.held.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Hands every byte held to the caller, who gives them back (a built
    /// join table holds its reservation until dropped).
    pub fn take(&self) -> u64 {
        self.held.swap(0, Ordering::Relaxed)
    }

    /// Whether `extra` more bytes take this operator past `num / den` of what
    /// the query (and all queries together) leave it: its own bytes plus the
    /// room left. Alone in its query that is `num / den` of the limit; the
    /// rest is for reading its spilled data back.
    pub fn past(&self, memory: &MemoryTracker, extra: u64, num: u64, den: u64) -> bool {
        let own = self.held();
        own.saturating_add(extra) > memory.room().saturating_add(own) / den * num
    }
}

impl Drop for MemoryTracker {
    fn drop(&mut self) {
        if let Some(p) = &self.parent {
            p.release(self.used.load(Ordering::Relaxed));
        }
    }
}

/// Counters of one plan node, filled while the plan runs (EXPLAIN ANALYZE).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorStats {
    pub rows_out: u64,
    pub nanos: u64,
    pub pages_fixed: u64,
    pub pages_read: u64,
    pub skipped_rows: u64,
    /// Scanned rows dropped because a join above had no match for their key
    /// (join-filter pushdown).
    pub join_filtered_rows: u64,
    /// Bytes written to temporary files (an aggregation past its memory).
    pub spilled_bytes: u64,
    /// Temporary files written.
    pub spill_files: u64,
    /// Sorted runs a sort wrote to temporary files.
    pub spill_runs: u64,
    /// Merge passes over a sort's spilled runs.
    pub spill_merge_passes: u64,
    /// Probe rows of a spilled hash join left unwritten: the build side's
    /// key set (see [`crate::spill::key_set`]) holds no key of theirs.
    pub unspilled_probe_rows: u64,
    /// A hybrid hash join's partitions (of 32) kept in memory, probed as the
    /// probe rows passed; the others were written to disk.
    pub partitions_in_memory: u64,
}

/// Page counters of the buffer manager, read before and after a unit of
/// synchronous work to attribute page fixes and reads to an operator.
pub trait IoCounters: Send + Sync {
    /// (pages fixed, pages read) by the calling thread so far; monotonically
    /// increasing. Per thread, because the other workers fix and read pages
    /// during the same unit of work.
    fn counters(&self) -> (u64, u64);
}

/// Node id of pipeline parts that report to no plan node (materialised inputs).
pub const NO_NODE: usize = usize::MAX;

/// Answers "has the session asked to cancel?".
pub type CancelCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// How pipelines are run (the session setting `execution_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// Every morsel on the calling thread, synchronous reads.
    Serial,
    /// The morsels split into one contiguous part per worker before execution.
    Static,
    /// A task per morsel on the out-of-order runtime; scans fix pages asynchronously.
    #[default]
    OutOfOrder,
}

impl ExecutionMode {
    /// Parses a value of the `execution_mode` setting.
    pub fn parse(value: &str) -> Option<ExecutionMode> {
        match value.to_ascii_lowercase().as_str() {
            "serial" => Some(ExecutionMode::Serial),
            "static" => Some(ExecutionMode::Static),
            "ooo" => Some(ExecutionMode::OutOfOrder),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ExecutionMode::Serial => "serial",
            ExecutionMode::Static => "static",
            ExecutionMode::OutOfOrder => "ooo",
        }
    }
}

/// Everything an operator may consult while running. Cloning is cheap and the
/// clones share the cancel flag, memory budget and statistics: a parallel
/// pipeline hands one clone to each of its tasks.
#[derive(Clone)]
pub struct ExecContext {
    cancel: CancelCheck,
    pub memory: Arc<MemoryTracker>,
    stats: Arc<Mutex<Vec<OperatorStats>>>,
    pub io: Option<Arc<dyn IoCounters>>,
    pub mode: ExecutionMode,
    /// Sequential read-ahead for scans (the session setting `prefetch`): in `ooo`
    /// mode a scan task also starts the reads of a later morsel without waiting.
    pub prefetch: bool,
    /// Pages a serial or static scan reads ahead of the morsel it runs
    /// (`prefetch_window`), with synchronous, coalesced reads.
    pub prefetch_window: usize,
    /// Per-pipeline LLC classes and the software scan policy (off by default).
    pub cache: crate::cache_class::CacheClasses,
    /// Where operators spill, shared by the query's operators.
    pub spill: Arc<crate::spill::SpillConfig>,
}

impl ExecContext {
    pub fn new(cancel: Arc<AtomicBool>, memory_limit: u64) -> Self {
        Self::with_cancel_check(
            Arc::new(move || cancel.load(Ordering::Relaxed)),
            memory_limit,
        )
    }

    /// A context whose cancellation is asked of `cancel` (e.g. a session's handle).
    pub fn with_cancel_check(cancel: CancelCheck, memory_limit: u64) -> Self {
        ExecContext {
            cancel,
            memory: Arc::new(MemoryTracker::new(memory_limit)),
            stats: Arc::new(Mutex::new(Vec::new())),
            io: None,
            mode: ExecutionMode::default(),
            prefetch: true,
            prefetch_window: kura_common::settings::default_prefetch_window(),
            cache: Default::default(),
            spill: Default::default(),
        }
    }

    /// A context with no limit and a private cancel flag (tests, constant folding).
    pub fn unbounded() -> Self {
        Self::new(Arc::new(AtomicBool::new(false)), u64::MAX)
    }

    /// Counts this query's memory also against `shared` (the budget all running
    /// queries share).
    pub fn with_shared_memory(mut self, shared: Arc<MemoryTracker>) -> Self {
        self.memory = Arc::new(MemoryTracker::with_parent(self.memory.limit, shared));
        self
    }

    pub fn with_io(mut self, io: Arc<dyn IoCounters>) -> Self {
        self.io = Some(io);
        self
    }

    pub fn with_mode(mut self, mode: ExecutionMode) -> Self {
        self.mode = mode;
        self
    }

    pub fn with_prefetch_window(mut self, pages: usize) -> Self {
        self.prefetch_window = pages;
        self
    }

    /// Per-pipeline LLC classes and the software scan policy.
    pub fn with_cache_classes(mut self, cache: crate::cache_class::CacheClasses) -> Self {
        self.cache = cache;
        self
    }

    /// Spills go to `dir`, at most `max_bytes` of them at once.
    pub fn with_spill(mut self, dir: std::path::PathBuf, max_bytes: u64) -> Self {
        self.spill = Arc::new(crate::spill::SpillConfig::new(dir, max_bytes));
        self
    }

    pub fn with_prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
        self
    }

    /// Takes `execution_mode`, `prefetch` and `prefetch_window` from a
    /// session's settings.
    pub fn with_settings(mut self, settings: &kura_common::settings::Settings) -> Self {
        if let Some(mode) = ExecutionMode::parse(&settings.value("execution_mode")) {
            self.mode = mode;
        }
        self.prefetch = settings.flag("prefetch");
        self.prefetch_window = settings.prefetch_window();
        self
    }

    /// The process-wide task runtime the parallel modes run on.
    pub fn runtime(&self) -> ExecResult<&'static crate::runtime::Runtime> {
        crate::runtime::shared_runtime()
            .map_err(|e| ExecError::Internal(format!("task runtime: {e}")))
    }

    /// Fails with [`ExecError::Canceled`] once the session asked to cancel; operators
    /// call this at least once per batch.
    pub fn check_cancel(&self) -> ExecResult<()> {
        if (self.cancel)() {
            Err(ExecError::Canceled)
        } else {
            Ok(())
        }
    }

    /// Adds to the statistics of plan node `node`.
    pub fn record(&self, node: usize, f: impl FnOnce(&mut OperatorStats)) {
        if node == NO_NODE {
            return;
        }
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() <= node {
            s.resize(node + 1, OperatorStats::default());
        }
        f(&mut s[node]);
    }

    /// Statistics per plan node id.
    pub fn stats(&self) -> Vec<OperatorStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Page counters now, or zeros without a buffer manager.
    pub fn io_counters(&self) -> (u64, u64) {
        self.io.as_ref().map_or((0, 0), |io| io.counters())
    }

    /// Charges `node` with the pages this thread fixed and read since `since`
    /// (an earlier [`ExecContext::io_counters`]).
    pub fn charge_io(&self, node: usize, since: (u64, u64)) {
        let now = self.io_counters();
        self.record(node, |s| {
            s.pages_fixed += now.0 - since.0;
            s.pages_read += now.1 - since.1;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_limit_is_enforced() {
        let m = MemoryTracker::new(100);
        assert!(m.reserve(60, "hash table").is_ok());
        let e = m.reserve(60, "hash table").unwrap_err();
        assert_eq!(e.sqlstate(), "53200");
        m.release(120);
        assert_eq!(m.used(), 0);
        assert_eq!(m.peak(), 120);
    }

    #[test]
    fn a_refused_try_reserve_counts_nothing_in_the_query_or_the_server() {
        let shared = Arc::new(MemoryTracker::new(100));
        let a = MemoryTracker::with_parent(80, shared.clone());
        let b = MemoryTracker::with_parent(80, shared.clone());
        assert!(a.try_reserve(60));
        assert!(!a.try_reserve(30), "past the query's own limit");
        assert_eq!((a.used(), shared.used()), (60, 60));
        assert!(!b.try_reserve(50), "past the shared limit");
        assert_eq!((b.used(), shared.used()), (0, 60));
        // What fits exactly is taken, and a reservation of others still fits.
        assert!(b.try_reserve(40));
        assert_eq!((b.used(), shared.used(), shared.peak()), (40, 100, 100));
        let share = OwnShare::default();
        assert!(!share.try_reserve(&a, 1));
        assert_eq!(share.held(), 0);
        drop(b);
        a.release(60);
        assert!(share.try_reserve(&a, 80));
        assert_eq!((share.held(), shared.used()), (80, 80));
    }

    #[test]
    fn queries_share_the_parent_budget_and_give_it_back() {
        let shared = Arc::new(MemoryTracker::new(100));
        let a = MemoryTracker::with_parent(80, shared.clone());
        let b = MemoryTracker::with_parent(80, shared.clone());
        assert!(a.reserve(60, "sort").is_ok());
        // b is within its own limit but the two together are not.
        let e = b.reserve(50, "sort").unwrap_err();
        assert!(matches!(e, ExecError::OutOfSharedMemory { limit: 100, .. }));
        assert_eq!(e.sqlstate(), "53200");
        assert_eq!(shared.used(), 110);
        drop(b);
        assert_eq!(shared.used(), 60);
        a.release(20);
        assert_eq!(shared.used(), 40);
        // Over its own limit: the query's error, not the shared one.
        assert!(matches!(
            a.reserve(50, "sort").unwrap_err(),
            ExecError::OutOfMemory { limit: 80, .. }
        ));
        drop(a);
        assert_eq!(shared.used(), 0);
        assert_eq!(shared.peak(), 110);
    }

    #[test]
    fn an_operator_spills_past_its_own_share_not_the_querys() {
        let memory = MemoryTracker::new(100);
        // Another operator's table holds 60 of 100.
        memory.reserve(60, "join table").unwrap();
        let share = OwnShare::default();
        share.reserve(&memory, 10, "sort").unwrap();
        // Half of what the query leaves it: (30 left + 10 own) / 2 = 20.
        assert!(!share.past(&memory, 10, 1, 2));
        assert!(share.past(&memory, 11, 1, 2));
        share.release(&memory, 10);
        assert_eq!((share.held(), memory.used()), (0, 60));
        // Alone in its query, half of the limit.
        memory.release(60);
        assert!(!share.past(&memory, 50, 1, 2));
        assert!(share.past(&memory, 51, 1, 2));
    }

    #[test]
    fn cancel_flag_is_seen() {
        let flag = Arc::new(AtomicBool::new(false));
        let ctx = ExecContext::new(flag.clone(), u64::MAX);
        assert!(ctx.check_cancel().is_ok());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(ctx.check_cancel().unwrap_err().sqlstate(), "57014");
    }

    #[test]
    fn mode_comes_from_settings_and_clones_share_stats() {
        let mut settings = kura_common::settings::Settings::default();
        let ctx = ExecContext::unbounded().with_settings(&settings);
        assert_eq!(ctx.mode, ExecutionMode::OutOfOrder);
        assert!(ctx.prefetch);
        settings.set("execution_mode", "static").unwrap();
        settings.set("prefetch", "off").unwrap();
        let ctx = ExecContext::unbounded().with_settings(&settings);
        assert_eq!(ctx.mode, ExecutionMode::Static);
        assert!(!ctx.prefetch);
        let clone = ctx.clone();
        clone.record(2, |s| s.rows_out += 5);
        assert_eq!(ctx.stats()[2].rows_out, 5);
    }
}
