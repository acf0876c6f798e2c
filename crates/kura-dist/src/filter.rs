//! DataFusion filter expressions written back as kura SQL predicates, for the filters a
//! shard evaluates itself (pushed down as Exact; paper 003 §2, a shard's fragment).
//!
//! Only forms whose meaning is the same in both engines are translated: comparisons,
//! AND/OR/NOT, IS [NOT] NULL, BETWEEN, IN lists, LIKE without ESCAPE, over columns (or
//! lossless widening casts of them) and literals of integer, decimal, double, text, date
//! and boolean type. Anything else stays in DataFusion.

use arrow_schema::{DataType as ArrowType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};

/// `expr` as a kura SQL predicate over `schema`'s columns, or `None` when kura cannot be
/// trusted to give exactly DataFusion's answer for it.
pub fn to_kura_sql(expr: &Expr, schema: &Schema) -> Option<String> {
    Some(match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let op = match op {
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
            let (l, r) = (to_kura_sql(left, schema)?, to_kura_sql(right, schema)?);
            format!("({l} {op} {r})")
        }
        Expr::Not(e) => format!("(NOT {})", to_kura_sql(e, schema)?),
        Expr::IsNull(e) => format!("({} IS NULL)", to_kura_sql(e, schema)?),
        Expr::IsNotNull(e) => format!("({} IS NOT NULL)", to_kura_sql(e, schema)?),
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => format!(
            "({} {}BETWEEN {} AND {})",
            to_kura_sql(expr, schema)?,
            if *negated { "NOT " } else { "" },
            to_kura_sql(low, schema)?,
            to_kura_sql(high, schema)?
        ),
        Expr::InList(list) => {
            if list.list.is_empty() {
                return None;
            }
            let items = list.list.iter().map(literal).collect::<Option<Vec<_>>>()?;
            format!(
                "({} {}IN ({}))",
                to_kura_sql(&list.expr, schema)?,
                if list.negated { "NOT " } else { "" },
                items.join(", ")
            )
        }
        Expr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            case_insensitive: false,
        }) => format!(
            "({} {}LIKE {})",
            to_kura_sql(expr, schema)?,
            if *negated { "NOT " } else { "" },
            literal(pattern)?
        ),
        Expr::Column(c) => column(&c.name, schema)?,
        Expr::Cast(cast) => {
            let Expr::Column(c) = cast.expr.as_ref() else {
                return None;
            };
            let from = schema.field_with_name(&c.name).ok()?.data_type();
            if !widens_losslessly(from, cast.field.data_type()) {
                return None;
            }
            column(&c.name, schema)?
        }
        Expr::Literal(..) => literal(expr)?,
        _ => return None,
    })
}

fn column(name: &str, schema: &Schema) -> Option<String> {
    schema.field_with_name(name).ok()?;
    Some(format!("\"{}\"", name.replace('"', "\"\"")))
}

/// Whether every value of `from` is the same value in `to` (so kura may compare the column
/// uncast): integers to wider integers or to decimals with room, decimals to decimals with at
/// least as many digits on both sides of the point.
pub(crate) fn widens_losslessly(from: &ArrowType, to: &ArrowType) -> bool {
    use ArrowType::*;
    let int_digits = |t: &ArrowType| match t {
        Int16 => Some(5),
        Int32 => Some(10),
        Int64 => Some(19),
        _ => None,
    };
    match (from, to) {
        (a, b) if a == b => true,
        (Int16, Int32 | Int64) | (Int32, Int64) => true,
        (Int16 | Int32 | Int64, Decimal128(p, s)) => {
            int_digits(from).is_some_and(|d| (*p as i16 - *s as i16) >= d)
        }
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        _ => false,
    }
}

/// A literal as kura SQL text (`None` for NULL and types without a translation).
fn literal(e: &Expr) -> Option<String> {
    let Expr::Literal(v, _) = e else {
        return None;
    };
    scalar_sql(v)
}

/// A value as kura SQL text (`None` for NULL and types without a translation).
pub(crate) fn scalar_sql(v: &ScalarValue) -> Option<String> {
    Some(match v {
        ScalarValue::Boolean(Some(b)) => b.to_string().to_uppercase(),
        ScalarValue::Int8(Some(x)) => x.to_string(),
        ScalarValue::Int16(Some(x)) => x.to_string(),
        ScalarValue::Int32(Some(x)) => x.to_string(),
        ScalarValue::Int64(Some(x)) => x.to_string(),
        ScalarValue::UInt8(Some(x)) => x.to_string(),
        ScalarValue::UInt16(Some(x)) => x.to_string(),
        ScalarValue::UInt32(Some(x)) => x.to_string(),
        ScalarValue::Float64(Some(x)) if x.is_finite() => {
            format!("CAST('{x:?}' AS DOUBLE PRECISION)")
        }
        ScalarValue::Decimal128(Some(x), _, s) if *s >= 0 => decimal_text(*x, *s as u32),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => {
            format!("'{}'", s.replace('\'', "''"))
        }
        ScalarValue::Date32(Some(d)) => {
            format!("DATE '{}'", kura_common::date::format_date(*d))
        }
        _ => return None,
    })
}

/// A scaled integer as decimal text (`-12.05` for -1205 at scale 2).
fn decimal_text(x: i128, scale: u32) -> String {
    let digits = x.unsigned_abs().to_string();
    let sign = if x < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;
    use datafusion::prelude::{col, lit};
    use std::ops::Not;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("q", ArrowType::Decimal128(15, 2), true),
            Field::new("d", ArrowType::Date32, true),
            Field::new("m", ArrowType::Utf8, true),
            Field::new("k", ArrowType::Int32, true),
        ])
    }

    #[test]
    fn translated_forms() {
        let s = schema();
        let e = col("q")
            .lt(lit(ScalarValue::Decimal128(Some(2400), 15, 2)))
            .and(col("m").in_list(vec![lit("MAIL"), lit("O'S")], false))
            .and(col("d").gt_eq(lit(ScalarValue::Date32(Some(8766)))));
        assert_eq!(
            to_kura_sql(&e, &s).unwrap(),
            "(((\"q\" < 24.00) AND (\"m\" IN ('MAIL', 'O''S'))) AND (\"d\" >= DATE '1994-01-01'))"
        );
        let b = col("k").between(lit(-3i32), lit(7i64)).not();
        assert_eq!(
            to_kura_sql(&b, &s).unwrap(),
            "(NOT (\"k\" BETWEEN -3 AND 7))"
        );
        assert_eq!(
            to_kura_sql(&col("m").like(lit("PROMO%")), &s).unwrap(),
            "(\"m\" LIKE 'PROMO%')"
        );
        assert_eq!(decimal_text(-5, 2), "-0.05");
        assert_eq!(decimal_text(123456, 3), "123.456");
    }

    #[test]
    fn untranslated_forms_stay_in_datafusion() {
        let s = schema();
        // A function, an unknown column, a NULL literal, a narrowing cast.
        assert!(to_kura_sql(
            &datafusion::functions::expr_fn::upper(col("m")).eq(lit("X")),
            &s
        )
        .is_none());
        assert!(to_kura_sql(&col("zz").eq(lit(1)), &s).is_none());
        assert!(to_kura_sql(&col("k").eq(lit(ScalarValue::Int32(None))), &s).is_none());
        let narrow = Expr::Cast(datafusion::logical_expr::Cast::new(
            Box::new(col("q")),
            ArrowType::Int32,
        ));
        assert!(to_kura_sql(&narrow.eq(lit(1)), &s).is_none());
        assert!(to_kura_sql(&col("m").ilike(lit("a%")), &s).is_none());
    }
}
