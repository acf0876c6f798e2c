//! Savepoints of the one write transaction (`SAVEPOINT`, `ROLLBACK TO`): its
//! objects as they were, and how far it had allocated pages.

use std::collections::BTreeMap;

use super::{TxnIndex, TxnTable, WriteTxn};
use crate::catalog::ViewDef;
use crate::file::PageId;
use crate::index::BTreeIndex;
use crate::rules::TableRules;
use crate::sequence::TxnSequences;
use crate::storage::StorageResult;
use crate::txn_io::IoMark;

/// What a write transaction was at a savepoint ([`WriteTxn::savepoint`]):
/// its objects as they were then, and how far it had allocated pages.
/// Everything it refers to was written before it was taken, and the
/// transaction neither frees nor overwrites such pages before it ends (freed
/// pages become reusable only after the commit), so going back to it is
/// putting these maps back and forgetting the pages allocated since.
pub struct TxnSavepoint {
    tables: BTreeMap<String, TxnTable>,
    views: BTreeMap<String, ViewDef>,
    indexes: BTreeMap<String, (TxnIndex, Option<BTreeIndex>)>,
    rules: BTreeMap<String, TableRules>,
    sequences: TxnSequences,
    blobs: BTreeMap<String, Vec<PageId>>,
    /// `freed` and `dropped` only grow until the commit: their lengths then.
    freed: usize,
    dropped: usize,
    io: IoMark,
}

impl WriteTxn {
    /// Writes what the transaction changed so far (as [`WriteTxn::snapshot`]
    /// does) and records its state, to come back to with
    /// [`WriteTxn::rollback_to`] — `SAVEPOINT`.
    pub fn savepoint(&mut self) -> StorageResult<TxnSavepoint> {
        self.materialize()?;
        Ok(TxnSavepoint {
            tables: self
                .tables
                .iter()
                .map(|(n, t)| (n.clone(), t.saved()))
                .collect(),
            views: self.views.clone(),
            indexes: self.indexes.clone(),
            rules: self.rules.clone(),
            sequences: self.sequences.clone(),
            blobs: self.blobs.clone(),
            freed: self.freed.len(),
            dropped: self.dropped.len(),
            io: self.io.mark(),
        })
    }

    /// Undoes every change since `savepoint` (taken from this transaction)
    /// and keeps those before it; the savepoint stays valid, to go back to
    /// again — `ROLLBACK TO SAVEPOINT`. Works on a transaction a failed
    /// statement left half-changed: nothing of that statement is kept.
    pub fn rollback_to(&mut self, savepoint: &TxnSavepoint) {
        self.tables = savepoint
            .tables
            .iter()
            .map(|(n, t)| (n.clone(), t.saved()))
            .collect();
        self.views = savepoint.views.clone();
        self.indexes = savepoint.indexes.clone();
        self.rules = savepoint.rules.clone();
        // Sequences come back as they were; those created since are still
        // listed as created (their runtime values go at the end of the
        // transaction) and ids are never handed out twice.
        let created = std::mem::take(&mut self.sequences.created);
        let next_id = self.sequences.next_id;
        self.sequences = savepoint.sequences.clone();
        self.sequences.created = created;
        self.sequences.next_id = next_id;
        self.blobs = savepoint.blobs.clone();
        // Pages freed since were referenced at the savepoint: in use again.
        self.freed.truncate(savepoint.freed);
        self.dropped.truncate(savepoint.dropped);
        self.io.rewind(&savepoint.io);
    }
}
