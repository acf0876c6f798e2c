//! Subqueries as joins. EXISTS / IN in a WHERE conjunct become semi or anti joins,
//! elsewhere mark joins (a BOOLEAN column); scalar subqueries become single joins.
//! Correlated subqueries are decorrelated by pulling predicates that mention outer
//! columns up out of the subquery plan into the join condition; below an
//! aggregation, an equality `inner = outer` turns `inner` into a grouping key, so a
//! correlated aggregate is computed once per key instead of once per outer row.

use std::collections::HashSet;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::JoinType;
use sqlparser::ast::{self, Spanned};

use super::types::{coerce, common_type, is_untyped_null};
use super::vocab::ExprCtx;
use super::{Binder, Pending, Scope};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, conjunction, conjuncts, refs_of, ColId, Logical};

impl Binder<'_> {
    fn bind_subquery(
        &mut self,
        q: &ast::Query,
        scope: &Scope,
        outer: &[Scope],
    ) -> SqlResult<super::BoundQuery> {
        let mut all: Vec<Scope> = outer.to_vec();
        all.push(scope.clone());
        self.bind_query(q, &all)
    }

    /// A WHERE conjunct `[NOT] EXISTS (…)` or `x [NOT] IN (…)` as a semi/anti join on `plan`.
    pub(super) fn try_subquery_conjunct(
        &mut self,
        e: &ast::Expr,
        plan: Logical,
        scope: &Scope,
        outer: &[Scope],
    ) -> SqlResult<Option<Logical>> {
        let (q, probe, negated) = match e {
            ast::Expr::Exists { subquery, negated } => (subquery, None, *negated),
            ast::Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => (subquery, Some(expr), *negated),
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr,
            } => match &**expr {
                ast::Expr::Exists { subquery, negated } => (subquery, None, !*negated),
                ast::Expr::InSubquery {
                    expr,
                    subquery,
                    negated,
                } => (subquery, Some(expr), !*negated),
                _ => return Ok(None),
            },
            ast::Expr::Nested(inner) => {
                return self.try_subquery_conjunct(inner, plan, scope, outer)
            }
            _ => return Ok(None),
        };
        let pos = Pos::from_span(e.span());
        let probe = match probe {
            Some(x) => {
                let mut cx = ExprCtx::new(scope, outer);
                let b = self.bind_expr(x, &mut cx)?;
                if !cx.pending.is_empty() {
                    return Err(SqlError::unsupported(
                        "a subquery on the left of IN (subquery)",
                        pos,
                    ));
                }
                Some(b)
            }
            None => None,
        };
        let sub = self.bind_subquery(q, scope, outer)?;
        let (right, on, unnest) = self.decorrelate(sub.plan, &sub.out, probe, pos)?;
        let (right, on) = if unnest {
            let (right, mut dom) = self.unnest_subquery(&plan, right, pos)?;
            dom.extend(on);
            (right, dom)
        } else {
            (right, on)
        };
        // NOT IN is null-aware whatever the correlation: the executor finds each row's set
        // (the correlation keys before the IN key, which `decorrelate` puts last).
        let join_type = match (negated, e_is_in(e)) {
            (false, _) => JoinType::Semi,
            (true, true) => JoinType::NullAwareAnti,
            (true, false) => JoinType::Anti,
        };
        Ok(Some(Logical::Join {
            join_type,
            left: Box::new(plan),
            right: Box::new(right),
            on,
            mark: None,
        }))
    }

    /// Plans the subquery, checks its width, and pulls correlated predicates up.
    /// With `probe` (IN), adds `probe = subquery column` to the condition, last: the
    /// null-aware joins take their last condition as the IN key.
    fn decorrelate(
        &mut self,
        plan: Logical,
        out: &[(String, ColId)],
        probe: Option<PhysExpr>,
        pos: Pos,
    ) -> SqlResult<(Logical, Vec<PhysExpr>, bool)> {
        let outer_ids = plan.free_columns();
        let pulled = if outer_ids.is_empty() {
            Some((plan.clone(), Vec::new()))
        } else {
            // Pulling predicates up fails on correlation it cannot turn into join
            // conditions (a non-equality below an aggregate, an outer reference in a
            // select list); such subqueries are unnested with their domain instead.
            self.pull_up(plan.clone(), &outer_ids, pos)
                .ok()
                .filter(|(p, _)| p.free_columns().is_empty())
        };
        let (plan, mut on, unnest) = match pulled {
            Some((p, on)) => (p, on, false),
            None => (plan, Vec::new(), true),
        };
        if let Some(x) = probe {
            if out.len() != 1 {
                return Err(SqlError::InvalidValue {
                    message: "subquery has too many columns".into(),
                    pos,
                });
            }
            let c = col(out[0].1, self.cols.ty(out[0].1));
            // An untyped NULL or quoted literal on the left takes the subquery's type.
            let unknown = is_untyped_null(&x)
                || matches!(
                    x,
                    PhysExpr::Literal {
                        value: Value::Text(_),
                        ..
                    }
                ) && !c.data_type().is_text();
            let t = if unknown {
                Some(c.data_type())
            } else {
                common_type(x.data_type(), c.data_type())
            };
            let t = t.ok_or_else(|| {
                SqlError::mismatch(
                    format!(
                        "operator does not exist: {} = {}",
                        x.data_type(),
                        c.data_type()
                    ),
                    pos,
                )
            })?;
            let (x, c) = (coerce(x, t, pos)?, coerce(c, t, pos)?);
            // jsonb matches by value; json cannot be compared.
            let (x, c) = match t {
                DataType::Jsonb => (
                    super::json_fn::equality_key(x),
                    super::json_fn::equality_key(c),
                ),
                t => {
                    super::json_fn::refuse_json_key(t, "IN (subquery)", false)?;
                    (x, c)
                }
            };
            on.push(PhysExpr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(x),
                right: Box::new(c),
                data_type: DataType::Boolean,
            });
        }
        Ok((plan, on, unnest))
    }

    /// `(SELECT …)` as a value: a single join adding the subquery's column.
    pub(super) fn scalar_subquery(
        &mut self,
        q: &ast::Query,
        cx: &mut ExprCtx,
        pos: Pos,
    ) -> SqlResult<PhysExpr> {
        let sub = self.bind_subquery(q, cx.scope, cx.outer)?;
        if sub.out.len() != 1 {
            return Err(SqlError::InvalidValue {
                message: "subquery must return only one column".into(),
                pos,
            });
        }
        let id = sub.out[0].1;
        let (plan, on, unnest) = self.decorrelate(sub.plan, &sub.out, None, pos)?;
        // Unnesting computes a COUNT over no rows as 0 itself.
        let is_count = !unnest && match &plan {
            Logical::Project { exprs, .. } => exprs.iter().any(|(e, o)| {
                *o == id
                    && matches!(e, PhysExpr::Column { index, .. } if self.count_ids.contains(index))
            }),
            _ => false,
        };
        cx.pending.push(Pending {
            join_type: JoinType::Single,
            plan,
            on,
            mark: None,
            unnest,
        });
        let ty = self.cols.ty(id);
        if is_count {
            // COUNT over no rows is 0, but a key without rows has no group.
            return Ok(PhysExpr::Func {
                func: kura_exec::expr::ScalarFunc::Coalesce,
                args: vec![
                    col(id, ty),
                    PhysExpr::literal(kura_common::Value::BigInt(0), ty),
                ],
                data_type: ty,
            });
        }
        Ok(col(id, ty))
    }

    /// EXISTS / IN outside a top-level WHERE conjunct: a mark join's BOOLEAN column.
    pub(super) fn mark_subquery(
        &mut self,
        q: &ast::Query,
        probe: Option<PhysExpr>,
        cx: &mut ExprCtx,
        pos: Pos,
    ) -> SqlResult<PhysExpr> {
        let sub = self.bind_subquery(q, cx.scope, cx.outer)?;
        let join_type = if probe.is_some() {
            JoinType::NullAwareMark
        } else {
            JoinType::Mark
        };
        let (plan, on, unnest) = self.decorrelate(sub.plan, &sub.out, probe, pos)?;
        let id = self.cols.add("mark", DataType::Boolean);
        cx.pending.push(Pending {
            join_type,
            plan,
            on,
            mark: Some(id),
            unnest,
        });
        Ok(col(id, DataType::Boolean))
    }

    /// Removes predicates over `outer` columns from `plan`, returning them.
    fn pull_up(
        &mut self,
        plan: Logical,
        outer: &HashSet<ColId>,
        pos: Pos,
    ) -> SqlResult<(Logical, Vec<PhysExpr>)> {
        let correlated = |e: &PhysExpr| refs_of(e).iter().any(|c| outer.contains(c));
        let unsupported = || SqlError::unsupported("this form of correlated subquery", pos);
        Ok(match plan {
            Logical::Filter { input, predicate } => {
                let (input, mut preds) = self.pull_up(*input, outer, pos)?;
                let mut parts = Vec::new();
                conjuncts(predicate, &mut parts);
                let (corr, keep): (Vec<_>, Vec<_>) = parts.into_iter().partition(|p| correlated(p));
                preds.extend(corr);
                let plan = match conjunction(keep) {
                    Some(p) => Logical::Filter {
                        input: Box::new(input),
                        predicate: p,
                    },
                    None => input,
                };
                (plan, preds)
            }
            Logical::Project { input, mut exprs } => {
                if exprs.iter().any(|e| correlated(&e.0)) {
                    return Err(unsupported());
                }
                let (input, preds) = self.pull_up(*input, outer, pos)?;
                let have: HashSet<ColId> = exprs.iter().map(|e| e.1).collect();
                let mut need: Vec<ColId> = preds
                    .iter()
                    .flat_map(refs_of)
                    .filter(|c| !outer.contains(c) && !have.contains(c))
                    .collect();
                need.sort_unstable();
                need.dedup();
                for c in need {
                    exprs.push((col(c, self.cols.ty(c)), c));
                }
                (
                    Logical::Project {
                        input: Box::new(input),
                        exprs,
                    },
                    preds,
                )
            }
            Logical::Aggregate {
                input,
                mut group,
                aggs,
            } => {
                if group.iter().any(|g| correlated(&g.0)) {
                    return Err(unsupported());
                }
                let (input, preds) = self.pull_up(*input, outer, pos)?;
                let mut out_preds = Vec::new();
                for p in preds {
                    let PhysExpr::Binary {
                        op: BinaryOp::Eq,
                        left,
                        right,
                        data_type,
                    } = p
                    else {
                        return Err(unsupported());
                    };
                    let (inner, other, inner_left) = if !correlated(&left)
                        && refs_of(&right).iter().all(|c| outer.contains(c))
                    {
                        (*left, *right, true)
                    } else if !correlated(&right)
                        && refs_of(&left).iter().all(|c| outer.contains(c))
                    {
                        (*right, *left, false)
                    } else {
                        return Err(unsupported());
                    };
                    let id = match group.iter().find(|g| g.0 == inner) {
                        Some(g) => g.1,
                        None => {
                            let id = match &inner {
                                PhysExpr::Column { index, .. } => *index,
                                e => self.cols.add("?key?", e.data_type()),
                            };
                            group.push((inner.clone(), id));
                            id
                        }
                    };
                    let k = col(id, inner.data_type());
                    let (l, r) = if inner_left { (k, other) } else { (other, k) };
                    out_preds.push(PhysExpr::Binary {
                        op: BinaryOp::Eq,
                        left: Box::new(l),
                        right: Box::new(r),
                        data_type,
                    });
                }
                if !out_preds.is_empty() {
                    self.count_ids.extend(
                        aggs.iter()
                            .filter(|a| {
                                matches!(
                                    a.0.func,
                                    kura_exec::AggFunc::Count | kura_exec::AggFunc::CountStar
                                )
                            })
                            .map(|a| a.1),
                    );
                }
                (
                    Logical::Aggregate {
                        input: Box::new(input),
                        group,
                        aggs,
                    },
                    out_preds,
                )
            }
            Logical::Join {
                join_type: JoinType::Inner,
                left,
                right,
                on,
                mark,
            } => {
                let (l, mut preds) = self.pull_up(*left, outer, pos)?;
                let (r, p2) = self.pull_up(*right, outer, pos)?;
                preds.extend(p2);
                let (corr, keep): (Vec<_>, Vec<_>) = on.into_iter().partition(|p| correlated(p));
                preds.extend(corr);
                (
                    Logical::Join {
                        join_type: JoinType::Inner,
                        left: Box::new(l),
                        right: Box::new(r),
                        on: keep,
                        mark,
                    },
                    preds,
                )
            }
            Logical::Join {
                join_type,
                left,
                right,
                on,
                mark,
            } => {
                if on.iter().any(correlated)
                    || !right.free_columns().iter().all(|c| !outer.contains(c))
                {
                    return Err(unsupported());
                }
                let (l, preds) = self.pull_up(*left, outer, pos)?;
                (
                    Logical::Join {
                        join_type,
                        left: Box::new(l),
                        right,
                        on,
                        mark,
                    },
                    preds,
                )
            }
            other => {
                if other.free_columns().iter().any(|c| outer.contains(c)) {
                    return Err(unsupported());
                }
                (other, Vec::new())
            }
        })
    }
}

fn e_is_in(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::InSubquery { .. } => true,
        ast::Expr::UnaryOp { expr, .. } | ast::Expr::Nested(expr) => e_is_in(expr),
        _ => false,
    }
}
