//! Binding of scalar expressions: name resolution through nested scopes (outer
//! references make a subquery correlated), typing and implicit conversions,
//! aggregates (collected when binding an aggregating SELECT), date arithmetic with
//! intervals, and constant folding. This file resolves names and dispatches by
//! the kind of expression; each kind's binding is in a file of its own.

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, LikePattern, PhysExpr, ScalarFunc};
use sqlparser::ast;

use super::interval_fn::{interval_literal, interval_value};
use super::types::{
    arith_type, coerce, common_type, fold, is_null_literal, is_untyped_null, number_literal,
    sql_type, text_null,
};
use super::vocab::{param_marker, pos, ExprCtx, MAX_EXPR_DEPTH, PARAM_MARK};
use super::{norm, pos_of, Binder};
use crate::error::{did_you_mean, Pos, SqlError, SqlResult};
use crate::logical::col;

// The files below name each other's helpers directly (`use super::operators::bin`)
// rather than through a glob here: a glob would make this file import them while
// they import it (`use super::*`), a loop.
mod calls;
mod case;
mod cast;
mod datetime;
mod literals;
mod operators;
mod predicates;
mod special_forms;

/// A quoted string constant (its type is still open, like PostgreSQL's `unknown`).
fn is_text_literal(e: &PhysExpr) -> bool {
    matches!(
        e,
        PhysExpr::Literal {
            value: Value::Text(_),
            ..
        }
    )
}

impl Binder<'_> {
    pub fn bind_expr(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        if self.expr_depth >= MAX_EXPR_DEPTH {
            return Err(SqlError::TooDeep {
                what: "the expression".into(),
                limit: MAX_EXPR_DEPTH,
                pos: pos(e),
            });
        }
        self.expr_depth += 1;
        let bound = self.bind_expr_node(e, cx);
        self.expr_depth -= 1;
        bound
    }

    fn bind_expr_node(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        // PostgreSQL's catalog forms (regular expressions, ::regclass, catalog functions).
        if let Some(bound) = self.bind_system_expr(e, cx, pos(e))? {
            return Ok(bound);
        }
        match e {
            E::Identifier(id) => match self.resolve(None, id, cx) {
                // `current_schema` written without parentheses, as SQL allows,
                // where no column of that name is in scope.
                Err(SqlError::UnknownColumn { .. })
                    if id.quote_style.is_none()
                        && id.value.eq_ignore_ascii_case("current_schema") =>
                {
                    Ok(PhysExpr::literal(
                        Value::Text("public".into()),
                        DataType::Varchar(None),
                    ))
                }
                r => r,
            },
            E::CompoundIdentifier(ids) => match ids.as_slice() {
                [q, c] => self.resolve(Some(q), c, cx),
                [_, q, c] => self.resolve(Some(q), c, cx),
                _ => Err(SqlError::unsupported(format!("name {e}"), pos(e))),
            },
            E::Nested(x) => self.bind_expr(x, cx),
            E::Value(v) => self.bind_value(&v.value, pos(e)),
            E::TypedString(ts) => {
                let t = sql_type(&ts.data_type, pos(e))?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                coerce(
                    PhysExpr::literal(Value::Text(text), DataType::Varchar(None)),
                    t,
                    pos(e),
                )
            }
            E::Interval(iv) => interval_value(interval_literal(iv, pos(e))?, pos(e)),
            E::BinaryOp {
                op: op @ (ast::BinaryOperator::And | ast::BinaryOperator::Or),
                ..
            } => self.bind_connective(e, op, cx),
            E::BinaryOp { left, op, right } => self.bind_binary(left, op, right, cx, pos(e)),
            E::UnaryOp { .. } => self.bind_unary(e, cx),
            E::IsNull(_)
            | E::IsNotNull(_)
            | E::IsDistinctFrom(..)
            | E::IsNotDistinctFrom(..)
            | E::IsTrue(_)
            | E::IsFalse(_)
            | E::IsNotTrue(_)
            | E::IsNotFalse(_)
            | E::Between { .. }
            | E::InList { .. }
            | E::Like { .. }
            | E::ILike { .. } => self.bind_predicate(e, cx),
            E::Case { .. } => self.bind_case(e, cx),
            E::Cast { .. } => self.bind_cast(e, cx),
            E::Extract { .. }
            | E::Position { .. }
            | E::Substring { .. }
            | E::Trim { .. }
            | E::Floor { .. }
            | E::Ceil { .. } => self.bind_special_form(e, cx),
            E::Function(f) => self.bind_function(f, cx, pos(e)),
            E::Array(a) => self.bind_array_constructor(&a.elem, cx, pos(e)),
            E::AnyOp { .. } | E::AllOp { .. } => self.bind_quantified(e, cx, pos(e)),
            E::CompoundFieldAccess { root, access_chain } => {
                self.bind_subscript(root, access_chain, cx, pos(e))
            }
            E::Subquery(q) => self.scalar_subquery(q, cx, pos(e)),
            E::Exists { subquery, negated } => {
                let m = self.mark_subquery(subquery, None, cx, pos(e))?;
                Ok(if *negated {
                    PhysExpr::Not(Box::new(m))
                } else {
                    m
                })
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.bind_expr(expr, cx)?;
                let m = self.mark_subquery(subquery, Some(x), cx, pos(e))?;
                Ok(if *negated {
                    PhysExpr::Not(Box::new(m))
                } else {
                    m
                })
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }

    fn resolve(
        &mut self,
        qualifier: Option<&ast::Ident>,
        id: &ast::Ident,
        cx: &ExprCtx,
    ) -> SqlResult<PhysExpr> {
        let name = norm(id);
        let q = qualifier.map(norm);
        for scope in std::iter::once(cx.scope).chain(cx.outer.iter().rev()) {
            let hits = scope.lookup(q.as_deref(), &name);
            match hits.len() {
                0 => continue,
                1 => return Ok(col(hits[0].id, hits[0].ty)),
                _ => {
                    // The same column reached through two names (e.g. USING) is not ambiguous.
                    if hits.iter().all(|h| h.id == hits[0].id) {
                        return Ok(col(hits[0].id, hits[0].ty));
                    }
                    return Err(SqlError::AmbiguousColumn {
                        name,
                        pos: pos_of(id),
                    });
                }
            }
        }
        let full = match &q {
            Some(q) => format!("{q}.{name}"),
            None => name.clone(),
        };
        let candidates: Vec<String> = std::iter::once(cx.scope)
            .chain(cx.outer.iter())
            .flat_map(|s| s.cols.iter())
            .map(|c| match (&q, &c.qualifier) {
                (Some(_), Some(cq)) => format!("{cq}.{}", c.name),
                _ => c.name.clone(),
            })
            .collect();
        let suggestion = did_you_mean(&full, candidates.iter().map(|s| s.as_str()));
        // The message names the column alone; the position points at the qualifier.
        Err(SqlError::UnknownColumn {
            name,
            pos: pos_of(qualifier.unwrap_or(id)),
            suggestion,
        })
    }
}
