//! The sequences of the one write transaction: creating and dropping them
//! (their values live outside transactions, in `crate::sequence`), and the
//! one namespace they share with tables, views and indexes.

use super::WriteTxn;
use crate::error::{StorageError, StorageResult};
use crate::rules::TableRules;
use crate::sequence::{SequenceDef, SequenceEntry};

impl WriteTxn {
    /// Creates sequence `def.name` (its `id` is assigned here) and returns
    /// its definition. Its values can be drawn at once.
    pub fn create_sequence(&mut self, mut def: SequenceDef) -> StorageResult<SequenceDef> {
        let key = def.name.clone();
        if self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.indexes.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        let limit = crate::sequence::capacity(self.io.page_size());
        if self.sequences.entries.len() >= limit {
            return Err(StorageError::TooLarge(format!(
                "too many sequences: a database holds at most {limit}"
            )));
        }
        def.name = key.clone();
        def.id = self.sequences.next_id;
        self.sequences.next_id += 1;
        self.storage.sequences.register(def.clone());
        self.sequences.created.push(def.id);
        let state = def.initial_state();
        self.sequences.entries.insert(
            key,
            SequenceEntry {
                def: def.clone(),
                state,
            },
        );
        Ok(def)
    }

    /// Drops sequence `name`; one a column's default or identity uses goes
    /// only with its table.
    pub fn drop_sequence(&mut self, name: &str) -> StorageResult<()> {
        let key = name.to_string();
        let entry = self
            .sequences
            .entries
            .get(&key)
            .ok_or_else(|| StorageError::Sequence {
                code: "42P01",
                message: format!("sequence \"{key}\" does not exist"),
            })?;
        if let Some(owner) = &entry.def.owned_by {
            if self.tables.contains_key(&owner.table) {
                return Err(StorageError::DependentObjects(format!(
                    "cannot drop sequence {key} because column {} of table {} requires it",
                    owner.column, owner.table
                )));
            }
        }
        self.sequences.remove(&key);
        Ok(())
    }

    /// Whether a table, view, index or sequence is named `name` (they share
    /// one namespace).
    pub fn relation_exists(&self, name: &str) -> bool {
        let key = name.to_string();
        self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.indexes.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
    }

    /// Every sequence as this transaction sees it.
    pub fn sequences(&self) -> impl Iterator<Item = &SequenceEntry> {
        self.sequences.entries.values()
    }

    /// Every table's defaults and constraints as this transaction sees them.
    pub fn all_rules(&self) -> impl Iterator<Item = &TableRules> {
        self.rules.values()
    }

    /// Sequence `name` as this transaction sees it.
    pub fn sequence(&self, name: &str) -> Option<&SequenceEntry> {
        self.sequences.entries.get(name)
    }
}
