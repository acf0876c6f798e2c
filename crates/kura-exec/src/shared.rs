//! Common subplans: materializing subtrees of one plan that compute the same
//! result (a view or CTE referenced twice, as in TPC-H Q15) are marked so the
//! executor runs the first and hands its result to the others.
//!
//! Two subtrees are the same when they match node by node: operator, output
//! types, every expression and constant (compared by their exact debug form, so
//! `'a'` and `'a  '`, or `1.0` and `1.00`, stay different), and the very same
//! table objects (the binder hands every reference to a table one shared
//! source). kura's scalar functions are deterministic and a statement reads one
//! snapshot, so equal subtrees yield equal rows.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::plan::{PlanKind, PlanNode};

/// Whether the executor materializes this node's whole result before its
/// consumer runs: only such results can be handed on without running twice.
fn materializes(node: &PlanNode) -> bool {
    matches!(
        node.kind,
        PlanKind::Aggregate { .. }
            | PlanKind::Sort { .. }
            | PlanKind::Window { .. }
            | PlanKind::UnionAll { .. }
    )
}

/// Identity of a shared object (table, index): the address its `Arc` points at.
fn addr<T: ?Sized>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as *const () as usize
}

/// Everything a node is except its inputs, as text that differs whenever the
/// node's result could.
fn local_key(node: &PlanNode) -> String {
    let head = format!("{}|{:?}|", node.operator, node.output);
    let body = match &node.kind {
        PlanKind::Scan {
            table,
            columns,
            zone_predicates,
            filter,
        } => format!(
            "scan {} {columns:?} {zone_predicates:?} {filter:?}",
            addr(table)
        ),
        PlanKind::IndexScan {
            table,
            index,
            ranges,
            columns,
            filter,
            index_only,
        } => format!(
            "index_scan {} {} {ranges:?} {columns:?} {filter:?} {index_only}",
            addr(table),
            addr(index)
        ),
        PlanKind::IndexJoin {
            join_type,
            table,
            index,
            probe_keys,
            columns,
            inner_filter,
            residual,
            index_only,
            ..
        } => format!(
            "index_join {join_type:?} {} {} {probe_keys:?} {columns:?} {inner_filter:?} \
             {residual:?} {index_only}",
            addr(table),
            addr(index)
        ),
        PlanKind::Values { rows } => format!("values {rows:?}"),
        PlanKind::Filter { predicate, .. } => format!("filter {predicate:?}"),
        PlanKind::Project { exprs, .. } => format!("project {exprs:?}"),
        PlanKind::Join {
            join_type,
            probe_keys,
            build_keys,
            residual,
            null_safe,
            ..
        } => format!("join {join_type:?} {probe_keys:?} {build_keys:?} {residual:?} {null_safe:?}"),
        PlanKind::Aggregate {
            group_by,
            aggregates,
            ..
        } => format!("aggregate {group_by:?} {aggregates:?}"),
        PlanKind::Sort { keys, limit, .. } => format!("sort {keys:?} {limit:?}"),
        PlanKind::Limit { offset, limit, .. } => format!("limit {offset} {limit:?}"),
        PlanKind::UnionAll { inputs } => format!("union {}", inputs.len()),
        PlanKind::Replicate { count, .. } => format!("replicate {count}"),
        PlanKind::Window {
            partition_by,
            order_by,
            functions,
            ..
        } => format!("window {partition_by:?} {order_by:?} {functions:?}"),
    };
    head + &body
}

/// Whether two subtrees compute the same rows in the same order.
pub fn same_result(a: &PlanNode, b: &PlanNode) -> bool {
    let (ca, cb) = (a.children(), b.children());
    ca.len() == cb.len()
        && local_key(a) == local_key(b)
        && ca.iter().zip(&cb).all(|(x, y)| same_result(x, y))
}

/// Hashes every subtree bottom-up; records the hash and pre-order position of
/// every materializing node.
fn fingerprint<'p>(
    node: &'p PlanNode,
    next: &mut usize,
    out: &mut Vec<(u64, usize, &'p PlanNode)>,
) -> u64 {
    let at = *next;
    *next += 1;
    let mut h = DefaultHasher::new();
    local_key(node).hash(&mut h);
    for c in node.children() {
        fingerprint(c, next, out).hash(&mut h);
    }
    let hash = h.finish();
    if materializes(node) {
        out.push((hash, at, node));
    }
    hash
}

/// Marks every group of two or more identical materializing subtrees with a
/// shared-result number (1, 2, …); returns how many groups there are.
pub fn mark_shared(plan: &mut PlanNode) -> usize {
    let mut found = Vec::new();
    fingerprint(plan, &mut 0, &mut found);
    let mut by_hash: HashMap<u64, Vec<(usize, &PlanNode)>> = HashMap::new();
    for (hash, at, node) in found {
        by_hash.entry(hash).or_default().push((at, node));
    }
    // Within one hash, nodes are grouped by real equality (a collision must not
    // merge different subtrees).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for candidates in by_hash.into_values() {
        let mut classes: Vec<(&PlanNode, Vec<usize>)> = Vec::new();
        for (at, node) in candidates {
            match classes.iter_mut().find(|(rep, _)| same_result(rep, node)) {
                Some((_, members)) => members.push(at),
                None => classes.push((node, vec![at])),
            }
        }
        groups.extend(
            classes
                .into_iter()
                .map(|c| c.1)
                .filter(|members| members.len() > 1),
        );
    }
    // Numbered in plan order, so EXPLAIN reads top-down.
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort_unstable();
    let mut marks: HashMap<usize, usize> = HashMap::new();
    for (k, g) in groups.iter().enumerate() {
        for &at in g {
            marks.insert(at, k + 1);
        }
    }
    fn assign(node: &mut PlanNode, next: &mut usize, marks: &HashMap<usize, usize>) {
        node.shared = marks.get(next).copied();
        *next += 1;
        for c in node.children_mut() {
            assign(c, next, marks);
        }
    }
    assign(plan, &mut 0, &marks);
    groups.len()
}
