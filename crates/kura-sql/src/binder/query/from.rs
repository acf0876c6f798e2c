//! Binding of FROM: tables, derived tables, joins and table functions, with their scopes.

use super::*;

impl Binder<'_> {
    /// FROM: a cross product of its items, each possibly with joins.
    pub(super) fn bind_from(
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
                // `USING (x)`: the pairs of columns merged into one output `x`.
                let mut using: Vec<(ScopeCol, ScopeCol, Pos)> = Vec::new();
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
                        let mut named = Vec::new();
                        for n in names {
                            match n.0.last() {
                                Some(ast::ObjectNamePart::Identifier(i)) => {
                                    named.push((norm(i), crate::binder::pos_of(i)))
                                }
                                _ => return Err(SqlError::Syntax("bad USING column".into())),
                            }
                        }
                        self.using_pairs(&scope, &rscope, &named, &mut using)?
                    }
                    Some(ast::JoinConstraint::Natural) => {
                        // NATURAL: USING every column name both sides show (none: a
                        // cross product), in the left side's order.
                        let pos = span_pos(&j.relation);
                        let mut named: Vec<(String, Pos)> = Vec::new();
                        for c in scope.cols.iter().filter(|c| visible(c)) {
                            let shared = rscope.cols.iter().any(|r| visible(r) && r.name == c.name);
                            if shared && !named.iter().any(|(n, _)| *n == c.name) {
                                named.push((c.name.clone(), pos));
                            }
                        }
                        self.using_pairs(&scope, &rscope, &named, &mut using)?
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
                if !using.is_empty() {
                    let kind = match (jt, swap) {
                        (JoinType::Full, _) => UsingSide::Either,
                        (_, true) => UsingSide::Right,
                        _ => UsingSide::Left,
                    };
                    (plan, scope) = self.merge_using(plan, scope, &using, kind)?;
                }
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

    pub(super) fn bind_factor(
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
                    // The alias names the join's output: USING's merged-away inputs go.
                    s.cols.retain(|c| !c.qualified_only);
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
}

/// Whether a column is one `SELECT *` shows (what NATURAL JOIN matches by name).
fn visible(c: &ScopeCol) -> bool {
    !c.qualified_only && !crate::binder::is_hidden(&c.name)
}

/// Which input a `JOIN ... USING` column takes its value from.
#[derive(Clone, Copy)]
enum UsingSide {
    /// Inner and left joins: the left input's (never NULL where the row matched).
    Left,
    /// Right joins: the right input's.
    Right,
    /// Full joins: whichever is not NULL (`COALESCE(l, r)`).
    Either,
}

impl Binder<'_> {
    /// The equality conditions of `USING (named)` between the two sides, each pair of
    /// columns noted in `using`.
    fn using_pairs(
        &mut self,
        left: &Scope,
        right: &Scope,
        named: &[(String, Pos)],
        using: &mut Vec<(ScopeCol, ScopeCol, Pos)>,
    ) -> SqlResult<Vec<PhysExpr>> {
        let mut on = Vec::new();
        for (name, pos) in named {
            let l = left.lookup(None, name);
            let r = right.lookup(None, name);
            let (Some(l), Some(r)) = (l.first(), r.first()) else {
                return Err(SqlError::UnknownColumn {
                    name: name.clone(),
                    pos: *pos,
                    suggestion: None,
                });
            };
            on.push(self.comparison(
                kura_exec::expr::BinaryOp::Eq,
                col(l.id, l.ty),
                col(r.id, r.ty),
                *pos,
            )?);
            using.push(((*l).clone(), (*r).clone(), *pos));
        }
        Ok(on)
    }

    /// The scope of `a JOIN b USING (x, ...)` as PostgreSQL makes it: each USING column once
    /// and first (`x`, of the common type), then the other columns of the left and right
    /// inputs; the inputs' own `x` stay reachable as `a.x` / `b.x` only.
    fn merge_using(
        &mut self,
        plan: Logical,
        scope: Scope,
        using: &[(ScopeCol, ScopeCol, Pos)],
        side: UsingSide,
    ) -> SqlResult<(Logical, Scope)> {
        let is_pair_member = |c: &ScopeCol| {
            using
                .iter()
                .any(|(l, r, _)| (c.id == l.id || c.id == r.id) && c.name == l.name)
        };
        // A column of the join's scope is carried through a projection under a new id;
        // the merged values are computed from the join's own columns.
        let (mut exprs, carried) = self.carry(&scope);
        let mut cols = Vec::with_capacity(carried.cols.len() + using.len());
        for (l, r, pos) in using {
            let ty = super::super::types::common_type(l.ty, r.ty).ok_or_else(|| {
                SqlError::mismatch(
                    format!(
                        "JOIN/USING types {} and {} cannot be matched for column \"{}\"",
                        l.ty, r.ty, l.name
                    ),
                    *pos,
                )
            })?;
            let value = |c: &ScopeCol| super::super::types::coerce(col(c.id, c.ty), ty, *pos);
            let e = match side {
                UsingSide::Left => value(l)?,
                UsingSide::Right => value(r)?,
                UsingSide::Either => PhysExpr::Func {
                    func: kura_exec::expr::ScalarFunc::Coalesce,
                    args: vec![value(l)?, value(r)?],
                    data_type: ty,
                },
            };
            let id = self.cols.add(&l.name, ty);
            exprs.push((e, id));
            cols.push(ScopeCol {
                qualifier: None,
                name: l.name.clone(),
                id,
                ty,
                qualified_only: false,
            });
        }
        for (c, original) in carried.cols.iter().zip(&scope.cols) {
            let mut c = c.clone();
            if is_pair_member(original) {
                c.qualified_only = true;
            }
            cols.push(c);
        }
        let plan = Logical::Project {
            input: Box::new(plan),
            exprs,
        };
        Ok((plan, Scope { cols }))
    }
}
