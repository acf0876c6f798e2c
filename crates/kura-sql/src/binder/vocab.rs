//! The binder's shared vocabulary: the expression context, where an expression
//! starts, parameter placeholders, sort keys and the unknown-function error. The
//! expression dispatcher, the function families and query binding all use these;
//! this file uses none of them, so they can all import it without a loop.

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use kura_exec::WindowFunc;
use sqlparser::ast::{self, Spanned};

use super::types::is_untyped_null;
use super::{AggCollector, Pending, Scope};
use crate::error::{Pos, SqlError};
use crate::logical::{ColId, LSortKey};

/// Where an expression is bound.
pub struct ExprCtx<'s> {
    pub scope: &'s Scope,
    pub outer: &'s [Scope],
    /// Set while binding an aggregating SELECT: aggregates are collected here.
    pub agg: Option<AggCollector>,
    pub pending: Vec<Pending>,
    /// The clause being bound (`WHERE`, `GROUP BY`, ...), named by errors about what
    /// the clause cannot hold.
    pub clause: Option<&'static str>,
    pub(super) in_aggregate: bool,
    /// Set where window functions may appear (a SELECT's list and ORDER BY).
    pub win: Option<WindowCollector>,
}

impl<'s> ExprCtx<'s> {
    pub fn new(scope: &'s Scope, outer: &'s [Scope]) -> ExprCtx<'s> {
        ExprCtx {
            scope,
            outer,
            agg: None,
            pending: Vec::new(),
            clause: None,
            in_aggregate: false,
            win: None,
        }
    }
}

/// One window function call: what it computes and over which window.
#[derive(Clone, PartialEq)]
pub struct WindowCall {
    pub func: WindowFunc,
    pub partition: Vec<PhysExpr>,
    pub order: Vec<LSortKey>,
    pub id: ColId,
}

/// The window calls of one SELECT. Its methods are in `window.rs`; the type is
/// here because [`ExprCtx`] holds one.
#[derive(Default)]
pub struct WindowCollector {
    pub calls: Vec<WindowCall>,
    /// Set while a call's arguments and window are bound: a window function there
    /// is nested, which SQL forbids.
    pub(super) nested: bool,
    /// The SELECT's WINDOW clause, resolved.
    pub(super) named: Vec<(String, ast::WindowSpec)>,
}

/// The deepest expression nesting the binder accepts. Every later pass (folding,
/// optimizer rewrites, EXPLAIN, evaluation, dropping the tree) recurses over
/// the bound tree, so a limit here bounds the stack all of them need: the
/// session runs each statement on a stack sized for this depth. AND/OR chains
/// and IN lists do not count against it: they are bound flat.
pub const MAX_EXPR_DEPTH: usize = 2000;

/// Where an expression starts. sqlparser computes an expression's span from all
/// of its parts, so asking it at every level of a long `a OR b OR ...` chain or
/// for every item of an IN list would make binding quadratic; the start is
/// found by walking down to the leftmost operand instead. The walk is bounded:
/// an expression deeper than [`MAX_EXPR_DEPTH`] is refused anyway, and an
/// unbounded walk at every level of it would be quadratic again.
pub(super) fn pos(e: &ast::Expr) -> Pos {
    use ast::Expr as E;
    let mut x = e;
    for step in 0.. {
        if step > MAX_EXPR_DEPTH {
            return Pos::default();
        }
        x = match x {
            E::BinaryOp { left, .. } => left,
            E::InList { expr, .. }
            | E::InSubquery { expr, .. }
            | E::Between { expr, .. }
            | E::Like { expr, .. }
            | E::ILike { expr, .. }
            | E::IsNull(expr)
            | E::IsNotNull(expr)
            | E::IsTrue(expr)
            | E::IsFalse(expr)
            | E::IsNotTrue(expr)
            | E::IsNotFalse(expr)
            | E::IsDistinctFrom(expr, _)
            | E::IsNotDistinctFrom(expr, _) => expr,
            _ => break,
        };
    }
    let p = Pos::from_span(x.span());
    if p.line == 0 {
        Pos::from_span(e.span())
    } else {
        p
    }
}

/// Prefix of the placeholder literal standing for `$n` while a statement is described.
pub(super) const PARAM_MARK: &str = "\u{0}$";

/// The parameter number a describe-time placeholder stands for.
pub(super) fn param_marker(e: &PhysExpr) -> Option<usize> {
    match e {
        PhysExpr::Literal {
            value: Value::Text(t),
            ..
        } => t.strip_prefix(PARAM_MARK)?.parse().ok(),
        _ => None,
    }
}

/// A quoted literal or NULL not yet given a type, not a parameter: what
/// PostgreSQL calls `unknown` (and names so in "function f(unknown) does not
/// exist").
pub(super) fn is_unknown(e: &PhysExpr) -> bool {
    let untyped_text = matches!(
        e,
        PhysExpr::Literal {
            value: Value::Text(_),
            data_type: DataType::Varchar(None),
        }
    ) && param_marker(e).is_none();
    untyped_text || is_untyped_null(e)
}

/// `function name(types) does not exist` (42883), as PostgreSQL words it.
pub(super) fn no_such(name: &str, args: &[PhysExpr], p: Pos) -> SqlError {
    let types: Vec<String> = args
        .iter()
        .map(|a| {
            if is_unknown(a) {
                "unknown".to_string()
            } else {
                a.data_type().to_string()
            }
        })
        .collect();
    SqlError::UnknownFunction {
        name: format!("{name}({})", types.join(", ")),
        pos: p,
        suggestion: None,
    }
}

/// The sort key of `expr` with ORDER BY options `o`.
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
