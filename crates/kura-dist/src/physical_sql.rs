//! DataFusion physical expressions written back as kura SQL, for the expressions a shard
//! evaluates under a partial aggregation it runs itself (paper 003 §2, a shard's fragment).
//!
//! As in [`crate::filter`], only forms whose value is the same in both engines are translated:
//! columns, literals, `+ - *` (no division: the engines round decimal quotients differently),
//! comparisons, AND/OR/NOT, IS [NOT] NULL, LIKE, IN lists, CASE, lossless widening casts,
//! and a few scalar functions (the year of a date, a substring).
//! Anything else keeps the aggregation in DataFusion.

use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr,
    Literal, NegativeExpr, NotExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};

use crate::filter::{scalar_sql, widens_losslessly};

/// `expr` as kura SQL, where input column `i` is the kura SQL `inputs[i]` and has `schema`'s
/// type; `None` when kura cannot be trusted to compute exactly DataFusion's value.
pub fn to_kura_sql(
    expr: &Arc<dyn PhysicalExpr>,
    inputs: &[String],
    schema: &Schema,
) -> Option<String> {
    let rec = |e: &Arc<dyn PhysicalExpr>| to_kura_sql(e, inputs, schema);
    if let Some(c) = expr.downcast_ref::<Column>() {
        return inputs.get(c.index()).cloned();
    }
    if let Some(l) = expr.downcast_ref::<Literal>() {
        return scalar_sql(l.value());
    }
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        let op = match b.op() {
            Operator::Plus => "+",
            Operator::Minus => "-",
            Operator::Multiply => "*",
            Operator::Eq => "=",
            Operator::NotEq => "<>",
            Operator::Lt => "<",
            Operator::LtEq => "<=",
            Operator::Gt => ">",
            Operator::GtEq => ">=",
            Operator::And => "AND",
            Operator::Or => "OR",
            _ => return None,
        };
        if matches!(op, "+" | "-" | "*") && !exact_arithmetic(b, schema) {
            return None;
        }
        return Some(format!("({} {op} {})", rec(b.left())?, rec(b.right())?));
    }
    if let Some(n) = expr.downcast_ref::<NotExpr>() {
        return Some(format!("(NOT {})", rec(n.arg())?));
    }
    if let Some(n) = expr.downcast_ref::<NegativeExpr>() {
        return Some(format!("(- {})", rec(n.arg())?));
    }
    if let Some(n) = expr.downcast_ref::<IsNullExpr>() {
        return Some(format!("({} IS NULL)", rec(n.arg())?));
    }
    if let Some(n) = expr.downcast_ref::<IsNotNullExpr>() {
        return Some(format!("({} IS NOT NULL)", rec(n.arg())?));
    }
    if let Some(l) = expr.downcast_ref::<LikeExpr>() {
        if l.case_insensitive() {
            return None;
        }
        let pattern = l.pattern().downcast_ref::<Literal>()?;
        return Some(format!(
            "({} {}LIKE {})",
            rec(l.expr())?,
            if l.negated() { "NOT " } else { "" },
            scalar_sql(pattern.value())?
        ));
    }
    if let Some(l) = expr.downcast_ref::<InListExpr>() {
        if l.list().is_empty() {
            return None;
        }
        let items = l
            .list()
            .iter()
            .map(|e| scalar_sql(e.downcast_ref::<Literal>()?.value()))
            .collect::<Option<Vec<_>>>()?;
        return Some(format!(
            "({} {}IN ({}))",
            rec(l.expr())?,
            if l.negated() { "NOT " } else { "" },
            items.join(", ")
        ));
    }
    if let Some(c) = expr.downcast_ref::<CaseExpr>() {
        let mut sql = String::from("(CASE");
        if let Some(base) = c.expr() {
            sql.push(' ');
            sql.push_str(&rec(base)?);
        }
        for (when, then) in c.when_then_expr() {
            sql.push_str(&format!(" WHEN {} THEN {}", rec(when)?, rec(then)?));
        }
        if let Some(e) = c.else_expr() {
            sql.push_str(&format!(" ELSE {}", rec(e)?));
        }
        sql.push_str(" END)");
        return Some(sql);
    }
    if let Some(f) = expr.downcast_ref::<ScalarFunctionExpr>() {
        return function_sql(f, inputs, schema);
    }
    if let Some(c) = expr.downcast_ref::<CastExpr>() {
        let from = c.expr().data_type(schema).ok()?;
        if !widens_losslessly(&from, c.cast_type()) {
            return None;
        }
        return rec(c.expr());
    }
    None
}

/// The scalar functions both engines compute alike: `date_part` of a date's year, month or
/// day (TPC-H Q7-Q9's `extract(year from ...)`), and `substr` from a literal position of a
/// literal length (Q22's country codes), both counting characters.
fn function_sql(f: &ScalarFunctionExpr, inputs: &[String], schema: &Schema) -> Option<String> {
    let rec = |e: &Arc<dyn PhysicalExpr>| to_kura_sql(e, inputs, schema);
    let literal =
        |e: &Arc<dyn PhysicalExpr>| e.downcast_ref::<Literal>().map(|l| l.value().clone());
    match (f.name(), f.args()) {
        ("date_part", [part, value]) => {
            let Some(ScalarValue::Utf8(Some(part))) = literal(part) else {
                return None;
            };
            let part = part.to_ascii_uppercase();
            if !matches!(part.as_str(), "YEAR" | "MONTH" | "DAY")
                || value.data_type(schema).ok()? != ArrowType::Date32
            {
                return None;
            }
            Some(format!("EXTRACT({part} FROM {})", rec(value)?))
        }
        ("substr", [text, start, rest @ ..]) if rest.len() <= 1 => {
            if !matches!(
                text.data_type(schema).ok()?,
                ArrowType::Utf8 | ArrowType::Utf8View
            ) {
                return None;
            }
            let positive = |e: &Arc<dyn PhysicalExpr>| match literal(e)? {
                ScalarValue::Int64(Some(n)) if n >= 1 => Some(n),
                _ => None,
            };
            let mut sql = format!("substr({}, {}", rec(text)?, positive(start)?);
            if let [len] = rest {
                sql.push_str(&format!(", {}", positive(len)?));
            }
            sql.push(')');
            Some(sql)
        }
        _ => None,
    }
}

/// Whether kura's `+ - *` of these operands is DataFusion's value: integers (both engines
/// fail on overflow) or decimals (exact, at the scale both give: the larger operand scale
/// for `+ -`, their sum for `*`). Floating point rounds alike in both.
fn exact_arithmetic(b: &BinaryExpr, schema: &Schema) -> bool {
    let (Ok(l), Ok(r)) = (b.left().data_type(schema), b.right().data_type(schema)) else {
        return false;
    };
    let numeric = |t: &ArrowType| {
        matches!(
            t,
            ArrowType::Int16
                | ArrowType::Int32
                | ArrowType::Int64
                | ArrowType::Float64
                | ArrowType::Decimal128(_, _)
        )
    };
    numeric(&l) && numeric(&r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::{binary, case, col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("p", ArrowType::Decimal128(15, 2), true),
            Field::new("d", ArrowType::Decimal128(15, 2), true),
            Field::new("t", ArrowType::Utf8, true),
        ])
    }

    fn inputs() -> Vec<String> {
        vec![
            "\"l_price\"".into(),
            "\"l_disc\"".into(),
            "\"p_type\"".into(),
        ]
    }

    #[test]
    fn arithmetic_and_case_over_projected_inputs() {
        let s = schema();
        let one = lit(ScalarValue::Decimal128(Some(100), 15, 2));
        let minus = binary(one, Operator::Minus, col("d", &s).unwrap(), &s).unwrap();
        let times = binary(col("p", &s).unwrap(), Operator::Multiply, minus, &s).unwrap();
        assert_eq!(
            to_kura_sql(&times, &inputs(), &s).unwrap(),
            "(\"l_price\" * (1.00 - \"l_disc\"))"
        );
        let like = Arc::new(LikeExpr::new(
            false,
            false,
            col("t", &s).unwrap(),
            lit("PROMO%"),
        )) as Arc<dyn PhysicalExpr>;
        let zero = lit(ScalarValue::Decimal128(Some(0), 15, 2));
        let c = case(None, vec![(like, col("p", &s).unwrap())], Some(zero)).unwrap();
        assert_eq!(
            to_kura_sql(&c, &inputs(), &s).unwrap(),
            "(CASE WHEN (\"p_type\" LIKE 'PROMO%') THEN \"l_price\" ELSE 0.00 END)"
        );
    }

    #[test]
    fn division_stays_in_datafusion() {
        let s = schema();
        let div = binary(
            col("p", &s).unwrap(),
            Operator::Divide,
            col("d", &s).unwrap(),
            &s,
        )
        .unwrap();
        assert!(to_kura_sql(&div, &inputs(), &s).is_none());
    }
}
