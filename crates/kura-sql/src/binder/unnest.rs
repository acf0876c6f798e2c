//! General decorrelation (Neumann & Kemper, "Unnesting Arbitrary Queries"): a
//! subquery whose correlation cannot be pulled up into join keys is joined with the
//! domain of its outer references — the distinct values those columns take in the
//! outer plan — pushed down to where the references are, and computed once per
//! domain value; the outer plan then joins the result on the domain with
//! `IS NOT DISTINCT FROM`, so a NULL outer value finds its own (NULL) domain row.

use std::collections::{HashMap, HashSet};

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use kura_exec::{AggFunc, JoinType};

use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, map_columns, ColId, LSortKey, Logical};

/// Where a subquery's outer values come from.
struct Domain {
    /// The outer plan; every use evaluates a renumbered copy of it.
    source: Logical,
    /// The outer columns the subquery reads, sorted.
    cols: Vec<ColId>,
}

/// Outer column id → the domain column standing for it in a rewritten plan.
type DomainMap = HashMap<ColId, ColId>;

fn not_distinct(a: PhysExpr, b: PhysExpr) -> PhysExpr {
    PhysExpr::Binary {
        op: BinaryOp::NotDistinct,
        left: Box::new(a),
        right: Box::new(b),
        data_type: DataType::Boolean,
    }
}

pub(super) fn subst(e: &PhysExpr, m: &HashMap<ColId, ColId>) -> PhysExpr {
    map_columns(e, &mut |id, ty| col(m.get(&id).copied().unwrap_or(id), ty))
}

impl Binder<'_> {
    /// Decorrelates `sub` against `outer`, the plan it will be joined to: the
    /// rewritten subquery (its output plus domain columns) and the domain equalities
    /// that must lead the join condition. Outer references that `outer` does not
    /// produce (a query further out) stay free for that query's decorrelation.
    pub(super) fn unnest_subquery(
        &mut self,
        outer: &Logical,
        sub: Logical,
        pos: Pos,
    ) -> SqlResult<(Logical, Vec<PhysExpr>)> {
        let produced: HashSet<ColId> = outer.output().into_iter().collect();
        let mut cols: Vec<ColId> = sub
            .free_columns()
            .into_iter()
            .filter(|c| produced.contains(c))
            .collect();
        if cols.is_empty() {
            return Ok((sub, Vec::new()));
        }
        cols.sort_unstable();
        let d = Domain {
            source: outer.clone(),
            cols,
        };
        let (plan, m) = self.unnest(sub, &d, pos)?;
        let on = d
            .cols
            .iter()
            .map(|c| {
                let ty = self.cols.ty(*c);
                not_distinct(col(*c, ty), col(m[c], ty))
            })
            .collect();
        Ok((plan, on))
    }

    /// A fresh copy of the domain: the distinct values of its columns in a
    /// renumbered copy of the outer plan.
    fn domain_instance(&mut self, d: &Domain) -> (Logical, DomainMap) {
        let mut ids = HashMap::new();
        let source = self.renumber(d.source.clone(), &mut ids);
        let mut group = Vec::new();
        let mut m = DomainMap::new();
        for c in &d.cols {
            let ty = self.cols.ty(*c);
            let name = format!("domain.{}", self.cols.name(*c));
            let id = self.cols.add(&name, ty);
            group.push((col(ids.get(c).copied().unwrap_or(*c), ty), id));
            m.insert(*c, id);
        }
        let plan = Logical::Aggregate {
            input: Box::new(source),
            group,
            aggs: Vec::new(),
        };
        (plan, m)
    }

    fn touches(plan: &Logical, d: &Domain) -> bool {
        plan.free_columns().iter().any(|c| d.cols.contains(c))
    }

    /// `plan` with the domain pushed into it: its output plus one column per domain
    /// column (named by the map), every reference to an outer column of the domain
    /// replaced by its domain column.
    fn unnest(&mut self, plan: Logical, d: &Domain, pos: Pos) -> SqlResult<(Logical, DomainMap)> {
        let unsupported =
            |what: &str| SqlError::unsupported(format!("{what} in a correlated subquery"), pos);
        if !Self::touches(&plan, d) {
            // Independent of the outer query: paired with every domain value.
            let (dp, m) = self.domain_instance(d);
            let plan = Logical::Join {
                join_type: JoinType::Inner,
                left: Box::new(plan),
                right: Box::new(dp),
                on: Vec::new(),
                mark: None,
            };
            return Ok((plan, m));
        }
        Ok(match plan {
            Logical::Filter { input, predicate } => {
                let (input, m) = self.unnest(*input, d, pos)?;
                let predicate = subst(&predicate, &m);
                (
                    Logical::Filter {
                        input: Box::new(input),
                        predicate,
                    },
                    m,
                )
            }
            Logical::Project { input, exprs } => {
                let (input, m) = self.unnest(*input, d, pos)?;
                let mut exprs: Vec<(PhysExpr, ColId)> =
                    exprs.iter().map(|(e, id)| (subst(e, &m), *id)).collect();
                for c in &d.cols {
                    exprs.push((col(m[c], self.cols.ty(*c)), m[c]));
                }
                (
                    Logical::Project {
                        input: Box::new(input),
                        exprs,
                    },
                    m,
                )
            }
            Logical::Aggregate { input, group, aggs } => {
                let (input, m) = self.unnest(*input, d, pos)?;
                let scalar = group.is_empty();
                let mut group: Vec<(PhysExpr, ColId)> =
                    group.iter().map(|(e, id)| (subst(e, &m), *id)).collect();
                for c in &d.cols {
                    group.push((col(m[c], self.cols.ty(*c)), m[c]));
                }
                let mut aggs: Vec<_> = aggs
                    .into_iter()
                    .map(|(mut a, id)| {
                        a.map_exprs(|x| subst(x, &m));
                        (a, id)
                    })
                    .collect();
                if !scalar {
                    let plan = Logical::Aggregate {
                        input: Box::new(input),
                        group,
                        aggs,
                    };
                    return Ok((plan, m));
                }
                // Without GROUP BY an aggregate yields a row even over no input, but
                // grouped per domain value an empty group yields none: the domain is
                // joined back on the left, and a missing COUNT reads as 0.
                let mut exprs = Vec::new();
                for (a, id) in aggs.iter_mut() {
                    let ty = self.cols.ty(*id);
                    if matches!(a.func, AggFunc::Count | AggFunc::CountStar) {
                        let tmp = self.cols.add("count", ty);
                        let e = PhysExpr::Func {
                            func: ScalarFunc::Coalesce,
                            args: vec![col(tmp, ty), PhysExpr::literal(Value::BigInt(0), ty)],
                            data_type: ty,
                        };
                        exprs.push((e, *id));
                        *id = tmp;
                    } else {
                        exprs.push((col(*id, ty), *id));
                    }
                }
                let agg = Logical::Aggregate {
                    input: Box::new(input),
                    group,
                    aggs,
                };
                let (dp, m2) = self.domain_instance(d);
                let mut on = Vec::new();
                for c in &d.cols {
                    let ty = self.cols.ty(*c);
                    on.push(not_distinct(col(m2[c], ty), col(m[c], ty)));
                    exprs.push((col(m2[c], ty), m2[c]));
                }
                let join = Logical::Join {
                    join_type: JoinType::Left,
                    left: Box::new(dp),
                    right: Box::new(agg),
                    on,
                    mark: None,
                };
                (
                    Logical::Project {
                        input: Box::new(join),
                        exprs,
                    },
                    m2,
                )
            }
            Logical::Join {
                join_type,
                left,
                right,
                on,
                mark,
            } => {
                if join_type == JoinType::Full {
                    // Unmatched right rows would carry no domain value.
                    return Err(unsupported("FULL JOIN"));
                }
                let right_touches = Self::touches(&right, d);
                let (left, ml) = self.unnest(*left, d, pos)?;
                let (right, mut on) = if right_touches {
                    let (right, mr) = self.unnest(*right, d, pos)?;
                    // Domain equalities first: a null-aware join's IN key stays last.
                    let mut all: Vec<PhysExpr> = d
                        .cols
                        .iter()
                        .map(|c| {
                            let ty = self.cols.ty(*c);
                            not_distinct(col(ml[c], ty), col(mr[c], ty))
                        })
                        .collect();
                    all.extend(on);
                    (right, all)
                } else {
                    (*right, on)
                };
                on = on.iter().map(|e| subst(e, &ml)).collect();
                (
                    Logical::Join {
                        join_type,
                        left: Box::new(left),
                        right: Box::new(right),
                        on,
                        mark,
                    },
                    ml,
                )
            }
            Logical::Sort {
                input,
                keys,
                limit: None,
            } => {
                let (input, m) = self.unnest(*input, d, pos)?;
                let keys = keys
                    .into_iter()
                    .map(|k| LSortKey {
                        expr: subst(&k.expr, &m),
                        ..k
                    })
                    .collect();
                (
                    Logical::Sort {
                        input: Box::new(input),
                        keys,
                        limit: None,
                    },
                    m,
                )
            }
            Logical::Union { inputs, cols } => {
                let mut out_cols = cols;
                let mut m = DomainMap::new();
                for c in &d.cols {
                    let id = self.cols.add("domain", self.cols.ty(*c));
                    out_cols.push(id);
                    m.insert(*c, id);
                }
                let mut new_inputs = Vec::new();
                for (p, mut ids) in inputs {
                    let (p, mi) = self.unnest(p, d, pos)?;
                    ids.extend(d.cols.iter().map(|c| mi[c]));
                    // A union input must produce exactly its columns, in order;
                    // the unnested input may carry more (a join with the domain).
                    let exprs = ids
                        .iter()
                        .map(|&id| (col(id, self.cols.ty(id)), id))
                        .collect();
                    let p = Logical::Project {
                        input: Box::new(p),
                        exprs,
                    };
                    new_inputs.push((p, ids));
                }
                (
                    Logical::Union {
                        inputs: new_inputs,
                        cols: out_cols,
                    },
                    m,
                )
            }
            Logical::Replicate { input, count } => {
                // Rows repeat with the outer columns they carry.
                let (input, m) = self.unnest(*input, d, pos)?;
                (
                    Logical::Replicate {
                        input: Box::new(input),
                        count,
                    },
                    m,
                )
            }
            Logical::Sort { .. } | Logical::Limit { .. } => {
                return Err(unsupported("LIMIT with a non-equality correlation"))
            }
            Logical::Window {
                input,
                partition,
                order,
                funcs,
            } => {
                // Each outer value sees its own rows: the domain columns lead the
                // partition.
                let (input, m) = self.unnest(*input, d, pos)?;
                let mut lead = d
                    .cols
                    .iter()
                    .map(|c| {
                        m.get(c)
                            .map(|&id| col(id, self.cols.ty(id)))
                            .ok_or_else(|| SqlError::Internal("window domain column".into()))
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                lead.extend(partition.iter().map(|e| subst(e, &m)));
                let partition = lead;
                let order = order
                    .into_iter()
                    .map(|k| LSortKey {
                        expr: subst(&k.expr, &m),
                        ..k
                    })
                    .collect();
                let funcs = funcs
                    .into_iter()
                    .map(|(mut f, id)| {
                        for e in f.exprs_mut() {
                            *e = subst(e, &m);
                        }
                        (f, id)
                    })
                    .collect();
                (
                    Logical::Window {
                        input: Box::new(input),
                        partition,
                        order,
                        funcs,
                    },
                    m,
                )
            }
            Logical::Scan { .. } | Logical::Values { .. } => {
                return Err(unsupported("this outer reference"))
            }
        })
    }

    /// A copy of `plan` whose columns have fresh ids (`ids` maps old to new), so it
    /// can be evaluated next to the original within one statement. References to
    /// columns it does not define are kept.
    pub(super) fn renumber(&mut self, plan: Logical, ids: &mut HashMap<ColId, ColId>) -> Logical {
        let fresh = |b: &mut Binder, ids: &mut HashMap<ColId, ColId>, id: ColId| -> ColId {
            *ids.entry(id).or_insert_with(|| {
                let (name, ty) = (b.cols.name(id).to_string(), b.cols.ty(id));
                b.cols.add(&name, ty)
            })
        };
        match plan {
            Logical::Scan {
                table,
                cols,
                filters,
            } => {
                let cols = cols
                    .into_iter()
                    .map(|(i, id)| (i, fresh(self, ids, id)))
                    .collect();
                let filters = filters.iter().map(|f| subst(f, ids)).collect();
                Logical::Scan {
                    table,
                    cols,
                    filters,
                }
            }
            Logical::Values { rows, cols } => Logical::Values {
                rows,
                cols: cols.into_iter().map(|c| fresh(self, ids, c)).collect(),
            },
            Logical::Filter { input, predicate } => {
                let input = self.renumber(*input, ids);
                Logical::Filter {
                    input: Box::new(input),
                    predicate: subst(&predicate, ids),
                }
            }
            Logical::Project { input, exprs } => {
                let input = self.renumber(*input, ids);
                let exprs = exprs
                    .into_iter()
                    .map(|(e, id)| (subst(&e, ids), fresh(self, ids, id)))
                    .collect();
                Logical::Project {
                    input: Box::new(input),
                    exprs,
                }
            }
            Logical::Join {
                join_type,
                left,
                right,
                on,
                mark,
            } => {
                let left = self.renumber(*left, ids);
                let right = self.renumber(*right, ids);
                let on = on.iter().map(|e| subst(e, ids)).collect();
                let mark = mark.map(|m| fresh(self, ids, m));
                Logical::Join {
                    join_type,
                    left: Box::new(left),
                    right: Box::new(right),
                    on,
                    mark,
                }
            }
            Logical::Aggregate { input, group, aggs } => {
                let input = self.renumber(*input, ids);
                let group = group
                    .into_iter()
                    .map(|(e, id)| (subst(&e, ids), fresh(self, ids, id)))
                    .collect();
                let aggs = aggs
                    .into_iter()
                    .map(|(mut a, id)| {
                        a.map_exprs(|x| subst(x, ids));
                        (a, fresh(self, ids, id))
                    })
                    .collect();
                Logical::Aggregate {
                    input: Box::new(input),
                    group,
                    aggs,
                }
            }
            Logical::Sort { input, keys, limit } => {
                let input = self.renumber(*input, ids);
                let keys = keys
                    .into_iter()
                    .map(|k| LSortKey {
                        expr: subst(&k.expr, ids),
                        ..k
                    })
                    .collect();
                Logical::Sort {
                    input: Box::new(input),
                    keys,
                    limit,
                }
            }
            Logical::Limit {
                input,
                offset,
                limit,
            } => Logical::Limit {
                input: Box::new(self.renumber(*input, ids)),
                offset,
                limit,
            },
            Logical::Union { inputs, cols } => {
                let inputs = inputs
                    .into_iter()
                    .map(|(p, c)| {
                        let p = self.renumber(p, ids);
                        let c = c
                            .iter()
                            .map(|x| ids.get(x).copied().unwrap_or(*x))
                            .collect();
                        (p, c)
                    })
                    .collect();
                let cols = cols.into_iter().map(|c| fresh(self, ids, c)).collect();
                Logical::Union { inputs, cols }
            }
            Logical::Replicate { input, count } => {
                let input = self.renumber(*input, ids);
                Logical::Replicate {
                    input: Box::new(input),
                    count: ids.get(&count).copied().unwrap_or(count),
                }
            }
            Logical::Window {
                input,
                partition,
                order,
                funcs,
            } => {
                let input = self.renumber(*input, ids);
                let partition = partition.iter().map(|e| subst(e, ids)).collect();
                let order = order
                    .into_iter()
                    .map(|k| LSortKey {
                        expr: subst(&k.expr, ids),
                        ..k
                    })
                    .collect();
                let funcs = funcs
                    .into_iter()
                    .map(|(mut f, id)| {
                        for e in f.exprs_mut() {
                            *e = subst(e, ids);
                        }
                        (f, fresh(self, ids, id))
                    })
                    .collect();
                Logical::Window {
                    input: Box::new(input),
                    partition,
                    order,
                    funcs,
                }
            }
        }
    }
}
