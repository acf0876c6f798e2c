//! The state of one runtime that all its threads share: a slot per worker
//! (queue handed over by other threads, balancer request, counters, buffer pool,
//! CPU time), the configuration and the timeline being recorded.

use std::collections::VecDeque;
use std::os::unix::io::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::config::RuntimeConfig;
use super::os_thread;
use super::pool::BufferPool;
use super::stats::Counters;
use super::task::Task;
use super::timeline::{TimelineRecorder, Totals};

/// The state of one worker visible to other threads (the caller's thread in
/// serial mode has a slot too, after the workers).
pub(crate) struct Slot {
    /// Tasks handed over by other threads: wakes, roots, migrations.
    injector: Mutex<VecDeque<Arc<Task>>>,
    pub(crate) injected: AtomicUsize,
    /// Runnable tasks at the last publication (for the balancer).
    pub(crate) runnable: AtomicUsize,
    pub(crate) sleeping: AtomicBool,
    /// Asked to give its thread's free memory back to the system (see
    /// `Runtime::release_free_memory`).
    pub(crate) release: AtomicBool,
    pub(crate) wake_fd: RawFd,
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
            release: AtomicBool::new(false),
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

    pub(crate) fn take_injected(&self) -> VecDeque<Arc<Task>> {
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

    /// The balancer's pending request as (target, count), clearing it; for the
    /// slot's own worker, which checks it once per round.
    pub(crate) fn take_migration(&self) -> Option<(usize, usize)> {
        if self.migrate.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let request = self.migrate.swap(0, Ordering::Acquire);
        let count = (request & ((1 << 48) - 1)) as usize;
        let to = ((request >> 48) as usize).checked_sub(1)?;
        Some((to, count))
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

impl Totals for Shared {
    fn cpu_ns(&self) -> u64 {
        self.slots.iter().map(|s| s.cpu_ns()).sum()
    }

    fn pages_read(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| {
                s.counters.io_completed.load(Ordering::Relaxed)
                    + s.counters.extra_run_pages.load(Ordering::Relaxed)
            })
            .sum()
    }

    fn workers(&self) -> usize {
        self.workers
    }
}
