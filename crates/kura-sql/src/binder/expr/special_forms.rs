//! SQL's keyword-syntax functions: EXTRACT, POSITION, SUBSTRING, TRIM, FLOOR and CEIL.

use super::*;

impl Binder<'_> {
    /// EXTRACT, POSITION, SUBSTRING, TRIM, FLOOR and CEIL.
    pub(super) fn bind_special_form(
        &mut self,
        e: &ast::Expr,
        cx: &mut ExprCtx,
    ) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            E::Extract { field, expr, .. } => {
                let x = self.bind_expr(expr, cx)?;
                if x.data_type() == DataType::Interval {
                    let name = field.to_string().to_lowercase();
                    return self.interval_field(&name, x, pos(e));
                }
                // The calendar fields of a timestamp are its date's.
                let x = if x.data_type() == DataType::Timestamp
                    && matches!(
                        field,
                        ast::DateTimeField::Year
                            | ast::DateTimeField::Month
                            | ast::DateTimeField::Day
                    ) {
                    coerce(x, DataType::Date, pos(e))?
                } else {
                    x
                };
                if let Some(f) = date_field(field) {
                    if matches!(x.data_type(), DataType::Date | DataType::Timestamp) {
                        let data_type = f.result_type(x.data_type());
                        return Ok(fold(PhysExpr::Func {
                            func: ScalarFunc::DateField(f),
                            args: vec![x],
                            data_type,
                        }));
                    }
                }
                if x.data_type() == DataType::Timestamp {
                    let (func, data_type) = match field {
                        ast::DateTimeField::Hour => (ScalarFunc::ExtractHour, DataType::Integer),
                        ast::DateTimeField::Minute => {
                            (ScalarFunc::ExtractMinute, DataType::Integer)
                        }
                        ast::DateTimeField::Second => (
                            ScalarFunc::ExtractSecond,
                            DataType::Decimal {
                                precision: 8,
                                scale: 6,
                            },
                        ),
                        other => {
                            return Err(SqlError::unsupported(
                                format!("extract({other}) of a timestamp"),
                                pos(e),
                            ))
                        }
                    };
                    return Ok(fold(PhysExpr::Func {
                        func,
                        args: vec![x],
                        data_type,
                    }));
                }
                if x.data_type() != DataType::Date {
                    return Err(SqlError::mismatch(
                        format!("extract needs a date, not {}", x.data_type()),
                        pos(e),
                    ));
                }
                let func = match field {
                    ast::DateTimeField::Year => ScalarFunc::ExtractYear,
                    ast::DateTimeField::Month => ScalarFunc::ExtractMonth,
                    ast::DateTimeField::Day => ScalarFunc::ExtractDay,
                    other => {
                        return Err(SqlError::unsupported(format!("extract({other})"), pos(e)))
                    }
                };
                Ok(fold(PhysExpr::Func {
                    func,
                    args: vec![x],
                    data_type: DataType::Integer,
                }))
            }
            E::Position { expr, r#in } => {
                // POSITION(sub IN s) is strpos(s, sub).
                let args = vec![self.bind_expr(r#in, cx)?, self.bind_expr(expr, cx)?];
                self.bind_text_fn("strpos", args, pos(e))
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let s = self.bind_expr(expr, cx)?;
                let from = match substring_from {
                    Some(f) => self.bind_expr(f, cx)?,
                    None => PhysExpr::literal(Value::Integer(1), DataType::Integer),
                };
                let mut args = vec![s, from];
                if let Some(f) = substring_for {
                    args.push(self.bind_expr(f, cx)?);
                }
                self.scalar_call(ScalarFunc::Substring, args, pos(e))
            }
            E::Trim {
                expr,
                trim_where: None,
                trim_what: None,
                ..
            } => {
                let s = self.bind_expr(expr, cx)?;
                self.scalar_call(ScalarFunc::Trim, vec![s], pos(e))
            }
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let func = match trim_where {
                    Some(ast::TrimWhereField::Leading) => ScalarFunc::LTrim,
                    Some(ast::TrimWhereField::Trailing) => ScalarFunc::RTrim,
                    _ => ScalarFunc::BTrim,
                };
                let mut args = vec![self.bind_expr(expr, cx)?];
                if let Some(chars) = trim_what {
                    args.push(self.bind_expr(chars, cx)?);
                }
                for a in &args {
                    if !a.data_type().is_text() && !is_null_literal(a) {
                        return Err(SqlError::mismatch(
                            format!("function {}({}) does not exist", func.name(), a.data_type()),
                            pos(e),
                        ));
                    }
                }
                crate::binder::functions::trim_call(func, args, pos(e))
            }
            E::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            }
            | E::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => {
                let x = self.bind_expr(expr, cx)?;
                let name = if matches!(e, E::Floor { .. }) {
                    "floor"
                } else {
                    "ceil"
                };
                self.bind_math(name, vec![x], pos(e))
            }
            other => Err(SqlError::unsupported(
                format!("expression {other}"),
                pos(other),
            )),
        }
    }
}

/// The `extract` fields `kura_exec::expr::date_field` computes.
pub(super) fn date_field(
    field: &ast::DateTimeField,
) -> Option<kura_exec::expr::date_field::DateField> {
    use kura_exec::expr::date_field::DateField;
    Some(match field {
        ast::DateTimeField::Dow => DateField::Dow,
        ast::DateTimeField::Isodow => DateField::IsoDow,
        ast::DateTimeField::Doy => DateField::Doy,
        ast::DateTimeField::Quarter => DateField::Quarter,
        ast::DateTimeField::Week(None) => DateField::Week,
        ast::DateTimeField::Isoyear => DateField::IsoYear,
        ast::DateTimeField::Decade => DateField::Decade,
        ast::DateTimeField::Century => DateField::Century,
        ast::DateTimeField::Millennium => DateField::Millennium,
        ast::DateTimeField::Epoch => DateField::Epoch,
        _ => return None,
    })
}
