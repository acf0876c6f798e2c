//! Binding of window functions (`f(...) OVER (PARTITION BY ... ORDER BY ...)`):
//! calls are collected while a SELECT's list and ORDER BY are bound, then planned
//! as one window node per distinct window, between the grouping and the projection.

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use kura_exec::{FramePick, WindowFunc};
use sqlparser::ast;

use super::aggregate_fn::{aggregate_call, is_core_aggregate};
use super::types::{coerce, common_type, is_untyped_null};
use super::vocab::{sort_key, ExprCtx, WindowCall, WindowCollector};
use super::window_frame::{named_windows, over_spec};
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, ColId, LSortKey, Logical};

// The collector type is in vocab.rs, beside the ExprCtx that holds one (window
// binding needs ExprCtx, so the type cannot live here without an import loop).
impl WindowCollector {
    /// A collector for a SELECT with WINDOW clause `defs`.
    pub fn new(defs: &[ast::NamedWindowDefinition]) -> SqlResult<WindowCollector> {
        Ok(WindowCollector {
            named: named_windows(defs)?,
            ..Default::default()
        })
    }

    pub fn ids(&self) -> impl Iterator<Item = ColId> + '_ {
        self.calls.iter().map(|c| c.id)
    }

    /// Rewrites every expression of every call (grouping replaces grouped
    /// expressions by the aggregate's output columns).
    pub fn map_exprs(
        &mut self,
        f: &mut dyn FnMut(&PhysExpr) -> SqlResult<PhysExpr>,
    ) -> SqlResult<()> {
        for c in &mut self.calls {
            for p in &mut c.partition {
                *p = f(p)?;
            }
            for k in &mut c.order {
                k.expr = f(&k.expr)?;
            }
            for e in c.func.exprs_mut() {
                *e = f(e)?;
            }
        }
        Ok(())
    }
}

fn windowing(message: impl Into<String>, pos: Pos) -> SqlError {
    SqlError::Windowing {
        message: message.into(),
        pos,
    }
}

impl Binder<'_> {
    /// Binds `name(...) OVER (...)`: records the call and returns its result column.
    pub(super) fn bind_window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        match &cx.win {
            None => {
                let place = cx.clause.map_or("here".to_string(), |c| format!("in {c}"));
                return Err(windowing(
                    format!("window functions are not allowed {place}"),
                    p,
                ));
            }
            Some(w) if w.nested => {
                return Err(windowing("window function calls cannot be nested", p))
            }
            Some(_) => {}
        }
        if cx.in_aggregate {
            return Err(SqlError::Grouping {
                message: "aggregate function calls cannot contain window function calls".into(),
                pos: p,
            });
        }
        let spec = match (&f.over, &cx.win) {
            (Some(over), Some(w)) => over_spec(over, &w.named)?,
            _ => return Err(SqlError::Internal("window call without OVER".into())),
        };
        if f.filter.is_some() {
            return Err(SqlError::unsupported("FILTER in a window function call", p));
        }
        if !f.within_group.is_empty() || f.null_treatment.is_some() {
            return Err(SqlError::unsupported(
                format!("this form of {name} as a window function"),
                p,
            ));
        }
        let (args, star, distinct) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::List(l) => {
                if !l.clauses.is_empty() {
                    return Err(SqlError::unsupported(
                        format!("clauses in the arguments of {name}"),
                        p,
                    ));
                }
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut args = Vec::new();
                let mut star = false;
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => {
                            return Err(SqlError::unsupported(
                                format!("argument form in {name}"),
                                p,
                            ))
                        }
                    }
                }
                (args, star, distinct)
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subquery as function argument", p))
            }
        };
        if distinct {
            // PostgreSQL's own answer (0A000).
            return Err(SqlError::unsupported(
                "DISTINCT in a window function (as in PostgreSQL)",
                p,
            ));
        }
        // Arguments and window are bound with nesting marked; aggregates in them
        // are collected as usual (`rank() OVER (ORDER BY sum(x))`).
        if let Some(w) = cx.win.as_mut() {
            w.nested = true;
        }
        let bound = self.bind_window_parts(name, &args, star, &spec, cx, p);
        if let Some(w) = cx.win.as_mut() {
            w.nested = false;
        }
        let (func, partition, order) = bound?;
        let ty = func.data_type();
        let w = cx
            .win
            .as_mut()
            .ok_or_else(|| SqlError::Internal("window collector".into()))?;
        if let Some(c) = w
            .calls
            .iter()
            .find(|c| c.func == func && c.partition == partition && c.order == order)
        {
            return Ok(col(c.id, ty));
        }
        let id = self.cols.add(name, ty);
        w.calls.push(WindowCall {
            func,
            partition,
            order,
            id,
        });
        Ok(col(id, ty))
    }

    fn bind_window_parts(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
        star: bool,
        spec: &ast::WindowSpec,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<(WindowFunc, Vec<PhysExpr>, Vec<LSortKey>)> {
        let partition = spec
            .partition_by
            .iter()
            .map(|e| self.bind_expr(e, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        // jsonb partitions by value (its equality key); json cannot.
        let partition = partition
            .into_iter()
            .map(|e| match e.data_type() {
                DataType::Jsonb => Ok(super::json_fn::equality_key(e)),
                t => super::json_fn::refuse_json_key(t, "PARTITION BY", false).map(|_| e),
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let mut order = Vec::new();
        for o in &spec.order_by {
            let e = self.bind_expr(&o.expr, cx)?;
            super::json_fn::refuse_json_key(e.data_type(), "a window's ORDER BY", true)?;
            order.push(sort_key(e, &o.options));
        }
        // Checked for every function, though only aggregates and the frame value
        // functions use it (as PostgreSQL does).
        let frame = self.bind_frame(spec.window_frame.as_ref(), &order, cx, p)?;
        let arity = |lo: usize, hi: usize| -> SqlResult<()> {
            if star || args.len() < lo || args.len() > hi {
                let what = if star {
                    "*".to_string()
                } else {
                    format!("{} arguments", args.len())
                };
                return Err(SqlError::UnknownFunction {
                    name: format!("{name} with {what}"),
                    pos: p,
                    suggestion: None,
                });
            }
            Ok(())
        };
        let func = match name {
            "row_number" | "rank" | "dense_rank" | "percent_rank" | "cume_dist" => {
                if !args.is_empty() || star {
                    return Err(SqlError::mismatch(
                        format!("function {name} takes no arguments"),
                        p,
                    ));
                }
                match name {
                    "row_number" => WindowFunc::RowNumber,
                    "rank" => WindowFunc::Rank,
                    "dense_rank" => WindowFunc::DenseRank,
                    "percent_rank" => WindowFunc::PercentRank,
                    _ => WindowFunc::CumeDist,
                }
            }
            "ntile" => {
                arity(1, 1)?;
                let n = self.bind_expr(args[0], cx)?;
                WindowFunc::Ntile(self.integer_arg(n, name, p)?)
            }
            "lag" | "lead" => {
                arity(1, 3)?;
                let mut value = self.bind_expr(args[0], cx)?;
                let offset = match args.get(1) {
                    Some(a) => {
                        let o = self.bind_expr(a, cx)?;
                        self.integer_arg(o, name, p)?
                    }
                    None => PhysExpr::literal(Value::BigInt(1), DataType::BigInt),
                };
                let default = match args.get(2) {
                    Some(a) => {
                        let d = self.bind_expr(a, cx)?;
                        // The value and the default unify, as PostgreSQL's
                        // anycompatible arguments do.
                        let (vt, dt) = (value.data_type(), d.data_type());
                        let t = if is_untyped_null(&d) {
                            vt
                        } else if is_untyped_null(&value) {
                            dt
                        } else {
                            common_type(vt, dt).ok_or_else(|| {
                                SqlError::mismatch(
                                    format!("{name} types {vt} and {dt} cannot be matched"),
                                    p,
                                )
                            })?
                        };
                        value = coerce(value, t, p)?;
                        coerce(d, t, p)?
                    }
                    None => PhysExpr::literal(Value::Null, value.data_type()),
                };
                WindowFunc::Shift {
                    lead: name == "lead",
                    value,
                    offset,
                    default,
                }
            }
            "first_value" | "last_value" | "nth_value" => {
                let pick = if name == "nth_value" {
                    arity(2, 2)?;
                    let n = self.bind_expr(args[1], cx)?;
                    FramePick::Nth(self.integer_arg(n, name, p)?)
                } else {
                    arity(1, 1)?;
                    if name == "first_value" {
                        FramePick::First
                    } else {
                        FramePick::Last
                    }
                };
                WindowFunc::FrameValue {
                    pick,
                    value: self.bind_expr(args[0], cx)?,
                    frame,
                }
            }
            n if is_core_aggregate(n) => {
                let arg = if star {
                    None
                } else {
                    if args.len() != 1 {
                        return Err(SqlError::mismatch(format!("{n} takes one argument"), p));
                    }
                    Some(self.bind_expr(args[0], cx)?)
                };
                WindowFunc::Aggregate(aggregate_call(n, arg, false, p)?, frame)
            }
            n => {
                return Err(SqlError::mismatch(
                    format!(
                    "OVER specified, but {n} is not a window function nor an aggregate function"
                ),
                    p,
                ))
            }
        };
        Ok((func, partition, order))
    }

    /// An INTEGER argument (a row count or offset) as BIGINT; other types are
    /// refused as PostgreSQL finds no such function.
    fn integer_arg(&self, e: PhysExpr, name: &str, p: Pos) -> SqlResult<PhysExpr> {
        let t = e.data_type();
        if !(t.is_integer() || is_untyped_null(&e)) {
            return Err(SqlError::UnknownFunction {
                name: format!("{name} with an argument of type {t}"),
                pos: p,
                suggestion: None,
            });
        }
        coerce(e, DataType::BigInt, p)
    }

    /// One window node per distinct window over `plan`, in the order the windows
    /// first appear.
    pub(super) fn plan_windows(&mut self, mut plan: Logical, w: WindowCollector) -> Logical {
        // (partition keys, order keys, the functions over them)
        type Window = (Vec<PhysExpr>, Vec<LSortKey>, Vec<(WindowFunc, ColId)>);
        let mut windows: Vec<Window> = Vec::new();
        for c in w.calls {
            match windows
                .iter_mut()
                .find(|(p, o, _)| *p == c.partition && *o == c.order)
            {
                Some(found) => found.2.push((c.func, c.id)),
                None => windows.push((c.partition, c.order, vec![(c.func, c.id)])),
            }
        }
        for (partition, order, funcs) in windows {
            plan = Logical::Window {
                input: Box::new(plan),
                partition,
                order,
                funcs,
            };
        }
        plan
    }
}
