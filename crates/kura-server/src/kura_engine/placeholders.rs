//! `$n` parameters in SQL text: counting them, and writing bound values in
//! their place as SQL literals (outside quotes and comments only).

use kura_common::date::format_date;
use kura_common::decimal::format_decimal;
use kura_common::Value;

use crate::engine::EngineError;

/// Calls `f(byte offset, length, n)` for each `$n` outside quotes and comments.
fn scan(sql: &str, mut f: impl FnMut(usize, usize, usize)) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b'$' if i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') => {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits > 0 {
                    if let Ok(n) = sql[i + 1..i + 1 + digits].parse::<usize>() {
                        f(i, digits + 1, n);
                    }
                    i += digits;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The number of parameters: the highest `$n`.
pub fn count(sql: &str) -> usize {
    let mut max = 0;
    scan(sql, |_, _, n| max = max.max(n));
    max
}

/// `value` as a SQL literal of its type.
pub fn literal(value: &Value) -> String {
    match value {
        Value::Null => "NULL".into(),
        Value::Boolean(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Value::Integer(v) => signed(v.to_string()),
        Value::BigInt(v) => signed(v.to_string()),
        Value::Double(v) => signed(format!("{v:?}")),
        Value::Decimal(v, s) => signed(format_decimal(*v, *s)),
        Value::Date(d) => format!("DATE '{}'", format_date(*d)),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// A negative number goes in parentheses, so it never forms `--` (a comment)
/// with a minus written before the placeholder.
fn signed(text: String) -> String {
    if text.starts_with('-') {
        format!("({text})")
    } else {
        text
    }
}

/// `sql` with every `$n` replaced by the literal of `params[n - 1]`.
pub fn substitute(sql: &str, params: &[Value]) -> Result<String, EngineError> {
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut last = 0;
    let mut missing = None;
    scan(sql, |at, len, n| {
        out.push_str(&sql[last..at]);
        match n.checked_sub(1).and_then(|i| params.get(i)) {
            Some(v) => out.push_str(&literal(v)),
            None => missing = Some(n),
        }
        last = at + len;
    });
    if let Some(n) = missing {
        return Err(EngineError::new(
            "42P02",
            format!("there is no parameter ${n}"),
        ));
    }
    out.push_str(&sql[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_highest_placeholder_outside_quotes() {
        assert_eq!(count("select $1, $2 where a = $1"), 2);
        assert_eq!(count("select '$3', \"$4\" -- $5\n, /* $6 */ $2"), 2);
        assert_eq!(count("select 1"), 0);
        assert_eq!(count("select a$1 from t"), 0);
    }

    #[test]
    fn substitutes_literals() {
        let sql = "select * from t where d >= $1 and q < $2 and s = $3 and x-$4 > 0 and '$1' = c";
        let out = substitute(
            sql,
            &[
                Value::Date(8766),
                Value::Decimal(2400, 2),
                Value::Text("it's".into()),
                Value::Integer(-5),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            "select * from t where d >= DATE '1994-01-01' and q < 24.00 and s = 'it''s' and x-(-5) > 0 and '$1' = c"
        );
        assert_eq!(
            substitute("select $2", &[Value::Null])
                .unwrap_err()
                .sqlstate,
            "42P02"
        );
        assert_eq!(
            substitute("select $1", &[Value::Null]).unwrap(),
            "select NULL"
        );
    }
}
