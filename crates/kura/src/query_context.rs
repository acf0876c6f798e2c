//! What a statement runs with (QueryContext), and the catalog the planner binds against through it.

use std::sync::Arc;

use sqlparser::ast::{Query, Statement};

use kura_common::settings::Settings;
use kura_common::{Batch, Value};
use kura_exec::{ExecContext, ExecError, Executor, IoCounters, OperatorRegistry, TableSource};
use kura_sql::{
    plan_query, CatalogProvider, PlannedQuery, PlannerOptions, SqlError, ViewDefinition,
};
use kura_storage::{Catalog, Storage};

use crate::cancel::CancelHandle;
use crate::error::{KuraError, KuraResult};
use crate::result::{QueryResult, ResultColumn};
use crate::storage_table::table_source;
use crate::txn::Tx;

/// What one statement runs with, borrowed from its session.
pub(crate) struct QueryContext<'a> {
    pub storage: &'a Arc<Storage>,
    pub settings: &'a Settings,
    pub cancel: &'a CancelHandle,
    /// The committed database, or the session's open transaction.
    pub tx: Tx<'a>,
    /// The session's `currval` state.
    pub sequences: &'a Arc<crate::sequences::SessionSequences>,
    /// The budget all running queries share.
    pub shared_memory: &'a Arc<kura_exec::context::MemoryTracker>,
    /// LLC classes and the software scan policy (paper 000).
    pub llc: &'a Arc<crate::llc::Llc>,
    /// What `version()`, `now()` ... read.
    pub info: Arc<kura_sql::SessionInfo>,
    /// Which server files `read_parquet` may read.
    pub file_access: &'a crate::file_access::FileAccess,
    /// Relations the program registered in the session, found ahead of tables.
    pub registered: &'a crate::registered::Registered,
    /// A COPY's rows: values for `GENERATED ALWAYS` identity columns are written as
    /// given (PostgreSQL's COPY does not check them; an INSERT is refused them).
    pub copying: bool,
}

/// The committed catalog as the planner sees it: the session's temporary
/// tables first, then the database's tables and views.
pub(crate) struct StorageCatalog<'a> {
    catalog: Arc<Catalog>,
    temp: Option<Arc<Catalog>>,
    /// Set once a name resolved to a temporary table.
    pub(crate) used_temp: std::cell::Cell<bool>,
    settings: &'a Settings,
    info: Arc<kura_sql::SessionInfo>,
    /// Where `nextval` draws values, and the session's `currval` state.
    storage: &'a Arc<Storage>,
    sequences: &'a Arc<crate::sequences::SessionSequences>,
    file_access: &'a crate::file_access::FileAccess,
    registered: &'a crate::registered::Registered,
}

impl CatalogProvider for StorageCatalog<'_> {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>> {
        if let Some(t) = self.registered.get(name) {
            return Some(t);
        }
        if let Some(temp) = &self.temp {
            if let Some(t) = table_source(temp, name) {
                self.used_temp.set(true);
                return Some(t);
            }
        }
        table_source(&self.catalog, name)
    }
    fn view(&self, name: &str) -> Option<ViewDefinition> {
        if self.registered.get(name).is_some() {
            return None;
        }
        // A temporary table hides a view of its name too.
        if self.temp.as_ref().is_some_and(|t| t.table(name).is_some()) {
            return None;
        }
        self.catalog.view(name).map(|v| ViewDefinition {
            sql: v.sql.clone(),
            columns: v.columns.clone(),
        })
    }
    fn relation_names(&self) -> Vec<String> {
        let mut n = self.temp.as_ref().map_or(Vec::new(), |t| t.table_names());
        n.extend(self.registered.names().cloned());
        n.extend(self.catalog.table_names());
        n.extend(self.catalog.view_names());
        n.sort();
        n.dedup();
        n
    }
    fn settings(&self) -> Vec<kura_sql::system::SysSetting> {
        crate::system_catalog::settings(self.settings)
    }
    fn rules(&self, table: &str) -> kura_sql::TableRulesInfo {
        let mut info = self
            .catalog
            .rules(table)
            .map(crate::system_catalog::rules_info)
            .unwrap_or_default();
        // An identity column shows as one (attidentity), not as a DEFAULT,
        // as in PostgreSQL.
        let identity: Vec<&str> = self
            .catalog
            .sequences()
            .filter(|e| e.def.identity.is_some())
            .filter_map(|e| e.def.owned_by.as_ref())
            .filter(|o| o.table == table)
            .map(|o| o.column.as_str())
            .collect();
        info.defaults
            .retain(|(c, _)| !identity.contains(&c.as_str()));
        info
    }
    fn session(&self) -> Option<&kura_sql::SessionInfo> {
        Some(&self.info)
    }
    fn sequences(&self) -> Vec<kura_sql::SequenceInfo> {
        self.catalog
            .sequences()
            .map(|e| crate::sequences::info(self.storage, e))
            .collect()
    }
    fn database_bytes(&self) -> Option<u64> {
        Some(self.storage.page_count() * self.storage.page_size() as u64)
    }
    fn file_table(
        &self,
        format: &kura_sql::FileFormat,
        patterns: &[String],
    ) -> Result<Arc<dyn TableSource>, ExecError> {
        crate::files::open(self.file_access, format, patterns)
    }
    fn sequence(&self, name: &str) -> Option<kura_exec::expr::SeqRef> {
        let entry = self.catalog.sequence(name)?;
        Some(crate::sequences::handle(
            self.storage,
            self.sequences,
            &entry.def,
        ))
    }
}

/// Buffer-manager counters for EXPLAIN ANALYZE: the calling thread's fixes and
/// reads, so that work charged to an operator on one worker does not take in
/// what the other workers did meanwhile.
struct ThreadIo;

impl IoCounters for ThreadIo {
    fn counters(&self) -> (u64, u64) {
        kura_storage::thread_io()
    }
}

pub(crate) fn sql_error(e: SqlError) -> KuraError {
    KuraError::from(e)
}

pub(crate) fn exec_error(e: ExecError) -> KuraError {
    KuraError::from(e)
}

impl QueryContext<'_> {
    pub(crate) fn catalog(&self) -> StorageCatalog<'_> {
        StorageCatalog {
            catalog: self.tx.catalog(),
            temp: self.tx.temp_catalog(),
            used_temp: Default::default(),
            settings: self.settings,
            info: self.info.clone(),
            storage: self.storage,
            sequences: self.sequences,
            file_access: self.file_access,
            registered: self.registered,
        }
    }

    pub(crate) fn options(&self) -> PlannerOptions {
        PlannerOptions {
            join_operator: OperatorRegistry::join_for_setting(
                &self.settings.value("join_algorithm"),
            )
            .into(),
            enable_index: self.settings.flag("enable_index"),
            enable_seqscan: self.settings.flag("enable_seqscan"),
            enable_right_join: self.settings.flag("enable_right_join"),
            enable_eager_aggregate: self.settings.flag("enable_eager_aggregate"),
            enable_ordered_aggregate: self.settings.flag("enable_ordered_aggregate"),
            interrupt: Some({
                let cancel = self.cancel.clone();
                kura_sql::interrupt::Interrupt(Arc::new(move || cancel.is_canceled()))
            }),
        }
    }

    pub(crate) fn exec_context(&self) -> ExecContext {
        let cancel = self.cancel.clone();
        ExecContext::with_cancel_check(
            Arc::new(move || cancel.is_canceled()),
            self.settings.memory_limit(),
        )
        .with_shared_memory(self.shared_memory.clone())
        .with_io(Arc::new(ThreadIo))
        // `SET execution_mode` picks serial, static or out-of-order execution.
        .with_settings(self.settings)
        .with_cache_classes(self.llc.classes(self.settings))
        .with_spill(
            temp_directory(self.settings, self.storage.path()),
            self.settings.max_temp_directory_size(),
        )
    }

    /// Plans and runs one query given as text — over `view` when given (a
    /// write transaction's own state), else what the statement reads.
    pub(crate) fn run_sql(
        &self,
        sql: &str,
        params: Option<Vec<Value>>,
        view: Option<Arc<Catalog>>,
    ) -> KuraResult<Vec<Batch>> {
        let statements = crate::parsing::parse(sql)?;
        let [Statement::Query(q)] = statements.as_slice() else {
            return Err(KuraError::Internal(format!("not one query: {sql}")));
        };
        // A view is of the storage writing now: the session's temporary one
        // while a temporary table is written, else the database's.
        let (catalog, temp) = match view {
            Some(v) if self.tx.temp.writing() => (self.tx.catalog(), Some(v)),
            Some(v) => (v, self.tx.temp_catalog()),
            None => (self.tx.catalog(), self.tx.temp_catalog()),
        };
        let catalog = StorageCatalog {
            catalog,
            temp,
            used_temp: Default::default(),
            settings: self.settings,
            info: self.info.clone(),
            storage: self.storage,
            sequences: self.sequences,
            file_access: self.file_access,
            registered: self.registered,
        };
        let planned = plan_query(&catalog, q, params, &self.options()).map_err(sql_error)?;
        self.execute(&planned, &self.exec_context())
    }

    pub(crate) fn plan(&self, q: &Query, params: Option<Vec<Value>>) -> KuraResult<PlannedQuery> {
        plan_query(&self.catalog(), q, params, &self.options()).map_err(sql_error)
    }

    pub(crate) fn execute(
        &self,
        planned: &PlannedQuery,
        exec: &ExecContext,
    ) -> KuraResult<Vec<Batch>> {
        let registry = OperatorRegistry::default();
        Executor {
            registry: &registry,
            ctx: exec,
        }
        .run(&planned.plan)
        .map_err(exec_error)
    }

    /// Runs a query handing its rows to `sink` as they are produced; the
    /// result returned has the columns and the `SELECT n` tag but no rows.
    pub(crate) fn query_streaming(
        &self,
        q: &Query,
        params: Option<Vec<Value>>,
        sink: &mut dyn crate::result::RowSink,
    ) -> KuraResult<QueryResult> {
        let planned = self.plan(q, params)?;
        let columns = result_columns(&planned);
        sink.columns(&columns);
        let registry = OperatorRegistry::default();
        let exec = self.exec_context();
        let mut rows = 0usize;
        Executor {
            registry: &registry,
            ctx: &exec,
        }
        .run_streaming(&planned.plan, &mut |b| {
            rows += b.len();
            Ok(sink.rows(b))
        })
        .map_err(exec_error)?;
        Ok(QueryResult {
            columns,
            batches: Vec::new(),
            tag: format!("SELECT {rows}"),
        })
    }

    pub(crate) fn query(&self, q: &Query, params: Option<Vec<Value>>) -> KuraResult<QueryResult> {
        let planned = self.plan(q, params)?;
        let batches = self.execute(&planned, &self.exec_context())?;
        Ok(QueryResult::rows_of(result_columns(&planned), batches))
    }
}

/// Runs a query and collects its rows (a cursor's, `EXECUTE`'s arguments).
pub(crate) fn collect(
    ctx: &QueryContext,
    q: &Query,
    params: Option<Vec<Value>>,
) -> KuraResult<QueryResult> {
    ctx.query(q, params)
}

fn result_columns(planned: &PlannedQuery) -> Vec<ResultColumn> {
    planned
        .columns
        .iter()
        .map(|(n, t)| ResultColumn {
            name: n.clone(),
            data_type: *t,
        })
        .collect()
}

/// Where a query spills: `temp_directory`, or beside the database file.
pub(crate) fn temp_directory(
    settings: &Settings,
    database: &std::path::Path,
) -> std::path::PathBuf {
    match settings.value("temp_directory") {
        dir if dir.is_empty() => default_temp_directory(database),
        dir => dir.into(),
    }
}

/// `<database file>.tmp`: spill files stay on the database's disk and are
/// removed when the database opens after a crash.
pub(crate) fn default_temp_directory(database: &std::path::Path) -> std::path::PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".tmp");
    name.into()
}
