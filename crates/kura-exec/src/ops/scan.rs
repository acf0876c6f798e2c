//! Table scan: morsels of at most [`MORSEL_ROWS`] rows within a row group (whole groups of
//! a source that decodes a group at a time); page min/max (zone maps) narrow each row
//! group to the row ranges that can satisfy the pushed-down predicates, then the
//! remaining rows are read batch by batch and filtered. The scan names the pages
//! of each morsel so the out-of-order mode can fix them asynchronously first
//! (paper 003).

use std::ops::Range;
use std::sync::Arc;

use hashbrown::HashSet;
use kura_common::types::PhysicalType;
use kura_common::{Batch, Value, Vector, BATCH_SIZE};
use kura_storage::{BufferManager, PageId};

use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::{eval_predicate, BinaryOp, PhysExpr};
use crate::ops::join::filter::KeyFilter;
use crate::pipeline::{Emit, Source};
use crate::plan::ZonePredicate;
use crate::sample::{system_blocks, SampleMethod, TableSample};
use crate::source::{TableSource, Zone};

/// Whether a page with this min/max can hold a value satisfying `col op value`.
pub fn zone_may_match(zone: &Zone, op: BinaryOp, value: &Value) -> bool {
    if zone.min.is_null() || zone.max.is_null() {
        // All NULL (or unknown): comparisons are never true, unless stats are missing.
        return zone.null_count < zone.row_count;
    }
    if let (Value::Text(min), Value::Text(max), Value::Text(v)) = (&zone.min, &zone.max, value) {
        // The zone does not say whether its column is CHAR (trailing blanks ignored) or
        // VARCHAR (significant): a page is skipped only if neither reading can match.
        let t = |x: &String| x.trim_end_matches(' ').to_string();
        return range_may_match(min.cmp(v), max.cmp(v), op)
            || range_may_match(t(min).cmp(&t(v)), t(max).cmp(&t(v)), op);
    }
    range_may_match(zone.min.total_cmp(value), zone.max.total_cmp(value), op)
}

/// Whether values between a minimum and a maximum comparing `lo` and `hi` with a constant
/// can satisfy `op` against it.
fn range_may_match(lo: std::cmp::Ordering, hi: std::cmp::Ordering, op: BinaryOp) -> bool {
    match op {
        BinaryOp::Eq => lo.is_le() && hi.is_ge(),
        BinaryOp::NotEq => !(lo.is_eq() && hi.is_eq()),
        BinaryOp::Lt => lo.is_lt(),
        BinaryOp::LtEq => lo.is_le(),
        BinaryOp::Gt => hi.is_gt(),
        BinaryOp::GtEq => hi.is_ge(),
        _ => true,
    }
}

fn intersect(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let s = a[i].start.max(b[j].start);
        let e = a[i].end.min(b[j].end);
        if s < e {
            out.push(s..e);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn push_range(out: &mut Vec<Range<u64>>, r: Range<u64>) {
    if let Some(last) = out.last_mut() {
        if last.end == r.start {
            last.end = r.end;
            return;
        }
    }
    out.push(r);
}

/// Reads columns of a table, skipping pages the zone maps rule out.
pub struct ScanSource {
    pub table: Arc<dyn TableSource>,
    pub columns: Vec<usize>,
    pub filter: Option<PhysExpr>,
    /// Filters from built join tables above (join-filter pushdown), applied
    /// before `filter`.
    pub key_filters: Vec<Arc<KeyFilter>>,
    /// Per output column: whether a join filter reads it (read first).
    keyed: Vec<bool>,
    /// Per output column: whether `filter` leaves it unread, so it is read
    /// after the filter has run; `None` when no column would wait.
    late: Option<Vec<bool>>,
    pub node: usize,
    /// Row ranges that may hold matches (all rows when there is no zone predicate).
    candidates: Vec<Range<u64>>,
    /// The row ranges of each morsel: candidate rows of one row group, cut into
    /// pieces of at most [`MORSEL_ROWS`] so that even a small table gives every
    /// worker work, in row order.
    morsels: Morsels,
    /// `TABLESAMPLE BERNOULLI`: the rows of each batch kept (SYSTEM is applied
    /// to `candidates` instead, so its skipped pages are never read).
    bernoulli: Option<TableSample>,
}

/// A join filter keeping at most one row in this many makes the scan fetch its
/// other text columns at those rows only: per row a page look-up and a one-value
/// decode, cheaper than decoding whole pages of text once rows are this sparse.
const SPARSE_FETCH_FRACTION: usize = 64;

/// When a join filter keeps at most one row in this many, the scan's other
/// columns decode only the kept rows (one load per bit-packed value) instead of
/// the whole range: TPC-H Q3's and Q10's `lineitem` keep a tenth or less.
const SELECTED_DECODE_FRACTION: usize = 4;

/// Rows of one scan morsel (a multiple of the batch size).
pub const MORSEL_ROWS: u64 = 4 * BATCH_SIZE as u64;

/// Per output column of `columns` columns: whether `filter` does not read it,
/// so it can wait until the filter has run; `None` when no column would wait.
fn late_columns(filter: &PhysExpr, columns: usize) -> Option<Vec<bool>> {
    let mut used = Vec::new();
    filter.columns(&mut used);
    let late: Vec<bool> = (0..columns).map(|i| !used.contains(&i)).collect();
    (used.iter().any(|&i| i < late.len()) && late.contains(&true)).then_some(late)
}

/// A scan's morsels: listed, or numbered when every row is a candidate and the
/// table's row groups are uniform (a `generate_series` of a trillion rows would
/// list 120 million morsels, gigabytes, before reading its first row).
enum Morsels {
    Listed(Vec<Vec<Range<u64>>>),
    /// Morsel `i` is rows `i * rows_each ..` (the last one shorter) of `rows`.
    Numbered {
        rows: u64,
        rows_each: u64,
    },
}

impl Morsels {
    fn len(&self) -> usize {
        match self {
            Morsels::Listed(m) => m.len(),
            Morsels::Numbered { rows, rows_each } => rows.div_ceil(*rows_each) as usize,
        }
    }

    fn get(&self, i: usize) -> Option<std::borrow::Cow<'_, [Range<u64>]>> {
        match self {
            Morsels::Listed(m) => m.get(i).map(|r| std::borrow::Cow::Borrowed(r.as_slice())),
            Morsels::Numbered { rows, rows_each } => {
                let start = (i as u64).checked_mul(*rows_each).filter(|s| s < rows)?;
                let end = start.saturating_add(*rows_each).min(*rows);
                Some(std::borrow::Cow::Owned(
                    std::iter::once(start..end).collect(),
                ))
            }
        }
    }
}

/// The candidate rows of `table`'s row groups cut into morsels.
fn listed_morsels(table: &dyn TableSource, candidates: &[Range<u64>]) -> Vec<Vec<Range<u64>>> {
    let n = table.row_count();
    let mut groups = table.row_groups();
    if groups.is_empty() && n > 0 {
        groups = std::iter::once(0..n).collect();
    }
    let morsel_rows = if table.decodes_whole_groups() && groups.len() > 1 {
        // A group's first read decodes all of it; with several groups, each worker
        // takes whole ones rather than waiting on another's decode of a shared group.
        u64::MAX
    } else {
        MORSEL_ROWS
    };
    cut_morsels(&groups, candidates, morsel_rows)
}

/// The candidate rows of each group cut into morsels of at most `morsel_rows` rows.
fn cut_morsels(
    groups: &[Range<u64>],
    candidates: &[Range<u64>],
    morsel_rows: u64,
) -> Vec<Vec<Range<u64>>> {
    let mut morsels = Vec::new();
    for group in groups {
        let mut current: Vec<Range<u64>> = Vec::new();
        let mut rows = 0;
        for r in intersect(std::slice::from_ref(group), candidates) {
            let mut start = r.start;
            while start < r.end {
                let end = r.end.min(start.saturating_add(morsel_rows - rows));
                current.push(start..end);
                rows += end - start;
                start = end;
                if rows == morsel_rows {
                    morsels.push(std::mem::take(&mut current));
                    rows = 0;
                }
            }
        }
        if !current.is_empty() {
            morsels.push(current);
        }
    }
    morsels
}

impl ScanSource {
    pub fn new(
        table: Arc<dyn TableSource>,
        columns: Vec<usize>,
        zone_predicates: &[ZonePredicate],
        filter: Option<PhysExpr>,
        node: usize,
    ) -> ScanSource {
        table.project(&columns);
        let n = table.row_count();
        let mut candidates = std::iter::once(0..n).collect::<Vec<_>>();
        for p in zone_predicates {
            let zones = table.zones(p.table_column);
            if zones.is_empty() {
                continue;
            }
            let mut keep = Vec::new();
            for z in &zones {
                if zone_may_match(z, p.op, &p.value) {
                    push_range(&mut keep, z.first_row..z.first_row + z.row_count);
                }
            }
            candidates = intersect(&candidates, &keep);
        }
        let sample = table.sample().cloned();
        if let Some(s) = sample.as_ref().filter(|s| s.method == SampleMethod::System) {
            let mut keep = Vec::new();
            for block in system_blocks(table.as_ref()) {
                if s.keeps(block.start) {
                    push_range(&mut keep, block);
                }
            }
            candidates = intersect(&candidates, &keep);
        }
        let bernoulli = sample.filter(|s| s.method == SampleMethod::Bernoulli);
        let every_row = candidates.len() == 1 && candidates[0] == (0..n);
        let morsels = match table.uniform_row_groups() {
            Some(group) if every_row && group % MORSEL_ROWS == 0 => Morsels::Numbered {
                rows: n,
                rows_each: MORSEL_ROWS,
            },
            _ => Morsels::Listed(listed_morsels(table.as_ref(), &candidates)),
        };
        let late = filter.as_ref().and_then(|f| late_columns(f, columns.len()));
        ScanSource {
            table,
            columns,
            filter,
            key_filters: Vec::new(),
            keyed: Vec::new(),
            late,
            node,
            candidates,
            morsels,
            bernoulli,
        }
    }

    /// Rows `first_row + sel[i]` (a BERNOULLI sample's) through the join filters:
    /// only the sampled rows are decoded.
    fn read_sampled(&self, row: u64, len: usize, sel: &[u32]) -> ExecResult<Batch> {
        if self.columns.is_empty() || sel.is_empty() {
            // Nothing to decode: a count, or no row of this batch sampled.
            return Ok(Batch::with_rows(sel.len()));
        }
        let cols = self
            .columns
            .iter()
            .map(|&c| self.table.read_selected(c, row, len, sel))
            .collect::<ExecResult<Vec<_>>>()?;
        let mut batch = Batch::new(cols);
        for k in &self.key_filters {
            batch = k.apply(batch)?;
        }
        Ok(batch)
    }

    /// The scan with rows whose keys a built join table lacks dropped first.
    pub fn with_key_filters(mut self, filters: Vec<Arc<KeyFilter>>) -> ScanSource {
        self.keyed = (0..self.columns.len())
            .map(|i| filters.iter().any(|k| k.columns.contains(&i)))
            .collect();
        self.key_filters = filters;
        self
    }

    /// Rows `row..row + len` through the join filters: the filters' key columns
    /// are read first; when the filters keep few rows, the other text columns are
    /// fetched at those rows only instead of decoded whole (TPC-H Q19: 485 parts
    /// keep 0.2 % of lineitem, whose instructions and modes are text), and the
    /// batch comes out compacted; the second value is how many rows the join
    /// filters kept. With `filter` (the scan's own, and which columns it leaves
    /// unread) the third value says whether it has run: it
    /// does here when the join filters kept few rows, on the columns it reads,
    /// before the rest are decoded at the rows both kept (TPC-H Q3 at SF 10: the
    /// orders bitmap keeps 5.8 M of 60 M lineitem rows, the ship date 302 k of
    /// those — the price and discount are decoded for 302 k rows, not 5.8 M).
    fn read_key_filtered(
        &self,
        row: u64,
        len: usize,
        filter: Option<(&PhysExpr, &[bool])>,
    ) -> ExecResult<(Batch, usize, bool)> {
        let keyed = self.keyed.as_slice();
        let mut cols = Vec::with_capacity(self.columns.len());
        for (i, &c) in self.columns.iter().enumerate() {
            cols.push(if keyed[i] {
                self.table.read_range(c, row, len)?
            } else {
                Vector::new(self.table.columns()[c].data_type, 0)
            });
        }
        let num_rows = cols
            .iter()
            .zip(keyed)
            .find(|(_, &k)| k)
            .map_or(len, |(v, _)| v.len());
        let mut batch = Batch {
            columns: cols,
            selection: None,
            num_rows,
        };
        for k in &self.key_filters {
            batch = k.apply(batch)?;
        }
        let is_text = |c: usize| self.table.columns()[c].data_type.physical() == PhysicalType::Str;
        let very_sparse = |sel: &[u32]| sel.len() * SPARSE_FETCH_FRACTION <= num_rows;
        // Column `i` (not keyed) at rows `sel` of the range only.
        let read_at = |i: usize, sel: &[u32]| -> ExecResult<Vector> {
            let c = self.columns[i];
            if is_text(c) && very_sparse(sel) {
                let rows: Vec<u64> = sel.iter().map(|&r| row + r as u64).collect();
                Ok(self.table.fetch_rows(c, &rows)?)
            } else {
                Ok(self.table.read_selected(c, row, len, sel)?)
            }
        };
        let key_kept = batch.len();
        if let (Some((filter, late)), Some(sel)) = (filter, batch.selection.as_ref()) {
            if sel.len() * SELECTED_DECODE_FRACTION <= num_rows {
                // The filter's columns at the kept rows, the filter on them,
                // then the other columns at the rows it keeps as well.
                let mut cols = Vec::with_capacity(self.columns.len());
                for i in 0..self.columns.len() {
                    cols.push(match (keyed[i], late[i]) {
                        (true, _) => batch.columns[i].take(sel),
                        (false, false) => read_at(i, sel)?,
                        (false, true) => {
                            Vector::new(self.table.columns()[self.columns[i]].data_type, 0)
                        }
                    });
                }
                let kept = eval_predicate(
                    filter,
                    Batch {
                        columns: cols,
                        selection: None,
                        num_rows: sel.len(),
                    },
                )?;
                let Some(picked) = kept.selection.as_ref() else {
                    // Every kept row passed: the waiting columns at all of them.
                    let mut cols = kept.columns;
                    for i in 0..self.columns.len() {
                        if !keyed[i] && late[i] {
                            cols[i] = read_at(i, sel)?;
                        }
                    }
                    return Ok((Batch::new(cols), key_kept, true));
                };
                let rows: Vec<u32> = picked.iter().map(|&j| sel[j as usize]).collect();
                let mut out = Vec::with_capacity(self.columns.len());
                for (i, col) in kept.columns.iter().enumerate() {
                    out.push(if !keyed[i] && late[i] {
                        read_at(i, &rows)?
                    } else {
                        col.take(picked)
                    });
                }
                return Ok((Batch::new(out), key_kept, true));
            }
        }
        let sparse = batch.selection.as_ref().filter(|sel| very_sparse(sel));
        let text_to_read = self
            .columns
            .iter()
            .zip(keyed)
            .any(|(&c, &k)| !k && is_text(c));
        if let (Some(sel), true) = (sparse, text_to_read) {
            let mut out = Vec::with_capacity(self.columns.len());
            for (i, &k) in keyed.iter().enumerate() {
                out.push(if k {
                    batch.columns[i].take(sel)
                } else {
                    read_at(i, sel)?
                });
            }
            return Ok((Batch::new(out), key_kept, false));
        }
        Ok((
            self.read_rest(batch, |i| !keyed[i], row, len)?,
            key_kept,
            false,
        ))
    }

    /// `batch` (rows `row..row + len`, its selection not applied) with
    /// its `pending` columns read after a filter ran. When at most a quarter of
    /// the rows survive, those columns decode only where rows survive (each
    /// packed value is one load) and the batch comes out compacted; otherwise
    /// they are read whole and the selection stays.
    fn read_rest(
        &self,
        mut batch: Batch,
        pending: impl Fn(usize) -> bool,
        row: u64,
        len: usize,
    ) -> ExecResult<Batch> {
        let num_rows = batch.num_rows;
        match batch.selection.as_ref() {
            Some(sel) if sel.is_empty() => Ok(batch),
            Some(sel) if sel.len() * SELECTED_DECODE_FRACTION <= num_rows => {
                let mut out = Vec::with_capacity(self.columns.len());
                for (i, &c) in self.columns.iter().enumerate() {
                    out.push(if pending(i) {
                        self.table.read_selected(c, row, len, sel)?
                    } else {
                        batch.columns[i].take(sel)
                    });
                }
                Ok(Batch::new(out))
            }
            _ => {
                for (i, &c) in self.columns.iter().enumerate() {
                    if pending(i) {
                        batch.columns[i] = self.table.read_range(c, row, len)?;
                    }
                }
                Ok(batch)
            }
        }
    }

    /// Rows `row..row + len` through `filter`, its columns read first: when
    /// the filter keeps at most a quarter of the rows, the other columns decode
    /// only at the kept rows and the batch comes out compacted (TPC-H Q14's
    /// month of `lineitem` keeps 1.2 %, and three of its four columns wait for
    /// it); otherwise they are read whole and the selection stays.
    fn read_filter_first(
        &self,
        filter: &PhysExpr,
        late: &[bool],
        row: u64,
        len: usize,
    ) -> ExecResult<Batch> {
        let mut cols = Vec::with_capacity(self.columns.len());
        for (i, &c) in self.columns.iter().enumerate() {
            cols.push(if late[i] {
                Vector::new(self.table.columns()[c].data_type, 0)
            } else {
                self.table.read_range(c, row, len)?
            });
        }
        let num_rows = cols
            .iter()
            .zip(late)
            .find(|(_, &l)| !l)
            .map_or(len, |(v, _)| v.len());
        let batch = Batch {
            columns: cols,
            selection: None,
            num_rows,
        };
        let batch = eval_predicate(filter, batch)?;
        self.read_rest(batch, |i| late[i], row, len)
    }

    /// Rows the zone maps let the scan skip.
    pub fn skipped_rows(&self) -> u64 {
        self.table.row_count() - self.candidates.iter().map(|r| r.end - r.start).sum::<u64>()
    }
}

impl Source for ScanSource {
    fn morsels(&self) -> usize {
        self.morsels.len()
    }

    fn sequential(&self) -> bool {
        true
    }

    fn pages_for(&self, morsel: usize) -> Option<(Arc<BufferManager>, Vec<PageId>)> {
        let bm = self.table.buffer_manager()?;
        let ranges = self.morsels.get(morsel)?;
        let mut pages = Vec::new();
        let mut seen = HashSet::new();
        for &col in &self.columns {
            for r in ranges.iter() {
                for page in self.table.pages(col, r.clone()) {
                    if seen.insert(page) {
                        pages.push(page);
                    }
                }
            }
        }
        Some((bm, pages))
    }

    fn file_reads(&self, morsel: usize) -> Vec<crate::source::FileRead> {
        let Some(ranges) = self.morsels.get(morsel) else {
            return Vec::new();
        };
        let mut reads: Vec<crate::source::FileRead> = Vec::new();
        for &col in &self.columns {
            for r in ranges.iter() {
                for read in self.table.file_reads(col, r.clone()) {
                    if !reads.iter().any(|x| x.key == read.key) {
                        reads.push(read);
                    }
                }
            }
        }
        reads
    }

    fn supply(&self, read: &crate::source::FileRead, data: crate::runtime::AlignedBuf) {
        self.table.supply(read, data)
    }

    fn discard(&self, read: &crate::source::FileRead) {
        self.table.discard(read)
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        let Some(ranges) = self.morsels.get(morsel) else {
            return Ok(());
        };
        let late = match (&self.filter, &self.late) {
            (Some(f), Some(l)) => Some((f, l.as_slice())),
            _ => None,
        };
        for r in ranges.iter().cloned() {
            let mut row = r.start;
            while row < r.end {
                ctx.check_cancel()?;
                let len = BATCH_SIZE.min((r.end - row) as usize);
                let io0 = ctx.io_counters();
                let mut filtered = false;
                let sampled = self.bernoulli.as_ref().map(|s| s.kept_rows(row, len));
                let batch = if let Some(sel) = &sampled {
                    self.read_sampled(row, len, sel)?
                } else if self.columns.is_empty() {
                    Batch::with_rows(len)
                } else if let (Some((f, late)), true) = (&late, self.key_filters.is_empty()) {
                    filtered = true;
                    self.read_filter_first(f, late, row, len)?
                } else if self.key_filters.is_empty() {
                    let cols = self
                        .columns
                        .iter()
                        .map(|&c| self.table.read_range(c, row, len))
                        .collect::<ExecResult<Vec<_>>>()?;
                    Batch::new(cols)
                } else {
                    let before = len;
                    let (batch, key_kept, done) = self.read_key_filtered(row, len, late)?;
                    filtered = done;
                    let dropped = (before - key_kept) as u64;
                    ctx.record(self.node, |s| s.join_filtered_rows += dropped);
                    batch
                };
                ctx.charge_io(self.node, io0);
                let batch = match &self.filter {
                    Some(f) if !filtered && !batch.is_empty() => eval_predicate(f, batch)?,
                    _ => batch,
                };
                row += len as u64;
                if !batch.is_empty() && !emit(batch)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{MemTable, SourceColumn};
    use kura_common::DataType;

    /// The rows (key, text) a scan of a 10,000-row table gives through a join
    /// filter holding `keys`, and with `below`, the scan's own filter
    /// `v < below` on a third column `v = k * 37 % 100`.
    fn key_filtered_rows(keys: &[i32], below: Option<i64>) -> Vec<(Value, Value)> {
        use crate::ops::join::hash::HashJoin;
        use crate::ops::join::{BuildSide, JoinAlgorithm, JoinTable};
        let ints: Vec<Value> = (0..10_000).map(Value::Integer).collect();
        let text: Vec<Value> = (0..10_000)
            .map(|i| {
                if i % 7 == 0 {
                    Value::Null
                } else {
                    Value::Text(format!("row {i}"))
                }
            })
            .collect();
        let v: Vec<Value> = (0..10_000).map(|i| Value::BigInt(i * 37 % 100)).collect();
        let t = MemTable::new(
            "t",
            vec![
                SourceColumn {
                    name: "k".into(),
                    data_type: DataType::Integer,
                    nullable: false,
                },
                SourceColumn {
                    name: "s".into(),
                    data_type: DataType::Varchar(None),
                    nullable: true,
                },
                SourceColumn {
                    name: "v".into(),
                    data_type: DataType::BigInt,
                    nullable: false,
                },
            ],
            vec![
                Vector::from_values(DataType::Integer, &ints).unwrap(),
                Vector::from_values(DataType::Varchar(None), &text).unwrap(),
                Vector::from_values(DataType::BigInt, &v).unwrap(),
            ],
        )
        .into_arc();
        let key_values: Vec<Value> = keys.iter().map(|&k| Value::Integer(k)).collect();
        let key = Vector::from_values(DataType::Integer, &key_values).unwrap();
        let side = BuildSide {
            columns: vec![key.clone()],
            keys: vec![key],
            rows: keys.len(),
            has_null_key: false,
            null_safe: vec![false],
        };
        let ctx = ExecContext::unbounded();
        let index = HashJoin.index(&side, &ctx).unwrap();
        let table = Arc::new(JoinTable::new_for_test(side, index));
        // The scan outputs (s, k, v): the join filter's key is its column 1,
        // the scan's filter reads column 2.
        let filter = below.map(|b| PhysExpr::Binary {
            op: BinaryOp::Lt,
            left: Box::new(PhysExpr::Column {
                index: 2,
                data_type: DataType::BigInt,
            }),
            right: Box::new(PhysExpr::Literal {
                value: Value::BigInt(b),
                data_type: DataType::BigInt,
            }),
            data_type: DataType::Boolean,
        });
        let scan = ScanSource::new(t, vec![1, 0, 2], &[], filter, 0)
            .with_key_filters(vec![Arc::new(KeyFilter::new(table, vec![1]))]);
        if below.is_some() {
            assert_eq!(scan.late, Some(vec![true, true, false]));
        }
        let mut out = Vec::new();
        for m in 0..scan.morsels() {
            scan.produce(m, &ctx, &mut |b| {
                let b = b.compact();
                for r in 0..b.num_rows {
                    out.push((b.columns[1].get_value(r), b.columns[0].get_value(r)));
                }
                Ok(true)
            })
            .unwrap();
        }
        out
    }

    /// The rows (k, v, s) of a 10,000-row table with `lo <= k < hi`, scanned
    /// with the filter's column last among the outputs.
    fn filtered_rows(lo: i32, hi: i32) -> Vec<(Value, Value, Value)> {
        let n = 10_000;
        let ty = [DataType::Integer, DataType::BigInt, DataType::Varchar(None)];
        let values: [Vec<Value>; 3] = [
            (0..n).map(Value::Integer).collect(),
            (0..n).map(|i| Value::BigInt(i as i64 * 3)).collect(),
            (0..n)
                .map(|i| {
                    if i % 5 == 0 {
                        Value::Null
                    } else {
                        Value::Text(format!("row {i}"))
                    }
                })
                .collect(),
        ];
        let t = MemTable::new(
            "t",
            ["k", "v", "s"]
                .iter()
                .zip(ty)
                .map(|(name, data_type)| SourceColumn {
                    name: (*name).into(),
                    data_type,
                    nullable: true,
                })
                .collect(),
            ty.iter()
                .zip(&values)
                .map(|(t, v)| Vector::from_values(*t, v).unwrap())
                .collect(),
        )
        .into_arc();
        let k = || PhysExpr::Column {
            index: 2,
            data_type: DataType::Integer,
        };
        let bound = |op, c| PhysExpr::Binary {
            op,
            left: Box::new(k()),
            right: Box::new(PhysExpr::Literal {
                value: Value::Integer(c),
                data_type: DataType::Integer,
            }),
            data_type: DataType::Boolean,
        };
        let filter = PhysExpr::Binary {
            op: BinaryOp::And,
            left: Box::new(bound(BinaryOp::GtEq, lo)),
            right: Box::new(bound(BinaryOp::Lt, hi)),
            data_type: DataType::Boolean,
        };
        // Outputs (s, v, k): s and v wait for the filter on k.
        let scan = ScanSource::new(t, vec![2, 1, 0], &[], Some(filter), 0);
        assert_eq!(scan.late, Some(vec![true, true, false]));
        let ctx = ExecContext::unbounded();
        let mut out = Vec::new();
        for m in 0..scan.morsels() {
            scan.produce(m, &ctx, &mut |b| {
                let b = b.compact();
                for r in 0..b.num_rows {
                    let get = |c: usize| b.columns[c].get_value(r);
                    out.push((get(2), get(1), get(0)));
                }
                Ok(true)
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn filters_read_their_columns_first_and_the_others_where_rows_survive() {
        // 1 % (the others decoded at the kept rows), 60 % (read whole, the
        // selection kept), none and all.
        for (lo, hi) in [
            (4_000, 4_100),
            (1_000, 7_000),
            (20_000, 30_000),
            (-5, 10_000),
        ] {
            let expect: Vec<(Value, Value, Value)> = (lo.max(0)..hi.min(10_000))
                .map(|i| {
                    let s = if i % 5 == 0 {
                        Value::Null
                    } else {
                        Value::Text(format!("row {i}"))
                    };
                    (Value::Integer(i), Value::BigInt(i as i64 * 3), s)
                })
                .collect();
            assert_eq!(filtered_rows(lo, hi), expect, "{lo}..{hi}");
        }
    }

    #[test]
    fn join_filters_fetch_sparse_text_and_read_dense_rows_whole() {
        let expect = |keys: &[i32]| -> Vec<(Value, Value)> {
            let mut keys = keys.to_vec();
            keys.sort();
            keys.dedup();
            keys.iter()
                .map(|&k| {
                    let s = if k % 7 == 0 {
                        Value::Null
                    } else {
                        Value::Text(format!("row {k}"))
                    };
                    (Value::Integer(k), s)
                })
                .collect()
        };
        // Sparse (3 rows of 10,000: text fetched at those rows) and dense
        // (every other row: read whole), the same answer either way.
        let sparse = [4_999, 7, 3, 7];
        assert_eq!(key_filtered_rows(&sparse, None), expect(&sparse));
        let dense: Vec<i32> = (0..10_000).step_by(2).collect();
        assert_eq!(key_filtered_rows(&dense, None), expect(&dense));
    }

    #[test]
    fn a_scan_filter_runs_between_the_join_filter_and_the_other_columns() {
        let expect = |keys: &[i32], below: i64| -> Vec<(Value, Value)> {
            let mut keys: Vec<i32> = keys
                .iter()
                .copied()
                .filter(|&k| (k as i64 * 37 % 100) < below)
                .collect();
            keys.sort();
            keys.dedup();
            keys.iter()
                .map(|&k| {
                    let s = if k % 7 == 0 {
                        Value::Null
                    } else {
                        Value::Text(format!("row {k}"))
                    };
                    (Value::Integer(k), s)
                })
                .collect()
        };
        // Join filters keeping 3 rows, a tenth (both: the scan filter runs
        // on the kept rows, the text read where both keep rows) and half
        // (the filter after the whole read); scan filters keeping some, none
        // and every row the join filter kept.
        let sparse = vec![4_999, 7, 3, 7];
        let tenth: Vec<i32> = (0..10_000).step_by(10).collect();
        let half: Vec<i32> = (0..10_000).step_by(2).collect();
        for keys in [&sparse, &tenth, &half] {
            for below in [30, 0, 100] {
                let got = key_filtered_rows(keys, Some(below));
                assert_eq!(got, expect(keys, below), "{} keys, v < {below}", keys.len());
            }
        }
    }

    #[test]
    fn zone_maps_skip_pages() {
        let vals: Vec<Value> = (0..10_000).map(Value::Integer).collect();
        let v = Vector::from_values(DataType::Integer, &vals).unwrap();
        let t = MemTable::new(
            "t",
            vec![SourceColumn {
                name: "a".into(),
                data_type: DataType::Integer,
                nullable: false,
            }],
            vec![v],
        )
        .with_layout(100, 4096)
        .into_arc();
        let pred = ZonePredicate {
            table_column: 0,
            op: BinaryOp::GtEq,
            value: Value::Integer(9_950),
        };
        let filter = PhysExpr::Binary {
            op: BinaryOp::GtEq,
            left: Box::new(PhysExpr::column(0, DataType::Integer)),
            right: Box::new(PhysExpr::literal(Value::Integer(9_950), DataType::Integer)),
            data_type: DataType::Boolean,
        };
        let scan = ScanSource::new(t, vec![0], &[pred], Some(filter), 0);
        assert_eq!(scan.skipped_rows(), 9_900);
        let ctx = ExecContext::unbounded();
        let mut rows = 0;
        for m in 0..scan.morsels() {
            scan.produce(m, &ctx, &mut |b| {
                rows += b.len();
                Ok(true)
            })
            .unwrap();
        }
        assert_eq!(rows, 50);
    }

    /// A table of 10,000 integers in pages of 100 rows that notes the pages
    /// each read touches.
    struct PageCounting {
        inner: MemTable,
        pages: std::sync::Mutex<std::collections::BTreeSet<u64>>,
    }

    impl TableSource for PageCounting {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn columns(&self) -> &[SourceColumn] {
            self.inner.columns()
        }
        fn row_count(&self) -> u64 {
            self.inner.row_count()
        }
        fn column_stats(&self, col: usize) -> Option<crate::source::ColumnStatistics> {
            self.inner.column_stats(col)
        }
        fn zones(&self, col: usize) -> Vec<Zone> {
            self.inner.zones(col)
        }
        fn row_groups(&self) -> Vec<Range<u64>> {
            self.inner.row_groups()
        }
        fn read_range(&self, col: usize, first_row: u64, len: usize) -> ExecResult<Vector> {
            let mut pages = self.pages.lock().unwrap();
            pages.extend(first_row / 100..(first_row + len as u64).div_ceil(100));
            self.inner.read_range(col, first_row, len)
        }
    }

    /// Rows and pages a scan of the 10,000-row table reads under `sample`.
    fn sampled_scan(sample: Option<TableSample>) -> (Vec<i32>, usize) {
        let vals: Vec<Value> = (0..10_000).map(Value::Integer).collect();
        let inner = MemTable::new(
            "t",
            vec![SourceColumn {
                name: "a".into(),
                data_type: DataType::Integer,
                nullable: false,
            }],
            vec![Vector::from_values(DataType::Integer, &vals).unwrap()],
        )
        .with_layout(100, 4096);
        let counting = Arc::new(PageCounting {
            inner,
            pages: Default::default(),
        });
        let table: Arc<dyn TableSource> = match sample {
            Some(s) => Arc::new(crate::sample::SampledTable::new(counting.clone(), s)),
            None => counting.clone(),
        };
        let scan = ScanSource::new(table, vec![0], &[], None, 0);
        let ctx = ExecContext::unbounded();
        let mut rows = Vec::new();
        for m in 0..scan.morsels() {
            scan.produce(m, &ctx, &mut |b| {
                let b = b.compact();
                for r in 0..b.num_rows {
                    if let Value::Integer(v) = b.columns[0].get_value(r) {
                        rows.push(v);
                    }
                }
                Ok(true)
            })
            .unwrap();
        }
        let pages = counting.pages.lock().unwrap().len();
        (rows, pages)
    }

    #[test]
    fn system_sampling_skips_whole_pages_unread() {
        let sample = |method, percent| TableSample {
            method,
            percent,
            seed: 42,
            repeatable: true,
        };
        let (all, all_pages) = sampled_scan(None);
        assert_eq!((all.len(), all_pages), (10_000, 100));
        let (rows, pages) = sampled_scan(Some(sample(SampleMethod::System, 20.0)));
        // About 20 of the 100 pages, each whole, and no other page read.
        assert!((8..=35).contains(&pages), "{pages} pages");
        assert_eq!(rows.len(), pages * 100);
        let kept: std::collections::BTreeSet<i32> = rows.iter().map(|r| r / 100).collect();
        assert_eq!(kept.len(), pages);
        assert_eq!(
            sampled_scan(Some(sample(SampleMethod::System, 20.0))).0,
            rows
        );
        assert_eq!(
            sampled_scan(Some(sample(SampleMethod::System, 0.0))),
            (vec![], 0)
        );
        assert_eq!(
            sampled_scan(Some(sample(SampleMethod::System, 100.0))).0,
            all
        );
        // BERNOULLI keeps single rows, so it reads every page.
        let (rows, pages) = sampled_scan(Some(sample(SampleMethod::Bernoulli, 20.0)));
        assert!((1_500..2_500).contains(&rows.len()), "{} rows", rows.len());
        assert_eq!(pages, 100);
    }

    #[test]
    fn morsels_cover_the_candidates_in_row_order() {
        let groups = vec![0..10_000, 10_000..25_000];
        let candidates = vec![100..200, 9_000..12_000, 20_000..25_000];
        let morsels = cut_morsels(&groups, &candidates, MORSEL_ROWS);
        let flat: Vec<Range<u64>> = morsels.iter().flatten().cloned().collect();
        let mut rows = 0;
        let mut last_end = 0;
        for r in &flat {
            assert!(r.start >= last_end, "ranges out of order: {flat:?}");
            last_end = r.end;
            rows += r.end - r.start;
        }
        assert_eq!(rows, 100 + 3_000 + 5_000);
        for m in &morsels {
            let n: u64 = m.iter().map(|r| r.end - r.start).sum();
            assert!(n > 0 && n <= MORSEL_ROWS);
        }
        // A morsel never spans two row groups.
        assert!(morsels
            .iter()
            .all(|m| m.iter().all(|r| r.end <= 10_000) || m.iter().all(|r| r.start >= 10_000)));
        // Whole groups: one morsel per group with candidates, holding all of them.
        let whole = cut_morsels(&groups, &candidates, u64::MAX);
        assert_eq!(
            whole,
            vec![
                vec![100..200, 9_000..10_000],
                vec![10_000..12_000, 20_000..25_000]
            ]
        );
    }
}
