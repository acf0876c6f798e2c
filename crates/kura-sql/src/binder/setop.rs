//! Binding of set operations: UNION, INTERSECT and EXCEPT, each with or without ALL.
//!
//! UNION ALL concatenates; UNION groups the concatenation. INTERSECT and EXCEPT
//! concatenate the two inputs with a marker column per side, group by all columns
//! and count each side's rows per group: grouping treats NULLs as equal, as set
//! operations must, and the counts give both the set forms (a group is kept when the
//! counts say so) and the ALL forms (a group's row is repeated min(l, r) or l - r
//! times).

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::{AggCall, AggFunc};
use sqlparser::ast;

use super::types::{coerce, common_type, is_untyped_null};
use super::{Binder, BoundQuery, Scope};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{and, col, ColId, Logical};

/// Which set operation, for messages and for the counts' test.
#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Intersect,
    Except,
}

impl SetOp {
    fn name(self) -> &'static str {
        match self {
            SetOp::Union => "UNION",
            SetOp::Intersect => "INTERSECT",
            SetOp::Except => "EXCEPT",
        }
    }
}

impl Binder<'_> {
    pub(super) fn bind_set_operation(
        &mut self,
        left: &ast::SetExpr,
        op: &ast::SetOperator,
        quantifier: &ast::SetQuantifier,
        right: &ast::SetExpr,
        outer: &[Scope],
    ) -> SqlResult<BoundQuery> {
        let op = match op {
            ast::SetOperator::Union => SetOp::Union,
            ast::SetOperator::Intersect => SetOp::Intersect,
            ast::SetOperator::Except => SetOp::Except,
            other => return Err(SqlError::unsupported(format!("{other}"), Pos::default())),
        };
        let all = match quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
            other => {
                return Err(SqlError::unsupported(
                    format!("{} {other}", op.name()),
                    Pos::default(),
                ))
            }
        };
        let l = self.bind_set_expr(left, outer)?;
        let r = self.bind_set_expr(right, outer)?;
        // Only UNION ALL keeps rows without comparing them: json has no
        // equality (jsonb's is by value, see `group`).
        if !(all && op == SetOp::Union) {
            for (_, id) in l.out.iter().chain(&r.out) {
                if self.cols.ty(*id) == DataType::Json {
                    super::json_fn::refuse_json_key(DataType::Json, op.name(), false)?;
                }
            }
        }
        if l.out.len() != r.out.len() {
            return Err(SqlError::Syntax(format!(
                "each {} query must have the same number of columns",
                op.name()
            )));
        }
        let (lk, rk) = (unknown_literals(&l), unknown_literals(&r));
        let mut out = Vec::new();
        let mut types = Vec::new();
        for (i, ((name, li), (_, ri))) in l.out.iter().zip(&r.out).enumerate() {
            let (lt, rt) = (self.cols.ty(*li), self.cols.ty(*ri));
            // An untyped literal (NULL, 'text') takes the other side's type, as
            // PostgreSQL resolves `unknown`; two of them make text.
            let t = match (&lk[i], &rk[i]) {
                (Some(_), Some(_)) => DataType::Varchar(None),
                (Some(_), None) => rt,
                (None, Some(_)) => lt,
                (None, None) => common_type(lt, rt).ok_or_else(|| {
                    SqlError::mismatch(
                        format!("{} types {lt} and {rt} cannot be matched", op.name()),
                        Pos::default(),
                    )
                })?,
            };
            types.push(t);
            out.push((name.clone(), self.cols.add(name, t)));
        }
        // Marker columns: the left input counts in the first, the right in the second.
        let marked = op != SetOp::Union;
        let mut inputs = Vec::new();
        for (side, known, is_left) in [(l, lk, true), (r, rk, false)] {
            let mut exprs = Vec::new();
            for (((n, id), t), lit) in side.out.iter().zip(&types).zip(known) {
                let e = lit.unwrap_or_else(|| col(*id, self.cols.ty(*id)));
                exprs.push((coerce(e, *t, Pos::default())?, self.cols.add(n, *t)));
            }
            if marked {
                for mark_left in [true, false] {
                    let v = if mark_left == is_left {
                        Value::Integer(1)
                    } else {
                        Value::Null
                    };
                    let e = PhysExpr::literal(v, DataType::Integer);
                    exprs.push((e, self.cols.add("?marker?", DataType::Integer)));
                }
            }
            let ids = exprs.iter().map(|e| e.1).collect();
            inputs.push((
                Logical::Project {
                    input: Box::new(side.plan),
                    exprs,
                },
                ids,
            ));
        }
        let cols: Vec<ColId> = out.iter().map(|o| o.1).collect();
        let mut union_cols = cols.clone();
        if marked {
            union_cols.push(self.cols.add("?marker?", DataType::Integer));
            union_cols.push(self.cols.add("?marker?", DataType::Integer));
        }
        let plan = Logical::Union {
            inputs,
            cols: union_cols.clone(),
        };
        if op == SetOp::Union {
            let plan = if all {
                plan
            } else {
                let (grouped, keys) = self.group(plan, &cols, Vec::new(), op.name())?;
                self.rename(grouped, &keys, &cols)
            };
            return Ok(BoundQuery { plan, out });
        }
        let count = |id: ColId| {
            AggCall::simple(
                AggFunc::Count,
                Some(col(id, DataType::Integer)),
                DataType::BigInt,
            )
        };
        let aggs = vec![
            count(union_cols[cols.len()]),
            count(union_cols[cols.len() + 1]),
        ];
        let (grouped, keys) = self.group(plan, &cols, aggs, op.name())?;
        let (nl, nr) = (
            col(keys[cols.len()], DataType::BigInt),
            col(keys[cols.len() + 1], DataType::BigInt),
        );
        let zero = || PhysExpr::literal(Value::BigInt(0), DataType::BigInt);
        let cmp = |op: BinaryOp, a: &PhysExpr, b: PhysExpr| PhysExpr::Binary {
            op,
            left: Box::new(a.clone()),
            right: Box::new(b),
            data_type: DataType::Boolean,
        };
        let plan = match (op, all) {
            (SetOp::Intersect, false) => Logical::Filter {
                input: Box::new(grouped),
                predicate: and(
                    cmp(BinaryOp::Gt, &nl, zero()),
                    cmp(BinaryOp::Gt, &nr, zero()),
                ),
            },
            (_, false) => Logical::Filter {
                input: Box::new(grouped),
                predicate: and(
                    cmp(BinaryOp::Gt, &nl, zero()),
                    cmp(BinaryOp::Eq, &nr, zero()),
                ),
            },
            (_, true) => {
                // How often a row is emitted: min(l, r) for INTERSECT ALL, l - r for
                // EXCEPT ALL (not positive: not at all).
                let times = if op == SetOp::Intersect {
                    PhysExpr::Case {
                        whens: vec![(cmp(BinaryOp::Lt, &nl, nr.clone()), nl.clone())],
                        otherwise: Some(Box::new(nr.clone())),
                        data_type: DataType::BigInt,
                    }
                } else {
                    PhysExpr::Binary {
                        op: BinaryOp::Sub,
                        left: Box::new(nl.clone()),
                        right: Box::new(nr.clone()),
                        data_type: DataType::BigInt,
                    }
                };
                let n = self.cols.add("?times?", DataType::BigInt);
                let mut exprs: Vec<(PhysExpr, ColId)> = keys[..cols.len()]
                    .iter()
                    .map(|&k| {
                        (
                            col(k, self.cols.ty(k)),
                            self.cols.add("?key?", self.cols.ty(k)),
                        )
                    })
                    .collect();
                let inner: Vec<ColId> = exprs.iter().map(|e| e.1).collect();
                exprs.push((times, n));
                let counted = Logical::Filter {
                    input: Box::new(Logical::Project {
                        input: Box::new(grouped),
                        exprs,
                    }),
                    predicate: cmp(BinaryOp::Gt, &col(n, DataType::BigInt), zero()),
                };
                let replicated = Logical::Replicate {
                    input: Box::new(counted),
                    count: n,
                };
                return Ok(BoundQuery {
                    plan: self.rename(replicated, &inner, &cols),
                    out,
                });
            }
        };
        let keys = keys[..cols.len()].to_vec();
        Ok(BoundQuery {
            plan: self.rename(plan, &keys, &cols),
            out,
        })
    }

    /// Groups `plan` by `cols` (into fresh ids) with `aggs`; returns the plan and the
    /// ids of its output (keys, then aggregates).
    fn group(
        &mut self,
        plan: Logical,
        cols: &[ColId],
        aggs: Vec<AggCall>,
        op_name: &str,
    ) -> SqlResult<(Logical, Vec<ColId>)> {
        let group: Vec<(PhysExpr, ColId)> = cols
            .iter()
            .map(|&c| {
                let t = self.cols.ty(c);
                (
                    col(c, t),
                    self.cols.add(self.cols.name(c).to_string().as_str(), t),
                )
            })
            .collect();
        let mut aggs: Vec<(AggCall, ColId)> = aggs
            .into_iter()
            .map(|a| {
                let id = self.cols.add("?count?", a.data_type);
                (a, id)
            })
            .collect();
        let ids = group
            .iter()
            .map(|g| g.1)
            .chain(aggs.iter().map(|a| a.1))
            .collect();
        // A jsonb column groups by value: its id then comes from an aggregate
        // (json columns were refused already).
        let group = self.group_jsonb_by_value(group, &mut aggs, op_name)?;
        Ok((
            Logical::Aggregate {
                input: Box::new(plan),
                group,
                aggs,
            },
            ids,
        ))
    }

    /// `plan`'s columns `from` as the ids `to`.
    fn rename(&self, plan: Logical, from: &[ColId], to: &[ColId]) -> Logical {
        Logical::Project {
            input: Box::new(plan),
            exprs: from
                .iter()
                .zip(to)
                .map(|(&f, &t)| (col(f, self.cols.ty(f)), t))
                .collect(),
        }
    }
}

/// For each output column of a SELECT, the literal it is if that literal has no type
/// of its own (an untyped NULL or a quoted string), which a set operation types from
/// the other side as PostgreSQL types `unknown`. Outputs of anything else (nested set
/// operations, derived tables) are typed already.
fn unknown_literals(q: &BoundQuery) -> Vec<Option<PhysExpr>> {
    q.out
        .iter()
        .map(|(_, id)| {
            defining_expr(&q.plan, *id)
                .filter(is_unknown_literal)
                .cloned()
        })
        .collect()
}

fn is_unknown_literal(e: &&PhysExpr) -> bool {
    is_untyped_null(e)
        || matches!(
            e,
            PhysExpr::Literal {
                value: Value::Text(_),
                data_type: DataType::Varchar(None),
            }
        )
}

/// The select-list expression that computes column `id` of a SELECT's plan.
fn defining_expr(plan: &Logical, id: ColId) -> Option<&PhysExpr> {
    match plan {
        Logical::Project { exprs, .. } => exprs.iter().find(|e| e.1 == id).map(|e| &e.0),
        Logical::Sort { input, .. } | Logical::Limit { input, .. } => defining_expr(input, id),
        _ => None,
    }
}
