//! Statements beyond DDL, COPY and settings. Until the SQL engine (kura-sql +
//! kura-exec) is wired in here, this answers the two queries storage needs —
//! `SELECT count(*) FROM t` and `SELECT * FROM t [LIMIT n]` — straight from storage.

use std::sync::Arc;

use sqlparser::ast::{Expr, FunctionArguments, GroupByExpr, LimitClause, SelectItem, SetExpr, Statement, TableFactor};

use kura_common::settings::Settings;
use kura_common::{Batch, DataType, Value, Vector, BATCH_SIZE};
use kura_storage::Storage;

use crate::ddl::object_name;
use crate::error::{KuraError, KuraResult};
use crate::result::{QueryResult, ResultColumn};
use crate::session::CancelHandle;

pub(crate) struct QueryContext<'a> {
    pub storage: &'a Arc<Storage>,
    #[allow(dead_code)]
    pub settings: &'a Settings,
    pub cancel: &'a CancelHandle,
}

pub(crate) fn run_statement(ctx: &QueryContext, stmt: &Statement) -> KuraResult<QueryResult> {
    let unsupported = || KuraError::Unsupported(format!("statement: {stmt}"));
    let Statement::Query(q) = stmt else { return Err(unsupported()) };
    let SetExpr::Select(sel) = q.body.as_ref() else { return Err(unsupported()) };
    if sel.from.len() != 1 || !sel.from[0].joins.is_empty() || sel.selection.is_some() || sel.having.is_some() {
        return Err(unsupported());
    }
    if !matches!(&sel.group_by, GroupByExpr::Expressions(e, _) if e.is_empty()) {
        return Err(unsupported());
    }
    let TableFactor::Table { name, .. } = &sel.from[0].relation else { return Err(unsupported()) };
    let tname = object_name(name);
    let table = ctx
        .storage
        .catalog()
        .table(&tname)
        .ok_or_else(|| KuraError::Storage(kura_storage::StorageError::NoSuchTable(tname.clone())))?;
    let limit = match &q.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset { limit: Some(Expr::Value(v)), offset: None, .. }) => {
            Some(v.value.to_string().parse::<u64>().map_err(|_| unsupported())?)
        }
        Some(_) => return Err(unsupported()),
    };
    match sel.projection.as_slice() {
        [SelectItem::Wildcard(_)] => {
            let schema = table.schema();
            let n = limit.unwrap_or(u64::MAX).min(table.row_count());
            let mut batches = Vec::new();
            let mut row = 0;
            while row < n {
                ctx.cancel.check()?;
                let len = (n - row).min(BATCH_SIZE as u64) as usize;
                let cols = (0..schema.len())
                    .map(|c| table.read_range(c, row, len))
                    .collect::<Result<Vec<_>, _>>()?;
                batches.push(Batch::new(cols));
                row += len as u64;
            }
            let columns = schema
                .columns
                .iter()
                .map(|c| ResultColumn { name: c.name.clone(), data_type: c.data_type })
                .collect();
            Ok(QueryResult::rows_of(columns, batches))
        }
        [SelectItem::UnnamedExpr(Expr::Function(f))]
            if f.name.to_string().eq_ignore_ascii_case("count")
                && matches!(&f.args, FunctionArguments::List(l) if l.args.len() == 1 && l.args[0].to_string() == "*") =>
        {
            let count = if limit == Some(0) { vec![] } else { vec![Value::BigInt(table.row_count() as i64)] };
            let v = Vector::from_values(DataType::BigInt, &count).expect("bigint");
            Ok(QueryResult::rows_of(
                vec![ResultColumn { name: "count".into(), data_type: DataType::BigInt }],
                vec![Batch::new(vec![v])],
            ))
        }
        _ => Err(unsupported()),
    }
}
