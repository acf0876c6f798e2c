//! Set-returning functions as FROM items — `generate_series(start, stop[, step])`
//! over integers and timestamps, `unnest(array, ...)` — `WITH ORDINALITY` too.
//! Their arguments must be constants (parameters included). Their rows are made
//! while binding, as a VALUES list bounded by [`MAX_ROWS`] — except an integer
//! series longer than [`LAZY_ROWS`], which is a table computed as it is read.

use kura_common::timestamp::{from_date, time_of_day, to_date, MICROS_PER_DAY};
use kura_common::{date, DataType, Value};
use kura_exec::expr::{array_elements, PhysExpr};
use sqlparser::ast;

use super::interval_fn::interval;
use super::types::{coerce, fold, is_untyped_null};
use super::vocab::{param_marker, ExprCtx};
use super::{norm, Binder, Scope, ScopeCol};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::Logical;

/// The most rows a FROM-clause function may produce as a VALUES list (held in
/// memory): `unnest` and timestamp series.
pub const MAX_ROWS: usize = 1_000_000;

/// Integer series longer than this are computed as they are scanned
/// (`kura_exec::series`) instead of being made a VALUES list while binding.
pub const LAZY_ROWS: usize = 1024;

fn too_many(name: &str, p: Pos) -> SqlError {
    SqlError::unsupported(format!("{name} producing more than {MAX_ROWS} rows"), p)
}

/// The rows of a timestamp series step: months, days and microseconds.
fn add_step(t: i64, (months, days, micros): (i32, i32, i64)) -> Option<i64> {
    let moved = if months == 0 {
        t
    } else {
        from_date(date::add_months(to_date(t), months)?) + time_of_day(t)
    };
    moved
        .checked_add(i64::from(days) * MICROS_PER_DAY)?
        .checked_add(micros)
}

/// The rows of a function in FROM.
enum FunctionRows {
    /// Computed while binding: a VALUES list.
    Listed(Vec<Vec<Value>>),
    /// An integer series too long to list: a table computed as it is scanned
    /// (`count` values of `ty` from `start` by `step`).
    Series {
        ty: DataType,
        start: i64,
        step: i64,
        count: u64,
    },
}

impl Binder<'_> {
    /// A constant argument of a FROM-clause function (a `$n` being described
    /// takes `want`).
    fn constant_arg(
        &mut self,
        e: &ast::Expr,
        want: Option<DataType>,
        name: &str,
        outer: &[Scope],
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let scope = Scope::default();
        let mut cx = ExprCtx::new(&scope, outer);
        let mut x = self.bind_expr(e, &mut cx)?;
        if let PhysExpr::Column { index, data_type } = &x {
            // A catalog array column kura leaves NULL in every row (an outer
            // one: `unnest(c.reloptions)` in psql's \d+) is the same constant
            // for every row.
            if self.null_arrays.contains(index) {
                x = PhysExpr::literal(Value::Null, *data_type);
            }
        }
        if let (Some(n), Some(t)) = (param_marker(&x), want) {
            if let Some(slot) = self.params.types.get_mut(n - 1) {
                slot.get_or_insert(t);
            }
            x = PhysExpr::literal(Value::Null, t);
        }
        if let Some(t) = want {
            x = coerce(x, t, p)?;
        }
        let x = fold(x);
        if !matches!(x, PhysExpr::Literal { .. }) || !cx.pending.is_empty() {
            return Err(SqlError::unsupported(
                format!("{name} with arguments that are not constants (LATERAL)"),
                p,
            ));
        }
        Ok(x)
    }

    /// `name(args)` in FROM (a table function or `unnest`), with its alias
    /// and `WITH ORDINALITY`.
    pub(super) fn bind_table_function(
        &mut self,
        f: &ast::TableFactor,
        outer: &[Scope],
        p: Pos,
    ) -> SqlResult<(Logical, Scope)> {
        let (name, args, alias, ordinality) = match f {
            ast::TableFactor::Table {
                name,
                alias,
                args: Some(a),
                with_ordinality,
                ..
            } => (name, &a.args, alias, *with_ordinality),
            ast::TableFactor::Function {
                name,
                args,
                alias,
                with_ordinality,
                ..
            } => (name, args, alias, *with_ordinality),
            ast::TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } => {
                let exprs: Vec<&ast::Expr> = array_exprs.iter().collect();
                return self.bind_function_rows(
                    "unnest",
                    &exprs,
                    alias.as_ref(),
                    *with_ordinality,
                    outer,
                    p,
                );
            }
            other => return Err(SqlError::unsupported(format!("FROM item {other}"), p)),
        };
        let name = match name.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) => norm(i),
            _ => return Err(SqlError::unsupported(format!("FROM item {name}"), p)),
        };
        if super::file_fn::is_file_function(&name) {
            return self.bind_file_function(&name, args, alias.as_ref(), ordinality, p);
        }
        let exprs = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                _ => Err(SqlError::unsupported(format!("argument form in {name}"), p)),
            })
            .collect::<SqlResult<Vec<_>>>()?;
        self.bind_function_rows(&name, &exprs, alias.as_ref(), ordinality, outer, p)
    }

    fn bind_function_rows(
        &mut self,
        name: &str,
        exprs: &[&ast::Expr],
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
        outer: &[Scope],
        p: Pos,
    ) -> SqlResult<(Logical, Scope)> {
        // Columns named by the function itself (a multi-column result).
        let mut named: Option<Vec<String>> = None;
        let (types, rows) = match name {
            "generate_series" => self.generate_series(exprs, outer, p)?,
            "unnest" => {
                let (types, rows) = self.unnest_rows(exprs, outer, p)?;
                (types, FunctionRows::Listed(rows))
            }
            n if is_json_srf(n) => {
                let [arg] = exprs else {
                    return Err(SqlError::UnknownFunction {
                        name: format!("{n} with {} arguments", exprs.len()),
                        pos: p,
                        suggestion: None,
                    });
                };
                let own = if n.starts_with("jsonb") {
                    DataType::Jsonb
                } else {
                    DataType::Json
                };
                let x = self.constant_arg(arg, None, n, outer, p)?;
                let x = if super::types::is_untyped_literal(&x) {
                    coerce(x, own, p)?
                } else if x.data_type() == own {
                    x
                } else {
                    return Err(SqlError::UnknownFunction {
                        name: format!("{n}({})", x.data_type().to_string().to_lowercase()),
                        pos: p,
                        suggestion: None,
                    });
                };
                let (columns, types) = super::json_fn::srf_columns(n);
                if !n.contains("object_keys") {
                    named = Some(columns.iter().map(|c| c.to_string()).collect());
                }
                (
                    types,
                    FunctionRows::Listed(super::json_fn::srf_rows(n, &x, p)?),
                )
            }
            "pg_get_keywords" => {
                if !exprs.is_empty() {
                    return Err(SqlError::UnknownFunction {
                        name: format!("pg_get_keywords with {} arguments", exprs.len()),
                        pos: p,
                        suggestion: None,
                    });
                }
                let (columns, rows) = crate::system::keywords::pg_get_keywords();
                named = Some(columns.iter().map(|(n, _)| n.to_string()).collect());
                (
                    columns.iter().map(|(_, t)| *t).collect(),
                    FunctionRows::Listed(rows),
                )
            }
            other => {
                return Err(SqlError::unsupported(
                    format!(
                        "function {other} in FROM (generate_series, unnest, \
                         pg_get_keywords and the json set-returning functions are)"
                    ),
                    p,
                ))
            }
        };
        // A one-column function is named after its alias, as in PostgreSQL
        // (`FROM generate_series(1, 3) AS g` has a column g).
        let qualifier = alias.map_or(name.to_string(), |a| norm(&a.name));
        let alias_cols: Vec<String> = alias.map_or(Vec::new(), |a| {
            a.columns.iter().map(|c| norm(&c.name)).collect()
        });
        let mut names: Vec<String> = if let Some(named) = named {
            named
        } else if types.len() == 1 {
            vec![alias.map_or(name.to_string(), |a| norm(&a.name))]
        } else {
            vec![name.to_string(); types.len()]
        };
        let mut types = types;
        let mut rows = rows;
        if ordinality {
            names.push("ordinality".into());
            types.push(DataType::BigInt);
            if let FunctionRows::Listed(rows) = &mut rows {
                for (i, r) in rows.iter_mut().enumerate() {
                    r.push(Value::BigInt(i as i64 + 1));
                }
            }
        }
        if alias_cols.len() > types.len() {
            return Err(SqlError::mismatch(
                format!(
                    "table \"{qualifier}\" has {} columns available but {} columns specified",
                    types.len(),
                    alias_cols.len()
                ),
                p,
            ));
        }
        let mut scope = Scope::default();
        let mut cols = Vec::with_capacity(types.len());
        for (i, t) in types.iter().enumerate() {
            let n = alias_cols
                .get(i)
                .cloned()
                .unwrap_or_else(|| names[i].clone());
            let id = self.cols.add(&n, *t);
            cols.push(id);
            scope.cols.push(ScopeCol {
                qualifier: Some(qualifier.clone()),
                name: n,
                id,
                ty: *t,
                qualified_only: false,
            });
        }
        let rows = match rows {
            FunctionRows::Listed(rows) => rows,
            FunctionRows::Series {
                ty,
                start,
                step,
                count,
            } => {
                let table = kura_exec::series::SeriesTable::new(
                    &names[0], ty, start, step, count, ordinality,
                );
                let cols = cols.into_iter().enumerate().collect();
                let table: std::sync::Arc<dyn kura_exec::TableSource> = std::sync::Arc::new(table);
                return Ok((
                    Logical::Scan {
                        table,
                        cols,
                        filters: Vec::new(),
                    },
                    scope,
                ));
            }
        };
        Ok((Logical::Values { rows, cols }, scope))
    }

    /// `generate_series(start, stop [, step])`: integers (step 1 by default) or
    /// timestamps and dates (an interval step).
    #[allow(clippy::type_complexity)]
    fn generate_series(
        &mut self,
        args: &[&ast::Expr],
        outer: &[Scope],
        p: Pos,
    ) -> SqlResult<(Vec<DataType>, FunctionRows)> {
        const NAME: &str = "generate_series";
        if !(2..=3).contains(&args.len()) {
            return Err(SqlError::UnknownFunction {
                name: format!("{NAME} with {} arguments", args.len()),
                pos: p,
                suggestion: None,
            });
        }
        if let Some(ast::Expr::Interval(iv)) = args.get(2) {
            let step = interval(iv)?;
            let ts = Some(DataType::Timestamp);
            let start = self.constant_arg(args[0], ts, NAME, outer, p)?;
            let stop = self.constant_arg(args[1], ts, NAME, outer, p)?;
            let mut rows = Vec::new();
            let (Some(Value::Timestamp(mut t)), Some(Value::Timestamp(end))) =
                (literal(&start), literal(&stop))
            else {
                return Ok((vec![DataType::Timestamp], FunctionRows::Listed(rows)));
            };
            let bad = || SqlError::InvalidValue {
                message: "timestamp out of range".into(),
                pos: p,
            };
            let next = add_step(t, step).ok_or_else(bad)?;
            if next == t {
                return Err(SqlError::InvalidValue {
                    message: "step size cannot equal zero".into(),
                    pos: p,
                });
            }
            let up = next > t;
            while (up && t <= end) || (!up && t >= end) {
                if rows.len() >= MAX_ROWS {
                    return Err(too_many(NAME, p));
                }
                if rows.len() % 65_536 == 0 {
                    crate::interrupt::check()?;
                }
                rows.push(vec![Value::Timestamp(t)]);
                t = match add_step(t, step) {
                    Some(n) => n,
                    None => break,
                };
            }
            return Ok((vec![DataType::Timestamp], FunctionRows::Listed(rows)));
        }
        let mut bound = Vec::new();
        for a in args {
            bound.push(self.constant_arg(a, None, NAME, outer, p)?);
        }
        let open = |e: &PhysExpr| {
            is_untyped_null(e)
                || matches!(
                    e,
                    PhysExpr::Literal {
                        value: Value::Text(_),
                        ..
                    }
                )
        };
        let typed = || bound.iter().filter(|b| !open(b)).map(|b| b.data_type());
        let ty = if typed().any(|t| t == DataType::BigInt) {
            DataType::BigInt
        } else if typed().all(|t| t == DataType::SmallInt) && typed().next().is_some() {
            // PostgreSQL has no smallint series: int4, int8 and numeric ones
            // fit equally well, and it refuses to choose.
            return Err(SqlError::AmbiguousFunction {
                name: format!(
                    "{NAME}({})",
                    bound
                        .iter()
                        .map(|b| if open(b) { "unknown" } else { "smallint" })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                pos: p,
            });
        } else if typed().all(|t| matches!(t, DataType::Integer | DataType::SmallInt)) {
            // A smallint argument widens to the int4 series, as in PostgreSQL.
            DataType::Integer
        } else {
            let types: Vec<String> = bound.iter().map(|b| b.data_type().to_string()).collect();
            return Err(SqlError::unsupported(
                format!(
                    "{NAME}({}) (integer and timestamp series are supported)",
                    types.join(", ")
                ),
                p,
            ));
        };
        let mut vals = Vec::new();
        for b in bound {
            // A `$n` being described is of the series' type.
            let b = match param_marker(&b) {
                Some(n) => {
                    if let Some(slot) = self.params.types.get_mut(n - 1) {
                        slot.get_or_insert(ty);
                    }
                    PhysExpr::literal(Value::Null, ty)
                }
                None => b,
            };
            match literal(&coerce(b, ty, p)?) {
                Some(Value::Integer(v)) => vals.push(Some(i64::from(v))),
                Some(Value::BigInt(v)) => vals.push(Some(v)),
                _ => vals.push(None),
            }
        }
        let mut rows = Vec::new();
        let (Some(start), Some(stop), Some(step)) =
            (vals[0], vals[1], vals.get(2).copied().unwrap_or(Some(1)))
        else {
            return Ok((vec![ty], FunctionRows::Listed(rows)));
        };
        if step == 0 {
            return Err(SqlError::InvalidValue {
                message: "step size cannot equal zero".into(),
                pos: p,
            });
        }
        let count = if (step > 0 && start > stop) || (step < 0 && start < stop) {
            0
        } else {
            (i128::from(stop) - i128::from(start)) / i128::from(step) + 1
        };
        if count > LAZY_ROWS as i128 {
            // Computed as it is scanned: no bound on its length.
            let count = count as u64;
            return Ok((
                vec![ty],
                FunctionRows::Series {
                    ty,
                    start,
                    step,
                    count,
                },
            ));
        }
        for k in 0..count as i64 {
            if k % 65_536 == 0 {
                crate::interrupt::check()?;
            }
            let v = start + k * step;
            rows.push(vec![if ty == DataType::Integer {
                Value::Integer(v as i32)
            } else {
                Value::BigInt(v)
            }]);
        }
        Ok((vec![ty], FunctionRows::Listed(rows)))
    }

    /// `unnest(a [, b ...])`: one row per element, the shorter arrays padded
    /// with NULLs.
    #[allow(clippy::type_complexity)]
    fn unnest_rows(
        &mut self,
        args: &[&ast::Expr],
        outer: &[Scope],
        p: Pos,
    ) -> SqlResult<(Vec<DataType>, Vec<Vec<Value>>)> {
        if args.is_empty() {
            return Err(SqlError::UnknownFunction {
                name: "unnest()".into(),
                pos: p,
                suggestion: None,
            });
        }
        let mut types = Vec::new();
        let mut columns = Vec::new();
        for a in args {
            let mut x = self.constant_arg(a, None, "unnest", outer, p)?;
            if !x.data_type().is_array() {
                // An untyped literal (or NULL) is read as a text array.
                let t = super::array::array_type(DataType::Varchar(None), p)?;
                if is_untyped_null(&x)
                    || matches!(
                        x,
                        PhysExpr::Literal {
                            value: Value::Text(_),
                            data_type: DataType::Varchar(None)
                        }
                    )
                {
                    x = coerce(x, t, p)?;
                } else {
                    return Err(SqlError::UnknownFunction {
                        name: format!("unnest({})", x.data_type()),
                        pos: p,
                        suggestion: None,
                    });
                }
            }
            let x = super::types::as_array(x, p)?;
            let elem = x.data_type().element().unwrap_or(DataType::Varchar(None));
            let elems = match literal(&x) {
                Some(Value::Text(t)) => {
                    array_elements(&t, elem).map_err(|e| SqlError::InvalidText {
                        message: e.to_string(),
                        pos: p,
                    })?
                }
                _ => Vec::new(),
            };
            types.push(elem);
            columns.push(elems);
        }
        let n = columns.iter().map(Vec::len).max().unwrap_or(0);
        if n > MAX_ROWS {
            return Err(too_many("unnest", p));
        }
        let rows = (0..n)
            .map(|i| {
                columns
                    .iter()
                    .map(|c| c.get(i).cloned().unwrap_or(Value::Null))
                    .collect()
            })
            .collect();
        Ok((types, rows))
    }
}

fn literal(e: &PhysExpr) -> Option<Value> {
    match e {
        PhysExpr::Literal { value, .. } if !value.is_null() => Some(value.clone()),
        _ => None,
    }
}

/// `SELECT unnest(...) [AS a]` with nothing else (no FROM, WHERE, GROUP BY):
/// the same query with the function as its FROM item, `SELECT a FROM
/// unnest(...) AS a`, which gives PostgreSQL's rows for that form.
pub(super) fn select_list_srf(s: &ast::Select) -> Option<ast::Select> {
    if !s.from.is_empty()
        || s.selection.is_some()
        || s.having.is_some()
        || !matches!(&s.group_by, ast::GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty())
    {
        return None;
    }
    let [item] = s.projection.as_slice() else {
        return None;
    };
    let (f, alias) = match item {
        ast::SelectItem::UnnamedExpr(ast::Expr::Function(f)) => (f, None),
        ast::SelectItem::ExprWithAlias {
            expr: ast::Expr::Function(f),
            alias,
        } => (f, Some(alias)),
        _ => return None,
    };
    let name = match f.name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => norm(i),
        _ => return None,
    };
    // jsonb_each's two columns are a record in a SELECT list: not this form.
    if !is_from_item_function(&name)
        || name.contains("_each")
        || f.over.is_some()
        || f.filter.is_some()
    {
        return None;
    }
    let column = alias.map_or_else(|| ast::Ident::new(&name), |a| a.clone());
    // A json function's column is named `value` in FROM: the alias names it.
    let sql = if is_json_srf(&name) {
        format!("SELECT {column} FROM {f} AS {column}({column})")
    } else {
        format!("SELECT {column} FROM {f} AS {column}")
    };
    let stmts =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
            .ok()?;
    match stmts.into_iter().next()? {
        ast::Statement::Query(q) => match *q.body {
            ast::SetExpr::Select(sel) => Some(*sel),
            _ => None,
        },
        _ => None,
    }
}

/// The set-returning functions that are FROM items here (and may also stand
/// alone in a SELECT list, rewritten into one).
pub(super) fn is_from_item_function(name: &str) -> bool {
    matches!(name, "generate_series" | "unnest") || is_json_srf(name)
}

/// Whether `name` is one of json's set-returning functions.
pub(super) fn is_json_srf(name: &str) -> bool {
    use kura_exec::expr::registry::{find, Family, Kind};
    find(name).is_some_and(|f| f.family == Family::Json && f.kind == Kind::SetReturning)
}
