//! `greatest`/`least`, `split_part` and `regexp_replace` with PostgreSQL's
//! semantics (NULL arguments, negative field numbers, `\1` back-references),
//! `ltrim`/`rtrim`/`btrim` of a set of characters, and records in their
//! text form (`(3,"a b",)`): made and read by field.

use std::collections::HashMap;

use kura_common::{DataType, Value, Vector};

use super::ScalarFunc;
use crate::error::{ExecError, ExecResult};

/// Row `r` of argument `i` (NULL for a missing optional argument).
fn arg(args: &[Vector], i: usize, r: usize) -> Value {
    args.get(i).map_or(Value::Null, |v| v.get_value(r))
}

/// Applies one of this module's functions to argument vectors of `n` rows.
pub fn call(func: ScalarFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let mut res = Vector::new(out, n);
    let mut regexes: HashMap<(String, String), Compiled> = HashMap::new();
    // Text built so far in this batch, for the memory limit (see `budget`).
    let mut built = 0usize;
    for r in 0..n {
        let v = match func {
            ScalarFunc::Greatest | ScalarFunc::Least => {
                // NULLs are skipped; NULL only when every argument is.
                let mut best = Value::Null;
                for i in 0..args.len() {
                    let x = arg(args, i, r);
                    if x.is_null() {
                        continue;
                    }
                    let better = best.is_null()
                        || match func {
                            ScalarFunc::Greatest => x.total_cmp_of(&best, out).is_gt(),
                            _ => x.total_cmp_of(&best, out).is_lt(),
                        };
                    if better {
                        best = x;
                    }
                }
                best
            }
            ScalarFunc::SplitPart => match (arg(args, 0, r), arg(args, 1, r), arg(args, 2, r)) {
                (Value::Text(s), Value::Text(d), Value::BigInt(k)) => {
                    Value::Text(split_part(&s, &d, k)?.to_string())
                }
                _ => Value::Null,
            },
            ScalarFunc::LTrim | ScalarFunc::RTrim | ScalarFunc::BTrim => {
                match (arg(args, 0, r), arg(args, 1, r)) {
                    (Value::Text(s), Value::Text(chars)) => {
                        let set = |c: char| chars.contains(c);
                        Value::Text(
                            match func {
                                ScalarFunc::LTrim => s.trim_start_matches(set),
                                ScalarFunc::RTrim => s.trim_end_matches(set),
                                _ => s.trim_matches(set),
                            }
                            .to_string(),
                        )
                    }
                    _ => Value::Null,
                }
            }
            ScalarFunc::RecordText => {
                let fields: Vec<Value> = (0..args.len()).map(|i| arg(args, i, r)).collect();
                let texts: Vec<Option<&str>> = fields
                    .iter()
                    .map(|v| match v {
                        Value::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                Value::Text(kura_common::record::format_record(&texts))
            }
            ScalarFunc::RecordField => match (arg(args, 0, r), arg(args, 1, r)) {
                (Value::Text(t), Value::Integer(k)) => {
                    let fields = kura_common::record::parse_record(&t).ok_or_else(|| {
                        ExecError::InvalidText {
                            ty: "record".into(),
                            text: t.clone(),
                        }
                    })?;
                    let k = usize::try_from(k).unwrap_or(0);
                    match k.checked_sub(1).and_then(|i| fields.get(i)) {
                        Some(Some(f)) => Value::Text(f.clone()),
                        _ => Value::Null,
                    }
                }
                _ => Value::Null,
            },
            ScalarFunc::RegexpReplace => {
                let flags = match args.len() {
                    3 => Value::Text(String::new()),
                    _ => arg(args, 3, r),
                };
                match (arg(args, 0, r), arg(args, 1, r), arg(args, 2, r), flags) {
                    (Value::Text(s), Value::Text(p), Value::Text(rep), Value::Text(f)) => {
                        let key = (p, f);
                        if !regexes.contains_key(&key) {
                            let c = compile(&key.0, &key.1)?;
                            regexes.insert(key.clone(), c);
                        }
                        let c = &regexes[&key];
                        let rep = replacement(&rep);
                        let limit = if c.global { 0 } else { 1 };
                        let bytes = replaced_len(c, &s, limit, &rep);
                        super::budget::check_value("regexp_replace", bytes, built)?;
                        Value::Text(c.re.replacen(&s, limit, rep.as_str()).into_owned())
                    }
                    _ => Value::Null,
                }
            }
            ScalarFunc::RegexpMatch => {
                let flags = match args.len() {
                    2 => Value::Text(String::new()),
                    _ => arg(args, 2, r),
                };
                match (arg(args, 0, r), arg(args, 1, r), flags) {
                    (Value::Text(s), Value::Text(p), Value::Text(f)) => {
                        let key = (p, f);
                        if !regexes.contains_key(&key) {
                            let c = compile(&key.0, &key.1)?;
                            regexes.insert(key.clone(), c);
                        }
                        let c = &regexes[&key];
                        if c.global {
                            return Err(ExecError::InvalidArgument {
                                code: "22023",
                                message: "regexp_match() does not support the \"global\" option"
                                    .into(),
                            });
                        }
                        match c.re.captures(&s) {
                            // The groups, or the whole match when there are none.
                            Some(caps) if caps.len() > 1 => {
                                Value::Text(kura_common::array::format(
                                    (1..caps.len()).map(|i| caps.get(i).map(|m| m.as_str())),
                                ))
                            }
                            Some(caps) => Value::Text(kura_common::array::format(std::iter::once(
                                caps.get(0).map(|m| m.as_str()),
                            ))),
                            None => Value::Null,
                        }
                    }
                    _ => Value::Null,
                }
            }
            other => {
                return Err(ExecError::Internal(format!(
                    "{} is not a text function",
                    other.name()
                )))
            }
        };
        if let Value::Text(t) = &v {
            built += t.len();
            super::budget::grow_text(&mut res, t.len())?;
        }
        if !res.push_value(&v) {
            return Err(ExecError::Internal(format!("{} gave {v}", func.name())));
        }
    }
    Ok(res)
}

/// The length of `s` with `limit` matches (0: all) replaced by `rep` (in the
/// regex crate's syntax), or a bound on it, known before the text is built: an
/// empty pattern matches between every two characters, so a long replacement can
/// multiply a text far past what memory holds.
fn replaced_len(c: &Compiled, s: &str, limit: usize, rep: &str) -> usize {
    let refs = rep.matches('$').count();
    let most_matches = if limit == 0 { s.len() + 1 } else { 1 };
    let rough = s
        .len()
        .saturating_add(most_matches.saturating_mul(rep.len().saturating_add(refs * s.len())));
    if rough <= 1 << 16 {
        return rough;
    }
    // Too large to assume: count what the matches add, without building the text.
    let mut len = s.len();
    let mut scratch = String::new();
    for (i, caps) in c.re.captures_iter(s).enumerate() {
        if limit != 0 && i >= limit {
            break;
        }
        let m = caps.get(0).map_or(0, |m| m.len());
        scratch.clear();
        caps.expand(rep, &mut scratch);
        len = len - m + scratch.len();
        if len > kura_common::MAX_VALUE_BYTES {
            break;
        }
    }
    len
}

/// PostgreSQL's `split_part`: field `k` (1-based; from the end when negative)
/// of `s` split at `d`, empty when there is no such field.
pub fn split_part<'a>(s: &'a str, d: &str, k: i64) -> ExecResult<&'a str> {
    if k == 0 {
        return Err(ExecError::InvalidParameter(
            "field position must not be zero".into(),
        ));
    }
    if s.is_empty() {
        return Ok("");
    }
    if d.is_empty() {
        // An empty delimiter splits nothing: the whole string is the only field.
        return Ok(if k == 1 || k == -1 { s } else { "" });
    }
    let at = (k.unsigned_abs() - 1) as usize;
    let field = if k > 0 {
        s.split(d).nth(at)
    } else {
        s.rsplit(d).nth(at)
    };
    Ok(field.unwrap_or(""))
}

struct Compiled {
    re: regex::Regex,
    global: bool,
}

/// A pattern with PostgreSQL's flags: `g` every match, `i`/`c` case, `n`/`m`
/// newline-sensitive, `s` not, `x` expanded syntax. By default a PostgreSQL
/// regular expression lets `.` match a newline and anchors only at the ends.
fn compile(pattern: &str, flags: &str) -> ExecResult<Compiled> {
    let mut b = regex::RegexBuilder::new(pattern);
    b.dot_matches_new_line(true);
    let mut global = false;
    for f in flags.chars() {
        match f {
            'g' => global = true,
            'i' => {
                b.case_insensitive(true);
            }
            'c' => {
                b.case_insensitive(false);
            }
            'n' | 'm' => {
                b.dot_matches_new_line(false).multi_line(true);
            }
            's' => {
                b.dot_matches_new_line(true).multi_line(false);
            }
            'x' => {
                b.ignore_whitespace(true);
            }
            'b' | 'e' | 'q' | 'p' | 'w' | 't' => {
                return Err(ExecError::Unsupported(format!(
                    "regular expression option \"{f}\""
                )))
            }
            other => {
                return Err(ExecError::InvalidParameter(format!(
                    "invalid regular expression option: \"{other}\""
                )))
            }
        }
    }
    let re = b
        .build()
        .map_err(|e| ExecError::InvalidRegex(e.to_string()))?;
    Ok(Compiled { re, global })
}

/// PostgreSQL's replacement text in the `regex` crate's syntax: `\1`–`\9` the
/// groups, `\&` the whole match, `\\` a backslash; a `$` is literal.
fn replacement(rep: &str) -> String {
    let mut out = String::with_capacity(rep.len());
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_part_counts_from_either_end() {
        assert_eq!(split_part("a,b,c", ",", 2).unwrap(), "b");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b,c", ",", 4).unwrap(), "");
        assert_eq!(split_part("a,b,c", ",", -4).unwrap(), "");
        assert_eq!(split_part("abc", "", 1).unwrap(), "abc");
        assert_eq!(split_part("abc", "", 2).unwrap(), "");
        assert_eq!(split_part("a~~b", "~~", 2).unwrap(), "b");
        assert!(split_part("a", ",", 0).is_err());
    }

    #[test]
    fn replacements_translate_back_references() {
        assert_eq!(replacement(r"\2-\1"), "${2}-${1}");
        assert_eq!(replacement(r"<\&> $5 \\"), "<${0}> $$5 \\");
        let c = compile("(a)(b)", "g").unwrap();
        assert_eq!(
            c.re.replace_all("abab", replacement(r"\2\1").as_str()),
            "baba"
        );
        assert!(compile("a", "z").is_err());
    }
}
