//! UPDATE, DELETE and TRUNCATE. A table is stored in compressed column chunks
//! without room for change in place, so a change rewrites the table inside the
//! write transaction: the rows as they will be are computed by a query over the
//! table, the table is emptied and they are appended; its indexes are rebuilt
//! from the result. The query runs while the statement holds the write
//! transaction, so it reads the latest commit (and the transaction's own
//! changes): a statement that waited for another writer never writes back rows
//! from before that writer's commit.
//! All or nothing, like every write: a failing row (a NOT NULL column set to
//! NULL, a value out of range) changes nothing.

use sqlparser::ast::{
    AssignmentTarget, Delete, FromTable, TableFactor, TableWithJoins, Truncate, Update,
};

use kura_common::{Batch, DataType, Value, Vector};
use kura_exec::expr::assign_vector;
use kura_storage::{Schema, WriteTxn};

use crate::enforce::{after_write, Change};
use crate::error::{KuraError, KuraResult};
use crate::names::{object_name, quote_ident};
use crate::query_context::QueryContext;
use crate::result::QueryResult;
use crate::returning::Returning;

/// `UPDATE t [AS a] SET c = v, ... [WHERE cond]`.
pub(crate) fn update(
    ctx: &QueryContext,
    u: &Update,
    params: Option<Vec<Value>>,
) -> KuraResult<QueryResult> {
    if u.from.is_some() || u.limit.is_some() || !u.order_by.is_empty() {
        return Err(KuraError::Unsupported(
            "UPDATE with FROM, ORDER BY or LIMIT".into(),
        ));
    }
    let refused: [(bool, &str); 3] = [
        (
            !u.optimizer_hints.is_empty(),
            "UPDATE /*+ optimizer hints */",
        ),
        (u.or.is_some(), "UPDATE OR … (SQLite's conflict clause)"),
        (
            u.output.is_some(),
            "UPDATE … OUTPUT (RETURNING is PostgreSQL's)",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|(present, _)| *present) {
        return Err(KuraError::Unsupported((*what).into()));
    }
    let (table, relation, alias) = single_table(&u.table, "UPDATE")?;
    let returning = u.returning.as_deref().map(|items| Returning {
        items,
        table: &table,
        alias: alias.clone(),
    });
    ctx.tx.for_table(&table).write(|txn| {
        crate::enforce::refuse_identity_update(txn, &table, u)?;
        let schema = schema_of(ctx, &table)?;
        let qualifier = alias.clone().unwrap_or_else(|| quote_ident(&table));
        let source = (relation.as_str(), qualifier.as_str());
        let rows = updated_rows(ctx, u, &schema, &table, source, params.clone())?;
        let changed = rows.changed;
        replace_rows(txn, &table, &rows.batches)?;
        after_write(ctx, txn, &table, Change::Changed)?;
        let tag = format!("UPDATE {changed}");
        match &returning {
            None => Ok(QueryResult::command(tag)),
            // The changed rows as they are now.
            Some(r) => r.result(ctx, &schema, rows.changed_rows(), params, tag),
        }
    })
}

/// The result columns of an UPDATE's RETURNING list (none without one).
pub(crate) fn returning_columns_of_update(
    ctx: &QueryContext,
    u: &Update,
) -> KuraResult<Vec<crate::result::ResultColumn>> {
    returning_columns(ctx, u.returning.as_deref(), &u.table, "UPDATE")
}

/// The result columns of a DELETE's RETURNING list (none without one).
pub(crate) fn returning_columns_of_delete(
    ctx: &QueryContext,
    d: &Delete,
) -> KuraResult<Vec<crate::result::ResultColumn>> {
    returning_columns(ctx, d.returning.as_deref(), delete_target(d)?, "DELETE")
}

fn returning_columns(
    ctx: &QueryContext,
    items: Option<&[sqlparser::ast::SelectItem]>,
    target: &TableWithJoins,
    what: &str,
) -> KuraResult<Vec<crate::result::ResultColumn>> {
    let Some(items) = items else {
        return Ok(Vec::new());
    };
    let (table, _, alias) = single_table(target, what)?;
    crate::returning::returning_columns(
        ctx,
        &Returning {
            items,
            table: &table,
            alias,
        },
    )
}

/// The one table a DELETE names.
fn delete_target(d: &Delete) -> KuraResult<&TableWithJoins> {
    let from = match &d.from {
        FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
    };
    match from.as_slice() {
        [target] => Ok(target),
        _ => Err(KuraError::Unsupported("DELETE from several tables".into())),
    }
}

/// The rows of a table after an UPDATE, and how many it changes.
pub(crate) struct Updated {
    pub(crate) batches: Vec<Batch>,
    pub(crate) changed: u64,
    /// Which rows of each batch changed.
    hits: Vec<Vec<bool>>,
}

impl Updated {
    /// The changed rows, with their new values.
    fn changed_rows(&self) -> Vec<Batch> {
        self.batches
            .iter()
            .zip(&self.hits)
            .map(|(b, hit)| {
                let keep: Vec<u32> = (0..hit.len() as u32).filter(|&i| hit[i as usize]).collect();
                let mut b = b.clone();
                b.selection = Some(keep);
                b.compact()
            })
            .collect()
    }
}

/// Computes the rows of `table` as `u` leaves them (reading what the
/// statement's write transaction sees). `relation` is what they are read
/// from: the table (with its alias), or the table joined to rows an
/// `ON CONFLICT DO UPDATE` refers to as `excluded`; `qualifier` names the
/// table there.
pub(crate) fn updated_rows(
    ctx: &QueryContext,
    u: &Update,
    schema: &Schema,
    table: &str,
    (relation, qualifier): (&str, &str),
    params: Option<Vec<Value>>,
) -> KuraResult<Updated> {
    // The new value of each assigned column, by position in the table.
    let mut assigned: Vec<Option<&sqlparser::ast::Expr>> = vec![None; schema.len()];
    for a in &u.assignments {
        let AssignmentTarget::ColumnName(name) = &a.target else {
            return Err(KuraError::Unsupported(
                "UPDATE ... SET (a, b) = (...)".into(),
            ));
        };
        let column = object_name(name);
        let pos = schema.index_of(&column).ok_or_else(|| {
            KuraError::UndefinedColumn(format!(
                "column \"{column}\" of relation \"{table}\" does not exist"
            ))
        })?;
        if assigned[pos].replace(&a.value).is_some() {
            return Err(KuraError::Syntax(format!(
                "multiple assignments to same column \"{column}\""
            )));
        }
    }
    let hit = match &u.selection {
        Some(cond) => format!("(({cond}) IS TRUE)"),
        None => "TRUE".to_string(),
    };
    // Every column as it is, then each new value — computed only where the
    // row is changed (CASE), so `SET x = 1 / y WHERE y <> 0` raises nothing
    // — then whether the row is changed.
    let mut items: Vec<String> = schema
        .columns
        .iter()
        .map(|c| format!("{qualifier}.{}", quote_ident(&c.name)))
        .collect();
    for value in assigned.iter().flatten() {
        items.push(format!("CASE WHEN {hit} THEN ({value}) END"));
    }
    items.push(hit);
    let sql = format!("SELECT {} FROM {relation}", items.join(", "));
    let batches = run_query(ctx, &sql, params)?;
    let width = schema.len();
    let mut changed = 0u64;
    let mut rows = Vec::with_capacity(batches.len());
    let mut hit_rows = Vec::with_capacity(batches.len());
    for b in batches {
        let b = b.compact();
        let hits = &b.columns[b.columns.len() - 1];
        let hit_at: Vec<bool> = (0..b.len())
            .map(|i| matches!(hits.get_value(i), Value::Boolean(true)))
            .collect();
        changed += hit_at.iter().filter(|h| **h).count() as u64;
        let mut next_value = width;
        let mut columns = Vec::with_capacity(width);
        for (pos, c) in schema.columns.iter().enumerate() {
            let old = &b.columns[pos];
            if assigned[pos].is_none() {
                columns.push(old.clone());
                continue;
            }
            let new = assign_vector(&b.columns[next_value], c.data_type)?;
            next_value += 1;
            columns.push(merge(old, &new, &hit_at, c.data_type));
        }
        rows.push(Batch::new(columns));
        hit_rows.push(hit_at);
    }
    Ok(Updated {
        batches: rows,
        changed,
        hits: hit_rows,
    })
}

/// `DELETE FROM t [AS a] [WHERE cond]`.
pub(crate) fn delete(
    ctx: &QueryContext,
    d: &Delete,
    params: Option<Vec<Value>>,
) -> KuraResult<QueryResult> {
    if d.using.is_some() || d.limit.is_some() || !d.order_by.is_empty() {
        return Err(KuraError::Unsupported(
            "DELETE with USING, ORDER BY or LIMIT".into(),
        ));
    }
    let refused: [(bool, &str); 3] = [
        (
            !d.optimizer_hints.is_empty(),
            "DELETE /*+ optimizer hints */",
        ),
        (
            !d.tables.is_empty(),
            "DELETE t FROM … (MySQL's multi-table DELETE)",
        ),
        (
            d.output.is_some(),
            "DELETE … OUTPUT (RETURNING is PostgreSQL's)",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|(present, _)| *present) {
        return Err(KuraError::Unsupported((*what).into()));
    }
    if matches!(d.from, FromTable::WithoutKeyword(_)) {
        return Err(KuraError::Syntax("DELETE without FROM".into()));
    }
    let (table, relation, alias) = single_table(delete_target(d)?, "DELETE")?;
    let returning = d.returning.as_deref().map(|items| Returning {
        items,
        table: &table,
        alias: alias.clone(),
    });
    ctx.tx.for_table(&table).write(|txn| {
        let before = ctx.tx.table(&table).map(|t| t.row_count()).unwrap_or(0);
        let cond = d
            .selection
            .as_ref()
            .map_or("TRUE".to_string(), |c| c.to_string());
        // The rows removed, read before they go, for RETURNING.
        let removed = match &returning {
            Some(_) => {
                let sql = format!("SELECT * FROM {relation} WHERE (({cond}) IS TRUE)");
                run_query(ctx, &sql, params.clone())?
            }
            None => Vec::new(),
        };
        let deleted = if d.selection.is_none() {
            txn.truncate(&table)?;
            after_write(ctx, txn, &table, Change::Removed)?;
            before
        } else {
            // The rows that stay: those for which the condition is not true.
            let sql = format!("SELECT * FROM {relation} WHERE (({cond}) IS NOT TRUE)");
            let kept = run_query(ctx, &sql, params.clone())?;
            let left: u64 = kept.iter().map(|b| b.len() as u64).sum();
            replace_rows(txn, &table, &kept)?;
            after_write(ctx, txn, &table, Change::Removed)?;
            before - left
        };
        let tag = format!("DELETE {deleted}");
        match &returning {
            None => Ok(QueryResult::command(tag)),
            Some(r) => {
                let schema = schema_of(ctx, &table)?;
                r.result(ctx, &schema, removed, params, tag)
            }
        }
    })
}

/// `TRUNCATE [TABLE] a, b`.
pub(crate) fn truncate(ctx: &QueryContext, t: &Truncate) -> KuraResult<QueryResult> {
    if matches!(t.cascade, Some(sqlparser::ast::CascadeOption::Cascade)) {
        return Err(KuraError::Unsupported(
            "TRUNCATE … CASCADE (truncate the referencing tables in the same statement)".into(),
        ));
    }
    if t.partitions.is_some() || t.on_cluster.is_some() {
        return Err(KuraError::Unsupported(
            "TRUNCATE … PARTITION / ON CLUSTER".into(),
        ));
    }
    let names: Vec<String> = t.table_names.iter().map(|n| object_name(&n.name)).collect();
    // Temporary tables are truncated in the session's private storage: both
    // kinds at once would need its commit and the database's to be one.
    let temp = names.iter().find(|n| ctx.tx.is_temp(n));
    let permanent = names
        .iter()
        .any(|n| !ctx.tx.is_temp(n) && ctx.tx.catalog().table(n).is_some());
    if temp.is_some() && permanent {
        return Err(KuraError::Unsupported(
            "TRUNCATE of temporary and permanent tables in one statement".into(),
        ));
    }
    let tx = match temp {
        Some(_) => crate::temp::ddl_tx(&ctx.tx, "TRUNCATE TABLE")?,
        None => ctx.tx,
    };
    tx.write(|txn| {
        for name in &names {
            if !txn.has_table(name) {
                if t.if_exists {
                    continue;
                }
                return Err(kura_storage::StorageError::NoSuchTable(name.clone()).into());
            }
            txn.truncate(name)?;
        }
        // Checked once all are empty: a table and those referencing it may
        // be truncated together.
        for name in &names {
            if txn.has_table(name) {
                after_write(ctx, txn, name, Change::Removed)?;
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command("TRUNCATE TABLE"))
}

/// The table an UPDATE or DELETE changes, its FROM text (with alias), and
/// the alias.
fn single_table(t: &TableWithJoins, what: &str) -> KuraResult<(String, String, Option<String>)> {
    if !t.joins.is_empty() {
        return Err(KuraError::Unsupported(format!("{what} over a join")));
    }
    match &t.relation {
        TableFactor::Table {
            sample: Some(_), ..
        } => Err(KuraError::Unsupported(format!("{what} with TABLESAMPLE"))),
        TableFactor::Table { name, alias, .. } => {
            let table = object_name(name);
            let relation = match alias {
                Some(a) => format!("{} AS {}", quote_ident(&table), a.name),
                None => quote_ident(&table),
            };
            Ok((table, relation, alias.as_ref().map(|a| a.name.to_string())))
        }
        other => Err(KuraError::Unsupported(format!("{what} of {other}"))),
    }
}

/// The schema of the table an UPDATE changes (a view has no table entry: a
/// name belongs to one relation only, so it is reported as missing here).
fn schema_of(ctx: &QueryContext, table: &str) -> KuraResult<Schema> {
    let t = ctx
        .tx
        .table(table)
        .ok_or_else(|| KuraError::Storage(kura_storage::StorageError::NoSuchTable(table.into())))?;
    Ok(t.schema().clone())
}

fn run_query(ctx: &QueryContext, sql: &str, params: Option<Vec<Value>>) -> KuraResult<Vec<Batch>> {
    ctx.run_sql(sql, params, None)
}

/// Replaces the rows of `table` by `rows` in the write transaction.
pub(crate) fn replace_rows(txn: &mut WriteTxn, table: &str, rows: &[Batch]) -> KuraResult<()> {
    txn.truncate(table)?;
    for b in rows {
        if !b.is_empty() {
            txn.append(table, b)?;
        }
    }
    Ok(())
}

/// `new` where `hit`, else `old`.
fn merge(old: &Vector, new: &Vector, hit: &[bool], data_type: DataType) -> Vector {
    let mut out = Vector::new(data_type, old.len());
    for (i, h) in hit.iter().enumerate() {
        out.push_value(&if *h {
            new.get_value(i)
        } else {
            old.get_value(i)
        });
    }
    out
}
