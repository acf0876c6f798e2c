//! Appending rows to a table inside a write transaction: rows are gathered into
//! row groups, each column of a group is cut into pages, and zone maps and column
//! statistics are updated as pages are written.

use kura_common::{Batch, ColumnData, DataType, Value, Vector, MAX_VALUE_BYTES};

use super::encode;
use super::meta::{PageZone, TableMeta};
use super::ROW_GROUP_ROWS;
use crate::error::{StorageError, StorageResult};
use crate::file::page::{PageKind, PAGE_HEADER};
use crate::file::PageId;
use crate::schema::Schema;
use crate::txn_io::PageIo;

/// Accumulates appended rows and writes full row groups as they fill.
///
/// Inside a transaction a statement's rows must be readable by the next
/// statement before their row group is full: [`TableAppender::view`] writes
/// the open group's rows without ending it. Its full pages are final; the
/// last, partly filled page of each column is *provisional*: the next view
/// writes it again, in place, with the rows added since. So a transaction of
/// many one-row INSERTs writes each row about once per page it ends up on,
/// not a row group (and table metadata) per statement.
pub struct TableAppender {
    table: String,
    schema: Schema,
    /// The final part: complete row groups, and the final pages of the open
    /// group (their zones and statistics).
    meta: TableMeta,
    /// Per column, the rows of the open group after its final pages.
    pending: Vec<Vector>,
    /// Rows in the open group (in final pages or pending), the same for every
    /// column.
    group_rows: usize,
    /// Per column, the provisional page the last view wrote: it holds the
    /// first rows of `pending`.
    provisional: Vec<Option<PageZone>>,
    /// What the last view returned, while no row was appended since.
    view: Option<std::sync::Arc<TableMeta>>,
    appended: u64,
}

impl TableAppender {
    pub fn new(table: &str, schema: Schema, meta: TableMeta) -> Self {
        let pending = schema
            .columns
            .iter()
            .map(|c| Vector::new(c.data_type, 0))
            .collect();
        let provisional = vec![None; schema.columns.len()];
        TableAppender {
            table: table.to_string(),
            schema,
            meta,
            pending,
            group_rows: 0,
            provisional,
            view: None,
            appended: 0,
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Rows appended so far.
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Checks a batch against the schema and queues its rows.
    pub fn append(&mut self, io: &mut PageIo, batch: &Batch) -> StorageResult<u64> {
        let owned;
        let batch = if batch.selection.is_some() {
            owned = batch.clone().compact();
            &owned
        } else {
            batch
        };
        if batch.columns.len() != self.schema.columns.len() {
            return Err(StorageError::Invalid(format!(
                "table \"{}\" has {} columns, {} were supplied",
                self.table,
                self.schema.columns.len(),
                batch.columns.len()
            )));
        }
        for (v, c) in batch.columns.iter().zip(&self.schema.columns) {
            let compatible = v.data_type.physical() == c.data_type.physical()
                && match (v.data_type, c.data_type) {
                    (DataType::Decimal { scale: a, .. }, DataType::Decimal { scale: b, .. }) => {
                        a == b
                    }
                    (a, b) => {
                        a.is_text() == b.is_text()
                            && (a == DataType::Date) == (b == DataType::Date)
                            && (a == DataType::Timestamp) == (b == DataType::Timestamp)
                    }
                };
            if !compatible {
                return Err(StorageError::TypeMismatch {
                    table: self.table.clone(),
                    column: c.name.clone(),
                    expected: c.data_type.to_string(),
                    got: v.data_type.to_string(),
                });
            }
            if !c.nullable && v.null_count() > 0 {
                return Err(StorageError::NotNull {
                    table: self.table.clone(),
                    column: c.name.clone(),
                });
            }
            if let (Some(max), ColumnData::Str(s)) = (c.data_type.max_len(), &v.data) {
                for i in 0..s.len() {
                    let text = s.get(i);
                    let len = text.chars().count();
                    if len > max as usize
                        && text.trim_end_matches(' ').chars().count() > max as usize
                    {
                        return Err(StorageError::Invalid(format!(
                            "value too long for type {} in column \"{}\" ({len} characters)",
                            c.data_type, c.name
                        )));
                    }
                }
            }
        }
        if batch.num_rows == 0 {
            return Ok(0);
        }
        for (p, v) in self.pending.iter_mut().zip(&batch.columns) {
            let mut v = v.clone();
            v.data_type = p.data_type;
            p.append(&v);
        }
        self.view = None;
        self.appended += batch.num_rows as u64;
        self.group_rows += batch.num_rows;
        while self.group_rows >= ROW_GROUP_ROWS {
            self.end_group(io, ROW_GROUP_ROWS)?;
        }
        Ok(batch.num_rows as u64)
    }

    /// Writes what is queued (a final, possibly short row group) and returns the
    /// table's new metadata.
    pub fn finish(mut self, io: &mut PageIo) -> StorageResult<TableMeta> {
        if self.group_rows > 0 {
            self.end_group(io, self.group_rows)?;
        }
        Ok(self.meta)
    }

    /// The table's metadata with every row appended so far, the open row
    /// group's last pages written provisionally (see the type's doc). The
    /// appender goes on: later rows join the same row group.
    pub fn view(&mut self, io: &mut PageIo) -> StorageResult<std::sync::Arc<TableMeta>> {
        if let Some(v) = &self.view {
            return Ok(v.clone());
        }
        let mut provisional = Vec::with_capacity(self.pending.len());
        for c in 0..self.pending.len() {
            let upto = self.pending[c].len();
            provisional.push(self.write_column(io, c, upto, false)?);
        }
        // After the writes: full pages joined the final part.
        let mut view = self.meta.clone();
        for (c, zone) in provisional.into_iter().enumerate() {
            if let Some(zone) = zone {
                // The provisional page holds exactly the pending rows.
                let col = &mut view.columns[c];
                merge_min_max(
                    &mut col.stats.min,
                    &mut col.stats.max,
                    zone.min.clone(),
                    zone.max.clone(),
                );
                col.stats.null_count += zone.null_count as u64;
                col.hll
                    .add_vector(&self.pending[c], 0, self.pending[c].len());
                col.zones.push(zone);
            }
            let col = &mut view.columns[c];
            col.stats.distinct = col.hll.estimate();
        }
        if self.group_rows > 0 {
            view.row_groups
                .push((self.meta.row_count, self.group_rows as u64));
            view.row_count += self.group_rows as u64;
        }
        let view = std::sync::Arc::new(view);
        self.view = Some(view.clone());
        Ok(view)
    }

    /// Ends the open row group after its first `rows` rows, writing them all
    /// as final pages.
    fn end_group(&mut self, io: &mut PageIo, rows: usize) -> StorageResult<()> {
        for c in 0..self.pending.len() {
            // Rows of the group already on final pages.
            let done = self.group_rows - self.pending[c].len();
            self.write_column(io, c, rows - done, true)?;
            let col = &mut self.meta.columns[c];
            col.stats.distinct = col.hll.estimate();
        }
        self.meta
            .row_groups
            .push((self.meta.row_count, rows as u64));
        self.meta.row_count += rows as u64;
        self.group_rows -= rows;
        Ok(())
    }

    /// Writes the first `upto` pending rows of column `c` as pages. Full
    /// pages are final (their zones and statistics join `meta`, their rows
    /// leave `pending`); so is the last one when `seal`, else it is written
    /// provisionally and its zone returned. A provisional page is written
    /// again in place only when its new contents begin with every row it
    /// held (readers of an earlier view may still read those); otherwise it
    /// becomes final as it is.
    fn write_column(
        &mut self,
        io: &mut PageIo,
        c: usize,
        upto: usize,
        seal: bool,
    ) -> StorageResult<Option<PageZone>> {
        let payload = io.page_size() - PAGE_HEADER;
        // Rows of the open group before the pending ones.
        let first_row = self.meta.row_count + (self.group_rows - self.pending[c].len()) as u64;
        let pending = &self.pending[c];
        let owned;
        let rows = if upto == pending.len() {
            pending
        } else {
            owned = pending.slice(0, upto);
            &owned
        };
        let col = &mut self.meta.columns[c];
        let mut previous = self.provisional[c].take();
        let mut start = 0;
        let mut out = None;
        while start < upto {
            let k = encode::rows_that_fit(rows, start, payload);
            if let Some(p) = previous.take() {
                if k < p.row_count as usize {
                    // Fewer rows would fit now (a NULL added a bitmap): the
                    // page stays as it was, final.
                    seal_zone(col, rows, start, p.clone());
                    start += p.row_count as usize;
                    continue;
                }
                previous = Some(p);
            }
            // A long value's page holds one row whatever follows: final.
            let long = k == 0;
            let (page, k) = if long {
                // Only a text value can be too long for a page of its own.
                let ColumnData::Str(s) = &rows.data else {
                    unreachable!("fixed-width values always fit a page")
                };
                let name = &self.schema.columns[c].name;
                (write_long(io, s.get_bytes(start), name, col)?, 1)
            } else {
                let page = match previous.take() {
                    Some(p) => io.overwrite(p.page),
                    None => io.alloc(),
                };
                io.write_page(page, PageKind::Column, |buf| {
                    encode::encode(rows, start, k, buf)
                })?;
                (page, k)
            };
            let (min, max, nulls) = min_max(rows, start, start + k);
            let order = order_of(rows, start, start + k);
            let zone = PageZone {
                page,
                first_row: first_row + start as u64,
                row_count: k as u32,
                null_count: nulls as u32,
                min,
                max,
                sorted: nulls == 0 && order != Order::None,
                strict: nulls == 0 && order == Order::Strict,
            };
            if start + k < upto || seal || long {
                seal_zone(col, rows, start, zone);
            } else {
                self.provisional[c] = Some(zone.clone());
                out = Some(zone);
                break;
            }
            start += k;
        }
        // The rows now on final pages leave the queue.
        let done = if out.is_some() { start } else { upto };
        if done > 0 {
            let pending = &mut self.pending[c];
            *pending = pending.slice(done, pending.len() - done);
        }
        Ok(out)
    }
}

/// Makes `zone` (rows `start..` of `rows`) a final page of column `col`.
fn seal_zone(col: &mut super::meta::ColumnMeta, rows: &Vector, start: usize, zone: PageZone) {
    let end = start + zone.row_count as usize;
    merge_min_max(
        &mut col.stats.min,
        &mut col.stats.max,
        zone.min.clone(),
        zone.max.clone(),
    );
    col.stats.null_count += zone.null_count as u64;
    col.hll.add_vector(rows, start, end);
    col.zones.push(zone);
}

/// Writes a text value too long for a column page: its column page (first
/// bytes, length, link), then the chain of overflow pages with the rest, which
/// `col` records so they are freed with the table. Returns the column page.
fn write_long(
    io: &mut PageIo,
    bytes: &[u8],
    column: &str,
    col: &mut super::meta::ColumnMeta,
) -> StorageResult<PageId> {
    if bytes.len() > MAX_VALUE_BYTES {
        return Err(StorageError::TooLarge(format!(
            "a value of column \"{column}\" is {} bytes long; kura stores values of at most {} bytes (16 MiB)",
            bytes.len(),
            MAX_VALUE_BYTES
        )));
    }
    let payload = io.page_size() - PAGE_HEADER;
    // All pages are allocated first so each can name the next; allocated in a
    // row at the end of the file they are written in one run.
    let head = io.alloc();
    let chain: Vec<PageId> = (0..encode::overflow_pages_for(payload, bytes.len()))
        .map(|_| io.alloc())
        .collect();
    io.write_page(head, PageKind::Column, |buf| {
        encode::encode_long(bytes, chain[0], buf)
    })?;
    let tail = &bytes[encode::long_inline_bytes(payload)..];
    for (i, (&page, chunk)) in chain
        .iter()
        .zip(tail.chunks(payload - encode::OVERFLOW_LINK))
        .enumerate()
    {
        let next = chain.get(i + 1).copied().unwrap_or(0);
        io.write_page(page, PageKind::Overflow, |buf| {
            encode::encode_overflow(chunk, next, buf)
        })?;
    }
    col.overflow.extend(chain);
    Ok(head)
}

/// Longest text kept in a zone map's bounds: a longer minimum is cut to a
/// prefix (still no greater than every value) and a longer maximum to a prefix
/// whose last character is raised (still greater than every value), so
/// pruning stays correct while table metadata stays small.
pub const ZONE_TEXT_BYTES: usize = 256;

/// A lower bound of `s` no longer than [`ZONE_TEXT_BYTES`].
pub fn zone_lower_bound(s: &str) -> String {
    if s.len() <= ZONE_TEXT_BYTES {
        return s.to_string();
    }
    s[..floor_char_boundary(s, ZONE_TEXT_BYTES)].to_string()
}

/// An upper bound of `s` no longer than [`ZONE_TEXT_BYTES`] (`s` itself when
/// it is short, or when every character of its prefix is the largest one).
pub fn zone_upper_bound(s: &str) -> String {
    if s.len() <= ZONE_TEXT_BYTES {
        return s.to_string();
    }
    let mut prefix: Vec<char> = s[..floor_char_boundary(s, ZONE_TEXT_BYTES - 4)]
        .chars()
        .collect();
    // Raising the last character that can be raised gives a string greater than
    // every string starting with the prefix (UTF-8 byte order is code-point
    // order). A blank is never the raised character: CHAR comparisons ignore
    // trailing blanks, and a bound ending in one would shrink when trimmed.
    while let Some(c) = prefix.pop() {
        let raised = (c as u32 + 1..=char::MAX as u32)
            .filter_map(char::from_u32)
            .find(|&r| r != ' ');
        if let Some(r) = raised {
            prefix.push(r);
            return prefix.into_iter().collect();
        }
    }
    s.to_string()
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A zone map bound: text cut by [`zone_lower_bound`] / [`zone_upper_bound`].
fn bound(v: Value, upper: bool) -> Value {
    match v {
        Value::Text(s) if s.len() > ZONE_TEXT_BYTES => Value::Text(if upper {
            zone_upper_bound(&s)
        } else {
            zone_lower_bound(&s)
        }),
        v => v,
    }
}

fn merge_min_max(min: &mut Value, max: &mut Value, new_min: Value, new_max: Value) {
    if !new_min.is_null() && (min.is_null() || new_min.total_cmp(min).is_lt()) {
        *min = new_min;
    }
    if !new_max.is_null() && (max.is_null() || new_max.total_cmp(max).is_gt()) {
        *max = new_max;
    }
}

/// Min, max (NULL if none) and NULL count of rows `start..end`.
/// How rows of a page are ordered (see [`order_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    /// Never decreasing.
    Ascending,
    /// Always increasing.
    Strict,
}

/// Whether the values of a column of type `t` are judged for order: integers,
/// dates, timestamps and decimals (an ordered aggregation groups only those
/// by runs, and only their equality is that of their stored form).
pub(crate) fn orderable(t: DataType) -> bool {
    matches!(
        t,
        DataType::SmallInt
            | DataType::Integer
            | DataType::BigInt
            | DataType::Date
            | DataType::Timestamp
            | DataType::Decimal { .. }
    )
}

/// Whether a page's values (without NULLs) ascend, and whether they strictly
/// increase: its zone's `sorted` and `strict` marks.
pub(crate) fn page_order(v: &Vector) -> (bool, bool) {
    let order = order_of(v, 0, v.len());
    (order != Order::None, order == Order::Strict)
}

/// Whether rows `start..end` of `v` never decrease, or always increase
/// (`None` for a type that is not [`orderable`]).
fn order_of(v: &Vector, start: usize, end: usize) -> Order {
    fn check<T: PartialOrd>(x: &[T]) -> Order {
        let mut strict = true;
        for w in x.windows(2) {
            if w[0] > w[1] {
                return Order::None;
            }
            strict &= w[0] < w[1];
        }
        if strict {
            Order::Strict
        } else {
            Order::Ascending
        }
    }
    if !orderable(v.data_type) {
        return Order::None;
    }
    match &v.data {
        ColumnData::I32(x) => check(&x[start..end]),
        ColumnData::I64(x) => check(&x[start..end]),
        ColumnData::I128(x) => check(&x[start..end]),
        _ => Order::None,
    }
}

fn min_max(v: &Vector, start: usize, end: usize) -> (Value, Value, usize) {
    let valid: Vec<usize> = (start..end).filter(|&i| !v.is_null(i)).collect();
    let nulls = (end - start) - valid.len();
    if valid.is_empty() {
        return (Value::Null, Value::Null, nulls);
    }
    macro_rules! mm {
        ($x:expr) => {{
            let (mut lo, mut hi) = (valid[0], valid[0]);
            for &i in &valid[1..] {
                if $x[i] < $x[lo] {
                    lo = i;
                }
                if $x[i] > $x[hi] {
                    hi = i;
                }
            }
            (lo, hi)
        }};
    }
    let (lo, hi) = match &v.data {
        ColumnData::Bool(x) => mm!(x),
        ColumnData::I32(x) => mm!(x),
        ColumnData::I64(x) => mm!(x),
        ColumnData::I128(x) => mm!(x),
        ColumnData::F64(x) => {
            let (mut lo, mut hi) = (valid[0], valid[0]);
            for &i in &valid[1..] {
                if x[i].total_cmp(&x[lo]).is_lt() {
                    lo = i;
                }
                if x[i].total_cmp(&x[hi]).is_gt() {
                    hi = i;
                }
            }
            (lo, hi)
        }
        ColumnData::Str(s) => {
            let (mut lo, mut hi) = (valid[0], valid[0]);
            for &i in &valid[1..] {
                if s.get_bytes(i) < s.get_bytes(lo) {
                    lo = i;
                }
                if s.get_bytes(i) > s.get_bytes(hi) {
                    hi = i;
                }
            }
            (lo, hi)
        }
    };
    (
        bound(v.get_value(lo), false),
        bound(v.get_value(hi), true),
        nulls,
    )
}
