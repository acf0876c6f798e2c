//! Workers (paper 003): one thread per core, each with its runnable queue, its
//! blocked tasks (those suspended on a read or an event, held only by their
//! wakers) and its own io_uring. The loop polls a batch of runnable tasks,
//! reaping completions in between, submits the reads they queued with one
//! system call, and sleeps in the ring when nothing is runnable.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::unix::io::RawFd;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::task::Waker;
use std::time::Instant;

use super::config::RuntimeConfig;
use super::context;
use super::io::uring::UringDriver;
use super::io::IoDriver;
use super::os_thread;
use super::pool::BufferPool;
use super::stats::{add, Counters};
use super::task::{PollOutcome, Task};
use super::timeline::TimelineRecorder;

/// Tasks polled between two submissions of queued reads.
const POLL_BATCH: usize = 64;
/// Completions are reaped (no system call) after this many polls.
const REAP_EVERY: usize = 8;

/// The state of one worker visible to other threads (the caller's thread in
/// serial mode has a slot too, after the workers).
pub(crate) struct Slot {
    /// Tasks handed over by other threads: wakes, roots, migrations.
    injector: Mutex<VecDeque<Arc<Task>>>,
    injected: AtomicUsize,
    /// Runnable tasks at the last publication (for the balancer).
    pub(crate) runnable: AtomicUsize,
    sleeping: AtomicBool,
    wake_fd: RawFd,
    /// Balancer request: (target + 1) << 48 | count; 0 for none.
    migrate: AtomicU64,
    pub(crate) counters: Counters,
    pub(crate) pool: BufferPool,
    /// CPU time of the threads that served this slot.
    cpu: Mutex<CpuAccount>,
}

impl Slot {
    fn new(config: &RuntimeConfig) -> std::io::Result<Slot> {
        Ok(Slot {
            injector: Mutex::new(VecDeque::new()),
            injected: AtomicUsize::new(0),
            runnable: AtomicUsize::new(0),
            sleeping: AtomicBool::new(false),
            wake_fd: os_thread::eventfd()?,
            migrate: AtomicU64::new(0),
            counters: Counters::default(),
            pool: BufferPool::new(config.pool_cache_bytes),
            cpu: Mutex::new(CpuAccount {
                clock: os_thread::NO_CLOCK,
                base_ns: 0,
                retired_ns: 0,
            }),
        })
    }

    fn cpu_account(&self) -> std::sync::MutexGuard<'_, CpuAccount> {
        self.cpu.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts counting the calling thread's CPU time for this slot.
    pub(crate) fn attach_cpu_clock(&self) {
        let clock = os_thread::current_thread_cpu_clock();
        let mut account = self.cpu_account();
        account.clock = clock;
        account.base_ns = os_thread::clock_ns(clock).unwrap_or(0);
    }

    /// Stops counting the calling thread, keeping what it used so far.
    pub(crate) fn detach_cpu_clock(&self) {
        let mut account = self.cpu_account();
        if let Some(now) = os_thread::clock_ns(account.clock) {
            account.retired_ns += now.saturating_sub(account.base_ns);
        }
        account.clock = os_thread::NO_CLOCK;
    }

    /// CPU nanoseconds used by this slot's threads so far (monotonic).
    pub(crate) fn cpu_ns(&self) -> u64 {
        let account = self.cpu_account();
        let live =
            os_thread::clock_ns(account.clock).map_or(0, |now| now.saturating_sub(account.base_ns));
        account.retired_ns + live
    }

    pub(crate) fn inject(&self, tasks: impl IntoIterator<Item = Arc<Task>>) {
        {
            let mut injector = self.injector.lock().unwrap_or_else(|e| e.into_inner());
            let before = injector.len();
            injector.extend(tasks);
            self.injected
                .fetch_add(injector.len() - before, Ordering::SeqCst);
        }
        self.unpark();
    }

    /// Wakes the slot's thread if it sleeps (pairs with `WorkerLocal::sleep`).
    pub(crate) fn unpark(&self) {
        if self.sleeping.swap(false, Ordering::SeqCst) {
            os_thread::eventfd_signal(self.wake_fd);
        }
    }

    fn take_injected(&self) -> VecDeque<Arc<Task>> {
        if self.injected.load(Ordering::Acquire) == 0 {
            return VecDeque::new();
        }
        let tasks = std::mem::take(&mut *self.injector.lock().unwrap_or_else(|e| e.into_inner()));
        self.injected.fetch_sub(tasks.len(), Ordering::SeqCst);
        tasks
    }

    /// Asks this worker to hand `count` runnable tasks to worker `to`.
    pub(crate) fn request_migration(&self, to: usize, count: usize) {
        let request = ((to as u64 + 1) << 48) | (count as u64 & ((1 << 48) - 1));
        self.migrate.store(request, Ordering::Release);
    }
}

/// A slot's CPU time: finished threads' share plus the live thread's clock.
struct CpuAccount {
    clock: i64,
    base_ns: u64,
    retired_ns: u64,
}

/// State shared by all threads of one runtime.
pub(crate) struct Shared {
    /// `workers` worker slots, then the caller's slot for serial mode.
    pub(crate) slots: Vec<Slot>,
    pub(crate) workers: usize,
    pub(crate) config: RuntimeConfig,
    pub(crate) uring: bool,
    pub(crate) shutdown: AtomicBool,
    /// Wakes the monitor thread (shutdown, timeline start).
    pub(crate) monitor_lock: Mutex<()>,
    pub(crate) monitor_cv: Condvar,
    pub(crate) timeline: Mutex<Option<TimelineRecorder>>,
}

impl Shared {
    pub(crate) fn new(
        config: RuntimeConfig,
        workers: usize,
        uring: bool,
    ) -> std::io::Result<Shared> {
        let mut slots = Vec::with_capacity(workers + 1);
        for _ in 0..=workers {
            match Slot::new(&config) {
                Ok(slot) => slots.push(slot),
                Err(e) => {
                    for slot in &slots {
                        os_thread::close(slot.wake_fd);
                    }
                    return Err(e);
                }
            }
        }
        Ok(Shared {
            slots,
            workers,
            config,
            uring,
            shutdown: AtomicBool::new(false),
            monitor_lock: Mutex::new(()),
            monitor_cv: Condvar::new(),
            timeline: Mutex::new(None),
        })
    }

    pub(crate) fn caller_slot(&self) -> usize {
        self.workers
    }

    /// Puts a woken or new task into its home worker's queue: directly when on
    /// that worker's thread, else through its injector.
    pub(crate) fn schedule(&self, task: Arc<Task>) {
        let home = task.home();
        if let Some(local) = context::current() {
            if local.index == home && std::ptr::eq(Arc::as_ptr(&local.shared), self) {
                local.queue.borrow_mut().push_back(task);
                return;
            }
        }
        self.slots[home].inject([task]);
    }

    /// Empties every injector (at teardown; breaks task → scope → runtime cycles).
    pub(crate) fn clear_injectors(&self) {
        for slot in &self.slots {
            loop {
                let tasks = slot.take_injected();
                if tasks.is_empty() {
                    break;
                }
                drop(tasks);
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for slot in &self.slots {
            os_thread::close(slot.wake_fd);
        }
    }
}

/// The part of a worker only its own thread touches.
pub(crate) struct WorkerLocal {
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    pub(crate) queue: RefCell<VecDeque<Arc<Task>>>,
    /// The task being polled (its scope receives spawned children).
    pub(crate) current: RefCell<Option<Arc<Task>>>,
    pub(crate) io: RefCell<IoDriver>,
    wakers: RefCell<Vec<Waker>>,
}

impl WorkerLocal {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, io: IoDriver) -> WorkerLocal {
        WorkerLocal {
            index,
            shared,
            queue: RefCell::new(VecDeque::new()),
            current: RefCell::new(None),
            io: RefCell::new(io),
            wakers: RefCell::new(Vec::new()),
        }
    }

    fn slot(&self) -> &Slot {
        &self.shared.slots[self.index]
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.slot().counters
    }

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
        if slot.injected.load(Ordering::SeqCst) > 0 || stop() {
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
        let slot = self.slot();
        if slot.migrate.load(Ordering::Relaxed) == 0 {
            return;
        }
        let request = slot.migrate.swap(0, Ordering::Acquire);
        let count = (request & ((1 << 48) - 1)) as usize;
        let Some(to) = ((request >> 48) as usize).checked_sub(1) else {
            return;
        };
        self.hand_over(to, count);
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
