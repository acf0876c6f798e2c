//! Binding of the json and jsonb operators and functions
//! (`kura_exec::expr::json`), jsonb equality by value, and the refusals of
//! what json and jsonb cannot do here: json has no equality or order at all
//! (PostgreSQL's 42883), and kura groups, sorts and keys jsonb by its text,
//! which would split equal values (`1.0`, `1`), so those are refused (0A000).

use kura_common::{DataType, ElemType, Value};
use kura_exec::expr::json::JsonFunc;
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};
use kura_exec::{AggCall, AggFunc};
use sqlparser::ast;

use super::types::{coerce, fold, is_null_literal, is_untyped_literal};
use super::vocab::no_such;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::ColId;

const TEXT: DataType = DataType::Varchar(None);
const TEXT_ARRAY: DataType = DataType::Array(ElemType::Varchar(None));

fn is_json(t: DataType) -> bool {
    matches!(t, DataType::Json | DataType::Jsonb)
}

/// PostgreSQL's error for an operator with no match (42883).
fn no_operator(l: DataType, op: &str, r: DataType, p: Pos) -> SqlError {
    let name = |t: DataType| t.to_string().to_lowercase();
    SqlError::UndefinedOperator {
        message: format!("operator does not exist: {} {op} {}", name(l), name(r)),
        pos: p,
    }
}

/// Refuses `what` (a grouping, ordering or keying use) over a value of type
/// `t` when it is json (no equality: 42883) or jsonb (kura would compare its
/// text: 0A000).
pub(super) fn refuse_json_key(t: DataType, what: &str, ordering: bool) -> SqlResult<()> {
    match t {
        DataType::Json => Err(SqlError::UndefinedOperator {
            message: format!(
                "could not identify an {} operator for type json",
                if ordering { "ordering" } else { "equality" }
            ),
            pos: Pos::default(),
        }),
        DataType::Jsonb => Err(SqlError::unsupported(
            format!("{what} on a jsonb value (kura compares jsonb by value only with = and <>)"),
            Pos::default(),
        )),
        _ => Ok(()),
    }
}

/// A call of `f`, folded when constant; a strict function of a NULL literal
/// is NULL.
pub(super) fn json_call(f: JsonFunc, args: Vec<PhysExpr>, data_type: DataType) -> PhysExpr {
    let builds = matches!(
        f,
        JsonFunc::BuildObject | JsonFunc::BuildArray | JsonFunc::ToJson
    );
    if !builds && args.iter().any(is_null_literal) {
        return PhysExpr::literal(Value::Null, data_type);
    }
    fold(PhysExpr::Func {
        func: ScalarFunc::Json(f),
        args,
        data_type,
    })
}

/// `e` as a value of json type `t`: an untyped literal reads as one, a value
/// of `t` is taken; anything else is no match.
fn json_arg(e: &PhysExpr, t: DataType, p: Pos) -> SqlResult<Option<PhysExpr>> {
    if is_untyped_literal(e) {
        return coerce(e.clone(), t, p).map(Some);
    }
    Ok((e.data_type() == t).then(|| e.clone()))
}

/// The text jsonb `=` compares of `e`.
pub(super) fn equality_key(e: PhysExpr) -> PhysExpr {
    json_call(JsonFunc::EqualityKey, vec![e], TEXT)
}

/// A comparison `a op b` once its operands have their types: jsonb `=`,
/// `<>` and IS [NOT] DISTINCT FROM by value; json's none (42883); jsonb's
/// order refused. `None` when neither side is json.
pub(super) fn json_comparison(
    op: BinaryOp,
    a: &PhysExpr,
    b: &PhysExpr,
    p: Pos,
) -> SqlResult<Option<PhysExpr>> {
    let (ta, tb) = (a.data_type(), b.data_type());
    if !is_json(ta) && !is_json(tb) {
        return Ok(None);
    }
    if ta == DataType::Json || tb == DataType::Json || ta != tb {
        return Err(no_operator(ta, op.symbol(), tb, p));
    }
    match op {
        BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::NotDistinct => Ok(Some(PhysExpr::Binary {
            op,
            left: Box::new(equality_key(a.clone())),
            right: Box::new(equality_key(b.clone())),
            data_type: DataType::Boolean,
        })),
        other => Err(SqlError::unsupported(
            format!(
                "operator {} between jsonb values (kura compares jsonb for equality only)",
                other.symbol()
            ),
            p,
        )),
    }
}

impl Binder<'_> {
    /// Grouping keys that group jsonb by value: a jsonb key `(e, id)` groups
    /// on `e`'s equality key instead, and `id` becomes the least text of `e`
    /// in the group (`min`, bytewise) — one of the group's own values, as
    /// PostgreSQL gives one of them. json keys are refused (42883).
    pub(super) fn group_jsonb_by_value(
        &mut self,
        group: Vec<(PhysExpr, ColId)>,
        aggs: &mut Vec<(AggCall, ColId)>,
        what: &str,
    ) -> SqlResult<Vec<(PhysExpr, ColId)>> {
        let mut out = Vec::with_capacity(group.len());
        for (e, id) in group {
            match e.data_type() {
                DataType::Jsonb => {
                    let key = equality_key(e.clone());
                    let kid = self.cols.add("?jsonb_key?", key.data_type());
                    out.push((key, kid));
                    aggs.push((AggCall::simple(AggFunc::Min, Some(e), DataType::Jsonb), id));
                }
                t => {
                    refuse_json_key(t, what, false)?;
                    out.push((e, id));
                }
            }
        }
        Ok(out)
    }

    /// A json operator `a op b` (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`,
    /// `?|`, `?&`, and `||`/`-` of jsonb); `None` when `op` is none of them
    /// or (`||`, `-`) neither side is jsonb.
    pub(super) fn bind_json_op(
        &mut self,
        op: &ast::BinaryOperator,
        a: &PhysExpr,
        b: &PhysExpr,
        p: Pos,
    ) -> SqlResult<Option<PhysExpr>> {
        use ast::BinaryOperator as B;
        let (ta, tb) = (a.data_type(), b.data_type());
        let symbol = op.to_string();
        let none = || no_operator(ta, &symbol, tb, p);
        let jsonb = |e: &PhysExpr| json_arg(e, DataType::Jsonb, p);
        // A `$n` being described takes the type the operator takes there.
        let param_type = match op {
            B::AtArrow | B::ArrowAt | B::StringConcat => DataType::Jsonb,
            B::HashArrow | B::HashLongArrow | B::QuestionPipe | B::QuestionAnd => TEXT_ARRAY,
            _ => TEXT,
        };
        let a = &if matches!(op, B::AtArrow | B::ArrowAt) || tb == DataType::Jsonb {
            self.type_param(a.clone(), DataType::Jsonb)
        } else {
            a.clone()
        };
        let ta = a.data_type();
        let b = if is_json(ta) {
            self.type_param(b.clone(), param_type)
        } else {
            b.clone()
        };
        let typed = |e: PhysExpr, t: DataType| -> SqlResult<PhysExpr> {
            if is_untyped_literal(&e)
                || e.data_type() == t
                || (t == TEXT && e.data_type().is_text())
            {
                coerce(e, t, p)
            } else {
                Err(none())
            }
        };
        Ok(Some(match op {
            B::Arrow | B::LongArrow => {
                if !is_json(ta) {
                    return Err(none());
                }
                let step = if b.data_type().is_integer() {
                    coerce(b, DataType::Integer, p)?
                } else {
                    typed(b, TEXT)?
                };
                let (f, out) = if matches!(op, B::Arrow) {
                    (JsonFunc::Get, ta)
                } else {
                    (JsonFunc::GetText, TEXT)
                };
                json_call(f, vec![a.clone(), step], out)
            }
            B::HashArrow | B::HashLongArrow => {
                if !is_json(ta) {
                    return Err(none());
                }
                let (f, out) = if matches!(op, B::HashArrow) {
                    (JsonFunc::GetPath, ta)
                } else {
                    (JsonFunc::GetPathText, TEXT)
                };
                json_call(f, vec![a.clone(), typed(b, TEXT_ARRAY)?], out)
            }
            B::AtArrow | B::ArrowAt => {
                let (Some(x), Some(y)) = (jsonb(a)?, jsonb(&b)?) else {
                    return Err(none());
                };
                let args = if matches!(op, B::AtArrow) {
                    vec![x, y]
                } else {
                    vec![y, x]
                };
                json_call(JsonFunc::Contains, args, DataType::Boolean)
            }
            B::Question | B::QuestionPipe | B::QuestionAnd => {
                if ta != DataType::Jsonb {
                    return Err(none());
                }
                let (f, t) = match op {
                    B::Question => (JsonFunc::HasKey, TEXT),
                    B::QuestionPipe => (JsonFunc::HasAny, TEXT_ARRAY),
                    _ => (JsonFunc::HasAll, TEXT_ARRAY),
                };
                json_call(f, vec![a.clone(), typed(b, t)?], DataType::Boolean)
            }
            // jsonb || jsonb (an untyped literal reads as jsonb); jsonb ||
            // text stays text concatenation, as in PostgreSQL.
            B::StringConcat if (ta == DataType::Jsonb || tb == DataType::Jsonb) => {
                let (Some(x), Some(y)) = (jsonb(a)?, jsonb(&b)?) else {
                    return Ok(None);
                };
                json_call(JsonFunc::Concat, vec![x, y], DataType::Jsonb)
            }
            B::Minus if ta == DataType::Jsonb => {
                let what = if b.data_type().is_integer() {
                    coerce(b, DataType::Integer, p)?
                } else if b.data_type() == TEXT_ARRAY {
                    b
                } else {
                    typed(b, TEXT)?
                };
                json_call(JsonFunc::Delete, vec![a.clone(), what], DataType::Jsonb)
            }
            B::Minus if tb == DataType::Jsonb => return Err(none()),
            B::HashMinus if ta == DataType::Jsonb => {
                return Err(SqlError::unsupported("operator #- (delete at a path)", p))
            }
            _ => return Ok(None),
        }))
    }

    /// `name(args)` for one of the json functions (`registry::Family::Json`).
    pub(super) fn bind_json_fn(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let binary = name.starts_with("jsonb") || name == "to_jsonb";
        let own = if binary {
            DataType::Jsonb
        } else {
            DataType::Json
        };
        let args: Vec<PhysExpr> = args.into_iter().map(|a| self.type_param(a, TEXT)).collect();
        let one = |f: JsonFunc, out: DataType| -> SqlResult<PhysExpr> {
            match args.as_slice() {
                [a] => match json_arg(a, own, p)? {
                    Some(a) => Ok(json_call(f, vec![a], out)),
                    None => Err(no_such(name, &args, p)),
                },
                _ => Err(no_such(name, &args, p)),
            }
        };
        // Untyped literals among "any" arguments are text, as PostgreSQL
        // takes them there.
        let any = |args: &[PhysExpr]| -> SqlResult<Vec<PhysExpr>> {
            args.iter()
                .map(|a| {
                    if is_untyped_literal(a) && !is_null_literal(a) {
                        coerce(a.clone(), TEXT, p)
                    } else {
                        Ok(a.clone())
                    }
                })
                .collect()
        };
        match name
            .trim_start_matches("jsonb_")
            .trim_start_matches("json_")
        {
            "typeof" => one(JsonFunc::TypeOf, TEXT),
            "array_length" => one(JsonFunc::ArrayLength, DataType::Integer),
            "pretty" => one(JsonFunc::Pretty, TEXT),
            "strip_nulls" => one(JsonFunc::StripNulls, own),
            "build_object" => {
                if args.len() % 2 == 1 {
                    return Err(SqlError::InvalidValue {
                        message: "argument list must have even number of elements".into(),
                        pos: p,
                    });
                }
                Ok(json_call(JsonFunc::BuildObject, any(&args)?, own))
            }
            "build_array" => Ok(json_call(JsonFunc::BuildArray, any(&args)?, own)),
            _ => match args.as_slice() {
                [_] => Ok(json_call(JsonFunc::ToJson, any(&args)?, own)),
                _ => Err(no_such(name, &args, p)),
            },
        }
    }
}

/// The column names and types of a json set-returning function's rows.
pub(super) fn srf_columns(name: &str) -> (Vec<&'static str>, Vec<DataType>) {
    let own = if name.starts_with("jsonb") {
        DataType::Jsonb
    } else {
        DataType::Json
    };
    let value = if name.ends_with("_text") { TEXT } else { own };
    if name.contains("_each") {
        (vec!["key", "value"], vec![TEXT, value])
    } else if name.contains("object_keys") {
        (vec!["keys"], vec![TEXT])
    } else {
        (vec!["value"], vec![value])
    }
}

/// The rows of json set-returning function `name` of the constant `v`.
pub(super) fn srf_rows(name: &str, v: &PhysExpr, p: Pos) -> SqlResult<Vec<Vec<Value>>> {
    let PhysExpr::Literal { value, data_type } = v else {
        return Err(SqlError::Internal(format!("{name} of a non-constant")));
    };
    let Value::Text(s) = value else {
        return Ok(Vec::new());
    };
    let kind = if name.contains("_each") {
        "each"
    } else if name.contains("object_keys") {
        "keys"
    } else {
        "elements"
    };
    kura_exec::expr::json::expand(s, *data_type, kind, name.ends_with("_text")).map_err(|e| {
        SqlError::InvalidValue {
            message: e.to_string(),
            pos: p,
        }
    })
}
