//! PostgreSQL's system catalogs (`pg_catalog.pg_class`, `information_schema.columns`
//! ...) as virtual relations over kura's own catalog, so that psql's `\d`, JDBC's
//! `DatabaseMetaData` and psycopg's `TypeInfo` can browse a kura database. The rows
//! are computed from a [`Snapshot`] only when a query names a system relation or
//! calls a catalog function.

mod keys;
pub mod keywords;
mod relations;
mod sequences;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kura_exec::{SourceColumn, TableSource};

pub use crate::catalog::SysSetting;
pub use relations::{is_function_name, system_relation, SYSTEM_RELATIONS};

/// OID of namespace `pg_catalog` (PostgreSQL's).
pub const PG_CATALOG_OID: i32 = 11;
/// OID of namespace `public` (PostgreSQL's).
pub const PUBLIC_OID: i32 = 2200;
/// OID of namespace `information_schema` (PostgreSQL assigns it at initdb, above 12000).
pub const INFORMATION_SCHEMA_OID: i32 = 13_000;
/// OID of the one role, the owner of everything (PostgreSQL's bootstrap superuser).
pub const OWNER_OID: i32 = 10;
/// The owner's name: kura has no roles of its own.
pub const OWNER: &str = "kura";
/// The database's name as the catalogs report it.
pub const DATABASE: &str = "kura";
/// OID of the database.
pub const DATABASE_OID: i32 = 5;
/// First OID PostgreSQL gives user objects; built-in OIDs (types ...) lie below.
pub const FIRST_USER_OID: i32 = 16_384;
/// Access method OIDs: heap (tables) and btree (indexes).
pub const HEAP_AM: i32 = 2;
pub const BTREE_AM: i32 = 403;

/// What a user relation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelKind {
    Table,
    View,
}

/// A user table or view with its OID.
#[derive(Debug, Clone)]
pub struct SysRelation {
    pub oid: i32,
    pub name: String,
    pub kind: RelKind,
    pub columns: Vec<SourceColumn>,
    /// A view's defining query.
    pub definition: Option<String>,
    pub row_count: u64,
    /// Pages in the database file (0 for a view), and bytes.
    pub pages: u64,
    pub bytes: u64,
}

/// An index with its OID and the table's.
#[derive(Debug, Clone)]
pub struct SysIndex {
    pub oid: i32,
    pub name: String,
    pub table_oid: i32,
    pub table: String,
    /// Key columns as positions in the table (0-based).
    pub columns: Vec<usize>,
    pub column_names: Vec<String>,
    /// Included (non-key) columns of a covering index, as positions and names.
    pub include: Vec<usize>,
    pub include_names: Vec<String>,
    pub unique: bool,
    /// Backs a PRIMARY KEY.
    pub primary: bool,
    /// Pages in the database file, and bytes.
    pub pages: u64,
    pub bytes: u64,
}

impl SysIndex {
    /// `pg_get_indexdef`: the statement that creates the index.
    pub fn definition(&self) -> String {
        let include = if self.include_names.is_empty() {
            String::new()
        } else {
            format!(
                " INCLUDE ({})",
                self.include_names
                    .iter()
                    .map(|c| quote_ident(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({}){include}",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(&self.name),
            quote_ident(&self.table),
            self.column_names
                .iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A constraint as `pg_constraint` shows it.
#[derive(Debug, Clone)]
pub struct SysConstraint {
    pub oid: i32,
    pub info: crate::catalog::ConstraintInfo,
    pub table_oid: i32,
    /// Constrained columns, numbered from 1.
    pub columns: Vec<usize>,
    /// The index behind a PRIMARY KEY or UNIQUE (0 for none).
    pub index_oid: i32,
    /// The referenced table and its columns (numbered from 1) of a foreign key.
    pub ref_table_oid: i32,
    pub ref_columns: Vec<usize>,
}

/// A column's DEFAULT as `pg_attrdef` shows it.
#[derive(Debug, Clone)]
pub struct SysDefault {
    pub oid: i32,
    pub table_oid: i32,
    /// The column, numbered from 1.
    pub column: usize,
    pub sql: String,
}

/// Everything the system catalogs show, with OIDs assigned.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The database's name: the session's (a server names it after its
    /// file), else [`DATABASE`].
    pub database: String,
    pub relations: Vec<SysRelation>,
    pub indexes: Vec<SysIndex>,
    pub settings: Vec<SysSetting>,
    pub constraints: Vec<SysConstraint>,
    pub defaults: Vec<SysDefault>,
    pub sequences: Vec<SysSequence>,
}

/// A sequence with its OID.
#[derive(Debug, Clone)]
pub struct SysSequence {
    pub oid: i32,
    pub info: crate::catalog::SequenceInfo,
}

pub use kura_exec::expr::pg::quote_ident;

/// FNV-1a: a fixed hash (std's is seeded per process; OIDs must not change
/// between connections).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Assigns OIDs: a hash of kind and name into the user range, so an object keeps
/// its OID across statements and connections (tables have no numeric ids kura
/// could report); a collision moves the later name (in name order) up by one.
fn assign_oids(keys: &[String]) -> Vec<i32> {
    const SPAN: u64 = (i32::MAX - FIRST_USER_OID) as u64;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|a, b| keys[*a].cmp(&keys[*b]));
    let mut used = HashSet::new();
    let mut oids = vec![0; keys.len()];
    for i in order {
        let mut oid = FIRST_USER_OID as u64 + fnv(&keys[i]) % SPAN;
        while !used.insert(oid) {
            oid = FIRST_USER_OID as u64 + (oid + 1 - FIRST_USER_OID as u64) % SPAN;
        }
        oids[i] = oid as i32;
    }
    oids
}

/// A user relation given to [`Snapshot::new`]: name, kind, columns, view
/// definition, row count, (pages, page size).
pub type RelationInput = (
    String,
    RelKind,
    Vec<SourceColumn>,
    Option<String>,
    u64,
    (u64, u64),
);

/// An index as [`SnapshotInput`] names it: (name, table, key column positions,
/// unique, included column positions, (pages, page size)).
pub type IndexInput = (String, String, Vec<usize>, bool, Vec<usize>, (u64, u64));

/// Input to [`Snapshot::new`]: the user's relations and indexes, named.
pub struct SnapshotInput {
    /// (name, kind, columns, view definition, row count).
    pub relations: Vec<RelationInput>,
    pub indexes: Vec<IndexInput>,
    pub settings: Vec<SysSetting>,
    /// Defaults and constraints, by table name.
    pub rules: Vec<(String, crate::catalog::TableRulesInfo)>,
    pub sequences: Vec<crate::catalog::SequenceInfo>,
    /// The database's name (`None`: [`DATABASE`]).
    pub database: Option<String>,
}

impl Snapshot {
    pub fn new(input: SnapshotInput) -> Snapshot {
        let keys: Vec<String> = input
            .relations
            .iter()
            .map(|r| format!("rel:{}", r.0))
            .chain(input.indexes.iter().map(|i| format!("index:{}", i.0)))
            .collect();
        let rule_keys: Vec<String> = input
            .rules
            .iter()
            .flat_map(|(t, r)| {
                r.constraints
                    .iter()
                    .map(move |c| format!("con:{t}.{}", c.name))
                    .chain(r.defaults.iter().map(move |d| format!("def:{t}.{}", d.0)))
            })
            .collect();
        // Constraint and default OIDs follow the relations' and indexes',
        // then the sequences'.
        let first_rule = keys.len();
        let seq_keys = input.sequences.iter().map(|q| format!("rel:{}", q.name));
        let keys: Vec<String> = keys.into_iter().chain(rule_keys).chain(seq_keys).collect();
        let oids = assign_oids(&keys);
        let relations: Vec<SysRelation> = input
            .relations
            .into_iter()
            .zip(&oids)
            .map(
                |((name, kind, columns, definition, row_count, (pages, page)), oid)| SysRelation {
                    oid: *oid,
                    name,
                    kind,
                    columns,
                    definition,
                    row_count,
                    pages,
                    bytes: pages * page,
                },
            )
            .collect();
        let by_name: BTreeMap<&str, &SysRelation> =
            relations.iter().map(|r| (r.name.as_str(), r)).collect();
        let indexes = input
            .indexes
            .into_iter()
            .zip(&oids[relations.len()..])
            .filter_map(
                |((name, table, columns, unique, include, (pages, page)), oid)| {
                    let t = by_name.get(table.as_str())?;
                    let names = |cols: &[usize]| {
                        cols.iter()
                            .map(|c| t.columns.get(*c).map(|c| c.name.clone()))
                            .collect::<Option<Vec<_>>>()
                    };
                    let column_names = names(&columns)?;
                    let include_names = names(&include)?;
                    Some(SysIndex {
                        oid: *oid,
                        name,
                        table_oid: t.oid,
                        table,
                        columns,
                        column_names,
                        include,
                        include_names,
                        unique,
                        primary: false,
                        pages,
                        bytes: pages * page,
                    })
                },
            )
            .collect();
        let mut snap = Snapshot {
            database: input.database.unwrap_or_else(|| DATABASE.to_string()),
            relations,
            indexes,
            settings: input.settings,
            constraints: Vec::new(),
            defaults: Vec::new(),
            sequences: Vec::new(),
        };
        let first_sequence = oids.len() - input.sequences.len();
        let mut rule_oids = oids[first_rule..first_sequence].iter();
        for (table, rules) in input.rules {
            snap.add_rules(&table, rules, &mut rule_oids);
        }
        snap.sequences = input
            .sequences
            .into_iter()
            .zip(&oids[first_sequence..])
            .map(|(info, oid)| SysSequence { oid: *oid, info })
            .collect();
        snap
    }

    /// Adds a table's constraints and defaults (OIDs taken in the order
    /// [`Snapshot::new`] assigned them); a key's index is marked primary.
    fn add_rules<'a>(
        &mut self,
        table: &str,
        rules: crate::catalog::TableRulesInfo,
        oids: &mut impl Iterator<Item = &'a i32>,
    ) {
        let Some(t) = self.relations.iter().find(|r| r.name == table).cloned() else {
            return;
        };
        let num = |r: &SysRelation, c: &String| r.columns.iter().position(|x| &x.name == c);
        for info in rules.constraints {
            let oid = *oids.next().unwrap_or(&0);
            let columns: Vec<usize> = info
                .columns
                .iter()
                .filter_map(|c| num(&t, c).map(|i| i + 1))
                .collect();
            let index = self.indexes.iter_mut().find(|i| i.name == info.name);
            let mut index_oid = index.as_ref().map_or(0, |i| i.oid);
            if let (Some(ix), crate::catalog::ConstraintKind::PrimaryKey) = (index, &info.kind) {
                ix.primary = true;
            }
            let (ref_table_oid, ref_columns) = match &info.kind {
                crate::catalog::ConstraintKind::ForeignKey { table, columns } => {
                    match self.relations.iter().find(|r| &r.name == table) {
                        Some(r) => (
                            r.oid,
                            columns
                                .iter()
                                .filter_map(|c| num(r, c).map(|i| i + 1))
                                .collect(),
                        ),
                        None => (0, Vec::new()),
                    }
                }
                _ => (0, Vec::new()),
            };
            if ref_table_oid != 0 {
                // A foreign key's index is the referenced table's unique
                // index on the referenced columns (clients join through it).
                let mut wanted: Vec<usize> = ref_columns.iter().map(|c: &usize| c - 1).collect();
                wanted.sort_unstable();
                index_oid = self
                    .indexes
                    .iter()
                    .find(|i| {
                        let mut key = i.columns.clone();
                        key.sort_unstable();
                        i.table_oid == ref_table_oid && i.unique && key == wanted
                    })
                    .map_or(0, |i| i.oid);
            }
            self.constraints.push(SysConstraint {
                oid,
                info,
                table_oid: t.oid,
                columns,
                index_oid,
                ref_table_oid,
                ref_columns,
            });
        }
        for (column, sql) in rules.defaults {
            let oid = *oids.next().unwrap_or(&0);
            if let Some(i) = num(&t, &column) {
                self.defaults.push(SysDefault {
                    oid,
                    table_oid: t.oid,
                    column: i + 1,
                    sql,
                });
            }
        }
    }

    /// The OID of a relation (user or system) by name, as `'name'::regclass` reads it.
    pub fn relation_oid(&self, name: &str) -> Option<i32> {
        let name = name.trim();
        let (schema, rel) = match name.split_once('.') {
            Some((s, r)) => (Some(s.trim_matches('"')), r),
            None => (None, name),
        };
        let rel = if rel.starts_with('"') {
            rel.trim_matches('"').to_string()
        } else {
            rel.to_lowercase()
        };
        if schema.is_none_or(|s| s == "public") {
            if let Some(r) = self.relations.iter().find(|r| r.name == rel) {
                return Some(r.oid);
            }
            if let Some(i) = self.indexes.iter().find(|i| i.name == rel) {
                return Some(i.oid);
            }
        }
        SYSTEM_RELATIONS
            .iter()
            .find(|s| s.name == rel && schema.is_none_or(|x| x == s.schema))
            .map(|s| s.oid)
    }

    /// The system relation `schema.name` (schema `pg_catalog` when not given).
    pub fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<dyn TableSource>> {
        system_relation(self, schema.unwrap_or("pg_catalog"), name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oids_are_stable_distinct_and_in_the_user_range() {
        let keys: Vec<String> = (0..2000).map(|i| format!("rel:t{i}")).collect();
        let a = assign_oids(&keys);
        let b = assign_oids(&keys);
        assert_eq!(a, b);
        assert_eq!(a.iter().collect::<HashSet<_>>().len(), keys.len());
        assert!(a.iter().all(|o| *o >= FIRST_USER_OID));
        // One more object leaves the others' OIDs as they were.
        let mut more = keys.clone();
        more.push("rel:zzz".into());
        assert_eq!(&assign_oids(&more)[..keys.len()], &a[..]);
    }
}
