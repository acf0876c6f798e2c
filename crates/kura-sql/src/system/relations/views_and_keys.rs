//! pg_tables, pg_views, pg_indexes, pg_index, constraints and sequences.

use super::*;

/// `pg_catalog.pg_index`.
pub(super) const PG_INDEX: SystemRelation = rel(
    PG,
    "pg_index",
    2610,
    "r",
    "indexrelid:o indrelid:o indnatts:i indnkeyatts:i indisunique:b \
         indnullsnotdistinct:b indisprimary:b indisexclusion:b indimmediate:b \
         indisclustered:b indisvalid:b indcheckxmin:b indisready:b indislive:b \
         indisreplident:b indkey:v indcollation:w indclass:w indoption:v \
         indexprs:t indpred:t",
    pg_index_rows,
);

fn pg_index_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::keys::pg_index(snap)
}

/// `pg_catalog.pg_tables`.
pub(super) const PG_TABLES: SystemRelation = rel(
    PG,
    "pg_tables",
    12004,
    "v",
    "schemaname:t tablename:t tableowner:t tablespace:t hasindexes:b \
         hasrules:b hastriggers:b rowsecurity:b",
    pg_tables_rows,
);

fn pg_tables_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    {
        let mut out: Vec<Vec<Value>> = snap
            .relations
            .iter()
            .filter(|r| r.kind == RelKind::Table)
            .map(|r| {
                let has = snap.indexes.iter().any(|i| i.table_oid == r.oid);
                vec![s("public"), s(&r.name), s(OWNER), N, b(has)]
            })
            .collect();
        out.extend(
            SYSTEM_RELATIONS
                .iter()
                .filter(|r| r.kind == "r")
                .map(|r| vec![s(r.schema), s(r.name), s(OWNER), N, b(false)]),
        );
        out.into_iter()
            .map(|mut r| {
                r.extend([b(false), b(false), b(false)]);
                r
            })
            .collect()
    }
}

/// `pg_catalog.pg_views`.
pub(super) const PG_VIEWS: SystemRelation = rel(
    PG,
    "pg_views",
    12005,
    "v",
    "schemaname:t viewname:t viewowner:t definition:t",
    pg_views_rows,
);

fn pg_views_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.relations
        .iter()
        .filter(|r| r.kind == RelKind::View)
        .map(|r| {
            vec![
                s("public"),
                s(&r.name),
                s(OWNER),
                r.definition.as_deref().map_or(N, s),
            ]
        })
        .chain(
            SYSTEM_RELATIONS
                .iter()
                .filter(|r| r.kind == "v")
                .map(|r| vec![s(r.schema), s(r.name), s(OWNER), N]),
        )
        .collect()
}

/// `pg_catalog.pg_indexes`.
pub(super) const PG_INDEXES: SystemRelation = rel(
    PG,
    "pg_indexes",
    12006,
    "v",
    "schemaname:t tablename:t indexname:t tablespace:t indexdef:t",
    pg_indexes_rows,
);

fn pg_indexes_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.indexes
        .iter()
        .map(|ix| {
            vec![
                s("public"),
                s(&ix.table),
                s(&ix.name),
                N,
                s(&ix.definition()),
            ]
        })
        .collect()
}

/// `pg_catalog.pg_constraint`.
pub(super) const PG_CONSTRAINT: SystemRelation = rel(
    PG,
    "pg_constraint",
    2606,
    "r",
    "oid:o conname:t connamespace:o contype:t condeferrable:b condeferred:b \
         convalidated:b conrelid:o contypid:o conindid:o conparentid:o confrelid:o \
         confupdtype:t confdeltype:t confmatchtype:t conislocal:b coninhcount:i \
         connoinherit:b conkey:s confkey:s conpfeqop:a conppeqop:a conffeqop:a \
         confdelsetcols:a conexclop:a conbin:t",
    pg_constraint_rows,
);

// The catalogs of things kura does not have (defaults, constraints,
// comments, triggers, inheritance ...) are empty.
fn pg_constraint_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::keys::pg_constraint(snap)
}

/// `pg_catalog.pg_opclass`.
pub(super) const PG_OPCLASS: SystemRelation = rel(
    PG,
    "pg_opclass",
    2616,
    "r",
    "oid:o opcmethod:o opcname:t opcnamespace:o opcowner:o opcfamily:o \
         opcintype:o opcdefault:b opckeytype:o",
    pg_opclass_rows,
);

fn pg_opclass_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::keys::pg_opclass()
}

/// `pg_catalog.pg_sequence`.
pub(super) const PG_SEQUENCE: SystemRelation = rel(
    PG,
    "pg_sequence",
    2224,
    "r",
    "seqrelid:o seqtypid:o seqstart:l seqincrement:l seqmax:l seqmin:l \
         seqcache:l seqcycle:b",
    pg_sequence_rows,
);

fn pg_sequence_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::sequences::pg_sequence(snap)
}

/// `pg_catalog.pg_sequences`.
pub(super) const PG_SEQUENCES: SystemRelation = rel(
    PG,
    "pg_sequences",
    12190,
    "v",
    "schemaname:t sequencename:t sequenceowner:t data_type:t start_value:l \
         min_value:l max_value:l increment_by:l cycle:b cache_size:l last_value:l",
    pg_sequences_rows,
);

fn pg_sequences_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::sequences::pg_sequences(snap)
}
