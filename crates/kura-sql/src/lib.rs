//! kura-sql: the SQL front end — parse (sqlparser), bind names and types, build and
//! optimize logical plans, and lower them to physical plans for kura-exec. It never
//! touches pages.
//!
//! The physical plan IR is kura-exec's (`kura_exec::plan`): kura-sql depends on
//! kura-exec and not the reverse, because a plan names registered operator
//! implementations and the executor must not depend on SQL.

pub mod binder;
pub mod catalog;
pub mod error;
pub mod interrupt;
pub mod logical;
pub mod optimizer;
pub mod planner;
pub mod session;
pub mod system;

pub use catalog::{
    CatalogProvider, ConstraintInfo, ConstraintKind, FileFormat, MemoryCatalog, SequenceInfo,
    TableRulesInfo, ViewDefinition,
};
pub use error::{SqlError, SqlResult};
pub use planner::{describe_query, plan_query, PlannedQuery, PlannerOptions};
pub use session::SessionInfo;
