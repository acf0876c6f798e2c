//! kura-exec: runs physical plans — vectorized plug-in operators and the task
//! runtime (paper 003). The only crate that knows about threads.
//!
//! Layout: [`plan`] is the physical plan IR (produced by kura-sql), [`expr`] the
//! vectorized scalar expressions, [`ops`] the operators, [`registry`] the named
//! operator implementations, [`pipeline`] the source → transforms → breaker model
//! and [`executor`] the compiler from plans to pipelines.

pub mod arrow;
pub mod cache_class;
pub mod context;
pub mod error;
pub mod executor;
pub mod expr;
pub mod files;
pub mod index_source;
pub mod keys;
pub mod keys_packed;
pub mod next_reads;
pub mod ops;
pub mod parallel;
pub mod pipeline;
pub mod plan;
pub mod registry;
pub mod runtime;
pub mod sample;
pub mod series;
pub mod shared;
pub mod source;
pub mod spill;
pub mod stream;
pub mod window_plan;

pub use context::{ExecContext, IoCounters, OperatorStats};
pub use error::{ExecError, ExecResult};
pub use executor::Executor;
pub use index_source::IndexSource;
pub use plan::{
    AggCall, AggFunc, JoinType, Moment, PlanKind, PlanNode, SortKey, WindowFrame, WindowFunc,
    ZonePredicate,
};
pub use registry::OperatorRegistry;
pub use sample::{SampleMethod, SampledTable, TableSample};
pub use source::{ColumnStatistics, MemTable, SourceColumn, TableSource, Zone};
pub use window_plan::{FrameBound, FramePick, FrameUnits};
