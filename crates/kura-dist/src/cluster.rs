//! The coordinator: a DataFusion session over the cluster's kura tables, planned by
//! datafusion-distributed with one task per shard routed to the shard's worker (paper 003 §2,
//! the shared-nothing configuration of several servers).
//!
//! Connecting reads every worker's catalog (a catalog leaf, one task per worker), checks that
//! the workers hold the shards `0..n` of one cluster with the same tables, and orders the
//! workers by shard so task `i` of a shard leaf goes to the worker of shard `i`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::{Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{create_udf, ColumnarValue, DdlStatement, LogicalPlan, Volatility};
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use datafusion_distributed::{
    display_plan_ascii, rewrite_distributed_plan_with_metrics, DistributedExt,
    DistributedMetricsFormat, RouteTasksEvent, SessionStateBuilderExt, WorkerResolver,
};
use url::Url;

use crate::channel::{answers, KuraChannels};
use crate::codec::KuraCodec;
use crate::error::{DistError, DistResult};
use crate::fragment::ColumnDef;
use crate::one_shard::OneShardBoundaries;
use crate::partial_agg::PushPartialAggregate;
use crate::placement::Placement;
use crate::profile::QueryProfile;
use crate::push_rule::PushToShards;
use crate::regroup_joins::RegroupForColocation;
use crate::router;
use crate::semi_join_down::SemiJoinsDown;
use crate::table::{KuraCatalogTable, KuraTable};
use crate::tasks::{desired_tasks, route, scale_up};

/// How long `EXPLAIN ANALYZE` waits for the tasks' metrics once the query is done.
const METRICS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The workers, in shard order.
#[derive(Clone, Debug)]
struct Workers(Arc<Vec<Url>>);

#[async_trait]
impl WorkerResolver for Workers {
    fn get_urls(&self) -> Result<Vec<Url>> {
        Ok(self.0.as_ref().clone())
    }
}

/// A table of the cluster as the workers' catalogs describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableInfo {
    pub name: String,
    /// How it is spread: the shard map's text ([`Placement`]).
    pub split: String,
    pub columns: Vec<ColumnDef>,
}

/// A connected cluster.
pub struct Cluster {
    ctx: SessionContext,
    workers: Vec<Url>,
    cluster: String,
    tables: Vec<TableInfo>,
    /// The connections to the workers, shared by every session of this cluster.
    channels: KuraChannels,
    /// The views this session created, for queries routed to one shard ([`router`]).
    views: Mutex<router::Views>,
    /// Whether queries one shard answers whole are sent there as written.
    route: AtomicBool,
}

/// Parses `host:port` or a URL into a worker URL.
pub fn worker_url(addr: &str) -> DistResult<Url> {
    let text = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    Url::parse(&text)
        .map_err(|e| DistError::Cluster(format!("{addr:?} is not a worker address: {e}")))
}

fn session(workers: Arc<Vec<Url>>, channels: &KuraChannels) -> SessionContext {
    let mut config = SessionConfig::new();
    // Numeric literals are decimals, as in kura and PostgreSQL (0.06 is exact).
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    let n = workers.len();
    let route_workers = workers.clone();
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        // Appended after DataFusion's rules; datafusion-distributed cuts stages afterwards.
        .with_optimizer_rule(Arc::new(SemiJoinsDown::from_env()))
        .with_optimizer_rule(Arc::new(RegroupForColocation::from_env()))
        .with_physical_optimizer_rule(Arc::new(PushToShards::from_env()))
        .with_physical_optimizer_rule(Arc::new(PushPartialAggregate::from_env()))
        .with_physical_optimizer_rule(Arc::new(OneShardBoundaries))
        .with_distributed_worker_resolver(Workers(workers))
        .with_distributed_planner()
        .with_distributed_user_codec(KuraCodec::coordinator())
        .with_distributed_channel_resolver(channels.clone())
        .with_distributed_desired_task_count_handler(desired_tasks)
        .with_distributed_scale_up_leaf_node_handler(scale_up)
        .with_distributed_route_tasks_handler(move |ev: RouteTasksEvent| {
            route(ev, &route_workers, n)
        })
        .build();
    SessionContext::from(state)
}

/// What `SELECT version()` answers on a cluster (and the front door's server version).
pub fn version_text(cluster: &str, shards: usize) -> String {
    format!(
        "{} (cluster {cluster} of {shards} shards, run by datafusion-distributed)",
        kura::identity::version_text()
    )
}

/// A session over `workers` with the cluster's `tables` registered, and `version()` saying
/// it is kura's cluster (DataFusion's own names DataFusion; clients such as pgjdbc's users
/// read it to know the server).
fn tables_session(
    cluster: &str,
    workers: &[Url],
    tables: &[TableInfo],
    channels: &KuraChannels,
) -> DistResult<SessionContext> {
    let ctx = session(Arc::new(workers.to_vec()), channels);
    let version = ScalarValue::Utf8(Some(version_text(cluster, workers.len())));
    ctx.register_udf(create_udf(
        "version",
        Vec::new(),
        ArrowType::Utf8,
        Volatility::Stable,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(version.clone()))),
    ));
    for t in tables {
        let table = KuraTable::try_new(
            t.name.clone(),
            t.columns.clone(),
            Placement::parse(&t.split),
            workers.len(),
        )?;
        ctx.register_table(t.name.as_str(), Arc::new(table))?;
    }
    Ok(ctx)
}

fn strings<'a>(b: &'a RecordBatch, name: &str) -> DistResult<&'a StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| DistError::Cluster(format!("catalog column {name} is missing")))
}

fn ints<'a>(b: &'a RecordBatch, name: &str) -> DistResult<&'a Int32Array> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int32Array>())
        .ok_or_else(|| DistError::Cluster(format!("catalog column {name} is missing")))
}

/// One worker's answer to the catalog fragment.
#[derive(Default)]
struct WorkerCatalog {
    shard: usize,
    shards: usize,
    cluster: String,
    tables: BTreeMap<String, TableInfo>,
}

impl Cluster {
    /// Connects to the workers (`host:port` or URLs, any order), reads and checks their
    /// catalogs, and registers the cluster's tables.
    pub async fn connect(addrs: &[String]) -> DistResult<Cluster> {
        // One worker is a cluster of one shard ([`crate::one_shard`] keeps its leaves there).
        if addrs.is_empty() {
            return Err(DistError::Cluster(
                "no worker given: a kura cluster has 1 or more shards, one worker each".into(),
            ));
        }
        let given: Vec<Url> = addrs
            .iter()
            .map(|a| worker_url(a))
            .collect::<DistResult<_>>()?;
        let n = given.len();
        let channels = KuraChannels::default();
        let ctx = session(Arc::new(given.clone()), &channels);
        ctx.register_table("kura_catalog", Arc::new(KuraCatalogTable::try_new(n)?))?;
        let batches = ctx
            .sql("SELECT * FROM kura_catalog")
            .await?
            .collect()
            .await?;
        let mut by_task: BTreeMap<usize, WorkerCatalog> = BTreeMap::new();
        for b in &batches {
            let (task, shard, shards) = (ints(b, "task")?, ints(b, "shard")?, ints(b, "shards")?);
            let (cluster, table, split) = (
                strings(b, "cluster")?,
                strings(b, "table_name")?,
                strings(b, "split")?,
            );
            let (col, ty) = (strings(b, "column_name")?, strings(b, "column_type")?);
            for i in 0..b.num_rows() {
                let w = by_task.entry(task.value(i) as usize).or_default();
                w.shard = shard.value(i) as usize;
                w.shards = shards.value(i) as usize;
                w.cluster = cluster.value(i).to_string();
                let t = w
                    .tables
                    .entry(table.value(i).to_string())
                    .or_insert_with(|| TableInfo {
                        name: table.value(i).to_string(),
                        split: split.value(i).to_string(),
                        columns: Vec::new(),
                    });
                let data_type = serde_json::from_str(ty.value(i)).map_err(|e| {
                    DistError::Cluster(format!("a column type from worker {}: {e}", task.value(i)))
                })?;
                t.columns.push(ColumnDef {
                    name: col.value(i).to_string(),
                    data_type,
                });
            }
        }
        if by_task.len() != n {
            let missing: Vec<String> = (0..n)
                .filter(|t| !by_task.contains_key(t))
                .map(|t| given[t].to_string())
                .collect();
            return Err(DistError::Cluster(format!(
                "no catalog from worker(s) {} (a worker without tables?)",
                missing.join(", ")
            )));
        }
        let mut ordered: Vec<Option<Url>> = vec![None; n];
        let first = &by_task[&0];
        for (task, w) in &by_task {
            let url = &given[*task];
            if w.shards != n {
                return Err(DistError::Cluster(format!(
                    "worker {url} holds shard {} of {}, but {n} workers were given (one per shard)",
                    w.shard, w.shards
                )));
            }
            if w.cluster != first.cluster {
                return Err(DistError::Cluster(format!(
                    "worker {url} holds a shard of cluster {:?}, worker {} of {:?}",
                    w.cluster, given[0], first.cluster
                )));
            }
            if w.tables != first.tables {
                return Err(DistError::Cluster(format!(
                    "worker {url}'s tables differ from worker {}'s",
                    given[0]
                )));
            }
            if let Some(other) = &ordered[w.shard] {
                return Err(DistError::Cluster(format!(
                    "workers {other} and {url} both hold shard {}",
                    w.shard
                )));
            }
            ordered[w.shard] = Some(url.clone());
        }
        let workers: Vec<Url> = ordered.into_iter().flatten().collect();
        let tables: Vec<TableInfo> = first.tables.values().cloned().collect();
        let cluster = first.cluster.clone();
        Ok(Cluster {
            ctx: tables_session(&cluster, &workers, &tables, &channels)?,
            workers,
            cluster,
            tables,
            channels,
            views: Mutex::default(),
            route: AtomicBool::new(router::router_enabled()),
        })
    }

    /// The same cluster in a session of its own (views and settings one client makes are
    /// not another's: the front door gives each connection one).
    pub fn new_session(&self) -> DistResult<Cluster> {
        Ok(Cluster {
            ctx: tables_session(&self.cluster, &self.workers, &self.tables, &self.channels)?,
            workers: self.workers.clone(),
            cluster: self.cluster.clone(),
            tables: self.tables.clone(),
            channels: self.channels.clone(),
            views: Mutex::default(),
            route: AtomicBool::new(self.route.load(Ordering::Relaxed)),
        })
    }

    /// Whether this session sends queries one shard answers whole to it, as written
    /// ([`router`]; on unless `KURA_CLUSTER_ROUTER=off`). Off, DataFusion plans every query.
    pub fn set_routing(&self, on: bool) {
        self.route.store(on, Ordering::Relaxed);
    }

    /// `plan` (of the statement `text`) as one leaf running `text` on a shard, when one
    /// shard answers it whole.
    fn routed(&self, plan: &LogicalPlan, text: &str) -> Option<LogicalPlan> {
        if !self.route.load(Ordering::Relaxed) {
            return None;
        }
        let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        let (tables, used) = router::whole_on_one_shard(plan, &views)?;
        let sql = router::with_views(text, &used, &views);
        let leaf = router::leaf(sql, tables, plan, self.workers.len()).ok()?;
        router::scan_of(leaf).ok()
    }

    /// Runs a query: routed to one shard when it can be, and as DataFusion plans it when
    /// not or when the shard's kura refuses it. Returns the plan that ran and its rows.
    async fn execute(
        &self,
        plan: &LogicalPlan,
        text: &str,
    ) -> DistResult<(Arc<dyn ExecutionPlan>, Vec<RecordBatch>)> {
        let state = self.ctx.state();
        if let Some(routed) = self.routed(plan, text) {
            let physical = state.create_physical_plan(&routed).await?;
            match collect(physical.clone(), self.ctx.task_ctx()).await {
                Ok(batches) => return Ok((physical, batches)),
                Err(e) => tracing::debug!(
                    "a routed query failed on its shard, planned by DataFusion instead: {e}"
                ),
            }
        }
        let physical = state.create_physical_plan(plan).await?;
        let batches = collect(physical.clone(), self.ctx.task_ctx()).await?;
        Ok((physical, batches))
    }

    /// Runs a query as DataFusion plans it (never routed: a plan with parameter values in
    /// place has no text of its own).
    pub(crate) async fn execute_planned(&self, plan: &LogicalPlan) -> DistResult<Vec<RecordBatch>> {
        let physical = self.ctx.state().create_physical_plan(plan).await?;
        Ok(collect(physical, self.ctx.task_ctx()).await?)
    }

    /// Keeps the views of this session `statement` creates or drops, for routed queries.
    fn note_views(&self, statement: &DFStatement) {
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((name, cte)) = router::created_view(statement) {
            views.insert(name, cte);
        }
        for name in router::dropped_views(statement) {
            views.remove(&name);
        }
    }

    /// The workers in shard order.
    pub fn workers(&self) -> &[Url] {
        &self.workers
    }

    /// The cluster's name (written by `kura cluster load`).
    pub fn name(&self) -> &str {
        &self.cluster
    }

    pub fn tables(&self) -> &[TableInfo] {
        &self.tables
    }

    /// The DataFusion session (for plans and settings).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs the statements of `sql` in order and returns the batches of the last one that is
    /// a query (as kura's TPC-H runner does: Q15's text is CREATE VIEW; SELECT; DROP VIEW).
    /// Views live in this coordinator's session; those a failed text created are dropped.
    pub async fn sql(&self, sql: &str) -> DistResult<Vec<RecordBatch>> {
        self.sql_outcome(sql).await.map(|(batches, _)| batches)
    }

    /// [`Cluster::sql`], and whether the last statement was a query (one that returns rows,
    /// perhaps none) rather than a statement such as CREATE VIEW or SET.
    pub async fn sql_outcome(&self, sql: &str) -> DistResult<(Vec<RecordBatch>, bool)> {
        let mut created = Vec::new();
        let r = self.run_statements(sql, &mut created, false).await;
        match r {
            Ok((batches, _, query)) => Ok((batches, query)),
            Err(e) => {
                self.drop_views(&created);
                Err(self.diagnose(e).await)
            }
        }
    }

    /// A failed query's error, naming the first worker that does not answer (gone, or
    /// hung) when there is one: the query failed because of it, or will on the next try.
    pub(crate) async fn diagnose(&self, error: DistError) -> DistError {
        for (shard, url) in self.workers.iter().enumerate() {
            if let Err(reason) = answers(&self.channels, url).await {
                return DistError::WorkerDown {
                    worker: url.to_string(),
                    shard,
                    reason,
                    query_error: error.to_string(),
                };
            }
        }
        error
    }

    /// The distributed plan of each query of `sql`, as stages (the other statements, such as
    /// CREATE VIEW, are run so the queries after them can be planned; views they create are
    /// dropped again).
    pub async fn explain(&self, sql: &str) -> DistResult<String> {
        let mut created = Vec::new();
        let r = self.run_statements(sql, &mut created, true).await;
        self.drop_views(&created);
        r.map(|(_, plans, _)| plans.join("\n"))
    }

    fn drop_views(&self, views: &[String]) {
        for view in views {
            // A view the text dropped itself is no longer there: nothing to undo.
            let _ = self.ctx.deregister_table(view.as_str());
        }
    }

    /// The statements of `sql` in the session's dialect (parsed before any await: the
    /// dialect is not `Send`).
    pub(crate) fn parse(&self, sql: &str) -> DistResult<VecDeque<DFStatement>> {
        let state = self.ctx.state();
        let options = state.config().options();
        let dialect = dialect_from_str(options.sql_parser.dialect.as_ref()).ok_or_else(|| {
            DistError::Cluster(format!(
                "unknown SQL dialect {}",
                options.sql_parser.dialect
            ))
        })?;
        Ok(DFParserBuilder::new(sql)
            .with_dialect(dialect.as_ref())
            .with_recursion_limit(options.sql_parser.recursion_limit.get())
            .build()?
            .parse_statements()?)
    }

    /// Plans and runs the statements of `sql`, returning the batches of the last query, or
    /// with `explain` each query's distributed plan instead of running it. The views created
    /// are pushed to `created`. The flag says whether the last statement was a query.
    async fn run_statements(
        &self,
        sql: &str,
        created: &mut Vec<String>,
        explain: bool,
    ) -> DistResult<(Vec<RecordBatch>, Vec<String>, bool)> {
        let statements = self.parse(sql)?;
        if statements.is_empty() {
            return Err(DistError::Cluster("no SQL statement given".into()));
        }
        let (mut batches, mut plans, mut last_query) = (Vec::new(), Vec::new(), false);
        for statement in statements {
            let text = statement.to_string();
            let inner = match &statement {
                DFStatement::Explain(e) => e.statement.to_string(),
                _ => text.clone(),
            };
            self.note_views(&statement);
            let plan = self.ctx.state().statement_to_plan(statement).await?;
            let query = !matches!(
                plan,
                LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Statement(_)
            );
            last_query = query;
            if let LogicalPlan::Ddl(DdlStatement::CreateView(view)) = &plan {
                created.push(view.name.to_string());
            }
            if let LogicalPlan::Analyze(analyze) = &plan {
                let (text, profile) = self.analyze(analyze.input.as_ref(), &inner).await?;
                let lines = format!("{text}\n{profile}");
                batches = vec![plan_rows(&lines)?];
                continue;
            }
            if query && explain {
                let shown = self.routed(&plan, &text).unwrap_or(plan);
                let df = self.ctx.execute_logical_plan(shown).await?;
                let physical = df.create_physical_plan().await?;
                plans.push(datafusion_distributed::display_plan_ascii(
                    physical.as_ref(),
                    false,
                ));
            } else if query {
                batches = self.execute(&plan, &text).await?.1;
            } else {
                self.ctx.execute_logical_plan(plan).await?.collect().await?;
            }
        }
        Ok((batches, plans, last_query))
    }
}

impl Cluster {
    /// Runs `query` and returns its distributed plan with every task's metrics and the
    /// [`QueryProfile`] read from them (`EXPLAIN ANALYZE` of the cluster).
    async fn analyze(&self, query: &LogicalPlan, text: &str) -> DistResult<(String, QueryProfile)> {
        let start = Instant::now();
        let (physical, _) = self.execute(query, text).await?;
        let wall = start.elapsed();
        // The rewrite waits for every task's metrics; a task the plan never read would keep
        // it waiting for ever.
        let executed = tokio::time::timeout(
            METRICS_WAIT,
            rewrite_distributed_plan_with_metrics(physical, DistributedMetricsFormat::Aggregated),
        )
        .await
        .map_err(|_| {
            DistError::Cluster(format!(
                "EXPLAIN ANALYZE: the metrics of some of the query's tasks did not arrive within {} s",
                METRICS_WAIT.as_secs()
            ))
        })??;
        let profile = QueryProfile::of(&executed, wall, self.workers.len());
        Ok((display_plan_ascii(executed.as_ref(), true), profile))
    }

    /// [`Cluster::analyze`] of the last query of `sql` (the statements before it are run, and
    /// views they create dropped again): what it moved and where its time went.
    pub async fn profile(&self, sql: &str) -> DistResult<QueryProfile> {
        let statements = self.parse(sql)?;
        let mut created = Vec::new();
        let mut last = None;
        let r = async {
            for statement in statements {
                let text = statement.to_string();
                self.note_views(&statement);
                let plan = self.ctx.state().statement_to_plan(statement).await?;
                if let LogicalPlan::Ddl(DdlStatement::CreateView(view)) = &plan {
                    created.push(view.name.to_string());
                }
                match plan {
                    LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Statement(_) => {
                        self.ctx.execute_logical_plan(plan).await?.collect().await?;
                    }
                    query => last = Some(self.analyze(&query, &text).await?.1),
                }
            }
            last.ok_or_else(|| DistError::Cluster("no query to profile".into()))
        }
        .await;
        self.drop_views(&created);
        r
    }
}

/// Text as one column of lines, as PostgreSQL's `EXPLAIN` returns a plan.
fn plan_rows(text: &str) -> DistResult<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "QUERY PLAN",
        ArrowType::Utf8,
        false,
    )]));
    let lines: StringArray = text.lines().map(Some).collect();
    RecordBatch::try_new(schema, vec![Arc::new(lines)]).map_err(|e| DistError::DataFusion(e.into()))
}

impl From<DistError> for DataFusionError {
    fn from(e: DistError) -> Self {
        e.into_datafusion()
    }
}
