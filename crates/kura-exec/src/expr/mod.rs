//! Physical scalar expressions: typed trees over the columns of a batch, evaluated a
//! whole vector at a time (DESIGN.md "vectorized").

mod arith;
mod arith_narrow;
mod array;
pub mod binary;
mod bitwise;
pub mod budget;
mod cast;
mod compare;
pub mod conjuncts;
pub mod date_field;
mod eval;
mod func;
mod func_format;
mod func_text;
pub mod interval;
pub mod json;
pub mod like;
pub mod math;
pub mod pg;
pub mod pg_types;
mod predicate;
pub mod registry;
mod row_kernel;
mod select;
pub mod sequence;
pub mod text;

pub use cast::{array_elements, array_from_text, elements_of};
pub use cast::{assign_vector, cast_typed, cast_value, cast_vector};
pub use like::LikePattern;
pub use predicate::{eval_predicate, selection_of};
pub use select::keep_rows;
pub use sequence::{SeqOp, SeqRef, SequenceSource};

use std::fmt;

use kura_common::{DataType, Value};

/// Binary operators after binding (operand types already unified by the planner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Concat,
    /// `IS NOT DISTINCT FROM`: equality under which NULL equals NULL; never NULL.
    NotDistinct,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
        )
    }

    /// `a op b` ⇔ `b op' a`.
    pub fn flip(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            o => o,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Concat => "||",
            BinaryOp::NotDistinct => "IS NOT DISTINCT FROM",
        }
    }
}

/// Scalar functions the engine evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarFunc {
    ExtractYear,
    ExtractMonth,
    ExtractDay,
    /// `substring(s, from, for?)`, 1-based, in characters.
    Substring,
    Upper,
    Lower,
    Length,
    Abs,
    /// `round(x, digits?)` half away from zero.
    Round,
    /// First non-NULL argument.
    Coalesce,
    /// `date + n days` with `n` an integer argument.
    AddDays,
    /// `date + n months` (PostgreSQL day clamping).
    AddMonths,
    /// `trim(both ' ' from s)`.
    Trim,
    /// `repeat(s, n)`: `s` written `n` times (empty for `n <= 0`).
    Repeat,
    /// `s ~ pattern` (see [`pg`]).
    RegexMatch,
    /// `s ~* pattern`, ignoring case.
    RegexIMatch,
    /// `format_type(type_oid, typmod)`.
    FormatType,
    /// `'name'::regtype`: a type's OID from its name.
    RegtypeIn,
    /// `to_regtype('name')`: as `RegtypeIn`, NULL for an unknown name.
    ToRegtype,
    /// `pg_size_pretty(bytes)`.
    SizePretty,
    /// `pg_get_function_arguments(oid)` / `pg_get_function_result(oid)`:
    /// a `pg_proc` signature's types, from the function list (`registry`).
    FunctionArguments,
    FunctionResult,
    /// `replace(s, from, to)`.
    Replace,
    /// `quote_ident(s)`.
    QuoteIdent,
    /// `extract(hour|minute FROM timestamp)`, an integer.
    ExtractHour,
    ExtractMinute,
    /// `extract(second FROM timestamp)` with its fraction, `DECIMAL(8,6)`.
    ExtractSecond,
    /// `date_trunc(unit, timestamp)` with a constant unit.
    DateTrunc,
    /// `timestamp + months + microseconds` (an interval's parts, constants).
    AddInterval,
    /// `greatest(...)` / `least(...)`: NULLs skipped.
    Greatest,
    Least,
    /// `split_part(s, delimiter, n)`.
    SplitPart,
    /// `random()`: a double in [0, 1), drawn anew for every row.
    Random,
    /// `regexp_replace(s, pattern, replacement [, flags])`.
    RegexpReplace,
    /// `regexp_match(s, pattern [, flags])`: the first match's groups as text[].
    RegexpMatch,
    /// `to_char(timestamp | number, template)`.
    ToChar,
    /// `to_date(text, template)`, `to_timestamp(text, template)`.
    ToDate,
    ToTimestamp,
    /// `ARRAY[a, b, ...]`: the arguments, of the element type, as an array.
    MakeArray,
    /// `x op ANY(array)` / `x op ALL(array)` for a comparison `op`, with
    /// PostgreSQL's NULL rules (see `array`).
    ArrayAny(BinaryOp),
    ArrayAll(BinaryOp),
    /// `array[i]`, 1-based; NULL outside the array.
    ArraySubscript,
    /// `array_length(a, dim)`, `array_upper(a, dim)`, `array_lower(a, dim)`.
    ArrayLength,
    ArrayUpper,
    ArrayLower,
    /// `cardinality(a)`: the number of elements, 0 for an empty array.
    Cardinality,
    /// `array_to_string(a, sep [, null_text])`.
    ArrayToString,
    /// `string_to_array(s, sep [, null_text])`, a text array.
    StringToArray,
    /// `array_append(a, x)`, `array_prepend(x, a)`, `array_cat(a, b)`.
    ArrayAppend,
    ArrayPrepend,
    ArrayCat,
    /// `array_position(a, x)`: the first index holding `x` (NULL matches NULL).
    ArrayPosition,
    /// A record of its (text) arguments in PostgreSQL's text form,
    /// `(3,"a b",)` (see `kura_common::record`).
    RecordText,
    /// Field `k` (1-based) of a record's text form, as text.
    RecordField,
    /// The bitwise operators on integers: `a & b`, `a | b`, `a # b`, `~a`,
    /// `a << n`, `a >> n` (see `bitwise`).
    BitAnd,
    BitOr,
    BitXor,
    BitNot,
    ShiftLeft,
    ShiftRight,
    /// `ltrim(s, chars)`, `rtrim(s, chars)`, `btrim(s, chars)`: the longest
    /// run of `chars` removed from the start, the end, or both.
    LTrim,
    RTrim,
    BTrim,
    /// A mathematical function (see `math`).
    Math(math::MathFunc),
    /// A function of uuid or bytea values (see `binary`).
    Binary(binary::BinaryFunc),
    /// A function or operator of interval values (see `interval`).
    Interval(interval::IntervalFunc),
    /// An operator or function of json or jsonb values (see `json`).
    Json(json::JsonFunc),
    /// One of the everyday string functions (see `text`).
    Text(text::TextFunc),
    /// A field of a date or timestamp beyond year/month/day/hour/minute/second
    /// (see `date_field`).
    DateField(date_field::DateField),
}

impl ScalarFunc {
    /// Whether the `array` kernels evaluate this function.
    pub fn is_array(self) -> bool {
        matches!(
            self,
            ScalarFunc::MakeArray
                | ScalarFunc::ArrayAny(_)
                | ScalarFunc::ArrayAll(_)
                | ScalarFunc::ArraySubscript
                | ScalarFunc::ArrayLength
                | ScalarFunc::ArrayUpper
                | ScalarFunc::ArrayLower
                | ScalarFunc::Cardinality
                | ScalarFunc::ArrayToString
                | ScalarFunc::StringToArray
                | ScalarFunc::ArrayAppend
                | ScalarFunc::ArrayPrepend
                | ScalarFunc::ArrayCat
                | ScalarFunc::ArrayPosition
        )
    }
}

impl ScalarFunc {
    pub fn name(self) -> &'static str {
        match self {
            ScalarFunc::ExtractYear => "extract_year",
            ScalarFunc::ExtractMonth => "extract_month",
            ScalarFunc::ExtractDay => "extract_day",
            ScalarFunc::Substring => "substring",
            ScalarFunc::Upper => "upper",
            ScalarFunc::Lower => "lower",
            ScalarFunc::Length => "length",
            ScalarFunc::Abs => "abs",
            ScalarFunc::Round => "round",
            ScalarFunc::Coalesce => "coalesce",
            ScalarFunc::AddDays => "add_days",
            ScalarFunc::AddMonths => "add_months",
            ScalarFunc::Trim => "trim",
            ScalarFunc::Repeat => "repeat",
            ScalarFunc::RegexMatch => "regex_match",
            ScalarFunc::RegexIMatch => "regex_imatch",
            ScalarFunc::FormatType => "format_type",
            ScalarFunc::RegtypeIn => "regtype_in",
            ScalarFunc::ToRegtype => "to_regtype",
            ScalarFunc::SizePretty => "pg_size_pretty",
            ScalarFunc::FunctionArguments => "pg_get_function_arguments",
            ScalarFunc::FunctionResult => "pg_get_function_result",
            ScalarFunc::Replace => "replace",
            ScalarFunc::QuoteIdent => "quote_ident",
            ScalarFunc::ExtractHour => "extract_hour",
            ScalarFunc::ExtractMinute => "extract_minute",
            ScalarFunc::ExtractSecond => "extract_second",
            ScalarFunc::DateTrunc => "date_trunc",
            ScalarFunc::AddInterval => "add_interval",
            ScalarFunc::Greatest => "greatest",
            ScalarFunc::Least => "least",
            ScalarFunc::SplitPart => "split_part",
            ScalarFunc::Random => "random",
            ScalarFunc::RegexpReplace => "regexp_replace",
            ScalarFunc::RegexpMatch => "regexp_match",
            ScalarFunc::ToChar => "to_char",
            ScalarFunc::ToDate => "to_date",
            ScalarFunc::ToTimestamp => "to_timestamp",
            ScalarFunc::MakeArray => "array",
            ScalarFunc::ArrayAny(_) => "any",
            ScalarFunc::ArrayAll(_) => "all",
            ScalarFunc::ArraySubscript => "array_subscript",
            ScalarFunc::ArrayLength => "array_length",
            ScalarFunc::ArrayUpper => "array_upper",
            ScalarFunc::ArrayLower => "array_lower",
            ScalarFunc::Cardinality => "cardinality",
            ScalarFunc::ArrayToString => "array_to_string",
            ScalarFunc::StringToArray => "string_to_array",
            ScalarFunc::ArrayAppend => "array_append",
            ScalarFunc::ArrayPrepend => "array_prepend",
            ScalarFunc::ArrayCat => "array_cat",
            ScalarFunc::ArrayPosition => "array_position",
            ScalarFunc::RecordText => "record",
            ScalarFunc::RecordField => "record_field",
            ScalarFunc::BitAnd => "&",
            ScalarFunc::BitOr => "|",
            ScalarFunc::BitXor => "#",
            ScalarFunc::BitNot => "~",
            ScalarFunc::ShiftLeft => "<<",
            ScalarFunc::ShiftRight => ">>",
            ScalarFunc::LTrim => "ltrim",
            ScalarFunc::RTrim => "rtrim",
            ScalarFunc::BTrim => "btrim",
            ScalarFunc::Math(f) => f.name(),
            ScalarFunc::Binary(f) => f.name(),
            ScalarFunc::Text(f) => f.name(),
            ScalarFunc::DateField(f) => f.name(),
            ScalarFunc::Interval(f) => f.name(),
            ScalarFunc::Json(f) => f.name(),
        }
    }
}

/// A typed expression over the columns of its input batch.
#[derive(Debug, Clone, PartialEq)]
pub enum PhysExpr {
    Column {
        index: usize,
        data_type: DataType,
    },
    Literal {
        value: Value,
        data_type: DataType,
    },
    Binary {
        op: BinaryOp,
        left: Box<PhysExpr>,
        right: Box<PhysExpr>,
        data_type: DataType,
    },
    Not(Box<PhysExpr>),
    Negate(Box<PhysExpr>),
    IsNull {
        expr: Box<PhysExpr>,
        negated: bool,
    },
    Cast {
        expr: Box<PhysExpr>,
        to: DataType,
    },
    Case {
        whens: Vec<(PhysExpr, PhysExpr)>,
        otherwise: Option<Box<PhysExpr>>,
        data_type: DataType,
    },
    InList {
        expr: Box<PhysExpr>,
        list: Vec<Value>,
        negated: bool,
    },
    Like {
        expr: Box<PhysExpr>,
        pattern: LikePattern,
        negated: bool,
    },
    Func {
        func: ScalarFunc,
        args: Vec<PhysExpr>,
        data_type: DataType,
    },
    /// `nextval`, `currval`, `setval` (BIGINT; volatile).
    Sequence {
        seq: SeqRef,
        op: SeqOp,
        args: Vec<PhysExpr>,
    },
}

impl PhysExpr {
    pub fn data_type(&self) -> DataType {
        match self {
            PhysExpr::Column { data_type, .. }
            | PhysExpr::Literal { data_type, .. }
            | PhysExpr::Binary { data_type, .. }
            | PhysExpr::Case { data_type, .. }
            | PhysExpr::Func { data_type, .. } => *data_type,
            PhysExpr::Not(_)
            | PhysExpr::IsNull { .. }
            | PhysExpr::InList { .. }
            | PhysExpr::Like { .. } => DataType::Boolean,
            PhysExpr::Negate(e) => e.data_type(),
            PhysExpr::Cast { to, .. } => *to,
            PhysExpr::Sequence { .. } => DataType::BigInt,
        }
    }

    /// True when evaluating it twice may give different values or has an
    /// effect (a sequence function): it is never folded or evaluated once
    /// for many rows.
    pub fn is_volatile(&self) -> bool {
        match self {
            PhysExpr::Sequence { .. } => true,
            PhysExpr::Func {
                func: ScalarFunc::Random | ScalarFunc::Binary(binary::BinaryFunc::RandomUuid),
                ..
            } => true,
            PhysExpr::Column { .. } | PhysExpr::Literal { .. } => false,
            PhysExpr::Binary { left, right, .. } => left.is_volatile() || right.is_volatile(),
            PhysExpr::Not(e) | PhysExpr::Negate(e) => e.is_volatile(),
            PhysExpr::IsNull { expr, .. }
            | PhysExpr::Cast { expr, .. }
            | PhysExpr::InList { expr, .. }
            | PhysExpr::Like { expr, .. } => expr.is_volatile(),
            PhysExpr::Case {
                whens, otherwise, ..
            } => {
                whens
                    .iter()
                    .any(|(w, t)| w.is_volatile() || t.is_volatile())
                    || otherwise.as_ref().is_some_and(|o| o.is_volatile())
            }
            PhysExpr::Func { args, .. } => args.iter().any(PhysExpr::is_volatile),
        }
    }

    pub fn column(index: usize, data_type: DataType) -> PhysExpr {
        PhysExpr::Column { index, data_type }
    }

    pub fn literal(value: Value, data_type: DataType) -> PhysExpr {
        PhysExpr::Literal { value, data_type }
    }

    /// This node with each direct child replaced by `f(child)`; leaves (columns,
    /// literals) cloned. Rewrites written over it recurse only where they act.
    pub fn map_children(&self, f: &mut dyn FnMut(&PhysExpr) -> PhysExpr) -> PhysExpr {
        use PhysExpr as P;
        let mut boxed = |x: &PhysExpr| Box::new(f(x));
        match self {
            P::Column { .. } | P::Literal { .. } => self.clone(),
            P::Binary {
                op,
                left,
                right,
                data_type,
            } => P::Binary {
                op: *op,
                left: boxed(left),
                right: boxed(right),
                data_type: *data_type,
            },
            P::Not(x) => P::Not(boxed(x)),
            P::Negate(x) => P::Negate(boxed(x)),
            P::IsNull { expr, negated } => P::IsNull {
                expr: boxed(expr),
                negated: *negated,
            },
            P::Cast { expr, to } => P::Cast {
                expr: boxed(expr),
                to: *to,
            },
            P::Case {
                whens,
                otherwise,
                data_type,
            } => P::Case {
                whens: whens.iter().map(|(w, t)| (f(w), f(t))).collect(),
                otherwise: otherwise.as_ref().map(|o| Box::new(f(o))),
                data_type: *data_type,
            },
            P::InList {
                expr,
                list,
                negated,
            } => P::InList {
                expr: boxed(expr),
                list: list.clone(),
                negated: *negated,
            },
            P::Like {
                expr,
                pattern,
                negated,
            } => P::Like {
                expr: boxed(expr),
                pattern: pattern.clone(),
                negated: *negated,
            },
            P::Func {
                func,
                args,
                data_type,
            } => P::Func {
                func: *func,
                args: args.iter().map(f).collect(),
                data_type: *data_type,
            },
            P::Sequence { seq, op, args } => P::Sequence {
                seq: seq.clone(),
                op: *op,
                args: args.iter().map(f).collect(),
            },
        }
    }

    /// Column indexes this expression reads.
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            PhysExpr::Column { index, .. } => out.push(*index),
            PhysExpr::Literal { .. } => {}
            PhysExpr::Binary { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
            PhysExpr::Not(e) | PhysExpr::Negate(e) => e.columns(out),
            PhysExpr::IsNull { expr, .. }
            | PhysExpr::Cast { expr, .. }
            | PhysExpr::InList { expr, .. }
            | PhysExpr::Like { expr, .. } => expr.columns(out),
            PhysExpr::Case {
                whens, otherwise, ..
            } => {
                for (w, t) in whens {
                    w.columns(out);
                    t.columns(out);
                }
                if let Some(o) = otherwise {
                    o.columns(out);
                }
            }
            PhysExpr::Func { args, .. } | PhysExpr::Sequence { args, .. } => {
                args.iter().for_each(|a| a.columns(out))
            }
        }
    }
}

impl fmt::Display for PhysExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysExpr::Column { index, .. } => write!(f, "#{index}"),
            PhysExpr::Literal {
                value: Value::Null, ..
            } => write!(f, "NULL"),
            PhysExpr::Literal {
                value: Value::Text(s),
                ..
            } => write!(f, "'{s}'"),
            PhysExpr::Literal {
                value: Value::Date(_),
                ..
            } => write!(f, "DATE '{}'", self_value(self)),
            PhysExpr::Literal { value, .. } => write!(f, "{value}"),
            PhysExpr::Binary {
                op, left, right, ..
            } => write!(f, "({left} {} {right})", op.symbol()),
            PhysExpr::Not(e) => write!(f, "NOT {e}"),
            PhysExpr::Negate(e) => write!(f, "-{e}"),
            PhysExpr::IsNull { expr, negated } => {
                write!(f, "{expr} IS {}NULL", if *negated { "NOT " } else { "" })
            }
            PhysExpr::Cast { expr, to } => write!(f, "CAST({expr} AS {to})"),
            PhysExpr::Case {
                whens, otherwise, ..
            } => {
                write!(f, "CASE")?;
                for (w, t) in whens {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(o) = otherwise {
                    write!(f, " ELSE {o}")?;
                }
                write!(f, " END")
            }
            PhysExpr::InList {
                expr,
                list,
                negated,
            } => {
                let items: Vec<String> = list.iter().map(|v| v.to_string()).collect();
                write!(
                    f,
                    "{expr} {}IN ({})",
                    if *negated { "NOT " } else { "" },
                    items.join(", ")
                )
            }
            PhysExpr::Like {
                expr,
                pattern,
                negated,
            } => {
                write!(
                    f,
                    "{expr} {}LIKE '{}'",
                    if *negated { "NOT " } else { "" },
                    pattern.source()
                )
            }
            PhysExpr::Func { func, args, .. } => {
                let a: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                write!(f, "{}({})", func.name(), a.join(", "))
            }
            PhysExpr::Sequence { seq, op, args } => {
                let a: Vec<String> = std::iter::once(format!("'{}'", seq.0.name()))
                    .chain(args.iter().map(|a| a.to_string()))
                    .collect();
                write!(f, "{}({})", op.name(), a.join(", "))
            }
        }
    }
}

fn self_value(e: &PhysExpr) -> String {
    match e {
        PhysExpr::Literal { value, .. } => value.to_string(),
        _ => String::new(),
    }
}

/// Text without trailing blanks (the form CHAR(n) values compare and hash in).
pub fn compare_trim(s: &[u8]) -> &[u8] {
    compare::trim_blanks(s)
}

/// Materialises a batch's selection (column-less batches keep their row count).
pub fn compact_batch(b: kura_common::Batch) -> kura_common::Batch {
    eval::compact(b)
}

/// Integer-like vector values widened to i128 (at the vector's own scale).
pub fn ints_of(v: &kura_common::Vector) -> Vec<i128> {
    arith::to_i128(v)
}

/// A vector of type `dt` from i128 values already at `dt`'s scale.
pub fn from_i128_vector(
    vals: Vec<i128>,
    validity: Option<Vec<bool>>,
    dt: kura_common::DataType,
) -> crate::error::ExecResult<kura_common::Vector> {
    arith::from_i128(vals, validity, dt)
}

/// Numeric vector values as f64.
pub fn floats_of(v: &kura_common::Vector) -> Vec<f64> {
    arith::to_f64(v)
}

/// [`floats_of`] without a copy when the vector already holds doubles.
pub fn floats_view(v: &kura_common::Vector) -> std::borrow::Cow<'_, [f64]> {
    arith::f64_view(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(index: usize) -> PhysExpr {
        PhysExpr::Column {
            index,
            data_type: DataType::Integer,
        }
    }

    /// Renumbers every column by `f`, through `map_children` only.
    fn renumber(e: &PhysExpr, f: &dyn Fn(usize) -> usize) -> PhysExpr {
        match e {
            PhysExpr::Column { index, data_type } => PhysExpr::Column {
                index: f(*index),
                data_type: *data_type,
            },
            _ => e.map_children(&mut |c| renumber(c, f)),
        }
    }

    #[test]
    fn map_children_reaches_every_child_of_every_node() {
        let b = |x: PhysExpr| Box::new(x);
        let tree = PhysExpr::Case {
            whens: vec![(
                PhysExpr::Binary {
                    op: BinaryOp::Eq,
                    left: b(column(0)),
                    right: b(PhysExpr::Negate(b(column(1)))),
                    data_type: DataType::Boolean,
                },
                PhysExpr::Func {
                    func: ScalarFunc::Abs,
                    args: vec![PhysExpr::Cast {
                        expr: b(column(2)),
                        to: DataType::BigInt,
                    }],
                    data_type: DataType::BigInt,
                },
            )],
            otherwise: Some(b(PhysExpr::Not(b(PhysExpr::IsNull {
                expr: b(PhysExpr::InList {
                    expr: b(column(3)),
                    list: vec![Value::Integer(1)],
                    negated: false,
                }),
                negated: true,
            })))),
            data_type: DataType::BigInt,
        };
        let mut before = Vec::new();
        tree.columns(&mut before);
        assert_eq!(before, vec![0, 1, 2, 3]);
        let mut after = Vec::new();
        renumber(&tree, &|i| i + 10).columns(&mut after);
        assert_eq!(after, vec![10, 11, 12, 13]);
        assert_eq!(renumber(&tree, &|i| i), tree);
    }
}
