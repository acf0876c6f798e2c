//! Relations a program hands its session (Python's `con.register('t', df)`): Arrow data
//! queried by name for the session's life, ahead of tables of that name, as DuckDB's
//! registered views are.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use kura_common::vector::Vector;
use kura_exec::arrow::{batch_from_arrow, kura_type};
use kura_exec::{MemTable, SourceColumn, TableSource};

use crate::error::{KuraError, KuraResult};

/// The session's registered relations by name (lower case, as an unquoted name binds).
#[derive(Default)]
pub(crate) struct Registered(HashMap<String, Arc<dyn TableSource>>);

impl Registered {
    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn TableSource>> {
        self.0.get(name).cloned()
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// Arrow data as relation `name`, replacing an earlier registration of that name,
    /// converted to kura's vectors once, here.
    pub(crate) fn register_arrow(
        &mut self,
        name: &str,
        schema: &Schema,
        batches: &[RecordBatch],
    ) -> KuraResult<()> {
        let key = key(name)?;
        let mut columns = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            columns.push(SourceColumn {
                name: f.name().to_lowercase(),
                data_type: kura_type(f.data_type(), f.name())?,
                nullable: true,
            });
        }
        let types: Vec<_> = columns.iter().map(|c| c.data_type).collect();
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let mut data: Vec<Vector> = types.iter().map(|t| Vector::new(*t, rows)).collect();
        for rb in batches {
            let batch = batch_from_arrow(rb, &types)?;
            for (all, part) in data.iter_mut().zip(&batch.columns) {
                all.append(part);
            }
        }
        let table = MemTable::new(&key, columns, data);
        self.0.insert(key, Arc::new(table));
        Ok(())
    }

    /// Forgets relation `name`; false when none has that name.
    pub(crate) fn unregister(&mut self, name: &str) -> bool {
        key(name).is_ok_and(|k| self.0.remove(&k).is_some())
    }
}

/// The relation's name as the binder looks it up: an unquoted name is folded to lower case.
fn key(name: &str) -> KuraResult<String> {
    if name.is_empty() {
        return Err(KuraError::Invalid(
            "a registered relation needs a name".into(),
        ));
    }
    Ok(name.to_lowercase())
}
