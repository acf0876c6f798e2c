//! Turning answers into pgwire responses: engine outcomes as row streams or
//! command tags, engine errors as ErrorResponses, and the server's own answers
//! to session statements (see `compat`).

use std::sync::Arc;

use futures::StreamExt;
use kura_common::{DataType, Value};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_ERROR};
use pgwire::messages::response::TransactionStatus;

use super::Connection;
use crate::codec;
use crate::compat::{Compat, Function};
use crate::engine::{rows_of, Column, Engine, EngineError, EngineSession, Outcome};
use crate::types::{pg_type, type_modifier, type_size};

/// The ErrorResponse for an engine error.
pub fn error_info(e: EngineError) -> ErrorInfo {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.to_owned(), e.sqlstate, e.message);
    info.position = e.position.map(|p| p.to_string());
    info
}

pub fn user_error(e: EngineError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

/// Output format of each of `n` columns, checking the client asked for a
/// sensible number of format codes (0, 1 or one per column).
pub fn column_formats(format: Option<&Format>, n: usize) -> Result<Vec<FieldFormat>, EngineError> {
    Ok(match format {
        None | Some(Format::UnifiedText) => vec![FieldFormat::Text; n],
        Some(Format::UnifiedBinary) => vec![FieldFormat::Binary; n],
        Some(Format::Individual(codes)) if codes.len() == n => {
            codes.iter().map(|c| FieldFormat::from(*c)).collect()
        }
        Some(Format::Individual(codes)) => {
            return Err(EngineError::new(
                "08P01",
                format!(
                    "bind message has {} result formats but query has {n} columns",
                    codes.len()
                ),
            ))
        }
    })
}

/// RowDescription fields for result columns.
pub fn fields(columns: &[Column], formats: &[FieldFormat]) -> Vec<FieldInfo> {
    columns
        .iter()
        .zip(formats)
        .map(|(c, f)| {
            FieldInfo::new(c.name.clone(), None, None, pg_type(&c.data_type), *f)
                .with_type_modifier(type_modifier(&c.data_type))
                .with_type_size(type_size(&c.data_type))
        })
        .collect()
}

/// The response for an engine outcome: rows, encoded as they are sent, or a tag.
pub fn outcome_response(outcome: Outcome, formats: Vec<FieldFormat>) -> Response {
    if !outcome.returns_rows() {
        return Response::Execution(Tag::new(&outcome.tag));
    }
    let schema = Arc::new(fields(&outcome.columns, &formats));
    let types: Vec<DataType> = outcome.columns.iter().map(|c| c.data_type).collect();
    let rows = outcome.rows.map(move |row| match row {
        Ok(row) => codec::data_row(&row, &types, &formats)
            .map_err(|m| user_error(EngineError::new("XX000", m))),
        Err(e) => Err(user_error(e)),
    });
    let mut resp = QueryResponse::new(schema, rows);
    // pgwire appends the number of rows it sent, so keep only the command
    // word (INSERT … RETURNING's tag is `INSERT 0 n`, with its OID field).
    let command = match outcome.tag.split_whitespace().next().unwrap_or("SELECT") {
        "INSERT" => "INSERT 0",
        other => other,
    };
    resp.set_command_tag(command);
    Response::Query(resp)
}

/// One text row under one text column (SHOW, version() ...).
fn single_text(column: &str, value: String, formats: Vec<FieldFormat>) -> Response {
    let outcome = Outcome {
        columns: vec![Column {
            name: column.to_string(),
            data_type: DataType::Varchar(None),
        }],
        rows: rows_of(std::iter::once(vec![Value::Text(value)])),
        tag: "SELECT 1".to_string(),
    };
    outcome_response(outcome, formats)
}

/// Columns a server-answered statement returns (for Describe).
pub fn compat_columns(c: &Compat) -> Vec<Column> {
    let text = |name: &str| {
        vec![Column {
            name: name.to_string(),
            data_type: DataType::Varchar(None),
        }]
    };
    match c {
        Compat::Show { name } => text(name),
        Compat::Function { column, .. } => text(column),
        _ => Vec::new(),
    }
}

impl<E: Engine> Connection<E> {
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, carried out by the session (which holds
    /// the transaction's writes). A `COMMIT` of a transaction an error aborted
    /// rolls it back, as in PostgreSQL.
    pub(super) async fn transaction_control(
        &self,
        c: &Compat,
        tx: TransactionStatus,
    ) -> Result<Response, EngineError> {
        let sql = match c {
            Compat::Begin(sql) | Compat::SetTransaction(sql) | Compat::Resume(sql) => sql.clone(),
            Compat::Commit if tx != TransactionStatus::Error => "COMMIT".into(),
            _ => "ROLLBACK".into(),
        };
        let outcome = self
            .runner
            .run(move |s: &mut E::Session| s.execute(&sql))
            .await?;
        Ok(match c {
            Compat::Begin(_) => Response::TransactionStart(Tag::new("BEGIN")),
            // The status was set to "in a transaction" before it ran (see
            // `Connection::resume_status`); this keeps it there.
            Compat::Resume(_) => Response::TransactionStart(Tag::new(&outcome.tag)),
            Compat::SetTransaction(_) => Response::Execution(Tag::new("SET")),
            _ => Response::TransactionEnd(Tag::new(&outcome.tag)),
        })
    }

    /// `DEALLOCATE name | ALL`: a statement the extended protocol prepared
    /// (`protocol`, already removed from the connection's store) or one that
    /// SQL `PREPARE` made in the session, which answers for those.
    pub(super) async fn deallocate(
        &self,
        name: Option<&str>,
        protocol: bool,
    ) -> Result<Response, EngineError> {
        if protocol {
            return Ok(Response::Execution(Tag::new("DEALLOCATE")));
        }
        let sql = match name {
            Some(n) => format!("DEALLOCATE \"{}\"", n.replace('"', "\"\"")),
            None => "DEALLOCATE ALL".to_string(),
        };
        let outcome = self
            .runner
            .run(move |s: &mut E::Session| s.execute(&sql))
            .await?;
        Ok(Response::Execution(Tag::new(&outcome.tag)))
    }

    /// Answers a session statement the server handles itself.
    pub(super) fn answer_compat(
        &self,
        c: &Compat,
        formats: Vec<FieldFormat>,
    ) -> Result<Response, EngineError> {
        Ok(match c {
            Compat::Begin(_)
            | Compat::Commit
            | Compat::Rollback
            | Compat::Resume(_)
            | Compat::SetTransaction(_) => {
                return Err(EngineError::new(
                    "XX000",
                    "internal error: transaction control reached the server's own answers",
                ))
            }
            Compat::Set { name, value } => {
                self.state()
                    .params
                    .set(name, value.clone())
                    .map_err(|m| EngineError::new("55P02", m))?;
                Response::Execution(Tag::new(if value.is_some() { "SET" } else { "RESET" }))
            }
            Compat::ResetAll => {
                self.state().params.reset_all();
                Response::Execution(Tag::new("RESET"))
            }
            Compat::Show { name } => {
                let v = self.state().params.get(name).unwrap_or_default();
                single_text(name, v, formats)
            }
            Compat::Function { column, call } => {
                let v = match call {
                    Function::CurrentSetting(n) => self.state().params.get(n).unwrap_or_default(),
                };
                single_text(column, v, formats)
            }
            Compat::Deallocate(_) => Response::Execution(Tag::new("DEALLOCATE")),
            Compat::Discard => Response::Execution(Tag::new("DISCARD ALL")),
        })
    }
}

/// The error PostgreSQL gives for statements inside a failed transaction block.
pub fn in_failed_transaction() -> EngineError {
    EngineError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_codes_must_fit_the_columns() {
        assert_eq!(column_formats(None, 2).unwrap(), vec![FieldFormat::Text; 2]);
        assert_eq!(
            column_formats(Some(&Format::UnifiedBinary), 1).unwrap(),
            vec![FieldFormat::Binary]
        );
        assert_eq!(
            column_formats(Some(&Format::Individual(vec![0, 1])), 2).unwrap(),
            vec![FieldFormat::Text, FieldFormat::Binary]
        );
        assert_eq!(
            column_formats(Some(&Format::Individual(vec![0, 1])), 3)
                .unwrap_err()
                .sqlstate,
            "08P01"
        );
    }

    #[test]
    fn fields_carry_oid_and_modifier() {
        let cols = vec![Column {
            name: "price".into(),
            data_type: DataType::Decimal {
                precision: 15,
                scale: 2,
            },
        }];
        let f = fields(&cols, &[FieldFormat::Text]);
        assert_eq!(f[0].datatype().oid(), 1700);
        assert_eq!(f[0].type_modifier(), 983046);
    }
}
