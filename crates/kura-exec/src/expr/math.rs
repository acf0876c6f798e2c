//! PostgreSQL's mathematical functions: `floor`, `ceil`, `trunc` and `sign`
//! exact on numeric and in double precision otherwise; `sqrt`, `cbrt`, `exp`,
//! `ln`, `log`, `power` (`^`), the trigonometric functions, `degrees`,
//! `radians` and `pi` in double precision; `gcd`/`lcm` on integers and
//! `width_bucket`. Arguments out of a function's domain raise PostgreSQL's
//! errors (2201E for logarithms, 2201F for roots and powers, 22003 when a
//! result overflows).

use kura_common::{DataType, Value, Vector};

use crate::error::{ExecError, ExecResult};

/// The functions this module evaluates (`ScalarFunc::Math`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathFunc {
    Floor,
    Ceil,
    /// `trunc(x [, digits])`: toward zero.
    Trunc,
    Sign,
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    Log10,
    /// `log(base, x)`.
    LogBase,
    Power,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    Degrees,
    Radians,
    Pi,
    Gcd,
    Lcm,
    /// `width_bucket(x, low, high, count)`.
    WidthBucket,
}

impl MathFunc {
    /// Its SQL name, for plans and messages.
    pub fn name(self) -> &'static str {
        match self {
            MathFunc::Floor => "floor",
            MathFunc::Ceil => "ceil",
            MathFunc::Trunc => "trunc",
            MathFunc::Sign => "sign",
            MathFunc::Sqrt => "sqrt",
            MathFunc::Cbrt => "cbrt",
            MathFunc::Exp => "exp",
            MathFunc::Ln => "ln",
            MathFunc::Log10 => "log",
            MathFunc::LogBase => "log",
            MathFunc::Power => "power",
            MathFunc::Sin => "sin",
            MathFunc::Cos => "cos",
            MathFunc::Tan => "tan",
            MathFunc::Cot => "cot",
            MathFunc::Asin => "asin",
            MathFunc::Acos => "acos",
            MathFunc::Atan => "atan",
            MathFunc::Atan2 => "atan2",
            MathFunc::Degrees => "degrees",
            MathFunc::Radians => "radians",
            MathFunc::Pi => "pi",
            MathFunc::Gcd => "gcd",
            MathFunc::Lcm => "lcm",
            MathFunc::WidthBucket => "width_bucket",
        }
    }

    /// Whether it may raise an error on some argument.
    pub fn may_fail(self) -> bool {
        !matches!(
            self,
            MathFunc::Floor
                | MathFunc::Ceil
                | MathFunc::Sign
                | MathFunc::Sin
                | MathFunc::Cos
                | MathFunc::Tan
                | MathFunc::Cot
                | MathFunc::Atan
                | MathFunc::Atan2
                | MathFunc::Degrees
                | MathFunc::Radians
                | MathFunc::Pi
        )
    }
}

fn domain(code: &'static str, message: &str) -> ExecError {
    ExecError::InvalidArgument {
        code,
        message: message.to_string(),
    }
}

/// A finite double, or PostgreSQL's overflow error.
fn finite(x: f64) -> ExecResult<f64> {
    if x.is_infinite() {
        return Err(domain("22003", "value out of range: overflow"));
    }
    Ok(x)
}

/// `f` of doubles.
fn double(f: MathFunc, a: &[f64]) -> ExecResult<f64> {
    let x = a.first().copied().unwrap_or(0.0);
    let y = a.get(1).copied().unwrap_or(0.0);
    let log = |x: f64, ln: fn(f64) -> f64| {
        if x == 0.0 {
            Err(domain("2201E", "cannot take logarithm of zero"))
        } else if x < 0.0 {
            Err(domain(
                "2201E",
                "cannot take logarithm of a negative number",
            ))
        } else {
            Ok(ln(x))
        }
    };
    let in_unit = |x: f64, g: fn(f64) -> f64| {
        if (-1.0..=1.0).contains(&x) || x.is_nan() {
            Ok(g(x))
        } else {
            Err(domain("22003", "input is out of range"))
        }
    };
    Ok(match f {
        MathFunc::Floor => x.floor(),
        MathFunc::Ceil => x.ceil(),
        MathFunc::Trunc => x.trunc(),
        MathFunc::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
        MathFunc::Sqrt if x < 0.0 => {
            return Err(domain(
                "2201F",
                "cannot take square root of a negative number",
            ))
        }
        MathFunc::Sqrt => x.sqrt(),
        MathFunc::Cbrt => x.cbrt(),
        MathFunc::Exp => finite(x.exp())?,
        MathFunc::Ln => log(x, f64::ln)?,
        MathFunc::Log10 => log(x, f64::log10)?,
        MathFunc::LogBase => {
            // log(base, x) = ln x / ln base; a base of 1 divides by zero.
            let (lb, lx) = (log(x, f64::ln)?, log(y, f64::ln)?);
            if lb == 0.0 {
                return Err(ExecError::DivisionByZero);
            }
            lx / lb
        }
        MathFunc::Power => {
            if x == 0.0 && y < 0.0 {
                return Err(domain(
                    "2201F",
                    "zero raised to a negative power is undefined",
                ));
            }
            if x < 0.0 && y.fract() != 0.0 {
                return Err(domain(
                    "2201F",
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            finite(x.powf(y))?
        }
        MathFunc::Sin => x.sin(),
        MathFunc::Cos => x.cos(),
        MathFunc::Tan => x.tan(),
        MathFunc::Cot => 1.0 / x.tan(),
        MathFunc::Asin => in_unit(x, f64::asin)?,
        MathFunc::Acos => in_unit(x, f64::acos)?,
        MathFunc::Atan => x.atan(),
        MathFunc::Atan2 => x.atan2(y),
        MathFunc::Degrees => x.to_degrees(),
        MathFunc::Radians => x.to_radians(),
        MathFunc::Pi => std::f64::consts::PI,
        MathFunc::Gcd | MathFunc::Lcm | MathFunc::WidthBucket => {
            return Err(ExecError::Internal(format!("{} of doubles", f.name())))
        }
    })
}

/// `f` of a numeric `v` at scale `s`, giving scale `to` (`digits` for trunc).
fn numeric(f: MathFunc, v: i128, s: u8, to: u8) -> ExecResult<i128> {
    let unit = 10i128.pow(u32::from(s));
    let whole = v / unit;
    let frac = v % unit;
    Ok(match f {
        MathFunc::Floor if frac < 0 => whole - 1,
        MathFunc::Ceil if frac > 0 => whole + 1,
        MathFunc::Floor | MathFunc::Ceil => whole,
        MathFunc::Sign => v.signum(),
        MathFunc::Trunc => {
            // Drop the digits past `to`, toward zero.
            let drop = 10i128.pow(u32::from(s.saturating_sub(to)));
            let kept = v / drop;
            kept.checked_mul(10i128.pow(u32::from(to.saturating_sub(s))))
                .ok_or_else(|| ExecError::OutOfRange("numeric".into()))?
        }
        _ => return Err(ExecError::Internal(format!("{} of numerics", f.name()))),
    })
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs()
}

/// `width_bucket(x, low, high, count)`: the bucket of `x` among `count`
/// equal ones from `low` to `high` (0 below, count + 1 above).
fn width_bucket(x: f64, low: f64, high: f64, count: i64) -> ExecResult<i64> {
    if count <= 0 {
        return Err(domain("2201G", "count must be greater than zero"));
    }
    if low == high {
        return Err(domain("2201G", "lower bound cannot equal upper bound"));
    }
    if x.is_nan() || low.is_nan() || high.is_nan() || low.is_infinite() || high.is_infinite() {
        return Err(domain(
            "2201G",
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    let n = count as f64;
    Ok(if low < high {
        if x < low {
            0
        } else if x >= high {
            count + 1
        } else {
            ((n * (x - low) / (high - low)) as i64 + 1).min(count)
        }
    } else if x > low {
        0
    } else if x <= high {
        count + 1
    } else {
        ((n * (low - x) / (low - high)) as i64 + 1).min(count)
    })
}

/// Applies `f` to argument vectors of `n` rows, giving `out`.
pub fn call(f: MathFunc, args: &[Vector], out: DataType, n: usize) -> ExecResult<Vector> {
    let out_scale = match out {
        DataType::Decimal { scale, .. } => scale,
        _ => 0,
    };
    super::row_kernel::row_by_row(f.name(), out, n, |r| {
        let vals: Vec<Value> = args.iter().map(|a| a.get_value(r)).collect();
        // trunc's digits are a constant the binder fixed the type by.
        let data = match f {
            MathFunc::Trunc => &vals[..1],
            _ => &vals[..],
        };
        let v = if data.iter().any(Value::is_null) {
            Value::Null
        } else {
            match (f, out, data) {
                // Numerics of one scale: the divisor of their scaled values.
                (
                    MathFunc::Gcd | MathFunc::Lcm,
                    DataType::Decimal { .. },
                    [Value::Decimal(a, _), Value::Decimal(b, _)],
                ) => {
                    let g = gcd(*a, *b);
                    let x = match f {
                        MathFunc::Gcd => g,
                        _ if g == 0 => 0,
                        _ => (a / g)
                            .checked_mul(*b)
                            .ok_or_else(|| ExecError::OutOfRange("numeric".into()))?
                            .abs(),
                    };
                    Value::Decimal(x, out_scale)
                }
                (MathFunc::Gcd | MathFunc::Lcm, _, [a, b]) => {
                    let (a, b) = (
                        a.as_i64().unwrap_or(0) as i128,
                        b.as_i64().unwrap_or(0) as i128,
                    );
                    let g = gcd(a, b);
                    let x = match f {
                        MathFunc::Gcd => g,
                        _ if g == 0 => 0,
                        _ => (a / g * b).abs(),
                    };
                    match out {
                        DataType::BigInt => Value::BigInt(
                            i64::try_from(x).map_err(|_| ExecError::integer_out_of_range(out))?,
                        ),
                        _ => Value::Integer(
                            i32::try_from(x).map_err(|_| ExecError::integer_out_of_range(out))?,
                        ),
                    }
                }
                (MathFunc::WidthBucket, _, [x, lo, hi, count]) => {
                    let b = width_bucket(
                        x.as_f64().unwrap_or(0.0),
                        lo.as_f64().unwrap_or(0.0),
                        hi.as_f64().unwrap_or(0.0),
                        count.as_i64().unwrap_or(0),
                    )?;
                    Value::Integer(
                        i32::try_from(b).map_err(|_| ExecError::integer_out_of_range(out))?,
                    )
                }
                (_, DataType::Decimal { .. }, [Value::Decimal(v, s)]) => {
                    Value::Decimal(numeric(f, *v, *s, out_scale)?, out_scale)
                }
                (_, DataType::Decimal { .. }, [x]) if x.as_i64().is_some() => {
                    let v = i128::from(x.as_i64().unwrap_or(0));
                    Value::Decimal(numeric(f, v, 0, out_scale)?, out_scale)
                }
                _ => {
                    let xs: Vec<f64> = data.iter().map(|v| v.as_f64().unwrap_or(0.0)).collect();
                    Value::Double(double(f, &xs)?)
                }
            }
        };
        Ok(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_rounding_directions() {
        // -5.5 at scale 1.
        assert_eq!(numeric(MathFunc::Floor, -55, 1, 0).unwrap(), -6);
        assert_eq!(numeric(MathFunc::Ceil, -55, 1, 0).unwrap(), -5);
        assert_eq!(numeric(MathFunc::Ceil, 51, 1, 0).unwrap(), 6);
        assert_eq!(numeric(MathFunc::Trunc, -5_559, 3, 1).unwrap(), -55);
        assert_eq!(numeric(MathFunc::Trunc, 12, 0, 2).unwrap(), 1200);
        assert_eq!(numeric(MathFunc::Sign, -3, 2, 0).unwrap(), -1);
    }

    #[test]
    fn domains_raise_postgresql_errors() {
        let code = |f, a: &[f64]| double(f, a).unwrap_err().sqlstate();
        assert_eq!(code(MathFunc::Sqrt, &[-1.0]), "2201F");
        assert_eq!(code(MathFunc::Ln, &[0.0]), "2201E");
        assert_eq!(code(MathFunc::Power, &[0.0, -1.0]), "2201F");
        assert_eq!(code(MathFunc::Power, &[-8.0, 0.5]), "2201F");
        assert_eq!(code(MathFunc::Exp, &[1000.0]), "22003");
        assert_eq!(code(MathFunc::Asin, &[2.0]), "22003");
        assert_eq!(double(MathFunc::Power, &[-2.0, 3.0]).unwrap(), -8.0);
    }

    #[test]
    fn buckets_and_divisors() {
        assert_eq!(width_bucket(5.35, 0.024, 10.06, 5).unwrap(), 3);
        assert_eq!(width_bucket(-1.0, 0.0, 10.0, 5).unwrap(), 0);
        assert_eq!(width_bucket(10.0, 0.0, 10.0, 5).unwrap(), 6);
        assert_eq!(width_bucket(5.0, 10.0, 0.0, 5).unwrap(), 3);
        assert_eq!(gcd(12, -18), 6);
    }
}
