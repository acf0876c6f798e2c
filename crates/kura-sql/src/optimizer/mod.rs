//! The optimizer: predicate push-down (into scans, through projections,
//! aggregations and outer/semi joins), OR factoring, and cost-based ordering of
//! inner joins from cardinality estimates, and magic-set restriction of
//! decorrelated aggregates.

pub mod access;
pub mod estimate;
mod join_order;
mod magic;
mod pushdown;

pub use pushdown::optimize;
