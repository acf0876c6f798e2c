//! Shared set-up for the B+tree index tests: a database file with a buffer manager,
//! a page sink that writes sealed node pages into it, and brute-force evaluation
//! of index conditions over plain rows (the reference the index must agree with).

#![allow(dead_code)]

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use kura_common::{DataType, Value};
use kura_storage::file::page::seal;
use kura_storage::file::{DbFile, PageId};
use kura_storage::index::sink::NODE_PAGE_KIND;
use kura_storage::index::{BTreeIndex, IndexBuilder, KeyRange, LastColumn, PageSink};
use kura_storage::{BufferManager, StorageResult};

/// Writes pages at the end of a database file, one `pwrite` per page.
pub struct FileSink {
    file: Arc<DbFile>,
    next: PageId,
    pending: Vec<(PageId, Vec<u8>)>,
}

impl FileSink {
    /// Pages from the current end of `file` on.
    pub fn at_end(file: Arc<DbFile>) -> FileSink {
        let next = file.len_pages().unwrap();
        FileSink {
            file,
            next,
            pending: Vec::new(),
        }
    }
}

impl PageSink for FileSink {
    fn page_size(&self) -> usize {
        self.file.page_size()
    }

    fn alloc(&mut self) -> PageId {
        self.next += 1;
        self.next - 1
    }

    fn write(&mut self, page: PageId, fill: &mut dyn FnMut(&mut [u8])) -> StorageResult<()> {
        let mut buf = vec![0u8; self.file.page_size()];
        fill(&mut buf[16..]);
        seal(&mut buf, NODE_PAGE_KIND, page);
        self.pending.push((page, buf));
        Ok(())
    }

    fn flush(&mut self) -> StorageResult<()> {
        for (page, buf) in self.pending.drain(..) {
            self.file.write_pages(page, &buf)?;
        }
        Ok(())
    }
}

/// A scratch database file with a small buffer pool (so scans really evict and
/// re-read pages).
pub struct Db {
    _dir: tempfile::TempDir,
    pub file: Arc<DbFile>,
    pub bm: Arc<BufferManager>,
    next: PageId,
}

impl Db {
    pub fn new(page_size: usize, frames: usize) -> Db {
        let dir = tempfile::tempdir().unwrap();
        let (file, header) = DbFile::open(&dir.path().join("index.db"), page_size, false).unwrap();
        let file = Arc::new(file);
        let bm = BufferManager::new(file.clone(), frames, "clock").unwrap();
        Db {
            _dir: dir,
            file,
            bm,
            next: header.page_count,
        }
    }

    pub fn sink(&mut self) -> FileSink {
        FileSink {
            file: self.file.clone(),
            next: self.next,
            pending: Vec::new(),
        }
    }

    /// Builds an index over `rows` (row id = position) with the given key types.
    pub fn build(
        &mut self,
        types: &[DataType],
        rows: &[Vec<Value>],
        unique: bool,
    ) -> StorageResult<BTreeIndex> {
        let mut b = IndexBuilder::new(types.to_vec(), unique)?;
        for (i, r) in rows.iter().enumerate() {
            b.push(r, i as u64)?;
        }
        let mut sink = self.sink();
        let index = b.finish(&mut sink)?;
        self.next = sink.next;
        Ok(index)
    }
}

/// SQL ordering of two values of one key column, NULLs first.
pub fn cmp_nulls_first(a: &Value, b: &Value) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => a.total_cmp(b),
    }
}

fn within(v: &Value, lower: &Bound<Value>, upper: &Bound<Value>) -> bool {
    let lo_ok = match lower {
        Bound::Unbounded => true,
        Bound::Included(b) => v.total_cmp(b) != Ordering::Less,
        Bound::Excluded(b) => v.total_cmp(b) == Ordering::Greater,
    };
    let hi_ok = match upper {
        Bound::Unbounded => true,
        Bound::Included(b) => v.total_cmp(b) != Ordering::Greater,
        Bound::Excluded(b) => v.total_cmp(b) == Ordering::Less,
    };
    lo_ok && hi_ok
}

/// Whether a row satisfies the condition, evaluated value by value.
pub fn matches(row: &[Value], range: &KeyRange) -> bool {
    for (v, e) in row.iter().zip(&range.eq) {
        let ok = if e.is_null() {
            v.is_null()
        } else {
            !v.is_null() && v.total_cmp(e) == Ordering::Equal
        };
        if !ok {
            return false;
        }
    }
    let v = row.get(range.eq.len());
    match (&range.last, v) {
        (LastColumn::Any, _) => true,
        (_, None) | (_, Some(Value::Null)) => false,
        (LastColumn::Range { lower, upper }, Some(v)) => within(v, lower, upper),
        (LastColumn::Prefix(p), Some(Value::Text(s))) => s.starts_with(p.as_str()),
        (LastColumn::Prefix(_), Some(_)) => false,
    }
}

/// Row ids of matching rows, ordered as an index returns them: by key (NULLs
/// first), then by row id.
pub fn brute_force(rows: &[Vec<Value>], range: &KeyRange) -> Vec<u64> {
    let mut hits: Vec<usize> = (0..rows.len())
        .filter(|&i| matches(&rows[i], range))
        .collect();
    hits.sort_by(|&a, &b| {
        rows[a]
            .iter()
            .zip(&rows[b])
            .map(|(x, y)| cmp_nulls_first(x, y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    hits.into_iter().map(|i| i as u64).collect()
}

/// An index scan's entries as its caller uses them: where the range says the search
/// widened (text keys are stored without trailing blanks, so strict text bounds also
/// find the ties), entries failing the condition are dropped, as the executor's index
/// scans do by applying their predicate.
#[allow(dead_code)]
pub fn rechecked(rows: &[Vec<Value>], range: &KeyRange, found: Vec<u64>) -> Vec<u64> {
    if !range.needs_recheck() {
        return found;
    }
    found
        .into_iter()
        .filter(|&r| matches(&rows[r as usize], range))
        .collect()
}
