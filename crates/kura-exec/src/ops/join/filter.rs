//! Join-filter pushdown: a small built join table — or a bitmap of its one
//! integer key's span — filters the scan at the bottom of the join's probe side,
//! so rows whose key it does not hold are dropped as they are read — before the
//! scan's own predicates (TPC-H Q19: 485 parts prune lineitem before its string
//! comparisons) and before they travel through the joins in between.
//!
//! A filter that keeps most of the rows it has seen (the build side holds
//! nearly every key) switches itself off: then the join drops the rest as
//! cheaply, and the look-up per scanned row would be lost work.
//!
//! Only for inner and semi joins on plain keys (a probe row without a match
//! leaves no trace in their output), and only through operators that pass the
//! scan's rows on unchanged or drop them (filters, column projections, the
//! probe side of other joins): never through a limit, an aggregation or a
//! materialized (possibly shared) result, whose rows would change.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use kura_common::{Batch, ColumnData, Vector};

use super::JoinTable;
use crate::error::ExecResult;
use crate::expr::{keep_rows, PhysExpr};
use crate::keys::int_key;
use crate::plan::{JoinType, PlanKind, PlanNode};

/// Build sides up to this many rows filter their probe scan: their hash table
/// stays in the cache, so the extra look-up per scanned row is cheap.
pub const MAX_FILTER_BUILD_ROWS: usize = 1 << 16;

/// Rows a filter looks at before it judges whether it pays.
const TRIAL_ROWS: u64 = 1 << 16;

/// A filter keeping more than this fraction of its trial rows stops: the join
/// would drop the few others as cheaply, and every row costs a look-up.
const MAX_KEPT_FRACTION: f64 = 0.8;

/// A one-integer key whose build values span at most this many values is
/// tested against a bitmap of that span (at most 256 KiB, an L2's worth) instead
/// of the hash table: a shift and a mask per scanned row, no hashing.
const MAX_BITMAP_SPAN: u64 = 1 << 21;

/// A wider span still gets a bitmap (up to 32 MiB) when the build side is dense
/// in it, at least one key per this many values — then the bitmap is no larger
/// than the hash table (about 18 bytes per key): a year or a quarter of orders
/// keys among all orders (TPC-H Q5, Q4), whose probe (lineitem, stored by order
/// key) walks the bitmap in order. A sparser build side still gets one when the
/// bitmap has no more bytes than the scan it filters has rows: then clearing and
/// reading it costs less than a hash look-up per scanned row (TPC-H Q12: 31,000
/// lineitem order keys among 6 M filter all 1.5 M orders through 750 KB; Q8:
/// 43,693 among 6 M filter them too, though the date range keeps a third).
/// The cap admits the order keys of TPC-H SF 30 (a span of 180 M, 22.5 MiB):
/// at 8 MiB, Q4's and Q21's lineitem scans there went unfiltered into their
/// semi and anti joins, 114–180 M probe rows each.
const MAX_SPARSE_SPAN: u64 = 1 << 28;
const MAX_VALUES_PER_KEY: u64 = 128;

/// Build sides larger than [`MAX_FILTER_BUILD_ROWS`], up to this many rows, filter
/// their probe scan when their keys fit a bitmap: its look-up costs the same
/// whatever the build side's size (TPC-H Q3 at SF 30: 4.38 M orders filter
/// 97 M `lineitem` rows to 0.9 M).
pub const MAX_BITMAP_BUILD_ROWS: usize = 1 << 23;

/// Keeps the scan rows whose join keys have a match in `table`.
pub struct KeyFilter {
    pub table: Arc<JoinTable>,
    /// Positions of the key columns in the scan's output, one per join key.
    pub columns: Vec<usize>,
    /// The build keys as a bitmap over their span, when there is one key and the
    /// span is small (dimension keys: suppliers of a nation, parts of a brand).
    bits: Option<KeyBits>,
    /// Whether `columns` are all the join's keys (else one key of several, with
    /// `bits` of that key: the hash table, keyed on all, cannot serve it).
    whole: bool,
    /// Of a whole filter on several keys, one integer key's bitmap (its scan
    /// column and bits), tested first: the hash look-up, with all keys gathered,
    /// then runs on the few rows it leaves (TPC-H Q20: 2,127 forest parts leave
    /// 1 % of lineitem before its (part, supplier) pairs are looked up).
    prefilter: Option<(usize, KeyBits)>,
    seen: AtomicU64,
    kept: AtomicU64,
    off: AtomicBool,
}

impl KeyFilter {
    /// The filter a join's built `table` puts on its probe side's scan, if one
    /// pays: the join (its type, probe keys, NULL-safety) must allow one (see
    /// [`target`]). A bitmap filter always pays (the trial switches it off when it
    /// keeps nearly every row); a hash-table look-up only when the scan's rows do
    /// other work before the join, or other filters run anyway.
    /// Returns the scan's node id and the filter.
    pub fn for_join(
        join_type: JoinType,
        probe: &PlanNode,
        probe_keys: &[PhysExpr],
        null_safe: &[bool],
        table: &Arc<JoinTable>,
        scan_has_filters: impl Fn(usize) -> bool,
    ) -> Option<(usize, KeyFilter)> {
        let side = &table.side;
        if side.rows > MAX_BITMAP_BUILD_ROWS {
            return None;
        }
        let filter = |columns, bits, whole| KeyFilter::with(table.clone(), columns, bits, whole);
        if let Some((scan, columns, work)) = target(join_type, probe, probe_keys, null_safe) {
            let rows = filtered_rows(probe, scan);
            let bits = KeyBits::of(side, 0, rows).filter(|_| probe_keys.len() == 1);
            let prefilter = if probe_keys.len() > 1 {
                KeyBits::sparsest(side, 0..probe_keys.len(), rows).map(|(i, b)| (columns[i], b))
            } else {
                None
            };
            // A bitmap always pays: the trial switches a filter off that keeps
            // nearly every row.
            let pays = bits.is_some()
                || prefilter.is_some()
                || side.rows <= MAX_FILTER_BUILD_ROWS && (work || scan_has_filters(scan));
            if pays {
                let mut f = filter(columns, bits, true);
                f.prefilter = prefilter;
                return Some((scan, f));
            }
        }
        // Of several keys, one integer key read by the scan may filter alone: a
        // row whose value of it no build row has has no partner (TPC-H Q5's
        // lineitem, joined on order and nation, filtered by the order keys).
        if probe_keys.len() < 2 {
            return None;
        }
        let traced = |i: usize| {
            let ns = [null_safe.get(i).copied().unwrap_or(false)];
            target(join_type, probe, std::slice::from_ref(&probe_keys[i]), &ns)
        };
        let readable: Vec<(usize, usize)> = (0..probe_keys.len())
            .filter_map(|i| Some((i, traced(i)?.0)))
            .collect();
        let rows = readable
            .iter()
            .map(|&(_, scan)| filtered_rows(probe, scan))
            .fold(0.0, f64::max);
        let (i, bits) = KeyBits::sparsest(side, readable.iter().map(|r| r.0), rows)?;
        let (scan, columns, _) = traced(i)?;
        Some((scan, filter(columns, Some(bits), false)))
    }

    fn with(
        table: Arc<JoinTable>,
        columns: Vec<usize>,
        bits: Option<KeyBits>,
        whole: bool,
    ) -> KeyFilter {
        KeyFilter {
            table,
            columns,
            bits,
            whole,
            prefilter: None,
            seen: AtomicU64::new(0),
            kept: AtomicU64::new(0),
            off: AtomicBool::new(false),
        }
    }

    /// A filter of `table`'s keys on scan columns `columns` (tests).
    #[cfg(test)]
    pub(crate) fn new(table: Arc<JoinTable>, columns: Vec<usize>) -> KeyFilter {
        let bits = KeyBits::of(&table.side, 0, 0.0).filter(|_| columns.len() == 1);
        KeyFilter::with(table, columns, bits, true)
    }

    /// The batch with only its matching rows selected (all its rows once the
    /// filter has found that it keeps nearly all).
    pub fn apply(&self, batch: Batch) -> ExecResult<Batch> {
        if self.off.load(Ordering::Relaxed) {
            return Ok(batch);
        }
        let before = batch.len() as u64;
        let out = self.select(batch)?;
        let seen = self.seen.fetch_add(before, Ordering::Relaxed) + before;
        let kept = self.kept.fetch_add(out.len() as u64, Ordering::Relaxed) + out.len() as u64;
        if seen >= TRIAL_ROWS && kept as f64 > MAX_KEPT_FRACTION * seen as f64 {
            self.off.store(true, Ordering::Relaxed);
        }
        Ok(out)
    }

    fn select(&self, batch: Batch) -> ExecResult<Batch> {
        if let (Some(bits), [c]) = (&self.bits, &self.columns[..]) {
            if let Some(selection) = bits.select(&batch.columns[*c], &batch) {
                return Ok(Batch { selection, ..batch });
            }
        }
        if !self.whole {
            return Ok(batch);
        }
        let batch = match &self.prefilter {
            Some((c, bits)) => match bits.select(&batch.columns[*c], &batch) {
                Some(selection) => Batch { selection, ..batch },
                None => batch,
            },
            None => batch,
        };
        if let Some(live) = batch
            .selection
            .as_ref()
            .filter(|l| l.len() * 4 <= batch.num_rows)
        {
            // Few rows left: their keys are gathered and looked up alone.
            let keys: Vec<Vector> = self
                .columns
                .iter()
                .map(|&c| batch.columns[c].take(live))
                .collect();
            let mut rows = Vec::with_capacity(live.len());
            self.table
                .index
                .matching_rows(&keys, live.len(), &mut rows)?;
            let selection = Some(rows.iter().map(|&r| live[r as usize]).collect());
            return Ok(Batch { selection, ..batch });
        }
        // One key (the usual case) is looked up in place; several are gathered.
        let gathered: Vec<Vector>;
        let keys: &[Vector] = match self.columns[..] {
            [c] => std::slice::from_ref(&batch.columns[c]),
            _ => {
                gathered = self
                    .columns
                    .iter()
                    .map(|&c| batch.columns[c].clone())
                    .collect();
                &gathered
            }
        };
        let mut rows = Vec::with_capacity(batch.num_rows);
        self.table
            .index
            .matching_rows(keys, batch.num_rows, &mut rows)?;
        let selection = match &batch.selection {
            // Both ascending: keep the live rows that match.
            Some(live) => {
                let mut out = Vec::with_capacity(live.len().min(rows.len()));
                let mut j = 0;
                for &r in live {
                    while j < rows.len() && rows[j] < r {
                        j += 1;
                    }
                    if j < rows.len() && rows[j] == r {
                        out.push(r);
                    }
                }
                Some(out)
            }
            None if rows.len() == batch.num_rows => None,
            None => Some(rows),
        };
        Ok(Batch { selection, ..batch })
    }
}

/// The set of a one-integer build key as a bitmap over `[min, min + span)`.
struct KeyBits {
    min: i64,
    /// One bit per value of `[min, min + span)`, the bits past the span zero.
    words: Vec<u64>,
}

impl KeyBits {
    /// The bitmap of a build side's key `key`, if it is an integer key (not
    /// NULL-safe) whose values span few enough values, or are dense in their span.
    fn of(side: &super::BuildSide, key: usize, probe_rows: f64) -> Option<KeyBits> {
        let key_is_int = matches!(side.keys[key].data, ColumnData::I32(_) | ColumnData::I64(_));
        if !key_is_int || side.null_safe.get(key).copied().unwrap_or(false) {
            return None;
        }
        let key = &side.keys[key];
        let rows = side.rows.min(key.len());
        // Without NULLs the keys are read as a slice (the bounds in two
        // vectorised passes): a build side of 1.46 M order keys (TPC-H Q7 at
        // SF 10) took 7–30 ms a row at a time, alone on one core.
        let (min, max) = match (&key.data, &key.validity) {
            (ColumnData::I32(v), None) => slice_bounds(&v[..rows])?,
            (ColumnData::I64(v), None) => slice_bounds(&v[..rows])?,
            _ => (0..rows).filter_map(|r| int_key(key, r)).fold(
                None,
                |mm: Option<(i64, i64)>, v| {
                    Some(mm.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
                },
            )?,
        };
        let span = (max as i128 - min as i128 + 1) as u128;
        let dense = span <= MAX_SPARSE_SPAN as u128
            && (span <= side.rows as u128 * MAX_VALUES_PER_KEY as u128
                || (span / 8) as f64 <= probe_rows);
        if span > MAX_BITMAP_SPAN as u128 && !dense {
            return None;
        }
        let span = span as u64;
        let mut words = vec![0u64; span.div_ceil(64) as usize];
        let mut set = |v: i64| {
            let o = (v - min) as u64;
            words[(o >> 6) as usize] |= 1 << (o & 63);
        };
        match (&key.data, &key.validity) {
            (ColumnData::I32(v), None) => v[..rows].iter().for_each(|&x| set(x as i64)),
            (ColumnData::I64(v), None) => v[..rows].iter().for_each(|&x| set(x)),
            _ => (0..rows).filter_map(|r| int_key(key, r)).for_each(set),
        }
        Some(KeyBits { min, words })
    }

    /// Of the build side's keys `keys`, the one whose bitmap has the smallest
    /// fraction of its span set — the one that drops the most probe rows when
    /// those spread over the span (TPC-H Q9: 10,664 green parts among 200,000
    /// part keys, not its 10,000 suppliers, all present) — with its bitmap.
    fn sparsest(
        side: &super::BuildSide,
        keys: impl Iterator<Item = usize>,
        probe_rows: f64,
    ) -> Option<(usize, KeyBits)> {
        keys.filter_map(|i| Some((i, KeyBits::of(side, i, probe_rows)?)))
            .min_by(|(_, a), (_, b)| a.fill().total_cmp(&b.fill()))
    }

    /// The fraction of the span's values that are keys.
    fn fill(&self) -> f64 {
        let set: u64 = self.words.iter().map(|w| w.count_ones() as u64).sum();
        set as f64 / (self.words.len() as f64 * 64.0)
    }

    #[inline]
    fn contains(&self, v: i64) -> bool {
        // Bits past the span are zero, and a key below the minimum wraps to
        // an offset past the words: one bounds test covers both ends.
        let o = v.wrapping_sub(self.min) as u64;
        self.words
            .get((o >> 6) as usize)
            .is_some_and(|w| w >> (o & 63) & 1 != 0)
    }

    /// The batch's new selection: its live rows whose key is in the set (NULL
    /// never is); `None` when the probe column is not an integer column.
    fn select(&self, probe: &Vector, batch: &Batch) -> Option<Option<Vec<u32>>> {
        let (valid, live, n) = (
            probe.validity.as_deref(),
            batch.selection.as_deref(),
            batch.num_rows,
        );
        let kept = match &probe.data {
            ColumnData::I32(v) => keep_rows(valid, live, n, |r| self.contains(v[r] as i64)),
            ColumnData::I64(v) => keep_rows(valid, live, n, |r| self.contains(v[r])),
            _ => return None,
        };
        Some((live.is_some() || kept.len() < n).then_some(kept))
    }
}

/// The smallest and largest of `v`, `None` when it is empty.
fn slice_bounds<T: Copy + Ord + Into<i64>>(v: &[T]) -> Option<(i64, i64)> {
    Some(((*v.iter().min()?).into(), (*v.iter().max()?).into()))
}

/// The scan node (its id) that output column `col` of `node` is read by, the
/// column's position in that scan's output, and whether rows do work on the
/// way up (the scan's own filter, other filters or joins), if the rows reach
/// `node` from the scan only dropped, repeated or widened.
fn trace(node: &PlanNode, col: usize) -> Option<(usize, usize, bool)> {
    match &node.kind {
        PlanKind::Scan { filter, .. } => Some((node.id, col, filter.is_some())),
        PlanKind::Filter { input, .. } => trace(input, col).map(|(id, c, _)| (id, c, true)),
        PlanKind::Project { input, exprs } => match exprs.get(col)? {
            PhysExpr::Column { index, .. } => trace(input, *index),
            _ => None,
        },
        PlanKind::Join {
            join_type:
                JoinType::Inner
                | JoinType::Left
                | JoinType::Right
                | JoinType::Semi
                | JoinType::Anti
                | JoinType::Mark,
            probe,
            ..
        } if col < probe.output.len() => trace(probe, col).map(|(id, c, _)| (id, c, true)),
        _ => None,
    }
}

/// How many rows a filter on scan `id` (a node of `probe`) looks at: all the rows of
/// its table, since the filter runs before the scan's own predicates (the probe
/// side's estimate, after them, can be far fewer: TPC-H Q8's orders in two years
/// are a third of the 1.5 M the filter tests).
fn filtered_rows(probe: &PlanNode, id: usize) -> f64 {
    fn find(node: &PlanNode, id: usize) -> Option<f64> {
        if node.id == id {
            return match &node.kind {
                PlanKind::Scan { table, .. } => Some(table.row_count() as f64),
                _ => None,
            };
        }
        node.children().into_iter().find_map(|c| find(c, id))
    }
    find(probe, id).unwrap_or(probe.estimated_rows)
}

/// Where a join's built table may filter its probe side: the scan's node id,
/// the key columns' positions in its output, and whether the scan's rows do
/// work before they reach the join (a filter, other joins). Without such work
/// the filter only pays when the scan has other filters too (the smallest
/// table then filters first): alone, it would look up the rows the join drops
/// as cheaply.
fn target(
    join_type: JoinType,
    probe: &PlanNode,
    probe_keys: &[PhysExpr],
    null_safe: &[bool],
) -> Option<(usize, Vec<usize>, bool)> {
    if !matches!(
        join_type,
        JoinType::Inner
            | JoinType::Right
            | JoinType::Semi
            | JoinType::RightSemi
            | JoinType::RightAnti
    ) || null_safe.iter().any(|&n| n)
        || probe_keys.is_empty()
    {
        return None;
    }
    let mut scan = None;
    let mut columns = Vec::new();
    let mut work = false;
    for k in probe_keys {
        let PhysExpr::Column { index, .. } = k else {
            return None;
        };
        let (id, c, w) = trace(probe, *index)?;
        if scan.is_some_and(|s| s != id) {
            return None;
        }
        scan = Some(id);
        columns.push(c);
        work |= w;
    }
    Some((scan?, columns, work))
}

#[cfg(test)]
mod tests {
    use kura_common::{DataType, Value};

    use super::*;
    use crate::source::{MemTable, SourceColumn};

    #[test]
    fn key_bits_hold_exactly_their_keys() {
        // Keys 10, 12 and 75: a span of 66 values in two words.
        let mut words = vec![0u64; 2];
        for o in [0u64, 2, 65] {
            words[(o >> 6) as usize] |= 1 << (o & 63);
        }
        let bits = KeyBits { min: 10, words };
        let inside: Vec<i64> = (-5..140).filter(|&v| bits.contains(v)).collect();
        assert_eq!(inside, vec![10, 12, 75]);
        for far in [i64::MIN, i64::MIN + 10, -1, 128, i64::MAX] {
            assert!(!bits.contains(far), "{far}");
        }
    }

    #[test]
    fn key_bits_of_a_build_side_with_and_without_nulls() {
        // The slice way (no NULLs; 32 and 64 bits) and the row way (NULLs
        // skipped) give the same bitmap of the keys.
        let keys = [-7i64, 300, 12, -7, 55];
        let with_null = [
            Some(-7),
            None,
            Some(300),
            Some(12),
            None,
            Some(-7),
            Some(55),
        ];
        let sides = [
            (DataType::Integer, keys.map(Some).to_vec()),
            (DataType::BigInt, keys.map(Some).to_vec()),
            (DataType::Integer, with_null.to_vec()),
            (DataType::BigInt, with_null.to_vec()),
        ];
        for (dt, values) in sides {
            let vals: Vec<Value> = values
                .iter()
                .map(|v| match (v, dt) {
                    (None, _) => Value::Null,
                    (Some(k), DataType::Integer) => Value::Integer(*k as i32),
                    (Some(k), _) => Value::BigInt(*k),
                })
                .collect();
            let key = Vector::from_values(dt, &vals).unwrap();
            let side = super::super::BuildSide {
                columns: vec![key.clone()],
                keys: vec![key],
                rows: vals.len(),
                has_null_key: values.contains(&None),
                null_safe: vec![false],
            };
            let bits = KeyBits::of(&side, 0, 0.0).expect("a narrow span has a bitmap");
            let inside: Vec<i64> = (-20..320).filter(|&v| bits.contains(v)).collect();
            assert_eq!(inside, vec![-7, 12, 55, 300], "{dt:?} {values:?}");
        }
        // All keys NULL: no bitmap (no bounds).
        let key = Vector::from_values(DataType::Integer, &[Value::Null]).unwrap();
        let side = super::super::BuildSide {
            columns: vec![key.clone()],
            keys: vec![key],
            rows: 1,
            has_null_key: true,
            null_safe: vec![false],
        };
        assert!(KeyBits::of(&side, 0, 0.0).is_none());
    }

    fn scan() -> PlanNode {
        let v = Vector::from_values(DataType::Integer, &[Value::Integer(1)]).unwrap();
        let t = MemTable::new(
            "t",
            vec![
                SourceColumn {
                    name: "a".into(),
                    data_type: DataType::Integer,
                    nullable: true,
                },
                SourceColumn {
                    name: "b".into(),
                    data_type: DataType::Integer,
                    nullable: true,
                },
            ],
            vec![v.clone(), v],
        )
        .into_arc();
        PlanNode::new(
            "table_scan",
            PlanKind::Scan {
                table: t,
                columns: vec![0, 1],
                zone_predicates: vec![],
                filter: None,
            },
            vec![DataType::Integer; 2],
            1.0,
        )
    }

    fn col(index: usize) -> PhysExpr {
        PhysExpr::Column {
            index,
            data_type: DataType::Integer,
        }
    }

    fn join(join_type: JoinType, probe: PlanNode, build: PlanNode) -> PlanNode {
        let output = probe.output.iter().chain(&build.output).copied().collect();
        PlanNode::new(
            "hash_join",
            PlanKind::Join {
                join_type,
                probe: Box::new(probe),
                build: Box::new(build),
                probe_keys: vec![col(0)],
                build_keys: vec![col(0)],
                residual: None,
                null_safe: vec![false],
            },
            output,
            1.0,
        )
    }

    /// A filter over `input` (work the scan's rows do before the join).
    fn filtered(input: PlanNode) -> PlanNode {
        let output = input.output.clone();
        PlanNode::new(
            "filter",
            PlanKind::Filter {
                input: Box::new(input),
                predicate: col(0),
            },
            output,
            1.0,
        )
    }

    fn numbered(mut p: PlanNode) -> PlanNode {
        p.number();
        p
    }

    #[test]
    fn finds_the_scan_through_filters_projections_and_probe_sides() {
        // project [b, a] over filter over a left join whose probe is the scan.
        let inner = join(JoinType::Left, scan(), scan());
        let filtered = PlanNode::new(
            "filter",
            PlanKind::Filter {
                input: Box::new(inner),
                predicate: col(1),
            },
            vec![DataType::Integer; 4],
            1.0,
        );
        let p = numbered(PlanNode::new(
            "project",
            PlanKind::Project {
                input: Box::new(filtered),
                exprs: vec![col(1), col(0)],
            },
            vec![DataType::Integer; 2],
            1.0,
        ));
        // Output 0 is the scan's column 1; the scan is node 3 (project,
        // filter, join, scan in pre-order).
        assert_eq!(
            target(JoinType::Inner, &p, &[col(0)], &[false]),
            Some((3, vec![1], true))
        );
        assert_eq!(
            target(JoinType::Semi, &p, &[col(1)], &[false]),
            Some((3, vec![0], true))
        );
    }

    fn int_batch(values: &[Option<i32>]) -> Batch {
        let vals: Vec<Value> = values
            .iter()
            .map(|v| v.map_or(Value::Null, Value::Integer))
            .collect();
        Batch::new(vec![Vector::from_values(DataType::Integer, &vals).unwrap()])
    }

    /// A built join table over integer key columns (one per key).
    fn join_table(keys: &[&[i32]]) -> Arc<JoinTable> {
        use crate::ops::join::hash::HashJoin;
        use crate::ops::join::{BuildSide, JoinAlgorithm};
        let columns: Vec<Vector> = keys
            .iter()
            .map(|k| int_batch(&k.iter().map(|&v| Some(v)).collect::<Vec<_>>()).columns[0].clone())
            .collect();
        let side = BuildSide {
            columns: columns.clone(),
            keys: columns,
            rows: keys[0].len(),
            has_null_key: false,
            null_safe: vec![false; keys.len()],
        };
        let index = HashJoin
            .index(&side, &crate::context::ExecContext::unbounded())
            .unwrap();
        Arc::new(JoinTable {
            side,
            index,
            correlation: None,
            protection: None,
            held: None,
        })
    }

    fn key_filter(keys: &[i32]) -> KeyFilter {
        KeyFilter::new(join_table(&[keys]), vec![0])
    }

    #[test]
    fn one_key_of_several_filters_through_its_bitmap() {
        // Probe: scan ⋈ scan; the join keys are the probe scan's column 0 and the
        // inner join's build column 2, from different scans.
        let probe = numbered(join(JoinType::Inner, filtered(scan()), scan()));
        let table = join_table(&[&[10, 20, 30], &[1, 2, 3]]);
        let (at, f) = KeyFilter::for_join(
            JoinType::Inner,
            &probe,
            &[col(0), col(2)],
            &[false, false],
            &table,
            |_| false,
        )
        .expect("the first key filters alone");
        assert_eq!((at, f.columns.clone(), f.whole), (2, vec![0], false));
        let out = f
            .select(int_batch(&[Some(20), Some(21), None, Some(30)]))
            .unwrap();
        assert_eq!(live(&out), vec![0, 3]);
        // Not for a join that keeps unmatched probe rows.
        assert!(KeyFilter::for_join(
            JoinType::Left,
            &probe,
            &[col(0), col(2)],
            &[false, false],
            &table,
            |_| false
        )
        .is_none());
    }

    #[test]
    fn a_bitmap_of_one_key_prefilters_a_whole_filter_on_several() {
        // Both keys are the probe scan's columns; the scan has filters, so the
        // hash table on (a, b) filters it, behind a bitmap of a.
        let probe = numbered(filtered(scan()));
        let table = join_table(&[&[10, 20, 30], &[1, 2, 3]]);
        let (_, f) = KeyFilter::for_join(
            JoinType::Inner,
            &probe,
            &[col(0), col(1)],
            &[false, false],
            &table,
            |_| true,
        )
        .expect("a whole filter");
        assert!(f.whole && f.prefilter.is_some() && f.columns == vec![0, 1]);
        let pairs = |rows: &[(Option<i32>, i32)]| {
            let a: Vec<Value> = rows
                .iter()
                .map(|r| r.0.map_or(Value::Null, Value::Integer))
                .collect();
            let b: Vec<Value> = rows.iter().map(|r| Value::Integer(r.1)).collect();
            Batch::new(vec![
                Vector::from_values(DataType::Integer, &a).unwrap(),
                Vector::from_values(DataType::Integer, &b).unwrap(),
            ])
        };
        // Few rows pass the bitmap (the gathered look-up) ...
        let mut rows = vec![
            (Some(20), 2),
            (Some(20), 3),
            (Some(21), 2),
            (None, 1),
            (Some(30), 3),
        ];
        rows.extend((0..40).map(|i| (Some(1000 + i), 0)));
        assert_eq!(live(&f.select(pairs(&rows)).unwrap()), vec![0, 4]);
        // ... or most do (the look-up in place): the same answer.
        let rows = [
            (Some(20), 2),
            (Some(20), 3),
            (Some(10), 1),
            (Some(30), 2),
            (Some(30), 3),
        ];
        assert_eq!(live(&f.select(pairs(&rows)).unwrap()), vec![0, 2, 4]);
    }

    #[test]
    fn wide_spans_get_a_bitmap_only_when_dense() {
        let t = |keys: Vec<i32>| join_table(&[&keys]);
        // Span 2^21: a bitmap whatever the count.
        assert!(KeyBits::of(&t(vec![0, (1 << 21) - 1]).side, 0, 0.0).is_some());
        // Span 2^23 + 1 with 2 keys: too sparse; with 2^16 + 1 keys, dense enough.
        assert!(KeyBits::of(&t(vec![0, 1 << 23]).side, 0, 0.0).is_none());
        let dense: Vec<i32> = (0..=(1 << 16)).map(|i| i * 128).collect();
        let bits = KeyBits::of(&t(dense).side, 0, 0.0).expect("one key per 128 values");
        assert!(bits.contains(1 << 23) && !bits.contains(129) && !bits.contains(-128));
        // The 2-key span of 2^23 + 1 (1 MiB of bits) is worth it for 2^20 probe rows.
        let bits = KeyBits::of(&t(vec![0, 1 << 23]).side, 0, (1 << 20) as f64).expect("probe");
        assert!(bits.contains(0) && bits.contains(1 << 23) && !bits.contains(1));
        assert!(KeyBits::of(&t(vec![0, 1 << 23]).side, 0, (1 << 20) as f64 - 1.0).is_none());
        // Never wider than 2^28, however dense or long the probe side.
        assert!(KeyBits::of(&t(vec![0, 1 << 28]).side, 0, 1e12).is_none());
        // A span of 2^27 + 1 is filtered by a bitmap of 16 MiB when the scan
        // reads more rows than that has bytes (TPC-H SF 30's order keys).
        let bits = KeyBits::of(&t(vec![0, 1 << 27]).side, 0, (1 << 24) as f64).expect("wide");
        assert!(bits.contains(1 << 27) && !bits.contains(1 << 26));
    }

    #[test]
    fn a_sparse_bitmap_is_weighed_against_the_rows_the_scan_reads() {
        // Two build keys 2^23 apart (1 MiB of bits) filter a scan of 2^20 rows whose
        // own predicate leaves an estimated 1,000: the filter runs before that
        // predicate, on all 2^20 rows, so the bitmap is worth it.
        let n = 1 << 20;
        let v = Vector::from_values(DataType::Integer, &vec![Value::Integer(7); n]).unwrap();
        let column = SourceColumn {
            name: "a".into(),
            data_type: DataType::Integer,
            nullable: true,
        };
        let big = MemTable::new("big", vec![column], vec![v]).into_arc();
        let scan = PlanNode::new(
            "table_scan",
            PlanKind::Scan {
                table: big,
                columns: vec![0],
                zone_predicates: vec![],
                filter: Some(col(0)),
            },
            vec![DataType::Integer],
            1000.0,
        );
        let probe = numbered(scan);
        assert_eq!(filtered_rows(&probe, probe.id), n as f64);
        let table = join_table(&[&[0, 1 << 23]]);
        let (_, f) =
            KeyFilter::for_join(JoinType::Inner, &probe, &[col(0)], &[false], &table, |_| {
                true
            })
            .expect("a filter");
        assert!(f.bits.is_some(), "a bitmap, not a look-up per row");
        // Had the scan 1,000 rows, the look-up would do.
        assert!(KeyBits::of(&table.side, 0, 1000.0).is_none());
    }

    fn live(b: &Batch) -> Vec<u32> {
        b.selection
            .clone()
            .unwrap_or_else(|| (0..b.num_rows as u32).collect())
    }

    #[test]
    fn keeps_rows_with_a_match_and_drops_null_keys() {
        let f = key_filter(&[2, 4]);
        let out = f
            .apply(int_batch(&[Some(1), Some(2), None, Some(4), Some(2)]))
            .unwrap();
        assert_eq!(live(&out), vec![1, 3, 4]);
        // A batch with a selection keeps only its live rows that match.
        let mut b = int_batch(&[Some(2), Some(2), Some(3), Some(4)]);
        b.selection = Some(vec![1, 2]);
        assert_eq!(live(&f.apply(b).unwrap()), vec![1]);
    }

    #[test]
    fn bitmap_and_hash_table_keep_the_same_rows() {
        // A narrow span gets a bitmap; a wide one (1 and 2^30) the hash table.
        let narrow = key_filter(&[3, 5, 64, 65, 1000, -7]);
        assert!(narrow.bits.is_some());
        let wide = key_filter(&[3, 5, 64, 65, 1000, -7, 1 << 30]);
        assert!(wide.bits.is_none());
        let probe: Vec<Option<i32>> = (-10..1100)
            .map(|v| (v % 17 != 0).then_some(v))
            .chain([Some(i32::MIN), Some(i32::MAX), Some(1 << 30)])
            .collect();
        let expect: Vec<u32> = probe
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_some_and(|v| [3, 5, 64, 65, 1000, -7].contains(&v)))
            .map(|(i, _)| i as u32)
            .collect();
        assert_eq!(live(&narrow.select(int_batch(&probe)).unwrap()), expect);
        let mut with_wide = expect.clone();
        with_wide.push(probe.len() as u32 - 1);
        assert_eq!(live(&wide.select(int_batch(&probe)).unwrap()), with_wide);
        // Through a selection, and on 64-bit probe keys.
        let mut b = int_batch(&probe);
        b.selection = Some(vec![0, 13, 14, 75, 1010]);
        assert_eq!(live(&narrow.select(b).unwrap()), vec![13, 75, 1010]);
        let big = Vector::from_values(
            DataType::BigInt,
            &[
                Value::BigInt(64),
                Value::BigInt(i64::MIN),
                Value::Null,
                Value::BigInt(-7),
            ],
        )
        .unwrap();
        assert_eq!(
            live(&narrow.select(Batch::new(vec![big])).unwrap()),
            vec![0, 3]
        );
    }

    #[test]
    fn switches_off_when_it_keeps_nearly_every_row() {
        let rows = TRIAL_ROWS as usize + 1;
        // Selective: after the trial it still filters.
        let f = key_filter(&[7]);
        let mut values = vec![Some(1); rows];
        values[0] = Some(7);
        assert_eq!(live(&f.apply(int_batch(&values)).unwrap()), vec![0]);
        assert_eq!(
            live(&f.apply(int_batch(&[Some(1), Some(7)])).unwrap()),
            vec![1]
        );
        // Keeping everything: after the trial rows pass unfiltered (the join drops
        // them, so answers stay the same).
        let f = key_filter(&[1]);
        assert_eq!(
            f.apply(int_batch(&vec![Some(1); rows])).unwrap().len(),
            rows
        );
        assert_eq!(
            live(&f.apply(int_batch(&[Some(2), Some(1)])).unwrap()),
            vec![0, 1]
        );
    }

    #[test]
    fn says_whether_rows_do_work_before_the_join() {
        // Straight from an unfiltered scan.
        assert_eq!(
            target(JoinType::Inner, &numbered(scan()), &[col(0)], &[false]),
            Some((0, vec![0], false))
        );
        // Before a filter: the scan is node 1, below the filter.
        assert_eq!(
            target(
                JoinType::Inner,
                &numbered(filtered(scan())),
                &[col(0)],
                &[false]
            ),
            Some((1, vec![0], true))
        );
    }

    #[test]
    fn refuses_what_would_change_rows() {
        let s = numbered(filtered(scan()));
        // Join types that keep unmatched probe rows, NULL-safe keys, large builds.
        for jt in [
            JoinType::Left,
            JoinType::Anti,
            JoinType::Single,
            JoinType::Mark,
        ] {
            assert_eq!(target(jt, &s, &[col(0)], &[false]), None);
        }
        assert_eq!(target(JoinType::Inner, &s, &[col(0)], &[true]), None);
        // Not through a limit (other rows would pass it) nor the build side of a
        // join, nor from a computed key.
        let limited = numbered(PlanNode::new(
            "limit",
            PlanKind::Limit {
                input: Box::new(filtered(scan())),
                offset: 0,
                limit: Some(1),
            },
            vec![DataType::Integer; 2],
            1.0,
        ));
        assert_eq!(target(JoinType::Inner, &limited, &[col(0)], &[false]), None);
        let j = numbered(join(JoinType::Inner, filtered(scan()), scan()));
        assert_eq!(target(JoinType::Inner, &j, &[col(2)], &[false]), None);
        let computed = PhysExpr::Negate(Box::new(col(0)));
        assert_eq!(target(JoinType::Inner, &s, &[computed], &[false]), None);
    }
}
