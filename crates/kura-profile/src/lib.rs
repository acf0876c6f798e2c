//! kura-profile: paper 002's memory profiler — counter groups and precise sampling
//! through perf_event_open, symbolization, attribution of samples to operators and
//! to kura's named memory objects, miss classes, and, where the machine has no
//! hardware performance counters, a simulated path that replays a recorded
//! memory-access stream through kura-cache's CPU-cache model.

pub mod analyze;
pub mod api;
pub mod attribution;
pub mod counters;
pub mod diff;
pub mod error;
pub mod events;
pub mod missclass;
pub mod objects;
pub mod overhead;
pub mod records;
pub mod report;
pub mod run;
pub mod sampling;
pub mod symbolize;
pub mod threads;

pub use api::{Profiler, Reading};
pub use error::ProfileError;
pub use events::{Event, Pmu};
pub use report::Profile;

pub mod foreign;
pub mod simulated;
