//! CAST and `::`, with the casts PostgreSQL refuses refused alike.

use super::*;

impl Binder<'_> {
    /// `CAST(x AS t)` and `x::t`.
    pub(super) fn bind_cast(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            E::Cast {
                expr, data_type, ..
            } => {
                let t = sql_type(data_type, pos(e))?;
                if let (E::Array(a), true) = (expr.as_ref(), t.is_array()) {
                    if a.elem.is_empty() {
                        // `ARRAY[]::int[]`: the cast gives the empty array its type.
                        return Ok(PhysExpr::literal(Value::Text("{}".into()), t));
                    }
                }
                let x = self.bind_expr(expr, cx)?;
                if t.is_array()
                    && !(x.data_type().is_text() || x.data_type().is_array())
                    && !is_untyped_null(&x)
                {
                    return Err(SqlError::CannotCoerce {
                        message: format!("cannot cast type {} to {t}", x.data_type()),
                        pos: pos(e),
                    });
                }
                if let (DataType::Vector(_), true) =
                    (x.data_type(), t.is_array() && t != x.data_type())
                {
                    // PostgreSQL's array keeps the vector's subscripts (from
                    // 0), which kura's arrays (from 1) cannot hold.
                    return Err(SqlError::unsupported(
                        format!(
                            "casting {} to {t} (its subscripts start at 0, kura's arrays' at 1)",
                            x.data_type().to_string().to_lowercase()
                        ),
                        pos(e),
                    ));
                }
                if x.data_type().is_array() && !(t.is_array() || t.is_text()) {
                    return Err(SqlError::CannotCoerce {
                        message: format!("cannot cast type {} to {t}", x.data_type()),
                        pos: pos(e),
                    });
                }
                no_boolean_smallint_cast(x.data_type(), t, pos(e))?;
                if let Some(n) = param_marker(&x) {
                    // `$1::int` while describing: the cast gives the parameter its type.
                    if let Some(slot) = self.params.types.get_mut(n - 1) {
                        slot.get_or_insert(t);
                    }
                    return Ok(PhysExpr::literal(Value::Null, t));
                }
                if is_untyped_null(&x) && t == DataType::Varchar(None) {
                    // `CAST(NULL AS TEXT)` is text, not the untyped NULL it would fold to.
                    return Ok(text_null());
                }
                Ok(fold(coerce(x, t, pos(e))?))
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }
}

/// PostgreSQL casts boolean to and from integer but has no cast between
/// boolean and smallint (`true::int2` is an error there), nor does kura; a
/// uuid, bytea or interval casts only to and from text; json and jsonb to and
/// from text and each other, and jsonb to numbers and boolean.
pub(super) fn no_boolean_smallint_cast(from: DataType, to: DataType, p: Pos) -> SqlResult<()> {
    let name = |t: DataType| match t {
        DataType::Boolean => "boolean",
        _ => "smallint",
    };
    let binary = |t: DataType| {
        matches!(
            t,
            DataType::Uuid
                | DataType::Bytea
                | DataType::Interval
                | DataType::Json
                | DataType::Jsonb
        )
    };
    let json = |t: DataType| matches!(t, DataType::Json | DataType::Jsonb);
    let allowed = (json(from) && json(to))
        || (from == DataType::Jsonb && (to.is_numeric() || to == DataType::Boolean));
    if (binary(from) || binary(to)) && from != to && !from.is_text() && !to.is_text() && !allowed {
        return Err(SqlError::CannotCoerce {
            message: format!(
                "cannot cast type {} to {}",
                from.to_string().to_lowercase(),
                to.to_string().to_lowercase()
            ),
            pos: p,
        });
    }
    match (from, to) {
        (DataType::Boolean, DataType::SmallInt) | (DataType::SmallInt, DataType::Boolean) => {
            Err(SqlError::CannotCoerce {
                message: format!("cannot cast type {} to {}", name(from), name(to)),
                pos: p,
            })
        }
        _ => Ok(()),
    }
}
