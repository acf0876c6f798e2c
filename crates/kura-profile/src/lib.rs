//! kura-profile: paper 002's memory profiler — counter groups and precise sampling
//! through perf_event_open, symbolization, attribution of samples to operators and to
//! kura's named memory objects, miss classes, and, where the machine has no hardware
//! performance counters, a simulated path that replays a recorded memory-access
//! stream through kura-cache's CPU-cache model.

pub mod error;

pub use error::ProfileError;
pub mod simulated;
