//! Reading a B+tree through the buffer manager, cut into independent pieces
//! (paper 003's decomposition): a range becomes runs of leaves
//! ([`BTreeIndex::range_pieces`]) that separate tasks scan
//! ([`BTreeIndex::scan_piece`]); a join's probe keys are looked up per batch
//! ([`BTreeIndex::lookup_many`]). The node-level steps ([`scan_leaf`],
//! [`overlapping_children`]) work on a page payload the caller fixed, so an
//! asynchronous task can obtain pages with `try_fix` and still share this code.

use std::sync::Arc;

use kura_common::{Value, Vector};

use super::key;
use super::node::Node;
use super::range::{EncodedRange, KeyRange};
use super::BTreeIndex;
use crate::buffer::{BufferManager, PageGuard};
use crate::error::{StorageError, StorageResult};
use crate::file::PageId;

/// A run of leaves to scan for one range: one unit of work. Leaves are named
/// explicitly (not reached through sibling links), so a task can fix all of them
/// at once and in any order.
#[derive(Debug, Clone)]
pub struct LeafRange {
    pub leaves: Vec<PageId>,
    pub range: Arc<EncodedRange>,
}

/// Leaves per piece when the caller has no better idea (≈ 1–2 MiB of entries).
pub const DEFAULT_LEAVES_PER_PIECE: usize = 64;

fn corrupt(bm: &BufferManager, page: PageId, what: String) -> StorageError {
    StorageError::Corrupt {
        path: bm.file().path().to_path_buf(),
        page,
        what,
    }
}

/// Parses a fixed page as a node, naming the page on failure.
pub fn parse_node<'a>(
    bm: &BufferManager,
    page: PageId,
    payload: &'a [u8],
) -> StorageResult<Node<'a>> {
    Node::parse(payload).map_err(|what| corrupt(bm, page, what))
}

/// Appends the row ids of the entries of leaf payload `leaf` that lie in `range`;
/// returns whether entries beyond this leaf may still be in range (the range's
/// end lies past the leaf's last entry).
pub fn scan_leaf(leaf: &Node<'_>, range: &EncodedRange, out: &mut Vec<u64>) -> bool {
    let start = range.lo.as_deref().map_or(0, |lo| leaf.lower_bound(lo));
    let end = range
        .hi
        .as_deref()
        .map_or(leaf.count(), |hi| leaf.lower_bound(hi));
    out.extend((start..end.max(start)).map(|i| leaf.row_id(i)));
    end == leaf.count()
}

/// What an index-only read decodes from each entry it finds: stored column `i`
/// (key columns, then included ones) goes to output vector `wanted[i]`.
pub struct EntryDecode<'a> {
    pub wanted: &'a [Option<usize>],
    pub outs: &'a mut [Vector],
}

impl EntryDecode<'_> {
    fn push(
        &mut self,
        bm: &BufferManager,
        page: PageId,
        types: &[kura_common::DataType],
        entry: &[u8],
    ) -> StorageResult<()> {
        if self.wanted.iter().all(|w| w.is_none()) {
            return Ok(());
        }
        key::decode_entry_into(types, self.wanted, entry, self.outs)
            .ok_or_else(|| corrupt(bm, page, "index entry does not decode".into()))
    }
}

/// Children of an inner node whose subtrees may hold entries of `range`.
pub fn overlapping_children(inner: &Node<'_>, range: &EncodedRange) -> std::ops::Range<usize> {
    let first = range.lo.as_deref().map_or(0, |lo| inner.child_for(lo));
    // Child i holds entries ≥ separator(i): it matters only if separator(i) < hi.
    let end = match range.hi.as_deref() {
        None => inner.count(),
        Some(hi) => {
            let (mut lo, mut h) = (first + 1, inner.count());
            while lo < h {
                let mid = (lo + h) / 2;
                if inner.separator(mid) < hi {
                    lo = mid + 1;
                } else {
                    h = mid;
                }
            }
            lo
        }
    };
    first..end.max(first + 1).min(inner.count())
}

impl BTreeIndex {
    fn fix(&self, bm: &Arc<BufferManager>, page: PageId) -> StorageResult<PageGuard> {
        bm.fix(page)
    }

    /// The leaf that holds the first entry ≥ `probe` (or the last leaf on its path
    /// when none is): `height - 1` fixes of inner nodes.
    pub fn leaf_for(&self, bm: &Arc<BufferManager>, probe: &[u8]) -> StorageResult<PageId> {
        let mut page = self.root;
        for _ in 1..self.height {
            let g = self.fix(bm, page)?;
            let n = parse_node(bm, page, &g)?;
            if n.is_leaf() || n.count() == 0 {
                return Err(corrupt(bm, page, "index inner node expected".into()));
            }
            page = n.child(n.child_for(probe));
        }
        Ok(page)
    }

    /// Splits the entries matching `range` into pieces of at most
    /// `leaves_per_piece` leaves. Reads only inner nodes; an empty result means
    /// nothing matches.
    pub fn range_pieces(
        &self,
        bm: &Arc<BufferManager>,
        range: &KeyRange,
        leaves_per_piece: usize,
    ) -> StorageResult<Vec<LeafRange>> {
        match range.encode(&self.key_types)? {
            None => Ok(Vec::new()),
            Some(r) => self.encoded_pieces(bm, Arc::new(r), leaves_per_piece),
        }
    }

    /// [`Self::range_pieces`] for a range already in byte form.
    pub fn encoded_pieces(
        &self,
        bm: &Arc<BufferManager>,
        range: Arc<EncodedRange>,
        leaves_per_piece: usize,
    ) -> StorageResult<Vec<LeafRange>> {
        if range.is_empty() || self.entries == 0 {
            return Ok(Vec::new());
        }
        let mut leaves = Vec::new();
        self.collect_leaves(bm, self.root, self.height, &range, &mut leaves)?;
        Ok(leaves
            .chunks(leaves_per_piece.max(1))
            .map(|c| LeafRange {
                leaves: c.to_vec(),
                range: range.clone(),
            })
            .collect())
    }

    fn collect_leaves(
        &self,
        bm: &Arc<BufferManager>,
        page: PageId,
        levels: u32,
        range: &EncodedRange,
        out: &mut Vec<PageId>,
    ) -> StorageResult<()> {
        if levels <= 1 {
            out.push(page);
            return Ok(());
        }
        let g = self.fix(bm, page)?;
        let n = parse_node(bm, page, &g)?;
        if n.is_leaf() || n.level() as u32 != levels - 1 || n.count() == 0 {
            return Err(corrupt(
                bm,
                page,
                format!("index node at level {} expected", levels - 1),
            ));
        }
        let children = overlapping_children(&n, range);
        if levels == 2 {
            out.extend(children.map(|i| n.child(i)));
            return Ok(());
        }
        let ids: Vec<PageId> = children.map(|i| n.child(i)).collect();
        drop(g);
        for c in ids {
            self.collect_leaves(bm, c, levels - 1, range, out)?;
        }
        Ok(())
    }

    /// Row ids of the entries of one piece, in key order.
    pub fn scan_piece(
        &self,
        bm: &Arc<BufferManager>,
        piece: &LeafRange,
    ) -> StorageResult<Vec<u64>> {
        self.scan_piece_into(bm, piece, None)
    }

    /// [`Self::scan_piece`] that also decodes the entries' stored columns
    /// (an index-only read: no table page is touched).
    pub fn scan_piece_into(
        &self,
        bm: &Arc<BufferManager>,
        piece: &LeafRange,
        mut decode: Option<EntryDecode<'_>>,
    ) -> StorageResult<Vec<u64>> {
        let types = self.stored_types();
        let mut out = Vec::new();
        for &leaf in &piece.leaves {
            let g = self.fix(bm, leaf)?;
            let n = parse_node(bm, leaf, &g)?;
            if !n.is_leaf() {
                return Err(corrupt(bm, leaf, "index leaf expected".into()));
            }
            let before = out.len();
            scan_leaf(&n, &piece.range, &mut out);
            if let Some(d) = decode.as_mut() {
                if out.len() > before {
                    let range = &piece.range;
                    let start = range.lo.as_deref().map_or(0, |lo| n.lower_bound(lo));
                    let mut e = n.prefix().to_vec();
                    for i in start..start + (out.len() - before) {
                        e.truncate(n.prefix().len());
                        e.extend_from_slice(n.suffix(i));
                        d.push(bm, leaf, &types, &e)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// All row ids matching `range`, in key order: the pieces scanned one after
    /// the other (for callers that run serially).
    pub fn scan(&self, bm: &Arc<BufferManager>, range: &KeyRange) -> StorageResult<Vec<u64>> {
        let mut out = Vec::new();
        for piece in self.range_pieces(bm, range, DEFAULT_LEAVES_PER_PIECE)? {
            out.extend(self.scan_piece(bm, &piece)?);
        }
        Ok(out)
    }

    /// Row ids whose leading key columns equal `key` (all of them: a point lookup;
    /// fewer: a prefix of a composite key). A NULL in `key` matches NULL keys.
    pub fn lookup(&self, bm: &Arc<BufferManager>, key: &[Value]) -> StorageResult<Vec<u64>> {
        self.scan(bm, &KeyRange::eq(key.to_vec()))
    }

    /// Probe keys in byte form with their positions, sorted; probes with a NULL
    /// or a value no key of the column's type can equal match nothing and are left out.
    fn encode_probes(&self, keys: &[Vec<Value>]) -> StorageResult<Vec<(Vec<u8>, usize)>> {
        let mut probes: Vec<(Vec<u8>, usize)> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if k.len() > self.key_types.len() {
                return Err(StorageError::Invalid(format!(
                    "index probe has {} values, the index has {} key columns",
                    k.len(),
                    self.key_types.len()
                )));
            }
            if k.iter().any(|v| v.is_null()) {
                continue;
            }
            let mut b = Vec::new();
            let mut exact = true;
            for (t, v) in self.key_types.iter().zip(k) {
                exact &= key::encode_exact(&mut b, *t, v)?;
            }
            if exact {
                probes.push((b, i));
            }
        }
        probes.sort_unstable();
        Ok(probes)
    }

    /// The leaves where the searches of [`Self::lookup_many`] for `keys` start,
    /// each once: what an asynchronous probe fixes before searching. Reads inner
    /// nodes only.
    pub fn probe_leaves(
        &self,
        bm: &Arc<BufferManager>,
        keys: &[Vec<Value>],
    ) -> StorageResult<Vec<PageId>> {
        let mut leaves = Vec::new();
        let mut last: Option<&[u8]> = None;
        let probes = self.encode_probes(keys)?;
        for (p, _) in &probes {
            if last != Some(p.as_slice()) {
                leaves.push(self.leaf_for(bm, p)?);
                last = Some(p);
            }
        }
        leaves.sort_unstable();
        leaves.dedup();
        Ok(leaves)
    }

    /// Batched equality probes (one unit of an index nested-loop join): for each
    /// probe `keys[i]` (a full key or a leading prefix), the pairs `(i, row id)` of
    /// its matches, ordered by probe index and then key order. Probes are visited
    /// in key order so neighbouring probes share leaves; a probe with a NULL
    /// matches nothing (join semantics).
    pub fn lookup_many(
        &self,
        bm: &Arc<BufferManager>,
        keys: &[Vec<Value>],
    ) -> StorageResult<Vec<(usize, u64)>> {
        Ok(self
            .lookup_many_into(bm, keys, None)?
            .into_iter()
            .map(|(p, r, _)| (p, r))
            .collect())
    }

    /// [`Self::lookup_many`] that also decodes each matching entry's stored
    /// columns once (an index-only probe): the triples are `(probe index, row
    /// id, position of the entry in the decoded vectors)`.
    pub fn lookup_many_into(
        &self,
        bm: &Arc<BufferManager>,
        keys: &[Vec<Value>],
        mut decode: Option<EntryDecode<'_>>,
    ) -> StorageResult<Vec<(usize, u64, u32)>> {
        let types = self.stored_types();
        let mut decoded = 0u32;
        let probes = self.encode_probes(keys)?;
        let mut out = Vec::new();
        let mut current: Option<(PageId, PageGuard)> = None;
        let mut i = 0;
        while i < probes.len() {
            let probe = &probes[i].0;
            let mut rows = Vec::new();
            // Reuse the previous probe's leaf when this probe provably starts in it
            // (probes are sorted, so neighbours often share a leaf).
            let reuse = match &current {
                Some((p, g)) => {
                    let n = parse_node(bm, *p, g)?;
                    // Two comparisons rule the leaf out before any search.
                    let inside = n.is_leaf()
                        && n.count() > 1
                        && n.cmp_entry(0, probe).is_lt()
                        && n.cmp_entry(n.count() - 1, probe).is_ge();
                    inside.then(|| n.lower_bound(probe))
                }
                None => None,
            };
            let (mut page, mut pos) = match reuse {
                Some(pos) => (current.as_ref().unwrap().0, Some(pos)),
                None => (self.leaf_for(bm, probe)?, None),
            };
            loop {
                if current.as_ref().is_none_or(|(p, _)| *p != page) {
                    current = Some((page, self.fix(bm, page)?));
                }
                let (_, g) = current.as_ref().unwrap();
                let n = parse_node(bm, page, g)?;
                if !n.is_leaf() {
                    return Err(corrupt(bm, page, "index leaf expected".into()));
                }
                let mut k = pos.take().unwrap_or_else(|| n.lower_bound(probe));
                // Matches are few for join keys: walk them instead of searching the end.
                while k < n.count() && n.entry_starts_with(k, probe) {
                    if let Some(d) = decode.as_mut() {
                        d.push(bm, page, &types, &n.entry(k))?;
                    }
                    rows.push((n.row_id(k), decoded));
                    decoded += 1;
                    k += 1;
                }
                match n.next_leaf() {
                    Some(next) if k == n.count() => page = next,
                    _ => break,
                }
            }
            // Equal probes (duplicate outer keys) share the one search.
            let mut j = i;
            while j < probes.len() && probes[j].0 == probes[i].0 {
                out.extend(rows.iter().map(|&(r, e)| (probes[j].1, r, e)));
                j += 1;
            }
            i = j;
        }
        // Stable: within one probe, matches stay in key order.
        out.sort_by_key(|&(p, _, _)| p);
        Ok(out)
    }

    /// Every page of the tree (to free them when the index is dropped). Reads the
    /// inner nodes only.
    pub fn pages(&self, bm: &Arc<BufferManager>) -> StorageResult<Vec<PageId>> {
        let mut out = Vec::new();
        let mut level = vec![self.root];
        for depth in 1..self.height {
            let mut next = Vec::new();
            for &p in &level {
                let g = self.fix(bm, p)?;
                let n = parse_node(bm, p, &g)?;
                if n.level() as u32 != self.height - depth {
                    return Err(corrupt(
                        bm,
                        p,
                        format!("index node at level {} expected", self.height - depth),
                    ));
                }
                next.extend((0..n.count()).map(|i| n.child(i)));
            }
            out.append(&mut level);
            level = next;
        }
        out.extend(level);
        Ok(out)
    }
}
