//! Streams a query's result to its client while the query runs: the last
//! pipeline's morsels run a window at a time into a collecting sink, each
//! window's rows are delivered before the next starts — or, where one morsel's
//! output can be far larger than the memory limit (a cross join, whose rows are
//! those of its input times its build side's), a morsel at a time on a producer
//! thread whose batches reach the client as they are made.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use kura_common::{Batch, BATCH_SIZE};

use crate::context::{ExecContext, ExecutionMode};
use crate::error::{ExecError, ExecResult};
use crate::expr::compact_batch;
use crate::ops::collect::CollectSink;
use crate::ops::join::batch_bytes;
use crate::pipeline::{LocalState, Pipeline, Sink};

/// Output a streamed window aims at: windows grow while they produce less.
pub const STREAM_WINDOW_BYTES: u64 = 16 << 20;
/// The most morsels one streamed window runs.
const MAX_STREAM_WINDOW: usize = 4096;
/// A pipeline whose rows can multiply by more than this (see
/// [`crate::pipeline::Transform::fan_out`]) streams a morsel at a time: one
/// morsel of a few thousand rows would otherwise collect past the window.
const FORWARD_FAN_OUT: usize = 16;
/// Batches the producer thread may run ahead of the client.
const FORWARD_QUEUE: usize = 1;

/// Runs `pipeline` (its sink node `sink_node`) and hands its batches to
/// `deliver` in order; stops when `deliver` answers false. A pipeline of
/// several phases (a hybrid hash join's partitions on disk after its probe
/// rows) streams them one after the other.
pub(crate) fn stream(
    pipeline: &Pipeline,
    sink_node: usize,
    ctx: &ExecContext,
    deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
) -> ExecResult<()> {
    if pipeline.phases.is_empty() {
        return stream_phase(pipeline, sink_node, ctx, deliver);
    }
    let client_done = std::cell::Cell::new(false);
    let mut watched = |b: Batch| -> ExecResult<bool> {
        let more = deliver(b)?;
        client_done.set(!more);
        Ok(more)
    };
    for phase in pipeline.split_phases() {
        stream_phase(&phase, sink_node, ctx, &mut watched)?;
        if client_done.get() {
            break;
        }
    }
    Ok(())
}

/// [`stream`] for a pipeline of one phase.
fn stream_phase(
    pipeline: &Pipeline,
    sink_node: usize,
    ctx: &ExecContext,
    deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
) -> ExecResult<()> {
    let morsels = pipeline.source.morsels();
    let workers = match ctx.mode {
        ExecutionMode::Serial => 1,
        _ => ctx.runtime().map(|rt| rt.workers()).unwrap_or(1),
    };
    // A window's rows count against the query's memory limit until they are
    // delivered, so a small limit keeps windows small.
    let target = STREAM_WINDOW_BYTES.min(ctx.memory.limit() / 4);
    let fan_out = pipeline.fan_out();
    // Under a limit too small for a full window (below 64 MB) one morsel's
    // rows (a row group of a wide table) could alone pass the limit while
    // collected: they go to the client a batch at a time instead.
    if fan_out > FORWARD_FAN_OUT || target < STREAM_WINDOW_BYTES {
        return forward(pipeline, sink_node, ctx, 0, deliver);
    }
    let mut window = workers.max(1);
    let mut start = 0;
    // At least one window, even over no morsels: the pipeline's tails (a FULL
    // or RIGHT join's unmatched build rows) follow its last morsel, and a probe
    // side with none (an index join over an empty input) must still emit them.
    loop {
        let end = (start + window).min(morsels);
        let sink = Arc::new(CollectSink::default());
        let stopped = pipeline.run_range(sink.clone(), sink_node, ctx, start..end)?;
        let mut bytes = 0;
        for b in sink.take() {
            bytes += batch_bytes(&b);
            if !deliver_batch(ctx, b, deliver)? {
                return Ok(());
            }
        }
        if stopped || end >= morsels {
            return Ok(());
        }
        let ran = (end - start).max(1) as u64;
        start = end;
        if bytes.saturating_mul(2) <= target {
            window = (window * 2).min(MAX_STREAM_WINDOW);
        } else if bytes > target {
            if fan_out > 1 && bytes / ran > target {
                // One morsel alone outgrew the window: its join multiplies
                // rows by more than the build side's size suggested.
                return forward(pipeline, sink_node, ctx, start, deliver);
            }
            window = (window / 2).max(workers);
        }
    }
}

/// Hands one collected batch to `deliver`, releasing its memory; a large batch
/// (a cross join's 65,536 pairs) goes out a slice at a time, so the client's
/// queue holds a few slices, not a few large batches that no longer count
/// against any limit.
fn deliver_batch(
    ctx: &ExecContext,
    b: Batch,
    deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
) -> ExecResult<bool> {
    // Delivered rows are the client's: they no longer count here.
    let mut held = batch_bytes(&b);
    // A cancel or time-out is obeyed between slices: a wide batch takes a
    // while to turn into the client's rows.
    let check = |held: u64| ctx.check_cancel().inspect_err(|_| ctx.memory.release(held));
    if b.len() <= BATCH_SIZE {
        check(held)?;
        ctx.memory.release(held);
        return deliver(b);
    }
    for start in (0..b.len()).step_by(BATCH_SIZE) {
        check(held)?;
        let len = BATCH_SIZE.min(b.len() - start);
        let part = Batch::new(b.columns.iter().map(|c| c.slice(start, len)).collect());
        let part_size = batch_bytes(&part).min(held);
        held -= part_size;
        ctx.memory.release(part_size);
        if !deliver(part)? {
            ctx.memory.release(held);
            return Ok(false);
        }
    }
    ctx.memory.release(held);
    Ok(true)
}

/// What the producer thread sends: rows, or the end of its run.
enum Piece {
    Rows(Batch),
    Done(ExecResult<()>),
}

/// Sends each batch to the delivering thread as soon as it is made; the
/// bounded queue holds the producer back while the client is slower.
struct ForwardSink {
    queue: SyncSender<Piece>,
    /// Set when no more rows are wanted: the run then stops at its next batch.
    closed: Arc<AtomicBool>,
}

impl Sink for ForwardSink {
    fn local(&self) -> LocalState {
        Box::new(())
    }
    fn consume(&self, _local: &mut LocalState, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(ExecError::Canceled);
        }
        let batch = compact_batch(batch);
        let bytes = batch_bytes(&batch);
        ctx.memory.reserve(bytes, "result rows")?;
        if self.queue.send(Piece::Rows(batch)).is_err() {
            ctx.memory.release(bytes);
            return Err(ExecError::Canceled);
        }
        Ok(())
    }
    fn merge(&self, _local: LocalState, _ctx: &ExecContext) -> ExecResult<()> {
        Ok(())
    }
    fn finish(&self, _ctx: &ExecContext) -> ExecResult<()> {
        Ok(())
    }
}

/// Runs the morsels from `first` on, one at a time in order, on a producer
/// thread, and delivers their batches on this one as they arrive.
fn forward(
    pipeline: &Pipeline,
    sink_node: usize,
    ctx: &ExecContext,
    first: usize,
    deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
) -> ExecResult<()> {
    let (queue, arrivals) = sync_channel(FORWARD_QUEUE);
    let closed = Arc::new(AtomicBool::new(false));
    let sink = Arc::new(ForwardSink {
        queue: queue.clone(),
        closed: closed.clone(),
    });
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            let morsels = pipeline.source.morsels();
            let mut result = Ok(());
            // At least one run, for the tails (see `stream`).
            let mut morsel = first;
            loop {
                let end = (morsel + 1).min(morsels);
                match pipeline.run_range(sink.clone(), sink_node, ctx, morsel..end) {
                    Ok(false) if end < morsels => morsel = end,
                    Ok(_) => break,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            drop(sink);
            let _ = queue.send(Piece::Done(result));
        });
        let mut producer_done = false;
        let outcome = receive(ctx, &arrivals, &mut producer_done, deliver);
        if !producer_done {
            // Stop the producer and drain what it still sends, so that every
            // reserved byte is released and it never waits on a full queue.
            closed.store(true, Ordering::Relaxed);
            while let Ok(piece) = arrivals.recv() {
                match piece {
                    Piece::Rows(b) => ctx.memory.release(batch_bytes(&b)),
                    Piece::Done(_) => break,
                }
            }
        }
        if producer.join().is_err() {
            return Err(ExecError::Internal(
                "the result's producer thread panicked".into(),
            ));
        }
        outcome
    })
}

/// Delivers what arrives until the producer's end (`producer_done` is then
/// set), the client's (`deliver` answers false) or an error.
fn receive(
    ctx: &ExecContext,
    arrivals: &Receiver<Piece>,
    producer_done: &mut bool,
    deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
) -> ExecResult<()> {
    loop {
        match arrivals.recv() {
            Ok(Piece::Rows(b)) => {
                if !deliver_batch(ctx, b, deliver)? {
                    return Ok(());
                }
            }
            Ok(Piece::Done(result)) => {
                *producer_done = true;
                return result;
            }
            Err(_) => {
                *producer_done = true;
                return Err(ExecError::Internal(
                    "the result's producer thread ended without a result".into(),
                ));
            }
        }
    }
}
