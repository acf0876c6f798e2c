//! GROUP BY GROUPING SETS / ROLLUP / CUBE and `grouping(...)`: one aggregation
//! per grouping set over its own copy of the input, UNION ALL'ed, each padding
//! the keys it does not group by with NULLs (so every aggregate, DISTINCT or
//! not, is computed from the rows themselves).

use std::collections::HashMap;

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use sqlparser::ast;

use super::unnest::subst;
use super::vocab::ExprCtx;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, ColId, Logical};

/// PostgreSQL's limits.
const MAX_SETS: usize = 4096;
const MAX_CUBE: usize = 12;

fn grouping_error(message: impl Into<String>, pos: Pos) -> SqlError {
    SqlError::Grouping {
        message: message.into(),
        pos,
    }
}

/// A statement too complex to plan (54001).
fn limit(message: String, _pos: Pos) -> SqlError {
    SqlError::Limit {
        message,
        code: "54001",
    }
}

fn too_many_sets() -> SqlError {
    limit(
        format!("too many grouping sets present (maximum {MAX_SETS})"),
        Pos::default(),
    )
}

type Sets<'a> = Vec<Vec<&'a ast::Expr>>;

/// The distinct GROUP BY keys and the grouping sets as indices into them.
type KeysAndSets<'a> = (Vec<&'a ast::Expr>, Option<Vec<Vec<usize>>>);

/// Every combination of one set of `a` and one of `b`, concatenated.
fn product<'a>(a: Sets<'a>, b: &Sets<'a>) -> SqlResult<Sets<'a>> {
    if a.len().saturating_mul(b.len()) > MAX_SETS {
        return Err(too_many_sets());
    }
    Ok(a.iter()
        .flat_map(|x| b.iter().map(move |y| x.iter().chain(y).copied().collect()))
        .collect())
}

/// `ROLLUP (l1, l2, ...)`: (l1, l2, ...), ..., (l1), ().
fn rollup<'a>(lists: &[Vec<&'a ast::Expr>]) -> Sets<'a> {
    (0..=lists.len())
        .rev()
        .map(|n| lists[..n].iter().flatten().copied().collect())
        .collect()
}

/// `CUBE (l1, ..., ln)`: every subset, largest first (PostgreSQL's order).
fn cube<'a>(lists: &[Vec<&'a ast::Expr>], pos: Pos) -> SqlResult<Sets<'a>> {
    let n = lists.len();
    if n > MAX_CUBE {
        return Err(limit(
            format!("CUBE is limited to {MAX_CUBE} elements"),
            pos,
        ));
    }
    Ok((0..1usize << n)
        .rev()
        .map(|mask| {
            (0..n)
                .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                .flat_map(|i| lists[i].iter().copied())
                .collect()
        })
        .collect())
}

/// `rollup(a, b)` / `cube(a, b)` written inside GROUPING SETS, which the parser
/// reads as function calls.
fn nested_call(e: &ast::Expr) -> Option<(&str, Vec<Vec<&ast::Expr>>)> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let name = match f.name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] if i.quote_style.is_none() => i.value.to_lowercase(),
        _ => return None,
    };
    if !matches!(name.as_str(), "rollup" | "cube") || f.over.is_some() {
        return None;
    }
    let ast::FunctionArguments::List(l) = &f.args else {
        return None;
    };
    let mut lists = Vec::new();
    for a in &l.args {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Tuple(v))) => {
                lists.push(v.iter().collect())
            }
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => lists.push(vec![x]),
            _ => return None,
        }
    }
    Some((if name == "rollup" { "rollup" } else { "cube" }, lists))
}

/// The grouping sets one GROUP BY item stands for.
fn lists(v: &[Vec<ast::Expr>]) -> Vec<Vec<&ast::Expr>> {
    v.iter().map(|l| l.iter().collect()).collect()
}

fn item_sets(e: &ast::Expr, pos: Pos) -> SqlResult<Sets<'_>> {
    Ok(match e {
        ast::Expr::Rollup(v) => rollup(&lists(v)),
        ast::Expr::Cube(v) => cube(&lists(v), pos)?,
        ast::Expr::GroupingSets(v) => {
            let mut out = Vec::new();
            for set in v {
                // A set is the product of its elements (nested ROLLUP / CUBE
                // expand; a plain expression is itself).
                let mut acc: Sets = vec![Vec::new()];
                for x in set {
                    let sub = match nested_call(x) {
                        Some(("rollup", l)) => rollup(&l),
                        Some((_, l)) => cube(&l, pos)?,
                        None => vec![vec![x]],
                    };
                    acc = product(acc, &sub)?;
                }
                out.extend(acc);
                if out.len() > MAX_SETS {
                    return Err(too_many_sets());
                }
            }
            out
        }
        ast::Expr::Tuple(v) if v.is_empty() => vec![Vec::new()],
        e => vec![vec![e]],
    })
}

/// A GROUP BY list as its distinct key expressions and, when it has ROLLUP, CUBE,
/// GROUPING SETS or `()`, its grouping sets as indices into those keys.
pub(super) fn expand<'a>(items: &[&'a ast::Expr]) -> SqlResult<KeysAndSets<'a>> {
    let has_sets = items.iter().any(|e| {
        matches!(
            e,
            ast::Expr::Rollup(_) | ast::Expr::Cube(_) | ast::Expr::GroupingSets(_)
        ) || matches!(e, ast::Expr::Tuple(v) if v.is_empty())
    });
    if !has_sets {
        return Ok((items.to_vec(), None));
    }
    let mut sets: Sets = vec![Vec::new()];
    for e in items {
        sets = product(sets, &item_sets(e, Pos::default())?)?;
    }
    let mut keys: Vec<&ast::Expr> = Vec::new();
    let sets = sets
        .into_iter()
        .map(|s| {
            s.into_iter()
                .map(|e| match keys.iter().position(|k| *k == e) {
                    Some(i) => i,
                    None => {
                        keys.push(e);
                        keys.len() - 1
                    }
                })
                .collect()
        })
        .collect();
    Ok((keys, Some(sets)))
}

impl Binder<'_> {
    /// `grouping(a, b, ...)`: a placeholder column, given its value per grouping
    /// set once the GROUP BY is bound ([`Binder::plan_grouping_sets`]).
    pub(super) fn bind_grouping(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        if cx.agg.is_none() {
            let place = cx.clause.map_or("here".to_string(), |c| format!("in {c}"));
            return Err(grouping_error(
                format!("grouping operations are not allowed {place}"),
                p,
            ));
        }
        if cx.in_aggregate {
            return Err(grouping_error(
                "aggregate function calls cannot contain grouping operations",
                p,
            ));
        }
        let ast::FunctionArguments::List(l) = &f.args else {
            return Err(SqlError::Syntax("GROUPING needs arguments".into()));
        };
        if l.args.len() >= 32 {
            return Err(SqlError::Limit {
                message: "GROUPING must have fewer than 32 arguments".into(),
                code: "54023",
            });
        }
        let mut args = Vec::new();
        for a in &l.args {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    args.push(self.bind_expr(e, cx)?)
                }
                _ => return Err(SqlError::unsupported("this argument of GROUPING", p)),
            }
        }
        let agg = cx
            .agg
            .as_mut()
            .ok_or_else(|| SqlError::Internal("grouping collector".into()))?;
        if let Some((id, _, _)) = agg.groupings.iter().find(|g| g.1 == args) {
            return Ok(col(*id, DataType::Integer));
        }
        let id = self.cols.add("grouping", DataType::Integer);
        agg.groupings.push((id, args, p));
        Ok(col(id, DataType::Integer))
    }

    /// The aggregation of `input` by each grouping set (indices into `group`),
    /// UNION ALL'ed into columns `group`'s ids, `aggs`' ids and the `grouping`
    /// calls' ids (each call's arguments as indices into `group`).
    pub(super) fn plan_grouping_sets(
        &mut self,
        input: Logical,
        group: &[(PhysExpr, ColId)],
        aggs: &[(kura_exec::AggCall, ColId)],
        sets: &[Vec<usize>],
        groupings: &[(ColId, Vec<usize>)],
    ) -> Logical {
        let cols: Vec<ColId> = group
            .iter()
            .map(|g| g.1)
            .chain(aggs.iter().map(|a| a.1))
            .chain(groupings.iter().map(|g| g.0))
            .collect();
        let mut inputs = Vec::new();
        for (k, set) in sets.iter().enumerate() {
            // Each branch reads its own copy of the input (fresh column ids).
            let mut ids = HashMap::new();
            let branch = if k + 1 == sets.len() {
                input.clone()
            } else {
                self.renumber(input.clone(), &mut ids)
            };
            let mut bgroup: Vec<(PhysExpr, ColId)> = Vec::new();
            for &j in set {
                if bgroup.iter().any(|(_, id)| *id == group[j].1) {
                    continue;
                }
                bgroup.push((subst(&group[j].0, &ids), group[j].1));
            }
            // Branch-local output ids, mapped to the union's by position.
            let local: Vec<ColId> = bgroup
                .iter()
                .map(|(e, _)| self.cols.add("?key?", e.data_type()))
                .collect();
            let baggs: Vec<(kura_exec::AggCall, ColId)> = aggs
                .iter()
                .map(|(a, id)| {
                    let mut a = a.clone();
                    a.map_exprs(|x| subst(x, &ids));
                    (a, self.cols.add("?agg?", self.cols.ty(*id)))
                })
                .collect();
            let mut exprs: Vec<(PhysExpr, ColId)> = Vec::new();
            for (e, out) in group {
                let t = e.data_type();
                let v = match bgroup.iter().position(|(_, o)| o == out) {
                    Some(i) => col(local[i], t),
                    None => PhysExpr::literal(Value::Null, t),
                };
                exprs.push((v, self.cols.add("?key?", t)));
            }
            for (_, id) in &baggs {
                exprs.push((
                    col(*id, self.cols.ty(*id)),
                    self.cols.add("?agg?", self.cols.ty(*id)),
                ));
            }
            for (_, args) in groupings {
                // Bit set (first argument highest) for each argument not grouped.
                let mut bits = 0i32;
                for &j in args {
                    bits = bits << 1 | !set.contains(&j) as i32;
                }
                exprs.push((
                    PhysExpr::literal(Value::Integer(bits), DataType::Integer),
                    self.cols.add("?grouping?", DataType::Integer),
                ));
            }
            let agg = Logical::Aggregate {
                input: Box::new(branch),
                group: bgroup
                    .into_iter()
                    .zip(&local)
                    .map(|((e, _), id)| (e, *id))
                    .collect(),
                aggs: baggs,
            };
            let out: Vec<ColId> = exprs.iter().map(|e| e.1).collect();
            inputs.push((
                Logical::Project {
                    input: Box::new(agg),
                    exprs,
                },
                out,
            ));
        }
        Logical::Union { inputs, cols }
    }
}
