//! Binding of queries: WITH, set operations, SELECT (FROM, WHERE, GROUP BY, HAVING,
//! DISTINCT, the select list), ORDER BY, LIMIT and OFFSET.

use std::collections::HashSet;

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use kura_exec::JoinType;
use sqlparser::ast::{self, Spanned};

use super::expr::ExprCtx;
use super::types::{coerce, common_type};
use super::{norm, AggCollector, Binder, BoundQuery, Pending, Scope, ScopeCol};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, conjunction, refs_of, replace_subexprs, ColId, LSortKey, Logical};

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

    fn bind_values(&mut self, v: &ast::Values) -> SqlResult<BoundQuery> {
        let scope = Scope::default();
        let mut rows: Vec<Vec<PhysExpr>> = Vec::new();
        for r in &v.rows {
            let mut cx = ExprCtx::new(&scope, &[]);
            let row = r
                .content
                .iter()
                .map(|e| self.bind_expr(e, &mut cx))
                .collect::<SqlResult<Vec<_>>>()?;
            rows.push(row);
        }
        let width = rows.first().map_or(0, |r| r.len());
        if rows.iter().any(|r| r.len() != width) {
            return Err(SqlError::mismatch(
                "VALUES lists must all be the same length",
                Pos::default(),
            ));
        }
        let mut types = Vec::new();
        for c in 0..width {
            let mut t: Option<DataType> = None;
            for r in &rows {
                // Quoted constants take the type of the typed rows (PostgreSQL's
                // `unknown`); text when every row has one.
                if super::types::is_untyped_null(&r[c]) || super::types::is_untyped_literal(&r[c]) {
                    continue;
                }
                let rt = r[c].data_type();
                t = Some(match t {
                    None => rt,
                    Some(x) => common_type(x, rt).ok_or_else(|| {
                        SqlError::mismatch(
                            format!("VALUES types {x} and {rt} cannot be matched"),
                            Pos::default(),
                        )
                    })?,
                });
            }
            types.push(t.unwrap_or(DataType::Varchar(None)));
        }
        let mut values = Vec::new();
        for r in rows {
            let mut vals = Vec::new();
            for (e, t) in r.into_iter().zip(&types) {
                match super::types::fold(coerce(e, *t, Pos::default())?) {
                    PhysExpr::Literal { value, .. } => vals.push(value),
                    // A constant that did not fold failed to evaluate: say why.
                    e if {
                        let mut cols = Vec::new();
                        e.columns(&mut cols);
                        cols.is_empty()
                    } =>
                    {
                        // A constant fold keeps as it is (a typed NULL) is
                        // evaluated here; one that fails says why.
                        match e.eval(&kura_common::Batch::with_rows(1)) {
                            Ok(v) if v.len() == 1 => vals.push(v.get_value(0)),
                            r => {
                                return Err(SqlError::InvalidValue {
                                    message: r.err().map_or_else(
                                        || "a value that cannot be computed".into(),
                                        |x| x.to_string(),
                                    ),
                                    pos: Pos::default(),
                                })
                            }
                        }
                    }
                    _ => {
                        return Err(SqlError::unsupported(
                            "non-constant expressions in VALUES",
                            Pos::default(),
                        ))
                    }
                }
            }
            values.push(vals);
        }
        let out: Vec<(String, ColId)> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = format!("column{}", i + 1);
                (n.clone(), self.cols.add(&n, *t))
            })
            .collect();
        Ok(BoundQuery {
            plan: Logical::Values {
                rows: values,
                cols: out.iter().map(|o| o.1).collect(),
            },
            out,
        })
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

    /// FROM: a cross product of its items, each possibly with joins.
    fn bind_from(
        &mut self,
        from: &[ast::TableWithJoins],
        outer: &[Scope],
    ) -> SqlResult<(Logical, Scope)> {
        let mut acc: Option<(Logical, Scope)> = None;
        for twj in from {
            let (mut plan, mut scope) = self.bind_factor(&twj.relation, outer)?;
            for j in &twj.joins {
                let (rplan, rscope) = self.bind_factor(&j.relation, outer)?;
                let (jt, constraint, swap) = match &j.join_operator {
                    ast::JoinOperator::Join(c) | ast::JoinOperator::Inner(c) => {
                        (JoinType::Inner, Some(c), false)
                    }
                    ast::JoinOperator::CrossJoin(_) => (JoinType::Inner, None, false),
                    ast::JoinOperator::Left(c) | ast::JoinOperator::LeftOuter(c) => {
                        (JoinType::Left, Some(c), false)
                    }
                    ast::JoinOperator::Right(c) | ast::JoinOperator::RightOuter(c) => {
                        (JoinType::Left, Some(c), true)
                    }
                    ast::JoinOperator::FullOuter(c) => (JoinType::Full, Some(c), false),
                    other => {
                        return Err(SqlError::unsupported(
                            format!("join type {other:?}")
                                .chars()
                                .take(40)
                                .collect::<String>(),
                            span_pos(&j.relation),
                        ))
                    }
                };
                let mut merged = scope.clone();
                merged.cols.extend(rscope.cols.clone());
                let on = match constraint {
                    None | Some(ast::JoinConstraint::None) => Vec::new(),
                    Some(ast::JoinConstraint::On(e)) => {
                        let mut cx = ExprCtx::new(&merged, outer);
                        cx.clause = Some("JOIN conditions");
                        let b = self.bind_expr(e, &mut cx)?;
                        if !cx.pending.is_empty() {
                            return Err(SqlError::unsupported(
                                "subqueries in JOIN ... ON",
                                span_pos(e),
                            ));
                        }
                        let mut v = Vec::new();
                        crate::logical::conjuncts(
                            self.check_bool(b, "JOIN/ON", span_pos(e))?,
                            &mut v,
                        );
                        v
                    }
                    Some(ast::JoinConstraint::Using(names)) => {
                        let mut v = Vec::new();
                        for n in names {
                            let (name, pos) = match n.0.last() {
                                Some(ast::ObjectNamePart::Identifier(i)) => {
                                    (norm(i), super::pos_of(i))
                                }
                                _ => return Err(SqlError::Syntax("bad USING column".into())),
                            };
                            let l = scope.lookup(None, &name);
                            let r = rscope.lookup(None, &name);
                            let (Some(l), Some(r)) = (l.first(), r.first()) else {
                                return Err(SqlError::UnknownColumn {
                                    name,
                                    pos,
                                    suggestion: None,
                                });
                            };
                            v.push(self.comparison(
                                kura_exec::expr::BinaryOp::Eq,
                                col(l.id, l.ty),
                                col(r.id, r.ty),
                                pos,
                            )?);
                        }
                        v
                    }
                    Some(ast::JoinConstraint::Natural) => {
                        return Err(SqlError::unsupported("NATURAL JOIN", span_pos(&j.relation)))
                    }
                };
                plan = if swap {
                    Logical::Join {
                        join_type: jt,
                        left: Box::new(rplan),
                        right: Box::new(plan),
                        on,
                        mark: None,
                    }
                } else {
                    Logical::Join {
                        join_type: jt,
                        left: Box::new(plan),
                        right: Box::new(rplan),
                        on,
                        mark: None,
                    }
                };
                scope = merged;
            }
            acc = Some(match acc {
                None => (plan, scope),
                Some((p, mut s)) => {
                    s.cols.extend(scope.cols);
                    (
                        Logical::Join {
                            join_type: JoinType::Inner,
                            left: Box::new(p),
                            right: Box::new(plan),
                            on: Vec::new(),
                            mark: None,
                        },
                        s,
                    )
                }
            });
        }
        Ok(acc.unwrap_or_else(|| {
            (
                Logical::Values {
                    rows: vec![vec![]],
                    cols: Vec::new(),
                },
                Scope::default(),
            )
        }))
    }

    fn bind_factor(
        &mut self,
        f: &ast::TableFactor,
        outer: &[Scope],
    ) -> SqlResult<(Logical, Scope)> {
        match f {
            ast::TableFactor::Table {
                name,
                alias,
                args: None,
                sample,
                ..
            } => match sample {
                Some(s) => self.bind_sampled_relation(name, alias.as_ref(), s),
                None => self.bind_relation(name, alias.as_ref()),
            },
            ast::TableFactor::Derived {
                sample: Some(_),
                subquery,
                ..
            } => Err(SqlError::unsupported(
                "TABLESAMPLE on a subquery",
                span_pos(subquery.as_ref()),
            )),
            ast::TableFactor::Derived {
                subquery,
                alias,
                lateral: false,
                ..
            } => {
                let q = self.bind_query(subquery, outer)?;
                let qualifier = alias.as_ref().map_or(String::new(), |a| norm(&a.name));
                self.derived_scope(q, &qualifier, &[], alias.as_ref())
            }
            ast::TableFactor::Table { args: Some(_), .. }
            | ast::TableFactor::Function { .. }
            | ast::TableFactor::UNNEST { .. } => self.bind_table_function(f, outer, span_pos(f)),
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let (p, mut s) = self.bind_from(std::slice::from_ref(table_with_joins), outer)?;
                if let Some(a) = alias {
                    for c in &mut s.cols {
                        c.qualifier = Some(norm(&a.name));
                    }
                }
                Ok((p, s))
            }
            other => Err(SqlError::unsupported(
                format!("FROM item {other}"),
                span_pos(other),
            )),
        }
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

    fn bind_select(
        &mut self,
        s: &ast::Select,
        order: &[ast::OrderByExpr],
        top_k: Option<usize>,
        outer: &[Scope],
    ) -> SqlResult<BoundQuery> {
        if let Some(rewritten) = super::table_fn::select_list_srf(s) {
            return self.bind_select(&rewritten, order, top_k, outer);
        }
        super::clauses::check_select(s)?;
        let ties = self.with_ties.take();
        let (mut plan, scope) = self.bind_from(&s.from, outer)?;

        // WHERE: subquery predicates become semi/anti joins, the rest one filter.
        if let Some(w) = &s.selection {
            let mut parts = Vec::new();
            ast_conjuncts(w, &mut parts);
            let mut filters = Vec::new();
            let mut cx = ExprCtx::new(&scope, outer);
            cx.clause = Some("WHERE");
            for p in parts {
                if let Some(joined) = self.try_subquery_conjunct(p, plan.clone(), &scope, outer)? {
                    plan = joined;
                    continue;
                }
                let e = self.bind_expr(p, &mut cx)?;
                filters.push(self.check_bool(e, "WHERE", span_pos(p))?);
            }
            plan = self.attach_pending(plan, std::mem::take(&mut cx.pending))?;
            if let Some(f) = conjunction(filters) {
                plan = Logical::Filter {
                    input: Box::new(plan),
                    predicate: f,
                };
            }
        }

        // Set-returning items of the select list repeat the rows first.
        let srf = super::select_srf::has_srf_items(s);
        let rewritten;
        let (mut plan, scope, s) = if srf {
            let (p, sc, sel) = self.bind_srf_items(s, plan, &scope, outer)?;
            rewritten = sel;
            (p, sc, &rewritten)
        } else {
            (plan, scope, s)
        };
        // Select list, HAVING and ORDER BY are bound collecting aggregates.
        let mut cx = ExprCtx::new(&scope, outer);
        cx.agg = Some(AggCollector::default());
        cx.win = Some(super::window::WindowCollector::new(&s.named_window)?);
        let mut items: Vec<(String, PhysExpr, Pos)> = Vec::new();
        for item in &s.projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(e, &mut cx)?;
                    items.push((derived_name(e), b, span_pos(e)));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.bind_expr(expr, &mut cx)?;
                    items.push((norm(alias), b, span_pos(expr)));
                }
                ast::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() {
                        return Err(SqlError::Syntax(
                            "SELECT * with no tables specified is not valid".into(),
                        ));
                    }
                    for c in scope.cols.iter().filter(|c| !super::is_hidden(&c.name)) {
                        items.push((c.name.clone(), col(c.id, c.ty), Pos::default()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            super::object_name(n)?.0
                        }
                        _ => return Err(SqlError::unsupported("expression.*", Pos::default())),
                    };
                    let cols: Vec<&ScopeCol> = scope
                        .cols
                        .iter()
                        .filter(|c| c.qualifier.as_deref() == Some(q.as_str()))
                        .filter(|c| !super::is_hidden(&c.name))
                        .collect();
                    if cols.is_empty() {
                        return Err(SqlError::UnknownTable {
                            name: q,
                            pos: Pos::default(),
                            suggestion: None,
                        });
                    }
                    for c in cols {
                        items.push((c.name.clone(), col(c.id, c.ty), Pos::default()));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(
                        format!("select item {other}"),
                        Pos::default(),
                    ))
                }
            }
        }
        let group_items: Vec<&ast::Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, _) => v.iter().collect(),
            ast::GroupByExpr::All(_) => {
                return Err(SqlError::unsupported("GROUP BY ALL", Pos::default()))
            }
        };
        // The distinct keys, and the grouping sets over them if any.
        let (group_asts, sets) = super::grouping_sets::expand(&group_items)?;
        let having = match &s.having {
            Some(h) => {
                let (win, clause) = (cx.win.take(), cx.clause.replace("HAVING"));
                let e = self.bind_expr(h, &mut cx);
                (cx.win, cx.clause) = (win, clause);
                Some(self.check_bool(e?, "HAVING", span_pos(h))?)
            }
            None => None,
        };
        // ORDER BY keys: select-list positions, output names, or expressions.
        enum OrderRef {
            Item(usize),
            Expr(PhysExpr),
        }
        let mut order_refs = Vec::new();
        // DISTINCT ON keys name what ORDER BY keys may: positions, output
        // names, or expressions.
        let distinct_on: Vec<&ast::Expr> = match &s.distinct {
            Some(ast::Distinct::On(keys)) => keys.iter().collect(),
            _ => Vec::new(),
        };
        let mut on_refs = Vec::new();
        let clauses = order
            .iter()
            .map(|o| (&o.expr, Some(&o.options), "ORDER BY"))
            .chain(distinct_on.iter().map(|e| (*e, None, "DISTINCT ON")));
        for (expr, options, clause) in clauses {
            let r = match expr {
                e if position_literal(e).is_some() => OrderRef::Item(at_position(
                    &items,
                    position_literal(e).unwrap_or(0),
                    clause,
                    e,
                )?),
                ast::Expr::Identifier(id) if items.iter().any(|i| i.0 == norm(id)) => {
                    OrderRef::Item(items.iter().position(|i| i.0 == norm(id)).unwrap_or(0))
                }
                e => {
                    let b = self.bind_expr(e, &mut cx)?;
                    match items.iter().position(|i| i.1 == b) {
                        Some(k) => OrderRef::Item(k),
                        None => OrderRef::Expr(b),
                    }
                }
            };
            match options {
                Some(o) => order_refs.push((r, o)),
                None => on_refs.push(r),
            }
        }

        let mut collector = cx.agg.take().unwrap_or_default();
        let mut windows = cx.win.take().unwrap_or_default();
        let mut pending = std::mem::take(&mut cx.pending);
        let aggregating = !collector.aggs.is_empty()
            || !group_asts.is_empty()
            || having.is_some()
            || sets.is_some()
            || !collector.groupings.is_empty();
        if srf && (aggregating || !windows.calls.is_empty()) {
            // PostgreSQL runs them after aggregates and windows; here they
            // would repeat the rows before.
            return Err(SqlError::unsupported(
                "set-returning functions in a SELECT list that aggregates or has a window",
                Pos::default(),
            ));
        }
        // Grouping sets, and `grouping(...)`, aggregate per set into fresh key ids.
        let by_sets = sets.is_some() || !collector.groupings.is_empty();
        // A subquery inside an aggregate's argument (`count(x IN (SELECT ...))`)
        // is evaluated per input row: its join goes below the aggregation.
        let agg_refs: HashSet<ColId> = collector
            .aggs
            .iter()
            .flat_map(|a| a.0.exprs())
            .flat_map(refs_of)
            .collect();
        let (below, above): (Vec<Pending>, Vec<Pending>) = pending.drain(..).partition(|p| {
            p.mark
                .into_iter()
                .chain(p.plan.output())
                .any(|c| agg_refs.contains(&c))
        });
        let pending = above;
        if !below.is_empty() {
            plan = self.attach_pending(plan, below)?;
        }
        let mut having = having;
        if aggregating {
            // GROUP BY expressions: positions, output names, or expressions over FROM.
            let mut gcx = ExprCtx::new(&scope, outer);
            gcx.clause = Some("GROUP BY");
            let mut group: Vec<(PhysExpr, ColId)> = Vec::new();
            // The index in `group` of each of `group_asts`.
            let mut slots: Vec<usize> = Vec::new();
            for g in &group_asts {
                let e = match g {
                    e if position_literal(e).is_some() => {
                        let k =
                            at_position(&items, position_literal(e).unwrap_or(0), "GROUP BY", e)?;
                        items[k].1.clone()
                    }
                    ast::Expr::Identifier(id)
                        if scope.lookup(None, &norm(id)).is_empty()
                            && items.iter().any(|i| i.0 == norm(id)) =>
                    {
                        items
                            .iter()
                            .find(|i| i.0 == norm(id))
                            .map(|i| i.1.clone())
                            .unwrap_or_else(|| col(0, DataType::Integer))
                    }
                    e => self.bind_expr(e, &mut gcx)?,
                };
                if let Some(i) = group.iter().position(|(x, _)| *x == e) {
                    slots.push(i);
                    continue;
                }
                let id = match &e {
                    PhysExpr::Column { index, .. } if !by_sets => *index,
                    _ => self.cols.add(&e.to_string(), e.data_type()),
                };
                slots.push(group.len());
                group.push((e, id));
            }
            let mut groupings = Vec::new();
            for (id, args, pos) in &collector.groupings {
                let mut idx = Vec::new();
                for a in args {
                    let Some(i) = group.iter().position(|(x, _)| x == a) else {
                        return Err(SqlError::Grouping {
                            message: "arguments to GROUPING must be grouping expressions of the associated query level".into(),
                            pos: *pos,
                        });
                    };
                    idx.push(i);
                }
                groupings.push((*id, idx));
            }
            if !gcx.pending.is_empty() {
                return Err(SqlError::unsupported(
                    "subqueries in GROUP BY",
                    Pos::default(),
                ));
            }
            let mut valid: HashSet<ColId> = group.iter().map(|g| g.1).collect();
            valid.extend(collector.aggs.iter().map(|a| a.1));
            valid.extend(collector.groupings.iter().map(|g| g.0));
            valid.extend(windows.ids());
            let outer_ids: HashSet<ColId> = outer
                .iter()
                .flat_map(|s| s.cols.iter().map(|c| c.id))
                .collect();
            valid.extend(&outer_ids);
            // A subquery evaluated above the aggregation may read only grouped
            // columns of this query (PostgreSQL: "subquery uses ungrouped column").
            let own: HashSet<ColId> = scope.cols.iter().map(|c| c.id).collect();
            for p in &pending {
                let mut used = p.plan.free_columns();
                p.on.iter().for_each(|e| used.extend(refs_of(e)));
                let own_produced: HashSet<ColId> = p.plan.output().into_iter().collect();
                if let Some(bad) = used
                    .into_iter()
                    .find(|c| own.contains(c) && !valid.contains(c) && !own_produced.contains(c))
                {
                    return Err(SqlError::NotGrouped {
                        name: self.cols.name(bad).to_string(),
                        pos: Pos::default(),
                    });
                }
            }
            for p in &pending {
                valid.extend(p.plan.output());
                valid.extend(p.mark);
            }
            // Keys that are not a column kept under its own id.
            let replaceable: Vec<(PhysExpr, ColId)> = group
                .iter()
                .filter(|(e, id)| !matches!(e, PhysExpr::Column { index, .. } if index == id))
                .cloned()
                .collect();
            let fix = |b: &Binder, e: &PhysExpr, pos: Pos| -> SqlResult<PhysExpr> {
                let e = replace_subexprs(e, &replaceable);
                if let Some(bad) = refs_of(&e).into_iter().find(|c| !valid.contains(c)) {
                    return Err(SqlError::NotGrouped {
                        name: b.cols.name(bad).to_string(),
                        pos,
                    });
                }
                Ok(e)
            };
            for it in items.iter_mut() {
                it.1 = fix(self, &it.1, it.2)?;
            }
            if let Some(h) = having.take() {
                having = Some(fix(self, &h, Pos::default())?);
            }
            for r in order_refs
                .iter_mut()
                .map(|(r, _)| r)
                .chain(on_refs.iter_mut())
            {
                if let OrderRef::Expr(e) = r {
                    *e = fix(self, e, Pos::default())?;
                }
            }
            windows.map_exprs(&mut |e| fix(self, e, Pos::default()))?;
            if by_sets {
                for (g, _) in &group {
                    super::json_fn::refuse_json_key(g.data_type(), "GROUPING SETS", false)?;
                }
            } else {
                group = self.group_jsonb_by_value(group, &mut collector.aggs, "GROUP BY")?;
            }
            plan = if by_sets {
                let sets = sets.map_or_else(
                    || vec![(0..group.len()).collect()],
                    |s| {
                        s.iter()
                            .map(|set| set.iter().map(|&k| slots[k]).collect())
                            .collect()
                    },
                );
                self.plan_grouping_sets(plan, &group, &collector.aggs, &sets, &groupings)
            } else {
                Logical::Aggregate {
                    input: Box::new(plan),
                    group,
                    aggs: collector.aggs,
                }
            };
        }
        plan = self.attach_pending(plan, pending)?;
        if let Some(h) = having {
            plan = Logical::Filter {
                input: Box::new(plan),
                predicate: h,
            };
        }
        plan = self.plan_windows(plan, windows);

        // Projection (with hidden ORDER BY columns), DISTINCT, ORDER BY.
        let mut exprs: Vec<(PhysExpr, ColId)> = Vec::new();
        let mut out = Vec::new();
        for (name, e, _) in &items {
            let id = self.cols.add(name, e.data_type());
            self.same_record(e, id);
            exprs.push((e.clone(), id));
            out.push((name.clone(), id));
        }
        let mut keys = Vec::new();
        let mut hidden = false;
        // DISTINCT ON's keys, as columns of the projection (hidden ones added).
        let mut on_keys = Vec::new();
        let mut on_hidden: Vec<(PhysExpr, PhysExpr)> = Vec::new();
        for r in on_refs {
            on_keys.push(match r {
                OrderRef::Item(k) => col(exprs[k].1, exprs[k].0.data_type()),
                OrderRef::Expr(e) => {
                    hidden = true;
                    let id = self.cols.add("?distinct on?", e.data_type());
                    exprs.push((e.clone(), id));
                    on_hidden.push((e.clone(), col(id, e.data_type())));
                    col(id, e.data_type())
                }
            });
        }
        for (r, opts) in order_refs {
            let e = match r {
                OrderRef::Item(k) => col(exprs[k].1, exprs[k].0.data_type()),
                // The same expression as a DISTINCT ON key: the same column.
                OrderRef::Expr(e) if on_hidden.iter().any(|(x, _)| *x == e) => on_hidden
                    .iter()
                    .find(|(x, _)| *x == e)
                    .map(|(_, c)| c.clone())
                    .unwrap_or(e),
                OrderRef::Expr(e) => {
                    if matches!(s.distinct, Some(ast::Distinct::Distinct)) {
                        return Err(SqlError::InvalidValue {
                            message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                            pos: Pos::default(),
                        });
                    }
                    hidden = true;
                    let id = self.cols.add("?order?", e.data_type());
                    exprs.push((e.clone(), id));
                    col(id, e.data_type())
                }
            };
            refuse_array_order(&e)?;
            keys.push(sort_key(e, opts));
        }
        plan = Logical::Project {
            input: Box::new(plan),
            exprs,
        };
        match &s.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                let group = out
                    .iter()
                    .map(|(_, id)| (col(*id, self.cols.ty(*id)), *id))
                    .collect();
                let mut aggs = Vec::new();
                let group = self.group_jsonb_by_value(group, &mut aggs, "SELECT DISTINCT")?;
                plan = Logical::Aggregate {
                    input: Box::new(plan),
                    group,
                    aggs,
                };
            }
            Some(ast::Distinct::On(_)) => {
                plan = self.plan_distinct_on(plan, on_keys, &keys)?;
                hidden = true;
            }
        }
        if let Some((offset, n)) = ties {
            plan = self.with_ties(plan, &keys, offset, n);
            // The numbering columns go with the final projection.
            hidden = true;
        }
        if !keys.is_empty() {
            plan = Logical::Sort {
                input: Box::new(plan),
                keys,
                limit: top_k,
            };
        }
        if hidden {
            let exprs = out
                .iter()
                .map(|(_, id)| (col(*id, self.cols.ty(*id)), *id))
                .collect();
            plan = Logical::Project {
                input: Box::new(plan),
                exprs,
            };
        }
        Ok(BoundQuery { plan, out })
    }

    /// `SELECT DISTINCT ON (keys)`: the first row of each set of rows equal
    /// on `keys` (NULLs equal), first in the ORDER BY's order `order` — whose
    /// leading keys must be the DISTINCT ON keys, as PostgreSQL requires. The
    /// row is the one `row_number()` over the keys' partitions numbers 1.
    fn plan_distinct_on(
        &mut self,
        plan: Logical,
        on_keys: Vec<PhysExpr>,
        order: &[LSortKey],
    ) -> SqlResult<Logical> {
        if order
            .iter()
            .take(on_keys.len())
            .any(|k| !on_keys.contains(&k.expr))
        {
            return Err(SqlError::InvalidColumnReference {
                message: "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"
                    .into(),
                pos: Pos::default(),
            });
        }
        for k in &on_keys {
            super::json_fn::refuse_json_key(k.data_type(), "DISTINCT ON", false)?;
        }
        let rn = self.cols.add("?row_number?", DataType::BigInt);
        let numbered = Logical::Window {
            input: Box::new(plan),
            partition: on_keys,
            order: order.to_vec(),
            funcs: vec![(kura_exec::window_plan::WindowFunc::RowNumber, rn)],
        };
        Ok(Logical::Filter {
            input: Box::new(numbered),
            predicate: PhysExpr::Binary {
                op: kura_exec::expr::BinaryOp::Eq,
                left: Box::new(col(rn, DataType::BigInt)),
                right: Box::new(PhysExpr::literal(Value::BigInt(1), DataType::BigInt)),
                data_type: DataType::Boolean,
            },
        })
    }

    /// `OFFSET m FETCH FIRST n ROWS WITH TIES` over rows sorted by `keys`: the
    /// rows after the first `m` up to the `m + n`-th and those tied with it —
    /// the rows numbered past `m` whose rank (ties share the lowest) is at
    /// most `m + n`.
    fn with_ties(&mut self, plan: Logical, keys: &[LSortKey], offset: usize, n: usize) -> Logical {
        use kura_exec::expr::BinaryOp;
        use kura_exec::window_plan::WindowFunc;
        let rn = self.cols.add("?row_number?", DataType::BigInt);
        let rank = self.cols.add("?rank?", DataType::BigInt);
        let big = |v: usize| {
            PhysExpr::literal(
                Value::BigInt(v.min(i64::MAX as usize) as i64),
                DataType::BigInt,
            )
        };
        let compare = |op, id, v| PhysExpr::Binary {
            op,
            left: Box::new(col(id, DataType::BigInt)),
            right: Box::new(big(v)),
            data_type: DataType::Boolean,
        };
        let numbered = Logical::Window {
            input: Box::new(plan),
            partition: Vec::new(),
            order: keys.to_vec(),
            funcs: vec![(WindowFunc::RowNumber, rn), (WindowFunc::Rank, rank)],
        };
        Logical::Filter {
            input: Box::new(numbered),
            predicate: conjunction(vec![
                compare(BinaryOp::Gt, rn, offset),
                compare(BinaryOp::LtEq, rank, offset.saturating_add(n)),
            ])
            .unwrap_or_else(|| PhysExpr::literal(Value::Boolean(true), DataType::Boolean)),
        }
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

pub(super) fn sort_key(expr: PhysExpr, o: &ast::OrderByOptions) -> LSortKey {
    let descending = o.sort.as_ref().is_some_and(|s| match s {
        ast::OrderBySort::Desc => true,
        // `USING >` orders descending (other operators are refused).
        ast::OrderBySort::Using(op) => op.to_string() == ">",
        ast::OrderBySort::Asc => false,
    });
    // PostgreSQL: NULLs sort as larger than every value by default.
    let nulls_first = o.nulls_first.unwrap_or(descending);
    LSortKey {
        expr,
        descending,
        nulls_first,
    }
}

#[allow(dead_code)]
fn _unused(_: Value) {}
