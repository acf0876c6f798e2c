//! `KuraTable`: a kura table of a sharded cluster as a DataFusion `TableProvider` — its Arrow
//! schema from kura's catalog, its scans as shard leaves (paper 003 §2).
//!
//! Filters that [`crate::filter`] can write as kura SQL are pushed down as Exact (the shards
//! apply them, DataFusion does not again); a limit is pushed into every shard's fragment.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use crate::error::{DistError, DistResult};
use crate::exec::KuraShardScanExec;
use crate::filter::to_kura_sql;
use crate::fragment::{catalog_columns, ColumnDef, Fragment, FragmentKind};
use crate::placement::Placement;

/// One table of the cluster.
#[derive(Debug, Clone)]
pub struct KuraTable {
    name: String,
    columns: Vec<ColumnDef>,
    placement: Placement,
    shards: usize,
    schema: SchemaRef,
}

impl KuraTable {
    pub fn try_new(
        name: String,
        columns: Vec<ColumnDef>,
        placement: Placement,
        shards: usize,
    ) -> DistResult<Self> {
        let schema = Fragment {
            kind: FragmentKind::Catalog,
            columns: columns.clone(),
            shards,
        }
        .schema()?;
        Ok(KuraTable {
            name,
            columns,
            placement,
            shards,
            schema,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the table is spread over the shards.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// How many shards the cluster has.
    pub fn shards(&self) -> usize {
        self.shards
    }
}

#[async_trait]
impl TableProvider for KuraTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match to_kura_sql(f, &self.schema) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = match projection {
            Some(p) => p.iter().map(|&i| self.columns[i].clone()).collect(),
            None => self.columns.clone(),
        };
        let filters = filters
            .iter()
            .map(|f| {
                to_kura_sql(f, &self.schema).ok_or_else(|| {
                    DistError::Cluster(format!(
                        "a filter kura cannot evaluate was pushed to {}: {f}",
                        self.name
                    ))
                    .into_datafusion()
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let fragment = Fragment {
            kind: FragmentKind::Scan {
                table: self.name.clone(),
                filters,
                limit,
                placement: self.placement.clone(),
                aggregate: None,
            },
            columns,
            shards: self.shards,
        };
        let exec = KuraShardScanExec::try_new(Arc::new(fragment), None, None)
            .map_err(DistError::into_datafusion)?;
        Ok(Arc::new(exec))
    }
}

/// The shards' catalogs as a table (`kura_catalog`): one row per column of every table per
/// shard, read when a coordinator connects.
#[derive(Debug)]
pub struct KuraCatalogTable {
    shards: usize,
    schema: SchemaRef,
}

impl KuraCatalogTable {
    pub fn try_new(shards: usize) -> DistResult<Self> {
        let schema = Fragment {
            kind: FragmentKind::Catalog,
            columns: catalog_columns(),
            shards,
        }
        .schema()?;
        Ok(KuraCatalogTable { shards, schema })
    }
}

#[async_trait]
impl TableProvider for KuraCatalogTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Always every column: the projection is applied above.
        let fragment = Fragment {
            kind: FragmentKind::Catalog,
            columns: catalog_columns(),
            shards: self.shards,
        };
        let exec = KuraShardScanExec::try_new(Arc::new(fragment), None, None)
            .map_err(DistError::into_datafusion)?;
        Ok(Arc::new(exec))
    }
}
