//! CREATE TABLE / DROP TABLE, CREATE INDEX / DROP INDEX: the catalog changed in one
//! write transaction.

use sqlparser::ast::{self, ObjectName, ObjectType};

use kura_common::DataType;
use kura_storage::{Schema, StorageError};

use crate::error::{KuraError, KuraResult};
pub use crate::names::object_name;
use crate::result::QueryResult;
use crate::table_rules;
pub use crate::table_rules::convert_type;
use crate::txn::Tx;

/// Executes `CREATE TABLE name (columns...)` (without AS SELECT): the table,
/// the unique indexes of its keys and its rules, in one write transaction.
pub(crate) fn create_table(tx: &Tx, ct: &ast::CreateTable) -> KuraResult<QueryResult> {
    table_rules::check_clauses(ct)?;
    let name = object_name(&ct.name);
    let def = table_rules::define(ct)?;
    tx.write(|txn| {
        // IF NOT EXISTS skips for a relation of any kind (PostgreSQL's NOTICE).
        if ct.if_not_exists && txn.relation_exists(&name) {
            return Ok(());
        }
        txn.create_table(&name, def.schema.clone())?;
        let mut rules = def.rules.clone();
        for seq in &def.sequences {
            // A relation of the sequence's name already exists: take the
            // next free name, as PostgreSQL does (`t_id_seq1`).
            let mut seq = seq.clone();
            let base = seq.name.clone();
            let mut n = 0;
            while txn.relation_exists(&seq.name) {
                n += 1;
                seq.name = format!("{base}{n}");
            }
            if n > 0 {
                let column = seq.owned_by.as_ref().map(|o| o.column.clone());
                for d in &mut rules.defaults {
                    if Some(&d.column) == column.as_ref() {
                        d.sql = crate::sequences::nextval_sql(&seq.name);
                    }
                }
            }
            txn.create_sequence(seq)?;
        }
        for key in &def.rules.keys {
            if txn.has_index(&key.name) {
                return Err(KuraError::State {
                    sqlstate: "42P07",
                    message: format!("relation \"{}\" already exists", key.name),
                });
            }
            txn.create_index(&key.name, &name, &key.columns, true, &mut |_, _| {})?;
        }
        for fk in &mut rules.foreign_keys {
            resolve_reference(txn, &name, &def.schema, &def.rules, fk)?;
        }
        txn.set_rules(&name, rules)?;
        Ok(())
    })?;
    Ok(QueryResult::command("CREATE TABLE"))
}

/// Checks a foreign key against the table it references (as this
/// transaction sees it, or the table being created when it references
/// itself): the referenced columns default to its primary key and must be
/// exactly one of its keys (42830), of the same types (42804).
fn resolve_reference(
    txn: &kura_storage::WriteTxn,
    table: &str,
    schema: &Schema,
    own: &kura_storage::rules::TableRules,
    fk: &mut kura_storage::rules::ForeignKey,
) -> KuraResult<()> {
    let (ref_schema, ref_rules) = if fk.ref_table == table {
        (schema.clone(), Some(own.clone()))
    } else {
        let s = txn
            .schema(&fk.ref_table)
            .cloned()
            .ok_or_else(|| StorageError::NoSuchTable(fk.ref_table.clone()))?;
        (s, txn.rules(&fk.ref_table).cloned())
    };
    let keys = ref_rules.map(|r| r.keys).unwrap_or_default();
    if fk.ref_columns.is_empty() {
        let Some(pk) = keys.iter().find(|k| k.primary) else {
            return Err(KuraError::State {
                sqlstate: "42830",
                message: format!(
                    "there is no primary key for referenced table \"{}\"",
                    fk.ref_table
                ),
            });
        };
        fk.ref_columns = pk.columns.clone();
    }
    if fk.ref_columns.len() != fk.columns.len() {
        return Err(KuraError::State {
            sqlstate: "42830",
            message: "number of referencing and referenced columns for foreign key disagree".into(),
        });
    }
    let mut wanted = fk.ref_columns.clone();
    wanted.sort();
    if !keys.iter().any(|k| {
        let mut cols = k.columns.clone();
        cols.sort();
        cols == wanted
    }) {
        return Err(KuraError::State {
            sqlstate: "42830",
            message: format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                fk.ref_table
            ),
        });
    }
    for (c, r) in fk.columns.iter().zip(&fk.ref_columns) {
        let ct = schema.columns[schema.index_of(c).unwrap_or(0)].data_type;
        let rt = ref_schema
            .index_of(r)
            .map(|i| ref_schema.columns[i].data_type)
            .ok_or_else(|| {
                KuraError::UndefinedColumn(format!(
                    "column \"{r}\" referenced in foreign key constraint does not exist"
                ))
            })?;
        if !comparable(ct, rt) {
            return Err(KuraError::State {
                sqlstate: "42804",
                message: format!(
                    "foreign key constraint \"{}\" cannot be implemented: key columns \"{c}\" and \"{r}\" are of incompatible types: {ct} and {rt}",
                    fk.name
                ),
            });
        }
    }
    Ok(())
}

/// Types whose values compare as equal keys.
fn comparable(a: DataType, b: DataType) -> bool {
    use DataType as T;
    let numeric = |t: DataType| matches!(t, T::Integer | T::BigInt | T::Decimal { .. } | T::Double);
    let text = |t: DataType| matches!(t, T::Varchar(_) | T::Char(_));
    a == b || (numeric(a) && numeric(b)) || (text(a) && text(b))
}

/// Executes `CREATE [UNIQUE] INDEX name ON table (col, ...) [INCLUDE (col, ...)]`:
/// a B+tree bulk-built from the table's rows and kept consistent by rebuilding
/// after every append; included columns make it a covering index.
pub(crate) fn create_index(
    tx: &Tx,
    ci: &ast::CreateIndex,
    progress: Option<&crate::progress::Progress>,
) -> KuraResult<QueryResult> {
    check_index_clauses(tx, ci)?;
    // Included columns are stored in the entries after the key, never searched.
    let include: Vec<String> = ci.include.iter().map(crate::names::ident).collect();
    let table = object_name(&ci.table_name);
    let mut columns = Vec::new();
    for c in &ci.columns {
        index_column_options(c)?;
        match &c.column.expr {
            ast::Expr::Identifier(id) => columns.push(crate::names::ident(id)),
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
        if let Some(schema) = txn.schema(&table) {
            for c in &columns {
                if let Some(i) = schema.index_of(c) {
                    crate::table_rules::json_key(schema.columns[i].data_type)?;
                }
            }
        }
        if !(ci.if_not_exists && txn.relation_exists(&name)) {
            txn.create_covering_index(&name, &table, &columns, &include, ci.unique, &mut report)?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command("CREATE INDEX"))
}

/// Refuses what CREATE INDEX may say that kura's one kind of index does not
/// do: kura builds a B+tree with NULLs distinct, ascending, with no storage
/// parameters, over all rows.
fn check_index_clauses(tx: &Tx, ci: &ast::CreateIndex) -> KuraResult<()> {
    let refused: [(bool, String); 7] = [
        (
            ci.predicate.is_some(),
            "partial indexes (CREATE INDEX … WHERE)".into(),
        ),
        (
            ci.using
                .as_ref()
                .is_some_and(|u| *u != ast::IndexType::BTree),
            format!(
                "index access method {} (kura's indexes are B-trees)",
                ci.using
                    .as_ref()
                    .map(|u| u.to_string().to_ascii_lowercase())
                    .unwrap_or_default()
            ),
        ),
        (
            ci.nulls_distinct == Some(false),
            "CREATE UNIQUE INDEX … NULLS NOT DISTINCT".into(),
        ),
        (
            !ci.with.is_empty(),
            "index storage parameters (CREATE INDEX … WITH (…))".into(),
        ),
        (
            !ci.index_options.is_empty(),
            format!(
                "index options {} (MySQL's)",
                ci.index_options
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        (
            !ci.alter_options.is_empty(),
            "CREATE INDEX … LOCK / ALGORITHM (MySQL's)".into(),
        ),
        (ci.r#async, "CREATE ASYNC INDEX".into()),
    ];
    if let Some((_, what)) = refused.into_iter().find(|(present, _)| *present) {
        return Err(KuraError::Unsupported(what));
    }
    // CONCURRENTLY builds the same index; kura's build holds the write
    // transaction, which leaves readers be. PostgreSQL runs it only outside
    // a transaction block.
    if ci.concurrently && tx.in_block() {
        return Err(KuraError::State {
            sqlstate: "25001",
            message: "CREATE INDEX CONCURRENTLY cannot run inside a transaction block".into(),
        });
    }
    Ok(())
}

/// An index column's options: ascending with NULLs last (the default, which
/// may be written) is the only order kura's index keeps; no operator class
/// other than the type's own.
fn index_column_options(c: &ast::IndexColumn) -> KuraResult<()> {
    let o = &c.column.options;
    let ascending = matches!(o.sort, None | Some(ast::OrderBySort::Asc));
    if !ascending || o.nulls_first == Some(true) {
        return Err(KuraError::Unsupported(format!(
            "index column order {} (kura's indexes are ascending, NULLs last)",
            c.column
        )));
    }
    if let Some(class) = &c.operator_class {
        return Err(KuraError::Unsupported(format!("operator class {class}")));
    }
    if c.column.with_fill.is_some() {
        return Err(KuraError::Unsupported(format!("index column {}", c.column)));
    }
    Ok(())
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

/// `ANALYZE [table [(columns)]]`: reads the pages of a table (every
/// permanent table without a name) that carry no order marks and marks those
/// whose values ascend (see `WriteTxn::analyze`): a database written by an
/// older build gets them, and with them ordered aggregation and unique keys.
/// The other statistics are kept as rows are written. Hive's and Spark's
/// clauses are refused.
pub(crate) fn analyze(tx: &Tx, a: &ast::Analyze) -> KuraResult<QueryResult> {
    if a.partitions.is_some()
        || a.for_columns
        || a.cache_metadata
        || a.noscan
        || a.compute_statistics
    {
        return Err(KuraError::Unsupported(
            "ANALYZE … PARTITION / FOR COLUMNS / CACHE METADATA / NOSCAN / COMPUTE STATISTICS"
                .into(),
        ));
    }
    let names = match &a.table_name {
        Some(n) => vec![object_name(n)],
        None => tx.catalog().table_names(),
    };
    let tx = match names.first() {
        Some(n) if a.table_name.is_some() && tx.is_temp(n) => crate::temp::ddl_tx(tx, "ANALYZE")?,
        _ => *tx,
    };
    tx.write(|txn| {
        for name in &names {
            let schema = txn
                .schema(name)
                .ok_or_else(|| StorageError::NoSuchTable(name.clone()))?;
            for c in &a.columns {
                let column = crate::names::ident(c);
                if !schema.columns.iter().any(|s| s.name == column) {
                    return Err(KuraError::State {
                        sqlstate: "42703",
                        message: format!(
                            "column \"{column}\" of relation \"{name}\" does not exist"
                        ),
                    });
                }
            }
            txn.analyze(name)?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command("ANALYZE"))
}
