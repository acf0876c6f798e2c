//! Keeping a table's rules while it is written: DEFAULT values for the
//! columns an INSERT leaves out, and — at the end of every statement that
//! changed a table — its CHECK constraints and the FOREIGN KEYs from and to
//! it, checked by queries over the transaction's own view of the data
//! (PRIMARY KEY and UNIQUE are checked by storage when their indexes are
//! rebuilt). The checks read whole tables: a bulk load is checked once, in
//! bulk, not row by row.

use std::sync::Arc;

use sqlparser::ast::{self, Expr, Query, SetExpr, Statement};

use kura_common::{Batch, Value};
use kura_exec::expr::assign_vector;
use kura_storage::rules::{ForeignKey, TableRules};
use kura_storage::{Catalog, Schema, WriteTxn};

use crate::error::{KuraError, KuraResult};
use crate::names::quote_ident;
use crate::query_context::QueryContext;

/// The value each column of `schema` gets when an INSERT leaves it out: its
/// DEFAULT evaluated once for the statement (kura's `now()` and the like are
/// constant within a statement), converted to the column's type; else NULL.
pub(crate) fn default_values(
    ctx: &QueryContext,
    schema: &Schema,
    rules: Option<&TableRules>,
) -> KuraResult<Vec<Value>> {
    schema
        .columns
        .iter()
        .map(|c| match rules.and_then(|r| r.default_of(&c.name)) {
            None => Ok(Value::Null),
            // Drawn per row by the source (`with_row_defaults`).
            Some(sql) if differs_per_row(sql) => Ok(Value::Null),
            Some(sql) => {
                let batches = ctx.run_sql(&format!("SELECT {sql}"), None, None)?;
                let b = batches
                    .into_iter()
                    .find(|b| !b.is_empty())
                    .ok_or_else(|| KuraError::Internal(format!("DEFAULT {sql} gave no row")))?
                    .compact();
                let v = assign_vector(&b.columns[0], c.data_type).map_err(KuraError::from)?;
                Ok(v.get_value(0))
            }
        })
        .collect()
}

/// Whether a DEFAULT differs from row to row: it draws on a sequence or
/// calls a volatile function (`random()`, `gen_random_uuid()`,
/// `clock_timestamp()`), which PostgreSQL evaluates for each row.
fn differs_per_row(sql: &str) -> bool {
    !crate::sequences::sequences_used(sql).is_empty() || calls_volatile(sql)
}

/// Whether `sql` calls a function whose every call gives a new value.
fn calls_volatile(sql: &str) -> bool {
    use std::ops::ControlFlow;
    let Ok(stmts) = crate::parsing::parse(&format!("SELECT {sql}")) else {
        return false;
    };
    ast::visit_expressions(&stmts, |e| match e {
        Expr::Function(f)
            if f.name.0.last().is_some_and(|p| {
                let name = p.to_string().to_ascii_lowercase();
                matches!(
                    name.as_str(),
                    "random" | "gen_random_uuid" | "clock_timestamp"
                )
            }) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The table columns an INSERT leaves out (`positions` are those it fills)
/// whose DEFAULT differs from row to row.
pub(crate) fn per_row_defaults(
    positions: &[usize],
    schema: &Schema,
    rules: Option<&TableRules>,
) -> Vec<usize> {
    (0..schema.columns.len())
        .filter(|i| !positions.contains(i))
        .filter(|&i| {
            rules
                .and_then(|r| r.default_of(&schema.columns[i].name))
                .is_some_and(differs_per_row)
        })
        .collect()
}

/// `SELECT s.*, default… FROM (source) AS s`: the source with the DEFAULTs
/// of columns `extra` appended, evaluated once per row.
pub(crate) fn with_row_defaults(
    source: &Query,
    extra: &[usize],
    schema: &Schema,
    rules: Option<&TableRules>,
) -> KuraResult<Query> {
    let defaults: Vec<String> = extra
        .iter()
        .map(|&i| {
            let c = &schema.columns[i];
            let sql = rules.and_then(|r| r.default_of(&c.name)).unwrap_or("NULL");
            format!("CAST(({sql}) AS {})", sql_type(c.data_type))
        })
        .collect();
    let sql = format!(
        "SELECT __kura_source.*, {} FROM ({source}) AS __kura_source",
        defaults.join(", ")
    );
    match crate::parsing::parse(&sql)?.pop() {
        Some(Statement::Query(q)) => Ok(*q),
        _ => Err(KuraError::Internal(format!("not a query: {sql}"))),
    }
}

/// Refuses a value for a `GENERATED ALWAYS AS IDENTITY` column (428C9), as
/// PostgreSQL does: only `DEFAULT` may be written there.
pub(crate) fn refuse_identity_values(
    txn: &WriteTxn,
    table: &str,
    source: &Query,
    positions: &[usize],
    schema: &Schema,
) -> KuraResult<()> {
    use kura_storage::sequence::Identity;
    let is_default = |e: &Expr| matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"));
    for seq in txn.sequences() {
        let Some(owner) = &seq.def.owned_by else {
            continue;
        };
        if seq.def.identity != Some(Identity::Always) || owner.table != table {
            continue;
        }
        let Some(k) = positions
            .iter()
            .position(|&p| schema.columns[p].name == owner.column)
        else {
            continue;
        };
        let all_default = match &*source.body {
            SetExpr::Values(v) => v
                .rows
                .iter()
                .all(|r| r.content.get(k).is_some_and(is_default)),
            _ => false,
        };
        if !all_default {
            return Err(KuraError::State {
                sqlstate: "428C9",
                message: format!(
                    "cannot insert a non-DEFAULT value into column \"{}\": it is an identity \
                     column defined as GENERATED ALWAYS",
                    owner.column
                ),
            });
        }
    }
    Ok(())
}

/// Refuses an UPDATE of a `GENERATED ALWAYS AS IDENTITY` column (428C9).
pub(crate) fn refuse_identity_update(
    txn: &WriteTxn,
    table: &str,
    u: &sqlparser::ast::Update,
) -> KuraResult<()> {
    use kura_storage::sequence::Identity;
    for a in &u.assignments {
        let ast::AssignmentTarget::ColumnName(name) = &a.target else {
            continue;
        };
        let column = crate::names::object_name(name);
        let always = txn.sequences().any(|s| {
            s.def.identity == Some(Identity::Always)
                && s.def
                    .owned_by
                    .as_ref()
                    .is_some_and(|o| o.table == table && o.column == column)
        });
        if always {
            return Err(KuraError::State {
                sqlstate: "428C9",
                message: format!("column \"{column}\" can only be updated to DEFAULT"),
            });
        }
    }
    Ok(())
}

/// `source` with every `DEFAULT` written as a value of a VALUES list replaced
/// by the column's default (`targets[i]` is the table column of position i).
pub(crate) fn replace_default_keywords(
    source: &Query,
    targets: &[usize],
    schema: &Schema,
    rules: Option<&TableRules>,
) -> KuraResult<Option<Query>> {
    let SetExpr::Values(values) = &*source.body else {
        return Ok(None);
    };
    let is_default = |e: &Expr| matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"));
    if !values
        .rows
        .iter()
        .flat_map(|r| r.content.iter())
        .any(is_default)
    {
        return Ok(None);
    }
    let mut q = source.clone();
    let SetExpr::Values(values) = &mut *q.body else {
        unreachable!("checked above")
    };
    for row in &mut values.rows {
        for (i, cell) in row.content.iter_mut().enumerate() {
            if !is_default(cell) {
                continue;
            }
            let Some(&col) = targets.get(i) else {
                continue;
            };
            let c = &schema.columns[col];
            let sql = match rules.and_then(|r| r.default_of(&c.name)) {
                Some(sql) => format!("CAST(({sql}) AS {})", sql_type(c.data_type)),
                None => format!("CAST(NULL AS {})", sql_type(c.data_type)),
            };
            *cell = parse_expr(&sql)?;
        }
    }
    Ok(Some(q))
}

/// A kura type as SQL names it in a CAST.
pub(crate) fn sql_type(t: kura_common::DataType) -> String {
    use kura_common::DataType as T;
    match t {
        T::Varchar(Some(n)) => format!("VARCHAR({n})"),
        T::Varchar(None) => "TEXT".into(),
        T::Char(n) => format!("CHAR({n})"),
        T::Decimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
        T::SmallInt => "SMALLINT".into(),
        T::Integer => "INTEGER".into(),
        T::BigInt => "BIGINT".into(),
        T::Double => "DOUBLE PRECISION".into(),
        T::Boolean => "BOOLEAN".into(),
        T::Date => "DATE".into(),
        T::Timestamp => "TIMESTAMP".into(),
        T::Array(e) => format!("{}[]", sql_type(e.data_type())),
        T::Vector(_) | T::Uuid | T::Bytea | T::Interval | T::Json | T::Jsonb => t.to_string(),
    }
}

fn parse_expr(sql: &str) -> KuraResult<Expr> {
    let stmts = crate::parsing::parse(&format!("SELECT {sql}"))?;
    if let [Statement::Query(q)] = stmts.as_slice() {
        if let SetExpr::Select(s) = &*q.body {
            if let [ast::SelectItem::UnnamedExpr(e)] = s.projection.as_slice() {
                return Ok(e.clone());
            }
        }
    }
    Err(KuraError::Internal(format!("not an expression: {sql}")))
}

/// What a statement did to a table, for choosing the checks it needs.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Change {
    /// Rows were added (INSERT, COPY).
    Added,
    /// Rows were changed (UPDATE).
    Changed,
    /// Rows were removed (DELETE, TRUNCATE).
    Removed,
}

/// Checks the rules a change of `table` could break, over the transaction's
/// view after the change: its CHECKs and foreign keys (rows added or
/// changed), the foreign keys referencing it (rows changed or removed), and
/// — by materializing the view — its PRIMARY KEY and UNIQUE indexes.
pub(crate) fn after_write(
    ctx: &QueryContext,
    txn: &mut WriteTxn,
    table: &str,
    change: Change,
) -> KuraResult<()> {
    let own = txn.rules(table).cloned();
    let referencing = txn.referencing(table);
    let keys = own.as_ref().is_some_and(|r| !r.keys.is_empty());
    let checks = own
        .as_ref()
        .filter(|_| change != Change::Removed)
        .map(|r| (r.checks.clone(), r.foreign_keys.clone()))
        .unwrap_or_default();
    let parents = if change == Change::Added {
        Vec::new()
    } else {
        referencing
    };
    if !keys && checks.0.is_empty() && checks.1.is_empty() && parents.is_empty() {
        return Ok(());
    }
    // Materializing rebuilds the key indexes: a duplicate fails here (23505).
    let view = txn.snapshot()?;
    if !checks.0.is_empty() {
        check_constraints(ctx, &view, table, &checks.0)?;
    }
    for fk in &checks.1 {
        if let Some(key) = missing_reference(ctx, &view, table, fk)? {
            return Err(KuraError::State {
                sqlstate: "23503",
                message: format!(
                    "insert or update on table \"{table}\" violates foreign key constraint \"{}\": \
                     key ({})=({key}) is not present in table \"{}\"",
                    fk.name,
                    fk.columns.join(", "),
                    fk.ref_table
                ),
            });
        }
    }
    for (child, fk) in &parents {
        if let Some(key) = missing_reference(ctx, &view, child, fk)? {
            return Err(KuraError::State {
                sqlstate: "23503",
                message: format!(
                    "update or delete on table \"{table}\" violates foreign key constraint \"{}\" \
                     on table \"{child}\": key ({})=({key}) is still referenced from table \"{child}\"",
                    fk.name,
                    fk.ref_columns.join(", "),
                ),
            });
        }
    }
    Ok(())
}

/// Fails on the first CHECK some row of `table` makes false (NULL passes).
fn check_constraints(
    ctx: &QueryContext,
    view: &Arc<Catalog>,
    table: &str,
    checks: &[kura_storage::rules::CheckConstraint],
) -> KuraResult<()> {
    let items: Vec<String> = checks
        .iter()
        .map(|c| format!("count(*) FILTER (WHERE (({})) IS FALSE)", c.sql))
        .collect();
    let sql = format!("SELECT {} FROM {}", items.join(", "), quote_ident(table));
    let batches = ctx.run_sql(&sql, None, Some(view.clone()))?;
    let row = first_row(&batches);
    for (c, v) in checks.iter().zip(row) {
        if !matches!(v, Value::BigInt(0) | Value::Integer(0) | Value::Null) {
            return Err(KuraError::State {
                sqlstate: "23514",
                message: format!(
                    "new row for relation \"{table}\" violates check constraint \"{}\"",
                    c.name
                ),
            });
        }
    }
    Ok(())
}

/// A key of `child` (all its columns non-NULL) that `fk` says must exist in
/// its referenced table and does not, as text.
fn missing_reference(
    ctx: &QueryContext,
    view: &Arc<Catalog>,
    child: &str,
    fk: &ForeignKey,
) -> KuraResult<Option<String>> {
    let cols: Vec<String> = fk
        .columns
        .iter()
        .map(|c| format!("c.{}", quote_ident(c)))
        .collect();
    let not_null: Vec<String> = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect();
    let equal: Vec<String> = fk
        .ref_columns
        .iter()
        .zip(&cols)
        .map(|(r, c)| format!("p.{} = {c}", quote_ident(r)))
        .collect();
    let sql = format!(
        "SELECT {} FROM {} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {} AS p WHERE {}) LIMIT 1",
        cols.join(", "),
        quote_ident(child),
        not_null.join(" AND "),
        quote_ident(&fk.ref_table),
        equal.join(" AND ")
    );
    let batches = ctx.run_sql(&sql, None, Some(view.clone()))?;
    let row = first_row(&batches);
    if row.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        row.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    ))
}

fn first_row(batches: &[Batch]) -> Vec<Value> {
    batches
        .iter()
        .find(|b| !b.is_empty())
        .map(|b| {
            let b = b.clone().compact();
            b.columns.iter().map(|c| c.get_value(0)).collect()
        })
        .unwrap_or_default()
}
