//! Workers (paper 003): one thread per core, each with its runnable queue, its
//! blocked tasks (those suspended on a read or an event, held only by their
//! wakers) and its own io_uring. The loop polls a batch of runnable tasks,
//! reaping completions in between, submits the reads they queued with one
//! system call, and sleeps in the ring when nothing is runnable.
//!
//! The loop only: a worker's own state (`WorkerLocal`) is in `context`, the
//! state it shares with other threads in `shared`.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Instant;

use super::context::{self, WorkerLocal};
use super::io::uring::UringDriver;
use super::io::IoDriver;
use super::os_thread;
use super::shared::Shared;
use super::stats::add;
use super::task::{PollOutcome, Task};

/// Tasks polled between two submissions of queued reads.
const POLL_BATCH: usize = 64;
/// Completions are reaped (no system call) after this many polls.
const REAP_EVERY: usize = 8;

impl WorkerLocal {
    /// Runs tasks until `stop()` holds.
    pub(crate) fn run(&self, stop: &dyn Fn() -> bool) {
        loop {
            if stop() {
                return;
            }
            let injected = self.slot().take_injected();
            if !injected.is_empty() {
                self.queue.borrow_mut().extend(injected);
            }
            // Read before the swap: a swap on every round would write the
            // slot's line that other threads read.
            let slot = self.slot();
            if slot.release.load(Ordering::Relaxed) && slot.release.swap(false, Ordering::SeqCst) {
                // The allocator's per-thread heap is only this thread's to walk.
                kura_common::allocator::release_free_memory();
                add(&self.counters().memory_releases, 1);
            }
            self.serve_migration();
            let started = Instant::now();
            let mut polled = 0;
            while polled < POLL_BATCH {
                let next = self.queue.borrow_mut().pop_front();
                let Some(task) = next else { break };
                self.run_task(task);
                polled += 1;
                if polled % REAP_EVERY == 0 {
                    self.reap_io();
                }
                self.share_with_idle();
            }
            self.flush_io();
            add(
                &self.counters().busy_ns,
                started.elapsed().as_nanos() as u64,
            );
            let runnable = self.queue.borrow().len();
            self.slot().runnable.store(
                runnable + self.slot().injected.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
            if runnable == 0 {
                self.sleep(stop);
            }
        }
    }

    fn run_task(&self, task: Arc<Task>) {
        // Counted before the poll: the poll may finish the scope, and its
        // waiter may read the counters right away.
        add(&self.counters().polled, 1);
        *self.current.borrow_mut() = Some(task);
        let outcome = {
            let running = self.current.borrow();
            running.as_ref().expect("task just set").poll()
        };
        let task = self.current.borrow_mut().take().expect("task just polled");
        match outcome {
            PollOutcome::Pending { requeue: true } => self.queue.borrow_mut().push_back(task),
            // Blocked: only the wakers held by its read or event keep it now.
            PollOutcome::Pending { requeue: false } => add(&self.counters().suspended, 1),
            PollOutcome::Finished => {}
        }
    }

    /// Collects completions and wakes their tasks.
    fn reap_io(&self) {
        let mut wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        let completed = match &mut *self.io.borrow_mut() {
            IoDriver::Uring(driver) => driver.reap(&mut wakers),
            IoDriver::Sync => 0,
        };
        if completed > 0 {
            add(&self.counters().io_completed, completed as u64);
        }
        for waker in wakers.drain(..) {
            waker.wake();
        }
        *self.wakers.borrow_mut() = wakers;
    }

    /// Submits the reads queued during the batch, then reaps.
    fn flush_io(&self) {
        if let IoDriver::Uring(driver) = &mut *self.io.borrow_mut() {
            driver.submit();
        }
        self.reap_io();
    }

    /// Sleeps until a completion or a wake from another thread.
    fn sleep(&self, stop: &dyn Fn() -> bool) {
        let slot = self.slot();
        slot.sleeping.store(true, Ordering::SeqCst);
        if slot.injected.load(Ordering::SeqCst) > 0 || slot.release.load(Ordering::SeqCst) || stop()
        {
            slot.sleeping.store(false, Ordering::SeqCst);
            return;
        }
        match &mut *self.io.borrow_mut() {
            IoDriver::Uring(driver) => driver.wait(),
            IoDriver::Sync => os_thread::eventfd_wait(slot.wake_fd),
        }
        slot.sleeping.store(false, Ordering::SeqCst);
        self.reap_io();
    }

    /// Hands tasks to another worker when the balancer asked for it.
    fn serve_migration(&self) {
        if let Some((to, count)) = self.slot().take_migration() {
            self.hand_over(to, count);
        }
    }

    /// Between two polls: when balancing is on, this worker has runnable tasks
    /// to spare and another worker sleeps with none, half of them go to it at
    /// once. The balancer's rounds alone left a worker idle for up to a whole
    /// poll batch of the donor's (tens of milliseconds of morsels: TPC-H Q1 at
    /// SF 1 kept 1.35 of 2 cores busy), and children spawned by a root all start
    /// on the root's worker.
    fn share_with_idle(&self) {
        // The caller's slot (serial mode) keeps its tasks on its thread.
        if self.shared.config.balance_interval.is_none() || self.index >= self.shared.workers {
            return;
        }
        let spare = self.queue.borrow().len() / 2;
        if spare == 0 {
            return;
        }
        let idle = (0..self.shared.workers)
            .find(|&w| w != self.index && self.shared.slots[w].sleeping.load(Ordering::Relaxed));
        if let Some(to) = idle {
            self.hand_over(to, spare);
        }
    }

    /// Moves up to `count` runnable tasks to worker `to`. The newest runnable
    /// tasks go (the oldest are next to run here); pinned ones stay.
    fn hand_over(&self, to: usize, count: usize) {
        let slot = self.slot();
        if to == self.index || to >= self.shared.workers {
            return;
        }
        let mut moving = Vec::with_capacity(count);
        {
            let mut queue = self.queue.borrow_mut();
            let mut kept = Vec::new();
            while moving.len() < count {
                let Some(task) = queue.pop_back() else { break };
                if task.pinned {
                    kept.push(task);
                } else {
                    task.set_home(to);
                    moving.push(task);
                }
            }
            queue.extend(kept.into_iter().rev());
        }
        if moving.is_empty() {
            return;
        }
        let n = moving.len() as u64;
        add(&slot.counters.migrated_out, n);
        add(&self.shared.slots[to].counters.migrated_in, n);
        self.shared.slots[to].inject(moving);
    }

    /// At shutdown: drops queued tasks and waits for reads in flight, so no
    /// buffer is freed while the kernel may still write into it.
    fn shutdown_drain(&self) {
        loop {
            let queued = std::mem::take(&mut *self.queue.borrow_mut());
            let injected = self.slot().take_injected();
            let idle = queued.is_empty() && injected.is_empty();
            drop(queued);
            drop(injected);
            let mut wakers = Vec::new();
            if let IoDriver::Uring(driver) = &mut *self.io.borrow_mut() {
                driver.drain(&mut wakers);
            }
            let woke = !wakers.is_empty();
            for waker in wakers {
                waker.wake();
            }
            if idle && !woke && self.queue.borrow().is_empty() {
                return;
            }
        }
    }
}

/// What a worker reports once started.
pub(crate) struct WorkerStart {
    pub(crate) pin_error: Option<String>,
    pub(crate) ring_error: Option<String>,
}

/// Body of worker thread `index`.
pub(crate) fn worker_main(
    shared: Arc<Shared>,
    index: usize,
    cpu: Option<usize>,
    ready: mpsc::Sender<WorkerStart>,
) {
    let pin_error = cpu.and_then(|cpu| {
        os_thread::pin_current_thread(cpu)
            .err()
            .map(|e| format!("core {cpu}: {e}"))
    });
    let slot = &shared.slots[index];
    let (io, ring_error) = if shared.uring {
        match UringDriver::new(shared.config.ring_entries, slot.wake_fd) {
            Ok(driver) => (IoDriver::Uring(Box::new(driver)), None),
            Err(e) => (IoDriver::Sync, Some(e.to_string())),
        }
    } else {
        (IoDriver::Sync, None)
    };
    slot.attach_cpu_clock();
    let _ = ready.send(WorkerStart {
        pin_error,
        ring_error,
    });
    let local = Rc::new(WorkerLocal::new(shared.clone(), index, io));
    // Tasks queued on this thread may be the ones finishing a page read: a
    // synchronous fix here must never block on one.
    kura_storage::forbid_blocking_waits(true);
    let guard = context::enter(local.clone());
    local.run(&|| shared.shutdown.load(Ordering::SeqCst));
    local.shutdown_drain();
    shared.slots[index].detach_cpu_clock();
    drop(guard);
}
