//! Binding of queries: WITH, set operations, SELECT (FROM, WHERE, GROUP BY, HAVING,
//! DISTINCT, the select list), ORDER BY, LIMIT and OFFSET.

use std::collections::HashSet;

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use kura_exec::JoinType;
use sqlparser::ast::{self, Spanned};

use super::types::{coerce, common_type};
use super::vocab::{sort_key, ExprCtx};
use super::{norm, AggCollector, Binder, BoundQuery, Pending, Scope, ScopeCol};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, conjunction, refs_of, replace_subexprs, ColId, LSortKey, Logical};

mod first_rows;
mod from;
mod select;
mod values;

fn span_pos(e: &impl Spanned) -> Pos {
    Pos::from_span(e.span())
}

/// Splits `a AND b AND …` at the AST level.
fn ast_conjuncts<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            ast_conjuncts(left, out);
            ast_conjuncts(right, out);
        }
        ast::Expr::Nested(inner)
            if matches!(
                **inner,
                ast::Expr::BinaryOp {
                    op: ast::BinaryOperator::And,
                    ..
                }
            ) =>
        {
            ast_conjuncts(inner, out)
        }
        e => out.push(e),
    }
}

/// Output name of a select item without alias (PostgreSQL's rules, simplified).
fn derived_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => norm(id),
        ast::Expr::CompoundIdentifier(ids) => ids.last().map_or("?column?".into(), norm),
        ast::Expr::Function(f) => f.name.0.last().map_or("?column?".into(), |p| match p {
            ast::ObjectNamePart::Identifier(i) => norm(i),
            _ => "?column?".into(),
        }),
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => derived_name(expr),
        // `(r).x` is named after its field, `a[1]` after its array.
        ast::Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(ast::AccessExpr::Dot(ast::Expr::Identifier(field))) => norm(field),
            _ => derived_name(root),
        },
        ast::Expr::Extract { field, .. } => match field {
            ast::DateTimeField::Year => "extract".into(),
            _ => "extract".into(),
        },
        ast::Expr::Substring { .. } => "substring".into(),
        ast::Expr::Case { .. } => "case".into(),
        ast::Expr::Exists { .. } => "exists".into(),
        _ => "?column?".into(),
    }
}

/// The select-list position an ORDER BY or GROUP BY item names: an integer constant,
/// signed or in parentheses, as PostgreSQL reads it (`GROUP BY (-1)` is position -1).
fn position_literal(e: &ast::Expr) -> Option<i64> {
    match e {
        ast::Expr::Nested(inner) => position_literal(inner),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<i64>().ok(),
            _ => None,
        },
        ast::Expr::UnaryOp { op, expr } => {
            let n = match &**expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n.parse::<i64>().ok()?,
                    _ => return None,
                },
                _ => return None,
            };
            match op {
                ast::UnaryOperator::Minus => Some(-n),
                ast::UnaryOperator::Plus => Some(n),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The item at 1-based select-list `position`, or PostgreSQL's error naming the clause.
fn at_position<T>(items: &[T], position: i64, clause: &str, e: &ast::Expr) -> SqlResult<usize> {
    if position >= 1 && position as usize <= items.len() {
        Ok(position as usize - 1)
    } else {
        Err(SqlError::InvalidValue {
            message: format!("{clause} position {position} is not in select list"),
            pos: span_pos(e),
        })
    }
}

fn const_usize(e: &ast::Expr, what: &str) -> SqlResult<usize> {
    match e {
        ast::Expr::Nested(x) => const_usize(x, what),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Plus,
            expr,
        } => const_usize(expr, what),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match const_usize(expr, what)? {
            0 => Ok(0),
            usize::MAX => Ok(usize::MAX), // -NULL is NULL: no limit
            _ => Err(SqlError::InvalidValue {
                message: format!("{what} must not be negative"),
                pos: span_pos(e),
            }),
        },
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<usize>().map_err(|_| SqlError::InvalidValue {
                message: format!("{what} must be a non-negative integer"),
                pos: span_pos(e),
            }),
            ast::Value::Null => Ok(usize::MAX),
            _ => Err(SqlError::InvalidValue {
                message: format!("{what} must be an integer"),
                pos: span_pos(e),
            }),
        },
        _ => Err(SqlError::unsupported(
            format!("non-constant {what}"),
            span_pos(e),
        )),
    }
}

/// The deepest nesting of queries the binder accepts: each level is a
/// recursion through binding, planning and optimizing (see `MAX_EXPR_DEPTH`).
pub const MAX_QUERY_DEPTH: usize = 1000;

impl Binder<'_> {
    pub fn bind_query(&mut self, q: &ast::Query, outer: &[Scope]) -> SqlResult<BoundQuery> {
        crate::interrupt::check()?;
        super::clauses::check_query(q)?;
        // Row locks are taken by the statement that runs the outermost query
        // (it holds the write transaction); inside a subquery they would be
        // ignored.
        if !q.locks.is_empty() && self.query_depth > 0 {
            return Err(SqlError::unsupported(
                "FOR UPDATE/SHARE in a subquery",
                span_pos(q),
            ));
        }
        let pushed = if let Some(with) = &q.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE", span_pos(q)));
            }
            // One level per CTE: each sees the ones before it, not itself or later ones.
            for c in &with.cte_tables {
                self.ctes
                    .push((norm(&c.alias.name), std::rc::Rc::new(c.clone())));
            }
            with.cte_tables.len()
        } else {
            0
        };
        let r = if self.query_depth >= MAX_QUERY_DEPTH {
            Err(SqlError::TooDeep {
                what: "the query (subqueries, CTEs and views referring to each other)".into(),
                limit: MAX_QUERY_DEPTH,
                pos: span_pos(q),
            })
        } else {
            self.query_depth += 1;
            let r = self.bind_query_body(q, outer);
            self.query_depth -= 1;
            r
        };
        self.ctes.truncate(self.ctes.len() - pushed);
        r
    }

    fn bind_query_body(&mut self, q: &ast::Query, outer: &[Scope]) -> SqlResult<BoundQuery> {
        let order: Vec<ast::OrderByExpr> = match &q.order_by {
            Some(ast::OrderBy {
                kind: ast::OrderByKind::Expressions(v),
                ..
            }) => v.clone(),
            Some(_) => return Err(SqlError::unsupported("ORDER BY ALL", span_pos(q))),
            None => Vec::new(),
        };
        let (limit, offset) = match &q.limit_clause {
            None => (None, 0),
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => (
                limit
                    .as_ref()
                    .map(|l| const_usize(l, "LIMIT"))
                    .transpose()?
                    .filter(|l| *l != usize::MAX),
                offset
                    .as_ref()
                    .map(|o| const_usize(&o.value, "OFFSET"))
                    .transpose()?
                    .unwrap_or(0),
            ),
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (
                Some(const_usize(limit, "LIMIT")?),
                const_usize(offset, "OFFSET")?,
            ),
        };
        // `FETCH FIRST n ROWS ONLY` is the standard's LIMIT (PERCENT was
        // refused above); WITH TIES keeps the rows tied with the last one.
        let limit = match &q.fetch {
            None => limit,
            Some(_) if limit.is_some() => {
                return Err(SqlError::Syntax(
                    "LIMIT and FETCH FIRST cannot both be given".into(),
                ))
            }
            Some(f) => match &f.quantity {
                Some(n) => Some(const_usize(n, "FETCH FIRST")?),
                None => Some(1),
            },
        };
        let mut top_k = limit.map(|l| l.saturating_add(offset));
        let ties = q.fetch.as_ref().is_some_and(|f| f.with_ties);
        if ties {
            if order.is_empty() {
                return Err(SqlError::Syntax(
                    "WITH TIES cannot be specified without ORDER BY clause".into(),
                ));
            }
            if !matches!(&*q.body, ast::SetExpr::Select(_)) {
                return Err(SqlError::unsupported(
                    "FETCH … WITH TIES over a set operation or VALUES",
                    Pos::default(),
                ));
            }
            // The SELECT cuts its sorted rows itself (see `with_ties`).
            self.with_ties = Some((offset, limit.unwrap_or(1)));
            top_k = None;
        }
        let mut bound = match &*q.body {
            ast::SetExpr::Select(s) => self.bind_select(s, &order, top_k, outer)?,
            body => {
                let b = self.bind_set_expr(body, outer)?;
                if order.is_empty() {
                    b
                } else {
                    self.order_output(b, &order, top_k)?
                }
            }
        };
        if !ties && (limit.is_some() || offset > 0) {
            bound.plan = Logical::Limit {
                input: Box::new(bound.plan),
                offset,
                limit,
            };
        }
        Ok(bound)
    }

    pub(super) fn bind_set_expr(
        &mut self,
        body: &ast::SetExpr,
        outer: &[Scope],
    ) -> SqlResult<BoundQuery> {
        crate::interrupt::check()?;
        match body {
            ast::SetExpr::Select(s) => self.bind_select(s, &[], None, outer),
            ast::SetExpr::Query(q) => self.bind_query(q, outer),
            ast::SetExpr::Values(v) => self.bind_values(v),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => self.bind_set_operation(left, op, set_quantifier, right, outer),
            other => Err(SqlError::unsupported(
                format!("query form {other}"),
                Pos::default(),
            )),
        }
    }

    /// ORDER BY over the output columns of a set operation.
    fn order_output(
        &mut self,
        b: BoundQuery,
        order: &[ast::OrderByExpr],
        limit: Option<usize>,
    ) -> SqlResult<BoundQuery> {
        let scope = Scope {
            cols: b
                .out
                .iter()
                .map(|(n, id)| ScopeCol {
                    qualifier: None,
                    name: n.clone(),
                    id: *id,
                    ty: self.cols.ty(*id),
                    qualified_only: false,
                })
                .collect(),
        };
        let mut keys = Vec::new();
        for o in order {
            let expr = match &o.expr {
                e if position_literal(e).is_some() => {
                    let k = at_position(&b.out, position_literal(e).unwrap_or(0), "ORDER BY", e)?;
                    let (_, id) = &b.out[k];
                    col(*id, self.cols.ty(*id))
                }
                e => {
                    let mut cx = ExprCtx::new(&scope, &[]);
                    self.bind_expr(e, &mut cx)?
                }
            };
            refuse_array_order(&expr)?;
            keys.push(sort_key(expr, &o.options));
        }
        Ok(BoundQuery {
            plan: Logical::Sort {
                input: Box::new(b.plan),
                keys,
                limit,
            },
            out: b.out,
        })
    }

    /// `e` as a boolean argument of `clause` (WHERE, AND, ...), the PostgreSQL error
    /// naming the clause otherwise.
    pub(super) fn check_bool(&self, e: PhysExpr, clause: &str, pos: Pos) -> SqlResult<PhysExpr> {
        if e.data_type() != DataType::Boolean && !super::types::is_null_literal(&e) {
            return Err(SqlError::mismatch(
                format!(
                    "argument of {clause} must be type boolean, not type {}",
                    e.data_type()
                ),
                pos,
            ));
        }
        coerce(e, DataType::Boolean, pos)
    }

    /// Attaches subquery joins (scalar, mark) on top of `plan`.
    pub(super) fn attach_pending(
        &mut self,
        mut plan: Logical,
        pending: Vec<super::Pending>,
    ) -> SqlResult<Logical> {
        // Subqueries' outer values come from the plan before any of them attaches:
        // the joins above keep its rows.
        let base = plan.clone();
        for p in pending {
            let (right, on) = if p.unnest {
                let (right, mut on) = self.unnest_subquery(&base, p.plan, Pos::default())?;
                on.extend(p.on);
                (right, on)
            } else {
                (p.plan, p.on)
            };
            plan = Logical::Join {
                join_type: p.join_type,
                left: Box::new(plan),
                right: Box::new(right),
                on,
                mark: p.mark,
            };
        }
        Ok(plan)
    }
}

/// Arrays are held as text, so their order would be the text's, not
/// PostgreSQL's element-wise one: ordering by one is refused, not wrong.
pub(super) fn refuse_array_order(e: &PhysExpr) -> SqlResult<()> {
    super::json_fn::refuse_json_key(e.data_type(), "ORDER BY", true)?;
    if e.data_type().is_array() {
        return Err(SqlError::unsupported(
            "ORDER BY an array (kura compares arrays for equality only)",
            Pos::default(),
        ));
    }
    Ok(())
}
