//! From a parsed query to a physical plan: bind, optimize, and lower the logical
//! plan to kura-exec's plan IR — mapping column ids to positions, pruning columns
//! nobody reads (scans read only what is used), splitting join conditions into
//! equi-keys and residuals, deriving zone-map predicates for scans, and choosing
//! the join implementation.

use std::collections::HashSet;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::{JoinType, PlanKind, PlanNode, SortKey, ZonePredicate};
use sqlparser::ast;

use crate::binder::types::{coerce, common_type};
use crate::binder::{Binder, Params};
use crate::catalog::CatalogProvider;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{map_columns, refs, refs_of, ColId, Columns, Logical};
use crate::optimizer::estimate::{builds_left_side, estimate};
use crate::optimizer::{eager_aggregate, eliminate_aggregates, optimize};

mod index;

/// Choices the session makes for planning.
#[derive(Debug, Clone)]
pub struct PlannerOptions {
    /// Registered join operator to use (`hash_join`, `nested_loop_join`).
    pub join_operator: String,
    /// Whether index scans and index nested-loop joins may be chosen
    /// (`SET enable_index`).
    pub enable_index: bool,
    /// When false, an applicable index plan is taken whatever its estimated
    /// cost (`SET enable_seqscan = off`, as in PostgreSQL).
    pub enable_seqscan: bool,
    /// Whether a LEFT join may build its preserved side when that side is the
    /// smaller (`SET enable_right_join`).
    pub enable_right_join: bool,
    /// Whether an aggregation over joins may pre-aggregate the inputs holding its
    /// arguments before the other joins (`SET enable_eager_aggregate`).
    pub enable_eager_aggregate: bool,
    /// Whether a GROUP BY on one column its input is clustered on may group by
    /// runs (`SET enable_ordered_aggregate`).
    pub enable_ordered_aggregate: bool,
    /// Asked while binding, optimizing and lowering (cancel, `statement_timeout`).
    pub interrupt: Option<crate::interrupt::Interrupt>,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        PlannerOptions {
            join_operator: "hash_join".into(),
            enable_index: true,
            enable_seqscan: true,
            enable_right_join: true,
            enable_eager_aggregate: true,
            enable_ordered_aggregate: true,
            interrupt: None,
        }
    }
}

/// A planned query: the physical plan and its result columns.
pub struct PlannedQuery {
    pub plan: PlanNode,
    pub columns: Vec<(String, DataType)>,
}

/// Binds, optimizes and lowers a query; `params` are the values of `$1`….
pub fn plan_query(
    catalog: &dyn CatalogProvider,
    query: &ast::Query,
    params: Option<Vec<Value>>,
    opts: &PlannerOptions,
) -> SqlResult<PlannedQuery> {
    let _interrupt = crate::interrupt::InterruptScope::enter(opts.interrupt.clone());
    let mut binder = Binder::new(
        catalog,
        Params {
            values: Some(params.unwrap_or_default()),
            types: Vec::new(),
        },
    );
    let bound = binder.bind_query(query, &[])?;
    check_result_width(bound.out.len())?;
    let mut cols = binder.cols;
    let mut logical = optimize(bound.plan, &cols, opts.enable_right_join);
    if opts.enable_eager_aggregate {
        logical = eager_aggregate(logical, &mut cols);
    }
    // After eager aggregation: its final aggregation may group single rows.
    logical = eliminate_aggregates(logical);
    let out_ids: Vec<ColId> = bound.out.iter().map(|o| o.1).collect();
    let lower = Lowering { cols: &cols, opts };
    let _memo = crate::optimizer::estimate_memo::EstimateMemo::over(&logical);
    let required: HashSet<ColId> = out_ids.iter().copied().collect();
    let (mut plan, layout) = lower.lower(&logical, &required)?;
    if layout != out_ids {
        let exprs = out_ids
            .iter()
            .map(|id| remap(&crate::logical::col(*id, cols.ty(*id)), &layout))
            .collect::<SqlResult<Vec<_>>>()?;
        let output = exprs.iter().map(|e| e.data_type()).collect();
        let rows = plan.estimated_rows;
        plan = PlanNode::new(
            "project",
            PlanKind::Project {
                input: Box::new(plan),
                exprs,
            },
            output,
            rows,
        );
    }
    // A view or CTE referenced twice was inlined twice: its equal subplans run once.
    kura_exec::shared::mark_shared(&mut plan);
    // Two joins building the same table (Q21's EXISTS pair) build it once.
    kura_exec::shared::mark_shared_builds(&mut plan);
    plan.number();
    let columns = bound
        .out
        .iter()
        .map(|(n, id)| (n.clone(), cols.ty(*id)))
        .collect();
    Ok(PlannedQuery { plan, columns })
}

/// PostgreSQL's bound on a target list: a result row's description holds its
/// column count in 16 bits, so a wider one would not even reach the client
/// intact.
pub const MAX_RESULT_COLUMNS: usize = 1664;

fn check_result_width(columns: usize) -> SqlResult<()> {
    if columns > MAX_RESULT_COLUMNS {
        return Err(SqlError::TooManyColumns {
            columns,
            limit: MAX_RESULT_COLUMNS,
        });
    }
    Ok(())
}

/// Result columns: name and type.
pub type ResultColumns = Vec<(String, DataType)>;

/// Parameter types and result columns of a query, without planning or running it.
pub fn describe_query(
    catalog: &dyn CatalogProvider,
    query: &ast::Query,
) -> SqlResult<(Vec<DataType>, ResultColumns)> {
    let mut binder = Binder::new(catalog, Params::default());
    let bound = binder.bind_query(query, &[])?;
    check_result_width(bound.out.len())?;
    let cols = bound
        .out
        .iter()
        .map(|(n, id)| (n.clone(), binder.cols.ty(*id)))
        .collect();
    Ok((binder.param_types(), cols))
}

/// Rewrites column ids into positions of `layout`.
pub(crate) fn remap(e: &PhysExpr, layout: &[ColId]) -> SqlResult<PhysExpr> {
    let mut missing = None;
    let out = map_columns(
        e,
        &mut |id, ty| match layout.iter().position(|c| *c == id) {
            Some(i) => PhysExpr::Column {
                index: i,
                data_type: ty,
            },
            None => {
                missing = Some(id);
                PhysExpr::Column {
                    index: usize::MAX,
                    data_type: ty,
                }
            }
        },
    );
    match missing {
        Some(id) => Err(SqlError::Internal(format!(
            "column id {id} is not produced below its use"
        ))),
        None => Ok(out),
    }
}

pub(crate) struct Lowering<'a> {
    cols: &'a Columns,
    opts: &'a PlannerOptions,
}

/// `column op constant` conjuncts usable against page min/max.
pub(crate) fn zone_predicate(e: &PhysExpr, layout: &[(usize, ColId)]) -> Option<ZonePredicate> {
    let PhysExpr::Binary {
        op, left, right, ..
    } = e
    else {
        return None;
    };
    if !op.is_comparison() {
        return None;
    }
    let (c, v, op) = match (&**left, &**right) {
        (PhysExpr::Column { index, .. }, PhysExpr::Literal { value, .. }) => (*index, value, *op),
        (PhysExpr::Literal { value, .. }, PhysExpr::Column { index, .. }) => {
            (*index, value, op.flip())
        }
        _ => return None,
    };
    if v.is_null() || *op_is(op) {
        return None;
    }
    let table_column = layout.iter().find(|(_, id)| *id == c)?.0;
    Some(ZonePredicate {
        table_column,
        op,
        value: v.clone(),
    })
}

fn op_is(op: BinaryOp) -> &'static bool {
    if op == BinaryOp::NotEq {
        &true
    } else {
        &false
    }
}

impl Lowering<'_> {
    pub(crate) fn node(
        &self,
        plan: &Logical,
        op: &str,
        kind: PlanKind,
        output: Vec<DataType>,
    ) -> PlanNode {
        PlanNode::new(op, kind, output, estimate(plan).rows)
    }

    pub(crate) fn types(&self, layout: &[ColId]) -> Vec<DataType> {
        layout.iter().map(|c| self.cols.ty(*c)).collect()
    }

    /// Columns an operator's output has but nothing above reads are dropped
    /// right after it (a projection that moves the kept columns, see
    /// kura-exec's ProjectOp), so that joins and aggregations above never copy
    /// them: a scan's columns read only for its filter (TPC-H Q13's
    /// `o_comment` would otherwise ride into the join's build table), a join's
    /// keys (TPC-H Q9's part and supplier keys, eight of the fourteen columns
    /// of the line items built against orders).
    fn drop_unread_columns(
        &self,
        plan: &Logical,
        scan: PlanNode,
        layout: Vec<ColId>,
        required: &HashSet<ColId>,
    ) -> (PlanNode, Vec<ColId>) {
        let kept: Vec<usize> = (0..layout.len())
            .filter(|&i| required.contains(&layout[i]))
            .collect();
        if kept.is_empty() || kept.len() == layout.len() {
            return (scan, layout);
        }
        let exprs: Vec<PhysExpr> = kept
            .iter()
            .map(|&i| PhysExpr::Column {
                index: i,
                data_type: scan.output[i],
            })
            .collect();
        let output = exprs.iter().map(|e| e.data_type()).collect();
        let kind = PlanKind::Project {
            input: Box::new(scan),
            exprs,
        };
        let layout = kept.iter().map(|&i| layout[i]).collect();
        (self.node(plan, "project", kind, output), layout)
    }

    pub(crate) fn lower(
        &self,
        plan: &Logical,
        required: &HashSet<ColId>,
    ) -> SqlResult<(PlanNode, Vec<ColId>)> {
        crate::interrupt::check()?;
        Ok(match plan {
            Logical::Scan {
                table,
                cols,
                filters,
            } => {
                if let Some(found) = self.index_scan(plan, required)? {
                    return Ok(found);
                }
                let mut need = required.clone();
                filters.iter().for_each(|f| refs(f, &mut need));
                let read: Vec<(usize, ColId)> = cols
                    .iter()
                    .filter(|(_, id)| need.contains(id))
                    .copied()
                    .collect();
                let layout: Vec<ColId> = read.iter().map(|r| r.1).collect();
                let zone_predicates = filters
                    .iter()
                    .filter_map(|f| zone_predicate(f, cols))
                    .collect();
                let filter = crate::logical::conjunction(filters.clone())
                    .map(|f| remap(&f, &layout))
                    .transpose()?;
                let kind = PlanKind::Scan {
                    table: table.clone(),
                    columns: read.iter().map(|r| r.0).collect(),
                    zone_predicates,
                    filter,
                };
                let scan = self.node(plan, "table_scan", kind, self.types(&layout));
                self.drop_unread_columns(plan, scan, layout, required)
            }
            Logical::Values { rows, cols } => (
                self.node(
                    plan,
                    "values",
                    PlanKind::Values { rows: rows.clone() },
                    self.types(cols),
                ),
                cols.clone(),
            ),
            Logical::Filter { input, predicate } => {
                let mut need = required.clone();
                refs(predicate, &mut need);
                let (child, layout) = self.lower(input, &need)?;
                let predicate = remap(predicate, &layout)?;
                let out = child.output.clone();
                (
                    self.node(
                        plan,
                        "filter",
                        PlanKind::Filter {
                            input: Box::new(child),
                            predicate,
                        },
                        out,
                    ),
                    layout,
                )
            }
            Logical::Project { input, exprs } => {
                let kept: Vec<&(PhysExpr, ColId)> =
                    exprs.iter().filter(|e| required.contains(&e.1)).collect();
                let mut need = HashSet::new();
                kept.iter().for_each(|e| refs(&e.0, &mut need));
                let (child, layout) = self.lower(input, &need)?;
                let pexprs = kept
                    .iter()
                    .map(|e| remap(&e.0, &layout))
                    .collect::<SqlResult<Vec<_>>>()?;
                let (child, pexprs) = through_column_projection(child, pexprs);
                let out_layout: Vec<ColId> = kept.iter().map(|e| e.1).collect();
                let output = pexprs.iter().map(|e| e.data_type()).collect();
                (
                    self.node(
                        plan,
                        "project",
                        PlanKind::Project {
                            input: Box::new(child),
                            exprs: pexprs,
                        },
                        output,
                    ),
                    out_layout,
                )
            }
            Logical::Join {
                join_type,
                left,
                right,
                on,
                mark,
            } => {
                if mark.is_none() {
                    if let Some(found) = self.index_join(plan, required)? {
                        return Ok(found);
                    }
                }
                // A LEFT join whose preserved side is much the smaller builds that
                // side and probes the other (a RIGHT join): TPC-H Q13 then builds
                // on customer, not on ten times as many orders.
                // Semi and anti joins likewise (RIGHT SEMI / RIGHT ANTI): TPC-H Q21
                // builds its 76,000 late line items and marks them while the other
                // line items of their orders probe, instead of building those.
                let smaller_left = || self.opts.enable_right_join && builds_left_side(left, right);
                let (left, right, join_type) = match join_type {
                    JoinType::Left if smaller_left() => (right, left, &JoinType::Right),
                    JoinType::Semi | JoinType::Anti
                        if mark.is_none() && has_equi_key(on, left, right) && smaller_left() =>
                    {
                        let swapped = if *join_type == JoinType::Semi {
                            &JoinType::RightSemi
                        } else {
                            &JoinType::RightAnti
                        };
                        (right, left, swapped)
                    }
                    _ => (left, right, join_type),
                };
                let mut need = required.clone();
                on.iter().for_each(|p| refs(p, &mut need));
                let lids: HashSet<ColId> = left.output().into_iter().collect();
                let rids: HashSet<ColId> = right.output().into_iter().collect();
                let lneed = need.iter().filter(|c| lids.contains(c)).copied().collect();
                let rneed = need.iter().filter(|c| rids.contains(c)).copied().collect();
                let (lplan, llayout) = self.lower(left, &lneed)?;
                let (rplan, rlayout) = self.lower(right, &rneed)?;
                let mut probe_keys = Vec::new();
                let mut build_keys = Vec::new();
                let mut null_safe = Vec::new();
                let mut residual = Vec::new();
                // A null-aware join's last condition is its IN key, a key pair even when
                // the probe side is a constant (`1 IN (SELECT …)`).
                let in_key = join_type.null_aware().then(|| on.len().saturating_sub(1));
                for (at, p) in on.iter().enumerate() {
                    if Some(at) == in_key {
                        let PhysExpr::Binary {
                            op: BinaryOp::Eq,
                            left: a,
                            right: b,
                            ..
                        } = p
                        else {
                            return Err(SqlError::Internal("IN key is not an equality".into()));
                        };
                        let t = common_type(a.data_type(), b.data_type())
                            .ok_or_else(|| SqlError::Internal("IN key types".into()))?;
                        probe_keys
                            .push(remap(&coerce((**a).clone(), t, Pos::default())?, &llayout)?);
                        build_keys
                            .push(remap(&coerce((**b).clone(), t, Pos::default())?, &rlayout)?);
                        null_safe.push(false);
                        continue;
                    }
                    if let PhysExpr::Binary {
                        op: op @ (BinaryOp::Eq | BinaryOp::NotDistinct),
                        left: a,
                        right: b,
                        ..
                    } = p
                    {
                        let (ra, rb) = (refs_of(a), refs_of(b));
                        let side = |s: &HashSet<ColId>, ids: &HashSet<ColId>| {
                            !s.is_empty() && s.iter().all(|c| ids.contains(c))
                        };
                        let pair = if side(&ra, &lids) && side(&rb, &rids) {
                            Some((a, b))
                        } else if side(&ra, &rids) && side(&rb, &lids) {
                            Some((b, a))
                        } else {
                            None
                        };
                        if let Some((pk, bk)) = pair {
                            let t = common_type(pk.data_type(), bk.data_type())
                                .ok_or_else(|| SqlError::Internal("join key types".into()))?;
                            probe_keys.push(remap(
                                &coerce((**pk).clone(), t, Pos::default())?,
                                &llayout,
                            )?);
                            build_keys.push(remap(
                                &coerce((**bk).clone(), t, Pos::default())?,
                                &rlayout,
                            )?);
                            null_safe.push(*op == BinaryOp::NotDistinct);
                            continue;
                        }
                    }
                    residual.push(p.clone());
                }
                let mut both = llayout.clone();
                both.extend(rlayout.iter().copied());
                let residual = crate::logical::conjunction(residual)
                    .map(|r| remap(&r, &both))
                    .transpose()?;
                let mut layout = if join_type.emits_probe_columns() {
                    llayout.clone()
                } else {
                    Vec::new()
                };
                if join_type.emits_build_columns() || !join_type.emits_probe_columns() {
                    layout.extend(rlayout);
                }
                if let Some(m) = mark {
                    layout.push(*m);
                }
                let kind = PlanKind::Join {
                    join_type: *join_type,
                    probe: Box::new(lplan),
                    build: Box::new(rplan),
                    probe_keys,
                    build_keys,
                    residual,
                    null_safe,
                };
                let op = self.opts.join_operator.clone();
                let join = self.node(plan, &op, kind, self.types(&layout));
                self.drop_unread_columns(plan, join, layout, required)
            }
            Logical::Aggregate { input, group, aggs } => {
                let mut need = HashSet::new();
                group.iter().for_each(|g| refs(&g.0, &mut need));
                aggs.iter()
                    .flat_map(|a| a.0.exprs())
                    .for_each(|a| refs(a, &mut need));
                let (child, layout) = self.lower(input, &need)?;
                let group_by = group
                    .iter()
                    .map(|g| remap(&g.0, &layout))
                    .collect::<SqlResult<Vec<_>>>()?;
                let aggregates = aggs
                    .iter()
                    .map(|(a, _)| {
                        let mut a = a.clone();
                        a.try_map_exprs(|x| remap(x, &layout))?;
                        Ok(a)
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                let out: Vec<ColId> = group
                    .iter()
                    .map(|g| g.1)
                    .chain(aggs.iter().map(|a| a.1))
                    .collect();
                // One key the input is stored in the order of (lineitem by
                // l_orderkey): grouped by runs as the rows stream past.
                let ordered = self.opts.enable_ordered_aggregate
                    && matches!(
                        group_by.as_slice(),
                        [PhysExpr::Column { index, .. }] if kura_exec::plan::clustered_on(&child, *index)
                    );
                let operator = if ordered {
                    kura_exec::registry::ORDERED_AGGREGATE
                } else {
                    "hash_aggregate"
                };
                let kind = PlanKind::Aggregate {
                    input: Box::new(child),
                    group_by,
                    aggregates,
                    key_range: dense_key_range(input, group),
                };
                (self.node(plan, operator, kind, self.types(&out)), out)
            }
            Logical::Sort { input, keys, limit } => {
                let mut need = required.clone();
                keys.iter().for_each(|k| refs(&k.expr, &mut need));
                let (child, layout) = self.lower(input, &need)?;
                let keys = keys
                    .iter()
                    .map(|k| {
                        Ok(SortKey {
                            expr: remap(&k.expr, &layout)?,
                            descending: k.descending,
                            nulls_first: k.nulls_first,
                        })
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                let out = child.output.clone();
                (
                    self.node(
                        plan,
                        "sort",
                        PlanKind::Sort {
                            input: Box::new(child),
                            keys,
                            limit: *limit,
                        },
                        out,
                    ),
                    layout,
                )
            }
            Logical::Limit {
                input,
                offset,
                limit,
            } => {
                let (child, layout) = self.lower(input, required)?;
                let out = child.output.clone();
                let kind = PlanKind::Limit {
                    input: Box::new(child),
                    offset: *offset,
                    limit: *limit,
                };
                (self.node(plan, "limit", kind, out), layout)
            }
            Logical::Replicate { input, count } => {
                let mut need = required.clone();
                need.insert(*count);
                let (child, layout) = self.lower(input, &need)?;
                let count = layout
                    .iter()
                    .position(|c| c == count)
                    .ok_or_else(|| SqlError::Internal("replicate count column".into()))?;
                let out = child.output.clone();
                let kind = PlanKind::Replicate {
                    input: Box::new(child),
                    count,
                };
                (self.node(plan, "replicate", kind, out), layout)
            }
            Logical::Window {
                input,
                partition,
                order,
                funcs,
            } => {
                let mut need = required.clone();
                plan.referenced(&mut need);
                let own: HashSet<ColId> = funcs.iter().map(|f| f.1).collect();
                need.retain(|c| !own.contains(c));
                let (child, layout) = self.lower(input, &need)?;
                let partition_by = partition
                    .iter()
                    .map(|e| remap(e, &layout))
                    .collect::<SqlResult<Vec<_>>>()?;
                let order_by = order
                    .iter()
                    .map(|k| {
                        Ok(SortKey {
                            expr: remap(&k.expr, &layout)?,
                            descending: k.descending,
                            nulls_first: k.nulls_first,
                        })
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                let functions = funcs
                    .iter()
                    .map(|(f, _)| {
                        let mut f = f.clone();
                        for e in f.exprs_mut() {
                            *e = remap(e, &layout)?;
                        }
                        Ok(f)
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                let mut out = layout.clone();
                out.extend(funcs.iter().map(|f| f.1));
                let kind = PlanKind::Window {
                    input: Box::new(child),
                    partition_by,
                    order_by,
                    functions,
                };
                (self.node(plan, "window", kind, self.types(&out)), out)
            }
            Logical::Union { inputs, cols } => {
                let mut nodes = Vec::new();
                for (p, ids) in inputs {
                    let need: HashSet<ColId> = ids.iter().copied().collect();
                    let (n, layout) = self.lower(p, &need)?;
                    if layout != *ids {
                        return Err(SqlError::Internal("union input layout".into()));
                    }
                    nodes.push(n);
                }
                (
                    self.node(
                        plan,
                        "union_all",
                        PlanKind::UnionAll { inputs: nodes },
                        self.types(cols),
                    ),
                    cols.clone(),
                )
            }
        })
    }
}

/// Slots per estimated group a key range may take to be numbered as an array
/// (as many as the aggregation's own dense numbering allows).
const RANGE_SLOTS_PER_GROUP: f64 = 8.0;

/// The estimated range of a single integer group key that is a column of the
/// aggregation's input, when its estimated distinct values are dense in it.
fn dense_key_range(input: &Logical, group: &[(PhysExpr, ColId)]) -> Option<(i64, i64)> {
    let [(PhysExpr::Column { index, data_type }, _)] = group else {
        return None;
    };
    if !matches!(
        data_type,
        DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Date
    ) {
        return None;
    }
    let est = estimate(input);
    let &(lo, hi) = est.range.get(index)?;
    let ndv = est
        .ndv
        .get(index)
        .copied()
        .unwrap_or(est.rows)
        .min(est.rows);
    let span = hi - lo + 1.0;
    let dense = lo.is_finite()
        && hi.is_finite()
        && (1.0..=kura_exec::ops::aggregate::MAX_RANGE_SLOTS as f64).contains(&span)
        && span <= ndv * RANGE_SLOTS_PER_GROUP;
    dense.then(|| (lo.floor() as i64, hi.ceil() as i64))
}

/// Whether `on` holds an equality between an expression of `left` and one of
/// `right`: a hash join's key (a join without one compares every pair).
/// A projection's `exprs` over `child`, read through `child` when that only
/// picks columns (the unread columns a join or scan dropped): one projection
/// instead of two.
fn through_column_projection(child: PlanNode, exprs: Vec<PhysExpr>) -> (PlanNode, Vec<PhysExpr>) {
    let picked: Option<Vec<usize>> = match &child.kind {
        PlanKind::Project { exprs: inner, .. } => inner
            .iter()
            .map(|e| match e {
                PhysExpr::Column { index, .. } => Some(*index),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    match (picked, child.kind) {
        (Some(picked), PlanKind::Project { input, .. }) => {
            let exprs = exprs
                .iter()
                .map(|e| {
                    map_columns(e, &mut |i, ty| PhysExpr::Column {
                        index: picked[i],
                        data_type: ty,
                    })
                })
                .collect();
            (*input, exprs)
        }
        (_, kind) => (PlanNode { kind, ..child }, exprs),
    }
}

fn has_equi_key(on: &[PhysExpr], left: &Logical, right: &Logical) -> bool {
    let lids: HashSet<ColId> = left.output().into_iter().collect();
    let rids: HashSet<ColId> = right.output().into_iter().collect();
    let within = |e: &PhysExpr, ids: &HashSet<ColId>| {
        let r = refs_of(e);
        !r.is_empty() && r.iter().all(|c| ids.contains(c))
    };
    on.iter().any(|p| match p {
        PhysExpr::Binary {
            op: BinaryOp::Eq,
            left: a,
            right: b,
            ..
        } => (within(a, &lids) && within(b, &rids)) || (within(a, &rids) && within(b, &lids)),
        _ => false,
    })
}
