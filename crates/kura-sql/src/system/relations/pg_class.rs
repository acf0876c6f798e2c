//! pg_namespace, pg_class, pg_am and pg_tablespace: the schemas and the relations of the catalog.

use super::*;

/// `pg_catalog.pg_namespace`.
pub(super) const PG_NAMESPACE: SystemRelation = rel(
    PG,
    "pg_namespace",
    2615,
    "r",
    "oid:o nspname:t nspowner:o nspacl:a",
    pg_namespace_rows,
);

fn pg_namespace_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    SCHEMAS
        .iter()
        .map(|(oid, name)| vec![o(*oid), s(name), o(OWNER_OID), N])
        .collect()
}

/// `pg_catalog.pg_class`.
pub(super) const PG_CLASS: SystemRelation = rel(
    PG,
    "pg_class",
    1259,
    "r",
    "oid:o relname:t relnamespace:o reltype:o reloftype:o relowner:o relam:o \
         relfilenode:o reltablespace:o relpages:i reltuples:f relallvisible:i \
         reltoastrelid:o relhasindex:b relisshared:b relpersistence:t relkind:t \
         relnatts:i relchecks:i relhasrules:b relhastriggers:b relhassubclass:b \
         relrowsecurity:b relforcerowsecurity:b relispopulated:b relreplident:t \
         relispartition:b relrewrite:o relacl:a reloptions:a relpartbound:t",
    pg_class_rows,
);

fn pg_class_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    class_rows(snap)
        .into_iter()
        .map(|c| {
            let view = c.kind == "v";
            vec![
                o(c.oid),
                s(c.name),
                o(c.namespace),
                o(0),
                o(0),
                o(OWNER_OID),
                o(c.am),
                o(if view { 0 } else { c.oid }),
                o(0),
                Value::Integer(i32::try_from(c.pages).unwrap_or(i32::MAX)),
                Value::Double(c.tuples),
                Value::Integer(0),
                o(0),
                b(c.has_index),
                b(false),
                s("p"),
                s(c.kind),
                Value::Integer(c.natts as i32),
                // relchecks: psql's \d lists check constraints only when set.
                Value::Integer(
                    snap.constraints
                        .iter()
                        .filter(|k| k.table_oid == c.oid && k.info.contype() == "c")
                        .count() as i32,
                ),
                b(view),
                // relhastriggers: kura has no triggers. (psql's \d lists
                // foreign keys only when set, and then reads pg_trigger with
                // a lateral FROM item kura does not bind yet.)
                b(false),
                b(false),
                b(false),
                b(false),
                b(true),
                s(if view { "n" } else { "d" }),
                b(false),
                o(0),
                N,
                N,
                N,
            ]
        })
        .collect()
}

/// `pg_catalog.pg_am`.
pub(super) const PG_AM: SystemRelation = rel(
    PG,
    "pg_am",
    2601,
    "r",
    "oid:o amname:t amhandler:t amtype:t",
    pg_am_rows,
);

fn pg_am_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    vec![
        vec![o(HEAP_AM), s("heap"), s("heap_tableam_handler"), s("t")],
        vec![o(BTREE_AM), s("btree"), s("bthandler"), s("i")],
    ]
}

/// `pg_catalog.pg_tablespace`.
pub(super) const PG_TABLESPACE: SystemRelation = rel(
    PG,
    "pg_tablespace",
    1213,
    "r",
    "oid:o spcname:t spcowner:o spcacl:a spcoptions:a",
    pg_tablespace_rows,
);

fn pg_tablespace_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    [(1663, "pg_default"), (1664, "pg_global")]
        .into_iter()
        .map(|(oid, name)| vec![o(oid), s(name), o(OWNER_OID), N, N])
        .collect()
}

/// One relation as (relname, schema, relkind, OID, namespace OID, columns, AM, rows).
pub(super) struct ClassRow<'a> {
    pub(super) oid: i32,
    pub(super) name: &'a str,
    pub(super) namespace: i32,
    pub(super) kind: &'static str,
    pub(super) am: i32,
    pub(super) natts: usize,
    pub(super) has_index: bool,
    pub(super) tuples: f64,
    pub(super) pages: u64,
}

pub(super) fn class_rows(snap: &Snapshot) -> Vec<ClassRow<'_>> {
    let mut out = Vec::new();
    for r in &snap.relations {
        let table = r.kind == RelKind::Table;
        out.push(ClassRow {
            oid: r.oid,
            name: &r.name,
            namespace: PUBLIC_OID,
            kind: if table { "r" } else { "v" },
            am: if table { HEAP_AM } else { 0 },
            natts: r.columns.len(),
            has_index: snap.indexes.iter().any(|i| i.table_oid == r.oid),
            tuples: if table { r.row_count as f64 } else { 0.0 },
            pages: r.pages,
        });
    }
    for ix in &snap.indexes {
        out.push(ClassRow {
            oid: ix.oid,
            name: &ix.name,
            namespace: PUBLIC_OID,
            kind: "i",
            am: BTREE_AM,
            natts: ix.columns.len(),
            has_index: false,
            // Every row of the table has an entry (NULL keys included).
            tuples: snap
                .relations
                .iter()
                .find(|r| r.oid == ix.table_oid)
                .map_or(0.0, |r| r.row_count as f64),
            pages: ix.pages,
        });
    }
    for q in &snap.sequences {
        out.push(ClassRow {
            oid: q.oid,
            name: &q.info.name,
            namespace: crate::system::sequences::NAMESPACE,
            kind: "S",
            am: 0,
            natts: 3,
            has_index: false,
            tuples: 1.0,
            pages: 1,
        });
    }
    for sr in SYSTEM_RELATIONS {
        out.push(ClassRow {
            oid: sr.oid,
            name: sr.name,
            namespace: sr.namespace_oid(),
            kind: sr.kind,
            am: if sr.kind == "r" { HEAP_AM } else { 0 },
            natts: sr.columns.split_whitespace().count(),
            has_index: false,
            tuples: 0.0,
            pages: 0,
        });
    }
    out
}
