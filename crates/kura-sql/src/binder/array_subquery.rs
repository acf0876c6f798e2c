//! `ARRAY(SELECT ...)`: a subquery's one column as an array, in the
//! subquery's order, `'{}'` when it has no rows. Bound as the scalar subquery
//! `SELECT array_agg(e ORDER BY k) FROM ...` (correlated like any other).

use kura_common::Value;
use kura_exec::expr::{PhysExpr, ScalarFunc};
use sqlparser::ast;

use super::vocab::ExprCtx;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

impl Binder<'_> {
    /// `ARRAY(q)`.
    pub(super) fn array_subquery(
        &mut self,
        q: &ast::Query,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let aggregated = aggregated(q, p)?;
        let value = self.scalar_subquery(&aggregated, cx, p)?;
        let t = value.data_type();
        Ok(PhysExpr::Func {
            func: ScalarFunc::Coalesce,
            args: vec![value, PhysExpr::literal(Value::Text("{}".into()), t)],
            data_type: t,
        })
    }
}

/// `q` with its one output column aggregated into an array, in `q`'s order:
/// a plain SELECT gets `array_agg(e ORDER BY ...)` in place of `e`; anything
/// else unordered becomes `SELECT array_agg(x) FROM (q) AS s(x)`. Refused when
/// `q`'s order could not be kept that way.
fn aggregated(q: &ast::Query, p: Pos) -> SqlResult<ast::Query> {
    let refused = || {
        SqlError::unsupported(
            "ARRAY(subquery) over a subquery with ORDER BY and grouping, DISTINCT, \
             LIMIT or set operations",
            p,
        )
    };
    let order: Vec<ast::OrderByExpr> = match &q.order_by {
        None => Vec::new(),
        Some(ast::OrderBy {
            kind: ast::OrderByKind::Expressions(exprs),
            interpolate: None,
        }) => exprs.clone(),
        Some(_) => return Err(refused()),
    };
    let plain = match q.body.as_ref() {
        ast::SetExpr::Select(s) => {
            q.limit_clause.is_none()
                && q.fetch.is_none()
                && q.locks.is_empty()
                && s.distinct.is_none()
                && s.having.is_none()
                && s.named_window.is_empty()
                && matches!(&s.group_by, ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
                && s.projection.len() == 1
        }
        _ => false,
    };
    if plain {
        let ast::SetExpr::Select(s) = q.body.as_ref() else {
            return Err(refused());
        };
        let (item, alias) = match &s.projection[0] {
            ast::SelectItem::UnnamedExpr(e) => (e.clone(), None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias)),
            _ => return Err(refused()),
        };
        // `ORDER BY 1` and `ORDER BY alias` name the output column, which
        // inside array_agg is its expression.
        let mut order = order;
        for o in &mut order {
            let names_output = match &o.expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) if n == "1" => true,
                    ast::Value::Number(n, _) => {
                        return Err(SqlError::InvalidColumnReference {
                            message: format!("ORDER BY position {n} is not in select list"),
                            pos: p,
                        })
                    }
                    _ => false,
                },
                ast::Expr::Identifier(id) => {
                    alias.is_some_and(|a| a.value.eq_ignore_ascii_case(&id.value))
                }
                _ => false,
            };
            if names_output {
                o.expr = item.clone();
            }
        }
        let mut select = s.as_ref().clone();
        select.projection = vec![ast::SelectItem::UnnamedExpr(array_agg(item, order))];
        let mut out = q.clone();
        out.body = Box::new(ast::SetExpr::Select(Box::new(select)));
        out.order_by = None;
        return Ok(out);
    }
    if !order.is_empty() {
        return Err(refused());
    }
    let sql = format!("SELECT array_agg(s.x) FROM ({q}) AS s(x)");
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(&sql)
        .and_then(|mut parser| parser.parse_query())
        .map_err(|e| SqlError::Internal(format!("ARRAY(subquery) as {sql}: {e}")))?;
    Ok(*parsed)
}

/// `array_agg(e ORDER BY order)`.
fn array_agg(e: ast::Expr, order: Vec<ast::OrderByExpr>) -> ast::Expr {
    let template = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql("array_agg(x)")
        .and_then(|mut p| p.parse_expr())
        .expect("a fixed expression parses");
    let ast::Expr::Function(mut f) = template else {
        unreachable!("array_agg(x) is a call")
    };
    let clauses = if order.is_empty() {
        Vec::new()
    } else {
        vec![ast::FunctionArgumentClause::OrderBy(order)]
    };
    f.args = ast::FunctionArguments::List(ast::FunctionArgumentList {
        duplicate_treatment: None,
        args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))],
        clauses,
    });
    ast::Expr::Function(f)
}
