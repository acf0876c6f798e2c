//! The rows the system catalogs show for sequences: `pg_class` (relkind `S`),
//! `pg_sequence`, the `pg_sequences` view, `information_schema.sequences`,
//! and the identity markers of the columns they number.

use kura_common::Value;

use super::{Snapshot, SysSequence, OWNER, PUBLIC_OID};

/// PostgreSQL's OIDs of the integer types a sequence has.
fn type_oid(type_name: &str) -> i32 {
    match type_name {
        "smallint" => 21,
        "integer" => 23,
        _ => 20,
    }
}

fn s(x: &str) -> Value {
    Value::Text(x.to_string())
}

fn l(x: i64) -> Value {
    Value::BigInt(x)
}

/// `pg_sequence`: seqrelid, seqtypid, seqstart, seqincrement, seqmax, seqmin,
/// seqcache, seqcycle.
pub(super) fn pg_sequence(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.sequences
        .iter()
        .map(|q| {
            let i = &q.info;
            vec![
                Value::Integer(q.oid),
                Value::Integer(type_oid(i.type_name)),
                l(i.start),
                l(i.increment),
                l(i.max),
                l(i.min),
                l(1),
                Value::Boolean(i.cycle),
            ]
        })
        .collect()
}

/// The `pg_sequences` view.
pub(super) fn pg_sequences(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.sequences
        .iter()
        .map(|q| {
            let i = &q.info;
            vec![
                s("public"),
                s(&i.name),
                s(OWNER),
                s(i.type_name),
                l(i.start),
                l(i.min),
                l(i.max),
                l(i.increment),
                Value::Boolean(i.cycle),
                l(1),
                i.last_value.map_or(Value::Null, l),
            ]
        })
        .collect()
}

/// `information_schema.sequences` (numbers as text, as the standard has them;
/// an identity column's sequence is part of its column, so not listed, as in
/// PostgreSQL).
pub(super) fn information_schema_sequences(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.sequences
        .iter()
        .filter(|q| q.info.identity.is_none())
        .map(|q| {
            let i = &q.info;
            let bits = match i.type_name {
                "smallint" => 16,
                "integer" => 32,
                _ => 64,
            };
            vec![
                s(&snap.database),
                s("public"),
                s(&i.name),
                s(i.type_name),
                Value::Integer(bits),
                Value::Integer(2),
                Value::Integer(0),
                s(&i.start.to_string()),
                s(&i.min.to_string()),
                s(&i.max.to_string()),
                s(&i.increment.to_string()),
                s(if i.cycle { "YES" } else { "NO" }),
            ]
        })
        .collect()
}

/// The identity column `table`.`column` is, if any (`a` ALWAYS, `d` BY DEFAULT).
pub(super) fn identity_of<'a>(
    snap: &'a Snapshot,
    table: &str,
    column: &str,
) -> Option<(char, &'a SysSequence)> {
    snap.sequences.iter().find_map(|q| {
        let (t, c) = q.info.owned_by.as_ref()?;
        (t == table && c == column)
            .then_some(q.info.identity)
            .flatten()
            .map(|kind| (kind, q))
    })
}

/// Namespace of every sequence.
pub(super) const NAMESPACE: i32 = PUBLIC_OID;
