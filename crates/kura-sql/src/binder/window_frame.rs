//! Binding of window frames (`ROWS | RANGE | GROUPS BETWEEN ... AND ...`) and of
//! named windows (`WINDOW w AS (...)`, `OVER w`, `OVER (w ORDER BY ...)`).

use kura_common::{DataType, Value};
use kura_exec::expr::PhysExpr;
use kura_exec::{FrameBound, FrameUnits, WindowFrame};
use sqlparser::ast;

use super::interval_fn::interval;
use super::types::coerce;
use super::vocab::ExprCtx;
use super::{norm, Binder};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{refs_of, LSortKey};

fn windowing(message: impl Into<String>, pos: Pos) -> SqlError {
    SqlError::Windowing {
        message: message.into(),
        pos,
    }
}

/// The windows a SELECT's WINDOW clause defines, each resolved to a plain
/// specification (a definition may build on an earlier one).
pub fn named_windows(
    defs: &[ast::NamedWindowDefinition],
) -> SqlResult<Vec<(String, ast::WindowSpec)>> {
    let mut out: Vec<(String, ast::WindowSpec)> = Vec::new();
    for ast::NamedWindowDefinition(name, expr) in defs {
        let name = norm(name);
        if out.iter().any(|(n, _)| *n == name) {
            return Err(windowing(
                format!("window \"{name}\" is already defined"),
                Pos::default(),
            ));
        }
        let spec = match expr {
            ast::NamedWindowExpr::NamedWindow(other) => lookup(&out, &norm(other))?.clone(),
            ast::NamedWindowExpr::WindowSpec(s) => resolve(s, &out)?,
        };
        out.push((name, spec));
    }
    Ok(out)
}

fn lookup<'a>(
    named: &'a [(String, ast::WindowSpec)],
    name: &str,
) -> SqlResult<&'a ast::WindowSpec> {
    named
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s)
        .ok_or_else(|| SqlError::UndefinedObject(format!("window \"{name}\" does not exist")))
}

/// The window an OVER clause names: `OVER w` is w itself; `OVER (w ...)` copies
/// w's partitioning and ordering and adds what w lacks (PostgreSQL's rules).
pub fn over_spec(
    over: &ast::WindowType,
    named: &[(String, ast::WindowSpec)],
) -> SqlResult<ast::WindowSpec> {
    match over {
        ast::WindowType::NamedWindow(name) => Ok(lookup(named, &norm(name))?.clone()),
        ast::WindowType::WindowSpec(s) => resolve(s, named),
    }
}

fn resolve(s: &ast::WindowSpec, named: &[(String, ast::WindowSpec)]) -> SqlResult<ast::WindowSpec> {
    let Some(base) = &s.window_name else {
        return Ok(s.clone());
    };
    let name = norm(base);
    let w = lookup(named, &name)?;
    if !s.partition_by.is_empty() {
        return Err(windowing(
            format!("cannot override PARTITION BY clause of window \"{name}\""),
            Pos::default(),
        ));
    }
    if !s.order_by.is_empty() && !w.order_by.is_empty() {
        return Err(windowing(
            format!("cannot override ORDER BY clause of window \"{name}\""),
            Pos::default(),
        ));
    }
    if w.window_frame.is_some() {
        return Err(windowing(
            format!("cannot copy window \"{name}\" because it has a frame clause"),
            Pos::default(),
        ));
    }
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: w.partition_by.clone(),
        order_by: if s.order_by.is_empty() {
            w.order_by.clone()
        } else {
            s.order_by.clone()
        },
        window_frame: s.window_frame.clone(),
    })
}

/// Frame bounds that PostgreSQL's grammar refuses.
fn check_bounds(start: &ast::WindowFrameBound, end: &ast::WindowFrameBound) -> SqlResult<()> {
    use ast::WindowFrameBound as B;
    let p = Pos::default();
    match (start, end) {
        (B::Following(None), _) => Err(windowing("frame start cannot be UNBOUNDED FOLLOWING", p)),
        (_, B::Preceding(None)) => Err(windowing("frame end cannot be UNBOUNDED PRECEDING", p)),
        (B::CurrentRow, B::Preceding(Some(_))) => Err(windowing(
            "frame starting from current row cannot have preceding rows",
            p,
        )),
        (B::Following(Some(_)), B::CurrentRow) => Err(windowing(
            "frame starting from following row cannot end with current row",
            p,
        )),
        (B::Following(Some(_)), B::Preceding(Some(_))) => Err(windowing(
            "frame starting from following row cannot have preceding rows",
            p,
        )),
        _ => Ok(()),
    }
}

impl Binder<'_> {
    /// The frame of a window with ORDER BY keys `order` (PostgreSQL's default
    /// when none is written).
    pub(super) fn bind_frame(
        &mut self,
        frame: Option<&ast::WindowFrame>,
        order: &[LSortKey],
        cx: &ExprCtx,
        p: Pos,
    ) -> SqlResult<WindowFrame> {
        let Some(f) = frame else {
            return Ok(WindowFrame::default_frame());
        };
        let end = f
            .end_bound
            .clone()
            .unwrap_or(ast::WindowFrameBound::CurrentRow);
        check_bounds(&f.start_bound, &end)?;
        let (units, word) = match f.units {
            ast::WindowFrameUnits::Rows => (FrameUnits::Rows, "ROWS"),
            ast::WindowFrameUnits::Range => (FrameUnits::Range, "RANGE"),
            ast::WindowFrameUnits::Groups => (FrameUnits::Groups, "GROUPS"),
        };
        if units == FrameUnits::Groups && order.is_empty() {
            return Err(windowing("GROUPS mode requires an ORDER BY clause", p));
        }
        let has_offset = [&f.start_bound, &end].iter().any(|b| {
            matches!(
                b,
                ast::WindowFrameBound::Preceding(Some(_))
                    | ast::WindowFrameBound::Following(Some(_))
            )
        });
        if units == FrameUnits::Range && has_offset && order.len() != 1 {
            return Err(windowing(
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                p,
            ));
        }
        let key = (units == FrameUnits::Range)
            .then(|| order.first())
            .flatten();
        let mut bound = |b: &ast::WindowFrameBound| -> SqlResult<FrameBound> {
            use ast::WindowFrameBound as B;
            Ok(match b {
                B::CurrentRow => FrameBound::CurrentRow,
                B::Preceding(None) => FrameBound::UnboundedPreceding,
                B::Following(None) => FrameBound::UnboundedFollowing,
                B::Preceding(Some(e)) => {
                    FrameBound::Preceding(self.frame_offset(e, word, key, cx, p)?)
                }
                B::Following(Some(e)) => {
                    FrameBound::Following(self.frame_offset(e, word, key, cx, p)?)
                }
            })
        };
        let start = bound(&f.start_bound)?;
        let end = bound(&end)?;
        Ok(WindowFrame { units, start, end })
    }

    /// A frame offset: a constant expression of the type the frame measures
    /// distance in (BIGINT rows or groups; for RANGE, the ORDER BY key's).
    fn frame_offset(
        &mut self,
        e: &ast::Expr,
        word: &str,
        key: Option<&LSortKey>,
        cx: &ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let key_type = key.map(|k| k.expr.data_type());
        if let (Some(t @ (DataType::Date | DataType::Timestamp)), ast::Expr::Interval(iv)) =
            (key_type, e)
        {
            let (months, days, micros) = interval(iv)?;
            if months != 0 {
                return Err(SqlError::unsupported("RANGE offsets in months or years", p));
            }
            let total = days as i64 * 86_400_000_000 + micros;
            return Ok(if t == DataType::Date {
                if total % 86_400_000_000 != 0 {
                    return Err(SqlError::unsupported(
                        "RANGE offsets of a date key that are not whole days",
                        p,
                    ));
                }
                PhysExpr::literal(Value::BigInt(total / 86_400_000_000), DataType::BigInt)
            } else {
                PhysExpr::literal(Value::BigInt(total), DataType::BigInt)
            });
        }
        // Its own context: no aggregates, windows or columns.
        let mut ocx = ExprCtx::new(cx.scope, cx.outer);
        ocx.clause = Some(match word {
            "ROWS" => "window ROWS",
            "RANGE" => "window RANGE",
            _ => "window GROUPS",
        });
        let b = self.bind_expr(e, &mut ocx)?;
        if !refs_of(&b).is_empty() || !ocx.pending.is_empty() {
            return Err(SqlError::InvalidColumnReference {
                message: format!("argument of {word} must not contain variables"),
                pos: p,
            });
        }
        let t = b.data_type();
        let untyped = super::types::is_untyped_null(&b);
        let to = match key_type {
            None => {
                if !(t.is_numeric() || untyped) {
                    return Err(SqlError::mismatch(
                        format!("argument of {word} must be type bigint, not type {t}"),
                        p,
                    ));
                }
                DataType::BigInt
            }
            Some(k) => {
                let refuse = |offset: &str| {
                    SqlError::unsupported(
                        format!(
                            "RANGE with offset PRECEDING/FOLLOWING for column type {k}{offset}"
                        ),
                        p,
                    )
                };
                let int_offset = t.is_integer() || untyped;
                match k {
                    k if k.is_integer() && int_offset => DataType::BigInt,
                    DataType::Decimal { scale, .. }
                        if t.is_numeric() && t != DataType::Double || untyped =>
                    {
                        DataType::Decimal {
                            precision: 38,
                            scale,
                        }
                    }
                    DataType::Double if t.is_numeric() || untyped => DataType::Double,
                    DataType::SmallInt
                    | DataType::Integer
                    | DataType::BigInt
                    | DataType::Decimal { .. }
                    | DataType::Double
                    | DataType::Date
                    | DataType::Timestamp => return Err(refuse(&format!(" and offset type {t}"))),
                    _ => return Err(refuse("")),
                }
            }
        };
        coerce(b, to, p)
    }
}
