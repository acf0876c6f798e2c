//! Window frames: the rows each sorted row's frame spans (ROWS, RANGE and GROUPS
//! with UNBOUNDED / offset / CURRENT ROW bounds), and aggregates over them.

use std::collections::VecDeque;

use kura_common::{Batch, DataType, Vector};

use super::aggregate::{new_acc, Acc};
use super::sort_run::cmp_values;
use super::window_layout::Layout;
use super::NO_ROW;
use crate::error::{ExecError, ExecResult};
use crate::expr::{floats_of, ints_of, PhysExpr};
use crate::plan::{AggCall, FrameBound, FrameUnits, SortKey, WindowFrame};

/// Each row's frame as `start..end` over the sorted rows (`end >= start`; empty
/// when the bounds cross). Within a partition both ends only move forward, which
/// the sliding aggregates rely on.
pub(super) struct Bounds {
    pub start: Vec<u32>,
    pub end: Vec<u32>,
}

fn bad(code: &'static str, message: impl Into<String>) -> ExecError {
    ExecError::WindowArgument {
        code,
        message: message.into(),
    }
}

/// A frame offset, evaluated once (it holds no column): a one-row vector.
fn offset_value(e: &PhysExpr, start: bool) -> ExecResult<Vector> {
    let v = e.eval(&Batch::with_rows(1))?;
    let which = if start { "starting" } else { "ending" };
    if v.is_empty() || v.is_null(0) {
        return Err(bad(
            "22004",
            format!("frame {which} offset must not be null"),
        ));
    }
    Ok(v)
}

/// A ROWS or GROUPS offset: a non-negative count.
fn count_offset(e: &PhysExpr, start: bool) -> ExecResult<u64> {
    let v = offset_value(e, start)?;
    let n = ints_of(&v)[0];
    if n < 0 {
        let which = if start { "starting" } else { "ending" };
        return Err(bad(
            "22013",
            format!("frame {which} offset must not be negative"),
        ));
    }
    Ok(n.min(u32::MAX as i128) as u64)
}

/// The ORDER BY key of a RANGE frame with offsets, as numbers that compare
/// as the key does (integers and decimals at their scale, dates in days,
/// timestamps in microseconds; doubles as floats).
enum Keys {
    Int(Vec<i128>, Vec<i128>),
    Float(Vec<f64>, Vec<f64>),
}

impl Keys {
    /// The key values and the two offsets (start, end; 0 where the bound has none).
    fn new(key: &Vector, frame: &WindowFrame) -> ExecResult<Keys> {
        let offsets = [(&frame.start, true), (&frame.end, false)].map(|(b, start)| match b {
            FrameBound::Preceding(e) | FrameBound::Following(e) => Some((e, start)),
            _ => None,
        });
        let invalid = || {
            bad(
                "22013",
                "invalid preceding or following size in window function",
            )
        };
        if key.data_type == DataType::Double {
            let mut off = Vec::new();
            for o in offsets {
                off.push(match o {
                    Some((e, start)) => {
                        let x = floats_of(&offset_value(e, start)?)[0];
                        if x.is_nan() || x < 0.0 {
                            return Err(invalid());
                        }
                        x
                    }
                    None => 0.0,
                });
            }
            return Ok(Keys::Float(floats_of(key), off));
        }
        let mut off = Vec::new();
        for o in offsets {
            off.push(match o {
                Some((e, start)) => {
                    let x = ints_of(&offset_value(e, start)?)[0];
                    if x < 0 {
                        return Err(invalid());
                    }
                    x
                }
                None => 0,
            });
        }
        Ok(Keys::Int(ints_of(key), off))
    }
}

/// The first row of `lo..hi` (sorted on the key, `desc` for descending) that is
/// in the frame for a bound at distance `off` before (`preceding`) or after the
/// key `k`: `start` finds the bound's first row, otherwise the row after its last.
fn range_edge<T: PartialOrd + Copy>(
    keys: &[T],
    lo: usize,
    hi: usize,
    target: T,
    desc: bool,
    start: bool,
) -> usize {
    let seg = &keys[lo..hi];
    lo + match (desc, start) {
        (false, true) => seg.partition_point(|&k| k < target),
        (false, false) => seg.partition_point(|&k| k <= target),
        (true, true) => seg.partition_point(|&k| k > target),
        (true, false) => seg.partition_point(|&k| k >= target),
    }
}

/// The frame of every row. `key` is the single ORDER BY key (sorted) when the
/// frame is RANGE with an offset.
pub(super) fn bounds(
    frame: &WindowFrame,
    l: &Layout,
    key: Option<(&Vector, &SortKey)>,
) -> ExecResult<Bounds> {
    let rows = l.peer.len();
    let mut b = Bounds {
        start: Vec::with_capacity(rows),
        end: Vec::with_capacity(rows),
    };
    let count = |bound: &FrameBound, start: bool| match bound {
        FrameBound::Preceding(e) | FrameBound::Following(e) if frame.units != FrameUnits::Range => {
            count_offset(e, start)
        }
        _ => Ok(0),
    };
    let (start_n, end_n) = (count(&frame.start, true)?, count(&frame.end, false)?);
    let range_offsets = frame.units == FrameUnits::Range
        && [&frame.start, &frame.end]
            .iter()
            .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)));
    // Offsets are checked even when there are no rows, as PostgreSQL does.
    let keys = match (range_offsets, key) {
        (true, Some((v, _))) => Some(Keys::new(v, frame)?),
        (true, None) => {
            return Err(ExecError::Internal(
                "RANGE offset without an order key".into(),
            ))
        }
        _ => None,
    };
    if rows == 0 {
        return Ok(b);
    }
    let desc = key.is_some_and(|k| k.1.descending);
    // The rows of each partition whose key is not NULL (contiguous: NULLs sort
    // first or last); offsets measure distance only among them.
    let non_null: Vec<(usize, usize)> = match key {
        Some((v, _)) if range_offsets => (0..l.part_begin.len())
            .map(|p| {
                let (pb, pe) = (l.part_begin[p] as usize, l.part_end[p] as usize);
                let nb = (pb..pe).find(|&i| !v.is_null(i)).unwrap_or(pe);
                let ne = (nb..pe).find(|&i| v.is_null(i)).unwrap_or(pe);
                (nb, ne)
            })
            .collect(),
        _ => Vec::new(),
    };
    for i in 0..rows {
        let p = l.partition[i] as usize;
        let (pb, pe) = (l.part_begin[p] as usize, l.part_end[p] as usize);
        let g = l.peer[i] as usize;
        let (peer_b, peer_e) = (l.group_begin[g] as usize, l.group_end[g] as usize);
        // Peer groups of the partition: the first, the current and the last.
        let (g0, gl) = (l.peer[pb] as i64, l.peer[pe - 1] as i64);
        let edge = |bound: &FrameBound, start: bool| -> usize {
            let n = if start { start_n } else { end_n } as i64;
            match (bound, frame.units) {
                (FrameBound::UnboundedPreceding, _) => pb,
                (FrameBound::UnboundedFollowing, _) => pe,
                (FrameBound::CurrentRow, FrameUnits::Rows) => i + !start as usize,
                (FrameBound::CurrentRow, _) => {
                    if start {
                        peer_b
                    } else {
                        peer_e
                    }
                }
                (FrameBound::Preceding(_), FrameUnits::Rows) => {
                    (i as i64 - n + !start as i64).clamp(pb as i64, pe as i64) as usize
                }
                (FrameBound::Following(_), FrameUnits::Rows) => {
                    (i as i64 + n + !start as i64).clamp(pb as i64, pe as i64) as usize
                }
                (FrameBound::Preceding(_) | FrameBound::Following(_), FrameUnits::Groups) => {
                    let back = matches!(bound, FrameBound::Preceding(_));
                    let t = if back { g as i64 - n } else { g as i64 + n };
                    match (t < g0, t > gl) {
                        (true, _) => pb,
                        (_, true) => pe,
                        _ if start => l.group_begin[t as usize] as usize,
                        _ => l.group_end[t as usize] as usize,
                    }
                }
                (FrameBound::Preceding(_) | FrameBound::Following(_), FrameUnits::Range) => {
                    let back = matches!(bound, FrameBound::Preceding(_));
                    let (nb, ne) = non_null[p];
                    // A NULL key is in range of its peers (the other NULLs) only.
                    if !(nb..ne).contains(&i) {
                        return if start { peer_b } else { peer_e };
                    }
                    let k = if start { 0 } else { 1 };
                    // Preceding rows have smaller keys ascending, larger descending.
                    let up = back == desc;
                    match &keys {
                        Some(Keys::Int(v, off)) => {
                            let t = if up {
                                v[i].saturating_add(off[k])
                            } else {
                                v[i].saturating_sub(off[k])
                            };
                            range_edge(v, nb, ne, t, desc, start)
                        }
                        Some(Keys::Float(v, off)) => {
                            let t = if up { v[i] + off[k] } else { v[i] - off[k] };
                            range_edge(v, nb, ne, t, desc, start)
                        }
                        None => pb,
                    }
                }
            }
        };
        let s = edge(&frame.start, true);
        let e = edge(&frame.end, false).max(s);
        b.start.push(s as u32);
        b.end.push(e as u32);
    }
    Ok(b)
}

/// An aggregate's state over a frame that slides forward: rows enter at the end
/// and leave at the start.
trait Sliding {
    fn add(&mut self, row: usize) -> ExecResult<()>;
    fn remove(&mut self, row: usize) -> ExecResult<()>;
    fn reset(&mut self);
    /// Records the current frame's value as row `row`'s.
    fn emit(&mut self, row: usize);
}

/// Moves `st` over every row's frame: each row enters and leaves once, so the
/// whole pass is linear in the rows (no re-aggregation per row).
fn slide(b: &Bounds, st: &mut impl Sliding) -> ExecResult<()> {
    let (mut s, mut e) = (0usize, 0usize);
    for i in 0..b.start.len() {
        let (ns, ne) = (b.start[i] as usize, b.end[i] as usize);
        // A frame past the previous one (a new partition, or a gap) starts afresh
        // rather than removing every row of the old one.
        if ns >= e {
            st.reset();
            (s, e) = (ns, ns);
        }
        while e < ne {
            st.add(e)?;
            e += 1;
        }
        while s < ns {
            st.remove(s)?;
            s += 1;
        }
        st.emit(i);
    }
    Ok(())
}

/// count, and the counts and exact (integer, decimal) sums of sum and avg.
struct IntSum<'a> {
    x: Option<Vec<i128>>,
    arg: Option<&'a Vector>,
    sum: i128,
    count: i64,
    out_sum: Vec<i128>,
    out_count: Vec<i64>,
}

impl Sliding for IntSum<'_> {
    fn add(&mut self, j: usize) -> ExecResult<()> {
        if self.arg.is_some_and(|a| a.is_null(j)) {
            return Ok(());
        }
        if let Some(x) = &self.x {
            self.sum = self
                .sum
                .checked_add(x[j])
                .ok_or_else(|| ExecError::OutOfRange("sum overflows".into()))?;
        }
        self.count += 1;
        Ok(())
    }
    fn remove(&mut self, j: usize) -> ExecResult<()> {
        if self.arg.is_some_and(|a| a.is_null(j)) {
            return Ok(());
        }
        if let Some(x) = &self.x {
            self.sum -= x[j];
        }
        self.count -= 1;
        Ok(())
    }
    fn reset(&mut self) {
        (self.sum, self.count) = (0, 0);
    }
    fn emit(&mut self, _: usize) {
        self.out_sum.push(self.sum);
        self.out_count.push(self.count);
    }
}

/// Floating sums: finite values add and subtract; infinities and NaNs are
/// counted apart, so one leaving the frame does not leave a NaN behind.
/// Each addition's rounding error is kept (Neumaier's compensation), because a
/// frame reached by adding a partition and taking most of it away again would
/// otherwise carry the error of every row that passed through it: a one-row
/// frame of 0.2 summed to 0.19999999999999873.
struct FloatSum<'a> {
    x: Vec<f64>,
    arg: &'a Vector,
    sum: f64,
    /// The rounding errors of the additions into `sum`.
    compensation: f64,
    count: i64,
    /// +inf, -inf, NaN in the frame.
    special: [i64; 3],
    out_sum: Vec<f64>,
    out_count: Vec<i64>,
}

impl FloatSum<'_> {
    fn class(x: f64) -> Option<usize> {
        match x {
            x if x.is_nan() => Some(2),
            f64::INFINITY => Some(0),
            f64::NEG_INFINITY => Some(1),
            _ => None,
        }
    }
    fn step(&mut self, j: usize, sign: i64) {
        if self.arg.is_null(j) {
            return;
        }
        let x = self.x[j];
        match Self::class(x) {
            Some(c) => self.special[c] += sign,
            None => {
                let x = sign as f64 * x;
                let t = self.sum + x;
                self.compensation += if self.sum.abs() >= x.abs() {
                    (self.sum - t) + x
                } else {
                    (x - t) + self.sum
                };
                self.sum = t;
            }
        }
        self.count += sign;
    }
}

impl Sliding for FloatSum<'_> {
    fn add(&mut self, j: usize) -> ExecResult<()> {
        self.step(j, 1);
        Ok(())
    }
    fn remove(&mut self, j: usize) -> ExecResult<()> {
        self.step(j, -1);
        Ok(())
    }
    fn reset(&mut self) {
        (self.sum, self.compensation, self.count, self.special) = (0.0, 0.0, 0, [0; 3]);
    }
    fn emit(&mut self, row: usize) {
        let s = match self.special {
            [_, _, n] if n > 0 => f64::NAN,
            [p, m, _] if p > 0 && m > 0 => f64::NAN,
            [p, _, _] if p > 0 => f64::INFINITY,
            [_, m, _] if m > 0 => f64::NEG_INFINITY,
            // An empty frame sums to nothing, not to the residue of what left it.
            _ if self.count == 0 => 0.0,
            _ => self.sum + self.compensation,
        };
        self.out_sum[row] = s;
        self.out_count[row] = self.count;
    }
}

/// min / max: a monotonic deque of the frame's candidate rows (each better than
/// every later one), so the front is the answer and each row enters and leaves
/// once.
struct Extreme<'a> {
    arg: &'a Vector,
    min: bool,
    deque: VecDeque<usize>,
    out: Vec<u32>,
}

impl Sliding for Extreme<'_> {
    fn add(&mut self, j: usize) -> ExecResult<()> {
        if self.arg.is_null(j) {
            return Ok(());
        }
        while let Some(&back) = self.deque.back() {
            let o = cmp_values(self.arg, back, self.arg, j);
            let dominated = if self.min { o.is_ge() } else { o.is_le() };
            if !dominated {
                break;
            }
            self.deque.pop_back();
        }
        self.deque.push_back(j);
        Ok(())
    }
    fn remove(&mut self, j: usize) -> ExecResult<()> {
        if self.deque.front() == Some(&j) {
            self.deque.pop_front();
        }
        Ok(())
    }
    fn reset(&mut self) {
        self.deque.clear();
    }
    fn emit(&mut self, _: usize) {
        self.out
            .push(self.deque.front().map_or(NO_ROW, |&j| j as u32));
    }
}

/// `call` over every row's frame, as a vector of `call.data_type`.
pub(super) fn aggregate(call: &AggCall, arg: Option<&Vector>, b: &Bounds) -> ExecResult<Vector> {
    let rows = b.start.len();
    let mut acc = new_acc(call);
    acc.grow(rows);
    match &mut acc {
        Acc::Count(c) => {
            let mut st = int_sum(None, arg, rows);
            slide(b, &mut st)?;
            *c = st.out_count;
        }
        Acc::SumInt { sums, seen } => {
            let mut st = int_sum(arg, arg, rows);
            slide(b, &mut st)?;
            *sums = st.out_sum;
            *seen = st.out_count.iter().map(|&n| n > 0).collect();
        }
        Acc::AvgInt { sums, counts } => {
            let mut st = int_sum(arg, arg, rows);
            slide(b, &mut st)?;
            (*sums, *counts) = (st.out_sum, st.out_count);
        }
        Acc::SumFloat { sums, seen } => {
            let st = float_sum(arg, b)?;
            *seen = st.out_count.iter().map(|&n| n > 0).collect();
            *sums = st.out_sum;
        }
        Acc::AvgFloat { sums, counts } => {
            let st = float_sum(arg, b)?;
            (*sums, *counts) = (st.out_sum, st.out_count);
        }
        Acc::MinMax(_) => {
            let a = arg.ok_or_else(|| ExecError::Internal("min without argument".into()))?;
            let mut st = Extreme {
                arg: a,
                min: call.func == crate::plan::AggFunc::Min,
                deque: VecDeque::new(),
                out: Vec::with_capacity(rows),
            };
            slide(b, &mut st)?;
            // Each row's group receives its frame's extreme value, if any.
            let groups: Vec<u32> = (0..rows as u32)
                .filter(|&i| st.out[i as usize] != NO_ROW)
                .collect();
            let picked: Vec<u32> = groups.iter().map(|&i| st.out[i as usize]).collect();
            acc.update(&groups, Some(&a.take(&picked)))?;
        }
        // Any other aggregate folds each row's frame into the row's own group:
        // quadratic in the frame's length, but right for every aggregate.
        _ => {
            const CHUNK: usize = 1 << 16;
            let (mut g, mut idx) = (Vec::new(), Vec::new());
            for i in 0..rows {
                for j in b.start[i]..b.end[i] {
                    g.push(i as u32);
                    idx.push(j);
                }
                if g.len() >= CHUNK || i + 1 == rows {
                    let taken = arg.map(|a| a.take(&idx));
                    acc.update(&g, taken.as_ref())?;
                    g.clear();
                    idx.clear();
                }
            }
        }
    }
    acc.finish(call, rows)
}

fn float_sum<'a>(arg: Option<&'a Vector>, b: &Bounds) -> ExecResult<FloatSum<'a>> {
    let a = arg.ok_or_else(|| ExecError::Internal("sum without argument".into()))?;
    let rows = b.start.len();
    let mut st = FloatSum {
        x: floats_of(a),
        arg: a,
        sum: 0.0,
        compensation: 0.0,
        count: 0,
        special: [0; 3],
        out_sum: vec![0.0; rows],
        out_count: vec![0; rows],
    };
    if ends_at_partition_end(b) {
        slide_back(b, &mut st)?;
    } else {
        slide(b, &mut st)?;
    }
    Ok(st)
}

/// Whether every frame that overlaps the previous row's ends where it ends (a
/// frame running to UNBOUNDED FOLLOWING): then, taken from the last row back,
/// rows only enter the frame and none leaves.
fn ends_at_partition_end(b: &Bounds) -> bool {
    (1..b.start.len()).all(|i| b.start[i] >= b.end[i - 1] || b.end[i] == b.end[i - 1])
}

/// [`slide`] from the last row to the first, for frames that grow at their start
/// alone: a floating sum then only adds, as a running sum from the start does.
fn slide_back(b: &Bounds, st: &mut impl Sliding) -> ExecResult<()> {
    let (mut s, mut e) = (0usize, 0usize);
    for i in (0..b.start.len()).rev() {
        let (ns, ne) = (b.start[i] as usize, b.end[i] as usize);
        if ne != e || ns > s {
            st.reset();
            (s, e) = (ne, ne);
        }
        while s > ns {
            s -= 1;
            st.add(s)?;
        }
        st.emit(i);
    }
    Ok(())
}

fn int_sum<'a>(x: Option<&Vector>, arg: Option<&'a Vector>, rows: usize) -> IntSum<'a> {
    IntSum {
        x: x.map(ints_of),
        arg,
        sum: 0,
        count: 0,
        out_sum: Vec::with_capacity(rows),
        out_count: Vec::with_capacity(rows),
    }
}

/// The row of every row's frame that `nth` (0-based from the start, or from the
/// end when `from_end`) names, or [`NO_ROW`].
pub(super) fn pick(b: &Bounds, nth: impl Fn(usize) -> Option<u64>, from_end: bool) -> Vec<u32> {
    (0..b.start.len())
        .map(|i| {
            let (s, e) = (b.start[i] as u64, b.end[i] as u64);
            match nth(i) {
                Some(n) if n < e - s => (if from_end { e - 1 - n } else { s + n }) as u32,
                _ => NO_ROW,
            }
        })
        .collect()
}
