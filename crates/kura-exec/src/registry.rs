//! The operator registry: every operator implementation is registered under a name
//! with a descriptor (what it is, what it consumes and produces); plan nodes name
//! the implementation to run, so alternatives (hash vs nested-loop join) are
//! switched at run time (DESIGN.md "Operators are plug-ins").

use std::sync::Arc;

use crate::ops::join::hash::HashJoin;
use crate::ops::join::nested_loop::NestedLoopJoin;
use crate::ops::join::JoinAlgorithm;

/// The aggregation that groups by runs of a key its input is clustered on
/// (see [`crate::ops::aggregate::OrderedAggregateOp`]).
pub const ORDERED_AGGREGATE: &str = "ordered_aggregate";

/// The role an operator plays in a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorKind {
    Scan,
    IndexScan,
    IndexJoin,
    Values,
    Filter,
    Project,
    Join,
    Aggregate,
    Sort,
    Limit,
    Union,
    Replicate,
    Window,
}

/// What an operator is, for EXPLAIN and for checking plans against implementations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorDescriptor {
    pub name: &'static str,
    pub kind: OperatorKind,
    /// Number of inputs (0 for sources; `usize::MAX` for any number).
    pub inputs: usize,
    pub consumes: &'static str,
    pub produces: &'static str,
}

/// A registered implementation.
pub struct RegisteredOperator {
    pub descriptor: OperatorDescriptor,
    /// Join implementations carry their algorithm.
    pub join: Option<Arc<dyn JoinAlgorithm>>,
}

/// All operator implementations, by name.
pub struct OperatorRegistry {
    ops: Vec<RegisteredOperator>,
}

const fn desc(
    name: &'static str,
    kind: OperatorKind,
    inputs: usize,
    consumes: &'static str,
    produces: &'static str,
) -> OperatorDescriptor {
    OperatorDescriptor {
        name,
        kind,
        inputs,
        consumes,
        produces,
    }
}

impl Default for OperatorRegistry {
    fn default() -> Self {
        use OperatorKind::*;
        let plain = |d: OperatorDescriptor| RegisteredOperator {
            descriptor: d,
            join: None,
        };
        let mut r = OperatorRegistry { ops: Vec::new() };
        r.register(plain(desc(
            "table_scan",
            Scan,
            0,
            "table row groups",
            "batches of the read columns",
        )));
        r.register(plain(desc(
            "index_scan",
            IndexScan,
            0,
            "leaf runs of a B+tree range (one task each)",
            "batches of the fetched rows' columns",
        )));
        r.register(plain(desc(
            "index_nested_loop_join",
            IndexJoin,
            1,
            "probe batches (keys looked up in the inner table's index, per batch)",
            "joined batches",
        )));
        r.register(plain(desc(
            "values",
            Values,
            0,
            "constant rows",
            "one batch",
        )));
        r.register(plain(desc(
            "filter",
            Filter,
            1,
            "batches",
            "batches with narrowed selection",
        )));
        r.register(plain(desc(
            "project",
            Project,
            1,
            "batches",
            "batches of computed columns",
        )));
        r.register(plain(desc(
            "limit",
            Limit,
            1,
            "batches",
            "at most OFFSET+LIMIT rows",
        )));
        r.register(plain(desc(
            "union_all",
            Union,
            usize::MAX,
            "batches of equal types",
            "their concatenation",
        )));
        r.register(plain(desc(
            "replicate",
            Replicate,
            1,
            "batches with a count column",
            "each row count times",
        )));
        r.register(plain(desc(
            "hash_aggregate",
            Aggregate,
            1,
            "batches",
            "one row per group",
        )));
        r.register(plain(desc(
            ORDERED_AGGREGATE,
            Aggregate,
            1,
            "batches clustered on the one group key",
            "one row per group, streamed",
        )));
        r.register(plain(desc(
            "sort",
            Sort,
            1,
            "batches",
            "sorted batches (runs merged)",
        )));
        r.register(plain(desc(
            "window",
            Window,
            1,
            "batches",
            "the rows sorted by partition and order keys, with window function columns",
        )));
        r.register(RegisteredOperator {
            descriptor: desc(
                "hash_join",
                Join,
                2,
                "probe batches + build batches",
                "joined batches",
            ),
            join: Some(Arc::new(HashJoin)),
        });
        r.register(RegisteredOperator {
            descriptor: desc(
                "nested_loop_join",
                Join,
                2,
                "probe batches + build batches",
                "joined batches",
            ),
            join: Some(Arc::new(NestedLoopJoin)),
        });
        r
    }
}

impl OperatorRegistry {
    /// Adds (or replaces) an implementation.
    pub fn register(&mut self, op: RegisteredOperator) {
        self.ops.retain(|o| o.descriptor.name != op.descriptor.name);
        self.ops.push(op);
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredOperator> {
        self.ops.iter().find(|o| o.descriptor.name == name)
    }

    pub fn descriptors(&self) -> Vec<&OperatorDescriptor> {
        self.ops.iter().map(|o| &o.descriptor).collect()
    }

    /// Names of the implementations of one kind.
    pub fn names_of(&self, kind: OperatorKind) -> Vec<&'static str> {
        self.ops
            .iter()
            .filter(|o| o.descriptor.kind == kind)
            .map(|o| o.descriptor.name)
            .collect()
    }

    /// The join implementation for a `join_algorithm` setting value.
    pub fn join_for_setting(setting: &str) -> &'static str {
        match setting {
            "nested_loop" => "nested_loop_join",
            _ => "hash_join",
        }
    }
}
