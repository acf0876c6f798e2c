//! CASE expressions: the result type common to every branch.

use super::*;

impl Binder<'_> {
    /// A simple or searched CASE.
    pub(super) fn bind_case(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let op = operand
                    .as_ref()
                    .map(|o| self.bind_expr(o, cx))
                    .transpose()?;
                let mut whens = Vec::new();
                for cw in conditions {
                    let c = self.bind_expr(&cw.condition, cx)?;
                    let c = match &op {
                        Some(o) => {
                            self.comparison(BinaryOp::Eq, o.clone(), c, pos(&cw.condition))?
                        }
                        None => self.check_bool(c, "CASE/WHEN", pos(&cw.condition))?,
                    };
                    whens.push((c, self.bind_expr(&cw.result, cx)?));
                }
                let otherwise = else_result
                    .as_ref()
                    .map(|x| self.bind_expr(x, cx))
                    .transpose()?;
                let mut ty: Option<DataType> = None;
                for t in whens.iter().map(|w| &w.1).chain(otherwise.iter()) {
                    if is_untyped_null(t) {
                        continue;
                    }
                    ty = Some(match ty {
                        None => t.data_type(),
                        Some(x) => common_type(x, t.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!("CASE types {x} and {} cannot be matched", t.data_type()),
                                pos(e),
                            )
                        })?,
                    });
                }
                let ty = ty.unwrap_or(DataType::Varchar(None));
                let whens = whens
                    .into_iter()
                    .map(|(c, t)| Ok((c, coerce(t, ty, pos(e))?)))
                    .collect::<SqlResult<Vec<_>>>()?;
                let otherwise = otherwise
                    .map(|o| coerce(o, ty, pos(e)))
                    .transpose()?
                    .map(Box::new);
                Ok(PhysExpr::Case {
                    whens,
                    otherwise,
                    data_type: ty,
                })
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }
}
