//! Binding of function calls: scalar functions by name through the function
//! registry, and aggregate calls (their result types are in `aggregate_fn.rs`).

use super::datetime::today_utc;
use super::*;
use crate::binder::aggregate_fn::{aggregate_call, is_core_aggregate};

impl Binder<'_> {
    pub(super) fn scalar_call(
        &mut self,
        func: ScalarFunc,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(SqlError::mismatch(format!("{} {what}", func.name()), p))
            }
        };
        // The length of binary data is its bytes.
        if let (ScalarFunc::Length, [a]) = (func, args.as_slice()) {
            if a.data_type() == DataType::Bytea {
                return Ok(crate::binder::binary_fn::binary_call(
                    kura_exec::expr::binary::BinaryFunc::Length,
                    args,
                    DataType::Integer,
                ));
            }
        }
        // An untyped NULL argument of a numeric function resolves to double precision,
        // the preferred type of PostgreSQL's numeric category (`abs(NULL)`).
        let args = if matches!(func, ScalarFunc::Abs | ScalarFunc::Round) {
            args.into_iter()
                .enumerate()
                .map(|(i, a)| {
                    if i == 0 && is_untyped_null(&a) {
                        PhysExpr::literal(Value::Null, DataType::Double)
                    } else {
                        a
                    }
                })
                .collect()
        } else {
            args
        };
        let t = match func {
            ScalarFunc::Substring => {
                need(
                    args.len() >= 2 && (args[0].data_type().is_text() || is_null_literal(&args[0])),
                    "needs text",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Upper | ScalarFunc::Lower | ScalarFunc::Trim => {
                need(
                    args.len() == 1 && args[0].data_type().is_text(),
                    "needs one text argument",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Length => {
                need(
                    args.len() == 1 && args[0].data_type().is_text(),
                    "needs one text argument",
                )?;
                DataType::Integer
            }
            ScalarFunc::Repeat => {
                need(
                    args.len() == 2
                        && (args[0].data_type().is_text() || is_null_literal(&args[0]))
                        && (args[1].data_type().is_integer() || is_null_literal(&args[1])),
                    "needs text and an integer",
                )?;
                DataType::Varchar(None)
            }
            ScalarFunc::Abs => {
                need(
                    args.len() == 1 && args[0].data_type().is_numeric(),
                    "needs one number",
                )?;
                args[0].data_type()
            }
            ScalarFunc::Round => {
                need(
                    !args.is_empty() && args.len() <= 2 && args[0].data_type().is_numeric(),
                    "needs a number",
                )?;
                match args[0].data_type() {
                    DataType::Decimal { precision, .. } => {
                        let d = match args.get(1) {
                            Some(PhysExpr::Literal {
                                value: Value::Integer(d),
                                ..
                            }) => (*d).clamp(0, 38) as u8,
                            None => 0,
                            _ => {
                                return Err(SqlError::unsupported(
                                    "round with non-constant digits",
                                    p,
                                ))
                            }
                        };
                        DataType::Decimal {
                            precision: precision.max(d + 1),
                            scale: d,
                        }
                    }
                    t => t,
                }
            }
            ScalarFunc::Coalesce => {
                let mut t: Option<DataType> = None;
                for a in &args {
                    if is_untyped_null(a) {
                        continue;
                    }
                    t = Some(match t {
                        None => a.data_type(),
                        Some(x) => common_type(x, a.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!(
                                    "COALESCE types {x} and {} cannot be matched",
                                    a.data_type()
                                ),
                                p,
                            )
                        })?,
                    });
                }
                t.unwrap_or(DataType::Varchar(None))
            }
            _ => {
                return Err(SqlError::Internal(format!(
                    "{} is not callable by name",
                    func.name()
                )))
            }
        };
        Ok(fold(PhysExpr::Func {
            func,
            args,
            data_type: t,
        }))
    }

    pub(super) fn bind_function(
        &mut self,
        f: &ast::Function,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let name = match f.name.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) => norm(i),
            _ => return Err(SqlError::Syntax(format!("bad function name {}", f.name))),
        };
        if let (ast::FunctionArguments::Subquery(q), "array", 1) =
            (&f.args, name.as_str(), f.name.0.len())
        {
            return self.array_subquery(q, cx, p);
        }
        if name == "_pg_expandarray" {
            // Its rows are planned as a whole SELECT-list item (`select_srf`).
            return Err(SqlError::unsupported(
                "information_schema._pg_expandarray other than as a whole item of a SELECT list with a FROM clause",
                p,
            ));
        }
        if let Some(bound) = self.bind_more_function(f, &name, cx, p)? {
            return Ok(bound);
        }
        if let Some(bound) = self.bind_sequence_function(f, &name, cx, p)? {
            return Ok(bound);
        }
        if f.over.is_some() {
            return self.bind_window_call(f, &name, cx, p);
        }
        if name == "grouping" {
            return self.bind_grouping(f, cx, p);
        }
        // Clauses this binder does not apply are refused, never ignored: an ignored
        // ORDER BY or IGNORE NULLS would silently change the answer.
        if !f.within_group.is_empty() {
            return Err(SqlError::unsupported("WITHIN GROUP", p));
        }
        if f.null_treatment.is_some() {
            return Err(SqlError::unsupported("IGNORE/RESPECT NULLS", p));
        }
        if !matches!(f.parameters, ast::FunctionArguments::None) {
            return Err(SqlError::unsupported("function parameters", p));
        }
        if let ast::FunctionArguments::List(l) = &f.args {
            if let Some(c) = l.clauses.first() {
                return Err(SqlError::unsupported(format!("{c} in a function call"), p));
            }
        }
        let (args, distinct, star) = match &f.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subquery as function argument", p))
            }
            ast::FunctionArguments::List(l) => {
                let distinct = matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                );
                let mut star = false;
                let mut args = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                            args.push(e.clone())
                        }
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => {
                            return Err(SqlError::unsupported(
                                format!("argument form in {name}"),
                                p,
                            ))
                        }
                    }
                }
                (args, distinct, star)
            }
        };
        if is_core_aggregate(&name) {
            if cx.agg.is_none() {
                let place = cx.clause.map_or("here".to_string(), |c| format!("in {c}"));
                return Err(SqlError::Grouping {
                    message: format!("aggregate functions are not allowed {place}"),
                    pos: p,
                });
            }
            if cx.in_aggregate {
                return Err(SqlError::InvalidValue {
                    message: "aggregate function calls cannot be nested".into(),
                    pos: p,
                });
            }
            cx.in_aggregate = true;
            let agg = cx.agg.take();
            let arg = if star {
                // count(*) FILTER (WHERE c) counts the rows where c holds: count(CASE WHEN c THEN 1 END).
                (name == "count" && f.filter.is_some())
                    .then(|| Ok(PhysExpr::literal(Value::Integer(1), DataType::Integer)))
            } else {
                if args.len() != 1 {
                    cx.agg = agg;
                    cx.in_aggregate = false;
                    return Err(SqlError::mismatch(format!("{name} takes one argument"), p));
                }
                let r = self.bind_expr(&args[0], cx);
                Some(r)
            };
            let filter = f.filter.as_ref().map(|c| {
                let saved = cx.clause.replace("FILTER");
                let b = self.bind_expr(c, cx);
                cx.clause = saved;
                b
            });
            cx.agg = agg;
            cx.in_aggregate = false;
            let mut arg = arg.transpose()?;
            if let Some(filter) = filter.transpose()? {
                let filter = coerce(filter, DataType::Boolean, p)?;
                // FILTER (WHERE c): the aggregate sees its argument only where c is true.
                arg = arg.map(|a| {
                    let data_type = a.data_type();
                    PhysExpr::Case {
                        whens: vec![(filter, a)],
                        otherwise: None,
                        data_type,
                    }
                });
            }
            let call = aggregate_call(&name, arg, distinct, p)?;
            let ty = call.data_type;
            let collector = cx
                .agg
                .as_mut()
                .ok_or_else(|| SqlError::Internal("aggregate collector".into()))?;
            if let Some((_, id)) = collector.aggs.iter().find(|(c, _)| *c == call) {
                return Ok(col(*id, ty));
            }
            let id = self.cols.add(&name, ty);
            collector.aggs.push((call, id));
            return Ok(col(id, ty));
        }
        // Today's date (UTC): the transaction's, as `now()` is, in a session.
        if name == "current_date" && args.is_empty() {
            let today = self.catalog.session().map_or_else(today_utc, |s| {
                kura_common::timestamp::to_date(s.transaction_start)
            });
            return Ok(PhysExpr::literal(Value::Date(today), DataType::Date));
        }
        let bound = args
            .iter()
            .map(|a| self.bind_expr(a, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        if let Some(value) = self.session_function(&name, &bound, p)? {
            return Ok(value);
        }
        let func = match name.as_str() {
            "coalesce" => ScalarFunc::Coalesce,
            "abs" => ScalarFunc::Abs,
            "round" => ScalarFunc::Round,
            "upper" => ScalarFunc::Upper,
            "lower" => ScalarFunc::Lower,
            "length" | "char_length" => ScalarFunc::Length,
            "substr" | "substring" => ScalarFunc::Substring,
            "trim" => ScalarFunc::Trim,
            "repeat" => ScalarFunc::Repeat,
            "date_trunc" => {
                // A date is truncated as the timestamp of its midnight, as in PostgreSQL.
                let [unit, x] = bound.as_slice() else {
                    return Err(SqlError::mismatch(
                        "date_trunc takes a unit and a timestamp",
                        p,
                    ));
                };
                let x = match x.data_type() {
                    DataType::Timestamp => x.clone(),
                    DataType::Date => coerce(x.clone(), DataType::Timestamp, p)?,
                    _ if is_text_literal(x) || is_untyped_null(x) => {
                        coerce(x.clone(), DataType::Timestamp, p)?
                    }
                    t => {
                        return Err(SqlError::mismatch(
                            format!("function date_trunc(text, {t}) does not exist"),
                            p,
                        ))
                    }
                };
                if let PhysExpr::Literal {
                    value: Value::Text(u),
                    ..
                } = unit
                {
                    if kura_common::timestamp::trunc(u, 0).is_none() {
                        return Err(SqlError::InvalidValue {
                            message: format!("unit \"{u}\" not recognized for type timestamp"),
                            pos: p,
                        });
                    }
                } else {
                    return Err(SqlError::unsupported(
                        "date_trunc with a non-constant unit",
                        p,
                    ));
                }
                return Ok(fold(PhysExpr::Func {
                    func: ScalarFunc::DateTrunc,
                    args: vec![unit.clone(), x],
                    data_type: DataType::Timestamp,
                }));
            }
            "nullif" => {
                if bound.len() != 2 {
                    return Err(SqlError::mismatch("nullif takes two arguments", p));
                }
                let eq = self.comparison(BinaryOp::Eq, bound[0].clone(), bound[1].clone(), p)?;
                let first = if is_untyped_null(&bound[0]) {
                    PhysExpr::literal(Value::Null, bound[1].data_type())
                } else {
                    bound[0].clone()
                };
                let t = first.data_type();
                return Ok(PhysExpr::Case {
                    whens: vec![(eq, PhysExpr::literal(Value::Null, t))],
                    otherwise: Some(Box::new(first)),
                    data_type: t,
                });
            }
            _ => {
                let suggestion = did_you_mean(
                    &name,
                    kura_exec::expr::registry::FUNCTIONS
                        .iter()
                        .map(|f| f.name)
                        .chain(crate::binder::session_fn::SESSION_FUNCTIONS.iter().copied()),
                );
                return Err(SqlError::UnknownFunction {
                    name,
                    pos: p,
                    suggestion,
                });
            }
        };
        let bound = if func == ScalarFunc::Coalesce {
            let call = self.scalar_call(func, bound.clone(), p)?;
            let t = call.data_type();
            let args = bound
                .into_iter()
                .map(|a| coerce(a, t, p))
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(fold(PhysExpr::Func {
                func,
                args,
                data_type: t,
            }));
        } else {
            bound
        };
        self.scalar_call(func, bound, p)
    }
}
