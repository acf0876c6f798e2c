//! The rows the system catalogs show for indexes and constraints:
//! `pg_index` (with its `int2vector` / `oidvector` columns), `pg_opclass`
//! (the btree operator class each key column uses) and `pg_constraint`.

use kura_common::array::format_vector;
use kura_common::{DataType, Value};

use super::{Snapshot, SysIndex, BTREE_AM, OWNER_OID, PG_CATALOG_OID, PUBLIC_OID};

/// PostgreSQL's OID of the default collation, which text columns use.
const DEFAULT_COLLATION: i32 = 100;

/// The default btree operator classes of the types kura's columns have, with
/// PostgreSQL's OIDs: (class OID, name, family OID, input type OID).
const OPCLASSES: &[(i32, &str, i32, i32)] = &[
    (424, "bool_ops", 424, 16),
    (426, "bpchar_ops", 426, 1042),
    (1979, "int2_ops", 1976, 21),
    (1978, "int4_ops", 1976, 23),
    (3124, "int8_ops", 1976, 20),
    (3123, "float8_ops", 1970, 701),
    (3125, "numeric_ops", 1988, 1700),
    (3122, "date_ops", 434, 1082),
    (3128, "timestamp_ops", 434, 1114),
    (3126, "text_ops", 1994, 25),
    (2968, "uuid_ops", 2968, 2950),
    (421, "bytea_ops", 428, 17),
];

/// The operator class a key column of type `t` is indexed with (0 when kura
/// has none to name, which no column type reaches).
fn opclass_of(t: DataType) -> i32 {
    let input = match t {
        DataType::Boolean => 16,
        DataType::Char(_) => 1042,
        DataType::SmallInt => 21,
        DataType::Integer => 23,
        DataType::BigInt => 20,
        DataType::Double => 701,
        DataType::Decimal { .. } => 1700,
        DataType::Date => 1082,
        DataType::Timestamp => 1114,
        DataType::Varchar(_) => 25,
        DataType::Uuid => 2950,
        DataType::Bytea => 17,
        // Not indexable in kura (CREATE INDEX refuses them).
        DataType::Array(_)
        | DataType::Vector(_)
        | DataType::Interval
        | DataType::Json
        | DataType::Jsonb => return 0,
    };
    OPCLASSES.iter().find(|c| c.3 == input).map_or(0, |c| c.0)
}

/// A vector's text from numbers.
fn vector(items: impl IntoIterator<Item = i32>) -> Value {
    let texts: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    Value::Text(format_vector(texts.iter().map(String::as_str)))
}

/// The types of `ix`'s key columns, from its table's columns.
fn key_types(snap: &Snapshot, ix: &SysIndex) -> Vec<DataType> {
    let table = snap.relations.iter().find(|r| r.oid == ix.table_oid);
    ix.columns
        .iter()
        .map(|&c| {
            table
                .and_then(|t| t.columns.get(c))
                .map_or(DataType::Integer, |c| c.data_type)
        })
        .collect()
}

/// `pg_index`: one row an index. `indkey` numbers the key and included
/// columns from 1; `indclass`, `indcollation` and `indoption` have one entry
/// per key column (kura's indexes are ascending with NULLs last: option 0).
pub(super) fn pg_index(snap: &Snapshot) -> Vec<Vec<Value>> {
    let b = Value::Boolean;
    snap.indexes
        .iter()
        .map(|ix| {
            let types = key_types(snap, ix);
            let key = ix.columns.iter().chain(&ix.include).map(|c| *c as i32 + 1);
            let collation = types
                .iter()
                .map(|t| if t.is_text() { DEFAULT_COLLATION } else { 0 });
            vec![
                Value::Integer(ix.oid),
                Value::Integer(ix.table_oid),
                Value::Integer((ix.columns.len() + ix.include.len()) as i32),
                Value::Integer(ix.columns.len() as i32),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                vector(key),
                vector(collation),
                vector(types.iter().map(|t| opclass_of(*t))),
                vector(types.iter().map(|_| 0)),
                Value::Null,
                Value::Null,
            ]
        })
        .collect()
}

/// `pg_opclass`: the default btree classes of kura's key types.
pub(super) fn pg_opclass() -> Vec<Vec<Value>> {
    OPCLASSES
        .iter()
        .map(|&(oid, name, family, input)| {
            vec![
                Value::Integer(oid),
                Value::Integer(BTREE_AM),
                Value::Text(name.to_string()),
                Value::Integer(PG_CATALOG_OID),
                Value::Integer(OWNER_OID),
                Value::Integer(family),
                Value::Integer(input),
                Value::Boolean(true),
                Value::Integer(0),
            ]
        })
        .collect()
}

/// `pg_constraint`: one row a constraint; `conkey` / `confkey` are arrays
/// of column numbers (from 1).
pub(super) fn pg_constraint(snap: &Snapshot) -> Vec<Vec<Value>> {
    let (s, b, o, n) = (
        |x: &str| Value::Text(x.to_string()),
        Value::Boolean,
        Value::Integer,
        Value::Null,
    );
    let array = |cols: &[usize]| {
        Value::Text(kura_common::array::format_values(
            &cols
                .iter()
                .map(|c| Value::Integer(*c as i32))
                .collect::<Vec<_>>(),
        ))
    };
    snap.constraints
        .iter()
        .map(|c| {
            let foreign = c.info.contype() == "f";
            let action = if foreign { "a" } else { " " };
            vec![
                o(c.oid),
                s(&c.info.name),
                o(PUBLIC_OID),
                s(c.info.contype()),
                b(false),
                b(false),
                b(true),
                o(c.table_oid),
                o(0),
                o(c.index_oid),
                o(0),
                o(c.ref_table_oid),
                s(action),
                s(action),
                s(if foreign { "s" } else { " " }),
                b(true),
                o(0),
                b(true),
                if c.columns.is_empty() {
                    n.clone()
                } else {
                    array(&c.columns)
                },
                if foreign {
                    array(&c.ref_columns)
                } else {
                    n.clone()
                },
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                match &c.info.kind {
                    crate::catalog::ConstraintKind::Check(sql) => s(sql),
                    _ => n.clone(),
                },
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_type_has_a_default_class() {
        for t in [
            DataType::Boolean,
            DataType::Char(3),
            DataType::SmallInt,
            DataType::Integer,
            DataType::BigInt,
            DataType::Double,
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
            DataType::Date,
            DataType::Timestamp,
            DataType::Varchar(None),
        ] {
            assert_ne!(opclass_of(t), 0, "{t}");
        }
        assert_eq!(opclass_of(DataType::Integer), 1978);
        assert_eq!(vector([2, 1]), Value::Text("2 1".into()));
    }
}
