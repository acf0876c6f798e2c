//! Paper 002's profiler on programs kura does not run itself: a command traced
//! from its start under Valgrind's lackey with every process it forks replayed
//! through the cache model ([`trace`]), or running processes sampled from
//! outside ([`pid`]); both give a [`ForeignProfile`] of functions, source lines
//! and processes.

mod log;
pub mod pid;
mod process;
mod procfs;
mod reader;
pub mod report;
pub mod trace;

pub use report::ForeignProfile;
pub use trace::{start, ForeignTrace, TraceOptions, Tracing};
