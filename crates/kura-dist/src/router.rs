//! Queries one shard answers whole (Citus calls them router queries): on a cluster of one
//! shard, or over replicated tables only, every table a query reads lives whole on one
//! worker, so the query runs there as written — planned by kura's own optimizer (its join
//! order, its decorrelation of subqueries) in one leaf of the distributed plan — and
//! DataFusion carries its rows to the client. Views a session made are passed along as
//! common table expressions. A query the shard's kura refuses runs as DataFusion plans it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{provider_as_source, source_as_provider, TableProvider, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};

use crate::error::DistResult;
use crate::exec::KuraShardScanExec;
use crate::fragment::{Fragment, FragmentKind, OutputField};
use crate::placement::Placement;
use crate::table::KuraTable;

/// `KURA_CLUSTER_ROUTER=off` in the coordinator's environment plans every query with
/// DataFusion (to measure the distributed engine itself on one shard).
pub const ROUTER_ENV: &str = "KURA_CLUSTER_ROUTER";

/// Whether queries one shard answers whole are sent there ([`ROUTER_ENV`]).
pub fn router_enabled() -> bool {
    std::env::var(ROUTER_ENV).map_or(true, |v| v != "off")
}

/// The views a session created, as the text of a common table expression each
/// (`name (columns) AS (query)`), by lower-case name.
pub type Views = BTreeMap<String, String>;

/// The view `statement` creates, as (name, CTE text).
pub fn created_view(statement: &DFStatement) -> Option<(String, String)> {
    let DFStatement::Statement(s) = statement else {
        return None;
    };
    let Statement::CreateView(v) = s.as_ref() else {
        return None;
    };
    if v.materialized {
        return None;
    }
    let columns = if v.columns.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = v.columns.iter().map(|c| c.name.to_string()).collect();
        format!(" ({})", names.join(", "))
    };
    Some((
        v.name.to_string().to_lowercase(),
        format!("{}{columns} AS ({})", v.name, v.query),
    ))
}

/// The views `statement` drops, by lower-case name.
pub fn dropped_views(statement: &DFStatement) -> Vec<String> {
    match statement {
        DFStatement::Statement(s) => match s.as_ref() {
            Statement::Drop {
                object_type: ObjectType::View,
                names,
                ..
            } => names.iter().map(|n| n.to_string().to_lowercase()).collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The tables (and views) `plan` reads, when each table lives whole on the worker it would
/// be read on: one shard, or replicated. `None` when a table is split across shards or a
/// source is neither a cluster table nor one of `views`.
pub fn whole_on_one_shard(plan: &LogicalPlan, views: &Views) -> Option<(Vec<String>, Vec<String>)> {
    let (mut tables, mut used) = (Vec::new(), Vec::new());
    if !collect_sources(plan, views, &mut tables, &mut used) || tables.is_empty() {
        return None;
    }
    tables.sort();
    tables.dedup();
    used.sort();
    used.dedup();
    Some((tables, used))
}

/// Pushes the cluster tables and views `plan` reads (subqueries and views' own plans
/// included) to `tables` and `used`; false at a source that is not whole on one shard.
fn collect_sources(
    plan: &LogicalPlan,
    views: &Views,
    tables: &mut Vec<String>,
    used: &mut Vec<String>,
) -> bool {
    let mut ok = true;
    let _ = plan.apply_with_subqueries(|node| {
        // DataFusion's SQL planner inlines a view as its plan under the view's name.
        if let LogicalPlan::SubqueryAlias(a) = node {
            let name = a.alias.table().to_lowercase();
            if views.contains_key(&name) {
                used.push(name);
            }
        }
        let LogicalPlan::TableScan(scan) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let name = scan.table_name.table().to_lowercase();
        let table = source_as_provider(&scan.source).ok().and_then(|p| {
            let table = p.downcast_ref::<KuraTable>()?;
            Some((
                table.name().to_string(),
                table.shards() == 1 || *table.placement() == Placement::Replicated,
            ))
        });
        ok = match table {
            Some((t, whole)) => {
                tables.push(t);
                whole
            }
            // A view of this session: what it reads must be whole on one shard too.
            None if views.contains_key(&name) => {
                used.push(name);
                match scan.source.get_logical_plan() {
                    Some(view) => collect_sources(&view, views, tables, used),
                    None => false,
                }
            }
            None => false,
        };
        Ok(if ok {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    ok
}

/// `query`'s text with the views it reads defined in front of it.
pub fn with_views(query: &str, used: &[String], views: &Views) -> String {
    let ctes: Vec<&str> = used
        .iter()
        .filter_map(|v| views.get(v).map(String::as_str))
        .collect();
    if ctes.is_empty() {
        query.to_string()
    } else {
        format!("WITH {} {query}", ctes.join(", "))
    }
}

/// The leaf that runs `sql` whole on one shard, its rows typed as DataFusion's plan of it
/// says (every column nullable: kura's values, DataFusion's types).
pub fn leaf(
    sql: String,
    tables: Vec<String>,
    plan: &LogicalPlan,
    shards: usize,
) -> DistResult<KuraShardScanExec> {
    let schema = Schema::new(
        plan.schema()
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    let fragment = Fragment {
        kind: FragmentKind::Query {
            sql,
            tables,
            replicated: true,
            key: None,
            fields: OutputField::of_schema(&schema),
            whole: true,
        },
        columns: Vec::new(),
        shards,
    };
    KuraShardScanExec::try_new(Arc::new(fragment), None, None)
}

/// A routed query as a table, so DataFusion plans it (and datafusion-distributed puts it
/// on its worker) like any scan.
#[derive(Debug)]
struct RoutedQuery {
    leaf: KuraShardScanExec,
}

/// The logical plan reading `leaf`'s rows.
pub fn scan_of(leaf: KuraShardScanExec) -> Result<LogicalPlan> {
    LogicalPlanBuilder::scan(
        "kura_routed_query",
        provider_as_source(Arc::new(RoutedQuery { leaf })),
        None,
    )?
    .build()
}

#[async_trait]
impl TableProvider for RoutedQuery {
    fn schema(&self) -> SchemaRef {
        self.leaf.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let leaf: Arc<dyn ExecutionPlan> = Arc::new(self.leaf.clone());
        match projection {
            Some(p)
                if p.len() != self.leaf.schema().fields().len()
                    || p.iter().enumerate().any(|(i, &c)| i != c) =>
            {
                let schema = self.leaf.schema();
                let exprs = p
                    .iter()
                    .map(|&i| {
                        let name = schema.field(i).name().clone();
                        ProjectionExpr {
                            expr: Arc::new(Column::new(&name, i)) as Arc<dyn PhysicalExpr>,
                            alias: name,
                        }
                    })
                    .collect::<Vec<_>>();
                Ok(Arc::new(ProjectionExec::try_new(exprs, leaf)?))
            }
            _ => Ok(leaf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    #[test]
    fn a_view_becomes_a_common_table_expression() {
        let s = DFParser::parse_sql(
            "create view revenue0 (supplier_no, total_revenue) as select l_suppkey, sum(l_extendedprice) from lineitem group by l_suppkey",
        )
        .unwrap();
        let (name, cte) = created_view(&s[0]).unwrap();
        assert_eq!(name, "revenue0");
        assert!(
            cte.starts_with("revenue0 (supplier_no, total_revenue) AS (SELECT l_suppkey"),
            "{cte}"
        );
        let mut views = Views::new();
        views.insert(name, cte);
        let q = with_views("SELECT * FROM revenue0", &["revenue0".into()], &views);
        assert!(
            q.starts_with("WITH revenue0 (supplier_no, total_revenue) AS (SELECT"),
            "{q}"
        );
        assert_eq!(with_views("SELECT 1", &[], &views), "SELECT 1");
        let s = DFParser::parse_sql("select 1").unwrap();
        assert!(created_view(&s[0]).is_none());
    }
}
