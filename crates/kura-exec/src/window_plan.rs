//! The window functions and window frames a window node computes (plan IR).

use kura_common::DataType;

use crate::expr::PhysExpr;
use crate::plan::AggCall;

/// A window function: a ranking function, a value taken from another row, or an
/// aggregate over the window frame.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    /// `(rank - 1) / (partition rows - 1)`, 0 for a one-row partition.
    PercentRank,
    /// Rows up to the current row's last peer over the partition's rows.
    CumeDist,
    /// The bucket (1..=n) of the row when the partition is cut into `n` (INTEGER)
    /// nearly equal parts; `n` is read at the partition's first row.
    Ntile(PhysExpr),
    /// `lag` / `lead`: `value` at `offset` (BIGINT, per row) rows before / after
    /// the current row in the partition, `default` (per row, NULL if absent)
    /// when that row does not exist.
    Shift {
        lead: bool,
        value: PhysExpr,
        offset: PhysExpr,
        default: PhysExpr,
    },
    /// `first_value` / `last_value` / `nth_value` (n: BIGINT per row) of the frame.
    FrameValue {
        pick: FramePick,
        value: PhysExpr,
        frame: WindowFrame,
    },
    /// An aggregate (never DISTINCT) over the frame.
    Aggregate(AggCall, WindowFrame),
}

/// Which row of the frame a frame value function returns.
#[derive(Debug, Clone, PartialEq)]
pub enum FramePick {
    First,
    Last,
    Nth(PhysExpr),
}

/// Whether frame offsets count rows, peer groups, or order-key distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// One end of a frame. Offsets are constant expressions, evaluated once: BIGINT
/// for ROWS and GROUPS; for RANGE of the ORDER BY key's type (BIGINT for integer
/// keys, days for dates, microseconds for timestamps).
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(PhysExpr),
    CurrentRow,
    Following(PhysExpr),
    UnboundedFollowing,
}

/// The rows a frame-aware window function sees around each row.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl WindowFrame {
    /// PostgreSQL's default frame: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT
    /// ROW` (the whole partition when there is no ORDER BY: every row is a peer).
    pub fn default_frame() -> WindowFrame {
        WindowFrame {
            units: FrameUnits::Range,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }

    fn exprs_mut(&mut self) -> impl Iterator<Item = &mut PhysExpr> {
        [&mut self.start, &mut self.end]
            .into_iter()
            .filter_map(|b| match b {
                FrameBound::Preceding(e) | FrameBound::Following(e) => Some(e),
                _ => None,
            })
    }
}

impl WindowFunc {
    pub fn data_type(&self) -> DataType {
        match self {
            WindowFunc::Aggregate(a, _) => a.data_type,
            WindowFunc::Shift { value, .. } | WindowFunc::FrameValue { value, .. } => {
                value.data_type()
            }
            WindowFunc::Ntile(_) => DataType::Integer,
            WindowFunc::PercentRank | WindowFunc::CumeDist => DataType::Double,
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => DataType::BigInt,
        }
    }

    /// The expressions over input rows the function reads (arguments, not frame
    /// offsets, which are constants).
    pub fn args(&self) -> Vec<&PhysExpr> {
        match self {
            WindowFunc::Aggregate(a, _) => a.exprs().collect(),
            WindowFunc::Ntile(n) => vec![n],
            WindowFunc::Shift {
                value,
                offset,
                default,
                ..
            } => vec![value, offset, default],
            WindowFunc::FrameValue { pick, value, .. } => match pick {
                FramePick::Nth(n) => vec![value, n],
                _ => vec![value],
            },
            _ => vec![],
        }
    }

    /// Every expression of the function, frame offsets included, for rewriting
    /// (column remapping, substitution).
    pub fn exprs_mut(&mut self) -> Vec<&mut PhysExpr> {
        match self {
            WindowFunc::Aggregate(a, frame) => {
                let mut v: Vec<&mut PhysExpr> = a.exprs_mut().collect();
                v.extend(frame.exprs_mut());
                v
            }
            WindowFunc::Ntile(n) => vec![n],
            WindowFunc::Shift {
                value,
                offset,
                default,
                ..
            } => vec![value, offset, default],
            WindowFunc::FrameValue { pick, value, frame } => {
                let mut v = vec![value];
                if let FramePick::Nth(n) = pick {
                    v.push(n);
                }
                v.extend(frame.exprs_mut());
                v
            }
            _ => vec![],
        }
    }
}

impl std::fmt::Display for FrameBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameBound::UnboundedPreceding => write!(f, "UNBOUNDED PRECEDING"),
            FrameBound::Preceding(e) => write!(f, "{e} PRECEDING"),
            FrameBound::CurrentRow => write!(f, "CURRENT ROW"),
            FrameBound::Following(e) => write!(f, "{e} FOLLOWING"),
            FrameBound::UnboundedFollowing => write!(f, "UNBOUNDED FOLLOWING"),
        }
    }
}

impl std::fmt::Display for WindowFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let units = match self.units {
            FrameUnits::Rows => "ROWS",
            FrameUnits::Range => "RANGE",
            FrameUnits::Groups => "GROUPS",
        };
        write!(f, "{units} BETWEEN {} AND {}", self.start, self.end)
    }
}

impl std::fmt::Display for WindowFunc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowFunc::RowNumber => write!(f, "row_number()"),
            WindowFunc::Rank => write!(f, "rank()"),
            WindowFunc::DenseRank => write!(f, "dense_rank()"),
            WindowFunc::PercentRank => write!(f, "percent_rank()"),
            WindowFunc::CumeDist => write!(f, "cume_dist()"),
            WindowFunc::Ntile(n) => write!(f, "ntile({n})"),
            WindowFunc::Shift {
                lead,
                value,
                offset,
                default,
            } => {
                let name = if *lead { "lead" } else { "lag" };
                write!(f, "{name}({value}, {offset}, {default})")
            }
            WindowFunc::FrameValue { pick, value, frame } => match pick {
                FramePick::First => write!(f, "first_value({value}) {frame}"),
                FramePick::Last => write!(f, "last_value({value}) {frame}"),
                FramePick::Nth(n) => write!(f, "nth_value({value}, {n}) {frame}"),
            },
            WindowFunc::Aggregate(a, frame) => {
                let arg = a.arg.as_ref().map_or("*".to_string(), |e| e.to_string());
                write!(f, "{:?}({arg}) {frame}", a.func)
            }
        }
    }
}
