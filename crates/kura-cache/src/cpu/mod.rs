//! Set-associative CPU-cache models: geometry from sysfs, a multi-level hierarchy
//! with LRU or tree-PLRU sets, CAT way masks (paper 000) and 3C miss classification
//! (paper 002) — the simulated path of the memory profiler and of cache partitioning
//! on machines without performance counters or CAT.

pub mod classify;
pub mod geometry;
pub mod hierarchy;
pub mod partition;
pub mod reference;
pub mod set_assoc;

pub use classify::MissClass;
pub use geometry::{read_sysfs, CacheKind, Geometry, SYSFS_CACHE_DIR};
pub use hierarchy::{Access, Hierarchy, LevelConfig, LevelCounters};
pub use partition::{ClassMisses, Mark, PartitionSim};
pub use reference::{ReferenceHierarchy, ReferenceSetAssoc};
pub use set_assoc::{Lookup, Replacement, SetAssoc};
