//! Secondary indexes as B+trees (paper 003): order-preserving composite keys with
//! the row id as tie-breaker ([`key`]), bulk loading from sorted entries
//! ([`build`]) into checksummed, buffer-managed node pages ([`node`]), and searches
//! cut into independent pieces ([`scan`]) so the out-of-order runtime can run each
//! piece as a task with its own page fixes.
//!
//! Indexes are immutable once built: a table that grows gets its indexes rebuilt
//! from its rows (see `IndexBuilder`), which keeps nodes full and the tree optimal
//! for the read-mostly analytic workloads kura serves.

pub mod build;
pub mod from_table;
pub mod key;
pub mod node;
pub mod range;
pub mod scan;
pub mod sink;

use serde::{Deserialize, Serialize};

use kura_common::DataType;

use crate::file::PageId;

pub use build::{max_entry_bytes, IndexBuilder};
pub use from_table::{build_covering_for_table, build_for_table};
pub use range::{EncodedRange, KeyRange, LastColumn};
pub use scan::{LeafRange, DEFAULT_LEAVES_PER_PIECE};
pub use sink::{PageSink, INDEX_NODE_PAGE_KIND};

/// Where a built index lives and what it holds; small enough for the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BTreeIndex {
    /// Root node (a leaf when `height` is 1).
    pub root: PageId,
    /// Levels including the leaves.
    pub height: u32,
    pub leaf_count: u64,
    /// Entries (indexed rows, NULL keys included).
    pub entries: u64,
    pub key_types: Vec<DataType>,
    /// Types of the included columns of a covering index, stored in every entry
    /// after the key. Kept out of this struct's serialized form (the catalog
    /// records them separately, after everything older builds wrote, so older
    /// catalogs still decode); filled in when the catalog is loaded.
    #[serde(skip)]
    pub include_types: Vec<DataType>,
    /// Built with duplicate-key checking.
    pub unique: bool,
    /// Leftmost leaf (start of a full scan in key order).
    pub first_leaf: PageId,
}

impl BTreeIndex {
    /// The placeholder tree of an index a transaction's view lists but has
    /// not rebuilt ([`crate::IndexEntry::stale`]): no pages, never read.
    pub fn stale(unique: bool) -> BTreeIndex {
        BTreeIndex {
            root: 0,
            height: 0,
            leaf_count: 0,
            entries: 0,
            key_types: Vec::new(),
            include_types: Vec::new(),
            unique,
            first_leaf: 0,
        }
    }

    /// Types of every column an entry stores: key columns, then included ones.
    pub fn stored_types(&self) -> Vec<DataType> {
        let mut t = self.key_types.clone();
        t.extend_from_slice(&self.include_types);
        t
    }
}
