//! PostgreSQL's built-in types as its catalogs name them: OIDs, `format_type`
//! spellings, type modifiers and `regtype` input.

use kura_common::DataType;

/// One row of `pg_type`: a built-in type kura reports.
#[derive(Debug, Clone)]
pub struct PgType {
    pub oid: i32,
    /// `typname`.
    pub name: String,
    /// What `format_type` prints (without a modifier).
    pub display: String,
    /// `typlen` (-1: variable length).
    pub len: i32,
    /// `typcategory`.
    pub category: &'static str,
    /// `typarray`: the array type over this one (0 for array types themselves).
    pub array: i32,
    /// `typelem`: the element type of an array type (0 otherwise).
    pub elem: i32,
}

/// The base types with PostgreSQL's OIDs: (oid, typname, format_type spelling,
/// typlen, typcategory, array type OID).
const BASE_TYPES: &[(i32, &str, &str, i32, &str, i32)] = &[
    (16, "bool", "boolean", 1, "B", 1000),
    (17, "bytea", "bytea", -1, "U", 1001),
    (18, "char", "\"char\"", 1, "Z", 1002),
    (19, "name", "name", 64, "S", 1003),
    (20, "int8", "bigint", 8, "N", 1016),
    (21, "int2", "smallint", 2, "N", 1005),
    (23, "int4", "integer", 4, "N", 1007),
    (22, "int2vector", "int2vector", -1, "A", 1006),
    (24, "regproc", "regproc", 4, "N", 1008),
    (25, "text", "text", -1, "S", 1009),
    (26, "oid", "oid", 4, "N", 1028),
    (30, "oidvector", "oidvector", -1, "A", 1013),
    (114, "json", "json", -1, "U", 199),
    (700, "float4", "real", 4, "N", 1021),
    (701, "float8", "double precision", 8, "N", 1022),
    (1042, "bpchar", "character", -1, "S", 1014),
    (1043, "varchar", "character varying", -1, "S", 1015),
    (1082, "date", "date", 4, "D", 1182),
    (1083, "time", "time without time zone", 8, "D", 1183),
    (
        1114,
        "timestamp",
        "timestamp without time zone",
        8,
        "D",
        1115,
    ),
    (
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        "D",
        1185,
    ),
    (1700, "numeric", "numeric", -1, "N", 1231),
    (2205, "regclass", "regclass", 4, "N", 2210),
    (2206, "regtype", "regtype", 4, "N", 2211),
    (2950, "uuid", "uuid", 16, "U", 2951),
    (1186, "interval", "interval", 16, "T", 1187),
    (3802, "jsonb", "jsonb", -1, "U", 3807),
];

/// PostgreSQL's pseudo-types that function signatures name (`pg_proc`):
/// (oid, typname, typlen). No array types over them.
const PSEUDO_TYPES: &[(i32, &str, i32)] = &[
    (2276, "any", 4),
    (2249, "record", -1),
    (2277, "anyarray", -1),
    (2283, "anyelement", 4),
];

/// The OID of the type named `typname` (`int4`, `_text`, `anyelement`).
pub fn type_oid(typname: &str) -> Option<i32> {
    all_types()
        .iter()
        .find(|t| t.name == typname)
        .map(|t| t.oid)
}

/// How `format_type` spells the type named `typname` (`float8` → `double precision`).
pub fn type_display(typname: &str) -> Option<String> {
    all_types()
        .iter()
        .find(|t| t.name == typname)
        .map(|t| t.display.clone())
}

fn all_types() -> &'static [PgType] {
    static TYPES: std::sync::OnceLock<Vec<PgType>> = std::sync::OnceLock::new();
    TYPES.get_or_init(pg_types)
}

/// Every type kura reports: the base types, an array type over each
/// (`_int4`, printed `integer[]`), and the pseudo-types of signatures.
pub fn pg_types() -> Vec<PgType> {
    let base = BASE_TYPES
        .iter()
        .map(|&(oid, name, display, len, category, array)| PgType {
            oid,
            name: name.into(),
            display: display.into(),
            len,
            category,
            array,
            elem: 0,
        });
    let arrays = BASE_TYPES
        .iter()
        .map(|&(oid, name, display, _, _, array)| PgType {
            oid: array,
            name: format!("_{name}"),
            display: format!("{display}[]"),
            len: -1,
            category: "A",
            array: 0,
            elem: oid,
        });
    let pseudo = PSEUDO_TYPES.iter().map(|&(oid, name, len)| PgType {
        oid,
        name: name.into(),
        display: name.into(),
        len,
        category: "P",
        array: 0,
        elem: 0,
    });
    base.chain(arrays).chain(pseudo).collect()
}

/// A kura column type as PostgreSQL's type OID and type modifier (`atttypmod`).
pub fn pg_type_of(t: DataType) -> (i32, i32) {
    match t {
        DataType::Boolean => (16, -1),
        DataType::SmallInt => (21, -1),
        DataType::Integer => (23, -1),
        DataType::BigInt => (20, -1),
        DataType::Double => (701, -1),
        DataType::Decimal { precision, scale } => {
            (1700, (((precision as i32) << 16) | scale as i32) + 4)
        }
        DataType::Date => (1082, -1),
        DataType::Timestamp => (1114, -1),
        DataType::Varchar(n) => (
            1043,
            n.map_or(-1, |n| n.min(i32::MAX as u32 - 4) as i32 + 4),
        ),
        DataType::Char(n) => (1042, n.min(i32::MAX as u32 - 4) as i32 + 4),
        // Unbounded text arrays are text[], as the server announces them.
        DataType::Array(kura_common::ElemType::Varchar(None)) => (1009, -1),
        DataType::Array(e) => {
            let (elem, typmod) = pg_type_of(e.data_type());
            let array = BASE_TYPES.iter().find(|t| t.0 == elem).map_or(0, |t| t.5);
            (array, typmod)
        }
        DataType::Vector(kura_common::ElemType::SmallInt) => (22, -1),
        DataType::Vector(_) => (30, -1),
        DataType::Uuid => (2950, -1),
        DataType::Bytea => (17, -1),
        DataType::Interval => (1186, -1),
        DataType::Json => (114, -1),
        DataType::Jsonb => (3802, -1),
    }
}

/// `format_type(oid, typmod)`: the type's SQL spelling with its modifier.
pub fn format_type(oid: i64, typmod: Option<i64>) -> Option<String> {
    let all = pg_types();
    let ty = all.iter().find(|t| t.oid as i64 == oid)?;
    let m = typmod.filter(|m| *m >= 4);
    Some(match (ty.oid, m) {
        (1043 | 1042, Some(m)) => format!("{}({})", ty.display, m - 4),
        (1700, Some(m)) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
        _ => ty.display.to_string(),
    })
}

/// `'name'::regtype`: a type's OID from any of the names PostgreSQL accepts
/// (`int4`, `integer`, `pg_catalog.int4`, `character varying`, `int4[]`).
pub fn regtype_in(name: &str) -> Option<i32> {
    let n = name.trim().to_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    let n = n.trim_matches('"');
    let alias = match n {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "decimal" => "numeric",
        "character varying" => "varchar",
        "character" => "bpchar",
        other => other,
    };
    pg_types()
        .iter()
        .find(|t| t.name == alias || t.display == n)
        .map(|t| t.oid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_follows_postgresql() {
        let (oid, m) = pg_type_of(DataType::Decimal {
            precision: 12,
            scale: 2,
        });
        assert_eq!(
            format_type(oid as i64, Some(m as i64)).unwrap(),
            "numeric(12,2)"
        );
        let (oid, m) = pg_type_of(DataType::Varchar(Some(44)));
        assert_eq!((oid, m), (1043, 48));
        assert_eq!(
            format_type(oid as i64, Some(m as i64)).unwrap(),
            "character varying(44)"
        );
        assert_eq!(format_type(23, None).unwrap(), "integer");
        assert_eq!(format_type(1007, None).unwrap(), "integer[]");
        assert!(format_type(99999, None).is_none());
    }

    #[test]
    fn regtype_accepts_postgresql_spellings() {
        assert_eq!(regtype_in("int4"), Some(23));
        assert_eq!(regtype_in("integer"), Some(23));
        assert_eq!(regtype_in("pg_catalog.int8"), Some(20));
        assert_eq!(regtype_in("character varying"), Some(1043));
        assert_eq!(regtype_in("_int4"), Some(1007));
        assert_eq!(regtype_in("nope"), None);
    }
}
