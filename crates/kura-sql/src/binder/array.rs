//! Binding of one-dimensional arrays: `ARRAY[...]`, `x op ANY/ALL (array)`,
//! subscripts `a[i]` and the array functions, with PostgreSQL's typing (an
//! untyped literal or parameter takes the array type its context needs).

use kura_common::{DataType, Value};
use kura_exec::expr::{array_elements, BinaryOp, PhysExpr, ScalarFunc};
use sqlparser::ast;

use super::types::{as_array, coerce, common_type, fold, is_null_literal};
use super::vocab::{is_unknown, no_such, param_marker, ExprCtx};
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

const TEXT: DataType = DataType::Varchar(None);

/// Integer `e` plus `shift`: a subscript moved between a catalog vector's
/// numbering (from 0) and the array kernels' (from 1).
pub(super) fn shifted(e: PhysExpr, shift: i32) -> PhysExpr {
    if shift == 0 {
        return e;
    }
    fold(PhysExpr::Binary {
        op: BinaryOp::Add,
        left: Box::new(e),
        right: Box::new(PhysExpr::literal(Value::Integer(shift), DataType::Integer)),
        data_type: DataType::Integer,
    })
}

/// The array type of elements of `t` (refused for an array: one dimension only).
pub(super) fn array_type(t: DataType, p: Pos) -> SqlResult<DataType> {
    t.array_of().ok_or_else(|| {
        // Only the scalar types kura's arrays hold have arrays.
        let what = if t.is_array() {
            "multidimensional arrays".to_string()
        } else {
            format!("arrays of {}", t.to_string().to_lowercase())
        };
        SqlError::unsupported(what, p)
    })
}

fn comparison_op(op: &ast::BinaryOperator, p: Pos) -> SqlResult<BinaryOp> {
    use ast::BinaryOperator as B;
    Ok(match op {
        B::Eq => BinaryOp::Eq,
        B::NotEq => BinaryOp::NotEq,
        B::Lt => BinaryOp::Lt,
        B::LtEq => BinaryOp::LtEq,
        B::Gt => BinaryOp::Gt,
        B::GtEq => BinaryOp::GtEq,
        other => return Err(SqlError::unsupported(format!("{other} with ANY/ALL"), p)),
    })
}

impl Binder<'_> {
    /// A `$n` being described takes type `t`: a NULL of it stands in.
    pub(super) fn type_param(&mut self, e: PhysExpr, t: DataType) -> PhysExpr {
        match param_marker(&e) {
            Some(n) => {
                if let Some(slot) = self.params.types.get_mut(n - 1) {
                    slot.get_or_insert(t);
                }
                PhysExpr::literal(Value::Null, t)
            }
            None => e,
        }
    }

    /// `ARRAY[e1, e2, ...]`: the elements' common type, untyped literals taking it.
    pub(super) fn bind_array_constructor(
        &mut self,
        elems: &[ast::Expr],
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let items = elems
            .iter()
            .map(|e| self.bind_expr(e, cx))
            .collect::<SqlResult<Vec<_>>>()?;
        if items.is_empty() {
            return Err(SqlError::Indeterminate {
                message: "cannot determine type of empty array".into(),
                pos: p,
            });
        }
        if items.iter().any(|i| i.data_type().is_array()) {
            return Err(SqlError::unsupported("multidimensional arrays", p));
        }
        let typed: Vec<&PhysExpr> = items
            .iter()
            .filter(|i| !is_unknown(i) && param_marker(i).is_none())
            .collect();
        let mut ty: Option<DataType> = None;
        for i in typed {
            ty = Some(match ty {
                None => i.data_type(),
                Some(t) => common_type(t, i.data_type()).ok_or_else(|| {
                    SqlError::mismatch(
                        format!("ARRAY types {t} and {} cannot be matched", i.data_type()),
                        p,
                    )
                })?,
            });
        }
        let ty = ty.unwrap_or(TEXT);
        let args = items
            .into_iter()
            .map(|i| {
                let i = self.type_param(i, ty);
                coerce(i, ty, p)
            })
            .collect::<SqlResult<Vec<_>>>()?;
        Ok(fold(PhysExpr::Func {
            func: ScalarFunc::MakeArray,
            args,
            data_type: array_type(ty, p)?,
        }))
    }

    /// `l op ANY (r)` / `l op ALL (r)` for an array `r`. A constant array under
    /// `= ANY` / `<> ALL` becomes an IN list (same NULL rules, and the IN
    /// list's fast paths and index use).
    pub(super) fn bind_any_all(
        &mut self,
        l: PhysExpr,
        op: &ast::BinaryOperator,
        r: PhysExpr,
        all: bool,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let op = comparison_op(op, p)?;
        // Untyped sides take their type from the other, as in PostgreSQL:
        // `x = ANY('{1,2}')`, `x = ANY($1)`, `$1 = ANY(array)`.
        let l_open = is_unknown(&l) || param_marker(&l).is_some();
        let r = if is_unknown(&r) || param_marker(&r).is_some() {
            let elem = if l_open { TEXT } else { l.data_type() };
            let t = array_type(elem, p)?;
            let r = self.type_param(r, t);
            coerce(r, t, p)?
        } else {
            r
        };
        let Some(elem) = r.data_type().element() else {
            return Err(SqlError::WrongObjectType {
                message: format!(
                    "op ANY/ALL (array) requires array on right side, not {}",
                    r.data_type()
                ),
                pos: p,
            });
        };
        let l = if l_open {
            let l = self.type_param(l, elem);
            coerce(l, elem, p)?
        } else {
            l
        };
        let lt = l.data_type();
        let Some(common) = common_type(lt, elem) else {
            return Err(SqlError::UnknownFunction {
                name: format!("operator {lt} {} {elem}[]", op.symbol()),
                pos: p,
                suggestion: None,
            });
        };
        let l = coerce(l, common, p)?;
        let r = fold(coerce(r, array_type(common, p)?, p)?);
        if let PhysExpr::Literal { value, .. } = &r {
            let elems = match value {
                Value::Text(t) => array_elements(t, common).map_err(|e| SqlError::InvalidText {
                    message: e.to_string(),
                    pos: p,
                })?,
                _ => return Ok(PhysExpr::literal(Value::Null, DataType::Boolean)),
            };
            if elems.is_empty() {
                return Ok(PhysExpr::literal(Value::Boolean(all), DataType::Boolean));
            }
            let as_in_list = match (op, all) {
                (BinaryOp::Eq, false) => Some(false),
                (BinaryOp::NotEq, true) => Some(true),
                _ => None,
            };
            if let Some(negated) = as_in_list {
                return Ok(fold(PhysExpr::InList {
                    expr: Box::new(l),
                    list: elems,
                    negated,
                }));
            }
        }
        let func = if all {
            ScalarFunc::ArrayAll(op)
        } else {
            ScalarFunc::ArrayAny(op)
        };
        Ok(fold(PhysExpr::Func {
            func,
            args: vec![l, r],
            data_type: DataType::Boolean,
        }))
    }

    /// `x op ANY/SOME/ALL (array or subquery)`: `= ANY (subquery)` is IN and
    /// `<> ALL (subquery)` NOT IN; over an array see [`Self::bind_any_all`].
    pub(super) fn bind_quantified(
        &mut self,
        e: &ast::Expr,
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        use ast::Expr as E;
        match e {
            // `= ANY (subquery)` is IN, `<> ALL (subquery)` NOT IN.
            E::AnyOp {
                left,
                compare_op: ast::BinaryOperator::Eq,
                right,
                ..
            } if matches!(right.as_ref(), E::Subquery(_)) => {
                let E::Subquery(q) = right.as_ref() else {
                    unreachable!()
                };
                let x = self.bind_expr(left, cx)?;
                self.mark_subquery(q, Some(x), cx, p)
            }
            E::AllOp {
                left,
                compare_op: ast::BinaryOperator::NotEq,
                right,
            } if matches!(right.as_ref(), E::Subquery(_)) => {
                let E::Subquery(q) = right.as_ref() else {
                    unreachable!()
                };
                let x = self.bind_expr(left, cx)?;
                let m = self.mark_subquery(q, Some(x), cx, p)?;
                Ok(PhysExpr::Not(Box::new(m)))
            }
            E::AnyOp { right, .. } | E::AllOp { right, .. }
                if matches!(right.as_ref(), E::Subquery(_)) =>
            {
                Err(SqlError::unsupported(
                    "ANY/ALL over a subquery with an operator other than = ANY / <> ALL",
                    p,
                ))
            }
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => {
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                self.bind_any_all(l, compare_op, r, false, p)
            }
            E::AllOp {
                left,
                compare_op,
                right,
            } => {
                let l = self.bind_expr(left, cx)?;
                let r = self.bind_expr(right, cx)?;
                self.bind_any_all(l, compare_op, r, true, p)
            }
            _ => Err(SqlError::Internal("not a quantified comparison".into())),
        }
    }

    /// `a[i]`: one subscript of a one-dimensional array.
    pub(super) fn bind_subscript(
        &mut self,
        root: &ast::Expr,
        chain: &[ast::AccessExpr],
        cx: &mut ExprCtx,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        // `t.col[i]` parses as `t` followed by `.col` and `[i]`: the leading
        // field names qualify a column.
        let fields = chain
            .iter()
            .take_while(|a| matches!(a, ast::AccessExpr::Dot(ast::Expr::Identifier(_))))
            .count();
        let (a, chain) = match (root, fields) {
            (ast::Expr::Identifier(first), 1..) => {
                let mut parts = vec![first.clone()];
                for a in &chain[..fields] {
                    if let ast::AccessExpr::Dot(ast::Expr::Identifier(id)) = a {
                        parts.push(id.clone());
                    }
                }
                let column = ast::Expr::CompoundIdentifier(parts);
                (self.bind_expr(&column, cx)?, &chain[fields..])
            }
            _ => (self.bind_expr(root, cx)?, chain),
        };
        let index = match chain {
            [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] => index,
            [ast::AccessExpr::Subscript(ast::Subscript::Slice { .. })] => {
                return Err(SqlError::unsupported("array slices", p))
            }
            [ast::AccessExpr::Subscript(_), ..] => {
                return Err(SqlError::unsupported("multidimensional arrays", p))
            }
            [ast::AccessExpr::Dot(ast::Expr::Identifier(field))] => {
                return self.record_field(a, &super::norm(field), p)
            }
            _ => return Err(SqlError::unsupported("field access", p)),
        };
        let Some(elem) = a.data_type().element() else {
            return Err(SqlError::mismatch(
                format!(
                    "cannot subscript type {} because it does not support subscripting",
                    a.data_type()
                ),
                p,
            ));
        };
        let i = self.bind_expr(index, cx)?;
        let i = self.type_param(i, DataType::Integer);
        let i = coerce(i, DataType::Integer, p)?;
        // The kernel numbers elements from 1; a catalog vector's subscripts
        // start at 0.
        let i = shifted(i, 1 - a.data_type().lower_bound());
        Ok(fold(PhysExpr::Func {
            func: ScalarFunc::ArraySubscript,
            args: vec![as_array(a, p)?, i],
            data_type: elem,
        }))
    }

    /// One of [`SCALARS`] over bound arguments.
    pub(super) fn bind_array_scalar(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let no_such = |args: &[PhysExpr]| no_such(name, args, p);
        // An untyped literal where an array goes is read as one (of text, or
        // of the other argument's element type).
        let array_arg =
            |b: &mut Self, a: PhysExpr, elem: Option<DataType>| -> SqlResult<PhysExpr> {
                if a.data_type().is_array() {
                    return as_array(a, p);
                }
                if is_unknown(&a) || param_marker(&a).is_some() {
                    let t = array_type(elem.unwrap_or(TEXT), p)?;
                    let a = b.type_param(a, t);
                    return coerce(a, t, p);
                }
                Err(no_such(std::slice::from_ref(&a)))
            };
        let call = |func, args, data_type| {
            Ok(fold(PhysExpr::Func {
                func,
                args,
                data_type,
            }))
        };
        let int = |b: &mut Self, a: PhysExpr| {
            let a = b.type_param(a, DataType::Integer);
            coerce(a, DataType::Integer, p)
        };
        let text = |b: &mut Self, a: PhysExpr| {
            let a = b.type_param(a, TEXT);
            if a.data_type().is_text() || is_null_literal(&a) {
                coerce(a, TEXT, p)
            } else {
                Err(SqlError::mismatch(
                    format!("{name} needs text, not {}", a.data_type()),
                    p,
                ))
            }
        };
        if let (true, Some(v)) = (
            matches!(name, "array_append" | "array_prepend" | "array_cat"),
            args.iter()
                .find(|a| matches!(a.data_type(), DataType::Vector(_))),
        ) {
            // PostgreSQL's result would keep the vector's subscripts (from 0),
            // which kura's arrays (from 1) cannot hold.
            return Err(SqlError::unsupported(
                format!(
                    "{name} of an {} (its subscripts start at 0, kura's arrays' at 1)",
                    v.data_type().to_string().to_lowercase()
                ),
                p,
            ));
        }
        let mut args = args.into_iter();
        let (a0, a1, a2) = (args.next(), args.next(), args.next());
        if args.next().is_some() {
            return Err(SqlError::mismatch(
                format!("too many arguments to {name}"),
                p,
            ));
        }
        match (name, a0, a1, a2) {
            ("cardinality", Some(a), None, None) => {
                let a = array_arg(self, a, None)?;
                call(ScalarFunc::Cardinality, vec![a], DataType::Integer)
            }
            ("array_length" | "array_upper" | "array_lower", Some(a), Some(d), None) => {
                let shift = a.data_type().lower_bound() - 1;
                let a = array_arg(self, a, None)?;
                let d = int(self, d)?;
                let func = match name {
                    "array_length" => ScalarFunc::ArrayLength,
                    "array_upper" => ScalarFunc::ArrayUpper,
                    _ => ScalarFunc::ArrayLower,
                };
                let bound = call(func, vec![a, d], DataType::Integer)?;
                if name == "array_length" {
                    return Ok(bound);
                }
                Ok(shifted(bound, shift))
            }
            ("array_to_string", Some(a), Some(sep), null) => {
                let a = array_arg(self, a, None)?;
                let mut v = vec![a, text(self, sep)?];
                if let Some(n) = null {
                    v.push(text(self, n)?);
                }
                call(ScalarFunc::ArrayToString, v, TEXT)
            }
            ("string_to_array", Some(s), Some(sep), null) => {
                let mut v = vec![text(self, s)?, text(self, sep)?];
                if let Some(n) = null {
                    v.push(text(self, n)?);
                }
                call(ScalarFunc::StringToArray, v, array_type(TEXT, p)?)
            }
            ("array_append" | "array_position", Some(a), Some(x), None) => {
                let shift = a.data_type().lower_bound() - 1;
                let elem = (!is_unknown(&x)).then(|| x.data_type());
                let a = array_arg(self, a, elem)?;
                let (a, x) = self.array_and_element(a, x, p)?;
                if name == "array_append" {
                    let t = a.data_type();
                    call(ScalarFunc::ArrayAppend, vec![a, x], t)
                } else {
                    let at = call(ScalarFunc::ArrayPosition, vec![a, x], DataType::Integer)?;
                    Ok(shifted(at, shift))
                }
            }
            ("array_prepend", Some(x), Some(a), None) => {
                let elem = (!is_unknown(&x)).then(|| x.data_type());
                let a = array_arg(self, a, elem)?;
                let (a, x) = self.array_and_element(a, x, p)?;
                let t = a.data_type();
                call(ScalarFunc::ArrayPrepend, vec![x, a], t)
            }
            ("array_cat", Some(a), Some(b), None) => {
                let (ea, eb) = (a.data_type().element(), b.data_type().element());
                let a = array_arg(self, a, eb)?;
                let b = array_arg(self, b, ea.or(a.data_type().element()))?;
                let (Some(x), Some(y)) = (a.data_type().element(), b.data_type().element()) else {
                    return Err(no_such(&[a, b]));
                };
                let Some(c) = common_type(x, y) else {
                    return Err(no_such(&[a, b]));
                };
                let t = array_type(c, p)?;
                call(
                    ScalarFunc::ArrayCat,
                    vec![coerce(a, t, p)?, coerce(b, t, p)?],
                    t,
                )
            }
            (_, a0, a1, a2) => {
                let all: Vec<PhysExpr> = [a0, a1, a2].into_iter().flatten().collect();
                Err(no_such(&all))
            }
        }
    }

    /// `a || b` with an array on either side: PostgreSQL's array_cat, or
    /// array_append / array_prepend for an element; an untyped literal beside
    /// an array is read as an array, as PostgreSQL resolves `unknown`.
    pub(super) fn array_concat(&mut self, a: PhysExpr, b: PhysExpr, p: Pos) -> SqlResult<PhysExpr> {
        let name = match (a.data_type().is_array(), b.data_type().is_array()) {
            (true, true) => "array_cat",
            (true, false) if is_unknown(&b) => "array_cat",
            (false, true) if is_unknown(&a) => "array_cat",
            (true, false) => "array_append",
            _ => "array_prepend",
        };
        self.bind_array_scalar(name, vec![a, b], p)
    }

    /// An array and an element of it, unified to one element type.
    fn array_and_element(
        &mut self,
        a: PhysExpr,
        x: PhysExpr,
        p: Pos,
    ) -> SqlResult<(PhysExpr, PhysExpr)> {
        let elem = a
            .data_type()
            .element()
            .ok_or_else(|| SqlError::Internal("array argument".into()))?;
        if is_unknown(&x) || param_marker(&x).is_some() {
            let x = self.type_param(x, elem);
            return Ok((a, coerce(x, elem, p)?));
        }
        let c = common_type(elem, x.data_type()).ok_or_else(|| SqlError::UnknownFunction {
            name: format!(
                "array function over {} and {}",
                a.data_type(),
                x.data_type()
            ),
            pos: p,
            suggestion: None,
        })?;
        Ok((coerce(a, array_type(c, p)?, p)?, coerce(x, c, p)?))
    }
}
