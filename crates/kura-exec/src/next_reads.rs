//! Reading the next pipeline's first pages while the previous pipeline's results
//! are merged (paper 003: the disk should not sit idle between pipelines).
//!
//! When a join's build pipeline has run, its per-worker tables are merged into one
//! — CPU work during which no pipeline reads. The executor knows which table scan
//! runs next, so a helper thread reads that scan's first pages (coalesced, the way
//! serial read-ahead does) until the merge is done. The reads are bounded by an
//! eighth of the frames queries may use, so they never crowd out what the merge
//! or the next pipeline needs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::context::{ExecContext, ExecutionMode};
use crate::ops::scan::ScanSource;
use crate::pipeline::Source;
use crate::plan::{PlanKind, PlanNode};

/// Pages one coalesced read-ahead request covers; the helper checks between
/// requests whether the merge is over, so it stops within one request.
const PAGES_PER_REQUEST: usize = 64;

/// Pages read ahead this way, across the process (for tests and reports).
static PAGES_READ: AtomicU64 = AtomicU64::new(0);

/// Pages read so far for the next pipeline while the previous one merged.
pub fn pages_read() -> u64 {
    PAGES_READ.load(Ordering::Relaxed)
}

/// The table scan the pipelines of `node` start with: the first pipeline that
/// compiling `node` runs (a join runs its build side first).
pub fn leading_scan(node: &PlanNode) -> Option<&PlanNode> {
    match &node.kind {
        PlanKind::Scan { .. } => Some(node),
        PlanKind::Filter { input, .. }
        | PlanKind::Project { input, .. }
        | PlanKind::Limit { input, .. }
        | PlanKind::Replicate { input, .. }
        | PlanKind::Aggregate { input, .. }
        | PlanKind::Sort { input, .. }
        | PlanKind::Window { input, .. } => leading_scan(input),
        PlanKind::Join { build, .. } => leading_scan(build),
        PlanKind::IndexJoin { probe, .. } => leading_scan(probe),
        PlanKind::UnionAll { inputs } => inputs.first().and_then(leading_scan),
        PlanKind::IndexScan { .. } | PlanKind::Values { .. } => None,
    }
}

/// Runs `merge` while a helper thread reads the first pages of the pipeline that
/// `next` starts with. Only in the parallel modes with read-ahead on: serial mode
/// stays the one-thread baseline of paper 003.
pub fn while_reading_next<T>(
    ctx: &ExecContext,
    next: &PlanNode,
    merge: &mut dyn FnMut() -> T,
) -> T {
    if !ctx.prefetch || ctx.mode == ExecutionMode::Serial {
        return merge();
    }
    let Some(PlanNode {
        kind:
            PlanKind::Scan {
                table,
                columns,
                zone_predicates,
                filter,
            },
        id,
        ..
    }) = leading_scan(next)
    else {
        return merge();
    };
    let source = ScanSource::new(
        table.clone(),
        columns.clone(),
        zone_predicates,
        filter.clone(),
        *id,
    );
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let read = read_first_pages(&source, &done);
            PAGES_READ.fetch_add(read as u64, Ordering::Relaxed);
        });
        let out = merge();
        done.store(true, Ordering::Release);
        out
    })
}

/// Reads the source's first pages in coalesced requests, up to the read-ahead
/// budget, until `done` is set; returns the pages read. The first request is always
/// made (the next pipeline needs those pages first anyway), so even a short merge
/// starts the reads.
fn read_first_pages(source: &dyn Source, done: &AtomicBool) -> usize {
    let Some((bm, _)) = source.pages_for(0) else {
        return 0;
    };
    let budget = (bm.available_frames() / 8).max(1);
    let mut pages = Vec::new();
    for morsel in 0..source.morsels() {
        if pages.len() >= budget {
            break;
        }
        match source.pages_for(morsel) {
            Some((_, more)) => pages.extend(more),
            None => break,
        }
    }
    pages.truncate(budget);
    let mut read = 0;
    for (i, request) in pages.chunks(PAGES_PER_REQUEST).enumerate() {
        if i > 0 && done.load(Ordering::Acquire) {
            break;
        }
        read += bm.prefetch_sync(request);
    }
    read
}
