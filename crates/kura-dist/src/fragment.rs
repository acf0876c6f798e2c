//! The fragment a kura shard runs for one leaf of a distributed plan: which table, which
//! columns, which filters (as kura SQL) and how many rows — or the shard's catalog (paper 003
//! §2: the shared-nothing configuration, each server answering for its own data).

use std::sync::Arc;

use std::str::FromStr;

use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use kura_common::DataType;
use serde::{Deserialize, Serialize};

use crate::error::{DistError, DistResult};
use crate::placement::Placement;

/// A column of a fragment's output: its name and kura type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub data_type: DataType,
}

/// What the shard runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FragmentKind {
    /// A scan of `table` with `filters` (kura SQL predicates, ANDed) and an optional row
    /// limit; a replicated table is read on shard 0 only (every shard holds all of it).
    Scan {
        table: String,
        filters: Vec<String>,
        limit: Option<usize>,
        placement: Placement,
        /// The partial aggregation the shard runs over the scan's rows, if any: its output
        /// replaces the columns.
        aggregate: Option<PartialAggregate>,
    },
    /// A query over several tables of the shard — a join of tables that hold equal keys on
    /// the same shard, or of a split table with replicated ones — as kura SQL whose columns
    /// are `fields`. Read on shard 0 only when every table in it is `replicated`.
    Query {
        sql: String,
        /// The tables it reads (where its rows are counted).
        tables: Vec<String>,
        replicated: bool,
        /// The partitioning its rows follow and the output columns holding the key, when a
        /// further join on them may run on the shards too.
        key: Option<(String, Vec<usize>)>,
        fields: Vec<OutputField>,
        /// The user's whole query, routed to one shard ([`crate::router`]): its values are
        /// kura's, so a decimal may be rounded to the scale DataFusion's type of it has.
        #[serde(default)]
        whole: bool,
    },
    /// The shard's identity and its tables' columns ([`catalog_columns`]).
    Catalog,
}

/// A partial aggregation run on the shard (DataFusion's first phase, computed by kura): the
/// output is DataFusion's partial aggregation's — the groups, then each aggregate's states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialAggregate {
    /// The grouping expressions (kura SQL over the table's columns).
    pub group_by: Vec<String>,
    /// Every output column as kura SQL: the groups, then each aggregate state.
    pub outputs: Vec<String>,
    /// The output columns as DataFusion expects them.
    pub fields: Vec<OutputField>,
}

/// An output column of a partial aggregation, as its Arrow field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputField {
    pub name: String,
    /// The Arrow type, as Arrow writes it (`Decimal128(25, 2)`).
    pub arrow_type: String,
    pub nullable: bool,
}

impl OutputField {
    /// The fields of `schema`, as a fragment carries them to the workers.
    pub fn of_schema(schema: &Schema) -> Vec<OutputField> {
        schema
            .fields()
            .iter()
            .map(|f| OutputField {
                name: f.name().clone(),
                arrow_type: f.data_type().to_string(),
                nullable: f.is_nullable(),
            })
            .collect()
    }
}

/// One leaf's work, the same for every shard; the task says which shard runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragment {
    pub kind: FragmentKind,
    /// The output columns, in order.
    pub columns: Vec<ColumnDef>,
    /// How many shards the cluster has (one task each).
    pub shards: usize,
}

/// The columns of the catalog fragment's rows.
pub fn catalog_columns() -> Vec<ColumnDef> {
    let c = |n: &str, t| ColumnDef {
        name: n.to_string(),
        data_type: t,
    };
    vec![
        c("task", DataType::Integer),
        c("shard", DataType::Integer),
        c("shards", DataType::Integer),
        c("cluster", DataType::Varchar(None)),
        c("table_name", DataType::Varchar(None)),
        c("split", DataType::Varchar(None)),
        c("column_name", DataType::Varchar(None)),
        c("column_type", DataType::Varchar(None)),
    ]
}

/// `name` as a quoted SQL identifier.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Fragment {
    /// The partial aggregation the shard runs, if any.
    pub fn aggregate(&self) -> Option<&PartialAggregate> {
        match &self.kind {
            FragmentKind::Scan { aggregate, .. } => aggregate.as_ref(),
            FragmentKind::Query { .. } | FragmentKind::Catalog => None,
        }
    }

    /// Whether every shard holds all of the fragment's rows (it is then read on shard 0).
    pub fn replicated(&self) -> bool {
        match &self.kind {
            FragmentKind::Scan { placement, .. } => placement.is_replicated(),
            FragmentKind::Query { replicated, .. } => *replicated,
            FragmentKind::Catalog => false,
        }
    }

    /// The output columns given as Arrow fields (a partial aggregation's or a query's), if
    /// they are not the scanned columns.
    fn output_fields(&self) -> Option<&[OutputField]> {
        match &self.kind {
            FragmentKind::Query { fields, .. } => Some(fields),
            _ => self.aggregate().map(|a| a.fields.as_slice()),
        }
    }

    /// Whether kura's result columns are cast to the output's Arrow types (which DataFusion
    /// chose) rather than converted as kura's own.
    pub fn casts_output(&self) -> bool {
        self.output_fields().is_some()
    }

    /// Whether the output is a routed whole query's, whose decimals may be rounded to the
    /// output's scale.
    pub fn rounds_output(&self) -> bool {
        matches!(self.kind, FragmentKind::Query { whole: true, .. })
    }

    /// Each output column as kura SQL, for a query over the fragment as the derived table
    /// `alias` (a query's columns are `c0`, `c1`, ...), or — `None`, a scan only — over its
    /// table itself.
    pub fn column_refs(&self, alias: Option<&str>) -> Vec<String> {
        let names: Vec<String> = match &self.kind {
            FragmentKind::Query { fields, .. } => {
                (0..fields.len()).map(|i| quote(&format!("c{i}"))).collect()
            }
            _ => self.columns.iter().map(|c| quote(&c.name)).collect(),
        };
        match alias {
            Some(a) => names
                .into_iter()
                .map(|n| format!("{}.{n}", quote(a)))
                .collect(),
            None => names,
        }
    }

    /// Where the fragment's rows are counted (its table, or its tables joined by `+`).
    pub fn counted_as(&self) -> String {
        match &self.kind {
            FragmentKind::Scan { table, .. } => table.clone(),
            FragmentKind::Query { tables, .. } => tables.join("+"),
            FragmentKind::Catalog => String::new(),
        }
    }

    /// The Arrow schema of the fragment's output (every scanned column nullable; a partial
    /// aggregation's as DataFusion has it).
    pub fn schema(&self) -> DistResult<SchemaRef> {
        if let Some(fields) = self.output_fields() {
            let fields = fields
                .iter()
                .map(|f| {
                    let t = ArrowType::from_str(&f.arrow_type).map_err(|e| {
                        DistError::Cluster(format!(
                            "the type {:?} of a shard fragment's {}: {e}",
                            f.arrow_type, f.name
                        ))
                    })?;
                    Ok(Field::new(&f.name, t, f.nullable))
                })
                .collect::<DistResult<Vec<_>>>()?;
            return Ok(Arc::new(Schema::new(fields)));
        }
        let cols: Vec<_> = self
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type, true))
            .collect();
        Ok(Arc::new(kura_exec::arrow::arrow_schema(&cols)?))
    }

    /// The kura SQL of a scan or query fragment (`None` for the catalog). A scan of no
    /// columns (a `count(*)`) selects a constant the converter then drops, keeping the row
    /// count.
    pub fn sql(&self) -> Option<String> {
        if let FragmentKind::Query { sql, .. } = &self.kind {
            return Some(sql.clone());
        }
        let FragmentKind::Scan {
            table,
            filters,
            limit,
            aggregate,
            ..
        } = &self.kind
        else {
            return None;
        };
        let list = if let Some(agg) = aggregate {
            agg.outputs.join(", ")
        } else if self.columns.is_empty() {
            "1".to_string()
        } else {
            self.columns
                .iter()
                .map(|c| quote(&c.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut sql = format!("SELECT {list} FROM {}", quote(table));
        if !filters.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&filters.join(" AND "));
        }
        if let Some(agg) = aggregate.as_ref().filter(|a| !a.group_by.is_empty()) {
            sql.push_str(" GROUP BY ");
            sql.push_str(&agg.group_by.join(", "));
        }
        if let Some(n) = limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        Some(sql)
    }

    /// A short description for plan displays.
    pub fn describe(&self) -> String {
        match &self.kind {
            FragmentKind::Catalog => "catalog".to_string(),
            FragmentKind::Scan { .. } | FragmentKind::Query { .. } => format!(
                "{}{}",
                self.sql().unwrap_or_default(),
                if self.replicated() {
                    " (replicated: shard 0)"
                } else {
                    ""
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_sql() {
        let f = Fragment {
            kind: FragmentKind::Scan {
                table: "lineitem".into(),
                filters: vec!["(\"l_quantity\" < 24)".into(), "(\"x\" IS NULL)".into()],
                limit: Some(5),
                placement: Placement::Replicated,
                aggregate: None,
            },
            columns: vec![ColumnDef {
                name: "l_quantity".into(),
                data_type: DataType::Decimal {
                    precision: 15,
                    scale: 2,
                },
            }],
            shards: 2,
        };
        assert_eq!(
            f.sql().unwrap(),
            "SELECT \"l_quantity\" FROM \"lineitem\" WHERE (\"l_quantity\" < 24) AND (\"x\" IS NULL) LIMIT 5"
        );
        let none = Fragment {
            columns: vec![],
            ..f.clone()
        };
        assert!(none.sql().unwrap().starts_with("SELECT 1 FROM"));
        assert_eq!(f.schema().unwrap().field(0).name(), "l_quantity");
    }
}
