//! The optimizer: predicate push-down (into scans, through projections,
//! aggregations and outer/semi joins), OR factoring, and cost-based ordering of
//! inner joins from cardinality estimates, magic-set restriction of
//! decorrelated aggregates, eager aggregation below joins, and aggregations
//! over unique keys turned into projections.

pub mod access;
pub mod cardinality;
mod eager;
mod equivalence;
pub mod estimate;
pub mod estimate_memo;
mod join_order;
mod magic;
mod pushdown;
mod unique;

pub use eager::apply as eager_aggregate;
pub use pushdown::optimize;
pub use unique::{eliminate_aggregates, unique_keys};
