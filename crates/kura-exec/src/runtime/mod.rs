//! The out-of-order task runtime: per-core workers running coroutine tasks with asynchronous I/O (paper 003).
//!
//! A task is a Rust future. Each worker thread (one per core, pinned where the
//! OS allows) owns a runnable queue, the tasks blocked on it (suspended on a
//! read or an event, reachable only through their wakers) and an io_uring.
//! Children spawned from inside a task stay on their parent's worker (local
//! binding); a monitor thread moves runnable tasks to a worker only when that
//! worker is clearly below the mean (conservative balancing), and samples the
//! timeline. Reads (`read_at`) go onto the current worker's ring and complete
//! between task polls; without io_uring they are synchronous. The three
//! execution modes are `Runtime::block_on` (out-of-order), `run_static` and
//! `run_serial`.
//!
//! How operators use it: a source task spawns one child per row group or page
//! range with [`spawn`]; a child awaits [`read_at`] into a [`buffer`] from its
//! worker's pool — a page fix reads straight into its buffer-pool frame with
//! [`read_into`] — (or awaits a [`Completion`] when another task is already
//! reading the page) and merges its partial result at the pipeline's end.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use kura_exec::runtime::{spawn, BoxError, Runtime, RuntimeConfig};
//!
//! let rt = Runtime::new(RuntimeConfig { workers: 2, ..Default::default() }).unwrap();
//! let total = Arc::new(AtomicU64::new(0));
//! let t = total.clone();
//! rt.block_on(async move {
//!     for part in 0..100u64 {
//!         let t = t.clone();
//!         spawn(async move {
//!             t.fetch_add(part, Ordering::Relaxed);
//!             Ok::<(), BoxError>(())
//!         });
//!     }
//!     Ok::<(), BoxError>(())
//! })
//! .unwrap();
//! assert_eq!(total.load(Ordering::Relaxed), 4950);
//! ```
//!
//! A task blocked on something that is never completed keeps its scope open;
//! the primitives here ([`read_at`], [`Completion`]) always complete, fail or
//! report `Abandoned`, so a failing task cannot leave others hanging.

mod balance;
mod config;
mod context;
mod error;
mod event;
mod executor;
mod fix_stats;
mod global;
pub mod io;
mod os_thread;
mod page_fix;
mod pool;
mod scope;
mod shared;
mod stats;
mod sync_reads;
mod task;
mod timeline;
mod worker;

pub use balance::{plan_migrations, Migration};
pub use config::{IoBackend, RuntimeConfig};
pub use context::{buffer, current_worker, spawn, yield_now, YieldNow};
pub use error::{BoxError, RuntimeError};
pub use event::{completion, Completer, Completion, Wait};
pub use executor::{Runtime, StaticRun};
pub use fix_stats::{page_fix_stats, reads_in_flight, take_max_in_flight, PageFixStats};
pub use global::{shared_runtime, started_shared_runtime};
pub use io::buf::{AlignedBuf, IO_ALIGN};
pub use io::open_direct;
pub use io::read::{read_at, read_at_blocking, read_exact_at, read_into, ReadAt, ReadTarget};
pub use page_fix::{fix_async, fix_async_reading, prefetch_async};
pub use pool::BufferPool;
pub use stats::{RuntimeStats, WorkerStats};
pub use timeline::{Timeline, TimelineSample};
