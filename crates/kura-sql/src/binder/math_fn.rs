//! Binding of the mathematical functions (`kura_exec::expr::math`) with
//! PostgreSQL's types: `floor`, `ceil`, `trunc` and `sign` keep a numeric
//! argument numeric (scale 0, or trunc's digits) and give double precision
//! for the others; the transcendental functions, `power` (and `^`) and the
//! trigonometric ones give double precision — also for numeric arguments,
//! where PostgreSQL computes a numeric (DuckDB, too, gives a double);
//! `gcd`/`lcm` keep integers; `mod(a, b)` is `a % b`.

use kura_common::{DataType, Value};
use kura_exec::expr::math::MathFunc;
use kura_exec::expr::{BinaryOp, PhysExpr, ScalarFunc};

use super::types::{coerce, fold, is_null_literal, is_untyped_literal};
use super::vocab::no_such;
use super::Binder;
use crate::error::{Pos, SqlError, SqlResult};

/// The function of a name and argument count, with how many arguments it takes.
fn function(name: &str, args: usize) -> Option<MathFunc> {
    use MathFunc as M;
    Some(match (name, args) {
        ("floor", 1) => M::Floor,
        ("ceil" | "ceiling", 1) => M::Ceil,
        ("trunc", 1 | 2) => M::Trunc,
        ("sign", 1) => M::Sign,
        ("sqrt", 1) => M::Sqrt,
        ("cbrt", 1) => M::Cbrt,
        ("exp", 1) => M::Exp,
        ("ln", 1) => M::Ln,
        ("log" | "log10", 1) => M::Log10,
        ("log", 2) => M::LogBase,
        ("power" | "pow", 2) => M::Power,
        ("sin", 1) => M::Sin,
        ("cos", 1) => M::Cos,
        ("tan", 1) => M::Tan,
        ("cot", 1) => M::Cot,
        ("asin", 1) => M::Asin,
        ("acos", 1) => M::Acos,
        ("atan", 1) => M::Atan,
        ("atan2", 2) => M::Atan2,
        ("degrees", 1) => M::Degrees,
        ("radians", 1) => M::Radians,
        ("pi", 0) => M::Pi,
        ("gcd", 2) => M::Gcd,
        ("lcm", 2) => M::Lcm,
        ("width_bucket", 4) => M::WidthBucket,
        _ => return None,
    })
}

/// A number argument: an untyped literal or NULL reads as `untyped`
/// (double precision, PostgreSQL's preferred numeric type, or integer where
/// only integers are taken); `None` when it is no number.
fn number(e: PhysExpr, untyped_as: DataType, p: Pos) -> SqlResult<Option<PhysExpr>> {
    if is_untyped_literal(&e) {
        return coerce(e, untyped_as, p).map(Some);
    }
    Ok(e.data_type().is_numeric().then_some(e))
}

fn call(f: MathFunc, args: Vec<PhysExpr>, data_type: DataType) -> PhysExpr {
    if args.iter().any(is_null_literal) {
        return PhysExpr::literal(Value::Null, data_type);
    }
    fold(PhysExpr::Func {
        func: ScalarFunc::Math(f),
        args,
        data_type,
    })
}

impl Binder<'_> {
    /// `name(args)` for one of [`NAMES`].
    pub(super) fn bind_math(
        &mut self,
        name: &str,
        args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        // A parameter takes the type the function takes there.
        let args: Vec<PhysExpr> = args
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                let integer = matches!(
                    (name, i),
                    ("gcd" | "lcm", _) | ("width_bucket", 3) | ("trunc", 1)
                );
                let t = if integer {
                    DataType::Integer
                } else {
                    DataType::Double
                };
                self.type_param(a, t)
            })
            .collect();
        if name == "mod" {
            let [a, b] =
                <[PhysExpr; 2]>::try_from(args.clone()).map_err(|_| no_such(name, &args, p))?;
            return self.arithmetic(BinaryOp::Mod, a, b, p);
        }
        let Some(f) = function(name, args.len()) else {
            return Err(no_such(name, &args, p));
        };
        let untyped_as = match f {
            MathFunc::Gcd | MathFunc::Lcm => DataType::Integer,
            _ => DataType::Double,
        };
        let typed = args
            .iter()
            .map(|a| number(a.clone(), untyped_as, p))
            .collect::<SqlResult<Option<Vec<_>>>>()?;
        let Some(mut args) = typed else {
            return Err(no_such(name, &args, p));
        };
        match f {
            MathFunc::Floor | MathFunc::Ceil | MathFunc::Sign | MathFunc::Trunc => {
                self.bind_rounding(f, name, args, p)
            }
            MathFunc::Gcd | MathFunc::Lcm => {
                // Integers stay integers; with a numeric both are numerics
                // of the larger scale; there is none of double precision.
                let types: Vec<DataType> = args.iter().map(|a| a.data_type()).collect();
                let t = if types.contains(&DataType::Double) {
                    return Err(no_such(name, &args, p));
                } else if types.iter().all(|t| t.is_integer()) {
                    if types.contains(&DataType::BigInt) {
                        DataType::BigInt
                    } else {
                        DataType::Integer
                    }
                } else {
                    let scale = types
                        .iter()
                        .map(|t| match t {
                            DataType::Decimal { scale, .. } => *scale,
                            _ => 0,
                        })
                        .max()
                        .unwrap_or(0);
                    DataType::Decimal {
                        precision: 38,
                        scale,
                    }
                };
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, t, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                Ok(call(f, args, t))
            }
            MathFunc::WidthBucket => {
                if !args[3].data_type().is_integer() {
                    return Err(no_such(name, &args, p));
                }
                args[3] = coerce(args[3].clone(), DataType::Integer, p)?;
                Ok(call(f, args, DataType::Integer))
            }
            _ => {
                let args = args
                    .into_iter()
                    .map(|a| coerce(a, DataType::Double, p))
                    .collect::<SqlResult<Vec<_>>>()?;
                Ok(call(f, args, DataType::Double))
            }
        }
    }

    /// `floor`, `ceil`, `sign`, `trunc`: exact on numeric, double otherwise
    /// (PostgreSQL resolves an integer to the double precision function).
    fn bind_rounding(
        &mut self,
        f: MathFunc,
        name: &str,
        mut args: Vec<PhysExpr>,
        p: Pos,
    ) -> SqlResult<PhysExpr> {
        let t = args[0].data_type();
        if args.len() == 2 {
            // trunc(numeric, digits): an integer is taken as numeric.
            let digits = match &args[1] {
                PhysExpr::Literal {
                    value: Value::Integer(d),
                    data_type,
                } if data_type.is_integer() => *d,
                a if !a.data_type().is_integer() => return Err(no_such(name, &args, p)),
                _ => return Err(SqlError::unsupported("trunc with non-constant digits", p)),
            };
            if !(0..=30).contains(&digits) {
                return Err(SqlError::unsupported(
                    "trunc to negative digits or more than 30",
                    p,
                ));
            }
            let precision = match t {
                DataType::Decimal { precision, scale } => precision.saturating_sub(scale),
                DataType::Double => return Err(no_such(name, &args, p)),
                _ => 19,
            };
            let d = digits as u8;
            let out = DataType::Decimal {
                precision: (precision + d).clamp(1, 38),
                scale: d,
            };
            args.truncate(1);
            args[0] = match t {
                DataType::Decimal { .. } => args[0].clone(),
                _ => coerce(
                    args[0].clone(),
                    DataType::Decimal {
                        precision: 19,
                        scale: 0,
                    },
                    p,
                )?,
            };
            return Ok(call(f, args, out));
        }
        let out = match t {
            DataType::Decimal { precision, .. } => DataType::Decimal {
                precision,
                scale: 0,
            },
            _ => DataType::Double,
        };
        if out == DataType::Double {
            args[0] = coerce(args[0].clone(), DataType::Double, p)?;
        }
        Ok(call(f, args, out))
    }
}
