//! Partial aggregation pushed into the shards (paper 003 §2, phase 2 of the shared-nothing
//! configuration): a physical optimizer rule that replaces DataFusion's first aggregation phase
//! over a kura shard scan by a shard fragment that kura aggregates itself, so each shard sends
//! its groups' partial states instead of its rows, and kura's own hash aggregation does the
//! work where the data is.
//!
//! The rule runs after DataFusion's own rules and before datafusion-distributed cuts the plan
//! into stages. It applies when every piece translates to kura SQL with DataFusion's meaning
//! ([`crate::physical_sql`]): plain grouping (no grouping sets), `sum`, `count`, `min`, `max`
//! and `avg` without DISTINCT, FILTER or ORDER BY, over a scan without a row limit, reached
//! through projections (and round-robin repartitions, which do not change what a partial
//! aggregation computes). Otherwise the plan stays as DataFusion made it.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_expr::{Partitioning, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::error::DistError;
use crate::exec::KuraShardScanExec;
use crate::fragment::{Fragment, FragmentKind, OutputField, PartialAggregate};
use crate::physical_sql::to_kura_sql;

/// Replaces `AggregateExec(Partial)` over a kura shard scan by the scan aggregating on the
/// shard.
#[derive(Debug)]
pub struct PushPartialAggregate {
    enabled: bool,
}

/// Set to `off` in the coordinator's environment to leave every join and aggregation to
/// DataFusion, as before they ran on the shards (to measure what running them there gains).
pub const PUSHDOWN_ENV: &str = "KURA_CLUSTER_PUSHDOWN";

/// Whether joins and partial aggregations run on the shards ([`PUSHDOWN_ENV`]).
pub fn pushdown_enabled() -> bool {
    std::env::var(PUSHDOWN_ENV).map_or(true, |v| v != "off")
}

impl PushPartialAggregate {
    /// On unless [`PUSHDOWN_ENV`] is `off`.
    pub fn from_env() -> Self {
        PushPartialAggregate {
            enabled: pushdown_enabled(),
        }
    }
}

impl PhysicalOptimizerRule for PushPartialAggregate {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.enabled {
            return Ok(plan);
        }
        plan.transform_down(|node| {
            let Some(agg) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            match pushed(agg).map_err(DistError::into_datafusion)? {
                Some(leaf) => Ok(Transformed::yes(Arc::new(leaf) as Arc<dyn ExecutionPlan>)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "kura_push_partial_aggregate"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The shard leaf that computes `agg`, when it can.
fn pushed(agg: &AggregateExec) -> crate::error::DistResult<Option<KuraShardScanExec>> {
    if *agg.mode() != AggregateMode::Partial
        || !agg.group_expr().is_single()
        || agg.limit_options().is_some()
        || agg.filter_expr().iter().any(Option::is_some)
    {
        return Ok(None);
    }
    let Some((leaf, inputs)) = kura_inputs(agg.input()) else {
        return Ok(None);
    };
    let fragment = leaf.fragment();
    let input_schema = agg.input_schema();
    let sql = |e: &Arc<dyn PhysicalExpr>| to_kura_sql(e, &inputs, &input_schema);
    let Some(group_by) = agg
        .group_expr()
        .expr()
        .iter()
        .map(|(e, _)| sql(e))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let mut outputs = group_by.clone();
    for a in agg.aggr_expr() {
        if a.is_distinct() || !a.order_bys().is_empty() || a.ignore_nulls() {
            return Ok(None);
        }
        let args = a.expressions();
        let arg = match args.as_slice() {
            [] => None,
            [e] => match sql(e) {
                Some(s) => Some(s),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let Some(states) = state_sql(a.fun().name(), arg.as_deref(), &a.state_fields()?) else {
            return Ok(None);
        };
        outputs.extend(states);
    }
    let schema = agg.schema();
    if outputs.len() != schema.fields().len() {
        return Ok(None);
    }
    let fields = OutputField::of_schema(&schema);
    let kind = match &fragment.kind {
        FragmentKind::Scan {
            table,
            filters,
            limit: None,
            placement,
            aggregate: None,
        } => FragmentKind::Scan {
            table: table.clone(),
            filters: filters.clone(),
            limit: None,
            placement: placement.clone(),
            aggregate: Some(PartialAggregate {
                group_by,
                outputs,
                fields,
            }),
        },
        // A query's rows (a join on the shards) aggregated as a derived table.
        FragmentKind::Query {
            sql,
            tables,
            replicated,
            ..
        } => {
            let mut text = format!("SELECT {} FROM ({sql}) AS q", outputs.join(", "));
            if !group_by.is_empty() {
                text.push_str(" GROUP BY ");
                text.push_str(&group_by.join(", "));
            }
            FragmentKind::Query {
                sql: text,
                tables: tables.clone(),
                replicated: *replicated,
                key: None,
                fields,
                whole: false,
            }
        }
        _ => return Ok(None),
    };
    let fragment = Fragment {
        kind,
        columns: match fragment.kind {
            FragmentKind::Query { .. } => Vec::new(),
            _ => fragment.columns.clone(),
        },
        shards: fragment.shards,
    };
    let leaf = KuraShardScanExec::try_new(Arc::new(fragment), None, None)?;
    // The leaf must give exactly the schema the final phase was planned for.
    if leaf.schema().fields() != schema.fields() {
        return Ok(None);
    }
    Ok(Some(leaf))
}

/// The kura shard scan under `plan` and, for each of `plan`'s output columns, its kura SQL
/// over the scanned table — through projections and round-robin repartitions; `None` for
/// anything else.
fn kura_inputs(plan: &Arc<dyn ExecutionPlan>) -> Option<(&KuraShardScanExec, Vec<String>)> {
    if let Some(leaf) = plan.downcast_ref::<KuraShardScanExec>() {
        let alias = match leaf.fragment().kind {
            FragmentKind::Query { .. } => Some("q"),
            _ => None,
        };
        return Some((leaf, leaf.fragment().column_refs(alias)));
    }
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let (leaf, below) = kura_inputs(p.input())?;
        let schema = p.input().schema();
        let exprs = p
            .expr()
            .iter()
            .map(|e| to_kura_sql(&e.expr, &below, &schema))
            .collect::<Option<Vec<_>>>()?;
        return Some((leaf, exprs));
    }
    if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        if matches!(r.partitioning(), Partitioning::RoundRobinBatch(_)) {
            return kura_inputs(r.input());
        }
        return None;
    }
    None
}

/// The kura SQL of each of an aggregate's partial states (`states`, DataFusion's order), or
/// `None` for a function kura does not compute as DataFusion does.
fn state_sql(
    function: &str,
    arg: Option<&str>,
    states: &[arrow_schema::FieldRef],
) -> Option<Vec<String>> {
    let arg_or_star = arg.unwrap_or("*");
    let one = |f: &str, a: &str| Some(vec![format!("{f}({a})")]);
    match (function, states.len()) {
        ("count", 1) => one("count", arg_or_star),
        ("sum", 1) => one("sum", arg?),
        ("min", 1) => one("min", arg?),
        ("max", 1) => one("max", arg?),
        ("avg", 2) => {
            let arg = arg?;
            states
                .iter()
                .map(|f| {
                    let name = f.name();
                    if name.ends_with("[count]") {
                        Some(format!("count({arg})"))
                    } else if name.ends_with("[sum]") {
                        Some(format!("sum({arg})"))
                    } else {
                        None
                    }
                })
                .collect()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    #[test]
    fn states_follow_datafusions_order() {
        let f = |n: &str, t| Arc::new(Field::new(n, t, true));
        let avg = [
            f("avg(q)[count]", DataType::UInt64),
            f("avg(q)[sum]", DataType::Decimal128(25, 2)),
        ];
        assert_eq!(
            state_sql("avg", Some("\"q\""), &avg).unwrap(),
            vec!["count(\"q\")", "sum(\"q\")"]
        );
        let count = [f("count(Int64(1))[count]", DataType::Int64)];
        assert_eq!(state_sql("count", None, &count).unwrap(), vec!["count(*)"]);
        assert!(state_sql("stddev", Some("\"q\""), &count).is_none());
        assert!(state_sql("sum", None, &count).is_none());
    }
}
