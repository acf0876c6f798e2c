//! kura-rdt: the only code that touches Linux resctrl — cache allocation (CAT way
//! masks per group) and monitoring (CMT LLC occupancy) — for paper 000's cache
//! partitioning by memory object. The resctrl root is a parameter, so tests run
//! against a tree laid out in a temporary directory.

pub mod error;
pub mod group;
pub mod info;
pub mod lock;
pub mod partition;
pub mod resctrl;

pub use error::RdtError;
pub use group::Group;
pub use info::{validate_mask, L3Info};
pub use partition::{
    current_tid, measure_switch, process_threads, protect_masks, Class, Partition, ProtectMasks,
};
pub use resctrl::{detect, Detection, Resctrl, DEFAULT_ROOT, GROUP_PREFIX};
