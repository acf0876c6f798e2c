//! Sums and counts of few groups through partial lanes per group (TPC-H Q1:
//! four groups, eight sums over six million rows).

use kura_common::{ColumnData, Vector};

/// Up to this many groups, a batch is first summed into [`LANES`] partial sums
/// per group in 64 bits: consecutive rows of one group then add into different
/// words, so an addition does not wait for the previous row's store (TPC-H Q1:
/// four groups, eight sums over six million rows), and no 128-bit add per row.
pub(super) const LANE_GROUPS: usize = 256;
const LANES: usize = 4;

/// Adds row `i` of `a` to `sums[g[i]]` for every row when `a` has no NULLs and
/// integer data (one tight loop, an overflow flag instead of a branch per row):
/// `Some(false)` if a sum overflowed, `None` when the caller's general loop must
/// run.
pub(super) fn add_dense(sums: &mut [i128], g: &[u32], a: &Vector) -> Option<bool> {
    fn add_all<T: Copy + Into<i128>>(sums: &mut [i128], g: &[u32], x: &[T]) -> bool {
        let mut overflow = false;
        for (&gi, &v) in g.iter().zip(x) {
            let s = &mut sums[gi as usize];
            let (r, o) = s.overflowing_add(v.into());
            *s = r;
            overflow |= o;
        }
        !overflow
    }
    /// The lanes' way; `None` when a partial sum overflowed (the batch is then
    /// added again in 128 bits).
    fn add_lanes<L: Lane, T: Copy + Into<L>>(
        sums: &mut [i128],
        g: &[u32],
        x: &[T],
    ) -> Option<bool> {
        let mut lanes = vec![L::default(); sums.len() * LANES];
        let mut overflow = false;
        let mut add = |lane: usize, gi: u32, v: T| {
            let s = &mut lanes[gi as usize * LANES + lane];
            let (r, o) = s.add(v.into());
            *s = r;
            overflow |= o;
        };
        let (gs, xs) = (g.chunks_exact(LANES), x.chunks_exact(LANES));
        let (g_rest, x_rest) = (gs.remainder(), xs.remainder());
        for (gc, xc) in gs.zip(xs) {
            for lane in 0..LANES {
                add(lane, gc[lane], xc[lane]);
            }
        }
        for (&gi, &v) in g_rest.iter().zip(x_rest) {
            add(0, gi, v);
        }
        if overflow {
            return None;
        }
        let mut overflow = false;
        for (s, part) in sums.iter_mut().zip(lanes.chunks_exact(LANES)) {
            for p in part {
                let (r, o) = s.overflowing_add(p.wide());
                *s = r;
                overflow |= o;
            }
        }
        Some(!overflow)
    }
    if a.validity.is_some() || a.len() < g.len() {
        return None;
    }
    let (few, n) = (sums.len() <= LANE_GROUPS, g.len());
    match &a.data {
        ColumnData::I32(v) if few => {
            add_lanes::<i64, _>(sums, g, &v[..n]).or_else(|| Some(add_all(sums, g, v)))
        }
        ColumnData::I64(v) if few => {
            add_lanes::<i64, _>(sums, g, &v[..n]).or_else(|| Some(add_all(sums, g, v)))
        }
        // 128-bit lanes break the dependency chain of one group's additions
        // too (TPC-H Q1's `sum(l_extendedprice * (1 - l_discount) * ...)`).
        ColumnData::I128(v) if few => {
            add_lanes::<i128, _>(sums, g, &v[..n]).or_else(|| Some(add_all(sums, g, v)))
        }
        ColumnData::I32(v) => Some(add_all(sums, g, v)),
        ColumnData::I64(v) => Some(add_all(sums, g, v)),
        ColumnData::I128(v) => Some(add_all(sums, g, v)),
        _ => None,
    }
}

/// One batch's sums per group of `a` (integers without NULLs, few groups: see
/// [`LANE_GROUPS`]), for several accumulators of the same argument to add
/// (`avg(x)` beside `sum(x)`); `None` when that does not apply or a sum
/// overflowed (each accumulator then adds the batch itself, and says so).
pub(crate) fn batch_sums(groups: usize, g: &[u32], a: &Vector) -> Option<Vec<i128>> {
    if groups > LANE_GROUPS {
        return None;
    }
    let mut sums = vec![0; groups];
    add_dense(&mut sums, g, a)?.then_some(sums)
}

/// Adds row `i` of `x` to `sums[g[i]]` for every row (an argument without NULLs): through
/// [`LANES`] partial sums per group when there are few groups, as [`add_dense`] does for
/// integers — a float addition waits ~4 cycles for the previous one into the same word, and
/// with four groups most consecutive rows add into the same one. The order of additions
/// within a batch changes (row i into lane i mod 4, the lanes summed in lane order at the
/// end); a sum of floats has no one order anyway once batches run on several workers.
pub(super) fn add_floats(sums: &mut [f64], g: &[u32], x: &[f64]) {
    if sums.len() > LANE_GROUPS {
        for (&gi, &v) in g.iter().zip(x) {
            sums[gi as usize] += v;
        }
        return;
    }
    let mut lanes = vec![0.0f64; sums.len() * LANES];
    let n = g.len().min(x.len());
    let (gs, xs) = (g[..n].chunks_exact(LANES), x[..n].chunks_exact(LANES));
    let (g_rest, x_rest) = (gs.remainder(), xs.remainder());
    for (gc, xc) in gs.zip(xs) {
        for lane in 0..LANES {
            lanes[gc[lane] as usize * LANES + lane] += xc[lane];
        }
    }
    for (&gi, &v) in g_rest.iter().zip(x_rest) {
        lanes[gi as usize * LANES] += v;
    }
    for (s, part) in sums.iter_mut().zip(lanes.chunks_exact(LANES)) {
        // A group without rows in this batch adds nothing (not even a -0.0 into a 0.0).
        if part.iter().any(|p| *p != 0.0 || p.is_sign_negative()) {
            *s += part.iter().sum::<f64>();
        }
    }
}

/// A partial sum of [`add_dense`]'s lanes.
trait Lane: Copy + Default {
    fn add(self, v: Self) -> (Self, bool);
    fn wide(self) -> i128;
}

impl Lane for i64 {
    fn add(self, v: i64) -> (i64, bool) {
        self.overflowing_add(v)
    }
    fn wide(self) -> i128 {
        self as i128
    }
}

impl Lane for i128 {
    fn add(self, v: i128) -> (i128, bool) {
        self.overflowing_add(v)
    }
    fn wide(self) -> i128 {
        self
    }
}

/// Rows per group in one batch, counted once for all the accumulators that
/// need no more than that: `count`, the counts of `avg` and the `seen` flags of
/// `sum` over arguments without NULLs (TPC-H Q1 counted its rows four times).
/// Only for few groups ([`LANE_GROUPS`]): the counts span every group.
pub(crate) fn batch_counts(groups: usize, g: &[u32]) -> Option<Vec<i64>> {
    if groups > LANE_GROUPS {
        return None;
    }
    let mut counts = vec![0; groups];
    count_rows(&mut counts, g);
    Some(counts)
}

/// Adds one to `counts[g[i]]` for every row, through [`LANES`] partial counts
/// per group when there are few groups (see [`LANE_GROUPS`]).
pub(super) fn count_rows(counts: &mut [i64], g: &[u32]) {
    if counts.len() > LANE_GROUPS {
        g.iter().for_each(|&gi| counts[gi as usize] += 1);
        return;
    }
    let mut lanes = vec![0u32; counts.len() * LANES];
    let gs = g.chunks_exact(LANES);
    for &gi in gs.remainder() {
        lanes[gi as usize * LANES] += 1;
    }
    for gc in gs {
        for lane in 0..LANES {
            lanes[gc[lane] as usize * LANES + lane] += 1;
        }
    }
    for (c, part) in counts.iter_mut().zip(lanes.chunks_exact(LANES)) {
        *c += part.iter().map(|&p| p as i64).sum::<i64>();
    }
}
