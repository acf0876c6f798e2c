//! Binding of the sequence functions `nextval('s')`, `currval('s')` and
//! `setval('s', v [, is_called])`: the sequence is named by a text constant
//! (also written `'s'::regclass`, as `serial` defaults and pg_dump spell it)
//! and looked up once, when the statement is bound.

use kura_common::{DataType, Value};
use kura_exec::expr::{PhysExpr, SeqOp};
use sqlparser::ast;

use super::functions::call_args;
use super::types::{coerce, fold};
use super::vocab::ExprCtx;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

impl Binder<'_> {
    /// Binds `f` when it is a sequence function (`None` otherwise).
    pub(super) fn bind_sequence_function(
        &mut self,
        f: &ast::Function,
        name: &str,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        let op = match name {
            "nextval" => SeqOp::Next,
            "currval" => SeqOp::Current,
            "setval" => SeqOp::Set,
            _ => return Ok(None),
        };
        if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::WrongObjectType {
                message: format!("{name} is not an aggregate function"),
                pos: p,
            });
        }
        let (args, _) = call_args(f, name, p)?;
        let arity_ok = match op {
            SeqOp::Next | SeqOp::Current => args.len() == 1,
            SeqOp::Set => args.len() == 2 || args.len() == 3,
        };
        if !arity_ok {
            return Err(SqlError::UnknownFunction {
                name: format!("{name} with {} arguments", args.len()),
                pos: p,
                suggestion: None,
            });
        }
        let seq_name = self.sequence_name(&args[0], cx, p)?;
        let seq = self
            .catalog
            .sequence(&seq_name)
            .ok_or_else(|| SqlError::UnknownTable {
                name: seq_name.clone(),
                pos: p,
                suggestion: None,
            })?;
        let mut rest = Vec::new();
        if op == SeqOp::Set {
            let value = self.bind_expr(&args[1], cx)?;
            if !matches!(
                value.data_type(),
                DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Varchar(_)
            ) {
                return Err(SqlError::mismatch(
                    format!(
                        "function setval(regclass, {}) does not exist",
                        value.data_type()
                    ),
                    p,
                ));
            }
            rest.push(fold(coerce(value, DataType::BigInt, p)?));
            if let Some(called) = args.get(2) {
                let called = self.bind_expr(called, cx)?;
                rest.push(fold(coerce(called, DataType::Boolean, p)?));
            }
        }
        Ok(Some(PhysExpr::Sequence {
            seq,
            op,
            args: rest,
        }))
    }

    /// The sequence a function's first argument names: a text constant, or
    /// one cast to regclass; `"Quoted"` keeps its case, a schema `public.`
    /// is dropped.
    fn sequence_name(&mut self, arg: &ast::Expr, cx: &mut ExprCtx, p: Pos) -> SqlResult<String> {
        let inner = match arg {
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Regclass,
                ..
            } => expr.as_ref(),
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Custom(n, _),
                ..
            } if n.to_string().eq_ignore_ascii_case("regclass") => expr.as_ref(),
            other => other,
        };
        let text = match fold(self.bind_expr(inner, cx)?) {
            PhysExpr::Literal {
                value: Value::Text(s),
                ..
            } => s,
            _ => {
                return Err(SqlError::unsupported(
                    "a sequence named by anything but a text constant",
                    p,
                ))
            }
        };
        Ok(relation_name(&text))
    }
}

/// The catalog name a relation's name written as text stands for
/// (`'s'::regclass`, `pg_get_serial_sequence('t', ...)`): a schema `public.`
/// dropped, `"Quoted"` kept as written, otherwise folded to lower case.
pub fn relation_name(text: &str) -> String {
    let text = text.trim();
    let text = text
        .strip_prefix("public.")
        .or_else(|| text.strip_prefix("\"public\"."))
        .unwrap_or(text);
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_ascii_lowercase(),
    }
}
