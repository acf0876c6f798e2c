//! Aggregations run whole on the shards (paper 003 §2, phase 2 of the shared-nothing
//! configuration): when every group lives on one shard — the rows are grouped by the key
//! their table is split by (LINEITEM by `l_orderkey`), or every shard holds all of them (a
//! replicated table, a cluster of one shard) — each shard's groups are final, so the shard
//! computes the aggregates' values and DataFusion's two phases with the exchange between them
//! become one leaf; a HAVING above it ([`crate::shard_filter`]) and the join it feeds
//! ([`crate::colocated_join`]) may then run there too (TPC-H Q18's `l_orderkey` groups).
//!
//! As in [`crate::partial_agg`], only what kura computes with DataFusion's value: plain
//! grouping, `count`, `sum`, `min`, `max` (DISTINCT too) and `avg` (of decimals with
//! DataFusion's truncating division, of doubles as they are), without FILTER or ORDER BY,
//! over arguments [`crate::physical_sql`] translates.

use std::sync::Arc;

use arrow_schema::DataType as ArrowType;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::error::DistResult;
use crate::exec::KuraShardScanExec;
use crate::join_side::{query_leaf, side, tables_of, SidePlacement};
use crate::physical_sql::to_kura_sql;

/// The first phase under a final one: through the exchange between them.
fn partial_below(plan: &Arc<dyn ExecutionPlan>) -> Option<&AggregateExec> {
    if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        return partial_below(r.input());
    }
    if let Some(c) = plan.downcast_ref::<CoalescePartitionsExec>() {
        return partial_below(c.input());
    }
    plan.downcast_ref::<AggregateExec>()
        .filter(|a| *a.mode() == AggregateMode::Partial)
}

/// The leaf that computes `agg` whole on the shards, when every group lives on one.
pub(crate) fn pushed(agg: &AggregateExec) -> DistResult<Option<KuraShardScanExec>> {
    // The node whose grouping, aggregates and input say what is computed: the first phase
    // under a final one, or a single-phase aggregation itself.
    let spec = match agg.mode() {
        AggregateMode::Final | AggregateMode::FinalPartitioned => {
            match partial_below(agg.input()) {
                Some(p) => p,
                None => return Ok(None),
            }
        }
        AggregateMode::Single | AggregateMode::SinglePartitioned => agg,
        _ => return Ok(None),
    };
    if !spec.group_expr().is_single()
        || agg.limit_options().is_some()
        || spec.limit_options().is_some()
        || spec.filter_expr().iter().any(Option::is_some)
    {
        return Ok(None);
    }
    let Some(input) = side(spec.input(), "q") else {
        return Ok(None);
    };
    let input_schema = spec.input().schema();
    let sql = |e: &Arc<dyn PhysicalExpr>| to_kura_sql(e, &input.columns, &input_schema);
    let Some(group_by) = spec
        .group_expr()
        .expr()
        .iter()
        .map(|(e, _)| sql(e))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    // Complete on each shard: replicated rows (read on one shard), or groups that contain
    // the split key.
    let complete = match &input.placement {
        SidePlacement::Replicated => true,
        SidePlacement::Split { keys, .. } => group_by.iter().any(|g| keys.contains(g)),
        SidePlacement::Unknown => false,
    };
    if !complete {
        return Ok(None);
    }
    let schema = agg.schema();
    let mut outputs = group_by.clone();
    for (i, a) in spec.aggr_expr().iter().enumerate() {
        if !a.order_bys().is_empty() || a.ignore_nulls() {
            return Ok(None);
        }
        let (arg, arg_type) = match a.expressions().as_slice() {
            [] => (None, None),
            [e] => match sql(e) {
                Some(s) => (Some(s), Some(e.data_type(&input_schema)?)),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let out = schema.field(group_by.len() + i).data_type();
        let Some(value) = value_sql(
            a.fun().name(),
            a.is_distinct(),
            arg.as_deref(),
            arg_type.as_ref(),
            out,
        ) else {
            return Ok(None);
        };
        outputs.push(value);
    }
    let mut from = format!(
        "({}) AS \"q\"",
        input.leaf.fragment().sql().unwrap_or_default()
    );
    if !group_by.is_empty() {
        from.push_str(" GROUP BY ");
        from.push_str(&group_by.join(", "));
    }
    query_leaf(
        &outputs,
        &from,
        tables_of(input.leaf.fragment()),
        &input.placement,
        &schema,
        input.leaf.fragment().shards,
    )
}

/// The kura SQL of an aggregate's final value with DataFusion's meaning, or `None`.
fn value_sql(
    function: &str,
    distinct: bool,
    arg: Option<&str>,
    arg_type: Option<&ArrowType>,
    out: &ArrowType,
) -> Option<String> {
    let d = if distinct { "DISTINCT " } else { "" };
    match function {
        "count" => Some(format!("count({d}{})", arg.unwrap_or("*"))),
        "sum" | "min" | "max" => Some(format!("{function}({d}{})", arg?)),
        "avg" if !distinct => {
            let arg = arg?;
            match (arg_type?, out) {
                (ArrowType::Float64, ArrowType::Float64) => Some(format!("avg({arg})")),
                // DataFusion: the sum at the target scale, divided by the count with
                // truncation (its `DecimalAverager`); kura's integer division truncates
                // too, and the quotient is shifted back to the target scale. No rows: NULL.
                (ArrowType::Decimal128(_, s), ArrowType::Decimal128(_, t)) if t >= s => {
                    let shift = 10i128.checked_pow(*t as u32)?;
                    let unit = match *t {
                        0 => "1".to_string(),
                        t => format!("0.{}1", "0".repeat(t as usize - 1)),
                    };
                    Some(format!(
                        "(CAST(CAST(sum({arg}) * {shift} AS BIGINT) / NULLIF(count({arg}), 0) AS DECIMAL(38, 0)) * {unit})"
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_values() {
        let dec = ArrowType::Decimal128(15, 2);
        assert_eq!(
            value_sql("count", true, Some("x"), Some(&dec), &ArrowType::Int64).unwrap(),
            "count(DISTINCT x)"
        );
        assert_eq!(
            value_sql("count", false, None, None, &ArrowType::Int64).unwrap(),
            "count(*)"
        );
        assert_eq!(
            value_sql(
                "avg",
                false,
                Some("x"),
                Some(&dec),
                &ArrowType::Decimal128(19, 6)
            )
            .unwrap(),
            "(CAST(CAST(sum(x) * 1000000 AS BIGINT) / NULLIF(count(x), 0) AS DECIMAL(38, 0)) * 0.000001)"
        );
        assert!(value_sql("stddev", false, Some("x"), Some(&dec), &ArrowType::Float64).is_none());
        assert!(value_sql("avg", true, Some("x"), Some(&dec), &dec).is_none());
    }
}
