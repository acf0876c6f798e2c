//! Functions whose value comes from the session, fixed for the statement:
//! `version()`, `current_database()`, `current_schema()`, `current_schemas(b)`,
//! `current_user`/`session_user`/`user`, `pg_backend_pid()`,
//! `current_setting(name)`, and the clock (`now()`, `current_timestamp`,
//! `localtimestamp`, `transaction_timestamp()`, `statement_timestamp()`,
//! `clock_timestamp()`), bound as constants like `current_date`.

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;

use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

/// Names this module binds.
pub const SESSION_FUNCTIONS: &[&str] = &[
    "version",
    "current_database",
    "current_catalog",
    "current_schema",
    "current_schemas",
    "current_user",
    "current_role",
    "session_user",
    "user",
    "pg_backend_pid",
    "current_setting",
    "now",
    "current_timestamp",
    "localtimestamp",
    "transaction_timestamp",
    "statement_timestamp",
    "clock_timestamp",
];

fn text(s: &str) -> PhysExpr {
    PhysExpr::literal(Value::Text(s.to_string()), DataType::Varchar(None))
}

impl Binder<'_> {
    /// The value of session function `name` applied to `args` (already bound),
    /// or `None` when `name` is not one of them.
    pub(super) fn session_function(
        &self,
        name: &str,
        args: &[PhysExpr],
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        if !SESSION_FUNCTIONS.contains(&name) {
            return Ok(None);
        }
        let Some(info) = self.catalog.session() else {
            return Err(SqlError::unsupported(
                format!("{name}() outside a session"),
                p,
            ));
        };
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(SqlError::UnknownFunction {
                    name: format!("{name} with {} arguments", args.len()),
                    pos: p,
                    suggestion: None,
                })
            }
        };
        let now = |micros: i64| PhysExpr::literal(Value::Timestamp(micros), DataType::Timestamp);
        Ok(Some(match name {
            "version" => {
                arity(0)?;
                text(&info.version)
            }
            "current_database" | "current_catalog" => {
                arity(0)?;
                text(&info.database)
            }
            "current_schema" => {
                arity(0)?;
                text("public")
            }
            "current_schemas" => {
                // An array in PostgreSQL; kura has no arrays, so its text form.
                arity(1)?;
                let implicit = matches!(
                    &args[0],
                    PhysExpr::Literal {
                        value: Value::Boolean(true),
                        ..
                    }
                );
                text(if implicit {
                    "{pg_catalog,public}"
                } else {
                    "{public}"
                })
            }
            "current_user" | "current_role" | "session_user" | "user" => {
                arity(0)?;
                text(&info.user)
            }
            "pg_backend_pid" => {
                arity(0)?;
                PhysExpr::literal(Value::Integer(info.backend_pid), DataType::Integer)
            }
            "current_setting" => {
                if args.is_empty() || args.len() > 2 {
                    arity(1)?;
                }
                // `current_setting($1::varchar)`: a constant once folded.
                let setting = match &super::types::fold(args[0].clone()) {
                    PhysExpr::Literal {
                        value: Value::Text(s),
                        ..
                    } if !s.starts_with(super::vocab::PARAM_MARK) => s.clone(),
                    // NULL gives NULL; so does a statement being described
                    // (`$1`, or `$1::text`, which stands as a NULL then): its
                    // result is text, whichever setting the parameter names.
                    PhysExpr::Literal {
                        value: Value::Text(_) | Value::Null,
                        ..
                    } => return Ok(Some(super::types::text_null())),
                    _ => {
                        return Err(SqlError::unsupported(
                            "current_setting of a non-constant name",
                            p,
                        ))
                    }
                };
                let missing_ok = matches!(
                    args.get(1),
                    Some(PhysExpr::Literal {
                        value: Value::Boolean(true),
                        ..
                    })
                );
                match info.setting(&setting) {
                    Some(v) => text(v),
                    None if missing_ok => PhysExpr::literal(Value::Null, DataType::Varchar(None)),
                    None => {
                        return Err(SqlError::InvalidValue {
                            message: format!("unrecognized configuration parameter \"{setting}\""),
                            pos: p,
                        })
                    }
                }
            }
            // Constant within a transaction, as in PostgreSQL.
            "now" | "current_timestamp" | "localtimestamp" | "transaction_timestamp" => {
                // `current_timestamp(3)` rounds to that many fractional digits.
                let precision = match args {
                    [] => None,
                    [PhysExpr::Literal {
                        value: Value::Integer(d),
                        ..
                    }] if name != "now" && name != "transaction_timestamp" => {
                        Some((*d).clamp(0, 6) as u32)
                    }
                    _ => {
                        arity(0)?;
                        None
                    }
                };
                let t = info.transaction_start;
                now(match precision {
                    Some(d) => {
                        let unit = 10i64.pow(6 - d);
                        (t + unit / 2).div_euclid(unit) * unit
                    }
                    None => t,
                })
            }
            "statement_timestamp" => {
                arity(0)?;
                now(info.statement_start)
            }
            "clock_timestamp" => {
                arity(0)?;
                now(kura_common::timestamp::now_utc())
            }
            _ => return Ok(None),
        }))
    }
}
