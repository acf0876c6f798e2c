//! The logical plan: relational operators over columns named by query-wide unique
//! ids ([`ColId`]), so rewrites (predicate push-down, join reordering, subquery
//! decorrelation) move expressions freely without renumbering. Expressions reuse
//! kura-exec's [`PhysExpr`] with `Column { index }` holding a column id; lowering
//! maps ids to positions.

use std::collections::HashSet;
use std::sync::Arc;

use kura_common::{DataType, Value};
use kura_exec::expr::{BinaryOp, PhysExpr};
use kura_exec::{AggCall, JoinType, TableSource, WindowFunc};

/// A column id, unique within one statement.
pub type ColId = usize;

/// Name and type of every column id.
#[derive(Debug, Default, Clone)]
pub struct Columns {
    pub info: Vec<(String, DataType)>,
}

impl Columns {
    pub fn add(&mut self, name: &str, ty: DataType) -> ColId {
        self.info.push((name.to_string(), ty));
        self.info.len() - 1
    }
    pub fn ty(&self, id: ColId) -> DataType {
        self.info[id].1
    }
    pub fn name(&self, id: ColId) -> &str {
        &self.info[id].0
    }
}

/// An ORDER BY key over column ids.
#[derive(Debug, Clone, PartialEq)]
pub struct LSortKey {
    pub expr: PhysExpr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A logical operator.
#[derive(Clone)]
pub enum Logical {
    Scan {
        table: Arc<dyn TableSource>,
        cols: Vec<(usize, ColId)>,
        filters: Vec<PhysExpr>,
    },
    Values {
        rows: Vec<Vec<Value>>,
        cols: Vec<ColId>,
    },
    Filter {
        input: Box<Logical>,
        predicate: PhysExpr,
    },
    Project {
        input: Box<Logical>,
        exprs: Vec<(PhysExpr, ColId)>,
    },
    /// `on` is a conjunction; an inner join with no conditions is a cross product.
    /// `mark` is the id of the BOOLEAN column a mark join adds.
    Join {
        join_type: JoinType,
        left: Box<Logical>,
        right: Box<Logical>,
        on: Vec<PhysExpr>,
        mark: Option<ColId>,
    },
    Aggregate {
        input: Box<Logical>,
        group: Vec<(PhysExpr, ColId)>,
        aggs: Vec<(AggCall, ColId)>,
    },
    Sort {
        input: Box<Logical>,
        keys: Vec<LSortKey>,
        limit: Option<usize>,
    },
    Limit {
        input: Box<Logical>,
        offset: usize,
        limit: Option<usize>,
    },
    Union {
        inputs: Vec<(Logical, Vec<ColId>)>,
        cols: Vec<ColId>,
    },
    /// Each input row as many times as its BIGINT column `count` says.
    Replicate { input: Box<Logical>, count: ColId },
    /// The input's columns plus one per window function, all over one window.
    Window {
        input: Box<Logical>,
        partition: Vec<PhysExpr>,
        order: Vec<LSortKey>,
        funcs: Vec<(WindowFunc, ColId)>,
    },
}

impl Logical {
    /// The same operator with `f` applied to each input.
    pub fn map_children(self, f: &mut dyn FnMut(Logical) -> Logical) -> Logical {
        let mut b = |p: Box<Logical>| Box::new(f(*p));
        match self {
            Logical::Filter { input, predicate } => Logical::Filter {
                input: b(input),
                predicate,
            },
            Logical::Project { input, exprs } => Logical::Project {
                input: b(input),
                exprs,
            },
            Logical::Aggregate { input, group, aggs } => Logical::Aggregate {
                input: b(input),
                group,
                aggs,
            },
            Logical::Sort { input, keys, limit } => Logical::Sort {
                input: b(input),
                keys,
                limit,
            },
            Logical::Limit {
                input,
                offset,
                limit,
            } => Logical::Limit {
                input: b(input),
                offset,
                limit,
            },
            Logical::Join {
                join_type,
                left,
                right,
                on,
                mark,
            } => Logical::Join {
                join_type,
                left: b(left),
                right: b(right),
                on,
                mark,
            },
            Logical::Union { inputs, cols } => Logical::Union {
                inputs: inputs.into_iter().map(|(p, ids)| (f(p), ids)).collect(),
                cols,
            },
            Logical::Replicate { input, count } => Logical::Replicate {
                input: b(input),
                count,
            },
            Logical::Window {
                input,
                partition,
                order,
                funcs,
            } => Logical::Window {
                input: b(input),
                partition,
                order,
                funcs,
            },
            p @ (Logical::Scan { .. } | Logical::Values { .. }) => p,
        }
    }

    /// Output column ids, in order.
    pub fn output(&self) -> Vec<ColId> {
        match self {
            Logical::Scan { cols, .. } => cols.iter().map(|c| c.1).collect(),
            Logical::Values { cols, .. } | Logical::Union { cols, .. } => cols.clone(),
            Logical::Filter { input, .. }
            | Logical::Sort { input, .. }
            | Logical::Limit { input, .. }
            | Logical::Replicate { input, .. } => input.output(),
            Logical::Project { exprs, .. } => exprs.iter().map(|e| e.1).collect(),
            Logical::Join {
                join_type,
                left,
                right,
                mark,
                ..
            } => {
                let mut o = left.output();
                if join_type.emits_build_columns() {
                    o.extend(right.output());
                }
                if let Some(m) = mark {
                    o.push(*m);
                }
                o
            }
            Logical::Aggregate { group, aggs, .. } => group
                .iter()
                .map(|g| g.1)
                .chain(aggs.iter().map(|a| a.1))
                .collect(),
            Logical::Window { input, funcs, .. } => {
                let mut o = input.output();
                o.extend(funcs.iter().map(|f| f.1));
                o
            }
        }
    }

    /// Column ids referenced by this node's own expressions.
    pub fn referenced(&self, out: &mut HashSet<ColId>) {
        let mut add = |e: &PhysExpr| refs(e, out);
        match self {
            Logical::Scan { filters, .. } => filters.iter().for_each(&mut add),
            Logical::Values { .. } | Logical::Union { .. } | Logical::Limit { .. } => {}
            Logical::Filter { predicate, .. } => add(predicate),
            Logical::Project { exprs, .. } => exprs.iter().for_each(|e| add(&e.0)),
            Logical::Join { on, .. } => on.iter().for_each(&mut add),
            Logical::Aggregate { group, aggs, .. } => {
                group.iter().for_each(|g| add(&g.0));
                aggs.iter().flat_map(|a| a.0.exprs()).for_each(&mut add);
            }
            Logical::Sort { keys, .. } => keys.iter().for_each(|k| add(&k.expr)),
            Logical::Replicate { count, .. } => {
                out.insert(*count);
            }
            Logical::Window {
                partition,
                order,
                funcs,
                ..
            } => {
                partition.iter().for_each(&mut add);
                order.iter().for_each(|k| add(&k.expr));
                funcs.iter().flat_map(|f| f.0.args()).for_each(&mut add);
            }
        }
    }

    pub fn children(&self) -> Vec<&Logical> {
        match self {
            Logical::Scan { .. } | Logical::Values { .. } => vec![],
            Logical::Filter { input, .. }
            | Logical::Project { input, .. }
            | Logical::Aggregate { input, .. }
            | Logical::Sort { input, .. }
            | Logical::Limit { input, .. }
            | Logical::Replicate { input, .. }
            | Logical::Window { input, .. } => vec![input],
            Logical::Join { left, right, .. } => vec![left, right],
            Logical::Union { inputs, .. } => inputs.iter().map(|i| &i.0).collect(),
        }
    }

    /// Ids produced anywhere in this subtree.
    pub fn defined(&self, out: &mut HashSet<ColId>) {
        out.extend(self.output());
        if let Logical::Project { exprs, .. } = self {
            out.extend(exprs.iter().map(|e| e.1));
        }
        for c in self.children() {
            c.defined(out);
        }
    }

    /// Ids referenced in this subtree but not defined in it (outer references).
    pub fn free_columns(&self) -> HashSet<ColId> {
        let mut used = HashSet::new();
        fn walk(p: &Logical, used: &mut HashSet<ColId>) {
            p.referenced(used);
            for c in p.children() {
                walk(c, used);
            }
        }
        walk(self, &mut used);
        let mut def = HashSet::new();
        self.defined(&mut def);
        used.retain(|c| !def.contains(c));
        used
    }
}

/// Column ids an expression reads.
pub fn refs(e: &PhysExpr, out: &mut HashSet<ColId>) {
    let mut v = Vec::new();
    e.columns(&mut v);
    out.extend(v);
}

pub fn refs_of(e: &PhysExpr) -> HashSet<ColId> {
    let mut s = HashSet::new();
    refs(e, &mut s);
    s
}

/// Splits a conjunction into its conjuncts.
pub fn conjuncts(e: PhysExpr, out: &mut Vec<PhysExpr>) {
    match e {
        PhysExpr::Binary {
            op: BinaryOp::And,
            left,
            right,
            ..
        } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        PhysExpr::Literal {
            value: Value::Boolean(true),
            ..
        } => {}
        e => out.push(e),
    }
}

/// Joins conjuncts with AND (`None` for none).
pub fn conjunction(mut es: Vec<PhysExpr>) -> Option<PhysExpr> {
    let first = if es.is_empty() {
        return None;
    } else {
        es.remove(0)
    };
    Some(es.into_iter().fold(first, and))
}

pub fn and(a: PhysExpr, b: PhysExpr) -> PhysExpr {
    PhysExpr::Binary {
        op: BinaryOp::And,
        left: Box::new(a),
        right: Box::new(b),
        data_type: DataType::Boolean,
    }
}

pub fn col(id: ColId, ty: DataType) -> PhysExpr {
    PhysExpr::Column {
        index: id,
        data_type: ty,
    }
}

/// Rewrites every column reference through `f`.
pub fn map_columns(e: &PhysExpr, f: &mut dyn FnMut(ColId, DataType) -> PhysExpr) -> PhysExpr {
    match e {
        PhysExpr::Column { index, data_type } => f(*index, *data_type),
        _ => e.map_children(&mut |c| map_columns(c, f)),
    }
}

/// Replaces every sub-expression equal to `from[i].0` by a column `from[i].1`.
pub fn replace_subexprs(e: &PhysExpr, from: &[(PhysExpr, ColId)]) -> PhysExpr {
    if let Some((x, id)) = from.iter().find(|(x, _)| x == e) {
        return col(*id, x.data_type());
    }
    e.map_children(&mut |c| replace_subexprs(c, from))
}
