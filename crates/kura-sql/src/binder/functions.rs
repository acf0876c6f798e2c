//! Binding of the analytic functions beyond the core set: statistical, boolean
//! and ordered-set aggregates, `string_agg`, and the scalar functions
//! `greatest`/`least`, `date_part`, `split_part`, `regexp_replace`, `to_char`,
//! `to_date` and `to_timestamp` (PostgreSQL's signatures and result types).

use kura_common::{DataType, Value};
use kura_exec::expr::{PhysExpr, ScalarFunc};
use kura_exec::{AggCall, AggFunc, Moment, SortKey};
use sqlparser::ast;

use super::types::{coerce, common_type, fold, is_null_literal, is_untyped_null};
use super::vocab::{no_such, param_marker, sort_key, ExprCtx};
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::col;

use kura_exec::expr::registry::{in_family, Family};

const TEXT: DataType = DataType::Varchar(None);

/// Functions kura knows the names of but refuses (0A000), with why.
const REFUSED: &[(&str, &str)] = &[];

/// The moment statistic an aggregate name computes, and its argument count.
fn moment(name: &str) -> Option<(Moment, usize)> {
    Some(match name {
        "stddev" | "stddev_samp" => (Moment::StddevSamp, 1),
        "stddev_pop" => (Moment::StddevPop, 1),
        "variance" | "var_samp" => (Moment::VarSamp, 1),
        "var_pop" => (Moment::VarPop, 1),
        "corr" => (Moment::Corr, 2),
        "covar_pop" => (Moment::CovarPop, 2),
        "covar_samp" => (Moment::CovarSamp, 2),
        "regr_slope" => (Moment::RegrSlope, 2),
        "regr_intercept" => (Moment::RegrIntercept, 2),
        "regr_r2" => (Moment::RegrR2, 2),
        "regr_avgx" => (Moment::RegrAvgX, 2),
        "regr_avgy" => (Moment::RegrAvgY, 2),
        "regr_sxx" => (Moment::RegrSxx, 2),
        "regr_syy" => (Moment::RegrSyy, 2),
        "regr_sxy" => (Moment::RegrSxy, 2),
        _ => return None,
    })
}

/// An argument of a numeric statistic: a number (an untyped NULL is a double).
fn numeric(a: PhysExpr) -> Option<PhysExpr> {
    if is_untyped_null(&a) {
        Some(PhysExpr::literal(Value::Null, DataType::Double))
    } else if a.data_type().is_numeric() {
        Some(a)
    } else {
        None
    }
}

/// The plain expressions of a call's argument list, and whether `*` was written.
pub(super) fn call_args(
    f: &ast::Function,
    name: &str,
    p: Pos,
) -> SqlResult<(Vec<ast::Expr>, bool)> {
    match &f.args {
        ast::FunctionArguments::None => Ok((Vec::new(), false)),
        ast::FunctionArguments::Subquery(_) => {
            Err(SqlError::unsupported("subquery as function argument", p))
        }
        ast::FunctionArguments::List(l) => {
            let mut star = false;
            let mut args = Vec::new();
            for a in &l.args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                        args.push(e.clone())
                    }
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                    _ => return Err(SqlError::unsupported(format!("argument form in {name}"), p)),
                }
            }
            Ok((args, star))
        }
    }
}

impl Binder<'_> {
    /// Binds `f` if it is one of this module's functions (`None` otherwise).
    pub(super) fn bind_more_function(
        &mut self,
        f: &ast::Function,
        name: &str,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        if let Some((_, why)) = REFUSED.iter().find(|r| r.0 == name) {
            return Err(SqlError::unsupported(*why, p));
        }
        if super::table_fn::is_from_item_function(name) {
            return Err(SqlError::unsupported(
                format!("{name} in a SELECT list beside other items or a FROM clause (use it as a FROM item)"),
                p,
            ));
        }
        if in_family(name, Family::Aggregate) {
            if f.over.is_some() {
                return Err(SqlError::unsupported(
                    format!("{name} as a window function"),
                    p,
                ));
            }
            return self.bind_more_aggregate(f, name, cx, p).map(Some);
        }
        let array_fn = in_family(name, Family::Array);
        let math_fn = in_family(name, Family::Math);
        let binary_fn = in_family(name, Family::Binary);
        let interval_fn = in_family(name, Family::Interval);
        let json_fn = in_family(name, Family::Json);
        let text_fn = in_family(name, Family::Text);
        if !in_family(name, Family::Scalar)
            && !array_fn
            && !math_fn
            && !binary_fn
            && !interval_fn
            && !json_fn
            && !text_fn
        {
            return Ok(None);
        }
        if f.over.is_some() {
            return Err(SqlError::mismatch(
                format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
                p,
            ));
        }
        if !f.within_group.is_empty() || f.filter.is_some() {
            return Err(SqlError::WrongObjectType {
                message: format!("{name} is not an aggregate function"),
                pos: p,
            });
        }
        if let ast::FunctionArguments::List(l) = &f.args {
            if l.duplicate_treatment.is_some() || !l.clauses.is_empty() {
                return Err(SqlError::WrongObjectType {
                    message: format!("{name} is not an aggregate function"),
                    pos: p,
                });
            }
        }
        let (args, star) = call_args(f, name, p)?;
        if star {
            return Err(SqlError::Syntax(format!(
                "{name}(*) is not a function call"
            )));
        }
        if name == "date_part" {
            return self.bind_date_part(&args, cx, p).map(Some);
        }
        let bound = args
            .iter()
            .map(|a| self.bind_expr(a, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        if array_fn {
            return self.bind_array_scalar(name, bound, p).map(Some);
        }
        if math_fn {
            return self.bind_math(name, bound, p).map(Some);
        }
        if binary_fn {
            return self.bind_binary_fn(name, bound, p).map(Some);
        }
        if interval_fn {
            return self.bind_interval_fn(name, bound, p).map(Some);
        }
        if json_fn {
            return self.bind_json_fn(name, bound, p).map(Some);
        }
        if text_fn {
            return self.bind_text_fn(name, bound, p).map(Some);
        }
        self.bind_more_scalar(name, bound, p).map(Some)
    }

    /// `date_part('field', x)`: EXTRACT of the field, as a double (PostgreSQL's
    /// result type), through the very binding EXTRACT uses.
    fn bind_date_part(
        &mut self,
        args: &[ast::Expr],
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let [field, x] = args else {
            return Err(SqlError::UnknownFunction {
                name: "date_part".into(),
                pos: p,
                suggestion: None,
            });
        };
        let text = match field {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.to_lowercase(),
                _ => return Err(SqlError::unsupported("date_part with a non-text field", p)),
            },
            _ => {
                return Err(SqlError::unsupported(
                    "date_part with a non-constant field",
                    p,
                ))
            }
        };
        let field = match text.as_str() {
            "year" | "years" => ast::DateTimeField::Year,
            "month" | "months" | "mon" => ast::DateTimeField::Month,
            "day" | "days" => ast::DateTimeField::Day,
            "hour" | "hours" => ast::DateTimeField::Hour,
            "minute" | "minutes" | "min" => ast::DateTimeField::Minute,
            "second" | "seconds" | "sec" => ast::DateTimeField::Second,
            // Fields only intervals have in kura (EXTRACT refuses them otherwise).
            "epoch" => ast::DateTimeField::Epoch,
            "quarter" => ast::DateTimeField::Quarter,
            "millisecond" | "milliseconds" => ast::DateTimeField::Millisecond,
            "microsecond" | "microseconds" => ast::DateTimeField::Microsecond,
            "decade" => ast::DateTimeField::Decade,
            "century" => ast::DateTimeField::Century,
            "millennium" => ast::DateTimeField::Millennium,
            "dow" => ast::DateTimeField::Dow,
            "isodow" => ast::DateTimeField::Isodow,
            "doy" => ast::DateTimeField::Doy,
            "week" => ast::DateTimeField::Week(None),
            "isoyear" => ast::DateTimeField::Isoyear,
            other => {
                return Err(SqlError::InvalidValue {
                    message: format!("unit \"{other}\" not recognized for type date or timestamp"),
                    pos: p,
                })
            }
        };
        let extract = ast::Expr::Extract {
            field,
            syntax: ast::ExtractSyntax::From,
            expr: Box::new(x.clone()),
        };
        let e = self.bind_expr(&extract, cx)?;
        coerce(e, DataType::Double, p)
    }

    fn bind_more_scalar(&mut self, name: &str, args: Vec<PhysExpr>, p: Pos) -> SqlResult<PhysExpr> {
        let call = |func, args, data_type| {
            Ok(fold(PhysExpr::Func {
                func,
                args,
                data_type,
            }))
        };
        let text = |a: &PhysExpr| a.data_type().is_text() || is_null_literal(a);
        let int = |a: &PhysExpr| a.data_type().is_integer() || is_untyped_null(a);
        match name {
            "greatest" | "least" => {
                if args.is_empty() {
                    return Err(SqlError::Syntax(format!("{name}() needs arguments")));
                }
                // The common type of the typed arguments, as CASE resolves it;
                // untyped literals take it.
                // Quoted literals take the other arguments' type when there are
                // others (PostgreSQL's `unknown`), else are text.
                let literal = |a: &PhysExpr| {
                    is_untyped_null(a)
                        || matches!(
                            a,
                            PhysExpr::Literal {
                                value: Value::Text(_),
                                data_type: DataType::Varchar(None),
                            }
                        )
                };
                let typed: Vec<&PhysExpr> = args.iter().filter(|a| !literal(a)).collect();
                let decide: Vec<&PhysExpr> = if typed.is_empty() {
                    args.iter().filter(|a| !is_untyped_null(a)).collect()
                } else {
                    typed
                };
                let mut t: Option<DataType> = None;
                for a in decide {
                    t = Some(match t {
                        None => a.data_type(),
                        Some(x) => common_type(x, a.data_type()).ok_or_else(|| {
                            SqlError::mismatch(
                                format!(
                                    "{} types {x} and {} cannot be matched",
                                    name.to_uppercase(),
                                    a.data_type()
                                ),
                                p,
                            )
                        })?,
                    });
                }
                let t = t.unwrap_or(TEXT);
                super::json_fn::refuse_json_key(t, &name.to_uppercase(), true)?;
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, t, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                let func = if name == "greatest" {
                    ScalarFunc::Greatest
                } else {
                    ScalarFunc::Least
                };
                call(func, args, t)
            }
            "random" => {
                if !args.is_empty() {
                    return Err(no_such(name, &args, p));
                }
                // Volatile: never folded, evaluated for every row.
                Ok(PhysExpr::Func {
                    func: ScalarFunc::Random,
                    args,
                    data_type: DataType::Double,
                })
            }
            "ltrim" | "rtrim" | "btrim" => {
                if !((1..=2).contains(&args.len()) && args.iter().all(text)) {
                    return Err(no_such(name, &args, p));
                }
                let func = match name {
                    "ltrim" => ScalarFunc::LTrim,
                    "rtrim" => ScalarFunc::RTrim,
                    _ => ScalarFunc::BTrim,
                };
                trim_call(func, args, p)
            }
            "split_part" => {
                if !(args.len() == 3 && text(&args[0]) && text(&args[1]) && int(&args[2])) {
                    return Err(no_such(name, &args, p));
                }
                let mut args = args;
                args[2] = coerce(args[2].clone(), DataType::BigInt, p)?;
                call(ScalarFunc::SplitPart, args, TEXT)
            }
            "regexp_replace" => {
                if !((3..=4).contains(&args.len()) && args.iter().all(text)) {
                    return Err(no_such(name, &args, p));
                }
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, TEXT, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                call(ScalarFunc::RegexpReplace, args, TEXT)
            }
            "regexp_match" => {
                if !((2..=3).contains(&args.len()) && args.iter().all(text)) {
                    return Err(no_such(name, &args, p));
                }
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, TEXT, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                call(
                    ScalarFunc::RegexpMatch,
                    args,
                    DataType::Array(kura_common::ElemType::Varchar(None)),
                )
            }
            "to_char" => {
                if args.len() != 2 || !text(&args[1]) || is_untyped_null(&args[0]) {
                    return Err(no_such(name, &args, p));
                }
                let t = args[0].data_type();
                if !(t.is_numeric() || matches!(t, DataType::Date | DataType::Timestamp)) {
                    return Err(no_such(name, &args, p));
                }
                let mut args = args;
                // A date is formatted as the timestamp of its midnight.
                if t == DataType::Date {
                    args[0] = coerce(args[0].clone(), DataType::Timestamp, p)?;
                }
                args[1] = coerce(args[1].clone(), TEXT, p)?;
                call(ScalarFunc::ToChar, args, TEXT)
            }
            "to_date" | "to_timestamp" => {
                if args.len() != 2 || !args.iter().all(text) {
                    return Err(no_such(name, &args, p));
                }
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, TEXT, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                if name == "to_date" {
                    call(ScalarFunc::ToDate, args, DataType::Date)
                } else {
                    call(ScalarFunc::ToTimestamp, args, DataType::Timestamp)
                }
            }
            _ => Err(SqlError::Internal(format!("{name} is not bound here"))),
        }
    }

    fn bind_more_aggregate(
        &mut self,
        f: &ast::Function,
        name: &str,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
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
        if f.null_treatment.is_some() {
            return Err(SqlError::unsupported("IGNORE/RESPECT NULLS", p));
        }
        if !matches!(f.parameters, ast::FunctionArguments::None) {
            return Err(SqlError::unsupported("function parameters", p));
        }
        let ordered_set = matches!(name, "percentile_cont" | "percentile_disc" | "mode");
        if ordered_set && f.within_group.is_empty() {
            // PostgreSQL looks for a plain function of the direct arguments'
            // types, and names the one it did not find.
            let (args, _) = call_args(f, name, p)?;
            let bound = args
                .iter()
                .map(|a| self.bind_expr(a, cx))
                .collect::<SqlResult<Vec<_>>>()?;
            return Err(no_such(name, &bound, p));
        }
        if !ordered_set && !f.within_group.is_empty() {
            // PostgreSQL looks for an ordered-set aggregate of the direct and
            // the ordered arguments' types, and names the one it did not find.
            let (args, _) = call_args(f, name, p)?;
            let bound = args
                .iter()
                .chain(f.within_group.iter().map(|o| &o.expr))
                .map(|a| self.bind_expr(a, cx))
                .collect::<SqlResult<Vec<_>>>()?;
            return Err(no_such(name, &bound, p));
        }
        let (mut distinct, mut order_by) = (false, Vec::new());
        if let ast::FunctionArguments::List(l) = &f.args {
            distinct = matches!(
                l.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            );
            for c in &l.clauses {
                match c {
                    ast::FunctionArgumentClause::OrderBy(keys) => order_by.extend(keys.iter()),
                    other => {
                        return Err(SqlError::unsupported(
                            format!("{other} in a function call"),
                            p,
                        ))
                    }
                }
            }
        }
        // Only string_agg's result depends on the order of its rows; an ORDER BY
        // elsewhere is refused rather than silently dropped.
        if !order_by.is_empty()
            && !matches!(
                name,
                "string_agg"
                    | "array_agg"
                    | "json_agg"
                    | "jsonb_agg"
                    | "json_object_agg"
                    | "jsonb_object_agg"
            )
        {
            return Err(SqlError::unsupported(
                format!("ORDER BY inside {name}()"),
                p,
            ));
        }
        let two_args = moment(name).is_some_and(|m| m.1 == 2) || name == "regr_count";
        if distinct && (two_args || ordered_set || name == "median") {
            return Err(SqlError::unsupported(format!("DISTINCT in {name}()"), p));
        }
        let (args, star) = call_args(f, name, p)?;
        if star {
            return Err(SqlError::mismatch(
                format!("function {name}(*) does not exist"),
                p,
            ));
        }
        cx.in_aggregate = true;
        let agg = cx.agg.take();
        let bound =
            self.bind_aggregate_parts(&args, &f.within_group, &order_by, f.filter.as_deref(), cx);
        cx.agg = agg;
        cx.in_aggregate = false;
        let (args, within, order, filter) = bound?;
        for k in &order {
            super::json_fn::refuse_json_key(k.expr.data_type(), "ORDER BY", true)?;
        }
        if distinct {
            // As in PostgreSQL: the rows DISTINCT keeps are told apart by the
            // arguments alone, so the order can only be by them.
            if order.iter().any(|k| !args.contains(&k.expr)) {
                return Err(SqlError::InvalidColumnReference {
                    message: "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list".into(),
                    pos: p,
                });
            }
            if matches!(
                name,
                "json_agg" | "jsonb_agg" | "json_object_agg" | "jsonb_object_agg"
            ) {
                return Err(SqlError::unsupported(format!("DISTINCT in {name}()"), p));
            }
        }
        let mut call = self.more_aggregate_call(name, args, within, order, p)?;
        call.distinct = distinct;
        if let (Some(filter), AggFunc::ArrayAgg | AggFunc::JsonAgg | AggFunc::JsonObjectAgg) =
            (&filter, call.func)
        {
            // array_agg keeps NULL elements, so FILTER drops rows through its
            // own condition instead of a NULL argument.
            call.extra[0] = coerce(filter.clone(), DataType::Boolean, p)?;
        } else if let Some(filter) = filter {
            // FILTER (WHERE c): the aggregate sees a row only where c is true, as
            // a NULL argument (which all of these skip).
            let filter = coerce(filter, DataType::Boolean, p)?;
            call.arg = call.arg.take().map(|a| {
                let data_type = a.data_type();
                PhysExpr::Case {
                    whens: vec![(filter, a)],
                    otherwise: None,
                    data_type,
                }
            });
        }
        let ty = call.data_type;
        let collector = cx
            .agg
            .as_mut()
            .ok_or_else(|| SqlError::Internal("aggregate collector".into()))?;
        if let Some((_, id)) = collector.aggs.iter().find(|(c, _)| *c == call) {
            return Ok(col(*id, ty));
        }
        let id = self.cols.add(name, ty);
        collector.aggs.push((call, id));
        Ok(col(id, ty))
    }

    /// The bound arguments, WITHIN GROUP keys, ORDER BY keys and FILTER.
    #[allow(clippy::type_complexity)]
    fn bind_aggregate_parts(
        &mut self,
        args: &[ast::Expr],
        within: &[ast::OrderByExpr],
        order: &[&ast::OrderByExpr],
        filter: Option<&ast::Expr>,
        cx: &mut ExprCtx,
    ) -> SqlResult<(Vec<PhysExpr>, Vec<SortKey>, Vec<SortKey>, Option<PhysExpr>)> {
        let args = args
            .iter()
            .map(|a| self.bind_expr(a, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        let mut key = |o: &ast::OrderByExpr, cx: &mut ExprCtx| -> SqlResult<SortKey> {
            let e = self.bind_expr(&o.expr, cx)?;
            let k = sort_key(e, &o.options);
            Ok(SortKey {
                expr: k.expr,
                descending: k.descending,
                nulls_first: k.nulls_first,
            })
        };
        let within = within
            .iter()
            .map(|o| key(o, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        let order = order
            .iter()
            .map(|o| key(o, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        let filter = filter
            .map(|c| {
                let saved = cx.clause.replace("FILTER");
                let b = self.bind_expr(c, cx);
                cx.clause = saved;
                b
            })
            .transpose()?;
        Ok((args, within, order, filter))
    }

    fn more_aggregate_call(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        mut within: Vec<SortKey>,
        order: Vec<SortKey>,
        p: Pos,
    ) -> SqlResult<AggCall> {
        let no_such = |args: &[PhysExpr]| no_such(name, args, p);
        let simple = |func, arg, t| Ok(AggCall::simple(func, Some(arg), t));
        match name {
            "bool_and" | "bool_or" | "every" => {
                let [a] = args.as_slice() else {
                    return Err(no_such(&args));
                };
                if a.data_type() != DataType::Boolean && !is_untyped_null(a) {
                    return Err(no_such(&args));
                }
                let a = coerce(a.clone(), DataType::Boolean, p)?;
                let func = if name == "bool_or" {
                    AggFunc::BoolOr
                } else {
                    AggFunc::BoolAnd
                };
                simple(func, a, DataType::Boolean)
            }
            "regr_count" => {
                // The rows where both arguments are non-NULL: count over a
                // CASE, so that it is 0 (not NULL) over no rows as count is.
                let [y, x] = args.as_slice() else {
                    return Err(no_such(&args));
                };
                let (Some(y), Some(x)) = (numeric(y.clone()), numeric(x.clone())) else {
                    return Err(no_such(&args));
                };
                let not_null = |e: PhysExpr| PhysExpr::IsNull {
                    expr: Box::new(e),
                    negated: true,
                };
                let both = PhysExpr::Binary {
                    op: kura_exec::expr::BinaryOp::And,
                    left: Box::new(not_null(y)),
                    right: Box::new(not_null(x)),
                    data_type: DataType::Boolean,
                };
                let one = PhysExpr::Case {
                    whens: vec![(
                        both,
                        PhysExpr::literal(Value::Integer(1), DataType::Integer),
                    )],
                    otherwise: None,
                    data_type: DataType::Integer,
                };
                simple(AggFunc::Count, fold(one), DataType::BigInt)
            }
            "string_agg" => {
                let [v, d] = args.as_slice() else {
                    return Err(no_such(&args));
                };
                let text = |a: &PhysExpr| a.data_type().is_text() || is_untyped_null(a);
                if !text(v) || !text(d) {
                    return Err(no_such(&args));
                }
                Ok(AggCall {
                    extra: vec![coerce(d.clone(), TEXT, p)?],
                    order,
                    ..AggCall::simple(AggFunc::StringAgg, Some(coerce(v.clone(), TEXT, p)?), TEXT)
                })
            }
            "json_agg" | "jsonb_agg" | "json_object_agg" | "jsonb_object_agg" => {
                let own = if name.starts_with("jsonb") {
                    DataType::Jsonb
                } else {
                    DataType::Json
                };
                // A value as its json text (untyped literals are text).
                let as_json = |v: &PhysExpr| -> SqlResult<PhysExpr> {
                    let v = if super::types::is_untyped_literal(v) {
                        coerce(v.clone(), TEXT, p)?
                    } else {
                        v.clone()
                    };
                    Ok(super::json_fn::json_call(
                        kura_exec::expr::json::JsonFunc::ToJson,
                        vec![v],
                        own,
                    ))
                };
                let all = PhysExpr::literal(Value::Boolean(true), DataType::Boolean);
                match (name, args.as_slice()) {
                    ("json_agg" | "jsonb_agg", [v]) => Ok(AggCall {
                        extra: vec![all],
                        order,
                        ..AggCall::simple(AggFunc::JsonAgg, Some(as_json(v)?), own)
                    }),
                    ("json_object_agg" | "jsonb_object_agg", [k, v]) => Ok(AggCall {
                        extra: vec![all, as_json(v)?],
                        order,
                        ..AggCall::simple(
                            AggFunc::JsonObjectAgg,
                            Some(coerce(k.clone(), TEXT, p)?),
                            own,
                        )
                    }),
                    _ => Err(no_such(&args)),
                }
            }
            "array_agg" => {
                let [v] = args.as_slice() else {
                    return Err(no_such(&args));
                };
                let v = if is_untyped_null(v) || param_marker(v).is_some() {
                    coerce(PhysExpr::literal(Value::Null, TEXT), TEXT, p)?
                } else {
                    v.clone()
                };
                let t = super::array::array_type(v.data_type(), p)?;
                Ok(AggCall {
                    extra: vec![PhysExpr::literal(Value::Boolean(true), DataType::Boolean)],
                    order,
                    ..AggCall::simple(AggFunc::ArrayAgg, Some(v), t)
                })
            }
            "median" => {
                let [x] = args.as_slice() else {
                    return Err(no_such(&args));
                };
                let x = numeric(x.clone()).ok_or_else(|| no_such(&args))?;
                let x = coerce(x, DataType::Double, p)?;
                Ok(AggCall {
                    extra: vec![PhysExpr::literal(Value::Double(0.5), DataType::Double)],
                    order: vec![SortKey {
                        expr: x.clone(),
                        descending: false,
                        nulls_first: false,
                    }],
                    ..AggCall::simple(AggFunc::PercentileCont, Some(x), DataType::Double)
                })
            }
            "percentile_cont" | "percentile_disc" | "mode" => {
                let want = usize::from(name != "mode");
                if args.len() != want || within.len() != 1 {
                    let mut all = args.clone();
                    all.extend(within.iter().map(|k| k.expr.clone()));
                    return Err(no_such(&all));
                }
                let mut key = within.remove(0);
                let (func, t) = match name {
                    "percentile_cont" => {
                        let x = numeric(key.expr.clone())
                            .ok_or_else(|| no_such(&[args[0].clone(), key.expr.clone()]))?;
                        key.expr = coerce(x, DataType::Double, p)?;
                        (AggFunc::PercentileCont, DataType::Double)
                    }
                    "percentile_disc" => (AggFunc::PercentileDisc, key.expr.data_type()),
                    _ => (AggFunc::Mode, key.expr.data_type()),
                };
                let extra = match args.first() {
                    Some(f) => {
                        let f = numeric(f.clone())
                            .ok_or_else(|| no_such(&[f.clone(), key.expr.clone()]))?;
                        let f = fold(coerce(f, DataType::Double, p)?);
                        if !matches!(f, PhysExpr::Literal { .. }) {
                            return Err(SqlError::unsupported(
                                format!("{name} with a fraction that is not a constant"),
                                p,
                            ));
                        }
                        vec![f]
                    }
                    None => Vec::new(),
                };
                Ok(AggCall {
                    extra,
                    order: vec![key.clone()],
                    ..AggCall::simple(func, Some(key.expr), t)
                })
            }
            _ => {
                let Some((m, n)) = moment(name) else {
                    return Err(SqlError::Internal(format!("{name} is not bound here")));
                };
                if args.len() != n {
                    return Err(no_such(&args));
                }
                let nums = args
                    .iter()
                    .map(|a| numeric(a.clone()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| no_such(&args))?;
                let mut nums = nums.into_iter();
                let first = nums.next().ok_or_else(|| no_such(&args))?;
                Ok(AggCall {
                    extra: nums.collect(),
                    ..AggCall::simple(AggFunc::Moment(m), Some(first), DataType::Double)
                })
            }
        }
    }
}

/// `ltrim`/`rtrim`/`btrim(s [, chars])` (and `TRIM(... FROM s)`): the
/// characters default to a space.
pub(super) fn trim_call(func: ScalarFunc, mut args: Vec<PhysExpr>, p: Pos) -> SqlResult<PhysExpr> {
    if args.len() == 1 {
        args.push(PhysExpr::literal(
            Value::Text(" ".into()),
            DataType::Varchar(None),
        ));
    }
    let args = args
        .into_iter()
        .map(|a| coerce(a, DataType::Varchar(None), p))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(fold(PhysExpr::Func {
        func,
        args,
        data_type: DataType::Varchar(None),
    }))
}
