//! CREATE TABLE / DROP TABLE: SQL column types mapped onto kura's types and the
//! catalog changed in one write transaction.

use sqlparser::ast::{
    self, CharacterLength, ColumnOption, ExactNumberInfo, ObjectName, ObjectType, TableConstraint,
};

use kura_common::decimal::MAX_PRECISION;
use kura_common::DataType;
use kura_storage::{ColumnDef, Schema, StorageError};

use crate::error::{KuraError, KuraResult};
use crate::result::QueryResult;
use crate::txn::Tx;

/// Maps a SQL type name to kura's type, with a clear error for what kura lacks.
pub fn convert_type(t: &ast::DataType) -> KuraResult<DataType> {
    use ast::DataType as T;
    let char_len = |l: &Option<CharacterLength>| -> KuraResult<Option<u32>> {
        match l {
            None => Ok(None),
            Some(CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| KuraError::Invalid(format!("invalid length {length} for type {t}"))),
            Some(CharacterLength::Max) => Ok(None),
        }
    };
    Ok(match t {
        T::Boolean | T::Bool => DataType::Boolean,
        T::Int(_) | T::Integer(_) | T::Int4(_) | T::SmallInt(_) => DataType::Integer,
        T::BigInt(_) | T::Int8(_) => DataType::BigInt,
        T::Double(_)
        | T::DoublePrecision
        | T::Float8
        | T::Float64
        | T::Real
        | T::Float4
        | T::Float(_) => DataType::Double,
        T::Decimal(info) | T::Numeric(info) => {
            let (p, s) = match info {
                ExactNumberInfo::None => (MAX_PRECISION as u64, 6),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > MAX_PRECISION as u64 || s > p {
                return Err(KuraError::Invalid(format!(
                    "DECIMAL precision must be 1..{MAX_PRECISION} and scale 0..precision (got {p},{s})"
                )));
            }
            DataType::Decimal {
                precision: p as u8,
                scale: s as u8,
            }
        }
        T::Date => DataType::Date,
        // `timestamptz` is a timestamp in UTC: kura keeps no time zones.
        T::Timestamp(..) => DataType::Timestamp,
        T::Custom(name, mods)
            if mods.is_empty() && name.to_string().eq_ignore_ascii_case("timestamptz") =>
        {
            DataType::Timestamp
        }
        T::Varchar(l) | T::CharacterVarying(l) => DataType::Varchar(char_len(l)?),
        T::Text | T::String(None) => DataType::Varchar(None),
        T::Char(l) | T::Character(l) => DataType::Char(char_len(l)?.unwrap_or(1)),
        other => {
            return Err(KuraError::UndefinedType(
                other.to_string().to_ascii_lowercase(),
            ))
        }
    })
}

/// Name of a table as the catalog keys it (last part of a qualified name).
pub fn object_name(name: &ObjectName) -> String {
    name.0
        .last()
        .map(|p| match p.as_ident() {
            Some(id) if id.quote_style.is_some() => id.value.clone(),
            Some(id) => id.value.to_ascii_lowercase(),
            None => p.to_string(),
        })
        .unwrap_or_default()
}

/// Executes `CREATE TABLE name (columns...)` (without AS SELECT).
pub(crate) fn create_table(tx: &Tx, ct: &ast::CreateTable) -> KuraResult<QueryResult> {
    let name = object_name(&ct.name);
    let mut pk_cols: Vec<String> = Vec::new();
    for c in &ct.constraints {
        if let TableConstraint::PrimaryKey(pk) = c {
            pk_cols.extend(
                pk.columns
                    .iter()
                    .map(|c| c.to_string().to_ascii_lowercase()),
            );
        }
    }
    let mut columns = Vec::new();
    for c in &ct.columns {
        let data_type = convert_type(&c.data_type)?;
        let cname = c.name.value.to_ascii_lowercase();
        let mut nullable = !pk_cols.contains(&cname);
        for opt in &c.options {
            match &opt.option {
                ColumnOption::NotNull => nullable = false,
                ColumnOption::Null => nullable = true,
                ColumnOption::PrimaryKey(_) => nullable = false,
                _ => {}
            }
        }
        columns.push(ColumnDef {
            name: cname,
            data_type,
            nullable,
        });
    }
    tx.write(|txn| {
        if !(ct.if_not_exists && txn.has_table(&name)) {
            txn.create_table(&name, Schema::new(columns))?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command("CREATE TABLE"))
}

/// Executes `CREATE [UNIQUE] INDEX name ON table (col, ...) [INCLUDE (col, ...)]`:
/// a B+tree bulk-built from the table's rows and kept consistent by rebuilding
/// after every append; included columns make it a covering index.
pub(crate) fn create_index(
    tx: &Tx,
    ci: &ast::CreateIndex,
    progress: Option<&crate::session::Progress>,
) -> KuraResult<QueryResult> {
    if ci.predicate.is_some() {
        return Err(KuraError::Unsupported("partial indexes".into()));
    }
    // Included columns are stored in the entries after the key, never searched.
    let include: Vec<String> = ci
        .include
        .iter()
        .map(|id| id.value.to_ascii_lowercase())
        .collect();
    let table = object_name(&ci.table_name);
    let mut columns = Vec::new();
    for c in &ci.columns {
        match &c.column.expr {
            ast::Expr::Identifier(id) => columns.push(id.value.to_ascii_lowercase()),
            other => {
                return Err(KuraError::Unsupported(format!(
                    "index on expression {other}"
                )))
            }
        }
    }
    let name = match &ci.name {
        Some(n) => object_name(n),
        None => format!("{table}_{}_idx", columns.join("_")),
    };
    let label = format!("index {name}");
    let mut report = |done: u64, total: u64| {
        if let Some(p) = progress {
            p(&label, done, total)
        }
    };
    tx.write(|txn| {
        if !(ci.if_not_exists && txn.has_index(&name)) {
            txn.create_covering_index(&name, &table, &columns, &include, ci.unique, &mut report)?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command("CREATE INDEX"))
}

/// Executes `DROP INDEX [IF EXISTS] a, b`.
pub(crate) fn drop_indexes(
    tx: &Tx,
    if_exists: bool,
    names: &[ObjectName],
) -> KuraResult<QueryResult> {
    tx.write(|txn| {
        for n in names {
            match txn.drop_index(&object_name(n)) {
                Err(StorageError::NoSuchIndex(_)) if if_exists => {}
                r => r?,
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command("DROP INDEX"))
}

/// Executes `DROP TABLE [IF EXISTS] a, b` atomically.
pub(crate) fn drop_tables(
    tx: &Tx,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
) -> KuraResult<QueryResult> {
    tx.write(|txn| {
        for n in names {
            let name = object_name(n);
            let r = match object_type {
                ObjectType::Table => txn.drop_table(&name),
                ObjectType::View => txn.drop_view(&name),
                other => return Err(KuraError::Unsupported(format!("DROP {other}"))),
            };
            match r {
                Err(StorageError::NoSuchTable(_) | StorageError::NoSuchView(_)) if if_exists => {}
                r => r?,
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command(match object_type {
        ObjectType::View => "DROP VIEW",
        _ => "DROP TABLE",
    }))
}
