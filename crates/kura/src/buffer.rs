//! The buffer manager's options a front end names: the second tier below the pool and the page-access traces.

pub use kura_cache::Mode as TierMode;
pub use kura_storage::buffer::{
    parse_tier_kind, parse_tier_mode, TierCapacity, TierConfig, TierKind, TraceKind,
};
