//! information_schema: tables, columns, schemata, views and sequences.

use super::pg_attribute::{all_columns, sql_type_name};
use super::*;

/// `information_schema.sequences`.
pub(super) const INFORMATION_SCHEMA_SEQUENCES: SystemRelation = rel(
    IS,
    "sequences",
    13110,
    "v",
    "sequence_catalog:t sequence_schema:t sequence_name:t data_type:t \
         numeric_precision:i numeric_precision_radix:i numeric_scale:i start_value:t \
         minimum_value:t maximum_value:t increment:t cycle_option:t",
    is_sequences_rows,
);

fn is_sequences_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    crate::system::sequences::information_schema_sequences(snap)
}

/// `information_schema.tables`.
pub(super) const INFORMATION_SCHEMA_TABLES: SystemRelation = rel(
    IS,
    "tables",
    13101,
    "v",
    "table_catalog:t table_schema:t table_name:t table_type:t \
         self_referencing_column_name:t reference_generation:t \
         user_defined_type_catalog:t user_defined_type_schema:t \
         user_defined_type_name:t is_insertable_into:t is_typed:t commit_action:t",
    is_tables_rows,
);

fn is_tables_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    {
        let user = snap.relations.iter().map(|r| {
            let table = r.kind == RelKind::Table;
            ("public", r.name.as_str(), table)
        });
        let system = SYSTEM_RELATIONS
            .iter()
            .map(|r| (r.schema, r.name, r.kind == "r"));
        user.chain(system)
            .map(|(schema, name, table)| {
                vec![
                    s(&snap.database),
                    s(schema),
                    s(name),
                    s(if table { "BASE TABLE" } else { "VIEW" }),
                    N,
                    N,
                    N,
                    N,
                    N,
                    s(if table && schema == "public" {
                        "YES"
                    } else {
                        "NO"
                    }),
                    s("NO"),
                    N,
                ]
            })
            .collect()
    }
}

/// `information_schema.columns`.
pub(super) const INFORMATION_SCHEMA_COLUMNS: SystemRelation = rel(
    IS,
    "columns",
    13102,
    "v",
    "table_catalog:t table_schema:t table_name:t column_name:t ordinal_position:i \
         column_default:t is_nullable:t data_type:t character_maximum_length:i \
         character_octet_length:i numeric_precision:i numeric_precision_radix:i \
         numeric_scale:i datetime_precision:i interval_type:t interval_precision:i \
         character_set_catalog:t character_set_schema:t character_set_name:t \
         collation_catalog:t collation_schema:t collation_name:t domain_catalog:t \
         domain_schema:t domain_name:t udt_catalog:t udt_schema:t udt_name:t \
         scope_catalog:t scope_schema:t scope_name:t maximum_cardinality:i \
         dtd_identifier:t is_self_referencing:t is_identity:t identity_generation:t \
         identity_start:t identity_increment:t identity_maximum:t identity_minimum:t \
         identity_cycle:t is_generated:t generation_expression:t is_updatable:t",
    is_columns_rows,
);

fn is_columns_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    {
        let index_oids: std::collections::HashSet<i32> =
            snap.indexes.iter().map(|i| i.oid).collect();
        all_columns(snap)
            .into_iter()
            .filter(|c| !index_oids.contains(&c.rel_oid))
            .map(|c| {
                let (typ, _) = pg_type_of(c.ty);
                let udt = pg_types()
                    .into_iter()
                    .find(|t| t.oid == typ)
                    .map_or(String::new(), |t| t.name);
                let (char_len, precision, radix, scale) = match c.ty {
                    DataType::Varchar(n) => (n.map(|n| n as i32), None, None, None),
                    DataType::Char(n) => (Some(n as i32), None, None, None),
                    DataType::SmallInt => (None, Some(16), Some(2), Some(0)),
                    DataType::Integer => (None, Some(32), Some(2), Some(0)),
                    DataType::BigInt => (None, Some(64), Some(2), Some(0)),
                    DataType::Double => (None, Some(53), Some(2), None),
                    DataType::Decimal { precision, scale } => {
                        (None, Some(precision as i32), Some(10), Some(scale as i32))
                    }
                    DataType::Boolean
                    | DataType::Date
                    | DataType::Timestamp
                    | DataType::Array(_)
                    | DataType::Vector(_)
                    | DataType::Uuid
                    | DataType::Bytea
                    | DataType::Interval => (None, None, None, None),
                    DataType::Json | DataType::Jsonb => (None, None, None, None),
                };
                let int = |x: Option<i32>| x.map_or(N, Value::Integer);
                let user = c.schema == "public";
                let identity = crate::system::sequences::identity_of(snap, c.rel, c.name);
                vec![
                    s(&snap.database),
                    s(c.schema),
                    s(c.rel),
                    s(c.name),
                    Value::Integer(c.num as i32),
                    snap.defaults
                        .iter()
                        .find(|d| d.table_oid == c.rel_oid && d.column == c.num)
                        .map_or(N, |d| s(&d.sql)),
                    s(if c.not_null { "NO" } else { "YES" }),
                    s(sql_type_name(c.ty)),
                    int(char_len),
                    int(char_len.map(|n| n * 4)),
                    int(precision),
                    int(radix),
                    int(scale),
                    int((c.ty == DataType::Date).then_some(0)),
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    N,
                    s(&snap.database),
                    s("pg_catalog"),
                    s(&udt),
                    N,
                    N,
                    N,
                    N,
                    s(&c.num.to_string()),
                    s("NO"),
                    match identity {
                        Some(_) => s("YES"),
                        None => s("NO"),
                    },
                    match identity {
                        Some(('a', _)) => s("ALWAYS"),
                        Some(_) => s("BY DEFAULT"),
                        None => N,
                    },
                    identity.map_or(N, |(_, q)| s(&q.info.start.to_string())),
                    identity.map_or(N, |(_, q)| s(&q.info.increment.to_string())),
                    identity.map_or(N, |(_, q)| s(&q.info.max.to_string())),
                    identity.map_or(N, |(_, q)| s(&q.info.min.to_string())),
                    match identity {
                        Some((_, q)) if q.info.cycle => s("YES"),
                        _ => s("NO"),
                    },
                    s("NEVER"),
                    N,
                    s(if user { "YES" } else { "NO" }),
                ]
            })
            .collect()
    }
}

/// `information_schema.schemata`.
pub(super) const INFORMATION_SCHEMA_SCHEMATA: SystemRelation = rel(
    IS,
    "schemata",
    13103,
    "v",
    "catalog_name:t schema_name:t schema_owner:t default_character_set_catalog:t \
         default_character_set_schema:t default_character_set_name:t sql_path:t",
    is_schemata_rows,
);

fn is_schemata_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    SCHEMAS
        .iter()
        .map(|(_, name)| vec![s(&snap.database), s(name), s(OWNER), N, N, N, N])
        .collect()
}

/// `information_schema.views`.
pub(super) const INFORMATION_SCHEMA_VIEWS: SystemRelation = rel(
    IS,
    "views",
    13104,
    "v",
    "table_catalog:t table_schema:t table_name:t view_definition:t check_option:t \
         is_updatable:t is_insertable_into:t is_trigger_updatable:t \
         is_trigger_deletable:t is_trigger_insertable_into:t",
    is_views_rows,
);

fn is_views_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.relations
        .iter()
        .filter(|r| r.kind == RelKind::View)
        .map(|r| {
            vec![
                s(&snap.database),
                s("public"),
                s(&r.name),
                r.definition.as_deref().map_or(N, s),
                s("NONE"),
                s("NO"),
                s("NO"),
                s("NO"),
                s("NO"),
                s("NO"),
            ]
        })
        .collect()
}
