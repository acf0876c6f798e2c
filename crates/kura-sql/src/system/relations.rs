//! The system relations: their columns (PostgreSQL's names, the subset clients
//! read) and their rows, computed from a [`Snapshot`].

use std::sync::Arc;

use kura_common::{DataType, Value, Vector};
use kura_exec::expr::pg::{pg_type_of, pg_types};
use kura_exec::{MemTable, SourceColumn, TableSource};

use super::*;

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
}

const fn rel(
    schema: &'static str,
    name: &'static str,
    oid: i32,
    kind: &'static str,
    columns: &'static str,
) -> SystemRelation {
    SystemRelation {
        schema,
        name,
        oid,
        kind,
        columns,
    }
}

const PG: &str = "pg_catalog";
const IS: &str = "information_schema";

/// Every system relation, with PostgreSQL's OIDs for its catalogs.
pub const SYSTEM_RELATIONS: &[SystemRelation] = &[
    rel(
        PG,
        "pg_namespace",
        2615,
        "r",
        "oid:o nspname:t nspowner:o nspacl:a",
    ),
    rel(
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
    ),
    rel(
        PG,
        "pg_attribute",
        1249,
        "r",
        "attrelid:o attname:t atttypid:o attstattarget:i attlen:i attnum:i attndims:i \
         attcacheoff:i atttypmod:i attbyval:b attalign:t attstorage:t attcompression:t \
         attnotnull:b atthasdef:b atthasmissing:b attidentity:t attgenerated:t \
         attisdropped:b attislocal:b attinhcount:i attcollation:o attacl:a \
         attoptions:a attfdwoptions:a attmissingval:t",
    ),
    rel(
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
    ),
    rel(
        PG,
        "pg_index",
        2610,
        "r",
        "indexrelid:o indrelid:o indnatts:i indnkeyatts:i indisunique:b \
         indnullsnotdistinct:b indisprimary:b indisexclusion:b indimmediate:b \
         indisclustered:b indisvalid:b indcheckxmin:b indisready:b indislive:b \
         indisreplident:b indkey:v indcollation:w indclass:w indoption:v \
         indexprs:t indpred:t",
    ),
    rel(
        PG,
        "pg_database",
        1262,
        "r",
        "oid:o datname:t datdba:o encoding:i datlocprovider:t datistemplate:b \
         datallowconn:b datconnlimit:i dattablespace:o datcollate:t datctype:t \
         daticulocale:t daticurules:t datcollversion:t datacl:a",
    ),
    rel(
        PG,
        "pg_roles",
        12001,
        "v",
        "rolname:t rolsuper:b rolinherit:b rolcreaterole:b rolcreatedb:b \
         rolcanlogin:b rolreplication:b rolconnlimit:i rolpassword:t \
         rolvaliduntil:t rolbypassrls:b rolconfig:a oid:o",
    ),
    rel(
        PG,
        "pg_auth_members",
        1261,
        "r",
        "roleid:o member:o grantor:o admin_option:b",
    ),
    rel(
        PG,
        "pg_user",
        12002,
        "v",
        "usename:t usesysid:o usecreatedb:b usesuper:b userepl:b usebypassrls:b \
         passwd:t valuntil:t useconfig:a",
    ),
    rel(
        PG,
        "pg_proc",
        1255,
        "r",
        "oid:o proname:t pronamespace:o proowner:o prolang:o procost:f prorows:f \
         provariadic:o prosupport:t prokind:t prosecdef:b proleakproof:b \
         proisstrict:b proretset:b provolatile:t proparallel:t pronargs:i \
         pronargdefaults:i prorettype:o proargtypes:w proallargtypes:a \
         proargmodes:a proargnames:a proargdefaults:t protrftypes:a prosrc:t \
         probin:t prosqlbody:t proconfig:a proacl:a",
    ),
    rel(
        PG,
        "pg_settings",
        12003,
        "v",
        "name:t setting:t unit:t category:t short_desc:t extra_desc:t context:t \
         vartype:t source:t min_val:t max_val:t enumvals:a boot_val:t reset_val:t \
         sourcefile:t sourceline:i pending_restart:b",
    ),
    rel(
        PG,
        "pg_tables",
        12004,
        "v",
        "schemaname:t tablename:t tableowner:t tablespace:t hasindexes:b \
         hasrules:b hastriggers:b rowsecurity:b",
    ),
    rel(
        PG,
        "pg_views",
        12005,
        "v",
        "schemaname:t viewname:t viewowner:t definition:t",
    ),
    rel(
        PG,
        "pg_indexes",
        12006,
        "v",
        "schemaname:t tablename:t indexname:t tablespace:t indexdef:t",
    ),
    rel(
        PG,
        "pg_attrdef",
        2604,
        "r",
        "oid:o adrelid:o adnum:i adbin:t",
    ),
    rel(
        PG,
        "pg_constraint",
        2606,
        "r",
        "oid:o conname:t connamespace:o contype:t condeferrable:b condeferred:b \
         convalidated:b conrelid:o contypid:o conindid:o conparentid:o confrelid:o \
         confupdtype:t confdeltype:t confmatchtype:t conislocal:b coninhcount:i \
         connoinherit:b conkey:s confkey:s conpfeqop:a conppeqop:a conffeqop:a \
         confdelsetcols:a conexclop:a conbin:t",
    ),
    rel(
        PG,
        "pg_description",
        2609,
        "r",
        "objoid:o classoid:o objsubid:i description:t",
    ),
    rel(
        PG,
        "pg_shdescription",
        2396,
        "r",
        "objoid:o classoid:o description:t",
    ),
    rel(
        PG,
        "pg_am",
        2601,
        "r",
        "oid:o amname:t amhandler:t amtype:t",
    ),
    rel(
        PG,
        "pg_language",
        2612,
        "r",
        "oid:o lanname:t lanowner:o lanispl:b lanpltrusted:b lanplcallfoid:o \
         laninline:o lanvalidator:o lanacl:a",
    ),
    rel(
        PG,
        "pg_opclass",
        2616,
        "r",
        "oid:o opcmethod:o opcname:t opcnamespace:o opcowner:o opcfamily:o \
         opcintype:o opcdefault:b opckeytype:o",
    ),
    rel(
        PG,
        "pg_collation",
        3456,
        "r",
        "oid:o collname:t collnamespace:o collowner:o collprovider:t \
         collisdeterministic:b collencoding:i collcollate:t collctype:t \
         colliculocale:t collicurules:t collversion:t",
    ),
    rel(
        PG,
        "pg_inherits",
        2611,
        "r",
        "inhrelid:o inhparent:o inhseqno:i inhdetachpending:b",
    ),
    rel(
        PG,
        "pg_extension",
        3079,
        "r",
        "oid:o extname:t extowner:o extnamespace:o extrelocatable:b extversion:t \
         extconfig:a extcondition:a",
    ),
    rel(
        PG,
        "pg_tablespace",
        1213,
        "r",
        "oid:o spcname:t spcowner:o spcacl:a spcoptions:a",
    ),
    rel(
        PG,
        "pg_trigger",
        2620,
        "r",
        "oid:o tgrelid:o tgparentid:o tgname:t tgfoid:o tgtype:i tgenabled:t \
         tgisinternal:b tgconstrrelid:o tgconstrindid:o tgconstraint:o \
         tgdeferrable:b tginitdeferred:b tgnargs:i tgattr:v tgargs:t tgqual:t \
         tgoldtable:t tgnewtable:t",
    ),
    rel(
        PG,
        "pg_rewrite",
        2618,
        "r",
        "oid:o rulename:t ev_class:o ev_type:t ev_enabled:t is_instead:b ev_qual:t ev_action:t",
    ),
    rel(
        PG,
        "pg_policy",
        3256,
        "r",
        "oid:o polname:t polrelid:o polcmd:t polpermissive:b polroles:a polqual:t \
         polwithcheck:t",
    ),
    rel(
        PG,
        "pg_statistic_ext",
        3381,
        "r",
        "oid:o stxrelid:o stxname:t stxnamespace:o stxowner:o stxstattarget:i \
         stxkeys:v stxkind:a stxexprs:t",
    ),
    rel(
        PG,
        "pg_publication",
        6104,
        "r",
        "oid:o pubname:t pubowner:o puballtables:b pubinsert:b pubupdate:b \
         pubdelete:b pubtruncate:b pubviaroot:b",
    ),
    rel(
        PG,
        "pg_publication_rel",
        6106,
        "r",
        "oid:o prpubid:o prrelid:o prqual:t prattrs:a",
    ),
    rel(
        PG,
        "pg_publication_namespace",
        6237,
        "r",
        "oid:o pnpubid:o pnnspid:o",
    ),
    rel(
        PG,
        "pg_partitioned_table",
        3350,
        "r",
        "partrelid:o partstrat:t partnatts:i partdefid:o partattrs:a partclass:a \
         partcollation:a partexprs:t",
    ),
    rel(
        PG,
        "pg_sequence",
        2224,
        "r",
        "seqrelid:o seqtypid:o seqstart:l seqincrement:l seqmax:l seqmin:l \
         seqcache:l seqcycle:b",
    ),
    rel(
        PG,
        "pg_foreign_table",
        3118,
        "r",
        "ftrelid:o ftserver:o ftoptions:a",
    ),
    rel(
        PG,
        "pg_enum",
        3501,
        "r",
        "oid:o enumtypid:o enumsortorder:f enumlabel:t",
    ),
    rel(
        PG,
        "pg_sequences",
        12190,
        "v",
        "schemaname:t sequencename:t sequenceowner:t data_type:t start_value:l \
         min_value:l max_value:l increment_by:l cycle:b cache_size:l last_value:l",
    ),
    rel(
        IS,
        "sequences",
        13110,
        "v",
        "sequence_catalog:t sequence_schema:t sequence_name:t data_type:t \
         numeric_precision:i numeric_precision_radix:i numeric_scale:i start_value:t \
         minimum_value:t maximum_value:t increment:t cycle_option:t",
    ),
    rel(
        IS,
        "tables",
        13101,
        "v",
        "table_catalog:t table_schema:t table_name:t table_type:t \
         self_referencing_column_name:t reference_generation:t \
         user_defined_type_catalog:t user_defined_type_schema:t \
         user_defined_type_name:t is_insertable_into:t is_typed:t commit_action:t",
    ),
    rel(
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
    ),
    rel(
        IS,
        "schemata",
        13103,
        "v",
        "catalog_name:t schema_name:t schema_owner:t default_character_set_catalog:t \
         default_character_set_schema:t default_character_set_name:t sql_path:t",
    ),
    rel(
        IS,
        "views",
        13104,
        "v",
        "table_catalog:t table_schema:t table_name:t view_definition:t check_option:t \
         is_updatable:t is_insertable_into:t is_trigger_updatable:t \
         is_trigger_deletable:t is_trigger_insertable_into:t",
    ),
];

impl SystemRelation {
    /// Positions of its array columns (always NULL).
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

/// A column as the catalogs describe it: its owner's OID, name, type and place.
struct ColumnRow<'a> {
    rel_oid: i32,
    schema: &'a str,
    rel: &'a str,
    name: &'a str,
    num: usize,
    ty: DataType,
    not_null: bool,
}

/// Every column of every relation (user tables, views, indexes; system relations).
fn all_columns(snap: &Snapshot) -> Vec<ColumnRow<'_>> {
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

fn is_text(t: DataType) -> bool {
    matches!(t, DataType::Varchar(_) | DataType::Char(_))
}

/// `information_schema.columns.data_type`: the SQL-standard name.
fn sql_type_name(t: DataType) -> &'static str {
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

fn type_len(oid: i32) -> i32 {
    pg_types()
        .iter()
        .find(|t| t.oid == oid)
        .map_or(-1, |t| t.len)
}

/// One relation as (relname, schema, relkind, OID, namespace OID, columns, AM, rows).
struct ClassRow<'a> {
    oid: i32,
    name: &'a str,
    namespace: i32,
    kind: &'static str,
    am: i32,
    natts: usize,
    has_index: bool,
    tuples: f64,
    pages: u64,
}

fn class_rows(snap: &Snapshot) -> Vec<ClassRow<'_>> {
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
            namespace: super::sequences::NAMESPACE,
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

/// Whether `name` is a function a `regproc` may name: one `pg_proc` lists,
/// or a type's input/output function `pg_type` names (`int4_in`, `array_out`).
pub fn is_function_name(name: &str) -> bool {
    if kura_exec::expr::registry::find(name).is_some() {
        return true;
    }
    pg_types().iter().any(|t| {
        let io = if t.elem != 0 {
            "array"
        } else {
            t.name.as_str()
        };
        ["_in", "_out", "_recv", "_send"]
            .iter()
            .any(|suffix| name.strip_suffix(suffix) == Some(io))
    })
}

/// The rows of system relation `rel`.
fn rows(snap: &Snapshot, rel: &SystemRelation) -> Vec<Vec<Value>> {
    let schemas = [
        (PG_CATALOG_OID, "pg_catalog"),
        (PUBLIC_OID, "public"),
        (INFORMATION_SCHEMA_OID, "information_schema"),
    ];
    match (rel.schema, rel.name) {
        (PG, "pg_namespace") => schemas
            .iter()
            .map(|(oid, name)| vec![o(*oid), s(name), o(OWNER_OID), N])
            .collect(),
        (PG, "pg_class") => class_rows(snap)
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
            .collect(),
        (PG, "pg_attribute") => all_columns(snap)
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
                    s(&super::sequences::identity_of(snap, c.rel, c.name)
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
            .collect(),
        (PG, "pg_type") => pg_types()
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
            .collect(),
        (PG, "pg_index") => super::keys::pg_index(snap),
        (PG, "pg_database") => vec![vec![
            o(DATABASE_OID),
            s(&snap.database),
            o(OWNER_OID),
            Value::Integer(6),
            s("c"),
            b(false),
            b(true),
            Value::Integer(-1),
            o(1663),
            s("C"),
            s("C"),
            N,
            N,
            N,
            N,
        ]],
        (PG, "pg_roles") => vec![vec![
            s(OWNER),
            b(true),
            b(true),
            b(true),
            b(true),
            b(true),
            b(false),
            Value::Integer(-1),
            s("********"),
            N,
            b(true),
            N,
            o(OWNER_OID),
        ]],
        (PG, "pg_user") => vec![vec![
            s(OWNER),
            o(OWNER_OID),
            b(true),
            b(true),
            b(false),
            b(true),
            s("********"),
            N,
            N,
        ]],
        (PG, "pg_proc") => {
            use kura_exec::expr::registry::{proc_oid, Kind, Volatility, FUNCTIONS};
            let type_oid = |t: &str| kura_exec::expr::pg::type_oid(t).unwrap_or(0);
            FUNCTIONS
                .iter()
                .flat_map(|f| f.signatures.iter().map(move |sig| (f, sig)))
                .map(|(f, sig)| {
                    let kind = match f.kind {
                        Kind::Aggregate => "a",
                        Kind::Window => "w",
                        Kind::Scalar | Kind::SetReturning => "f",
                    };
                    let volatile = match f.volatility {
                        Volatility::Immutable => "i",
                        Volatility::Stable => "s",
                        Volatility::Volatile => "v",
                    };
                    let args: Vec<String> =
                        sig.args.iter().map(|a| type_oid(a).to_string()).collect();
                    vec![
                        o(proc_oid(f.name, sig)),
                        s(f.name),
                        o(PG_CATALOG_OID),
                        o(OWNER_OID),
                        o(12),
                        Value::Double(1.0),
                        Value::Double(if f.kind == Kind::SetReturning {
                            1000.0
                        } else {
                            0.0
                        }),
                        o(0),
                        s("-"),
                        s(kind),
                        b(false),
                        b(false),
                        b(f.kind == Kind::Scalar),
                        b(f.kind == Kind::SetReturning),
                        s(volatile),
                        s("s"),
                        Value::Integer(sig.args.len() as i32),
                        Value::Integer(0),
                        o(type_oid(sig.result)),
                        s(&args.join(" ")),
                        N,
                        N,
                        N,
                        N,
                        N,
                        s(f.name),
                        N,
                        N,
                        N,
                        N,
                    ]
                })
                .collect()
        }
        (PG, "pg_settings") => snap
            .settings
            .iter()
            .map(|st| {
                vec![
                    s(&st.name),
                    s(&st.setting),
                    N,
                    s(&st.category),
                    s(&st.description),
                    N,
                    s("user"),
                    s("string"),
                    s("default"),
                    N,
                    N,
                    N,
                    s(&st.setting),
                    s(&st.setting),
                    N,
                    N,
                    b(false),
                ]
            })
            .collect(),
        (PG, "pg_tables") => {
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
        (PG, "pg_views") => snap
            .relations
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
            .collect(),
        (PG, "pg_indexes") => snap
            .indexes
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
            .collect(),
        // Every function of kura's is built in (`prolang` 12, internal).
        (PG, "pg_language") => [(12, "internal"), (13, "c"), (14, "sql")]
            .into_iter()
            .map(|(oid, name)| {
                vec![
                    o(oid),
                    s(name),
                    o(OWNER_OID),
                    b(false),
                    b(oid == 14),
                    o(0),
                    o(0),
                    o(0),
                    N,
                ]
            })
            .collect(),
        (PG, "pg_am") => vec![
            vec![o(HEAP_AM), s("heap"), s("heap_tableam_handler"), s("t")],
            vec![o(BTREE_AM), s("btree"), s("bthandler"), s("i")],
        ],
        (PG, "pg_collation") => [
            (100, "default", "d", N),
            (950, "C", "c", s("C")),
            (951, "POSIX", "c", s("POSIX")),
        ]
        .into_iter()
        .map(|(oid, name, provider, locale)| {
            vec![
                o(oid),
                s(name),
                o(PG_CATALOG_OID),
                o(OWNER_OID),
                s(provider),
                b(true),
                Value::Integer(-1),
                locale.clone(),
                locale,
                N,
                N,
                N,
            ]
        })
        .collect(),
        (PG, "pg_tablespace") => [(1663, "pg_default"), (1664, "pg_global")]
            .into_iter()
            .map(|(oid, name)| vec![o(oid), s(name), o(OWNER_OID), N, N])
            .collect(),
        (IS, "tables") => {
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
        (IS, "columns") => {
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
                    let identity = super::sequences::identity_of(snap, c.rel, c.name);
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
        (IS, "schemata") => schemas
            .iter()
            .map(|(_, name)| vec![s(&snap.database), s(name), s(OWNER), N, N, N, N])
            .collect(),
        (IS, "views") => snap
            .relations
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
            .collect(),
        // The catalogs of things kura does not have (defaults, constraints,
        // comments, triggers, inheritance ...) are empty.
        (PG, "pg_constraint") => super::keys::pg_constraint(snap),
        (PG, "pg_opclass") => super::keys::pg_opclass(),
        (PG, "pg_sequence") => super::sequences::pg_sequence(snap),
        (PG, "pg_sequences") => super::sequences::pg_sequences(snap),
        (IS, "sequences") => super::sequences::information_schema_sequences(snap),
        (PG, "pg_attrdef") => snap
            .defaults
            .iter()
            .map(|d| {
                vec![
                    o(d.oid),
                    o(d.table_oid),
                    Value::Integer(d.column as i32),
                    s(&d.sql),
                ]
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The system relation `schema.name` as an in-memory table, its rows computed now.
pub fn system_relation(snap: &Snapshot, schema: &str, name: &str) -> Option<Arc<dyn TableSource>> {
    let rel = SYSTEM_RELATIONS
        .iter()
        .find(|r| r.schema == schema && r.name == name)?;
    let columns = rel.source_columns();
    let rows = rows(snap, rel);
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
            for row in rows(&snap, r) {
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
