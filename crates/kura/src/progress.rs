//! How long work (a COPY's load, an index build) reports its progress to the program.

/// Progress of long work: label, units done, units total.
pub type Progress = dyn Fn(&str, u64, u64) + Send + Sync;
