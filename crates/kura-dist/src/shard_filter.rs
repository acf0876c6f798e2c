//! Filters run on the shards (paper 003 §2, phase 2 of the shared-nothing configuration): a
//! DataFusion filter over a shard leaf — a HAVING over an aggregation the shards computed
//! whole ([`crate::complete_agg`]), a condition over a join they ran
//! ([`crate::colocated_join`]) — becomes part of the leaf's fragment, so only the rows that
//! pass leave the shard. A filter keeps rows where they are: the leaf's placement stays.

use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::error::DistResult;
use crate::exec::KuraShardScanExec;
use crate::join_side::{query_leaf, side, tables_of};
use crate::physical_sql::to_kura_sql;

/// The leaf that applies `filter` on the shards, when kura evaluates its predicate as
/// DataFusion does.
pub(crate) fn pushed(filter: &FilterExec) -> DistResult<Option<KuraShardScanExec>> {
    if filter.fetch().is_some() {
        return Ok(None);
    }
    let Some(input) = side(filter.input(), "q") else {
        return Ok(None);
    };
    let schema = filter.input().schema();
    let Some(predicate) = to_kura_sql(filter.predicate(), &input.columns, &schema) else {
        return Ok(None);
    };
    let columns: Vec<String> = match filter.projection() {
        Some(p) => match p.iter().map(|&i| input.columns.get(i).cloned()).collect() {
            Some(c) => c,
            None => return Ok(None),
        },
        None => input.columns.clone(),
    };
    let from = format!(
        "({}) AS \"q\" WHERE {predicate}",
        input.leaf.fragment().sql().unwrap_or_default()
    );
    query_leaf(
        &columns,
        &from,
        tables_of(input.leaf.fragment()),
        &input.placement,
        &filter.schema(),
        input.leaf.fragment().shards,
    )
}
