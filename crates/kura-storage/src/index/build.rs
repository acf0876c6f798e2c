//! Bulk loading a B+tree (paper 003's secondary indexes): gather (key, row id)
//! entries, sort them, and build the tree bottom-up — full leaves left to right
//! with sibling links, then each inner level over the one below, with the shortest
//! separators that still divide neighbouring children. Sorting is in memory.

use kura_common::{DataType, Value, Vector};

use super::key::{self, ROW_ID_BYTES};
use super::node;
use super::sink::PageSink;
use super::BTreeIndex;
use crate::error::{StorageError, StorageResult};
use crate::file::page::PAGE_HEADER;
use crate::file::PageId;

/// Collects entries for one index and writes the tree.
pub struct IndexBuilder {
    key_types: Vec<DataType>,
    /// Types of the included (non-key) columns of a covering index.
    include_types: Vec<DataType>,
    unique: bool,
    name: String,
    columns: Vec<String>,
    /// All entries' bytes, back to back.
    arena: Vec<u8>,
    /// `(start, len)` of each entry in `arena`.
    spans: Vec<(usize, u32)>,
}

/// Longest entry a page of `page_size` bytes accepts: at least three entries per
/// leaf and three children per inner node, so every level shrinks the one below.
pub fn max_entry_bytes(page_size: usize) -> usize {
    let payload = page_size - PAGE_HEADER;
    let w = node::offset_width(payload);
    (payload - node::HEADER - 3 * 8 - 4 * w) / 3
}

impl IndexBuilder {
    /// A builder for keys of `key_types` (at least one column).
    pub fn new(key_types: Vec<DataType>, unique: bool) -> StorageResult<Self> {
        if key_types.is_empty() {
            return Err(StorageError::Invalid(
                "an index needs at least one key column".into(),
            ));
        }
        for &t in &key_types {
            key::check_key_type(t)?;
        }
        let columns = (1..=key_types.len()).map(|i| format!("#{i}")).collect();
        Ok(IndexBuilder {
            key_types,
            include_types: Vec::new(),
            unique,
            name: "index".into(),
            columns,
            arena: Vec::new(),
            spans: Vec::new(),
        })
    }

    /// Makes this a covering index: every entry also stores columns of
    /// `include_types` after its key (read back by index-only plans, never
    /// searched, and not part of the key that uniqueness is checked on).
    pub fn with_include(mut self, include_types: Vec<DataType>) -> StorageResult<Self> {
        for &t in &include_types {
            key::check_key_type(t)?;
        }
        self.include_types = include_types;
        Ok(self)
    }

    /// Names used in error messages (the index and its key columns).
    pub fn named(mut self, index: &str, columns: &[String]) -> Self {
        self.name = index.to_string();
        if columns.len() == self.key_types.len() {
            self.columns = columns.to_vec();
        }
        self
    }

    /// Entries gathered so far.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn close_entry(&mut self, start: usize, row_id: u64) {
        self.arena.extend_from_slice(&row_id.to_be_bytes());
        self.spans.push((start, (self.arena.len() - start) as u32));
    }

    /// Adds one entry given as values (NULL allowed): the key columns, then the
    /// included columns if any.
    pub fn push(&mut self, key: &[Value], row_id: u64) -> StorageResult<()> {
        let nk = self.key_types.len();
        if key.len() != nk + self.include_types.len() {
            return Err(StorageError::Invalid(format!(
                "index entry has {} columns, got {} values",
                nk + self.include_types.len(),
                key.len()
            )));
        }
        let bytes = key::encode_values(&self.key_types, &key[..nk])?;
        let start = self.arena.len();
        self.arena.extend_from_slice(&bytes);
        for (t, v) in self.include_types.iter().zip(&key[nk..]) {
            let mut one = Vector::new(*t, 1);
            if !one.push_value(v) {
                return Err(StorageError::Invalid(format!(
                    "value {v} does not fit included column type {t}"
                )));
            }
            key::encode_vector_value_exact(&mut self.arena, &one, 0);
        }
        self.close_entry(start, row_id);
        Ok(())
    }

    /// Adds every row of `columns` (the key columns in key order, then the
    /// included columns; equally long); row `i` gets row id `first_row_id + i`.
    pub fn push_columns(&mut self, columns: &[&Vector], first_row_id: u64) -> StorageResult<()> {
        let nk = self.key_types.len();
        if columns.len() != nk + self.include_types.len() {
            return Err(StorageError::Invalid(format!(
                "index entry has {} columns, got {}",
                nk + self.include_types.len(),
                columns.len()
            )));
        }
        let rows = columns[0].len();
        for (c, t) in columns
            .iter()
            .zip(self.key_types.iter().chain(&self.include_types))
        {
            if c.len() != rows || c.data_type.physical() != t.physical() {
                return Err(StorageError::Invalid(format!(
                    "index key column of type {t} got a vector of type {} with {} rows (expected {rows})",
                    c.data_type,
                    c.len()
                )));
            }
        }
        for i in 0..rows {
            let start = self.arena.len();
            for c in &columns[..nk] {
                key::encode_vector_value(&mut self.arena, c, i);
            }
            for c in &columns[nk..] {
                key::encode_vector_value_exact(&mut self.arena, c, i);
            }
            self.close_entry(start, first_row_id + i as u64);
        }
        Ok(())
    }

    fn entry(&self, i: usize) -> &[u8] {
        let (s, l) = self.spans[i];
        &self.arena[s..s + l as usize]
    }

    /// Sorts the entries, checks uniqueness, and writes the tree through `sink`.
    pub fn finish(mut self, sink: &mut dyn PageSink) -> StorageResult<BTreeIndex> {
        let page_size = sink.page_size();
        let limit = max_entry_bytes(page_size);
        if let Some(&(s, l)) = self.spans.iter().find(|&&(_, l)| l as usize > limit) {
            let key = self.describe(&self.arena[s..s + l as usize]);
            return Err(StorageError::Invalid(format!(
                "index \"{}\": key {key} needs {l} bytes, more than the {limit} a {page_size}-byte page allows",
                self.name
            )));
        }
        let arena = std::mem::take(&mut self.arena);
        self.spans.sort_unstable_by(|a, b| {
            arena[a.0..a.0 + a.1 as usize].cmp(&arena[b.0..b.0 + b.1 as usize])
        });
        self.arena = arena;
        if self.unique {
            self.check_unique()?;
        }
        let payload = page_size - PAGE_HEADER;
        let leaves = self.plan_leaves(payload);
        let leaf_ids: Vec<PageId> = leaves.iter().map(|_| sink.alloc()).collect();
        let mut level: Vec<(PageId, Vec<u8>)> = Vec::with_capacity(leaves.len());
        for (k, run) in leaves.iter().enumerate() {
            let next = leaf_ids.get(k + 1).copied().unwrap_or(0);
            let prev = if k > 0 { leaf_ids[k - 1] } else { 0 };
            // The one leaf of an empty index has no entries and no prefix.
            let first = if run.is_empty() {
                &[][..]
            } else {
                self.entry(run.start)
            };
            let prefix_len = if run.is_empty() {
                0
            } else {
                self.leaf_prefix(run.clone())
            };
            let prefix = &first[..prefix_len];
            let suffixes: Vec<&[u8]> = run.clone().map(|i| &self.entry(i)[prefix_len..]).collect();
            sink.write(leaf_ids[k], &mut |buf| {
                node::write_leaf(buf, prefix, &suffixes, next, prev)
            })?;
            let sep = if k == 0 {
                Vec::new()
            } else {
                separator(self.entry(run.start - 1), first)
            };
            level.push((leaf_ids[k], sep));
        }
        let leaf_count = leaves.len() as u64;
        let first_leaf = leaf_ids[0];
        let mut height = 1u32;
        while level.len() > 1 {
            level = write_inner_level(sink, payload, height as u8, &level)?;
            height += 1;
        }
        sink.flush()?;
        Ok(BTreeIndex {
            root: level[0].0,
            height,
            leaf_count,
            entries: self.spans.len() as u64,
            key_types: self.key_types,
            include_types: self.include_types,
            unique: self.unique,
            first_leaf,
        })
    }

    /// Fails on two entries with equal keys that contain no NULL (NULLs are
    /// distinct from each other, as in SQL's UNIQUE).
    fn check_unique(&self) -> StorageResult<()> {
        for i in 1..self.spans.len() {
            let (a, b) = (self.entry(i - 1), self.entry(i));
            // Only the key columns count: included columns may differ.
            let (ka, kb) = (&a[..self.key_bytes(a)], &b[..self.key_bytes(b)]);
            if ka == kb {
                let values = key::decode_key(&self.key_types, ka).unwrap_or_default();
                if values.iter().any(|v| v.is_null()) {
                    continue;
                }
                return Err(StorageError::UniqueViolation {
                    index: self.name.clone(),
                    columns: self.columns.join(", "),
                    values: values.iter().map(show).collect::<Vec<_>>().join(", "),
                    creating: true,
                });
            }
        }
        Ok(())
    }

    /// Bytes of the key columns at the start of `entry` (entries this builder
    /// encoded always decode; the fallback only guards against a bug).
    fn key_bytes(&self, entry: &[u8]) -> usize {
        key::key_len(&self.key_types, entry).unwrap_or(entry.len() - ROW_ID_BYTES)
    }

    fn describe(&self, entry: &[u8]) -> String {
        let k = &entry[..entry.len().saturating_sub(ROW_ID_BYTES)];
        match key::decode_key(&self.key_types, k) {
            Some(v) => format!("({})", v.iter().map(show).collect::<Vec<_>>().join(", ")),
            None => "(undecodable)".into(),
        }
    }

    /// Bytes shared by every entry of `run`, never reaching into the shortest
    /// entry's row id (so each stored suffix holds a whole row id).
    fn leaf_prefix(&self, run: std::ops::Range<usize>) -> usize {
        let first = self.entry(run.start);
        let last = self.entry(run.end - 1);
        let min_len = run
            .clone()
            .map(|i| self.spans[i].1 as usize)
            .min()
            .unwrap_or(0);
        lcp(first, last).min(min_len.saturating_sub(ROW_ID_BYTES))
    }

    /// Splits the sorted entries into leaves, each filled as far as it goes. An
    /// empty index still gets one (empty) leaf.
    fn plan_leaves(&self, payload: usize) -> Vec<std::ops::Range<usize>> {
        let w = node::offset_width(payload);
        let n = self.spans.len();
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let first = self.entry(start);
            let (mut total, mut min_len) = (0usize, usize::MAX);
            let mut end = start;
            while end < n {
                let e = self.entry(end);
                let (t, m) = (total + e.len(), min_len.min(e.len()));
                let p = lcp(first, e).min(m - ROW_ID_BYTES);
                if node::leaf_size(w, end - start + 1, t, p) > payload && end > start {
                    break;
                }
                total = t;
                min_len = m;
                end += 1;
            }
            out.push(start..end);
            start = end;
        }
        if out.is_empty() {
            out.push(0..0);
        }
        out
    }
}

/// Writes one inner level over `below` (child page, separator from its left
/// neighbour); returns the new level in the same form.
fn write_inner_level(
    sink: &mut dyn PageSink,
    payload: usize,
    level: u8,
    below: &[(PageId, Vec<u8>)],
) -> StorageResult<Vec<(PageId, Vec<u8>)>> {
    let w = node::offset_width(payload);
    let mut out = Vec::new();
    let mut start = 0;
    while start < below.len() {
        // The first child's separator is stored empty, so it costs nothing here.
        let mut total = 0;
        let mut end = start + 1;
        while end < below.len() {
            let t = total + below[end].1.len();
            if node::inner_size(w, end - start + 1, t) > payload {
                break;
            }
            total = t;
            end += 1;
        }
        // Avoid a lone last child: a node of one child would not shrink the level.
        if end == below.len() - 1 && end - start > 2 {
            end -= 1;
        }
        let run = &below[start..end];
        let children: Vec<PageId> = run.iter().map(|c| c.0).collect();
        let seps: Vec<&[u8]> = run.iter().map(|c| c.1.as_slice()).collect();
        let page = sink.alloc();
        sink.write(page, &mut |buf| {
            node::write_inner(buf, level, &children, &seps)
        })?;
        out.push((page, run[0].1.clone()));
        start = end;
    }
    Ok(out)
}

fn lcp(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The shortest byte string `s` with `left < s <= right` (entries are prefix-free,
/// so `right` is longer than the common prefix).
fn separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    right[..(lcp(left, right) + 1).min(right.len())].to_vec()
}

/// A value as SQL text in an error message.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        // A long key is named by its start: the message must stay readable.
        Value::Text(s) if s.chars().count() > 40 => format!(
            "'{}...' ({} bytes)",
            s.chars().take(32).collect::<String>().replace('\'', "''"),
            s.len()
        ),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        other => other.to_string(),
    }
}
