//! `DESCRIBE name` and `SHOW TABLES`: the catalog as result rows, so any client (the
//! shell, psql over the wire) can list relations and their columns.

use std::sync::Arc;

use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{Catalog, Table};

use crate::error::{KuraError, KuraResult};
use crate::prepared::Prepared;
use crate::result::{QueryResult, ResultColumn};
use crate::txn::Tx;

const TEXT: DataType = DataType::Varchar(None);

fn text_result(names: &[&str], rows: Vec<Vec<String>>) -> QueryResult {
    let columns: Vec<ResultColumn> = names
        .iter()
        .map(|n| ResultColumn {
            name: n.to_string(),
            data_type: TEXT,
        })
        .collect();
    let vectors = (0..names.len())
        .map(|i| {
            let values: Vec<Value> = rows.iter().map(|r| Value::Text(r[i].clone())).collect();
            Vector::from_values(TEXT, &values).expect("text vector")
        })
        .collect();
    QueryResult::rows_of(columns, vec![Batch::new(vectors)])
}

/// Result columns of `DESCRIBE`.
pub(crate) const DESCRIBE_COLUMNS: [&str; 3] = ["column_name", "column_type", "null"];
/// Result columns of `SHOW TABLES`.
pub(crate) const SHOW_TABLES_COLUMNS: [&str; 2] = ["name", "type"];

pub(crate) fn columns_of(names: &[&str]) -> Vec<ResultColumn> {
    names
        .iter()
        .map(|n| ResultColumn {
            name: n.to_string(),
            data_type: TEXT,
        })
        .collect()
}

/// `DESCRIBE name`: a table's columns with type and nullability, or a view's.
/// `table` is the table `name` names as statements see it (a temporary table
/// first), `catalog` the one they read; `prepare` describes a query's text, as
/// the session prepares a statement (a view's columns are its query's).
pub(crate) fn describe(
    name: &str,
    table: Option<Arc<Table>>,
    catalog: &Catalog,
    prepare: impl FnOnce(&str) -> KuraResult<Prepared>,
) -> KuraResult<QueryResult> {
    if let Some(table) = table {
        let rows = table
            .schema()
            .columns
            .iter()
            .map(|c| {
                let null = if c.nullable { "YES" } else { "NO" };
                vec![c.name.clone(), c.data_type.to_string(), null.to_string()]
            })
            .collect();
        return Ok(text_result(&DESCRIBE_COLUMNS, rows));
    }
    if catalog.view(name).is_some() {
        // A view's column types are what its query binds to.
        let prepared = prepare(&format!("SELECT * FROM \"{name}\""))?;
        let rows = prepared
            .columns
            .iter()
            .map(|c| vec![c.name.clone(), c.data_type.to_string(), "YES".to_string()])
            .collect();
        return Ok(text_result(&DESCRIBE_COLUMNS, rows));
    }
    Err(KuraError::Storage(kura_storage::StorageError::NoSuchTable(
        name.to_string(),
    )))
}

/// `SHOW TABLES`: every table and view, by name.
pub(crate) fn show_tables(tx: &Tx) -> QueryResult {
    let catalog = tx.catalog();
    let temp = tx.temp_catalog();
    let mut rows: Vec<Vec<String>> = temp
        .iter()
        .flat_map(|t| t.table_names())
        .map(|n| vec![n, "temporary table".to_string()])
        .chain(
            catalog
                .table_names()
                .into_iter()
                .map(|n| vec![n, "table".to_string()]),
        )
        .chain(
            catalog
                .view_names()
                .into_iter()
                .map(|n| vec![n, "view".to_string()]),
        )
        .collect();
    rows.sort();
    text_result(&SHOW_TABLES_COLUMNS, rows)
}
