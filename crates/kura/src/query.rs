//! Statements beyond DDL, COPY and settings — queries, EXPLAIN [ANALYZE], INSERT,
//! CREATE TABLE AS, CREATE VIEW — planned by kura-sql over the storage catalog and
//! run by kura-exec; plus describing and running statements with `$n` parameters.

use std::time::Instant;

use sqlparser::ast::{Query, Statement};

use kura_common::{Batch, DataType, Value, Vector};
use kura_exec::expr::assign_vector;
use kura_sql::describe_query;

use crate::error::{KuraError, KuraResult};
use crate::names::object_name;
use crate::query_context::{exec_error, sql_error, QueryContext};
use crate::result::{QueryResult, ResultColumn};
use crate::returning::returning_columns;
use crate::txn::Tx;

pub(crate) fn run_statement(ctx: &QueryContext, stmt: &Statement) -> KuraResult<QueryResult> {
    run(ctx, stmt, None)
}

/// Runs a statement whose `$n` placeholders take `params`.
#[allow(dead_code)]
pub(crate) fn run_statement_with_params(
    ctx: &QueryContext,
    stmt: &Statement,
    params: &[Value],
) -> KuraResult<QueryResult> {
    run(ctx, stmt, Some(params.to_vec()))
}

/// Parameter types and result columns of a statement, without running it.
#[allow(dead_code)]
pub(crate) fn describe(
    ctx: &QueryContext,
    stmt: &Statement,
) -> KuraResult<(Vec<DataType>, Vec<ResultColumn>)> {
    match stmt {
        Statement::Query(q) => {
            let (params, cols) = describe_query(&ctx.catalog(), q).map_err(sql_error)?;
            Ok((
                params,
                cols.into_iter()
                    .map(|(name, data_type)| ResultColumn { name, data_type })
                    .collect(),
            ))
        }
        Statement::Explain { .. } => Ok((
            Vec::new(),
            vec![ResultColumn {
                name: "QUERY PLAN".into(),
                data_type: DataType::Varchar(None),
            }],
        )),
        Statement::Insert(ins) => {
            let params = match &ins.source {
                Some(q) => describe_query(&ctx.catalog(), q).map_err(sql_error)?.0,
                None => Vec::new(),
            };
            let columns = match (&ins.returning, &ins.table) {
                (Some(items), sqlparser::ast::TableObject::TableName(n)) => {
                    let table = object_name(n);
                    let returning = crate::returning::Returning {
                        items,
                        table: &table,
                        alias: ins.table_alias.as_ref().map(|a| a.alias.to_string()),
                    };
                    returning_columns(ctx, &returning)?
                }
                _ => Vec::new(),
            };
            Ok((params, columns))
        }
        Statement::Update(u) => Ok((Vec::new(), crate::dml::returning_columns_of_update(ctx, u)?)),
        Statement::Delete(d) => Ok((Vec::new(), crate::dml::returning_columns_of_delete(ctx, d)?)),
        _ => Ok((Vec::new(), Vec::new())),
    }
}

/// Runs a statement; a query's rows go to `sink` as they are produced, any
/// other statement answers as [`run_statement`] does.
pub(crate) fn run_streaming(
    ctx: &QueryContext,
    stmt: &Statement,
    params: Option<Vec<Value>>,
    sink: &mut dyn crate::result::RowSink,
) -> KuraResult<QueryResult> {
    match stmt {
        Statement::Query(q) if !q.locks.is_empty() => {
            locking(ctx, q, || ctx.query_streaming(q, params, sink))
        }
        Statement::Query(q) => ctx.query_streaming(q, params, sink),
        other => run(ctx, other, params),
    }
}

/// Refuses the parts of an INSERT kura does not implement (ON CONFLICT DO
/// UPDATE is refused by `on_conflict`), and `DEFAULT VALUES` with a column list.
fn check_insert_clauses(ins: &sqlparser::ast::Insert) -> KuraResult<()> {
    let refused: [(bool, &str); 7] = [
        (
            ins.or.is_some() || ins.ignore || ins.replace_into,
            "INSERT OR …/IGNORE/REPLACE",
        ),
        (
            ins.overwrite || ins.partitioned.is_some(),
            "INSERT OVERWRITE/PARTITION",
        ),
        (!ins.after_columns.is_empty(), "INSERT … PARTITION columns"),
        (ins.output.is_some(), "INSERT … OUTPUT"),
        (ins.insert_alias.is_some(), "INSERT … AS alias (MySQL's)"),
        (
            ins.settings.is_some() || ins.format_clause.is_some(),
            "INSERT … SETTINGS/FORMAT",
        ),
        (
            !ins.assignments.is_empty()
                || !ins.optimizer_hints.is_empty()
                || ins.priority.is_some(),
            "INSERT … SET / hints / priority",
        ),
    ];
    if let Some((_, what)) = refused.iter().find(|(present, _)| *present) {
        return Err(KuraError::Unsupported((*what).into()));
    }
    if ins.multi_table_insert_type.is_some()
        || !ins.multi_table_into_clauses.is_empty()
        || !ins.multi_table_when_clauses.is_empty()
        || ins.multi_table_else_clause.is_some()
    {
        return Err(KuraError::Unsupported("multi-table INSERT".into()));
    }
    // Other dialects' spellings PostgreSQL's grammar does not have.
    if !ins.into {
        return Err(KuraError::Syntax("INSERT without INTO".into()));
    }
    if ins.has_table_keyword {
        return Err(KuraError::Syntax("INSERT INTO TABLE (Hive's)".into()));
    }
    if ins.source.is_none() && !ins.columns.is_empty() {
        return Err(KuraError::Syntax(
            "DEFAULT VALUES takes no column list".into(),
        ));
    }
    Ok(())
}

/// `SELECT … FOR UPDATE/SHARE`: inside a transaction the query takes the
/// write transaction, so no other session changes a row until this one ends
/// (kura has one writer at a time: every row is locked, not only those read).
/// In autocommit the lock would end with the statement, as in PostgreSQL.
fn locking(
    ctx: &QueryContext,
    q: &sqlparser::ast::Query,
    query: impl FnOnce() -> KuraResult<QueryResult>,
) -> KuraResult<QueryResult> {
    if let Some(nonblock) = q.locks.iter().find_map(|l| l.nonblock.as_ref()) {
        return Err(KuraError::Unsupported(format!(
            "FOR UPDATE/SHARE {nonblock}"
        )));
    }
    if ctx.tx.in_block() {
        ctx.tx.write(|_| query())
    } else {
        query()
    }
}

fn run(
    ctx: &QueryContext,
    stmt: &Statement,
    params: Option<Vec<Value>>,
) -> KuraResult<QueryResult> {
    crate::temp::refuse_unsupported(stmt)?;
    match stmt {
        Statement::Query(q) if !q.locks.is_empty() => locking(ctx, q, || ctx.query(q, params)),
        Statement::Query(q) => ctx.query(q, params),
        Statement::Explain {
            statement, analyze, ..
        } => explain(ctx, statement, *analyze, params),
        Statement::Insert(ins) => {
            let table = match &ins.table {
                sqlparser::ast::TableObject::TableName(n) => object_name(n),
                other => return Err(KuraError::Unsupported(format!("INSERT INTO {other}"))),
            };
            check_insert_clauses(ins)?;
            let columns: Vec<String> = ins.columns.iter().map(object_name).collect();
            let returning = ins
                .returning
                .as_deref()
                .map(|items| crate::returning::Returning {
                    items,
                    table: &table,
                    alias: ins.table_alias.as_ref().map(|a| a.alias.to_string()),
                });
            let updates = matches!(
                &ins.on,
                Some(sqlparser::ast::OnInsert::OnConflict(
                    sqlparser::ast::OnConflict {
                        action: sqlparser::ast::OnConflictAction::DoUpdate(_),
                        ..
                    }
                ))
            );
            if updates && ins.returning.is_some() {
                return Err(KuraError::Unsupported(
                    "RETURNING with ON CONFLICT DO UPDATE".into(),
                ));
            }
            let what = InsertStatement {
                table: &table,
                alias: ins
                    .table_alias
                    .as_ref()
                    .map(|a| crate::names::ident(&a.alias)),
                columns: &columns,
                source: ins.source.as_deref(),
                on_conflict: ins.on.as_ref(),
            };
            insert(
                ctx,
                &what,
                params,
                returning.as_ref(),
                crate::txn::appends_only(stmt),
            )
        }
        Statement::Update(u) => crate::dml::update(ctx, u, params),
        Statement::Delete(d) => crate::dml::delete(ctx, d, params),
        Statement::Truncate(t) => crate::dml::truncate(ctx, t),
        Statement::Analyze(a) => crate::ddl::analyze(&ctx.tx, a),
        Statement::CreateTable(ct) if ct.query.is_some() => {
            crate::table_rules::check_clauses(ct)?;
            let q = ct
                .query
                .as_ref()
                .ok_or_else(|| KuraError::Internal("CTAS without query".into()))?;
            // CREATE TEMP TABLE ... AS writes the session's private storage.
            let tx = match ct.temporary {
                true => crate::temp::create_tx(&ctx.tx)?,
                false => ctx.tx,
            };
            let with_data = ct.with_data.is_none_or(|w| w.data);
            let name = object_name(&ct.name);
            create_table_as(ctx, &tx, &name, q, ct.if_not_exists, with_data)
        }
        Statement::CreateView(v) => {
            if v.materialized {
                return Err(KuraError::Unsupported("materialized views".into()));
            }
            let name = object_name(&v.name);
            // Binding now reports errors in the definition at CREATE time.
            let catalog = ctx.catalog();
            describe_query(&catalog, &v.query).map_err(sql_error)?;
            if catalog.used_temp.get() {
                // PostgreSQL makes such a view temporary; kura has none.
                return Err(KuraError::Unsupported(
                    "a view over a temporary table (temporary views)".into(),
                ));
            }
            let columns = v
                .columns
                .iter()
                .map(|c| crate::names::ident(&c.name))
                .collect();
            ctx.tx.write(|txn| {
                if v.or_replace && txn.has_view(&name) {
                    txn.drop_view(&name)?;
                }
                Ok(txn.create_view(&name, &v.query.to_string(), columns)?)
            })?;
            Ok(QueryResult::command("CREATE VIEW"))
        }
        other => Err(KuraError::Unsupported(format!("statement: {other}"))),
    }
}

fn explain(
    ctx: &QueryContext,
    stmt: &Statement,
    analyze: bool,
    params: Option<Vec<Value>>,
) -> KuraResult<QueryResult> {
    let Statement::Query(q) = stmt else {
        return Err(KuraError::Unsupported(
            "EXPLAIN of anything but a query".into(),
        ));
    };
    let planned = ctx.plan(q, params)?;
    let lines = if analyze {
        let exec = ctx.exec_context();
        let bm = ctx.storage.buffer();
        let io0 = bm.stats();
        let t0 = Instant::now();
        let batches = ctx.execute(&planned, &exec)?;
        let elapsed = t0.elapsed();
        let rows: usize = batches.iter().map(|b| b.len()).sum();
        let mut lines = planned.plan.explain(Some(&exec.stats()));
        lines.push(format!(
            "Execution time: {:.3} ms, {rows} rows, peak memory {} bytes",
            elapsed.as_secs_f64() * 1e3,
            exec.memory.peak()
        ));
        // Only with a second tier, so plans without one read as before.
        if bm.tier_config().is_some() {
            let d = bm.stats().since(&io0);
            lines.push(format!(
                "Buffer: {} fixes, {} pool hits, {} tier hits, {} tier misses, {} disk reads, \
                 {} demotions; tier holds {} pages in {} bytes",
                d.fixes,
                d.hits,
                d.tier_hits,
                d.tier_misses,
                d.pages_read,
                d.tier_demotions,
                d.tier_pages,
                d.tier_bytes
            ));
        }
        lines
    } else {
        planned.plan.explain(None)
    };
    let values: Vec<Value> = lines.into_iter().map(Value::Text).collect();
    let v = Vector::from_values(DataType::Varchar(None), &values)
        .ok_or_else(|| KuraError::Internal("plan text".into()))?;
    Ok(QueryResult::rows_of(
        vec![ResultColumn {
            name: "QUERY PLAN".into(),
            data_type: DataType::Varchar(None),
        }],
        vec![Batch::new(vec![v])],
    ))
}

/// Converts query output to the target column types (NULL for columns not given).
/// A batch of the source's columns as a batch of the table's: each column
/// converted to the table's type, those the source leaves out filled with
/// `fill` (their DEFAULT, or NULL).
fn conform(
    batch: &Batch,
    targets: &[(Option<usize>, DataType)],
    fill: &[Value],
) -> KuraResult<Batch> {
    let n = batch.len();
    let batch = batch.clone().compact();
    let cols = targets
        .iter()
        .zip(fill)
        .map(|((src, ty), value)| match src {
            Some(i) => assign_vector(&batch.columns[*i], *ty).map_err(exec_error),
            None => {
                let mut v = Vector::new(*ty, n);
                for _ in 0..n {
                    if !v.push_value(value) {
                        return Err(KuraError::Internal(format!(
                            "default {value} does not fit type {ty}"
                        )));
                    }
                }
                Ok(v)
            }
        })
        .collect::<KuraResult<Vec<_>>>()?;
    Ok(Batch::new(cols))
}

/// What an INSERT writes: the table, the columns it names, its rows (none
/// for `DEFAULT VALUES`) and its `ON CONFLICT` clause.
struct InsertStatement<'q> {
    table: &'q str,
    alias: Option<String>,
    columns: &'q [String],
    source: Option<&'q Query>,
    on_conflict: Option<&'q sqlparser::ast::OnInsert>,
}

fn insert(
    ctx: &QueryContext,
    what: &InsertStatement,
    params: Option<Vec<Value>>,
    returning: Option<&crate::returning::Returning>,
    appends_only: bool,
) -> KuraResult<QueryResult> {
    let table = what.table;
    // The rows are computed while the write transaction is held: the
    // statement reads what it writes next to, even after waiting for it.
    let tx = ctx.tx.for_table(table);
    let write = |txn: &mut kura_storage::WriteTxn| {
        let keep = returning.is_some();
        let (rows, written) = insert_in(ctx, txn, what, params.clone(), keep)?;
        let tag = format!("INSERT 0 {rows}");
        match returning {
            None => Ok(QueryResult::command(tag)),
            Some(r) => {
                let schema = txn
                    .schema(table)
                    .cloned()
                    .ok_or_else(|| KuraError::Internal("inserted table gone".into()))?;
                r.result(ctx, &schema, written, params, tag)
            }
        }
    };
    match appends_only {
        true => tx.append_rows(write),
        false => tx.write(write),
    }
}

fn insert_in(
    ctx: &QueryContext,
    txn: &mut kura_storage::WriteTxn,
    what: &InsertStatement,
    params: Option<Vec<Value>>,
    keep_rows: bool,
) -> KuraResult<(u64, Vec<Batch>)> {
    let (table, columns, source) = (what.table, what.columns, what.source);
    let t = ctx
        .tx
        .table(table)
        .ok_or_else(|| KuraError::Storage(kura_storage::StorageError::NoSuchTable(table.into())))?;
    let schema = t.schema().clone();
    let rules = txn.rules(table).cloned();
    // The table column each position of the source fills.
    let mut positions: Vec<usize> = Vec::with_capacity(columns.len());
    for c in columns {
        let pos = schema.index_of(c).ok_or_else(|| {
            KuraError::UndefinedColumn(format!(
                "column \"{c}\" of relation \"{table}\" does not exist"
            ))
        })?;
        if positions.contains(&pos) {
            return Err(KuraError::State {
                sqlstate: "42701",
                message: format!("column \"{c}\" specified more than once"),
            });
        }
        positions.push(pos);
    }
    if columns.is_empty() {
        positions = (0..schema.columns.len()).collect();
    }
    // `DEFAULT VALUES` is one row of `DEFAULT`s.
    let all_defaults;
    let source = match source {
        Some(q) => q,
        None => {
            let row = vec!["DEFAULT"; positions.len()].join(", ");
            all_defaults = match crate::parsing::parse(&format!("VALUES ({row})"))?.pop() {
                Some(Statement::Query(q)) => *q,
                _ => return Err(KuraError::Internal("DEFAULT VALUES".into())),
            };
            &all_defaults
        }
    };
    if !ctx.copying {
        crate::enforce::refuse_identity_values(txn, table, source, &positions, &schema)?;
    }
    let rewritten =
        crate::enforce::replace_default_keywords(source, &positions, &schema, rules.as_ref())?;
    let width = positions.len();
    let source = rewritten.as_ref().unwrap_or(source);
    // Columns left out whose DEFAULT draws on a sequence get a value per
    // row: the defaults become extra columns of the source.
    let per_row = crate::enforce::per_row_defaults(&positions, &schema, rules.as_ref());
    let wrapped;
    let source = if per_row.is_empty() {
        source
    } else {
        wrapped = crate::enforce::with_row_defaults(source, &per_row, &schema, rules.as_ref())?;
        positions.extend(per_row.iter().copied());
        &wrapped
    };
    let planned = ctx.plan(source, params)?;
    if planned.columns.len() != positions.len() {
        // PostgreSQL's wording (SQLSTATE 42601).
        let which = if planned.columns.len() > width {
            "more expressions than target columns"
        } else {
            "more target columns than expressions"
        };
        return Err(KuraError::Syntax(format!("INSERT has {which}")));
    }
    let mut targets: Vec<(Option<usize>, DataType)> =
        schema.columns.iter().map(|c| (None, c.data_type)).collect();
    for (i, &pos) in positions.iter().enumerate() {
        targets[pos].0 = Some(i);
    }
    // Columns left out get their DEFAULT (computed only when one is).
    let fill = if positions.len() < schema.columns.len() {
        crate::enforce::default_values(ctx, &schema, rules.as_ref())?
    } else {
        vec![Value::Null; schema.columns.len()]
    };
    let mut skip =
        crate::on_conflict::ConflictSkip::new(what.on_conflict, table, &schema, rules.as_ref())?;
    if let Some(s) = skip.as_mut() {
        s.read_present(ctx, txn, table, &schema)?;
    }
    let batches = ctx.execute(&planned, &ctx.exec_context())?;
    let mut rows = 0u64;
    let mut written = Vec::new();
    let mut inserts = Vec::with_capacity(batches.len());
    for b in &batches {
        if !b.is_empty() {
            let row_batch = conform(b, &targets, &fill)?;
            let row_batch = match skip.as_mut() {
                Some(s) => s.keep(&row_batch)?,
                None => row_batch,
            };
            if !row_batch.is_empty() {
                inserts.push(row_batch);
            }
        }
    }
    // ON CONFLICT DO UPDATE rewrites the table before the new rows join it.
    let mut change = crate::enforce::Change::Added;
    if let Some(s) = &skip {
        let updated = s.apply_updates(ctx, txn, table, what.alias.as_deref(), &schema)?;
        if updated > 0 {
            rows += updated;
            change = crate::enforce::Change::Changed;
        }
    }
    for row_batch in inserts {
        rows += txn.append(table, &row_batch)?;
        if keep_rows {
            written.push(row_batch);
        }
    }
    crate::enforce::after_write(ctx, txn, table, change)?;
    Ok((rows, written))
}

fn create_table_as(
    ctx: &QueryContext,
    tx: &Tx,
    name: &str,
    q: &Query,
    if_not_exists: bool,
    with_data: bool,
) -> KuraResult<QueryResult> {
    let rows = tx.write(|txn| {
        if if_not_exists && txn.relation_exists(name) {
            return Ok(None);
        }
        create_table_as_in(ctx, txn, name, q, with_data).map(Some)
    })?;
    Ok(QueryResult::command(match rows {
        Some(rows) if with_data => format!("SELECT {rows}"),
        // PostgreSQL's tag for WITH NO DATA, and for a table that was there.
        _ => "CREATE TABLE AS".to_string(),
    }))
}

fn create_table_as_in(
    ctx: &QueryContext,
    txn: &mut kura_storage::WriteTxn,
    name: &str,
    q: &Query,
    with_data: bool,
) -> KuraResult<u64> {
    let planned = ctx.plan(q, None)?;
    if let Some((n, t)) = planned.columns.iter().find(|(_, t)| t.is_array()) {
        return Err(KuraError::Unsupported(format!(
            "array column \"{n}\" of type {t} (tables cannot store arrays yet)"
        )));
    }
    // WITH NO DATA: the query's columns only; it is not run (as in PostgreSQL).
    let batches = match with_data {
        true => ctx.execute(&planned, &ctx.exec_context())?,
        false => Vec::new(),
    };
    let schema = kura_storage::Schema::new(
        planned
            .columns
            .iter()
            .map(|(n, t)| kura_storage::ColumnDef {
                name: n.clone(),
                data_type: *t,
                nullable: true,
            })
            .collect(),
    );
    let targets: Vec<(Option<usize>, DataType)> = planned
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (Some(i), c.1))
        .collect();
    txn.create_table(name, schema)?;
    let mut rows = 0u64;
    for b in &batches {
        if !b.is_empty() {
            let nulls = vec![Value::Null; targets.len()];
            rows += txn.append(name, &conform(b, &targets, &nulls)?)?;
        }
    }
    Ok(rows)
}
