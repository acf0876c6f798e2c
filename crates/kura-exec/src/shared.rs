//! Common subplans: materializing subtrees of one plan that compute the same
//! result (a view or CTE referenced twice, as in TPC-H Q15) are marked so the
//! executor runs the first and hands its result to the others; joins that would
//! build the same table (TPC-H Q21's two EXISTS) are marked so it is built once.
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

use crate::plan::{JoinType, PlanKind, PlanNode};

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
        // A long VALUES list (a generate_series of a million rows) is known by
        // its address: printing it to compare would cost more than sharing saves.
        PlanKind::Values { rows } if rows.len() > 1024 => format!("values@{:p}", rows.as_ptr()),
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

/// Every subtree's hash (as `fingerprint` computes it), by node address.
fn subtree_hashes(node: &PlanNode, out: &mut HashMap<usize, u64>) -> u64 {
    let mut h = DefaultHasher::new();
    local_key(node).hash(&mut h);
    for c in node.children() {
        subtree_hashes(c, out).hash(&mut h);
    }
    let hash = h.finish();
    out.insert(node as *const PlanNode as usize, hash);
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
    assign(plan, &marks, |node, mark| node.shared = mark);
    groups.len()
}

/// Sets every node's mark (by pre-order position in `marks`, `None` elsewhere).
fn assign(
    plan: &mut PlanNode,
    marks: &HashMap<usize, usize>,
    set: fn(&mut PlanNode, Option<usize>),
) {
    fn walk(
        node: &mut PlanNode,
        next: &mut usize,
        marks: &HashMap<usize, usize>,
        set: fn(&mut PlanNode, Option<usize>),
    ) {
        set(node, marks.get(next).copied());
        *next += 1;
        for c in node.children_mut() {
            walk(c, next, marks, set);
        }
    }
    walk(plan, &mut 0, marks, set);
}

/// The part of a join that determines its built table, when that table may be
/// handed to another join: the operator, join type, build keys and NULL-safety
/// (the build subtree is compared separately). Full joins record which build
/// rows matched and null-aware joins the NULLs of their build side per join, so
/// they keep their own tables.
fn build_key(node: &PlanNode) -> Option<(String, &PlanNode)> {
    let PlanKind::Join {
        join_type,
        build,
        build_keys,
        null_safe,
        ..
    } = &node.kind
    else {
        return None;
    };
    let shareable = matches!(
        join_type,
        JoinType::Inner
            | JoinType::Semi
            | JoinType::Anti
            | JoinType::Mark
            | JoinType::Left
            | JoinType::Single
    );
    shareable.then(|| {
        (
            format!(
                "{} {join_type:?} {build_keys:?} {null_safe:?}",
                node.operator
            ),
            &**build,
        )
    })
}

/// Marks every group of two or more joins that would build the same table
/// with a shared-build number (1, 2, …); returns how many groups there are.
pub fn mark_shared_builds(plan: &mut PlanNode) -> usize {
    fn collect<'p>(node: &'p PlanNode, next: &mut usize, out: &mut Vec<(usize, &'p PlanNode)>) {
        out.push((*next, node));
        *next += 1;
        for c in node.children() {
            collect(c, next, out);
        }
    }
    let mut all = Vec::new();
    collect(plan, &mut 0, &mut all);
    // Builds are compared by their subtree hashes first: comparing the builds
    // of a chain of nested subqueries node by node cost the cube of its depth
    // (200 levels planned for 5 s).
    let mut hashes = HashMap::new();
    subtree_hashes(plan, &mut hashes);
    let hash_of = |n: &PlanNode| hashes.get(&(n as *const PlanNode as usize)).copied();
    let mut groups: Vec<(String, Option<u64>, &PlanNode, Vec<usize>)> = Vec::new();
    for (at, node) in all {
        let Some((key, build)) = build_key(node) else {
            continue;
        };
        let hash = hash_of(build);
        match groups
            .iter_mut()
            .find(|(k, h, b, _)| *k == key && *h == hash && same_result(b, build))
        {
            Some((_, _, _, members)) => members.push(at),
            None => groups.push((key, hash, build, vec![at])),
        }
    }
    let marks: HashMap<usize, usize> = groups
        .iter()
        .filter(|g| g.3.len() > 1)
        .enumerate()
        .flat_map(|(k, g)| g.3.iter().map(move |&at| (at, k + 1)))
        .collect();
    let count = groups.iter().filter(|g| g.3.len() > 1).count();
    assign(plan, &marks, |node, mark| node.shared_build = mark);
    count
}

#[cfg(test)]
mod tests {
    use kura_common::{DataType, Value, Vector};

    use super::*;
    use crate::expr::PhysExpr;
    use crate::source::{MemTable, SourceColumn, TableSource};

    fn table() -> Arc<dyn TableSource> {
        let v = Vector::from_values(DataType::Integer, &[Value::Integer(1)]).unwrap();
        MemTable::new(
            "t",
            vec![SourceColumn {
                name: "a".into(),
                data_type: DataType::Integer,
                nullable: true,
            }],
            vec![v],
        )
        .into_arc()
    }

    fn scan(t: &Arc<dyn TableSource>) -> PlanNode {
        PlanNode::new(
            "table_scan",
            PlanKind::Scan {
                table: t.clone(),
                columns: vec![0],
                zone_predicates: vec![],
                filter: None,
            },
            vec![DataType::Integer],
            1.0,
        )
    }

    fn join(join_type: JoinType, probe: PlanNode, build: PlanNode, build_key: usize) -> PlanNode {
        let col = |index| PhysExpr::Column {
            index,
            data_type: DataType::Integer,
        };
        let output = probe.output.clone();
        PlanNode::new(
            "hash_join",
            PlanKind::Join {
                join_type,
                probe: Box::new(probe),
                build: Box::new(build),
                probe_keys: vec![col(0)],
                build_keys: vec![col(build_key)],
                residual: None,
                null_safe: vec![false],
            },
            output,
            1.0,
        )
    }

    /// The shared-build marks of the two joins of `outer(inner(p, b1), b2)`.
    fn marks(
        outer: JoinType,
        inner: JoinType,
        key2: usize,
        other_table: bool,
    ) -> [Option<usize>; 2] {
        let t = table();
        let u = if other_table { table() } else { t.clone() };
        let inner = join(inner, scan(&t), scan(&t), 0);
        let outer = join(outer, inner, scan(&u), key2);
        let mut plan = outer;
        mark_shared_builds(&mut plan);
        let PlanKind::Join { probe, .. } = &plan.kind else {
            unreachable!()
        };
        [plan.shared_build, probe.shared_build]
    }

    #[test]
    fn joins_building_the_same_table_share_it() {
        use JoinType::*;
        assert_eq!(marks(Semi, Semi, 0, false), [Some(1), Some(1)]);
        // Different join types build different tables: not shared.
        assert_eq!(marks(Anti, Semi, 0, false), [None, None]);
        // Another table object, or another build key: not shared.
        assert_eq!(marks(Semi, Semi, 0, true), [None, None]);
        assert_eq!(marks(Semi, Semi, 1, false), [None, None]);
        let t = table();
        let mut p = join(
            Semi,
            join(Semi, scan(&t), scan(&t), 0),
            PlanNode::new(
                "project",
                PlanKind::Project {
                    input: Box::new(scan(&t)),
                    exprs: vec![PhysExpr::Literal {
                        value: Value::Integer(2),
                        data_type: DataType::Integer,
                    }],
                },
                vec![DataType::Integer],
                1.0,
            ),
            0,
        );
        assert_eq!(mark_shared_builds(&mut p), 0);
        // Full joins keep their own tables (they record matched build rows).
        assert_eq!(marks(Full, Full, 0, false), [None, None]);
    }
}
