//! Compiles a physical plan into pipelines and runs them: each breaker (join build,
//! aggregation, sort, union input, result) ends a pipeline whose output feeds the
//! next as a source or as a probe table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kura_common::{Batch, DataType};

use crate::context::ExecContext;
use crate::error::{ExecError, ExecResult};
use crate::expr::conjuncts::cheap_first;
use crate::next_reads;
use crate::ops::aggregate::{AggregateSink, OrderedAggregateOp};
use crate::ops::collect::CollectSink;
use crate::ops::index::{IndexJoinSource, IndexJoinSpec, IndexScanSource};
use crate::ops::join::batch_bytes;
use crate::ops::join::filter::KeyFilter;
use crate::ops::join::spill::{GraceJoinSource, HybridProbeOp, ProbePartitionSink};
use crate::ops::join::{JoinBuildSink, JoinProbeOp, JoinSpec, JoinTable};
use crate::ops::rows_to_batch;
use crate::ops::scan::ScanSource;
use crate::ops::sort::SortSink;
use crate::ops::streaming::{FilterOp, LimitOp, MemorySource, ProjectOp, ReplicateOp};
use crate::ops::window::WindowSink;
use crate::pipeline::{Phase, Pipeline, Sink, Source};
use crate::plan::{PlanKind, PlanNode};
use crate::registry::{OperatorKind, OperatorRegistry, ORDERED_AGGREGATE};
use crate::spill::partitions::Partitions;

/// What one run of a plan hands between its nodes while compiling: results of
/// shared subplans (see [`crate::shared`]) computed so far, by shared-result
/// number, and filters from built join tables waiting for the scan they are for
/// (see [`crate::ops::join::filter`]), by the scan's node id.
#[derive(Default)]
struct SharedResults {
    results: Mutex<HashMap<usize, Materialized>>,
    key_filters: Mutex<HashMap<usize, Vec<Arc<KeyFilter>>>>,
    /// Built join tables of shared builds (see [`crate::shared::mark_shared_builds`]),
    /// by shared-build number.
    tables: Mutex<HashMap<usize, Arc<JoinTable>>>,
}

/// The output of a materializing node: its rows in memory, or a source that
/// reads them (a sort that spilled reads its sorted file), and their count.
#[derive(Clone)]
struct Materialized {
    source: Arc<dyn Source>,
    rows: usize,
}

impl Materialized {
    fn batches(batches: Vec<Batch>) -> Materialized {
        let rows = batches.iter().map(|b| b.len()).sum();
        Materialized {
            source: Arc::new(MemorySource::new(batches)),
            rows,
        }
    }
}

/// Runs plans with a registry of operator implementations.
pub struct Executor<'a> {
    pub registry: &'a OperatorRegistry,
    pub ctx: &'a ExecContext,
}

fn kind_of(k: &PlanKind) -> OperatorKind {
    match k {
        PlanKind::Scan { .. } => OperatorKind::Scan,
        PlanKind::IndexScan { .. } => OperatorKind::IndexScan,
        PlanKind::IndexJoin { .. } => OperatorKind::IndexJoin,
        PlanKind::Values { .. } => OperatorKind::Values,
        PlanKind::Filter { .. } => OperatorKind::Filter,
        PlanKind::Project { .. } => OperatorKind::Project,
        PlanKind::Join { .. } => OperatorKind::Join,
        PlanKind::Aggregate { .. } => OperatorKind::Aggregate,
        PlanKind::Sort { .. } => OperatorKind::Sort,
        PlanKind::Limit { .. } => OperatorKind::Limit,
        PlanKind::UnionAll { .. } => OperatorKind::Union,
        PlanKind::Replicate { .. } => OperatorKind::Replicate,
        PlanKind::Window { .. } => OperatorKind::Window,
    }
}

/// Tells a listening profiler what each plan node of the query is (its EXPLAIN
/// line), so its per-operator figures carry names; nothing when none listens.
fn name_operators(plan: &PlanNode) {
    if kura_common::probe::enabled() {
        kura_common::probe::name(plan.id, &plan.label());
        for child in plan.children() {
            name_operators(child);
        }
    }
}

impl Executor<'_> {
    /// Runs the plan to completion and returns its output batches.
    pub fn run(&self, plan: &PlanNode) -> ExecResult<Vec<Batch>> {
        name_operators(plan);
        let pipeline = self.compile(plan, &SharedResults::default())?;
        let sink = Arc::new(CollectSink::default());
        pipeline.run(sink.clone(), plan.id, self.ctx)?;
        Ok(sink.take())
    }

    /// Runs the plan and hands its output batches to `deliver` in order while
    /// the query runs, so a large result never sits whole in memory (see
    /// [`crate::stream`]). `deliver` answers false when no more rows are wanted
    /// (the client went away): the query then stops.
    pub fn run_streaming(
        &self,
        plan: &PlanNode,
        deliver: &mut dyn FnMut(Batch) -> ExecResult<bool>,
    ) -> ExecResult<()> {
        name_operators(plan);
        let pipeline = self.compile(plan, &SharedResults::default())?;
        crate::stream::stream(&pipeline, plan.id, self.ctx, deliver)
    }

    fn run_into(
        &self,
        plan: &PlanNode,
        sink: Arc<dyn Sink>,
        sink_node: usize,
        shared: &SharedResults,
    ) -> ExecResult<()> {
        self.compile(plan, shared)?.run(sink, sink_node, self.ctx)
    }

    fn materialized(&self, batches: Vec<Batch>, node: usize) -> Pipeline {
        Pipeline::of(Arc::new(MemorySource::new(batches)), node)
    }

    /// The pipeline reading a materializing node's output.
    fn read_materialized(&self, out: Materialized) -> Pipeline {
        Pipeline::of(out.source, crate::context::NO_NODE)
    }

    /// The pipeline of a materializing node: its result from `shared` when an
    /// identical node has already run, else computed by `compute` (and kept
    /// there when the node is shared).
    fn materializing(
        &self,
        node: &PlanNode,
        shared: &SharedResults,
        compute: impl FnOnce() -> ExecResult<Vec<Batch>>,
    ) -> ExecResult<Pipeline> {
        self.materializing_source(node, shared, || compute().map(Materialized::batches))
    }

    /// [`Executor::materializing`] of a node whose output may be a source.
    fn materializing_source(
        &self,
        node: &PlanNode,
        shared: &SharedResults,
        compute: impl FnOnce() -> ExecResult<Materialized>,
    ) -> ExecResult<Pipeline> {
        let done = node.shared.and_then(|k| {
            shared
                .results
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&k)
                .cloned()
        });
        if let Some(done) = done {
            self.ctx.record(node.id, |s| s.rows_out += done.rows as u64);
            return Ok(self.read_materialized(done));
        }
        let out = compute()?;
        self.ctx.record(node.id, |s| s.rows_out += out.rows as u64);
        if let Some(k) = node.shared {
            shared
                .results
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(k, out.clone());
        }
        Ok(self.read_materialized(out))
    }

    /// Builds the pipeline that produces `node`'s output, running every pipeline
    /// below a breaker first.
    fn compile(&self, node: &PlanNode, shared: &SharedResults) -> ExecResult<Pipeline> {
        let reg = self
            .registry
            .get(&node.operator)
            .ok_or_else(|| ExecError::UnknownOperator {
                name: node.operator.clone(),
                known: self
                    .registry
                    .descriptors()
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if reg.descriptor.kind != kind_of(&node.kind) {
            return Err(ExecError::Internal(format!(
                "operator {} cannot run a {:?} node",
                node.operator,
                kind_of(&node.kind)
            )));
        }
        Ok(match &node.kind {
            PlanKind::Scan {
                table,
                columns,
                zone_predicates,
                filter,
            } => {
                let mut key_filters = shared
                    .key_filters
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&node.id)
                    .unwrap_or_default();
                // The smallest build side first: it likely drops the most rows,
                // and its look-ups are the cheapest.
                key_filters.sort_by_key(|f| f.table.side.rows);
                let scan = ScanSource::new(
                    table.clone(),
                    columns.clone(),
                    zone_predicates,
                    filter.as_ref().map(cheap_first),
                    node.id,
                )
                .with_key_filters(key_filters);
                let skipped = scan.skipped_rows();
                self.ctx.record(node.id, |s| s.skipped_rows += skipped);
                Pipeline::of(Arc::new(scan), node.id)
            }
            PlanKind::IndexScan {
                table,
                index,
                ranges,
                columns,
                filter,
                index_only,
            } => Pipeline::of(
                Arc::new(IndexScanSource::new(
                    table.clone(),
                    index.clone(),
                    ranges,
                    columns.clone(),
                    filter.clone(),
                    *index_only,
                    node.id,
                )?),
                node.id,
            ),
            PlanKind::IndexJoin {
                join_type,
                probe,
                table,
                index,
                probe_keys,
                columns,
                inner_filter,
                residual,
                index_only,
            } => {
                let filter_columns = inner_filter.as_ref().map_or(0, |f| {
                    let mut used = Vec::new();
                    f.columns(&mut used);
                    used.iter().map(|c| c + 1).max().unwrap_or(0)
                });
                let spec = IndexJoinSpec {
                    join_type: *join_type,
                    table: table.clone(),
                    index: index.clone(),
                    probe_keys: probe_keys.clone(),
                    columns: columns.clone(),
                    inner_filter: inner_filter.clone(),
                    filter_columns,
                    residual: residual.clone(),
                    index_only: *index_only,
                    matches_per_key: node.estimated_rows / probe.estimated_rows.max(1.0),
                    node: node.id,
                };
                // The probe side is materialised (the optimizer picks this join
                // for small outer inputs); each of its batches becomes a piece.
                let sink = Arc::new(CollectSink::default());
                self.run_into(probe, sink.clone(), node.id, shared)?;
                let mut batches = Vec::new();
                for b in sink.take() {
                    self.ctx
                        .memory
                        .reserve(batch_bytes(&b), "index join input")?;
                    batches.extend(crate::ops::split(b));
                }
                let batches = batches.into_iter().filter(|b| !b.is_empty()).collect();
                Pipeline::of(Arc::new(IndexJoinSource::new(spec, batches)?), node.id)
            }
            PlanKind::Values { rows } => {
                let batch = rows_to_batch(&node.output, rows)?;
                self.materialized(vec![batch], node.id)
            }
            PlanKind::Filter { input, predicate } => {
                let mut p = self.compile(input, shared)?;
                p.transforms.push((
                    node.id,
                    Arc::new(FilterOp {
                        predicate: cheap_first(predicate),
                    }),
                ));
                p
            }
            PlanKind::Project { input, exprs } => {
                let mut p = self.compile(input, shared)?;
                p.transforms.push((
                    node.id,
                    Arc::new(ProjectOp {
                        exprs: exprs.clone(),
                    }),
                ));
                p
            }
            PlanKind::Limit {
                input,
                offset,
                limit,
            } => {
                let mut p = self.compile(input, shared)?;
                p.transforms.push((
                    node.id,
                    Arc::new(LimitOp::new(*offset, *limit, sorted(input))),
                ));
                p
            }
            PlanKind::Replicate { input, count } => {
                let mut p = self.compile(input, shared)?;
                p.transforms
                    .push((node.id, Arc::new(ReplicateOp { count: *count })));
                p
            }
            PlanKind::Join {
                join_type,
                probe,
                build,
                probe_keys,
                build_keys,
                residual,
                null_safe,
            } => {
                let algorithm = reg.join.clone().ok_or_else(|| {
                    ExecError::Internal(format!("{} has no join algorithm", node.operator))
                })?;
                let spec = Arc::new(JoinSpec {
                    join_type: *join_type,
                    probe_keys: probe_keys.clone(),
                    build_keys: build_keys.clone(),
                    residual: residual.clone(),
                    build_types: build.output.clone(),
                    null_safe: null_safe.clone(),
                });
                // Named only while profiling or protecting a join's table in
                // the LLC: no cost otherwise.
                let named = kura_common::memobj::enabled() || self.ctx.cache.hash_tables.is_some();
                let label = named.then(|| {
                    build_keys
                        .iter()
                        .map(|k| crate::plan::describe_over(build, k))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
                let built = node.shared_build.and_then(|k| {
                    let tables = shared.tables.lock().unwrap_or_else(|e| e.into_inner());
                    tables.get(&k).cloned()
                });
                let table = match built {
                    Some(table) => table,
                    None => {
                        let sink = Arc::new(
                            JoinBuildSink::new(spec.clone(), algorithm.clone())
                                .with_label(label)
                                .at_level(0, node.id, probe.output.clone())
                                .hybrid(),
                        );
                        // The probe side's first reads overlap the merge of the build
                        // side's parts into one hash table.
                        self.compile(build, shared)?.run_around_merge(
                            sink.clone(),
                            node.id,
                            self.ctx,
                            &|merge| next_reads::while_reading_next(self.ctx, probe, merge),
                        )?;
                        if let Some(build_parts) = sink.take_spilled() {
                            if let Some(resident) = sink.take_resident() {
                                // A hybrid hash join: the probe rows of the
                                // partitions in memory are joined as they pass,
                                // then the partitions on disk one by one.
                                let probe_parts =
                                    Arc::new(Partitions::new(build_parts.level, node.id));
                                let grace = GraceJoinSource::new(
                                    spec.clone(),
                                    algorithm,
                                    build_parts,
                                    probe_parts.clone(),
                                    probe.output.clone(),
                                    node.id,
                                );
                                let op = HybridProbeOp::new(
                                    spec,
                                    resident,
                                    probe_parts,
                                    probe.output.clone(),
                                    sink.key_set(),
                                );
                                let mut p = self.compile(probe, shared)?;
                                p.transforms.push((node.id, Arc::new(op)));
                                p.phases.push(Phase {
                                    source: Arc::new(grace),
                                    source_node: node.id,
                                    from: p.transforms.len(),
                                });
                                return Ok(p);
                            }
                            // Past the memory limit: a grace hash join, whose
                            // partitions are joined one by one as a source.
                            let probe_sink = Arc::new(ProbePartitionSink::new(
                                spec.clone(),
                                build_parts.level,
                                node.id,
                                sink.key_set(),
                            ));
                            self.run_into(probe, probe_sink.clone(), node.id, shared)?;
                            let source = GraceJoinSource::new(
                                spec,
                                algorithm,
                                build_parts,
                                probe_sink.partitions(),
                                probe.output.clone(),
                                node.id,
                            );
                            return Ok(Pipeline::of(Arc::new(source), node.id));
                        }
                        let table = sink.table()?;
                        if let Some(k) = node.shared_build {
                            let mut tables =
                                shared.tables.lock().unwrap_or_else(|e| e.into_inner());
                            tables.insert(k, table.clone());
                        }
                        table
                    }
                };
                {
                    let mut pending = shared.key_filters.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some((scan, filter)) = KeyFilter::for_join(
                        *join_type,
                        probe,
                        probe_keys,
                        null_safe,
                        &table,
                        |scan| pending.get(&scan).is_some_and(|f| !f.is_empty()),
                    ) {
                        pending.entry(scan).or_default().push(Arc::new(filter));
                    }
                }
                let mut p = self.compile(probe, shared)?;
                // FULL and RIGHT joins emit their unmatched build rows as the
                // pipeline's tail, once every worker has probed.
                let op = Arc::new(JoinProbeOp::new(spec, table, probe.output.clone()));
                p.transforms.push((node.id, op));
                p
            }
            PlanKind::Aggregate {
                input,
                group_by,
                aggregates,
                key_range,
            } => {
                let label = kura_common::memobj::enabled().then(|| {
                    group_by
                        .iter()
                        .map(|k| crate::plan::describe_over(input, k))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
                // A shared result is materialised once for its readers: hashed.
                if node.operator == ORDERED_AGGREGATE && node.shared.is_none() {
                    let agg = AggregateSink::new(group_by.clone(), aggregates.clone())
                        .with_label(label)
                        .with_node(node.id);
                    let mut p = self.compile(input, shared)?;
                    p.transforms
                        .push((node.id, Arc::new(OrderedAggregateOp::new(agg))));
                    return Ok(p);
                }
                self.materializing_source(node, shared, || {
                    let sink = Arc::new(
                        AggregateSink::new(group_by.clone(), aggregates.clone())
                            .with_key_range(*key_range)
                            .with_label(label)
                            .with_node(node.id),
                    );
                    self.run_into(input, sink.clone(), node.id, shared)?;
                    Ok(match sink.take_spilled() {
                        Some(file) => Materialized {
                            rows: file.rows(),
                            source: Arc::new(file),
                        },
                        None => Materialized::batches(sink.take()),
                    })
                })?
            }
            PlanKind::Sort { input, keys, limit } => {
                self.materializing_source(node, shared, || {
                    let sink = Arc::new(
                        SortSink::new(keys.clone(), input.output.clone(), *limit)
                            .with_node(node.id),
                    );
                    self.run_into(input, sink.clone(), node.id, shared)?;
                    Ok(match sink.take_spilled() {
                        Some(file) => Materialized {
                            rows: file.rows(),
                            source: Arc::new(file),
                        },
                        None => Materialized::batches(sink.take()),
                    })
                })?
            }
            PlanKind::Window {
                input,
                partition_by,
                order_by,
                functions,
            } => self.materializing_source(node, shared, || {
                let sink = Arc::new(
                    WindowSink::new(
                        partition_by.clone(),
                        order_by.clone(),
                        functions.clone(),
                        input.output.clone(),
                    )
                    .with_node(node.id),
                );
                self.run_into(input, sink.clone(), node.id, shared)?;
                Ok(match sink.take_spilled() {
                    Some(file) => Materialized {
                        rows: file.rows(),
                        source: Arc::new(file),
                    },
                    None => Materialized::batches(sink.take()),
                })
            })?,
            PlanKind::UnionAll { inputs } => self.materializing(node, shared, || {
                let mut all = Vec::new();
                for i in inputs {
                    let sink = Arc::new(CollectSink::default());
                    self.run_into(i, sink.clone(), node.id, shared)?;
                    all.extend(sink.take());
                }
                Ok(all)
            })?,
        })
    }
}

/// Output types of a plan, for callers that build result descriptions.
pub fn output_types(plan: &PlanNode) -> Vec<DataType> {
    plan.output.clone()
}

/// Whether `node`'s rows come in an order a LIMIT above must respect: a sort,
/// seen through the operators that keep its order.
fn sorted(node: &PlanNode) -> bool {
    match &node.kind {
        PlanKind::Sort { .. } => true,
        PlanKind::Project { input, .. } | PlanKind::Filter { input, .. } => sorted(input),
        PlanKind::Limit { input, .. } => sorted(input),
        _ => false,
    }
}
