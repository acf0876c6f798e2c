//! SQL-level prepared statements: `PREPARE name [(type, ...)] AS statement`,
//! `EXECUTE name [(args)]`, `DEALLOCATE [PREPARE] name | ALL`. A statement is
//! parsed and described once, as the extended protocol's are; its parameters
//! take the declared types, else the types the statement implies.

use std::collections::BTreeMap;
use std::sync::Arc;

use kura_common::{DataType, Value};
use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{KuraError, KuraResult};
use crate::result::ResultColumn;
use crate::stack::DropOnStack;

/// A statement parsed and described once, to run many times with parameters
/// (`$1`, `$2`, ... — the PostgreSQL extended protocol).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    pub(crate) statement: DropOnStack<Statement>,
    /// Types of `$1..$n`, as far as the statement determines them.
    pub param_types: Vec<DataType>,
    /// Result columns; empty for statements that return none.
    pub columns: Vec<ResultColumn>,
    /// What its syntax tree was reserved from the shared memory budget (a long
    /// text), held while any copy of it lives.
    pub(crate) parse_memory: Option<Arc<crate::limits::ParseMemory>>,
}

/// One `PREPARE`d statement.
#[derive(Clone)]
pub(crate) struct SqlPrepared {
    pub prepared: Prepared,
    /// Types of `$1..$n`: declared, else inferred, else open (`None`).
    pub types: Vec<Option<DataType>>,
}

/// A session's prepared statements by name.
#[derive(Default)]
pub(crate) struct PreparedStatements {
    by_name: BTreeMap<String, SqlPrepared>,
}

impl PreparedStatements {
    pub fn add(&mut self, name: String, p: SqlPrepared) -> KuraResult<()> {
        if self.by_name.contains_key(&name) {
            return Err(KuraError::State {
                sqlstate: "42P05",
                message: format!("prepared statement \"{name}\" already exists"),
            });
        }
        self.by_name.insert(name, p);
        Ok(())
    }

    pub fn get(&self, name: &str) -> KuraResult<&SqlPrepared> {
        self.by_name.get(name).ok_or_else(|| missing(name))
    }

    /// `DEALLOCATE name`, or every statement for `ALL` (`None`).
    pub fn remove(&mut self, name: Option<&str>) -> KuraResult<()> {
        match name {
            Some(n) => self.by_name.remove(n).map(|_| ()).ok_or_else(|| missing(n)),
            None => {
                self.by_name.clear();
                Ok(())
            }
        }
    }
}

fn missing(name: &str) -> KuraError {
    KuraError::State {
        sqlstate: "26000",
        message: format!("prepared statement \"{name}\" does not exist"),
    }
}

/// The highest `$n` in a statement (its parameter count), read from its
/// tokens so that `$n` inside strings and comments does not count.
pub(crate) fn placeholder_count(stmt: &Statement) -> usize {
    let sql = stmt.to_string();
    Tokenizer::new(&PostgreSqlDialect {}, &sql)
        .tokenize()
        .map(|tokens| {
            tokens
                .iter()
                .filter_map(|t| match t {
                    Token::Placeholder(p) => p.strip_prefix('$')?.parse::<usize>().ok(),
                    _ => None,
                })
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Parameter types: the declared ones first, then those the statement implies.
pub(crate) fn parameter_types(
    declared: &[DataType],
    inferred: &[DataType],
    count: usize,
) -> Vec<Option<DataType>> {
    (0..count.max(declared.len()))
        .map(|i| declared.get(i).or(inferred.get(i)).copied())
        .collect()
}

/// `EXECUTE`'s arguments checked against the statement and converted to its
/// parameter types, as PostgreSQL coerces them.
pub(crate) fn bind_arguments(
    name: &str,
    p: &SqlPrepared,
    args: Vec<Value>,
) -> KuraResult<Vec<Value>> {
    if args.len() != p.types.len() {
        return Err(KuraError::State {
            sqlstate: "42601",
            message: format!(
                "wrong number of parameters for prepared statement \"{name}\": expected {}, got {}",
                p.types.len(),
                args.len()
            ),
        });
    }
    args.into_iter()
        .zip(&p.types)
        .map(|(v, t)| match t {
            Some(t) if !v.is_null() => kura_exec::expr::cast_value(&v, *t).map_err(KuraError::from),
            _ => Ok(v),
        })
        .collect()
}
