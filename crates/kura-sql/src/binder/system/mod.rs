//! Binding what clients' catalog queries use beyond ordinary SQL: the system
//! relations (`pg_catalog.pg_class` ...), the catalog functions (`format_type`,
//! `pg_get_indexdef`, `pg_table_is_visible` ...), `::regclass` / `::regtype`
//! casts, `~` regular expressions with `OPERATOR(pg_catalog.~)`, and
//! `COLLATE pg_catalog.default`. Functions that need the catalog's contents
//! become CASE expressions over the [`Snapshot`] taken for the statement.

use std::rc::Rc;
use std::sync::Arc;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use kura_exec::{SourceColumn, TableSource};
use sqlparser::ast;

use super::types::{coerce, fold, is_null_literal, is_untyped_null};
use super::vocab::ExprCtx;
use super::{norm, Binder, Params};
use crate::error::{Pos, SqlError, SqlResult};
use crate::system::{RelKind, Snapshot, SnapshotInput, OWNER, OWNER_OID};

mod casts;
mod functions;
mod relations;

const TEXT: DataType = DataType::Varchar(None);

/// Schemas whose relations are the system catalogs.
const SYSTEM_SCHEMAS: &[&str] = &["pg_catalog", "information_schema"];

fn text_literal(s: &str) -> PhysExpr {
    PhysExpr::literal(Value::Text(s.to_string()), TEXT)
}

fn typed_null(t: DataType) -> PhysExpr {
    PhysExpr::Cast {
        expr: Box::new(PhysExpr::literal(Value::Null, t)),
        to: t,
    }
}

// Here rather than in functions.rs, which uses it too: this file and casts.rs use
// it as well, and functions.rs imports this file, so taking it from there would
// make an import loop.
/// `CASE WHEN key = k1 THEN v1 ... END`: a lookup in a table known when binding.
fn lookup(key: PhysExpr, pairs: Vec<(Value, Value)>, t: DataType) -> PhysExpr {
    let kt = key.data_type();
    let whens: Vec<(PhysExpr, PhysExpr)> = pairs
        .into_iter()
        .map(|(k, v)| {
            (
                PhysExpr::Binary {
                    op: kura_exec::expr::BinaryOp::Eq,
                    left: Box::new(key.clone()),
                    right: Box::new(PhysExpr::literal(k, kt)),
                    data_type: DataType::Boolean,
                },
                PhysExpr::literal(v, t),
            )
        })
        .collect();
    if whens.is_empty() {
        return typed_null(t);
    }
    fold(PhysExpr::Case {
        whens,
        otherwise: None,
        data_type: t,
    })
}

/// The unqualified name of a function or type, if it is unqualified or in
/// `pg_catalog`.
fn catalog_name(name: &ast::ObjectName) -> Option<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(id) => Some(norm(id)),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [n] => Some(n.clone()),
        [s, n] if s == "pg_catalog" => Some(n.clone()),
        _ => None,
    }
}

/// `pg_typeof(x)`: the name of `x`'s type as PostgreSQL prints a `regtype`
/// (`smallint`, `numeric`; without modifiers), as text. A NULL written
/// without a type is `unknown`, as in PostgreSQL.
fn type_name_of(x: &PhysExpr) -> String {
    if is_untyped_null(x) {
        return "unknown".into();
    }
    let (oid, _) = kura_exec::expr::pg_types::pg_type_of(x.data_type());
    kura_exec::expr::pg_types::format_type(oid.into(), None).unwrap_or_else(|| "unknown".into())
}

/// A type named by `::name` that kura stores as one of its own.
fn plain_type(name: &str) -> Option<DataType> {
    Some(match name {
        "int2" | "smallint" => DataType::SmallInt,
        "int4" | "int" | "integer" => DataType::Integer,
        "int8" | "bigint" => DataType::BigInt,
        "float4" | "float8" | "real" => DataType::Double,
        "bool" | "boolean" => DataType::Boolean,
        "text" | "name" | "varchar" | "bpchar" | "char" => TEXT,
        "date" => DataType::Date,
        _ => return None,
    })
}

impl Binder<'_> {
    /// Binds `e` if it is one of the PostgreSQL catalog forms this module knows;
    /// `None` leaves it to the ordinary binder.
    pub(super) fn bind_system_expr(
        &mut self,
        e: &ast::Expr,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        use ast::BinaryOperator as B;
        use ast::Expr as E;
        match e {
            E::Collate { expr, collation } => {
                // kura compares text bytewise, which is what the C collation and
                // PostgreSQL's "default" in a C-locale database do.
                match catalog_name(collation).as_deref() {
                    Some("default" | "c" | "posix" | "C" | "POSIX") => {
                        Ok(Some(self.bind_expr(expr, cx)?))
                    }
                    _ => Err(SqlError::unsupported(format!("collation {collation}"), p)),
                }
            }
            E::BinaryOp { left, op, right } => {
                let (func, negated) = match op {
                    B::PGRegexMatch => (ScalarFunc::RegexMatch, false),
                    B::PGRegexIMatch => (ScalarFunc::RegexIMatch, false),
                    B::PGRegexNotMatch => (ScalarFunc::RegexMatch, true),
                    B::PGRegexNotIMatch => (ScalarFunc::RegexIMatch, true),
                    B::PGCustomBinaryOperator(parts) => {
                        let (schema, name) = match parts.as_slice() {
                            [n] => (None, n.as_str()),
                            [s, n] => (Some(s.as_str()), n.as_str()),
                            _ => return Ok(None),
                        };
                        if schema.is_some_and(|s| s != "pg_catalog") {
                            return Err(SqlError::unsupported(format!("operator {op}"), p));
                        }
                        let op = match name {
                            "~" => B::PGRegexMatch,
                            "~*" => B::PGRegexIMatch,
                            "!~" => B::PGRegexNotMatch,
                            "!~*" => B::PGRegexNotIMatch,
                            "=" => B::Eq,
                            "<>" | "!=" => B::NotEq,
                            "<" => B::Lt,
                            "<=" => B::LtEq,
                            ">" => B::Gt,
                            ">=" => B::GtEq,
                            "||" => B::StringConcat,
                            "+" => B::Plus,
                            "-" => B::Minus,
                            "*" => B::Multiply,
                            "/" => B::Divide,
                            _ => return Err(SqlError::unsupported(format!("operator {name}"), p)),
                        };
                        let rewritten = E::BinaryOp {
                            left: left.clone(),
                            op,
                            right: right.clone(),
                        };
                        return self.bind_expr(&rewritten, cx).map(Some);
                    }
                    _ => return Ok(None),
                };
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                let text_arg = |x: PhysExpr| -> SqlResult<PhysExpr> {
                    if x.data_type().is_text() || is_null_literal(&x) {
                        coerce(x, TEXT, p)
                    } else {
                        Err(SqlError::mismatch(
                            format!("operator does not exist: {} {op} text", x.data_type()),
                            p,
                        ))
                    }
                };
                let call = PhysExpr::Func {
                    func,
                    args: vec![text_arg(l)?, text_arg(r)?],
                    data_type: DataType::Boolean,
                };
                Ok(Some(if negated {
                    PhysExpr::Not(Box::new(call))
                } else {
                    call
                }))
            }
            E::Cast {
                expr, data_type, ..
            } => self.bind_system_cast(expr, data_type, cx, p),
            E::Function(f) => self.bind_system_function(f, cx, p),
            // A branch on a catalog array being present never fires: it is left
            // out, and with it what it would compute from the array (psql's
            // `\d` reads publication column lists with array functions kura
            // does not have).
            E::Case {
                operand: None,
                conditions,
                else_result,
                case_token,
                end_token,
            } if !self.null_arrays.is_empty() => {
                let mut kept = Vec::new();
                for w in conditions {
                    if !self.is_never_true(&w.condition, cx) {
                        kept.push(w.clone());
                    }
                }
                if kept.len() == conditions.len() {
                    return Ok(None);
                }
                if kept.is_empty() {
                    return match else_result {
                        Some(x) => self.bind_expr(x, cx).map(Some),
                        None => Ok(Some(super::types::text_null())),
                    };
                }
                let rewritten = E::Case {
                    operand: None,
                    conditions: kept,
                    else_result: else_result.clone(),
                    case_token: case_token.clone(),
                    end_token: end_token.clone(),
                };
                self.bind_expr(&rewritten, cx).map(Some)
            }
            // `x = ANY(array column)`: the catalogs' array columns are always NULL
            // in kura, so the comparison is NULL, as PostgreSQL's is for a NULL
            // array; a non-NULL text there fails the cast instead of matching.
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            } if !matches!(right.as_ref(), E::Subquery(_)) => {
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                // Only a catalog column kura holds as text is handled here;
                // real arrays, array literals and parameters are arrays.
                if !(matches!(r, PhysExpr::Column { .. }) && r.data_type().is_text()) {
                    return self.bind_any_all(l, compare_op, r, false, p).map(Some);
                }
                let l = if is_null_literal(&l) || l.data_type().is_text() {
                    coerce(l, TEXT, p)?
                } else {
                    l
                };
                let r = if l.data_type().is_text() {
                    r
                } else {
                    PhysExpr::Cast {
                        expr: Box::new(r),
                        to: l.data_type(),
                    }
                };
                let op = match compare_op {
                    B::Eq => kura_exec::expr::BinaryOp::Eq,
                    B::NotEq => kura_exec::expr::BinaryOp::NotEq,
                    _ => return Err(SqlError::unsupported(format!("{compare_op} ANY"), p)),
                };
                Ok(Some(PhysExpr::Binary {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                    data_type: DataType::Boolean,
                }))
            }
            E::CompoundFieldAccess { root, access_chain } => {
                // `(current_schemas(true))[1]`: the one array kura knows.
                let mut root = root.as_ref();
                while let E::Nested(x) = root {
                    root = x;
                }
                let E::Function(f) = root else {
                    return Ok(None);
                };
                if catalog_name(&f.name).as_deref() != Some("current_schemas") {
                    return Ok(None);
                }
                let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] =
                    access_chain.as_slice()
                else {
                    return Err(SqlError::unsupported("array slices", p));
                };
                let schemas = self.current_schemas_arg(f, cx, p)?;
                let i = self.bind_expr(index, cx)?;
                let pairs = schemas
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (Value::Integer(k as i32 + 1), Value::Text(s.to_string())))
                    .collect();
                let i = coerce(i, DataType::Integer, p)?;
                Ok(Some(lookup(i, pairs, TEXT)))
            }
            _ => Ok(None),
        }
    }
}
