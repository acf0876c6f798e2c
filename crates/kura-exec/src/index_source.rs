//! A B+tree index as the planner and the index operators see it (paper 003's
//! selective plans): which table columns it keys, the search pieces of a range,
//! batched probes, and cheap cardinality estimates counted in the tree itself.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use kura_common::Vector;
use kura_common::{DataType, Value};
use kura_storage::index::key::key_decodes_exactly;
use kura_storage::index::scan::EntryDecode;
use kura_storage::index::{BTreeIndex, KeyRange, LeafRange, DEFAULT_LEAVES_PER_PIECE};
use kura_storage::{BufferManager, PageId};

use crate::error::{ExecError, ExecResult};

/// Leaves below which an estimate scans the leaves and counts exactly.
const EXACT_COUNT_LEAVES: usize = 4;

/// One index of a table source.
pub struct IndexSource {
    pub name: String,
    /// Table column of each key column, in key order.
    pub columns: Vec<usize>,
    /// Table column of each included column of a covering index, in stored order.
    pub include: Vec<usize>,
    pub unique: bool,
    pub tree: BTreeIndex,
    pub bm: Arc<BufferManager>,
    /// Estimates already counted, by range (planning asks the same ranges often).
    estimates: Mutex<HashMap<String, f64>>,
}

impl fmt::Debug for IndexSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexSource")
            .field("name", &self.name)
            .field("columns", &self.columns)
            .field("include", &self.include)
            .field("unique", &self.unique)
            .finish()
    }
}

impl IndexSource {
    pub fn new(
        name: &str,
        columns: Vec<usize>,
        unique: bool,
        tree: BTreeIndex,
        bm: Arc<BufferManager>,
    ) -> IndexSource {
        IndexSource {
            name: name.to_string(),
            columns,
            include: Vec::new(),
            unique,
            tree,
            bm,
            estimates: Mutex::new(HashMap::new()),
        }
    }

    /// A covering index: `include` are the table columns of its included
    /// columns, in the order its entries store them.
    pub fn with_include(mut self, include: Vec<usize>) -> IndexSource {
        self.include = include;
        self
    }

    /// Pages the index occupies in the file: its nodes as counted when the
    /// database was opened or last committed; for an index built since (in an
    /// open transaction), its leaves and one interior node per upper level.
    pub fn stored_pages(&self) -> u64 {
        self.bm
            .object_pages(&self.name)
            .unwrap_or(self.tree.leaf_count.max(1) + u64::from(self.tree.height.saturating_sub(1)))
    }

    pub fn key_types(&self) -> &[DataType] {
        &self.tree.key_types
    }

    /// Which of the table columns `columns` the entries store exactly, and
    /// where a read puts them: `wanted[i]` is the output position of stored
    /// column `i` (key columns, then included ones), and `stored[out]` says
    /// whether output column `out` is among them. A key column whose encoding
    /// loses part of the value (text: trailing blanks) does not count, nor
    /// does a column asked for a second time: the table must give those.
    pub fn stored_layout(&self, columns: &[usize]) -> (Vec<Option<usize>>, Vec<bool>) {
        let nk = self.columns.len();
        let mut wanted = vec![None; nk + self.include.len()];
        let mut stored = vec![false; columns.len()];
        for (out, &c) in columns.iter().enumerate() {
            let key = self
                .columns
                .iter()
                .enumerate()
                .position(|(k, &kc)| kc == c && key_decodes_exactly(self.tree.key_types[k]));
            let pos = key.or_else(|| Some(nk + self.include.iter().position(|&ic| ic == c)?));
            if let Some(pos) = pos {
                if wanted[pos].is_none() {
                    wanted[pos] = Some(out);
                    stored[out] = true;
                }
            }
        }
        (wanted, stored)
    }

    /// Where an index-only read finds each of the table columns `columns` in
    /// the entries (see [`IndexSource::stored_layout`]); `None` when one of
    /// them is not stored exactly, so the table must be read.
    pub fn index_only_layout(&self, columns: &[usize]) -> Option<Vec<Option<usize>>> {
        let (wanted, stored) = self.stored_layout(columns);
        stored.iter().all(|&s| s).then_some(wanted)
    }

    /// Leaves of the tree.
    pub fn leaf_count(&self) -> f64 {
        self.tree.leaf_count.max(1) as f64
    }

    /// Entries per leaf, on average.
    pub fn entries_per_leaf(&self) -> f64 {
        self.tree.entries as f64 / self.tree.leaf_count.max(1) as f64
    }

    /// The pieces (runs of leaves) holding the entries of `range`: independent
    /// units of work. Reads only inner nodes.
    pub fn pieces(&self, range: &KeyRange) -> ExecResult<Vec<LeafRange>> {
        self.tree
            .range_pieces(&self.bm, range, DEFAULT_LEAVES_PER_PIECE)
            .map_err(ExecError::from)
    }

    /// Row ids of one piece, in key order.
    pub fn scan_piece(&self, piece: &LeafRange) -> ExecResult<Vec<u64>> {
        self.tree
            .scan_piece(&self.bm, piece)
            .map_err(ExecError::from)
    }

    /// Row ids of one piece in key order, and the stored columns `wanted` names
    /// decoded into `outs` (an index-only read).
    pub fn scan_piece_into(
        &self,
        piece: &LeafRange,
        wanted: &[Option<usize>],
        outs: &mut [Vector],
    ) -> ExecResult<Vec<u64>> {
        self.tree
            .scan_piece_into(&self.bm, piece, Some(EntryDecode { wanted, outs }))
            .map_err(ExecError::from)
    }

    /// Batched probes that also decode each matching entry (an index-only
    /// join): `(probe index, row id, entry position in outs)`.
    pub fn lookup_many_into(
        &self,
        keys: &[Vec<Value>],
        wanted: &[Option<usize>],
        outs: &mut [Vector],
    ) -> ExecResult<Vec<(usize, u64, u32)>> {
        self.tree
            .lookup_many_into(&self.bm, keys, Some(EntryDecode { wanted, outs }))
            .map_err(ExecError::from)
    }

    /// Batched equality probes on a key prefix: `(probe index, row id)` pairs.
    pub fn lookup_many(&self, keys: &[Vec<Value>]) -> ExecResult<Vec<(usize, u64)>> {
        self.tree
            .lookup_many(&self.bm, keys)
            .map_err(ExecError::from)
    }

    /// The leaves where the searches for `keys` (equality on a key prefix) start:
    /// the pages an asynchronous probe fixes before searching. Walks the inner
    /// nodes (few, and resident after the first probes).
    pub fn leaves_for(&self, keys: &[Vec<Value>]) -> ExecResult<Vec<PageId>> {
        self.tree
            .probe_leaves(&self.bm, keys)
            .map_err(ExecError::from)
    }

    /// Estimated entries in `range`, counted in the tree: the leaves the range
    /// spans (from inner nodes) times the mean entries per leaf, or an exact count
    /// when it spans only a few leaves. The tree is an exact equi-depth histogram
    /// whose buckets are leaves, so skewed columns are estimated as well as
    /// uniform ones. `None` when the tree cannot be read.
    pub fn estimate(&self, range: &KeyRange) -> Option<f64> {
        let key = format!("{range:?}");
        if let Some(v) = self.lock().get(&key) {
            return Some(*v);
        }
        let encoded = range.encode(self.key_types()).ok()?;
        let value = match encoded {
            None => 0.0,
            Some(r) => {
                let pieces = self
                    .tree
                    .encoded_pieces(&self.bm, Arc::new(r), usize::MAX)
                    .ok()?;
                let leaves: usize = pieces.iter().map(|p| p.leaves.len()).sum();
                if leaves <= EXACT_COUNT_LEAVES {
                    let mut n = 0;
                    for p in &pieces {
                        n += self.tree.scan_piece(&self.bm, p).ok()?.len();
                    }
                    n as f64
                } else {
                    // The first and last leaves are partly in range: count half each.
                    (leaves as f64 - 1.0) * self.entries_per_leaf()
                }
            }
        };
        self.lock().insert(key, value);
        Some(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, f64>> {
        self.estimates.lock().unwrap_or_else(|p| p.into_inner())
    }
}
