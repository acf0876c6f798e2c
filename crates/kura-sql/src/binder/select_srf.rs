//! Set-returning functions as items of a SELECT list with a FROM clause
//! (`SELECT c, unnest(a), generate_subscripts(a, 1) FROM t`), as PostgreSQL
//! 10 and later run them: each input row gives as many rows as its longest
//! result, the functions run in lockstep and a shorter one is NULL after its
//! end; a row whose results are all empty gives none.
//!
//! Planned as each row repeated that many times (`Replicate`) and numbered
//! within its repetitions (`row_number()` over a per-row id); an item then
//! reads its `ord`-th element. `information_schema._pg_expandarray(a)` gives
//! a record of the element `x` and its position `n` (see `record`), or one of
//! them as `(…).x`. Only whole items are set-returning here:
//! `unnest(a) + 1` is refused, and so is a list that aggregates or has a
//! window (PostgreSQL runs the functions after those).

use kura_common::{DataType, Value};
use kura_exec::expr::json::{JsonFunc, SrfKind};
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use kura_exec::WindowFunc;
use sqlparser::ast;

use super::types::{coerce, fold};
use super::vocab::ExprCtx;
use super::{norm, Binder, Scope, ScopeCol};
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::{col, ColId, Logical};

/// The set-returning functions this module plans.
const FUNCTIONS: &[&str] = &[
    "unnest",
    "generate_subscripts",
    "_pg_expandarray",
    "json_array_elements",
    "jsonb_array_elements",
    "json_array_elements_text",
    "jsonb_array_elements_text",
    "json_object_keys",
    "jsonb_object_keys",
];

/// A json set-returning function's kind and the type of its values.
fn json_srf(name: &str) -> Option<(SrfKind, DataType)> {
    let own = if name.starts_with("jsonb") {
        DataType::Jsonb
    } else {
        DataType::Json
    };
    match name
        .trim_start_matches("jsonb_")
        .trim_start_matches("json_")
    {
        "array_elements" => Some((SrfKind::Elements, own)),
        "array_elements_text" => Some((SrfKind::ElementsText, own)),
        "object_keys" => Some((SrfKind::Keys, own)),
        _ => None,
    }
}

/// One set-returning item: its function, the function's name and the field
/// the item reads of the function's record (`(f(a)).n`), if it does.
struct SrfItem<'q> {
    function: &'q ast::Function,
    name: String,
    field: Option<String>,
}

fn srf_item(item: &ast::SelectItem) -> Option<SrfItem<'_>> {
    let e = match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
        _ => return None,
    };
    let (f, field) = match e {
        ast::Expr::Function(f) => (f, None),
        ast::Expr::CompoundFieldAccess { root, access_chain } => {
            let (ast::Expr::Nested(inner), [ast::AccessExpr::Dot(ast::Expr::Identifier(field))]) =
                (root.as_ref(), access_chain.as_slice())
            else {
                return None;
            };
            let ast::Expr::Function(f) = inner.as_ref() else {
                return None;
            };
            (f, Some(norm(field)))
        }
        _ => return None,
    };
    let name = match f.name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => norm(i),
        [ast::ObjectNamePart::Identifier(s), ast::ObjectNamePart::Identifier(i)]
            if matches!(norm(s).as_str(), "pg_catalog" | "information_schema") =>
        {
            norm(i)
        }
        _ => return None,
    };
    (FUNCTIONS.contains(&name.as_str()) && f.over.is_none() && f.filter.is_none()).then_some(
        SrfItem {
            function: f,
            name,
            field,
        },
    )
}

/// The fields of `_pg_expandarray`'s record: the element and its 1-based
/// position.
fn expandarray_fields(elem: DataType) -> Vec<(String, DataType)> {
    vec![("x".into(), elem), ("n".into(), DataType::Integer)]
}

/// Whether `s`'s select list has an item this module plans.
pub(super) fn has_srf_items(s: &ast::Select) -> bool {
    !s.from.is_empty() && s.projection.iter().any(|i| srf_item(i).is_some())
}

impl Binder<'_> {
    /// For a select list with set-returning items over `plan` (its FROM and
    /// WHERE): the plan with each row repeated as the items need, its scope
    /// with one column per item, and the select list with each item reading
    /// its column.
    pub(super) fn bind_srf_items(
        &mut self,
        s: &ast::Select,
        plan: Logical,
        scope: &Scope,
        outer: &[Scope],
    ) -> SqlResult<(Logical, Scope, ast::Select)> {
        let grouped = !matches!(&s.group_by, ast::GroupByExpr::Expressions(g, _) if g.is_empty());
        if grouped || s.having.is_some() {
            return Err(SqlError::unsupported(
                "set-returning functions in a SELECT list with GROUP BY or HAVING",
                Pos::default(),
            ));
        }
        // Each item's array, bound over the FROM clause.
        let mut arrays: Vec<(PhysExpr, ColId, String, Option<String>)> = Vec::new();
        let mut cx = ExprCtx::new(scope, outer);
        for item in &s.projection {
            let Some(SrfItem {
                function: f,
                name,
                field,
            }) = srf_item(item)
            else {
                continue;
            };
            let p = Pos::default();
            let (args, _) = super::functions::call_args(f, &name, p)?;
            let arity_ok = match name.as_str() {
                "unnest" | "_pg_expandarray" => args.len() == 1,
                n if json_srf(n).is_some() => args.len() == 1,
                _ => args.len() == 2,
            };
            if !arity_ok {
                return Err(SqlError::unsupported(
                    format!("{name} with {} arguments in a SELECT list", args.len()),
                    p,
                ));
            }
            let a = self.bind_expr(&args[0], &mut cx)?;
            if let Some((_, own)) = json_srf(&name) {
                let a = if super::types::is_untyped_literal(&a) {
                    coerce(a, own, p)?
                } else {
                    a
                };
                if a.data_type() != own {
                    return Err(SqlError::UnknownFunction {
                        name: format!("{name}({})", a.data_type().to_string().to_lowercase()),
                        pos: p,
                        suggestion: None,
                    });
                }
                let id = self.cols.add("?srf_json?", a.data_type());
                arrays.push((a, id, name, field));
                continue;
            }
            if !a.data_type().is_array() {
                return Err(SqlError::mismatch(
                    format!("function {name}({}) does not exist", a.data_type()),
                    p,
                ));
            }
            if name == "generate_subscripts" {
                // kura's arrays have one dimension: another has no
                // subscripts, so the array counts as NULL (no rows) there. The
                // dimension may be any integer expression (clients bind it).
                let dim = self.bind_expr(&args[1], &mut cx)?;
                let dim = self.type_param(dim, DataType::Integer);
                let dim = coerce(dim, DataType::Integer, p)?;
                let t = a.data_type();
                let a = fold(PhysExpr::Case {
                    whens: vec![(
                        PhysExpr::Binary {
                            op: BinaryOp::Eq,
                            left: Box::new(dim),
                            right: Box::new(PhysExpr::literal(
                                Value::Integer(1),
                                DataType::Integer,
                            )),
                            data_type: DataType::Boolean,
                        },
                        a,
                    )],
                    otherwise: None,
                    data_type: t,
                });
                let id = self.cols.add("?srf_array?", a.data_type());
                arrays.push((a, id, name, field));
            } else {
                let id = self.cols.add("?srf_array?", a.data_type());
                arrays.push((a, id, name, field));
            }
        }
        if !cx.pending.is_empty() {
            return Err(SqlError::unsupported(
                "a subquery in the argument of a set-returning function",
                Pos::default(),
            ));
        }
        let length_of = |array: PhysExpr, name: &str| -> PhysExpr {
            // A json value's rows are counted by the function's kind.
            let func = match json_srf(name) {
                Some((kind, _)) => ScalarFunc::Json(JsonFunc::SrfCount(kind)),
                None => ScalarFunc::Cardinality,
            };
            // NULL (no array) counts as empty.
            PhysExpr::Func {
                func: ScalarFunc::Coalesce,
                args: vec![
                    PhysExpr::Func {
                        func,
                        args: vec![array],
                        data_type: DataType::Integer,
                    },
                    PhysExpr::literal(Value::Integer(0), DataType::Integer),
                ],
                data_type: DataType::Integer,
            }
        };
        // The input's columns, each item's array and the rows each input
        // row gives.
        let count = self.cols.add("?srf_rows?", DataType::BigInt);
        let lengths: Vec<PhysExpr> = arrays
            .iter()
            .map(|(a, _, name, _)| length_of(a.clone(), name))
            .collect();
        let most = match lengths.len() {
            1 => lengths[0].clone(),
            _ => PhysExpr::Func {
                func: ScalarFunc::Greatest,
                args: lengths,
                data_type: DataType::Integer,
            },
        };
        let (mut exprs, scope) = self.carry(scope);
        exprs.extend(arrays.iter().map(|(a, id, ..)| (a.clone(), *id)));
        exprs.push((coerce(most, DataType::BigInt, Pos::default())?, count));
        let row = self.cols.add("?srf_row?", DataType::BigInt);
        let numbered = Logical::Window {
            input: Box::new(Logical::Project {
                input: Box::new(plan),
                exprs,
            }),
            partition: Vec::new(),
            order: Vec::new(),
            funcs: vec![(WindowFunc::RowNumber, row)],
        };
        let ord = self.cols.add("?srf_ord?", DataType::BigInt);
        let repeated = Logical::Window {
            input: Box::new(Logical::Replicate {
                input: Box::new(numbered),
                count,
            }),
            partition: vec![col(row, DataType::BigInt)],
            order: Vec::new(),
            funcs: vec![(WindowFunc::RowNumber, ord)],
        };
        // Each item's value at `ord`, as a new column of the scope.
        let ord = coerce(
            col(ord, DataType::BigInt),
            DataType::Integer,
            Pos::default(),
        )?;
        let (mut exprs, mut scope) = self.carry(&scope);
        let mut names = Vec::new();
        for (k, (a, id, name, field)) in arrays.iter().enumerate() {
            let t = a.data_type();
            let length = |array: PhysExpr| length_of(array, name);
            let elem = t.element().unwrap_or(DataType::Integer);
            // Past its end the element is NULL, as the subscript gives.
            let element = PhysExpr::Func {
                func: ScalarFunc::ArraySubscript,
                args: vec![col(*id, t), ord.clone()],
                data_type: elem,
            };
            // The 1-based position `ord` while it is within the array.
            let within = |value: PhysExpr| PhysExpr::Case {
                whens: vec![(
                    PhysExpr::Binary {
                        op: BinaryOp::LtEq,
                        left: Box::new(ord.clone()),
                        right: Box::new(length(col(*id, t))),
                        data_type: DataType::Boolean,
                    },
                    value,
                )],
                otherwise: None,
                data_type: DataType::Integer,
            };
            if let (Some(f), false) = (field, name == "_pg_expandarray") {
                let ty = if name == "unnest" {
                    elem
                } else {
                    DataType::Integer
                };
                return Err(SqlError::NoSuchField {
                    field: f.clone(),
                    ty: ty.to_string(),
                    pos: Pos::default(),
                });
            }
            let mut record = None;
            let value = match name.as_str() {
                "unnest" => element,
                n if json_srf(n).is_some() => {
                    let (kind, own) = json_srf(n).unwrap_or((SrfKind::Elements, t));
                    let out = if kind == SrfKind::Elements {
                        own
                    } else {
                        DataType::Varchar(None)
                    };
                    PhysExpr::Func {
                        func: ScalarFunc::Json(JsonFunc::SrfItem(kind)),
                        args: vec![col(*id, t), ord.clone()],
                        data_type: out,
                    }
                }
                // A catalog vector's subscripts start at 0.
                "generate_subscripts" => {
                    within(super::array::shifted(ord.clone(), t.lower_bound() - 1))
                }
                // `x` the element, `n` its position counted from 1 (also
                // for a catalog vector).
                _ => {
                    let fields = expandarray_fields(elem);
                    match field.as_deref() {
                        Some("x") => element,
                        Some("n") => within(ord.clone()),
                        Some(other) => {
                            return Err(SqlError::NoSuchField {
                                field: other.to_string(),
                                ty: "record".into(),
                                pos: Pos::default(),
                            })
                        }
                        None => {
                            record = Some(fields);
                            super::record::make_record(
                                vec![element, within(ord.clone())],
                                Pos::default(),
                            )?
                        }
                    }
                }
            };
            let vt = value.data_type();
            let name = format!("\u{1}srf{k}");
            let vid = self.cols.add(&name, vt);
            if let Some(fields) = record {
                self.note_record(vid, fields);
            }
            exprs.push((value, vid));
            scope.cols.push(ScopeCol {
                qualifier: None,
                name: name.clone(),
                id: vid,
                ty: vt,
                qualified_only: false,
            });
            names.push(name);
        }
        let plan = Logical::Project {
            input: Box::new(repeated),
            exprs,
        };
        // The select list, each set-returning item reading its column under
        // the item's name (its alias, or the function's name).
        let mut s = s.clone();
        let mut names = names.into_iter();
        for item in s.projection.iter_mut() {
            let Some(srf) = srf_item(item) else {
                continue;
            };
            // PostgreSQL names `(f(a)).n` after its field.
            let fname = srf.field.unwrap_or(srf.name);
            let alias = match item {
                ast::SelectItem::ExprWithAlias { alias, .. } => alias.clone(),
                _ => ast::Ident::new(fname),
            };
            let column = names.next().unwrap_or_default();
            *item = ast::SelectItem::ExprWithAlias {
                expr: ast::Expr::Identifier(ast::Ident::with_quote('"', column)),
                alias,
            };
        }
        Ok((plan, scope, s))
    }

    /// `scope`'s columns carried through a projection under fresh ids, and
    /// the scope that names them.
    pub(crate) fn carry(&mut self, scope: &Scope) -> (Vec<(PhysExpr, ColId)>, Scope) {
        let mut out = scope.clone();
        let exprs = out
            .cols
            .iter_mut()
            .map(|c| {
                let id = self.cols.add(&c.name, c.ty);
                let e = (col(c.id, c.ty), id);
                self.same_record(&e.0, id);
                c.id = id;
                e
            })
            .collect();
        (exprs, out)
    }
}
