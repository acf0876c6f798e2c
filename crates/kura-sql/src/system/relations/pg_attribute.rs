//! pg_attribute, pg_attrdef and pg_type: columns, their defaults and types.

use super::*;

/// `pg_catalog.pg_attribute`.
pub(super) const PG_ATTRIBUTE: SystemRelation = rel(
    PG,
    "pg_attribute",
    1249,
    "r",
    "attrelid:o attname:t atttypid:o attstattarget:i attlen:i attnum:i attndims:i \
         attcacheoff:i atttypmod:i attbyval:b attalign:t attstorage:t attcompression:t \
         attnotnull:b atthasdef:b atthasmissing:b attidentity:t attgenerated:t \
         attisdropped:b attislocal:b attinhcount:i attcollation:o attacl:a \
         attoptions:a attfdwoptions:a attmissingval:t",
    pg_attribute_rows,
);

fn pg_attribute_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    all_columns(snap)
        .into_iter()
        .map(|c| {
            let (typ, typmod) = pg_type_of(c.ty);
            let len = type_len(typ);
            vec![
                o(c.rel_oid),
                s(c.name),
                o(typ),
                Value::Integer(-1),
                Value::Integer(len),
                Value::Integer(c.num as i32),
                Value::Integer(0),
                Value::Integer(-1),
                Value::Integer(typmod),
                b(len > 0),
                s(if len == 8 { "d" } else { "i" }),
                s(if len > 0 { "p" } else { "x" }),
                s(""),
                b(c.not_null),
                b(snap
                    .defaults
                    .iter()
                    .any(|d| d.table_oid == c.rel_oid && d.column == c.num)),
                b(false),
                s(&crate::system::sequences::identity_of(snap, c.rel, c.name)
                    .map_or(String::new(), |(kind, _)| kind.to_string())),
                s(""),
                b(false),
                b(true),
                Value::Integer(0),
                o(if is_text(c.ty) { 100 } else { 0 }),
                N,
                N,
                N,
                N,
            ]
        })
        .collect()
}

/// `pg_catalog.pg_attrdef`.
pub(super) const PG_ATTRDEF: SystemRelation = rel(
    PG,
    "pg_attrdef",
    2604,
    "r",
    "oid:o adrelid:o adnum:i adbin:t",
    pg_attrdef_rows,
);

fn pg_attrdef_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.defaults
        .iter()
        .map(|d| {
            vec![
                o(d.oid),
                o(d.table_oid),
                Value::Integer(d.column as i32),
                s(&d.sql),
            ]
        })
        .collect()
}

/// `pg_catalog.pg_type`.
pub(super) const PG_TYPE: SystemRelation = rel(
    PG,
    "pg_type",
    1247,
    "r",
    "oid:o typname:t typnamespace:o typowner:o typlen:i typbyval:b typtype:t \
         typcategory:t typispreferred:b typisdefined:b typdelim:t typrelid:o \
         typsubscript:t typelem:o typarray:o typinput:t typoutput:t typreceive:t \
         typsend:t typmodin:t typmodout:t typanalyze:t typalign:t typstorage:t \
         typnotnull:b typbasetype:o typtypmod:i typndims:i typcollation:o \
         typdefaultbin:t typdefault:t typacl:a",
    pg_type_rows,
);

fn pg_type_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    pg_types()
        .into_iter()
        .map(|t| {
            let io = if t.elem != 0 {
                "array"
            } else {
                t.name.as_str()
            };
            let textual = t.category == "S";
            vec![
                o(t.oid),
                s(&t.name),
                o(PG_CATALOG_OID),
                o(OWNER_OID),
                Value::Integer(t.len),
                b(t.len > 0 && t.len <= 8),
                s("b"),
                s(t.category),
                b(false),
                b(true),
                s(","),
                o(0),
                s(if t.elem != 0 {
                    "array_subscript_handler"
                } else {
                    "-"
                }),
                o(t.elem),
                o(t.array),
                s(&format!("{io}_in")),
                s(&format!("{io}_out")),
                s(&format!("{io}_recv")),
                s(&format!("{io}_send")),
                s("-"),
                s("-"),
                s("-"),
                s(if t.len == 8 { "d" } else { "i" }),
                s(if t.len > 0 { "p" } else { "x" }),
                b(false),
                o(0),
                Value::Integer(-1),
                Value::Integer(0),
                o(if textual { 100 } else { 0 }),
                N,
                N,
                N,
            ]
        })
        .collect()
}

/// A column as the catalogs describe it: its owner's OID, name, type and place.
pub(super) struct ColumnRow<'a> {
    pub(super) rel_oid: i32,
    pub(super) schema: &'a str,
    pub(super) rel: &'a str,
    pub(super) name: &'a str,
    pub(super) num: usize,
    pub(super) ty: DataType,
    pub(super) not_null: bool,
}

/// Every column of every relation (user tables, views, indexes; system relations).
pub(super) fn all_columns(snap: &Snapshot) -> Vec<ColumnRow<'_>> {
    let mut out = Vec::new();
    for r in &snap.relations {
        for (i, c) in r.columns.iter().enumerate() {
            out.push(ColumnRow {
                rel_oid: r.oid,
                schema: "public",
                rel: &r.name,
                name: &c.name,
                num: i + 1,
                ty: c.data_type,
                not_null: !c.nullable,
            });
        }
    }
    for ix in &snap.indexes {
        let Some(t) = snap.relations.iter().find(|r| r.oid == ix.table_oid) else {
            continue;
        };
        for (i, c) in ix.columns.iter().chain(&ix.include).enumerate() {
            if let Some(col) = t.columns.get(*c) {
                out.push(ColumnRow {
                    rel_oid: ix.oid,
                    schema: "public",
                    rel: &ix.name,
                    name: &col.name,
                    num: i + 1,
                    ty: col.data_type,
                    not_null: false,
                });
            }
        }
    }
    for sr in SYSTEM_RELATIONS {
        for (i, c) in sr.columns.split_whitespace().enumerate() {
            let (name, _) = c.split_once(':').unwrap_or((c, "t"));
            let ty = sr.source_columns()[i].data_type;
            out.push(ColumnRow {
                rel_oid: sr.oid,
                schema: sr.schema,
                rel: sr.name,
                name,
                num: i + 1,
                ty,
                not_null: false,
            });
        }
    }
    out
}

pub(super) fn is_text(t: DataType) -> bool {
    matches!(t, DataType::Varchar(_) | DataType::Char(_))
}

/// `information_schema.columns.data_type`: the SQL-standard name.
pub(super) fn sql_type_name(t: DataType) -> &'static str {
    match t {
        DataType::Boolean => "boolean",
        DataType::SmallInt => "smallint",
        DataType::Integer => "integer",
        DataType::BigInt => "bigint",
        DataType::Double => "double precision",
        DataType::Decimal { .. } => "numeric",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp without time zone",
        DataType::Varchar(_) => "character varying",
        DataType::Char(_) => "character",
        DataType::Array(_) => "ARRAY",
        DataType::Vector(_) => "USER-DEFINED",
        DataType::Uuid => "uuid",
        DataType::Bytea => "bytea",
        DataType::Interval => "interval",
        DataType::Json => "json",
        DataType::Jsonb => "jsonb",
    }
}

pub(super) fn type_len(oid: i32) -> i32 {
    pg_types()
        .iter()
        .find(|t| t.oid == oid)
        .map_or(-1, |t| t.len)
}
