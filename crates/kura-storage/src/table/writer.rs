//! Appending rows to a table inside a write transaction: rows are gathered into
//! row groups, each column of a group is cut into pages, and zone maps and column
//! statistics are updated as pages are written.

use kura_common::{Batch, ColumnData, DataType, Value, Vector, MAX_VALUE_BYTES};

use super::encode;
use super::meta::{PageZone, TableMeta};
use super::ROW_GROUP_ROWS;
use crate::catalog::Schema;
use crate::error::{StorageError, StorageResult};
use crate::file::page::{PageKind, PAGE_HEADER};
use crate::file::PageId;
use crate::txn_io::PageIo;

/// Accumulates appended rows and writes full row groups as they fill.
pub struct TableAppender {
    table: String,
    schema: Schema,
    meta: TableMeta,
    pending: Vec<Vector>,
    appended: u64,
}

impl TableAppender {
    pub fn new(table: &str, schema: Schema, meta: TableMeta) -> Self {
        let pending = schema
            .columns
            .iter()
            .map(|c| Vector::new(c.data_type, 0))
            .collect();
        TableAppender {
            table: table.to_string(),
            schema,
            meta,
            pending,
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
        for (p, v) in self.pending.iter_mut().zip(&batch.columns) {
            let mut v = v.clone();
            v.data_type = p.data_type;
            p.append(&v);
        }
        self.appended += batch.num_rows as u64;
        while self.pending[0].len() >= ROW_GROUP_ROWS {
            self.flush_group(io, ROW_GROUP_ROWS)?;
        }
        Ok(batch.num_rows as u64)
    }

    /// Writes what is queued (a final, possibly short row group) and returns the
    /// table's new metadata.
    pub fn finish(mut self, io: &mut PageIo) -> StorageResult<TableMeta> {
        let n = self.pending.first().map_or(0, |v| v.len());
        if n > 0 {
            self.flush_group(io, n)?;
        }
        Ok(self.meta)
    }

    fn flush_group(&mut self, io: &mut PageIo, rows: usize) -> StorageResult<()> {
        let first_row = self.meta.row_count;
        let payload = io.page_size() - PAGE_HEADER;
        for (c, pending) in self.pending.iter_mut().enumerate() {
            let (group, rest) = if pending.len() == rows {
                (
                    std::mem::replace(pending, Vector::new(pending.data_type, 0)),
                    None,
                )
            } else {
                (
                    pending.slice(0, rows),
                    Some(pending.slice(rows, pending.len() - rows)),
                )
            };
            if let Some(rest) = rest {
                *pending = rest;
            }
            let col = &mut self.meta.columns[c];
            let mut start = 0;
            while start < rows {
                let k = encode::rows_that_fit(&group, start, payload);
                let page = if k == 0 {
                    // Only a text value can be too long for a page of its own.
                    let ColumnData::Str(s) = &group.data else {
                        unreachable!("fixed-width values always fit a page")
                    };
                    write_long(io, s.get_bytes(start), &self.schema.columns[c].name, col)?
                } else {
                    let page = io.alloc();
                    io.write_page(page, PageKind::Column, |buf| {
                        encode::encode(&group, start, k, buf)
                    })?;
                    page
                };
                let k = k.max(1);
                let (min, max, nulls) = min_max(&group, start, start + k);
                col.zones.push(PageZone {
                    page,
                    first_row: first_row + start as u64,
                    row_count: k as u32,
                    null_count: nulls as u32,
                    min: min.clone(),
                    max: max.clone(),
                });
                merge_min_max(&mut col.stats.min, &mut col.stats.max, min, max);
                col.stats.null_count += nulls as u64;
                start += k;
            }
            col.hll.add_vector(&group, 0, rows);
            col.stats.distinct = col.hll.estimate();
        }
        self.meta.row_groups.push((first_row, rows as u64));
        self.meta.row_count += rows as u64;
        Ok(())
    }
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
