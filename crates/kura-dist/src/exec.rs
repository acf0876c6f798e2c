//! `KuraShardScanExec`: the leaf of a distributed plan that runs a kura fragment on one shard
//! and streams its rows out as Arrow batches (paper 003 §2, each server of the shared-nothing
//! configuration answering for its own data).
//!
//! The planner builds it without a shard; the scale-up handler ([`crate::cluster`]) makes one
//! variant per shard, and the codec ([`crate::codec`]) gives the decoded variant the worker's
//! shard database. kura runs the fragment on a thread of its own (its runtime, I/O and
//! operators stay kura's); the batches reach DataFusion through a bounded channel, so a
//! consumer that stops reading stops the scan.

use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use kura::{Batch, ResultColumn, RowSink, Value};
use kura_common::Vector;

use crate::error::{DistError, DistResult};
use crate::fragment::{catalog_columns, Fragment, FragmentKind};
use crate::shard::ShardDb;

/// Batches in flight between kura's thread and DataFusion, per leaf.
const CHANNEL_BATCHES: usize = 8;

/// A kura fragment on one shard (or, before the plan is split, on all of them).
#[derive(Debug, Clone)]
pub struct KuraShardScanExec {
    fragment: Arc<Fragment>,
    /// The shard this variant reads; `None` in the plan before it is split per task.
    shard: Option<usize>,
    /// The worker's shard database (set when a worker decodes the plan).
    db: Option<Arc<ShardDb>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    /// Rows sent and the time kura spent on the fragment (waits for the consumer excluded):
    /// the cluster's profile of a query ([`crate::profile`]) reads them from every shard.
    metrics: ExecutionPlanMetricsSet,
}

impl KuraShardScanExec {
    pub fn try_new(
        fragment: Arc<Fragment>,
        shard: Option<usize>,
        db: Option<Arc<ShardDb>>,
    ) -> DistResult<Self> {
        let schema = fragment.schema()?;
        let properties = Self::properties_for(&schema, fragment.shards, shard);
        Ok(KuraShardScanExec {
            fragment,
            shard,
            db,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn fragment(&self) -> &Arc<Fragment> {
        &self.fragment
    }

    pub fn shard(&self) -> Option<usize> {
        self.shard
    }

    /// Before the split the leaf stands for all shards, one partition each, so DataFusion
    /// gathers its output and the distributed planner puts a network boundary above it; a
    /// variant reads one shard as one partition.
    fn properties_for(
        schema: &SchemaRef,
        shards: usize,
        shard: Option<usize>,
    ) -> Arc<PlanProperties> {
        let partitions = match shard {
            Some(_) => 1,
            None => shards.max(1),
        };
        Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ))
    }

    /// This leaf for shard `shard` (a variant of the split plan).
    pub fn for_shard(&self, shard: usize) -> Self {
        KuraShardScanExec {
            shard: Some(shard),
            properties: Self::properties_for(&self.schema, self.fragment.shards, Some(shard)),
            metrics: ExecutionPlanMetricsSet::new(),
            ..self.clone()
        }
    }

    fn check_shard(&self, db: &ShardDb, shard: usize) -> DistResult<()> {
        if db.info.shards != self.fragment.shards {
            return Err(DistError::Cluster(format!(
                "the worker of {} holds shard {} of {}, but the plan has {} shards",
                db.path.display(),
                db.info.shard,
                db.info.shards,
                self.fragment.shards
            )));
        }
        if self.fragment.kind != FragmentKind::Catalog && db.info.shard != shard {
            return Err(DistError::Cluster(format!(
                "the task for shard {shard} reached the worker of shard {} ({}): tasks are routed to the wrong workers",
                db.info.shard,
                db.path.display()
            )));
        }
        Ok(())
    }

    fn start(&self) -> DistResult<SendableRecordBatchStream> {
        let shard = self.shard.ok_or_else(|| {
            DistError::Cluster(
                "a kura shard scan ran before the plan was split into one task per shard".into(),
            )
        })?;
        let db = self.db.clone().ok_or_else(|| {
            DistError::Cluster(format!(
                "the task for kura shard {shard} ran in a process without a shard database (only kura cluster workers run shard fragments)"
            ))
        })?;
        self.check_shard(&db, shard)?;
        let schema = self.schema.clone();
        match &self.fragment.kind {
            FragmentKind::Catalog => {
                let batch = catalog_batch(&db, shard)?;
                let rb = kura_exec::arrow::batch_to_arrow(batch, &schema)?;
                Ok(Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::once(async { Ok(rb) }),
                )))
            }
            FragmentKind::Scan { .. } | FragmentKind::Query { .. }
                if self.fragment.replicated() && shard != 0 =>
            {
                Ok(Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::empty(),
                )))
            }
            FragmentKind::Scan { .. } | FragmentKind::Query { .. } => {
                let sql = self.fragment.sql().unwrap_or_default();
                let table = self.fragment.counted_as();
                let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_BATCHES);
                let cast = self.fragment.casts_output();
                let rounds = self.fragment.rounds_output();
                let no_columns = self.fragment.columns.is_empty() && !cast;
                let thread_schema = schema.clone();
                let kura_time = MetricBuilder::new(&self.metrics).elapsed_compute(0);
                let rows_sent = MetricBuilder::new(&self.metrics).output_rows(0);
                std::thread::Builder::new()
                    .name(format!("kura-shard{shard}-scan"))
                    .spawn(move || {
                        let mut sink = ArrowSink {
                            tx,
                            schema: thread_schema,
                            no_columns,
                            cast,
                            rounds,
                            kura_types: Vec::new(),
                            db: db.clone(),
                            table,
                            rows_sent,
                            waiting: std::time::Duration::ZERO,
                        };
                        let started = std::time::Instant::now();
                        let r = db.db.session().execute_streaming(&sql, &mut sink);
                        kura_time.add_duration(started.elapsed().saturating_sub(sink.waiting));
                        if let Err(e) = r {
                            let e = DistError::Cluster(format!(
                                "kura shard {shard} ({}): {e} [fragment: {sql}]",
                                db.path.display()
                            ));
                            let _ = sink.tx.blocking_send(Err(e.into_datafusion()));
                        }
                    })
                    .map_err(|e| DistError::Io {
                        what: "starting a shard scan thread".into(),
                        source: e,
                    })?;
                let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
                Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
            }
        }
    }
}

/// Receives kura's batches on the scan thread and sends them on as Arrow.
struct ArrowSink {
    tx: tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    schema: SchemaRef,
    no_columns: bool,
    /// Whether kura's columns become `schema`'s types by a cast (a partial aggregation's
    /// states or a join's columns, whose Arrow types DataFusion chose, not kura).
    cast: bool,
    /// Whether decimals may round to the output's scale ([`Fragment::rounds_output`]).
    rounds: bool,
    /// The types of kura's result columns.
    kura_types: Vec<kura_common::DataType>,
    /// Where the rows sent are counted, under `table`.
    db: Arc<ShardDb>,
    table: String,
    rows_sent: Count,
    /// Time blocked on a full channel (the consumer's time, not kura's).
    waiting: std::time::Duration,
}

impl RowSink for ArrowSink {
    fn columns(&mut self, columns: &[ResultColumn]) {
        self.kura_types = columns.iter().map(|c| c.data_type).collect();
    }

    fn rows(&mut self, batch: Batch) -> bool {
        self.db.count_served(&self.table, batch.len() as u64);
        let batch = if self.no_columns {
            Batch::with_rows(batch.len())
        } else {
            batch
        };
        let rb = if self.cast {
            crate::convert::batch_to_arrow_cast(batch, &self.kura_types, &self.schema, self.rounds)
        } else {
            kura_exec::arrow::batch_to_arrow(batch, &self.schema).map_err(DistError::from)
        }
        .map_err(|e| DataFusionError::External(Box::new(e)));
        let failed = rb.is_err();
        if let Ok(rb) = &rb {
            self.rows_sent.add(rb.num_rows());
        }
        let blocked = std::time::Instant::now();
        // A closed channel means the consumer is gone: stop the query.
        let sent = self.tx.blocking_send(rb).is_ok();
        self.waiting += blocked.elapsed();
        sent && !failed
    }
}

/// The catalog fragment's rows on `db`: one per column of every table of the shard.
fn catalog_batch(db: &ShardDb, task: usize) -> DistResult<Batch> {
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut session = db.db.session();
    for (table, split) in db.tables()? {
        let r = session.execute(&format!("SELECT * FROM \"{table}\" LIMIT 0"))?;
        for c in r.columns {
            let ty = serde_json::to_string(&c.data_type)
                .map_err(|e| DistError::Cluster(format!("encoding a kura type: {e}")))?;
            rows.push(vec![
                Value::Integer(task as i32),
                Value::Integer(db.info.shard as i32),
                Value::Integer(db.info.shards as i32),
                Value::Text(db.info.cluster.clone()),
                Value::Text(table.clone()),
                Value::Text(split.clone()),
                Value::Text(c.name),
                Value::Text(ty),
            ]);
        }
    }
    let columns = catalog_columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let values: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
            Vector::from_values(c.data_type, &values).ok_or_else(|| {
                DistError::Cluster(format!("catalog column {} does not fit its type", c.name))
            })
        })
        .collect::<DistResult<Vec<_>>>()?;
    Ok(if rows.is_empty() {
        Batch {
            columns,
            selection: None,
            num_rows: 0,
        }
    } else {
        Batch::new(columns)
    })
}

impl DisplayAs for KuraShardScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match self.shard {
            Some(s) => write!(
                f,
                "KuraShardScanExec: shard {s}: {}",
                self.fragment.describe()
            ),
            None => write!(
                f,
                "KuraShardScanExec: {} shards: {}",
                self.fragment.shards,
                self.fragment.describe()
            ),
        }
    }
}

impl ExecutionPlan for KuraShardScanExec {
    fn name(&self) -> &str {
        "KuraShardScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if self.shard.is_some() && partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "a KuraShardScanExec variant has one partition, asked for {partition}"
            )));
        }
        self.start().map_err(DistError::into_datafusion)
    }
}
