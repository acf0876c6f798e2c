//! One side of a join that may run on the shards ([`crate::colocated_join`]): the kura
//! shard leaf under it, its columns as kura SQL, and where its rows live.

use std::sync::Arc;

use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::ExecutionPlan;

use arrow_schema::SchemaRef;

use crate::error::DistResult;
use crate::exec::KuraShardScanExec;
use crate::fragment::{Fragment, FragmentKind, OutputField};
use crate::physical_sql::to_kura_sql;
use crate::placement::Placement;

/// One side of a join: its shard leaf, its output columns as kura SQL over the leaf as a
/// derived table, and where its rows live.
pub(crate) struct Side<'a> {
    pub leaf: &'a KuraShardScanExec,
    pub columns: Vec<String>,
    pub placement: SidePlacement,
}

/// Where a side's rows live: on every shard (or on the only one), or split in a
/// partitioning with the key in the given SQL expressions of its columns.
#[derive(Clone)]
pub(crate) enum SidePlacement {
    Replicated,
    Split {
        partitioning: String,
        keys: Vec<String>,
    },
    /// Split in a way no join may rely on.
    Unknown,
}

pub(crate) fn tables_of(f: &Fragment) -> Vec<String> {
    match &f.kind {
        FragmentKind::Scan { table, .. } => vec![table.clone()],
        FragmentKind::Query { tables, .. } => tables.clone(),
        FragmentKind::Catalog => Vec::new(),
    }
}

/// The join side under `plan` — a scan without a limit or aggregation, or a query leaf —
/// reached through projections, repartitions and coalescing (which change how rows are
/// spread over partitions, not which rows there are), with its columns as kura SQL over the
/// derived table `alias`.
pub(crate) fn side<'a>(plan: &'a Arc<dyn ExecutionPlan>, alias: &str) -> Option<Side<'a>> {
    if let Some(leaf) = plan.downcast_ref::<KuraShardScanExec>() {
        let f = leaf.fragment();
        let columns = f.column_refs(Some(alias));
        let placement = match &f.kind {
            // One shard holds every table whole: any join of its leaves is co-located.
            FragmentKind::Scan {
                limit: None,
                aggregate: None,
                ..
            }
            | FragmentKind::Query { .. }
                if f.shards == 1 =>
            {
                SidePlacement::Replicated
            }
            FragmentKind::Scan {
                limit: None,
                aggregate: None,
                placement,
                ..
            } => match placement {
                Placement::Replicated => SidePlacement::Replicated,
                Placement::Split {
                    column,
                    partitioning: Some(p),
                } => SidePlacement::Split {
                    partitioning: p.clone(),
                    keys: f
                        .columns
                        .iter()
                        .zip(&columns)
                        .filter(|(c, _)| &c.name == column)
                        .map(|(_, sql)| sql.clone())
                        .collect(),
                },
                Placement::Split { .. } => SidePlacement::Unknown,
            },
            FragmentKind::Query {
                replicated: true, ..
            } => SidePlacement::Replicated,
            FragmentKind::Query { key, .. } => match key {
                Some((p, at)) => SidePlacement::Split {
                    partitioning: p.clone(),
                    keys: at.iter().filter_map(|&i| columns.get(i).cloned()).collect(),
                },
                None => SidePlacement::Unknown,
            },
            _ => return None,
        };
        return Some(Side {
            leaf,
            columns,
            placement,
        });
    }
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let below = side(p.input(), alias)?;
        let schema = p.input().schema();
        let columns = p
            .expr()
            .iter()
            .map(|e| to_kura_sql(&e.expr, &below.columns, &schema))
            .collect::<Option<Vec<_>>>()?;
        return Some(Side { columns, ..below });
    }
    if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        return side(r.input(), alias);
    }
    if let Some(c) = plan.downcast_ref::<CoalescePartitionsExec>() {
        // A fetch (LIMIT) on the coalesce is a global limit: not the shards' to apply.
        if c.fetch().is_some() {
            return None;
        }
        return side(c.input(), alias);
    }
    None
}

/// The leaf that runs `SELECT outputs FROM from` on each of `shards` shards, its columns
/// named `c0`, `c1`, ... and typed as `schema` (`None` when the leaf would not give exactly
/// that schema); its rows live as `placement` says, the key in whichever outputs are key
/// expressions.
pub(crate) fn query_leaf(
    outputs: &[String],
    from: &str,
    tables: Vec<String>,
    placement: &SidePlacement,
    schema: &SchemaRef,
    shards: usize,
) -> DistResult<Option<KuraShardScanExec>> {
    if outputs.len() != schema.fields().len() {
        return Ok(None);
    }
    let select: Vec<String> = outputs
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} AS \"c{i}\""))
        .collect();
    let key = match placement {
        SidePlacement::Split { partitioning, keys } => {
            let at: Vec<usize> = outputs
                .iter()
                .enumerate()
                .filter(|(_, c)| keys.contains(c))
                .map(|(i, _)| i)
                .collect();
            (!at.is_empty()).then(|| (partitioning.clone(), at))
        }
        _ => None,
    };
    let fragment = Fragment {
        kind: FragmentKind::Query {
            sql: format!("SELECT {} FROM {from}", select.join(", ")),
            tables,
            replicated: matches!(placement, SidePlacement::Replicated),
            key,
            fields: OutputField::of_schema(schema),
            whole: false,
        },
        columns: Vec::new(),
        shards,
    };
    let leaf = KuraShardScanExec::try_new(Arc::new(fragment), None, None)?;
    if leaf.schema().fields() != schema.fields() {
        return Ok(None);
    }
    Ok(Some(leaf))
}
