//! Records: the rows a catalog function returns as one value
//! (`information_schema._pg_expandarray(a)`, fields `x` and `n`), held in
//! PostgreSQL's text form (`(3,1)`) with their field names and types known to
//! the binder by column, so `(keys).x` reads a field through a subquery as
//! pgjdbc's `getPrimaryKeys` does.

use kura_common::{DataType, Value};
use kura_exec::expr::{PhysExpr, ScalarFunc};

use super::types::coerce;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::ColId;

/// A record of `fields` (name, value) in its text form.
pub(super) fn make_record(fields: Vec<PhysExpr>, pos: Pos) -> SqlResult<PhysExpr> {
    let args = fields
        .into_iter()
        .map(|f| coerce(f, DataType::Varchar(None), pos))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(PhysExpr::Func {
        func: ScalarFunc::RecordText,
        args,
        data_type: DataType::Varchar(None),
    })
}

impl Binder<'_> {
    /// Notes that column `id` holds a record with these fields.
    pub(super) fn note_record(&mut self, id: ColId, fields: Vec<(String, DataType)>) {
        self.records.insert(id, fields);
    }

    /// Column `id`, computed as `e`, holds the same record `e` does when `e`
    /// is a record column (a select item carried out of a subquery).
    pub(super) fn same_record(&mut self, e: &PhysExpr, id: ColId) {
        if let PhysExpr::Column { index, .. } = e {
            if let Some(fields) = self.records.get(index).cloned() {
                self.records.insert(id, fields);
            }
        }
    }

    /// `(record).field`: the field of a record column, of its type. Any
    /// other value has no fields (PostgreSQL's 42703).
    pub(super) fn record_field(
        &self,
        record: PhysExpr,
        field: &str,
        pos: Pos,
    ) -> SqlResult<PhysExpr> {
        let fields = match &record {
            PhysExpr::Column { index, .. } => self.records.get(index),
            _ => None,
        };
        let Some(fields) = fields else {
            return Err(SqlError::NoSuchField {
                field: field.to_string(),
                ty: record.data_type().to_string(),
                pos,
            });
        };
        let Some(k) = fields.iter().position(|(n, _)| n == field) else {
            return Err(SqlError::NoSuchField {
                field: field.to_string(),
                ty: "record".into(),
                pos,
            });
        };
        let text = PhysExpr::Func {
            func: ScalarFunc::RecordField,
            args: vec![
                record,
                PhysExpr::literal(Value::Integer(k as i32 + 1), DataType::Integer),
            ],
            data_type: DataType::Varchar(None),
        };
        coerce(text, fields[k].1, pos)
    }
}
