//! The `Runtime`: starts the workers and the monitor, runs task trees in the
//! three execution modes — `block_on` (out-of-order: tasks decompose and
//! suspend on reads), `run_static` (N parts fixed up front, one per worker,
//! each run without suspending) and `run_serial` (everything on the caller's
//! thread, synchronous reads) — and shuts down cleanly.

use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::balance::monitor_main;
use super::config::{IoBackend, RuntimeConfig};
use super::context::{self, erase, WorkerLocal};
use super::error::{BoxError, RuntimeError};
use super::io::{probe_uring, IoDriver};
use super::os_thread;
use super::shared::{Shared, Slot};
use super::stats::{add, RuntimeStats};
use super::sync_reads::{count_outside_workers_in, count_sync_read};
use super::task::{Task, TaskFuture, TaskScope};
use super::timeline::{Timeline, TimelineRecorder};
use super::worker::worker_main;

/// The per-core task runtime.
pub struct Runtime {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    monitor: Option<JoinHandle<()>>,
    /// Serial runs share the caller's slot, one at a time.
    serial: Mutex<()>,
    next_root: AtomicUsize,
}

/// Results of [`Runtime::run_static`], in the order of the parts.
#[derive(Debug)]
pub struct StaticRun<T> {
    pub outputs: Vec<T>,
    /// When each part finished, from the start of the run (shows skew).
    pub finished_after: Vec<Duration>,
}

/// Each worker's stack: evaluating an expression recurses over it, and the
/// binder accepts expressions up to 2,000 levels deep (reserved, committed
/// only as far as used).
const WORKER_STACK: usize = 256 << 20;

impl Runtime {
    /// Starts the workers. io_uring is probed once here; without it every
    /// read is a synchronous `pread` (logged once).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let workers = config.resolved_workers();
        let uring = match config.io {
            IoBackend::Sync => false,
            IoBackend::Auto => match probe_uring() {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(
                        "io_uring is unavailable ({e}); reads fall back to synchronous pread"
                    );
                    false
                }
            },
        };
        let cpus = if config.pin {
            os_thread::allowed_cpus()
        } else {
            Vec::new()
        };
        let shared = Arc::new(Shared::new(config.clone(), workers, uring)?);
        // Serial and static mode read pages with pread: count those reads too.
        kura_storage::set_sync_read_observer(count_sync_read);
        let mut runtime = Runtime {
            shared: shared.clone(),
            threads: Vec::with_capacity(workers),
            monitor: None,
            serial: Mutex::new(()),
            next_root: AtomicUsize::new(0),
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        for index in 0..workers {
            let cpu = (!cpus.is_empty()).then(|| cpus[index % cpus.len()]);
            let (shared, ready) = (shared.clone(), ready_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("kura-worker-{index}"))
                .stack_size(WORKER_STACK)
                .spawn(move || worker_main(shared, index, cpu, ready))
                .map_err(|e| RuntimeError::Start(format!("worker thread: {e}")))?;
            runtime.threads.push(handle);
        }
        drop(ready_tx);
        let (mut pin_errors, mut ring_errors) = (Vec::new(), Vec::new());
        for start in ready_rx.iter().take(workers) {
            pin_errors.extend(start.pin_error);
            ring_errors.extend(start.ring_error);
        }
        if config.pin && cpus.is_empty() {
            tracing::warn!("cannot read this process's CPU affinity; workers are not pinned");
        } else if let Some(first) = pin_errors.first() {
            tracing::warn!(
                "could not pin {} of {workers} workers to cores ({first}); they run unpinned",
                pin_errors.len()
            );
        }
        if let Some(first) = ring_errors.first() {
            tracing::warn!(
                "{} of {workers} workers could not create an io_uring ({first}); they read synchronously",
                ring_errors.len()
            );
        }
        let monitor_shared = shared.clone();
        runtime.monitor = Some(
            std::thread::Builder::new()
                .name("kura-monitor".into())
                .spawn(move || monitor_main(monitor_shared))
                .map_err(|e| RuntimeError::Start(format!("monitor thread: {e}")))?,
        );
        Ok(runtime)
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.workers
    }

    /// Asks every worker to give the free memory its thread's allocator heap
    /// keeps back to the system, the next time it is between tasks (at once if
    /// it sleeps). A worker's heap can be walked only by its own thread.
    pub fn release_free_memory(&self) {
        for slot in &self.shared.slots[..self.shared.workers] {
            slot.release.store(true, Ordering::SeqCst);
            slot.unpark();
        }
    }

    /// Whether reads on the workers go through io_uring.
    pub fn uses_io_uring(&self) -> bool {
        self.shared.uring
    }

    /// Out-of-order mode: runs `root` on a worker, together with every task it
    /// spawns (transitively), and returns its value once the whole tree has
    /// finished — or the first error or panic of any task in it, after which
    /// the remaining tasks are dropped as soon as they are next scheduled.
    pub fn block_on<F, T, E>(&self, root: F) -> Result<T, RuntimeError>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Into<BoxError>,
    {
        if context::current().is_some() {
            return Err(RuntimeError::Reentrant);
        }
        let (future, output) = with_output(root);
        let scope = TaskScope::new(self.shared.clone());
        let worker = self.root_worker();
        let task = Task::new(scope.clone(), worker, false, future);
        add(&self.shared.slots[worker].counters.spawned, 1);
        self.shared.slots[worker].inject([task]);
        scope.wait();
        finish(&scope, &output)
    }

    /// Serial mode: runs `root` and its children on the calling thread, with
    /// synchronous reads; no other thread takes part.
    pub fn run_serial<F, T, E>(&self, root: F) -> Result<T, RuntimeError>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Into<BoxError>,
    {
        if context::current().is_some() {
            return Err(RuntimeError::Reentrant);
        }
        let _one_at_a_time = self.serial.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.shared.caller_slot();
        let slot = &self.shared.slots[index];
        slot.attach_cpu_clock();
        let (future, output) = with_output(root);
        let scope = TaskScope::new(self.shared.clone());
        let local = Rc::new(WorkerLocal::new(self.shared.clone(), index, IoDriver::Sync));
        let guard = context::enter(local.clone());
        let task = Task::new(scope.clone(), index, true, future);
        add(&slot.counters.spawned, 1);
        local.queue.borrow_mut().push_back(task);
        local.run(&|| scope.is_done());
        drop(guard);
        slot.detach_cpu_clock();
        finish(&scope, &output)
    }

    /// Runs `f` on the calling thread with its CPU time counted in the caller's
    /// slot, so that timelines see the work of serial pipelines, which run outside
    /// any task. One thread is counted at a time; a concurrent caller runs uncounted.
    pub fn account_caller<T>(&self, f: impl FnOnce() -> T) -> T {
        let _one_at_a_time = match self.serial.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return f(),
        };
        struct Detach<'a>(&'a Slot);
        impl Drop for Detach<'_> {
            fn drop(&mut self) {
                self.0.detach_cpu_clock();
            }
        }
        let slot = &self.shared.slots[self.shared.caller_slot()];
        slot.attach_cpu_clock();
        let _detach = Detach(slot);
        f()
    }

    /// Makes this runtime's caller slot count the synchronous reads of threads
    /// outside any worker; for the process-wide runtime, as it starts.
    pub(crate) fn count_outside_workers(&self) {
        count_outside_workers_in(self.shared.clone());
    }

    /// Static mode: part `i` runs on worker `i % workers`, the parts of one
    /// worker one after the other, never split and never migrated. Returns
    /// every part's output, or the first error or panic.
    pub fn run_static<F, T, E>(&self, parts: Vec<F>) -> Result<StaticRun<T>, RuntimeError>
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Into<BoxError>,
    {
        if context::current().is_some() {
            return Err(RuntimeError::Reentrant);
        }
        let started = Instant::now();
        let count = parts.len();
        let results: PartResults<T> = Arc::new(Mutex::new((0..count).map(|_| None).collect()));
        let scope = TaskScope::new(self.shared.clone());
        let workers = self.shared.workers;
        let mut per_worker: Vec<Vec<Arc<Task>>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, part) in parts.into_iter().enumerate() {
            let results = results.clone();
            let future = erase(async move {
                let value = part().map_err(Into::into)?;
                results.lock().unwrap_or_else(|e| e.into_inner())[i] =
                    Some((value, started.elapsed()));
                Ok::<(), BoxError>(())
            });
            let worker = i % workers;
            per_worker[worker].push(Task::new(scope.clone(), worker, true, future));
        }
        for (worker, tasks) in per_worker.into_iter().enumerate() {
            if !tasks.is_empty() {
                add(
                    &self.shared.slots[worker].counters.spawned,
                    tasks.len() as u64,
                );
                self.shared.slots[worker].inject(tasks);
            }
        }
        if count > 0 {
            scope.wait();
        }
        if let Some(error) = scope.take_error() {
            return Err(error);
        }
        let results = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
        let mut run = StaticRun {
            outputs: Vec::with_capacity(count),
            finished_after: Vec::with_capacity(count),
        };
        for result in results {
            let (value, at) = result.ok_or(RuntimeError::Abandoned)?;
            run.outputs.push(value);
            run.finished_after.push(at);
        }
        Ok(run)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> RuntimeStats {
        let workers = self.shared.slots[..self.shared.workers]
            .iter()
            .map(|s| s.counters.snapshot())
            .collect();
        RuntimeStats {
            workers,
            caller: self.shared.slots[self.shared.caller_slot()]
                .counters
                .snapshot(),
        }
    }

    /// Starts recording a timeline (restarting any recording in progress).
    pub fn start_timeline(&self) {
        self.start_timeline_every(self.shared.config.timeline_interval);
    }

    /// Starts recording a timeline sampled every `interval` (at least 1 ms), e.g.
    /// finer than the configured interval for a sub-second query.
    pub fn start_timeline_every(&self, interval: Duration) {
        let recorder = TimelineRecorder::start(&*self.shared, interval);
        *self
            .shared
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(recorder);
        let _guard = self
            .shared
            .monitor_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.shared.monitor_cv.notify_all();
    }

    /// Stops recording and returns the timeline (`None` if none was started).
    pub fn stop_timeline(&self) -> Option<Timeline> {
        let recorder = self
            .shared
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        Some(recorder.finish(&*self.shared))
    }

    /// The worker with the fewest runnable tasks, rotating among equals.
    fn root_worker(&self) -> usize {
        let n = self.shared.workers;
        let start = self.next_root.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|k| (start + k) % n)
            .min_by_key(|&w| self.shared.slots[w].runnable.load(Ordering::Relaxed))
            .unwrap_or(0)
    }
}

type Output<T> = Arc<Mutex<Option<T>>>;

/// Each static part's output and finishing time, filled in as parts end.
type PartResults<T> = Arc<Mutex<Vec<Option<(T, Duration)>>>>;

/// Wraps a root future so that its value is kept for the caller.
fn with_output<F, T, E>(root: F) -> (TaskFuture, Output<T>)
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Into<BoxError>,
{
    let output: Output<T> = Arc::new(Mutex::new(None));
    let slot = output.clone();
    let future = erase(async move {
        let value = root.await.map_err(Into::into)?;
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
        Ok::<(), BoxError>(())
    });
    (future, output)
}

fn finish<T>(scope: &TaskScope, output: &Output<T>) -> Result<T, RuntimeError> {
    if let Some(error) = scope.take_error() {
        return Err(error);
    }
    output
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or(RuntimeError::Abandoned)
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for slot in &self.shared.slots {
            slot.unpark();
        }
        {
            let _guard = self
                .shared
                .monitor_lock
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.shared.monitor_cv.notify_all();
        }
        let me = std::thread::current().id();
        for handle in self.threads.drain(..) {
            // A task holding the last reference drops the runtime on a worker:
            // that worker exits by itself once its task returns.
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
        if let Some(handle) = self.monitor.take() {
            let _ = handle.join();
        }
        self.shared.clear_injectors();
    }
}
