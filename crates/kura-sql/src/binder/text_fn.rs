//! Binding of the everyday string functions (`kura_exec::expr::text`):
//! `left`, `right`, `lpad`, `rpad`, `reverse`, `strpos`, `concat`,
//! `concat_ws`, `initcap`, `starts_with`, `translate`, `ascii`, `chr`, `to_hex`.

use kura_common::DataType;
use kura_exec::expr::text::TextFunc;
use kura_exec::expr::{PhysExpr, ScalarFunc};

use super::types::{coerce, fold, is_untyped_literal, is_untyped_null};
use super::vocab::no_such;
use super::Binder;
use crate::error::{Pos, SqlResult};

const TEXT: DataType = DataType::Varchar(None);

/// An argument's kind in a signature.
#[derive(Clone, Copy)]
enum Arg {
    Text,
    Int,
}

/// `e` as an argument of kind `k`, or `None` when it is not one.
fn argument(e: PhysExpr, k: Arg, p: Pos) -> SqlResult<Option<PhysExpr>> {
    let t = e.data_type();
    Ok(match k {
        Arg::Text if t.is_text() || is_untyped_literal(&e) => Some(coerce(e, TEXT, p)?),
        Arg::Int if t.is_integer() || is_untyped_null(&e) => Some(coerce(e, DataType::BigInt, p)?),
        _ => None,
    })
}

/// A call of `f`, folded when its arguments are constants.
pub(super) fn text_call(f: TextFunc, args: Vec<PhysExpr>, data_type: DataType) -> PhysExpr {
    fold(PhysExpr::Func {
        func: ScalarFunc::Text(f),
        args,
        data_type,
    })
}

impl Binder<'_> {
    /// `name(args)` for one of the functions of `TextFunc`.
    pub(super) fn bind_text_fn(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        use Arg::{Int, Text};
        if matches!(name, "concat" | "concat_ws") {
            return self.bind_concat(name, args, p);
        }
        let (f, out, shapes): (TextFunc, DataType, &[&[Arg]]) = match name {
            "left" => (TextFunc::Left, TEXT, &[&[Text, Int]]),
            "right" => (TextFunc::Right, TEXT, &[&[Text, Int]]),
            "lpad" => (TextFunc::Lpad, TEXT, &[&[Text, Int], &[Text, Int, Text]]),
            "rpad" => (TextFunc::Rpad, TEXT, &[&[Text, Int], &[Text, Int, Text]]),
            "reverse" => (TextFunc::Reverse, TEXT, &[&[Text]]),
            "strpos" => (TextFunc::Strpos, DataType::Integer, &[&[Text, Text]]),
            "initcap" => (TextFunc::Initcap, TEXT, &[&[Text]]),
            "starts_with" => (TextFunc::StartsWith, DataType::Boolean, &[&[Text, Text]]),
            "translate" => (TextFunc::Translate, TEXT, &[&[Text, Text, Text]]),
            "ascii" => (TextFunc::Ascii, DataType::Integer, &[&[Text]]),
            "chr" => (TextFunc::Chr, TEXT, &[&[Int]]),
            "to_hex" => (TextFunc::ToHex, TEXT, &[&[Int]]),
            _ => return Err(no_such(name, &args, p)),
        };
        let Some(shape) = shapes.iter().find(|s| s.len() == args.len()) else {
            return Err(no_such(name, &args, p));
        };
        let mut bound = Vec::with_capacity(args.len());
        for (a, k) in args.iter().zip(shape.iter()) {
            let t = match k {
                Text => TEXT,
                Int => DataType::Integer,
            };
            let a = self.type_param(a.clone(), t);
            match argument(a, *k, p)? {
                Some(x) => bound.push(x),
                None => return Err(no_such(name, &args, p)),
            }
        }
        // to_hex prints the two's complement of the argument's own width.
        if f == TextFunc::ToHex {
            bound[0] = coerce(args[0].clone(), narrowest_int(&args[0]), p)?;
        }
        Ok(text_call(f, bound, out))
    }

    /// `concat(any, ...)` and `concat_ws(sep, any, ...)`: each argument as its
    /// text (booleans as `t`/`f`, PostgreSQL's output form).
    fn bind_concat(&mut self, name: &str, args: Vec<PhysExpr>, p: Pos) -> SqlResult<PhysExpr> {
        if args.is_empty() || (name == "concat_ws" && args.len() < 2) {
            return Err(no_such(name, &args, p));
        }
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            let a = self.type_param(a, TEXT);
            let t = a.data_type();
            bound.push(if t == DataType::Boolean || t.is_text() {
                a
            } else {
                coerce(a, TEXT, p)?
            });
        }
        let f = if name == "concat" {
            TextFunc::Concat
        } else {
            TextFunc::ConcatWs
        };
        Ok(text_call(f, bound, TEXT))
    }
}

/// The integer type `to_hex` reads `e` as: a bigint stays one, anything else
/// (integer, smallint, an untyped NULL) is an integer.
fn narrowest_int(e: &PhysExpr) -> DataType {
    if e.data_type() == DataType::BigInt && !is_untyped_null(e) {
        DataType::BigInt
    } else {
        DataType::Integer
    }
}
