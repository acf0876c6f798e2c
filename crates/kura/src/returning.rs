//! `RETURNING` of INSERT, UPDATE and DELETE: the rows a statement wrote (or
//! removed), shaped as the table's rows, are projected through the RETURNING
//! list by the ordinary query path — the list is bound as the SELECT list of
//! a query over those rows, named as the target table (or its alias) in that
//! list only: a subquery in it that names the table reads the table as the
//! statement found it, as in PostgreSQL.

use std::sync::Arc;

use sqlparser::ast::{Query, SelectItem, Statement};

use kura_common::{Batch, Value};
use kura_exec::{MemTable, TableSource};
use kura_sql::{CatalogProvider, ViewDefinition};
use kura_storage::Schema;

use crate::error::{KuraError, KuraResult};
use crate::names::quote_ident;
use crate::query_context::QueryContext;
use crate::result::{QueryResult, ResultColumn};

/// A RETURNING list and the table (and alias) it reads.
pub(crate) struct Returning<'a> {
    pub items: &'a [SelectItem],
    pub table: &'a str,
    pub alias: Option<String>,
}

impl Returning<'_> {
    /// `SELECT items FROM <the rows> AS table_or_alias`.
    fn query(&self) -> KuraResult<Query> {
        let items: Vec<String> = self.items.iter().map(|i| i.to_string()).collect();
        let name = self
            .alias
            .clone()
            .unwrap_or_else(|| quote_ident(self.table));
        let sql = format!("SELECT {} FROM {ROWS} AS {name}", items.join(", "));
        match crate::parsing::parse(&sql)?.pop() {
            Some(Statement::Query(q)) => Ok(*q),
            _ => Err(KuraError::Internal(format!("RETURNING as a query: {sql}"))),
        }
    }

    /// The RETURNING list over `rows` (rows of the table's `schema`): the
    /// statement's result, tagged `tag`.
    pub(crate) fn result(
        &self,
        ctx: &QueryContext,
        schema: &Schema,
        rows: Vec<Batch>,
        params: Option<Vec<Value>>,
        tag: String,
    ) -> KuraResult<QueryResult> {
        let q = self.query()?;
        let catalog = ctx.catalog();
        let overlay = Overlay {
            inner: &catalog,
            name: ROWS,
            rows: rows_table(ROWS, schema, rows),
        };
        let planned = kura_sql::planner::plan_query(&overlay, &q, params, &ctx.options())
            .map_err(KuraError::from)?;
        let batches = ctx.execute(&planned, &ctx.exec_context())?;
        let columns = planned
            .columns
            .iter()
            .map(|(name, data_type)| ResultColumn {
                name: name.clone(),
                data_type: *data_type,
            })
            .collect();
        let mut result = QueryResult::rows_of(columns, batches);
        result.tag = tag;
        Ok(result)
    }

    /// The result columns, for describing the statement before it runs.
    pub(crate) fn columns(
        &self,
        ctx: &QueryContext,
        schema: &Schema,
    ) -> KuraResult<Vec<ResultColumn>> {
        let q = self.query()?;
        let catalog = ctx.catalog();
        let overlay = Overlay {
            inner: &catalog,
            name: ROWS,
            rows: rows_table(ROWS, schema, Vec::new()),
        };
        let (_, cols) = kura_sql::describe_query(&overlay, &q).map_err(KuraError::from)?;
        Ok(cols
            .into_iter()
            .map(|(name, data_type)| ResultColumn { name, data_type })
            .collect())
    }
}

/// The columns a RETURNING list gives over its table as the statement sees it.
pub(crate) fn returning_columns(
    ctx: &QueryContext,
    returning: &Returning,
) -> KuraResult<Vec<ResultColumn>> {
    let t = ctx.tx.table(returning.table).ok_or_else(|| {
        KuraError::Storage(kura_storage::StorageError::NoSuchTable(
            returning.table.to_string(),
        ))
    })?;
    returning.columns(ctx, t.schema())
}

/// The name the rows go by (no user relation can have it: names starting
/// with `__kura` are kura's).
const ROWS: &str = "__kura_returning_rows";

/// `rows` as an in-memory table named `name` with the columns of `schema`.
fn rows_table(name: &str, schema: &Schema, rows: Vec<Batch>) -> Arc<dyn TableSource> {
    let columns = crate::storage_table::source_columns(schema);
    let types: Vec<_> = schema.columns.iter().map(|c| c.data_type).collect();
    let all = kura_exec::ops::concat(&types, rows);
    MemTable::new(name, columns, all.columns).into_arc()
}

/// The statement's catalog with the target table's name standing for the
/// rows written.
struct Overlay<'a> {
    inner: &'a dyn CatalogProvider,
    name: &'a str,
    rows: Arc<dyn TableSource>,
}

impl CatalogProvider for Overlay<'_> {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>> {
        if name.eq_ignore_ascii_case(self.name) {
            return Some(self.rows.clone());
        }
        self.inner.table(name)
    }
    fn view(&self, name: &str) -> Option<ViewDefinition> {
        self.inner.view(name)
    }
    fn relation_names(&self) -> Vec<String> {
        self.inner.relation_names()
    }
    fn settings(&self) -> Vec<kura_sql::system::SysSetting> {
        self.inner.settings()
    }
    fn session(&self) -> Option<&kura_sql::SessionInfo> {
        self.inner.session()
    }
    fn rules(&self, table: &str) -> kura_sql::TableRulesInfo {
        self.inner.rules(table)
    }
    fn sequences(&self) -> Vec<kura_sql::SequenceInfo> {
        self.inner.sequences()
    }
    fn sequence(&self, name: &str) -> Option<kura_exec::expr::SeqRef> {
        self.inner.sequence(name)
    }
    fn database_bytes(&self) -> Option<u64> {
        self.inner.database_bytes()
    }
    fn file_table(
        &self,
        format: &kura_sql::FileFormat,
        patterns: &[String],
    ) -> Result<Arc<dyn TableSource>, kura_exec::ExecError> {
        self.inner.file_table(format, patterns)
    }
}
