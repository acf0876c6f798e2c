//! Operators and functions of `json` and `jsonb` values (their logic is in
//! `kura_common::json`): `->`, `->>`, `#>`, `#>>`, `@>`, `?`, `?|`, `?&`,
//! `||`, `-`, jsonb equality, `jsonb_typeof`, `jsonb_array_length`,
//! `jsonb_build_object`/`_array`, `to_jsonb`, `jsonb_pretty`,
//! `jsonb_strip_nulls` (and their json forms), and the casts of jsonb
//! scalars to numbers and booleans.

use kura_common::json::{self, Json, JsonError};
use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};

/// The functions this module evaluates (`ScalarFunc::Json`). Which of json
/// or jsonb an argument is comes from its vector's type; the result's from
/// the call's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonFunc {
    /// `j -> key`, `j -> index` (by the second argument's type).
    Get,
    /// `j ->> key`, `j ->> index`.
    GetText,
    /// `j #> path`.
    GetPath,
    /// `j #>> path`.
    GetPathText,
    /// `a @> b`.
    Contains,
    /// `j ? key`.
    HasKey,
    /// `j ?| keys`.
    HasAny,
    /// `j ?& keys`.
    HasAll,
    /// `a || b`.
    Concat,
    /// `j - key`, `j - index`, `j - keys`.
    Delete,
    /// The text jsonb `=` compares (equal exactly for equal values).
    EqualityKey,
    TypeOf,
    ArrayLength,
    BuildObject,
    BuildArray,
    /// `to_json`/`to_jsonb`.
    ToJson,
    Pretty,
    StripNulls,
    /// How many rows a set-returning function gives for a value (its
    /// SELECT-list form): `jsonb_array_elements`'s elements, `_object_keys`'s keys.
    SrfCount(SrfKind),
    /// Row `n` (from 1) of that function for a value, NULL past its end.
    SrfItem(SrfKind),
}

/// The set-returning json functions a SELECT list runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SrfKind {
    Elements,
    ElementsText,
    Keys,
}

impl SrfKind {
    /// `expand`'s kind and whether values are text.
    fn expand_args(self) -> (&'static str, bool) {
        match self {
            SrfKind::Elements => ("elements", false),
            SrfKind::ElementsText => ("elements", true),
            SrfKind::Keys => ("keys", false),
        }
    }
}

impl JsonFunc {
    pub fn name(self) -> &'static str {
        match self {
            JsonFunc::Get => "->",
            JsonFunc::GetText => "->>",
            JsonFunc::GetPath => "#>",
            JsonFunc::GetPathText => "#>>",
            JsonFunc::Contains => "@>",
            JsonFunc::HasKey => "?",
            JsonFunc::HasAny => "?|",
            JsonFunc::HasAll => "?&",
            JsonFunc::Concat => "||",
            JsonFunc::Delete => "-",
            JsonFunc::EqualityKey => "jsonb_eq",
            JsonFunc::TypeOf => "jsonb_typeof",
            JsonFunc::ArrayLength => "jsonb_array_length",
            JsonFunc::BuildObject => "jsonb_build_object",
            JsonFunc::BuildArray => "jsonb_build_array",
            JsonFunc::ToJson => "to_jsonb",
            JsonFunc::Pretty => "jsonb_pretty",
            JsonFunc::StripNulls => "jsonb_strip_nulls",
            JsonFunc::SrfCount(_) => "jsonb_srf_count",
            JsonFunc::SrfItem(_) => "jsonb_srf_item",
        }
    }

    /// Whether a NULL argument gives NULL (the builders take NULL as `null`).
    fn strict(self) -> bool {
        !matches!(
            self,
            JsonFunc::BuildObject | JsonFunc::BuildArray | JsonFunc::ToJson
        )
    }
}

fn invalid(message: impl Into<String>) -> ExecError {
    ExecError::InvalidArgument {
        code: "22023",
        message: message.into(),
    }
}

fn null_key(message: String) -> ExecError {
    ExecError::InvalidArgument {
        code: "22023",
        message,
    }
}

/// A held value that does not decode: json input takes escapes (`\u0000`,
/// a lone surrogate) that operators, as PostgreSQL's, refuse to decode.
fn corrupt(e: JsonError) -> ExecError {
    ExecError::from(e)
}

/// The text forms of a text[] value (path or key list); NULL elements too.
fn text_list(s: &str) -> ExecResult<Vec<Option<String>>> {
    kura_common::array::parse(s).map_err(|e| ExecError::Internal(format!("text[]: {e:?}")))
}

/// The json value of `v`, a SQL value of type `t` (`to_jsonb`): numbers as
/// numbers, booleans, json as itself, timestamps in ISO 8601, arrays as
/// arrays, anything else as its text in a string.
pub fn to_json(v: &Value, t: DataType) -> ExecResult<Json> {
    Ok(match (v, t) {
        (Value::Null, _) => Json::Null,
        (Value::Boolean(b), _) => Json::Bool(*b),
        (Value::Integer(_) | Value::BigInt(_) | Value::Decimal(..), _) => {
            Json::Number(v.to_string())
        }
        // PostgreSQL writes NaN and the infinities as strings.
        (Value::Double(x), _) if x.is_finite() => Json::Number(v.to_string()),
        (Value::Timestamp(_), _) => Json::String(v.to_string().replacen(' ', "T", 1)),
        (Value::Text(s), DataType::Json) => json::parse(s).map_err(corrupt)?,
        (Value::Text(s), DataType::Jsonb) => json::jsonb_value(s).map_err(corrupt)?,
        (Value::Text(s), DataType::Array(_) | DataType::Vector(_)) => {
            let elem = t.element().unwrap_or(DataType::Varchar(None));
            let items = super::cast::elements_of(s, t)?;
            Json::Array(
                items
                    .iter()
                    .map(|x| to_json(x, elem))
                    .collect::<ExecResult<_>>()?,
            )
        }
        (other, _) => Json::String(other.to_string()),
    })
}

/// A json tree as a value of `out` (json: compact as json prints built
/// values; jsonb: canonical).
fn output(j: Json, out: DataType) -> ExecResult<Value> {
    Ok(Value::Text(match out {
        DataType::Json => json_text(&j),
        _ => json::to_jsonb(j).map_err(ExecError::from)?.to_string(),
    }))
}

/// PostgreSQL's json text of a built value: `{"a" : 1}` for objects (its
/// `json_build_object` spacing), `[1, 2]` for arrays.
fn json_text(j: &Json) -> String {
    match j {
        Json::Object(pairs) => {
            let items: Vec<String> = pairs
                .iter()
                .map(|(k, v)| {
                    let mut key = String::new();
                    json::write_string(k, &mut key);
                    format!("{key} : {}", json_text(v))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(json_text).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// The json text `json_strip_nulls` writes: no spaces (`{"a":[1,2]}`).
fn compact(j: &Json) -> String {
    match j {
        Json::Object(pairs) => {
            let items: Vec<String> = pairs
                .iter()
                .map(|(k, v)| {
                    let mut key = String::new();
                    json::write_string(k, &mut key);
                    format!("{key}:{}", compact(v))
                })
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(compact).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// A json-typed argument: its tree (jsonb) or its text as written (json).
enum Arg<'a> {
    Binary(Json),
    Text(&'a str),
}

/// A json or jsonb argument of an operator that decodes its strings: json
/// text whose escapes do not decode (`\u0000`) fails, as in PostgreSQL.
fn read(s: &str, t: DataType) -> ExecResult<Arg<'_>> {
    Ok(if t == DataType::Json {
        json::parse(s).map_err(corrupt)?;
        Arg::Text(s)
    } else {
        Arg::Binary(json::jsonb_value(s).map_err(corrupt)?)
    })
}

/// `->`: the member `key` or element `index` of a json text, as written.
fn raw_get<'a>(s: &'a str, step: &Value) -> ExecResult<Option<&'a str>> {
    let Some(kids) = json::raw_children(s).map_err(corrupt)? else {
        return Ok(None);
    };
    Ok(match step {
        Value::Text(k) => kids
            .iter()
            .rev()
            .find(|(key, _)| key.as_deref() == Some(k.as_str()))
            .map(|(_, v)| *v),
        Value::Integer(i) if kids.first().is_none_or(|c| c.0.is_none()) => {
            let i = if *i < 0 {
                kids.len() as i64 + i64::from(*i)
            } else {
                i64::from(*i)
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| kids.get(i))
                .map(|(_, v)| *v)
        }
        _ => None,
    })
}

/// A step of `->` on a jsonb tree: a key of an object, an index of an array
/// (a scalar is its own element 0, as in PostgreSQL's jsonb).
fn binary_get<'a>(j: &'a Json, step: &Value) -> Option<&'a Json> {
    match (step, j) {
        (Value::Text(k), _) => j.field(k),
        (Value::Integer(i), Json::Array(_)) => j.element(i64::from(*i)),
        (Value::Integer(0 | -1), Json::Object(_)) => None,
        (Value::Integer(0 | -1), scalar) => Some(scalar),
        _ => None,
    }
}

/// `->>`'s text of a json text: a string unquoted, null as NULL.
fn raw_as_text(s: &str) -> ExecResult<Value> {
    let v = json::parse(s).map_err(corrupt)?;
    Ok(match v {
        Json::Null => Value::Null,
        Json::String(x) => Value::Text(x),
        _ => Value::Text(s.to_string()),
    })
}

/// The result of a lookup: the value found (as json or jsonb text, or as
/// `->>`'s text), NULL when nothing is there.
fn found(a: Option<Arg<'_>>, as_text: bool) -> ExecResult<Value> {
    Ok(match (a, as_text) {
        (None, _) => Value::Null,
        (Some(Arg::Text(s)), false) => Value::Text(s.to_string()),
        (Some(Arg::Text(s)), true) => raw_as_text(s)?,
        (Some(Arg::Binary(j)), false) => Value::Text(j.to_string()),
        (Some(Arg::Binary(j)), true) => j.as_text().map_or(Value::Null, Value::Text),
    })
}

fn lookup<'a>(a: Arg<'a>, steps: &[Value]) -> ExecResult<Option<Arg<'a>>> {
    let mut cur = a;
    for step in steps {
        cur = match cur {
            Arg::Text(s) => match raw_get(s, step)? {
                Some(x) => Arg::Text(x),
                None => return Ok(None),
            },
            Arg::Binary(j) => match binary_get(&j, step) {
                Some(x) => Arg::Binary(x.clone()),
                None => return Ok(None),
            },
        };
    }
    Ok(Some(cur))
}

/// A path's steps: each a key, or an index where it is an array's.
fn path_steps(a: &Arg<'_>, path: &[Option<String>]) -> ExecResult<Option<Vec<Value>>> {
    // Whether each step is an index is known only at that depth: walk it.
    let mut steps = Vec::new();
    let mut cur = match a {
        Arg::Text(s) => Arg::Text(s),
        Arg::Binary(j) => Arg::Binary(j.clone()),
    };
    for p in path {
        let Some(p) = p else { return Ok(None) };
        let is_array = match &cur {
            Arg::Text(s) => json::raw_trim(s).starts_with('['),
            Arg::Binary(j) => matches!(j, Json::Array(_)),
        };
        let step = if is_array {
            match p.trim().parse::<i32>() {
                Ok(i) => Value::Integer(i),
                Err(_) => return Ok(None),
            }
        } else if matches!(&cur, Arg::Binary(j) if !matches!(j, Json::Object(_))) {
            // A path goes into containers only.
            return Ok(None);
        } else {
            Value::Text(p.clone())
        };
        cur = match lookup(cur, std::slice::from_ref(&step))? {
            Some(x) => x,
            None => return Ok(None),
        };
        steps.push(step);
    }
    Ok(Some(steps))
}

fn binary(v: &Value) -> ExecResult<Json> {
    match v {
        Value::Text(s) => json::jsonb_value(s).map_err(corrupt),
        other => Err(ExecError::Internal(format!("jsonb operand {other}"))),
    }
}

fn delete(j: Json, what: &Value, what_type: DataType) -> ExecResult<Json> {
    let scalar = || invalid("cannot delete from scalar");
    let keys: Vec<String> = match (what, what_type) {
        (Value::Integer(i), _) => {
            return match j {
                Json::Array(mut items) => {
                    let n = items.len() as i64;
                    let i = if *i < 0 {
                        n + i64::from(*i)
                    } else {
                        i64::from(*i)
                    };
                    if (0..n).contains(&i) {
                        items.remove(i as usize);
                    }
                    Ok(Json::Array(items))
                }
                Json::Object(_) => Err(invalid("cannot delete from object using integer index")),
                _ => Err(scalar()),
            }
        }
        (Value::Text(s), DataType::Array(_)) => text_list(s)?.into_iter().flatten().collect(),
        (Value::Text(s), _) => vec![s.clone()],
        _ => return Ok(j),
    };
    match j {
        Json::Object(pairs) => Ok(Json::Object(
            pairs
                .into_iter()
                .filter(|(k, _)| !keys.contains(k))
                .collect(),
        )),
        Json::Array(items) => Ok(Json::Array(
            items
                .into_iter()
                .filter(|v| !matches!(v, Json::String(s) if keys.contains(s)))
                .collect(),
        )),
        _ => Err(scalar()),
    }
}

/// Applies `f` to argument vectors of `n` rows, giving `out`.
pub fn call(f: JsonFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let types: Vec<DataType> = args.iter().map(|a| a.data_type).collect();
    let mut res = Vector::new(out, n);
    for r in 0..n {
        let vals: Vec<Value> = args.iter().map(|a| a.get_value(r)).collect();
        let v = if f.strict() && vals.iter().any(Value::is_null) {
            Value::Null
        } else {
            row(f, &vals, &types, out)?
        };
        if let Value::Text(t) = &v {
            super::budget::check_value(f.name(), t.len(), 0)?;
        }
        if !res.push_value(&v) {
            return Err(ExecError::Internal(format!("{} gave {v}", f.name())));
        }
    }
    Ok(res)
}

fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

fn row(f: JsonFunc, vals: &[Value], types: &[DataType], out: DataType) -> ExecResult<Value> {
    let t0 = types.first().copied().unwrap_or(DataType::Jsonb);
    Ok(match f {
        JsonFunc::Get | JsonFunc::GetText => {
            let a = read(text(&vals[0]), t0)?;
            found(lookup(a, &vals[1..2])?, f == JsonFunc::GetText)?
        }
        JsonFunc::GetPath | JsonFunc::GetPathText => {
            let path = text_list(text(&vals[1]))?;
            let a = read(text(&vals[0]), t0)?;
            match path_steps(&a, &path)? {
                Some(steps) => found(lookup(a, &steps)?, f == JsonFunc::GetPathText)?,
                None => Value::Null,
            }
        }
        JsonFunc::Contains => Value::Boolean(binary(&vals[0])?.contains(&binary(&vals[1])?)),
        JsonFunc::HasKey => Value::Boolean(binary(&vals[0])?.has_key(text(&vals[1]))),
        JsonFunc::HasAny | JsonFunc::HasAll => {
            let j = binary(&vals[0])?;
            let keys = text_list(text(&vals[1]))?;
            let mut has = keys.iter().flatten().map(|k| j.has_key(k));
            Value::Boolean(if f == JsonFunc::HasAny {
                has.any(|x| x)
            } else {
                has.all(|x| x)
            })
        }
        JsonFunc::Concat => output(binary(&vals[0])?.concat(binary(&vals[1])?), out)?,
        JsonFunc::Delete => output(delete(binary(&vals[0])?, &vals[1], types[1])?, out)?,
        JsonFunc::EqualityKey => Value::Text(binary(&vals[0])?.equality_key()),
        // These read json's structure only, as PostgreSQL's do.
        JsonFunc::TypeOf => Value::Text(
            json::parse_lenient(text(&vals[0]))
                .map_err(corrupt)?
                .type_name()
                .to_string(),
        ),
        JsonFunc::ArrayLength => {
            let j = json::parse_lenient(text(&vals[0])).map_err(corrupt)?;
            match j {
                Json::Array(items) => Value::Integer(items.len() as i32),
                Json::Object(_) if t0 == DataType::Jsonb => {
                    return Err(invalid("cannot get array length of a non-array"))
                }
                _ => return Err(invalid("cannot get array length of a scalar")),
            }
        }
        JsonFunc::BuildObject => {
            if vals.len() % 2 == 1 {
                return Err(invalid("argument list must have even number of elements"));
            }
            let mut pairs = Vec::with_capacity(vals.len() / 2);
            for (k, pair) in vals.chunks(2).enumerate() {
                let key = match &pair[0] {
                    // PostgreSQL words this differently for json and jsonb.
                    Value::Null if out == DataType::Json => {
                        return Err(null_key(format!("argument {} cannot be null", 2 * k + 1)))
                    }
                    Value::Null => {
                        return Err(null_key(format!(
                            "argument {}: key must not be null",
                            2 * k + 1
                        )))
                    }
                    Value::Timestamp(_) => match to_json(&pair[0], types[2 * k])? {
                        Json::String(s) => s,
                        other => other.to_string(),
                    },
                    key => key.to_string(),
                };
                pairs.push((key, to_json(&pair[1], types[2 * k + 1])?));
            }
            output(Json::Object(pairs), out)?
        }
        JsonFunc::BuildArray => {
            let items = vals
                .iter()
                .zip(types)
                .map(|(v, t)| to_json(v, *t))
                .collect::<ExecResult<_>>()?;
            output(Json::Array(items), out)?
        }
        JsonFunc::ToJson => match (&vals[0], t0) {
            (Value::Null, _) => Value::Null,
            // json to json keeps its text.
            (Value::Text(s), DataType::Json) if out == DataType::Json => Value::Text(s.clone()),
            (v, t) => output(to_json(v, t)?, out)?,
        },
        JsonFunc::Pretty => Value::Text(binary(&vals[0])?.pretty()),
        JsonFunc::SrfCount(k) => {
            let (kind, as_text) = k.expand_args();
            Value::Integer(expand(text(&vals[0]), t0, kind, as_text)?.len() as i32)
        }
        JsonFunc::SrfItem(k) => {
            let (kind, as_text) = k.expand_args();
            let rows = expand(text(&vals[0]), t0, kind, as_text)?;
            let n = match &vals[1] {
                Value::Integer(n) => *n as usize,
                _ => 0,
            };
            n.checked_sub(1)
                .and_then(|i| rows.into_iter().nth(i))
                .and_then(|r| r.into_iter().next())
                .unwrap_or(Value::Null)
        }
        JsonFunc::StripNulls => match read(text(&vals[0]), t0)? {
            Arg::Binary(j) => Value::Text(j.strip_nulls().to_string()),
            Arg::Text(s) => Value::Text(compact(&json::parse(s).map_err(corrupt)?.strip_nulls())),
        },
    })
}

/// The rows of a set-returning json function of one value of type `t`:
/// `elements` (an array's elements), `each` (an object's keys and values),
/// `keys` (an object's keys); `as_text` gives values as `->>` does.
pub fn expand(s: &str, t: DataType, kind: &str, as_text: bool) -> ExecResult<Vec<Vec<Value>>> {
    let name = if t == DataType::Json { "json" } else { "jsonb" };
    // json_array_elements passes its elements' text on undecoded; the others
    // decode keys or values, as PostgreSQL's do.
    let tree = if kind == "elements" && !as_text {
        json::parse_lenient(s)
    } else {
        json::parse(s)
    };
    let (object, array) = match tree.map_err(corrupt)? {
        Json::Object(_) => (true, false),
        Json::Array(_) => (false, true),
        _ => (false, false),
    };
    let value = |raw: &str| -> ExecResult<Value> {
        if t == DataType::Json {
            return if as_text {
                raw_as_text(raw)
            } else {
                Ok(Value::Text(raw.to_string()))
            };
        }
        let j = json::jsonb_value(raw).map_err(corrupt)?;
        Ok(if as_text {
            j.as_text().map_or(Value::Null, Value::Text)
        } else {
            Value::Text(j.to_string())
        })
    };
    let kids = json::raw_children(s).map_err(corrupt)?.unwrap_or_default();
    match kind {
        "elements" if array => kids.iter().map(|(_, v)| Ok(vec![value(v)?])).collect(),
        "elements" if object => Err(invalid("cannot extract elements from an object")),
        "elements" => Err(invalid("cannot extract elements from a scalar")),
        "each" if object => kids
            .iter()
            .map(|(k, v)| Ok(vec![Value::Text(k.clone().unwrap_or_default()), value(v)?]))
            .collect(),
        "each" => Err(invalid(format!(
            "cannot call {name}_each{} on a non-object",
            if as_text { "_text" } else { "" }
        ))),
        _ if object => Ok(kids
            .iter()
            .map(|(k, _)| vec![Value::Text(k.clone().unwrap_or_default())])
            .collect()),
        _ => Err(invalid(format!(
            "cannot call {name}_object_keys on {}",
            if array { "an array" } else { "a scalar" }
        ))),
    }
}
