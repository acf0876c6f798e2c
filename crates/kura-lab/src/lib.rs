//! kura-lab: the experiments that re-make the papers' tables and figures — one module
//! per study, each with its workload, its measurements, its CSV and its charts. The
//! command line only parses arguments and prints; tests and benchmarks call these
//! modules directly.

pub mod cachesim;
pub mod ceiling;
pub mod cluster_model;
pub mod error;
pub mod fix;
pub mod iops;
pub mod llc;
pub mod llc_recorded;
pub mod load;
pub mod memsweep;
pub mod modes;
pub mod paper003;
pub mod paper004;
pub mod pgbench_profile;
pub mod plot;
pub mod twotier;

pub use error::{LabError, LabResult};
