//! PostgreSQL's everyday string functions, counted in characters (not bytes)
//! as PostgreSQL counts them in UTF-8: `left`/`right`, `lpad`/`rpad`,
//! `reverse`, `strpos` (and `POSITION(a IN b)`), `concat`/`concat_ws`,
//! `initcap`, `starts_with`, `translate`, `ascii`, `chr` and `to_hex`.

use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};

/// The functions this module evaluates (`ScalarFunc::Text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextFunc {
    /// `left(s, n)`: the first `n` characters; all but the last `-n` when negative.
    Left,
    /// `right(s, n)`: the last `n` characters; all but the first `-n` when negative.
    Right,
    /// `lpad(s, n [, fill])`: `s` filled on the left to `n` characters (cut to
    /// `n` when longer).
    Lpad,
    /// `rpad(s, n [, fill])`: filled on the right.
    Rpad,
    Reverse,
    /// `strpos(s, sub)`: the 1-based character position of `sub`, 0 if absent.
    Strpos,
    /// `concat(...)`: every argument's text, NULLs skipped (the arguments are
    /// text already, the binder casts them, or booleans).
    Concat,
    /// `concat_ws(sep, ...)`: joined by `sep`, NULLs skipped; NULL when `sep` is.
    ConcatWs,
    /// `initcap(s)`: each word's first letter upper case, the rest lower.
    Initcap,
    StartsWith,
    /// `translate(s, from, to)`: each character of `from` replaced by the one at
    /// its place in `to`, or removed when `to` is shorter.
    Translate,
    /// `ascii(s)`: the code point of the first character (0 for '').
    Ascii,
    /// `chr(n)`: the character of code point `n`.
    Chr,
    /// `to_hex(n)`: hexadecimal digits (two's complement of the argument's width).
    ToHex,
}

impl TextFunc {
    pub fn name(self) -> &'static str {
        match self {
            TextFunc::Left => "left",
            TextFunc::Right => "right",
            TextFunc::Lpad => "lpad",
            TextFunc::Rpad => "rpad",
            TextFunc::Reverse => "reverse",
            TextFunc::Strpos => "strpos",
            TextFunc::Concat => "concat",
            TextFunc::ConcatWs => "concat_ws",
            TextFunc::Initcap => "initcap",
            TextFunc::StartsWith => "starts_with",
            TextFunc::Translate => "translate",
            TextFunc::Ascii => "ascii",
            TextFunc::Chr => "chr",
            TextFunc::ToHex => "to_hex",
        }
    }

    /// Whether a call with non-NULL arguments may still fail (`chr` of an
    /// invalid code point, a pad past the largest value).
    pub fn may_fail(self) -> bool {
        matches!(
            self,
            TextFunc::Lpad | TextFunc::Rpad | TextFunc::Chr | TextFunc::Concat | TextFunc::ConcatWs
        )
    }
}

fn invalid(code: &'static str, message: impl Into<String>) -> ExecError {
    ExecError::InvalidArgument {
        code,
        message: message.into(),
    }
}

/// Applies `f` to argument vectors of `n` rows.
pub fn call(f: TextFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    // Text built so far in this batch, for the memory limit (see `budget`).
    let mut built = 0usize;
    super::row_kernel::row_by_row(f.name(), out, n, |r| {
        let vals: Vec<Value> = args.iter().map(|a| a.get_value(r)).collect();
        let v = match f {
            TextFunc::Concat => {
                let s: String = vals.iter().filter_map(text).collect();
                check(f, &s, &mut built)?;
                Value::Text(s)
            }
            TextFunc::ConcatWs => match vals.split_first() {
                Some((Value::Text(sep), rest)) => {
                    let parts: Vec<&str> = rest.iter().filter_map(text).collect();
                    let s = parts.join(sep);
                    check(f, &s, &mut built)?;
                    Value::Text(s)
                }
                _ => Value::Null,
            },
            _ if vals.iter().any(Value::is_null) => Value::Null,
            _ => one(f, &vals, &mut built)?,
        };
        Ok(v)
    })
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::Text(s) => Some(s),
        // concat's booleans print as PostgreSQL's output form, not as their
        // cast to text ('true').
        Value::Boolean(true) => Some("t"),
        Value::Boolean(false) => Some("f"),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(x) => Some(*x as i64),
        Value::BigInt(x) => Some(*x),
        _ => None,
    }
}

/// Counts a built value against the value size and the batch's memory.
fn check(f: TextFunc, s: &str, built: &mut usize) -> ExecResult<()> {
    super::budget::check_value(f.name(), s.len(), *built)?;
    *built += s.len();
    Ok(())
}

/// `f` of one row's non-NULL arguments.
fn one(f: TextFunc, vals: &[Value], built: &mut usize) -> ExecResult<Value> {
    let s = vals.first().and_then(text).unwrap_or_default();
    let n = vals.get(1).and_then(int).unwrap_or(0);
    let chars = || s.chars().count() as i64;
    Ok(match f {
        TextFunc::Left => {
            let keep = if n >= 0 { n } else { (chars() + n).max(0) };
            Value::Text(s.chars().take(keep as usize).collect())
        }
        TextFunc::Right => {
            let len = chars();
            let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) };
            Value::Text(s.chars().skip((len - keep) as usize).collect())
        }
        TextFunc::Lpad | TextFunc::Rpad => {
            let fill = match vals.get(2) {
                Some(v) => text(v).unwrap_or_default(),
                None => " ",
            };
            let target = n.max(0) as usize;
            // The result's bytes at most: checked before it is built.
            let widest = target.saturating_mul(4);
            if widest > kura_common::MAX_VALUE_BYTES {
                return Err(invalid("54000", "requested length too large"));
            }
            let have: Vec<char> = s.chars().collect();
            let out: String = if have.len() >= target || fill.is_empty() {
                have.iter().take(target).collect()
            } else {
                let pad: String = fill.chars().cycle().take(target - have.len()).collect();
                if f == TextFunc::Lpad {
                    pad + s
                } else {
                    s.to_string() + &pad
                }
            };
            check(f, &out, built)?;
            Value::Text(out)
        }
        TextFunc::Reverse => Value::Text(s.chars().rev().collect()),
        TextFunc::Strpos => {
            let sub = vals.get(1).and_then(text).unwrap_or_default();
            Value::Integer(match s.find(sub) {
                Some(at) => s[..at].chars().count() as i32 + 1,
                None => 0,
            })
        }
        TextFunc::Initcap => Value::Text(initcap(s)),
        TextFunc::StartsWith => {
            Value::Boolean(s.starts_with(vals.get(1).and_then(text).unwrap_or_default()))
        }
        TextFunc::Translate => {
            let from: Vec<char> = vals
                .get(1)
                .and_then(text)
                .unwrap_or_default()
                .chars()
                .collect();
            let to: Vec<char> = vals
                .get(2)
                .and_then(text)
                .unwrap_or_default()
                .chars()
                .collect();
            Value::Text(
                s.chars()
                    .filter_map(|c| match from.iter().position(|&x| x == c) {
                        Some(i) => to.get(i).copied(),
                        None => Some(c),
                    })
                    .collect(),
            )
        }
        TextFunc::Ascii => Value::Integer(s.chars().next().map_or(0, |c| c as i32)),
        TextFunc::Chr => {
            let code = vals.first().and_then(int).unwrap_or(0);
            if code == 0 {
                return Err(invalid("54000", "null character not permitted"));
            }
            let c = u32::try_from(code)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| {
                    invalid(
                        "54000",
                        format!("requested character too large for encoding: {code}"),
                    )
                })?;
            Value::Text(c.to_string())
        }
        TextFunc::ToHex => match vals.first() {
            Some(Value::Integer(x)) => Value::Text(format!("{:x}", *x as u32)),
            Some(Value::BigInt(x)) => Value::Text(format!("{:x}", *x as u64)),
            _ => Value::Null,
        },
        TextFunc::Concat | TextFunc::ConcatWs => Value::Null,
    })
}

/// PostgreSQL's `initcap`: a letter or digit after one that is neither starts
/// a word (upper case), the others of the word are lower case.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: TextFunc, vals: &[Value]) -> ExecResult<Value> {
        let args: Vec<Vector> = vals
            .iter()
            .map(|v| {
                let t = match v {
                    Value::Integer(_) => DataType::Integer,
                    Value::BigInt(_) => DataType::BigInt,
                    _ => DataType::Varchar(None),
                };
                Vector::from_values(t, std::slice::from_ref(v)).unwrap()
            })
            .collect();
        let out = match f {
            TextFunc::Strpos | TextFunc::Ascii => DataType::Integer,
            TextFunc::StartsWith => DataType::Boolean,
            _ => DataType::Varchar(None),
        };
        Ok(call(f, &args, out, 1)?.get_value(0))
    }

    fn t(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn characters_not_bytes() {
        assert_eq!(
            run(TextFunc::Left, &[t("añb"), Value::Integer(2)]).unwrap(),
            t("añ")
        );
        assert_eq!(
            run(TextFunc::Left, &[t("abc"), Value::Integer(-1)]).unwrap(),
            t("ab")
        );
        assert_eq!(
            run(TextFunc::Left, &[t("abc"), Value::Integer(-5)]).unwrap(),
            t("")
        );
        assert_eq!(
            run(TextFunc::Right, &[t("añb"), Value::Integer(2)]).unwrap(),
            t("ñb")
        );
        assert_eq!(
            run(TextFunc::Right, &[t("abc"), Value::Integer(-1)]).unwrap(),
            t("bc")
        );
        assert_eq!(
            run(TextFunc::Right, &[t("abc"), Value::Integer(9)]).unwrap(),
            t("abc")
        );
        assert_eq!(
            run(TextFunc::Strpos, &[t("añbc"), t("bc")]).unwrap(),
            Value::Integer(3)
        );
        assert_eq!(
            run(TextFunc::Strpos, &[t("abc"), t("")]).unwrap(),
            Value::Integer(1)
        );
        assert_eq!(run(TextFunc::Reverse, &[t("añb")]).unwrap(), t("bña"));
    }

    #[test]
    fn pads_fill_and_cut() {
        let pad =
            |f, s: &str, n: i32, fill: &str| run(f, &[t(s), Value::Integer(n), t(fill)]).unwrap();
        assert_eq!(pad(TextFunc::Lpad, "ab", 5, "xy"), t("xyxab"));
        assert_eq!(pad(TextFunc::Rpad, "ab", 5, "xy"), t("abxyx"));
        assert_eq!(pad(TextFunc::Lpad, "abcdef", 3, "*"), t("abc"));
        assert_eq!(pad(TextFunc::Rpad, "abcdef", 3, "*"), t("abc"));
        assert_eq!(pad(TextFunc::Lpad, "ab", 5, ""), t("ab"));
        assert_eq!(pad(TextFunc::Lpad, "ab", -1, "*"), t(""));
        assert!(run(TextFunc::Lpad, &[t("a"), Value::Integer(i32::MAX), t("*")]).is_err());
    }

    #[test]
    fn concat_skips_nulls() {
        assert_eq!(
            run(TextFunc::Concat, &[t("a"), Value::Null, t("b")]).unwrap(),
            t("ab")
        );
        assert_eq!(
            run(TextFunc::ConcatWs, &[t(","), t("a"), Value::Null, t("b")]).unwrap(),
            t("a,b")
        );
        assert_eq!(
            run(TextFunc::ConcatWs, &[Value::Null, t("a")]).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn the_rest() {
        assert_eq!(
            run(TextFunc::Initcap, &[t("hi THERE o'neil x2y")]).unwrap(),
            t("Hi There O'Neil X2y")
        );
        assert_eq!(
            run(TextFunc::Translate, &[t("12345"), t("143"), t("ax")]).unwrap(),
            t("a2x5")
        );
        assert_eq!(run(TextFunc::Ascii, &[t("")]).unwrap(), Value::Integer(0));
        assert_eq!(run(TextFunc::Chr, &[Value::Integer(241)]).unwrap(), t("ñ"));
        assert!(run(TextFunc::Chr, &[Value::Integer(0)]).is_err());
        assert!(run(TextFunc::Chr, &[Value::Integer(-1)]).is_err());
        assert_eq!(
            run(TextFunc::ToHex, &[Value::Integer(-1)]).unwrap(),
            t("ffffffff")
        );
        assert_eq!(
            run(TextFunc::ToHex, &[Value::BigInt(255)]).unwrap(),
            t("ff")
        );
    }
}
