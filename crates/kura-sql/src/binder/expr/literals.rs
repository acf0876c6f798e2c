//! Literals and the placeholders that stand for `$n` parameters while a
//! statement is described.

use super::*;

/// A parameter value as a literal of its own type.
pub(super) fn param_literal(v: Value, _n: usize) -> PhysExpr {
    let t = match &v {
        Value::Null | Value::Text(_) => DataType::Varchar(None),
        Value::Boolean(_) => DataType::Boolean,
        Value::Integer(_) => DataType::Integer,
        Value::BigInt(_) => DataType::BigInt,
        Value::Double(_) => DataType::Double,
        Value::Decimal(x, s) => DataType::Decimal {
            precision: (x.unsigned_abs().to_string().len() as u8)
                .max(*s + 1)
                .min(38),
            scale: *s,
        },
        Value::Date(_) => DataType::Date,
        Value::Timestamp(_) => DataType::Timestamp,
        Value::Interval(_) => DataType::Interval,
    };
    PhysExpr::literal(v, t)
}

impl Binder<'_> {
    pub(super) fn bind_value(&mut self, v: &ast::Value, p: Pos) -> SqlResult<PhysExpr> {
        match v {
            ast::Value::Number(n, _) => {
                let (v, t) = number_literal(n, p)?;
                Ok(PhysExpr::literal(v, t))
            }
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => Ok(
                PhysExpr::literal(Value::Text(s.clone()), DataType::Varchar(None)),
            ),
            ast::Value::Boolean(b) => Ok(PhysExpr::literal(Value::Boolean(*b), DataType::Boolean)),
            ast::Value::Null => Ok(PhysExpr::literal(Value::Null, DataType::Varchar(None))),
            ast::Value::Placeholder(name) => {
                let n: usize = name
                    .trim_start_matches('$')
                    .parse()
                    .map_err(|_| SqlError::unsupported(format!("parameter {name}"), p))?;
                if n == 0 {
                    return Err(SqlError::MissingParameter(0));
                }
                if self.params.types.len() < n {
                    self.params.types.resize(n, None);
                }
                Ok(match &self.params.values {
                    Some(vals) => {
                        let v = vals
                            .get(n - 1)
                            .cloned()
                            .ok_or(SqlError::MissingParameter(n))?;
                        param_literal(v, n)
                    }
                    None => PhysExpr::literal(
                        Value::Text(format!("{PARAM_MARK}{n}")),
                        DataType::Varchar(None),
                    ),
                })
            }
            other => Err(SqlError::unsupported(format!("literal {other}"), p)),
        }
    }
}
