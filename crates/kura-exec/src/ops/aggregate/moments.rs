//! Variance, standard deviation, covariance, correlation and the `regr_*`
//! statistics: a group's count, sums and sums of squared deviations, updated
//! and combined as PostgreSQL's float8 aggregates do (Youngs–Cramer), so that
//! results agree with PostgreSQL's to the last bit on the same input order.
//! The variance of integers and decimals is exact, as PostgreSQL's numeric
//! one is: their sums and sums of squares are kept as integers (while they
//! fit), so equal values have a variance of exactly 0.

use kura_common::{ColumnData, DataType, Vector};

use crate::error::{ExecError, ExecResult};
use crate::plan::Moment;

/// `N, Sx, Sxx, Sy, Syy, Sxy` of one group (`y` parts unused with one argument).
#[derive(Clone, Copy, Default)]
struct State {
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
}

impl State {
    /// PostgreSQL's `float8_regr_accum` (`float8_accum` for one argument).
    fn add(&mut self, x: f64, y: f64) {
        let old = self.n;
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if old > 0.0 {
            let tx = x * self.n - self.sx;
            let ty = y * self.n - self.sy;
            let scale = 1.0 / (self.n * old);
            self.sxx += tx * tx * scale;
            self.syy += ty * ty * scale;
            self.sxy += tx * ty * scale;
        } else if !x.is_finite() || !y.is_finite() {
            // A first input of Inf or NaN makes every later deviation NaN.
            self.sxx = f64::NAN;
            self.syy = f64::NAN;
            self.sxy = f64::NAN;
        }
    }

    /// PostgreSQL's `float8_accum`: one argument, `x` (its rounding differs
    /// from the two-argument form's).
    fn add1(&mut self, x: f64) {
        let old = self.n;
        self.n += 1.0;
        self.sx += x;
        if old > 0.0 {
            let t = x * self.n - self.sx;
            self.sxx += t * t / (self.n * old);
        } else if !x.is_finite() {
            self.sxx = f64::NAN;
        }
    }

    /// PostgreSQL's `float8_regr_combine`.
    fn combine(&mut self, o: &State) {
        if o.n == 0.0 {
            return;
        }
        if self.n == 0.0 {
            *self = *o;
            return;
        }
        let n = self.n + o.n;
        let tx = self.sx / self.n - o.sx / o.n;
        let ty = self.sy / self.n - o.sy / o.n;
        let w = self.n * o.n;
        self.sxx = self.sxx + o.sxx + w * tx * tx / n;
        self.syy = self.syy + o.syy + w * ty * ty / n;
        self.sxy = self.sxy + o.sxy + w * tx * ty / n;
        self.n = n;
        self.sx += o.sx;
        self.sy += o.sy;
    }

    /// The statistic, `None` where PostgreSQL's is NULL.
    fn finish(&self, m: Moment) -> Option<f64> {
        let s = self;
        if s.n == 0.0 {
            return None;
        }
        let one = |ok: bool, v: f64| ok.then_some(v);
        match m {
            Moment::VarSamp => one(s.n > 1.0, s.sxx / (s.n - 1.0)),
            Moment::VarPop => Some(s.sxx / s.n),
            Moment::StddevSamp => one(s.n > 1.0, (s.sxx / (s.n - 1.0)).sqrt()),
            Moment::StddevPop => Some((s.sxx / s.n).sqrt()),
            Moment::CovarPop => Some(s.sxy / s.n),
            Moment::CovarSamp => one(s.n > 1.0, s.sxy / (s.n - 1.0)),
            Moment::Corr => one(s.sxx != 0.0 && s.syy != 0.0, s.sxy / (s.sxx * s.syy).sqrt()),
            Moment::RegrSlope => one(s.sxx != 0.0, s.sxy / s.sxx),
            Moment::RegrIntercept => one(s.sxx != 0.0, (s.sy - s.sx * s.sxy / s.sxx) / s.n),
            Moment::RegrR2 if s.sxx == 0.0 => None,
            Moment::RegrR2 if s.syy == 0.0 => Some(1.0),
            Moment::RegrR2 => Some(s.sxy * s.sxy / (s.sxx * s.syy)),
            Moment::RegrAvgX => Some(s.sx / s.n),
            Moment::RegrAvgY => Some(s.sy / s.n),
            Moment::RegrSxx => Some(s.sxx),
            Moment::RegrSyy => Some(s.syy),
            Moment::RegrSxy => Some(s.sxy),
        }
    }
}

/// A group's count, sum and sum of squares of exact (scaled integer) values;
/// `None` once a sum no longer fits, when the float state answers instead.
#[derive(Clone, Copy, Default)]
struct Exact {
    n: i128,
    s: i128,
    ss: i128,
}

impl Exact {
    fn add(self, x: i128) -> Option<Exact> {
        Some(Exact {
            n: self.n + 1,
            s: self.s.checked_add(x)?,
            ss: self.ss.checked_add(x.checked_mul(x)?)?,
        })
    }

    fn combine(self, o: Exact) -> Option<Exact> {
        Some(Exact {
            n: self.n + o.n,
            s: self.s.checked_add(o.s)?,
            ss: self.ss.checked_add(o.ss)?,
        })
    }

    /// The variance (`samp`: divided by n - 1) of values scaled by 10^`scale`,
    /// from `n·Σx² - (Σx)²`, an integer, rounded once; `None` when that
    /// does not fit (the float state answers).
    fn variance(self, samp: bool, scale: u32) -> Option<Option<f64>> {
        let num = self
            .n
            .checked_mul(self.ss)?
            .checked_sub(self.s.checked_mul(self.s)?)?;
        let den = if samp {
            self.n * (self.n - 1)
        } else {
            self.n * self.n
        };
        if self.n == 0 || den == 0 {
            return Some(None);
        }
        Some(Some(num as f64 / den as f64 / 10f64.powi(2 * scale as i32)))
    }
}

/// The states of one moment aggregate, one per group.
pub(crate) struct MomentAcc {
    moment: Moment,
    states: Vec<State>,
    /// For the variance and standard deviation of an integer or decimal
    /// argument: its scale, and each group's exact sums.
    exact: Option<(u32, Vec<Option<Exact>>)>,
}

impl MomentAcc {
    pub(crate) fn new(moment: Moment, arg: Option<DataType>) -> MomentAcc {
        let one_arg = matches!(
            moment,
            Moment::VarSamp | Moment::VarPop | Moment::StddevSamp | Moment::StddevPop
        );
        let scale = match arg {
            Some(t) if t.is_integer() => Some(0),
            Some(DataType::Decimal { scale, .. }) => Some(scale as u32),
            _ => None,
        };
        MomentAcc {
            moment,
            states: Vec::new(),
            exact: scale.filter(|_| one_arg).map(|s| (s, Vec::new())),
        }
    }

    pub(crate) fn grow(&mut self, groups: usize) {
        self.states.resize(groups, State::default());
        if let Some((_, e)) = &mut self.exact {
            e.resize(groups, Some(Exact::default()));
        }
    }

    /// Folds the rows of `a` (and `b`, the `x` of a two-argument statistic
    /// whose `a` is `y`) into groups `g`; a row with a NULL argument is skipped.
    pub(crate) fn update(&mut self, g: &[u32], a: &Vector, b: Option<&Vector>) {
        let ys = crate::expr::floats_of(a);
        match b {
            None => {
                for (i, &gi) in g.iter().enumerate() {
                    if !a.is_null(i) {
                        self.states[gi as usize].add1(ys[i]);
                    }
                }
                if let Some((_, exact)) = &mut self.exact {
                    let at = |i: usize| -> Option<i128> {
                        match &a.data {
                            ColumnData::I32(v) => Some(v[i] as i128),
                            ColumnData::I64(v) => Some(v[i] as i128),
                            ColumnData::I128(v) => Some(v[i]),
                            _ => None,
                        }
                    };
                    for (i, &gi) in g.iter().enumerate() {
                        if !a.is_null(i) {
                            let slot = &mut exact[gi as usize];
                            *slot = slot.and_then(|e| e.add(at(i)?));
                        }
                    }
                }
            }
            Some(b) => {
                let xs = crate::expr::floats_of(b);
                for (i, &gi) in g.iter().enumerate() {
                    if !a.is_null(i) && !b.is_null(i) {
                        self.states[gi as usize].add(xs[i], ys[i]);
                    }
                }
            }
        }
    }

    /// Folds group `from` of `other` into group `to`.
    pub(crate) fn merge_group(&mut self, to: usize, other: &MomentAcc, from: usize) {
        let o = other.states[from];
        self.states[to].combine(&o);
        if let (Some((_, mine)), Some((_, theirs))) = (&mut self.exact, &other.exact) {
            mine[to] = match (mine[to], theirs[from]) {
                (Some(a), Some(b)) => a.combine(b),
                _ => None,
            };
        }
    }

    /// The statistic of every group, as DOUBLE.
    pub(crate) fn finish(&self, groups: usize) -> ExecResult<Vector> {
        if self.states.len() < groups {
            return Err(ExecError::Internal("moment states".into()));
        }
        let samp = matches!(self.moment, Moment::VarSamp | Moment::StddevSamp);
        let root = matches!(self.moment, Moment::StddevSamp | Moment::StddevPop);
        let vals: Vec<Option<f64>> = self.states[..groups]
            .iter()
            .enumerate()
            .map(|(g, s)| {
                let exact = self
                    .exact
                    .as_ref()
                    .and_then(|(scale, e)| e.get(g).copied().flatten()?.variance(samp, *scale));
                match exact {
                    Some(v) if root => v.map(f64::sqrt),
                    Some(v) => v,
                    None => s.finish(self.moment),
                }
            })
            .collect();
        let validity = vals
            .iter()
            .any(|v| v.is_none())
            .then(|| vals.iter().map(|v| v.is_some()).collect::<Vec<bool>>());
        Ok(Vector {
            data_type: DataType::Double,
            data: ColumnData::F64(vals.iter().map(|v| v.unwrap_or(0.0)).collect()),
            validity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(rows: &[(f64, f64)]) -> State {
        let mut s = State::default();
        rows.iter().for_each(|&(x, y)| s.add(x, y));
        s
    }

    fn state1(xs: &[f64]) -> State {
        let mut s = State::default();
        xs.iter().for_each(|&x| s.add1(x));
        s
    }

    #[test]
    fn sample_and_population_variance() {
        let s = state1(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.finish(Moment::VarPop), Some(1.25));
        assert_eq!(s.finish(Moment::VarSamp), Some(5.0 / 3.0));
        assert_eq!(state1(&[7.0]).finish(Moment::VarSamp), None);
        assert_eq!(state1(&[7.0]).finish(Moment::StddevPop), Some(0.0));
        assert_eq!(State::default().finish(Moment::VarPop), None);
    }

    #[test]
    fn combining_halves_equals_one_pass() {
        let rows: Vec<(f64, f64)> = (0..20)
            .map(|i| (i as f64 * 0.5, (i * i) as f64 - 3.0))
            .collect();
        let whole = state(&rows);
        let mut a = state(&rows[..7]);
        a.combine(&state(&rows[7..]));
        for m in [
            Moment::VarSamp,
            Moment::Corr,
            Moment::RegrSlope,
            Moment::CovarPop,
        ] {
            let (x, y) = (whole.finish(m).unwrap(), a.finish(m).unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                "{m:?}: {x} vs {y}"
            );
        }
    }

    #[test]
    fn exact_variance_of_equal_and_scaled_values() {
        let column = |xs: &[i64]| Vector {
            data_type: DataType::Decimal {
                precision: 15,
                scale: 2,
            },
            data: ColumnData::I64(xs.to_vec()),
            validity: None,
        };
        let run = |m, xs: &[i64]| {
            let mut acc = MomentAcc::new(
                m,
                Some(DataType::Decimal {
                    precision: 15,
                    scale: 2,
                }),
            );
            acc.grow(1);
            // Two halves combined, as two workers' states are.
            let (a, b) = xs.split_at(xs.len() / 2);
            let mut other = MomentAcc::new(
                m,
                Some(DataType::Decimal {
                    precision: 15,
                    scale: 2,
                }),
            );
            other.grow(1);
            acc.update(&vec![0; a.len()], &column(a), None);
            other.update(&vec![0; b.len()], &column(b), None);
            acc.merge_group(0, &other, 0);
            acc.finish(1).unwrap().get_value(0)
        };
        // 0.07 a thousand times: the float sums leave about 1e-28.
        assert_eq!(
            run(Moment::VarPop, &[7; 1000]),
            kura_common::Value::Double(0.0)
        );
        assert_eq!(
            run(Moment::StddevSamp, &[7; 1000]),
            kura_common::Value::Double(0.0)
        );
        // 1.00, 2.00, 3.00, 4.00.
        assert_eq!(
            run(Moment::VarPop, &[100, 200, 300, 400]),
            kura_common::Value::Double(1.25)
        );
        assert_eq!(run(Moment::VarSamp, &[700]), kura_common::Value::Null);
    }

    #[test]
    fn a_perfect_line() {
        let s = state(&[(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]);
        assert_eq!(s.finish(Moment::RegrSlope), Some(2.0));
        assert_eq!(s.finish(Moment::RegrIntercept), Some(1.0));
        assert_eq!(s.finish(Moment::RegrR2), Some(1.0));
        assert_eq!(s.finish(Moment::Corr), Some(1.0));
        // A vertical line has no slope.
        let v = state(&[(1.0, 3.0), (1.0, 5.0)]);
        assert_eq!(v.finish(Moment::RegrSlope), None);
        assert_eq!(v.finish(Moment::Corr), None);
    }
}
