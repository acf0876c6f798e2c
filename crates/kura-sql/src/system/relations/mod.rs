//! The system relations: their columns (PostgreSQL's names, the subset clients
//! read) and their rows, computed from a [`Snapshot`].

use std::sync::Arc;

use kura_common::{DataType, Value, Vector};
use kura_exec::expr::pg_types::{pg_type_of, pg_types};
use kura_exec::{MemTable, SourceColumn, TableSource};

use super::*;

mod information_schema;
mod pg_attribute;
mod pg_class;
mod pg_proc;
mod server;
mod unfilled;
mod views_and_keys;

pub use pg_proc::is_function_name;

/// A system relation: where it lives, its OID and its columns, written
/// `name:type` with type `o` (oid, as an integer), `i` (int2/int4), `l` (int8),
/// `t` (name, text, "char"), `b` (bool), `f` (float4/float8), `v` (int2vector),
/// `w` (oidvector), `s` (int2[]) or `a` (an array of a type kura's catalogs do
/// not fill: text columns that are NULL in every row).
pub struct SystemRelation {
    pub schema: &'static str,
    pub name: &'static str,
    pub oid: i32,
    /// `r` for PostgreSQL's catalog tables, `v` for its views.
    pub kind: &'static str,
    pub columns: &'static str,
    /// Its rows, computed from a snapshot of the catalog.
    pub rows: fn(&Snapshot) -> Vec<Vec<Value>>,
}

const fn rel(
    schema: &'static str,
    name: &'static str,
    oid: i32,
    kind: &'static str,
    columns: &'static str,
    rows: fn(&Snapshot) -> Vec<Vec<Value>>,
) -> SystemRelation {
    SystemRelation {
        schema,
        name,
        oid,
        kind,
        columns,
        rows,
    }
}

const PG: &str = "pg_catalog";
const IS: &str = "information_schema";

/// Every system relation, with PostgreSQL's OIDs for its catalogs.
pub const SYSTEM_RELATIONS: &[SystemRelation] = &[
    pg_class::PG_NAMESPACE,
    pg_class::PG_CLASS,
    pg_attribute::PG_ATTRIBUTE,
    pg_attribute::PG_TYPE,
    views_and_keys::PG_INDEX,
    server::PG_DATABASE,
    server::PG_ROLES,
    server::PG_AUTH_MEMBERS,
    server::PG_USER,
    pg_proc::PG_PROC,
    server::PG_SETTINGS,
    views_and_keys::PG_TABLES,
    views_and_keys::PG_VIEWS,
    views_and_keys::PG_INDEXES,
    pg_attribute::PG_ATTRDEF,
    views_and_keys::PG_CONSTRAINT,
    unfilled::PG_DESCRIPTION,
    unfilled::PG_SHDESCRIPTION,
    pg_class::PG_AM,
    pg_proc::PG_LANGUAGE,
    views_and_keys::PG_OPCLASS,
    server::PG_COLLATION,
    unfilled::PG_INHERITS,
    server::PG_EXTENSION,
    pg_class::PG_TABLESPACE,
    unfilled::PG_TRIGGER,
    unfilled::PG_REWRITE,
    unfilled::PG_POLICY,
    unfilled::PG_STATISTIC_EXT,
    unfilled::PG_PUBLICATION,
    unfilled::PG_PUBLICATION_REL,
    unfilled::PG_PUBLICATION_NAMESPACE,
    unfilled::PG_PARTITIONED_TABLE,
    views_and_keys::PG_SEQUENCE,
    unfilled::PG_FOREIGN_TABLE,
    unfilled::PG_ENUM,
    views_and_keys::PG_SEQUENCES,
    information_schema::INFORMATION_SCHEMA_SEQUENCES,
    information_schema::INFORMATION_SCHEMA_TABLES,
    information_schema::INFORMATION_SCHEMA_COLUMNS,
    information_schema::INFORMATION_SCHEMA_SCHEMATA,
    information_schema::INFORMATION_SCHEMA_VIEWS,
];

impl SystemRelation {
    /// Positions of its array columns that are always NULL (`:a`; `:s` and
    /// `:x` are filled arrays of smallint and text).
    pub fn array_columns(&self) -> Vec<usize> {
        self.columns
            .split_whitespace()
            .enumerate()
            .filter(|(_, c)| c.ends_with(":a"))
            .map(|(i, _)| i)
            .collect()
    }

    /// Its columns with kura types.
    pub fn source_columns(&self) -> Vec<SourceColumn> {
        self.columns
            .split_whitespace()
            .map(|c| {
                let (name, ty) = c.split_once(':').unwrap_or((c, "t"));
                SourceColumn {
                    name: name.to_string(),
                    data_type: match ty {
                        "o" | "i" => DataType::Integer,
                        "l" => DataType::BigInt,
                        "b" => DataType::Boolean,
                        "f" => DataType::Double,
                        "v" => DataType::INT2VECTOR,
                        "w" => DataType::OIDVECTOR,
                        "s" => DataType::Array(kura_common::ElemType::SmallInt),
                        "x" => DataType::Array(kura_common::ElemType::Varchar(None)),
                        _ => DataType::Varchar(None),
                    },
                    nullable: true,
                }
            })
            .collect()
    }

    fn namespace_oid(&self) -> i32 {
        if self.schema == IS {
            INFORMATION_SCHEMA_OID
        } else {
            PG_CATALOG_OID
        }
    }
}

fn o(x: i32) -> Value {
    Value::Integer(x)
}
fn s(x: &str) -> Value {
    Value::Text(x.to_string())
}
fn b(x: bool) -> Value {
    Value::Boolean(x)
}
const N: Value = Value::Null;

/// The schemas: pg_catalog, public and information_schema.
const SCHEMAS: [(i32, &str); 3] = [
    (PG_CATALOG_OID, "pg_catalog"),
    (PUBLIC_OID, "public"),
    (INFORMATION_SCHEMA_OID, "information_schema"),
];

/// The rows of a catalog kura has nothing for.
fn no_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    Vec::new()
}

/// The system relation `schema.name` as an in-memory table, its rows computed now.
pub fn system_relation(snap: &Snapshot, schema: &str, name: &str) -> Option<Arc<dyn TableSource>> {
    let rel = SYSTEM_RELATIONS
        .iter()
        .find(|r| r.schema == schema && r.name == name)?;
    let columns = rel.source_columns();
    let rows = (rel.rows)(snap);
    let data = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let values: Vec<Value> = rows
                .iter()
                .map(|r| r.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            Vector::from_values(c.data_type, &values)
        })
        .collect::<Option<Vec<_>>>()?;
    Some(MemTable::new(&format!("{schema}.{name}"), columns, data).into_arc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        let col = |n: &str, t| SourceColumn {
            name: n.into(),
            data_type: t,
            nullable: true,
        };
        Snapshot::new(SnapshotInput {
            relations: vec![
                (
                    "t".into(),
                    RelKind::Table,
                    vec![
                        col("a", DataType::Integer),
                        col("b", DataType::Varchar(Some(5))),
                    ],
                    None,
                    3,
                    (2, 16384),
                ),
                (
                    "v".into(),
                    RelKind::View,
                    vec![col("a", DataType::Integer)],
                    Some("SELECT a FROM t".into()),
                    0,
                    (0, 0),
                ),
            ],
            indexes: vec![("t_a".into(), "t".into(), vec![0], true, vec![1], (1, 16384))],
            settings: vec![],
            rules: vec![],
            database: None,
            sequences: vec![crate::catalog::SequenceInfo {
                name: "t_a_seq".into(),
                type_name: "integer",
                start: 1,
                increment: 1,
                min: 1,
                max: i32::MAX as i64,
                cycle: false,
                last_value: Some(4),
                owned_by: Some(("t".into(), "a".into())),
                identity: Some('a'),
            }],
        })
    }

    /// Every relation's rows are as wide as its columns, and typed as they say.
    #[test]
    fn every_system_relation_builds() {
        let snap = sample();
        for r in SYSTEM_RELATIONS {
            let width = r.source_columns().len();
            for row in (r.rows)(&snap) {
                assert_eq!(row.len(), width, "{}.{}", r.schema, r.name);
            }
            assert!(
                system_relation(&snap, r.schema, r.name).is_some(),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn oids_of_system_relations_are_distinct() {
        let mut oids: Vec<i32> = SYSTEM_RELATIONS.iter().map(|r| r.oid).collect();
        oids.sort();
        oids.dedup();
        assert_eq!(oids.len(), SYSTEM_RELATIONS.len());
    }

    #[test]
    fn index_definition_names_its_columns() {
        let snap = sample();
        assert_eq!(
            snap.indexes[0].definition(),
            "CREATE UNIQUE INDEX t_a ON public.t USING btree (a) INCLUDE (b)"
        );
        assert_eq!(snap.relation_oid("t"), Some(snap.relations[0].oid));
        assert_eq!(snap.relation_oid("pg_catalog.pg_class"), Some(1259));
    }
}
